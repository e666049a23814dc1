#!/usr/bin/env bash
# Runs the Slurm array recipe of docs/sweeps.md on a real one-node Slurm cluster and checks it:
#   scripts/slurm_sweep_test.sh [TPUSIM] [SWEEP] [SHARDS]
# (defaults: build/tpusim, configs/sweeps/hbm_bandwidth.yaml, 3). It installs Debian's slurm-wlm and
# munge when missing, starts munged, slurmctld and slurmd on localhost from a generated slurm.conf
# (everything under one temporary directory: key, socket, state, spool, logs), submits
# scripts/slurm_sweep.sbatch as an array of SHARDS tasks plus the dependent merge job — the two
# sbatch commands of the recipe — waits for both (bounded), compares the merged results with an
# unsharded `tpusim sweep` of the same file (the rule of the shard/merge smoke test, wall times
# excluded), and stops the daemons it started on every exit path.
# Exit codes: 0 pass, 1 fail, 77 skipped (not root, or the daemons cannot start here; ctest
# SKIP_RETURN_CODE). TPUSIM_SLURM_KEEP=1 keeps the temporary directory.
set -euo pipefail

src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tpusim="$(realpath "${1:-$src/build/tpusim}")"
sweep="$(realpath "${2:-$src/configs/sweeps/hbm_bandwidth.yaml}")"
shards="${3:-3}"
# Seconds the jobs may take in all (a 21-point kernel sweep runs in a few seconds), and the daemons
# to come up. Both well below the ctest TIMEOUT, so that cleanup runs before ctest would kill us.
job_timeout=300
start_timeout=60

say() { echo "slurm_sweep_test: $*" >&2; }
skip() { say "SKIPPED: $*"; exit 77; }
fail() { say "FAILED: $*"; exit 1; }

[[ "$shards" =~ ^[1-9][0-9]*$ ]] || fail "SHARDS must be a positive integer, not '$shards'"
[[ -x "$tpusim" ]] || fail "no tpusim binary at $tpusim (build first: scripts/build.sh)"
[[ "$(id -u)" -eq 0 ]] || skip "starting munged, slurmctld and slurmd needs root (run as root, e.g. in a CI container)"

# ---- packages, as scripts/build.sh installs its own -----------------------------------------------
packages=(slurm-wlm munge)
source "$(dirname "${BASH_SOURCE[0]}")/lib/debian_packages.sh"
read -r -a missing <<< "$(missing_packages "${packages[@]}")"
if ((${#missing[@]} > 0)); then
  command -v apt-get >/dev/null || skip "no apt-get to install ${missing[*]}"
  say "installing ${missing[*]} with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >&2 || fail "apt-get update failed"
  apt-get install -y -q --no-install-recommends "${missing[@]}" >&2 || fail "apt-get install ${missing[*]} failed"
fi
# The daemons live in /usr/sbin, which a non-login PATH may lack.
export PATH="$PATH:/usr/sbin:/sbin"
for cmd in munged munge slurmctld slurmd sbatch squeue scontrol scancel sinfo; do
  command -v "$cmd" >/dev/null || fail "$cmd is not on PATH after installing ${packages[*]}"
done

# ---- temporary directory and cleanup --------------------------------------------------------------
tmp="$(mktemp -d /tmp/tpusim-slurm.XXXXXX)"  # 0700: munged refuses group/other-writable directories
mkdir -p "$tmp"/{munge,state,spool,log,run,work}
chmod 0700 "$tmp"/munge
pids=()      # daemons this script started, in start order
job_ids=()   # jobs this script submitted

stop_pid() {  # TERM, then KILL after 10 s; only our own children
  local pid="$1" i
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
    sleep 0.1
  done
  say "pid $pid ignored SIGTERM; killing it"
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

cleanup() {
  local rc=$?
  trap - EXIT INT TERM HUP
  # Jobs first (their processes belong to slurmstepd, not to us), while the controller still runs.
  if ((${#job_ids[@]} > 0)) && ((${#pids[@]} > 0)); then
    scancel "${job_ids[@]}" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      [[ -z "$(squeue -h -j "$(IFS=,; echo "${job_ids[*]}")" 2>/dev/null)" ]] && break
      sleep 0.2
    done
  fi
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do stop_pid "${pids[i]}"; done
  if ((rc != 0)) || [[ "${TPUSIM_SLURM_KEEP:-}" == 1 ]]; then
    for f in "$tmp"/log/* "$tmp"/work/slurm-*.out; do
      [[ -s "$f" ]] && { echo "--- $f (last 30 lines)" >&2; tail -n 30 "$f" >&2; }
    done
  fi
  if [[ "${TPUSIM_SLURM_KEEP:-}" == 1 ]]; then say "kept $tmp"; else rm -rf "$tmp"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'say "interrupted"; exit 130' INT
trap 'say "terminated"; exit 143' TERM HUP

# ---- munged with its own key, socket and pid file (a system munged is left alone) ---------------
dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 status=none
chmod 0400 "$tmp/munge/munge.key"
socket="$tmp/munge/munge.socket"
munged --foreground --force --key-file="$tmp/munge/munge.key" --socket="$socket" \
  --pid-file="$tmp/run/munged.pid" --log-file="$tmp/log/munged.log" --seed-file="$tmp/munge/munged.seed" \
  2>>"$tmp/log/munged.log" &
pids+=($!)

wait_for() {  # wait_for SECONDS WHAT COMMAND...: poll until COMMAND succeeds
  local limit="$1" what="$2" t0=$SECONDS
  shift 2
  until "$@" >/dev/null 2>&1; do
    ((SECONDS - t0 < limit)) || return 1
    kill -0 "${pids[-1]}" 2>/dev/null || { say "$what exited"; return 1; }
    sleep 0.5
  done
}
wait_for "$start_timeout" munged sh -c "munge -n -S '$socket' | unmunge -S '$socket'" ||
  skip "munged did not start here (log: $(tail -n 3 "$tmp/log/munged.log" 2>/dev/null | tr '\n' ' '))"

# ---- slurm.conf -----------------------------------------------------------------------------------
host="$(hostname -s)"
read -r ctld_port slurmd_port < <(/usr/bin/python3 -c '
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))')
export SLURM_CONF="$tmp/slurm.conf"
: >"$tmp/plugstack.conf"  # not the system's /etc/slurm/plugstack.conf
# A container: no cgroups (proctrack/linuxproc, task/none), no accounting daemon, root runs
# everything. Free ports, so a system Slurm on 6817/6818 is not disturbed. kill_invalid_depend: the
# merge job is cancelled, not left pending forever, when a shard fails. MinJobAge keeps finished
# jobs visible to `scontrol show job` while we check them.
cat >"$SLURM_CONF" <<EOF
ClusterName=tpusim-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/run/slurmctld.pid
SlurmdPidFile=$tmp/run/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
PlugStackConfig=$tmp/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
DependencyParameters=kill_invalid_depend
MinJobAge=600
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=tpusim Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF

slurmctld -D -i -f "$SLURM_CONF" 2>>"$tmp/log/slurmctld.stderr" &
pids+=($!)
wait_for "$start_timeout" slurmctld sh -c 'scontrol ping | grep -q "is UP"' ||
  skip "slurmctld did not start here (see $tmp/log; rerun with TPUSIM_SLURM_KEEP=1)"
slurmd -D -N "$host" -f "$SLURM_CONF" 2>>"$tmp/log/slurmd.stderr" &
pids+=($!)
node_idle() { [[ "$(sinfo -h -n "$host" -o %t 2>/dev/null)" == idle ]]; }
wait_for "$start_timeout" slurmd node_idle ||
  skip "slurmd did not register node $host as idle (state '$(sinfo -h -n "$host" -o %t 2>/dev/null)')"
say "one-node cluster up: node $host, $(nproc) CPUs, slurmctld port $ctld_port, slurmd port $slurmd_port"

# ---- the recipe: array job, then the dependent merge ---------------------------------------------
# The two commands of scripts/slurm_sweep.sbatch's header with SWEEP, OUT and N filled in; tpusim
# from PATH, which sbatch exports to the jobs.
export PATH="$(dirname "$tpusim"):$PATH"
cd "$tmp/work"
t0=$SECONDS
last=$((shards - 1))
jid=$(sbatch --parsable --array=0-$last "$src/scripts/slurm_sweep.sbatch" "$sweep" out/sweep) ||
  fail "sbatch of the array job failed"
job_ids+=("$jid")
mid=$(sbatch --parsable --dependency=afterok:$jid --wrap "tpusim sweep merge out/sweep $(printf 'out/sweep-%d ' $(seq 0 $last))") ||
  fail "sbatch of the merge job failed"
job_ids+=("$mid")
say "submitted array job $jid (tasks 0-$last) and merge job $mid"

# Done when neither job is in the queue any more (finished records stay for MinJobAge).
until [[ -z "$(squeue -h -j "$jid,$mid" -o %i 2>/dev/null)" ]]; do
  ((SECONDS - t0 < job_timeout)) || fail "jobs not finished after ${job_timeout} s: $(squeue -h -j "$jid,$mid" -o '%i %T %r' | tr '\n' ';')"
  sleep 1
done
wall=$((SECONDS - t0))

# Every array task and the merge COMPLETED with exit code 0 (one line per task with -o).
n_done=0
while read -r line; do
  id="$(grep -oE '^JobId=[0-9]+' <<<"$line")" task="$(grep -oE ' ArrayTaskId=[0-9]+' <<<"$line" || true)"
  state="$(grep -oE ' JobState=[A-Z_]+' <<<"$line")" code="$(grep -oE ' ExitCode=[0-9:]+' <<<"$line")"
  [[ "$state$code" == " JobState=COMPLETED ExitCode=0:0" ]] || fail "job $id$task ended with$state$code"
  n_done=$((n_done + 1))
done < <(scontrol -o show job "$jid"; scontrol -o show job "$mid")
((n_done == shards + 1)) || fail "expected $shards array tasks and one merge job, scontrol shows $n_done"
[[ -f out/sweep/results.csv ]] || fail "the merge job wrote no out/sweep/results.csv"
say "array job and merge completed in ${wall} s"

# ---- the merged results equal an unsharded run --------------------------------------------------
tpusim sweep "$sweep" --out full --no-plots --quiet || fail "the unsharded sweep failed (exit $?)"
/usr/bin/python3 "$src/tests/cluster/same_sweep_results.py" full out/sweep ||
  fail "the merged Slurm shards differ from the unsharded sweep"
say "PASSED: $shards shards on Slurm merged equal the unsharded sweep ($(basename "$sweep"))"
