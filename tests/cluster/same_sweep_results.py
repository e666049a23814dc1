#!/usr/bin/env python3
"""Exit 0 when two sweep output directories hold the same results, 1 (with the difference) otherwise.

    same_sweep_results.py EXPECTED ACTUAL

The rule is the shard/merge smoke test's (tests/app/app_test.py, test_sweep_shard_merge): results.csv
and results.jsonl equal apart from the wall-time fields (app_test.without_wall_times), sweep.json
equal byte for byte.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "app"))
from app_test import without_wall_times  # noqa: E402


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    expected, actual = sys.argv[1:]
    (eh, erows, erecs), (ah, arows, arecs) = without_wall_times(expected), without_wall_times(actual)
    problems = []
    if eh != ah:
        problems.append("results.csv header: {} != {}".format(eh, ah))
    if erows != arows:
        problems.append("results.csv rows differ ({} against {} rows); first difference: {}".format(
            len(erows), len(arows), next(((e, a) for e, a in zip(erows, arows) if e != a), "a missing row")))
    if erecs != arecs:
        problems.append("results.jsonl records differ (points {} against {})".format(
            [r["point"] for r in erecs], [r["point"] for r in arecs]))
    with open(os.path.join(expected, "sweep.json")) as a, open(os.path.join(actual, "sweep.json")) as b:
        if a.read() != b.read():
            problems.append("sweep.json differs")
    for p in problems:
        print("{} vs {}: {}".format(expected, actual, p), file=sys.stderr)
    if not problems:
        print("same results: {} points in {} and {} (wall times aside)".format(len(erows), expected, actual))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
