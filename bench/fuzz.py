"""The fuzz targets of tests/fuzz for longer than the test suite's short runs (atheris, libFuzzer).

    python bench/fuzz.py                          # every target, 300 s each
    python bench/fuzz.py --seconds 3600 binlog    # one target for an hour
    python bench/fuzz.py --corpus DIR             # keep the grown corpora in DIR/<target> between runs

A crash writes its input to DIR/<target>-crash-<sha1> (the libFuzzer report says which error escaped); make it a
regression test (tests/binlog/test_hostile.py and friends build such inputs by hand) before fixing it. Exits
non-zero when any target crashed.
"""

from __future__ import annotations

import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != BENCH_DIR]
sys.path.insert(0, str(ROOT))

import argparse
import subprocess
import tempfile


def main() -> int:
    from tests.fuzz.targets import TARGETS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "targets",
        nargs="*",
        choices=sorted(TARGETS) + [[]],
        default=[],
        metavar="TARGET",
        help=f"targets to run (default all: {', '.join(sorted(TARGETS))})",
    )
    parser.add_argument("--seconds", type=int, default=300, help="time per target (default 300)")
    parser.add_argument("--corpus", type=Path, default=None, help="folder keeping the corpora between runs")
    parser.add_argument("--rss-mb", type=int, default=2048, help="memory limit per run (libFuzzer -rss_limit_mb)")
    args = parser.parse_args()
    base = args.corpus or Path(tempfile.mkdtemp(prefix="binlake-fuzz-"))
    failed = []
    for name in args.targets or sorted(TARGETS):
        cmd = [
            sys.executable,
            "-m",
            "tests.fuzz.run",
            name,
            str(base / name),
            f"-max_total_time={args.seconds}",
            "-max_len=65536",
            "-len_control=0",
            f"-rss_limit_mb={args.rss_mb}",
            f"-artifact_prefix={base}/{name}-",
            "-print_final_stats=1",
        ]
        print(f"fuzz {name}: {args.seconds} s, corpus {base / name}", flush=True)
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        stats = [
            line for line in done.stderr.splitlines() if line.startswith(("stat::number_of_executed_units", "Done "))
        ]
        print(f"  exit {done.returncode}; " + "; ".join(stats), flush=True)
        if done.returncode != 0:
            failed.append(name)
            print(done.stderr[-3000:], file=sys.stderr)
    print(f"crashes in: {', '.join(failed)}" if failed else "no crashes")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
