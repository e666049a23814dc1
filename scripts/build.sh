#!/usr/bin/env bash
# Builds tpusim: installs the Debian packages the build needs (when missing), then configures and
# builds with a CMake preset.
#   scripts/build.sh            # preset "default": Release build in build/ (binary: build/tpusim)
#   scripts/build.sh asan       # ASan + UBSan build in build-asan/
# Works unattended (CI=true, no stdin): apt runs non-interactively; without root it prints the
# exact sudo command to run instead and exits 1.
set -euo pipefail

preset="${1:-default}"
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# zlib1g-dev: gzip-compressed traces (--trace-gzip, trace summarize). python3-matplotlib: the figures
# of `tpusim report` and bench plots. chromium: the test that loads the report page in a headless
# browser (skipped without it). pybind11-dev, python3-dev: the Python module (docs/python.md; the rest
# builds without them).
packages=(
  cmake ninja-build g++ pkg-config
  libsystemc-dev libeigen3-dev libboost-graph-dev libyaml-cpp-dev libfmt-dev libcli11-dev
  nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev python3-matplotlib zlib1g-dev chromium
  pybind11-dev python3-dev
)

source scripts/lib/debian_packages.sh
read -r -a missing <<< "$(missing_packages "${packages[@]}")"

if ((${#missing[@]} > 0)); then
  echo "build.sh: missing Debian packages: ${missing[*]}" >&2
  if [[ "$(id -u)" -eq 0 ]]; then
    echo "build.sh: installing them with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y --no-install-recommends "${missing[@]}"
  else
    echo "build.sh: root is needed to install them; run:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
fi

cmake --preset "$preset"
cmake --build --preset "$preset"
