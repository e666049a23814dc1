#!/usr/bin/env python3
"""docs/sweeps.md shows scripts/slurm_sweep.sbatch verbatim: the recipe a reader copies is the one
scripts/slurm_sweep_test.sh submits to Slurm (one source of truth).

    slurm_recipe_doc_test.py SOURCE_DIR

The doc's copy is the ```sh block right after the line that names `scripts/slurm_sweep.sbatch`
followed by a colon. Exit 0 when it equals the file, 1 with a diff otherwise.
"""
import difflib
import os
import re
import sys

MARKER = "`scripts/slurm_sweep.sbatch`:"


def doc_block(text):
    """The first fenced block after MARKER, or None."""
    at = text.find(MARKER)
    if at < 0:
        return None
    m = re.compile(r"```[a-z]*\n(.*?)^```", re.S | re.M).search(text, at)
    return m.group(1) if m else None


def main():
    src = sys.argv[1]
    with open(os.path.join(src, "docs", "sweeps.md")) as f:
        block = doc_block(f.read())
    with open(os.path.join(src, "scripts", "slurm_sweep.sbatch")) as f:
        script = f.read()
    if block is None:
        print("docs/sweeps.md has no code block after a line ending in " + MARKER, file=sys.stderr)
        return 1
    if block != script:
        sys.stderr.writelines(difflib.unified_diff(script.splitlines(True), block.splitlines(True),
                                                   "scripts/slurm_sweep.sbatch", "docs/sweeps.md"))
        print("docs/sweeps.md's copy of scripts/slurm_sweep.sbatch is stale: paste the file into it",
              file=sys.stderr)
        return 1
    print("docs/sweeps.md shows scripts/slurm_sweep.sbatch verbatim")
    return 0


if __name__ == "__main__":
    sys.exit(main())
