#!/usr/bin/env python3
"""Every report figure of every shipped workload, before and after a change.

A restructuring must leave the simulator's results alone. This runs a fixed battery of cases (the
default run, every workload in configs/workloads/, and variants that reach the code paths the
shipped files do not: megacore, gradient accumulation, no overlap, FSDP with checkpointing, bf16
eval, both engines, the exported HLO of three training steps) with one tpusim binary into a folder,
and compares two such folders: report.json number by number (exactly: the simulator is
deterministic), apart from run.wall_time_s, the only field allowed to differ between runs; and the
text outputs byte by byte.

    scripts/same_reports.py run build/tpusim /tmp/before        # on the base commit's binary
    scripts/same_reports.py run build/tpusim /tmp/after         # on the change's
    scripts/same_reports.py diff /tmp/before /tmp/after         # exit 1 on any difference

`run --only SUBSTRING` runs the cases whose name contains it; `--list` lists them.
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cases():
    """(name, argv after the binary, output kind: 'report' or 'text')."""
    out = [("default", ["run"], "report")]
    wl_dir = os.path.join(ROOT, "configs", "workloads")
    for f in sorted(os.listdir(wl_dir)):
        if f.endswith(".yaml"):
            out.append((f[:-5], ["run", "--workload", os.path.join(wl_dir, f)], "report"))
    wl = lambda name: os.path.join(wl_dir, name + ".yaml")
    out += [
        ("default_systemc", ["run", "--engine", "systemc"], "report"),
        ("default_v4-8", ["run", "--hw", "v4-8"], "report"),
        ("default_v3-32", ["run", "--hw", "v3-32"], "report"),
        ("default_v2-8_no_overlap", ["run", "--hw", "v2-8", "--set", "overlap_collectives=false"], "report"),
        ("default_accumulate", ["run", "--set", "gradient_accumulation_steps=2"], "report"),
        ("default_accumulate_v4-8", ["run", "--hw", "v4-8", "--set", "gradient_accumulation_steps=3"], "report"),
        ("default_eval_bf16", ["run", "--set", "eval_precision=bf16"], "report"),
        ("default_sgd_v5e-8", ["run", "--hw", "v5e-8", "--set", "optimizer=sgd"], "report"),
        ("fsdp_no_overlap", ["run", "--workload", wl("bert_large_fsdp_v3-32"), "--set", "overlap_collectives=false"],
         "report"),
        ("fsdp_ckpt_v3-8", ["run", "--workload", wl("bert_large_fsdp_v3-32"), "--hw", "v3-8", "--set",
                            "fsdp_grad_ckpt=true"], "report"),
        ("fsdp_wrap_v4-8", ["run", "--workload", wl("bert_large_fsdp_v3-32"), "--hw", "v4-8", "--set",
                            "fsdp_wrap_layer_classes=[BertLayer]"], "report"),
        ("mlperf_v3-32_systemc", ["run", "--workload", wl("mlperf_bert_large_v3-32"), "--engine", "systemc"], "report"),
        ("export_bert_base", ["export-hlo", "--workload", wl("bert_base_mrpc_v3-8")], "text"),
        ("export_gpt2", ["export-hlo", "--workload", wl("gpt2_causal_lm_v3-8")], "text"),
        ("export_bert_large_fsdp", ["export-hlo", "--workload", wl("bert_large_fsdp_v3-32")], "text"),
        ("export_bert_base_eval", ["export-hlo", "--workload", wl("bert_base_mrpc_v3-8"), "--variant", "eval"], "text"),
    ]
    for f in sorted(os.listdir(os.path.join(ROOT, "configs", "hlo"))):
        out.append(("hlo_stats_" + f, ["hlo-stats", os.path.join(ROOT, "configs", "hlo", f), "--json", "--simulate"],
                    "text"))
    return out


def run(binary, folder, only):
    os.makedirs(folder, exist_ok=True)
    failed = 0
    for name, argv, kind in cases():
        if only and only not in name:
            continue
        d = os.path.join(folder, name)
        os.makedirs(d, exist_ok=True)
        cmd = [os.path.abspath(binary)] + argv
        if kind == "report":
            cmd += ["--out", d, "--quiet"]
        t0 = time.time()
        p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        with open(os.path.join(d, "exit"), "w") as f:
            f.write(f"{p.returncode}\n")
        if kind == "text":
            with open(os.path.join(d, "stdout"), "w") as f:
                f.write(p.stdout)
        with open(os.path.join(d, "stderr"), "w") as f:
            f.write(p.stderr)
        print(f"{name:34s} exit {p.returncode}  {time.time() - t0:6.1f} s", flush=True)
        failed += p.returncode != 0
    return failed


def strip(rep):
    rep.get("run", {}).pop("wall_time_s", None)
    return rep


def differences(a, b, path="", out=None, limit=20):
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{path}.{k}: {'only in B' if k not in a else 'only in A'}")
            else:
                differences(a[k], b[k], f"{path}.{k}", out, limit)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} items vs {len(b)}")
        for i, (x, y) in enumerate(zip(a, b)):
            differences(x, y, f"{path}[{i}]", out, limit)
    elif a != b:
        rel = ""
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a:
            rel = f" ({(b - a) / abs(a) * 100:+.4f}%)"
        out.append(f"{path}: {a!r} -> {b!r}{rel}")
    return out


def diff(a_dir, b_dir):
    bad = 0
    for name, _, kind in cases():
        a, b = os.path.join(a_dir, name), os.path.join(b_dir, name)
        if not os.path.isdir(a) or not os.path.isdir(b):
            continue
        msgs = []
        ea, eb = (open(os.path.join(x, "exit")).read().strip() for x in (a, b))
        if ea != eb:
            msgs.append(f"exit {ea} -> {eb}")
        if kind == "report":
            ra, rb = (os.path.join(x, "report.json") for x in (a, b))
            if os.path.exists(ra) and os.path.exists(rb):
                msgs += differences(strip(json.load(open(ra))), strip(json.load(open(rb))))
            elif os.path.exists(ra) != os.path.exists(rb):
                msgs.append("report.json only on one side")
        else:
            ta, tb = (open(os.path.join(x, "stdout")).read() for x in (a, b))
            if ta != tb:
                la, lb = ta.splitlines(), tb.splitlines()
                first = next((i for i, (x, y) in enumerate(zip(la, lb)) if x != y), min(len(la), len(lb)))
                msgs.append(f"output differs from line {first + 1} ({len(la)} vs {len(lb)} lines)")
        print(f"{name:34s} {'same' if not msgs else 'DIFFERENT'}")
        for m in msgs:
            print("    " + m)
        bad += bool(msgs)
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("binary")
    r.add_argument("folder")
    r.add_argument("--only", default="")
    d = sub.add_parser("diff")
    d.add_argument("a")
    d.add_argument("b")
    sub.add_parser("list")
    args = ap.parse_args()
    if args.cmd == "list":
        for name, argv, _ in cases():
            print(name, " ".join(argv))
        return 0
    if args.cmd == "run":
        return 1 if run(args.binary, args.folder, args.only) else 0
    return 1 if diff(args.a, args.b) else 0


if __name__ == "__main__":
    sys.exit(main())
