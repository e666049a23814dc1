#!/usr/bin/env python3
"""The floor plan (docs/architecture.md, sim/README.md) as a check: a source file includes only
headers of its own folder or of folders on lower floors. Fails with every include that reaches up
or sideways, file and line.  Usage: layering_test.py SOURCE_DIR"""
import os
import re
import sys

# The tree's floors, bottom up; folders on one floor do not include each other.
TREE = {"base": 0, "sim": 1, "config": 2, "traces": 2, "models": 3, "compiler": 4, "workloads": 5,
        "sweep": 6, "app": 7, "python": 8, "bench": 9}
# sim/'s floors (sim/README.md, "Floor plan").
SIM = {"base": 1, "isa": 1, "hw": 2, "hbm": 3, "ici": 3, "mxu": 3, "vmem": 3, "vpu": 3, "analysis": 4, "cmem": 4,
       "noc": 4, "pcie": 4, "host": 4, "dma": 5, "xfer": 5, "power": 5, "core": 6, "chip": 7, "slice": 8, "engine": 9}
# compiler/'s rooms (docs/architecture.md); its top-level files (compile.h, compile_cache.h) are apart.
COMPILER = {"plan": 1, "lower": 2, "hlo": 2, "collectives": 3, "step": 4}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def floor_of(path):
    """(tree folder, its sub-folder or None) of a repository path."""
    parts = path.split("/")
    top = parts[0]
    sub = parts[1] if top in ("sim", "compiler") and len(parts) > 2 else None
    return top, sub


def allowed(src, dst):
    (st, ss), (dt, ds) = floor_of(src), floor_of(dst)
    if dt not in TREE:
        return True  # not a folder of the building (a system or third-party header)
    if st != dt:
        return TREE[dt] < TREE[st]
    if ss is None or ds is None or ss == ds:
        return True
    floors = SIM if st == "sim" else COMPILER
    return floors[ds] < floors[ss]


def main():
    # The rule can fail: each of these reaches up or sideways.
    for src, dst in [("sim/core/a.cc", "compiler/b.h"), ("sim/core/a.cc", "sim/engine/b.h"), ("sim/dma/a.cc", "sim/xfer/b.h"),
                     ("config/a.cc", "traces/b.h"), ("compiler/a.cc", "workloads/b.h"), ("base/a.h", "sim/b.h"),
                     ("compiler/plan/a.cc", "compiler/lower/b.h"), ("compiler/lower/a.cc", "compiler/hlo/b.h")]:
        assert not allowed(src, dst), (src, dst)
    root = os.path.abspath(sys.argv[1])
    bad, files = [], 0
    for top in TREE:
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for n in sorted(names):
                if not n.endswith((".h", ".cc")):
                    continue
                path = os.path.relpath(os.path.join(dirpath, n), root)
                top, sub = floor_of(path)
                if sub is not None and sub not in (SIM if top == "sim" else COMPILER):
                    bad.append("{}: a folder of {}/ without a floor (give it one here and in its README)".format(path, top))
                files += 1
                with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                    for i, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if m and not allowed(path, m.group(1)):
                            bad.append("{}:{}: includes {} (a floor above or beside its own)".format(path, i, m.group(1)))
    for b in bad:
        print(b)
    print("{} files read, {} includes against the floor plan".format(files, len(bad)))
    return 1 if bad or files < 100 else 0


if __name__ == "__main__":
    sys.exit(main())
