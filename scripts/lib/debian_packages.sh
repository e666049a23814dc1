# Sourced by scripts/build.sh and scripts/slurm_sweep_test.sh: which Debian packages are missing.
# missing_packages PKG... prints the ones not installed, space-separated. "install ok installed" only:
# a package removed but not purged still has a dpkg record.
missing_packages() {
  local p out=()
  for p in "$@"; do
    if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" != "install ok installed" ]]; then
      out+=("$p")
    fi
  done
  echo "${out[*]}"
}
