"""End-to-end pipeline throughput: generated binlogs -> bronze -> silver, at two input sizes (the second twice the
first), with a per-stage breakdown and the time ratio between the sizes (aim: at most 2.2x for 2x input).

    python bench/pipeline.py                 # --scale 0.05 and 0.1 (one generated day each, about 5 and 10 MB)
    python bench/pipeline.py --scale 0.25    # 0.25 and 0.5
    python bench/pipeline.py --engine spark  # the delta-spark engine (needs its jars)

Each size is generated with ``binlake generate`` (one day, default workload), then loaded into a fresh lake by
the jobs ``binlake run`` calls (``binlake.lake.jobs.run_source``: ingest on Spark, one task per file chunk, then
scan, resolve/fold on Spark, MERGE). One local Spark session serves both sizes; a warm-up load of a tiny
dataset runs first so JVM start and JIT warm-up are not counted. The result is checked against the generator's
truth (row counts per table) so a fast wrong run does not count.
"""

from __future__ import annotations

import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != BENCH_DIR]

import argparse
import datetime as dt
import json
import os
import shutil
import tempfile
import time

START = dt.date(2024, 3, 1)


def load(spark, engine, out: Path, lake: Path) -> dict:
    from binlake.lake.jobs import LakeLayout, RunOptions, run_source

    midnight = dt.datetime.combine(START + dt.timedelta(days=1), dt.time(), dt.timezone.utc)
    opts = RunOptions("shop-primary", cutoff_us=int(midnight.timestamp()) * 1_000_000)
    started = time.perf_counter()
    report = run_source(spark, engine, LakeLayout(str(lake)), str(out / "landing" / "shop-primary"), opts)
    seconds = time.perf_counter() - started
    return {**report.as_dict(), "wall_seconds": seconds}


def check(out: Path, lake: Path) -> None:
    """Live silver row counts equal the truth's (a cheap guard; the tests compare every value)."""
    from deltalake import DeltaTable

    from binlake.lake.silver import live_rows

    for truth in sorted((out / "truth").glob("*/day=*.jsonl")):
        db, table = truth.parent.name.split(".", 1)
        expected = sum(1 for line in truth.read_text(encoding="utf-8").splitlines() if line)
        path = lake / "silver" / f"{db}__{table}"
        got = len(live_rows(DeltaTable(str(path)).to_pyarrow_table().to_pylist())) if path.exists() else 0
        if got != expected:
            raise SystemExit(f"bench: {db}.{table} has {got} live rows in silver, truth has {expected}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", type=float, default=0.05, help="generator scale of the first size (default 0.05)")
    p.add_argument("--engine", choices=("auto", "rust", "spark"), default="rust")
    p.add_argument("--workdir", type=Path, help="where to generate and load (default: a temp folder)")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    args = p.parse_args(argv)

    from binlake.generate.config import GenerateConfig
    from binlake.generate.run import generate
    from binlake.lake.delta import engine_for
    from binlake.lake.session import build_session

    work = args.workdir or Path(tempfile.mkdtemp(prefix="binlake-bench-pipeline-"))
    spark = build_session("binlake-bench")
    engine = engine_for(spark, args.engine)
    results = []
    for name, scale in (("warm-up", 0.003), ("1x", args.scale), ("2x", args.scale * 2)):
        out = work / f"gen-{name}"
        if not (out / "manifest.json").exists():
            generate(out, GenerateConfig(seed=7, days=1, scale=scale, start_date=START))
        lake = work / f"lake-{name}"
        shutil.rmtree(lake, ignore_errors=True)
        r = load(spark, engine, out, lake)
        check(out, lake)
        if name == "warm-up":
            continue
        mb = r["bytes"] / 1e6
        changes = r["changes_applied"]
        results.append({"size": name, "scale": scale, "mb": round(mb, 2), "changes": changes,
                        "seconds": round(r["wall_seconds"], 2), "mb_per_s": round(mb / r["wall_seconds"], 3),
                        "rows_per_s": round(changes / r["wall_seconds"]), "stages": r["stage_seconds"]})
    ratio = results[1]["seconds"] / results[0]["seconds"]
    load_avg = os.getloadavg()[0]
    if args.json:
        print(json.dumps({"engine": engine.name, "results": results, "time_ratio_2x": round(ratio, 2),
                          "load_average": load_avg, "cpus": os.cpu_count()}, indent=2))
    else:
        print(f"engine {engine.name}; work dir {work}; {os.cpu_count()} CPUs, load average {load_avg:.1f} "
              "(other work on the machine slows every stage)")
        for r in results:
            stages = ", ".join(f"{k} {v:.1f}s" for k, v in r["stages"].items())
            print(f"{r['size']:>3}: {r['mb']:7.2f} MB, {r['changes']:8d} changes in {r['seconds']:7.2f} s = "
                  f"{r['mb_per_s']:.2f} MB/s, {r['rows_per_s']} rows/s  ({stages})")
        print(f"time ratio 2x/1x: {ratio:.2f} (aim <= 2.2)")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
