#!/usr/bin/env python3
"""Differential request fuzzing of nowait against nginx 1.22, for as long as
asked.

Runs the `fuzz_run` test of tests/differential_fuzz.rs (ignored in plain
`cargo test`; the same fuzzer runs a few seconds there from a fixed seed):
mutated requests seeded from tests/differential/corpus.txt go to nowait and
to /usr/sbin/nginx with the same configuration, and the classes of
differences are written with one example each (the shortest), marked
"known" when tests/differential/known-differences.txt lists them
(`fuzz CLASS: reason`). Case N of seed S is always the same bytes.

    scripts/fuzz-requests.py --seed 1 --count 100000 -j1 --out report.txt
    scripts/fuzz-requests.py --seconds 60 --proxy
    scripts/fuzz-requests.py --self-check     # nginx against a second nginx

Measured (100,000 cases, seed 1, -j1): see tests/differential/README.md.
Python standard library only.
"""

import argparse
import os
import subprocess
import sys
from pathlib import Path


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=1, help="the run's seed (default 1)")
    p.add_argument("--count", type=int, default=1000, help="cases to run (default 1000)")
    p.add_argument("--first", type=int, default=0, help="index of the first case")
    p.add_argument("--seconds", type=int, help="stop after this long")
    p.add_argument("-j", "--jobs", type=int, default=2, help="cases at once (default 2)")
    p.add_argument("--proxy", action="store_true", help="fuzz the proxy (one case at a time)")
    p.add_argument("--self-check", action="store_true", help="a second nginx in nowait's place")
    p.add_argument("--out", help="also write the report to this file")
    a = p.parse_args()

    env = dict(os.environ)
    env.update(
        NOWAIT_FUZZ_SEED=str(a.seed),
        NOWAIT_FUZZ_COUNT=str(a.count),
        NOWAIT_FUZZ_FIRST=str(a.first),
        NOWAIT_FUZZ_JOBS=str(a.jobs),
        NOWAIT_FUZZ_MODE="proxy" if a.proxy else "static",
    )
    if a.seconds is not None:
        env["NOWAIT_FUZZ_SECONDS"] = str(a.seconds)
    if a.self_check:
        env["NOWAIT_DIFF_SELF"] = "1"
    if a.out:
        env["NOWAIT_FUZZ_REPORT"] = str(Path(a.out).resolve())
    cmd = ["cargo", "test", "--test", "differential_fuzz", "fuzz_run", "--",
           "--ignored", "--nocapture", "--exact"]
    root = Path(__file__).resolve().parent.parent
    return subprocess.call(cmd, cwd=root, env=env)


if __name__ == "__main__":
    sys.exit(main())
