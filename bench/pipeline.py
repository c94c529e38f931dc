"""End-to-end pipeline throughput and memory: generated binlogs -> bronze -> silver with ``binlake run`` (default
settings, validation off), for each Delta engine, at two input sizes (the second four times the first).

    python bench/pipeline.py                       # both engines, --scale 0.05 and 0.2 (about 5 and 20 MB)
    python bench/pipeline.py --scale 0.1 --engine spark
    python bench/pipeline.py --landing DIR --end YYYY-MM-DD   # a landing folder of your own (one size)

Each run is a fresh ``binlake run`` process on a fresh lake, so its whole process tree (the Python driver, the
JVM, Spark's Python workers) is measured: the peak resident memory of the tree is sampled every 0.1 s. Printed
per engine and size: changes/s, MB/s, peak memory, the stage breakdown; then the ratios 4x/1x of time (aim:
about 4, linear) and of peak memory (aim: about 1: memory must not grow with the input). Live silver row
counts are checked against the generator's truth, so a fast wrong run does not count.
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
import subprocess
import tempfile
import threading
import time

START = dt.date(2024, 3, 1)


def tree_rss(pid: int) -> int:
    """Resident bytes of a process and all its descendants."""
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


def run_measured(argv: list[str]) -> tuple[dict, float, int]:
    """(the run's JSON summary, wall seconds, peak tree RSS in bytes) of one ``binlake run`` process."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, tree_rss(proc.pid))
            time.sleep(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    done.set()
    sampler.join()
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"bench: {' '.join(argv)} exited {proc.returncode}:\n{err[-3000:]}")
    summary = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return summary[0], seconds, peak


def check(truth_dir: Path, lake: Path) -> None:
    """Live silver row counts equal the truth's (a cheap guard; the tests compare every value)."""
    from deltalake import DeltaTable

    from binlake.lake.silver import live_rows

    for truth in sorted(truth_dir.glob("*/day=*.jsonl")):
        db, table = truth.parent.name.split(".", 1)
        expected = sum(1 for line in truth.read_text(encoding="utf-8").splitlines() if line)
        path = lake / "silver" / f"{db}__{table}"
        got = len(live_rows(DeltaTable(str(path)).to_pyarrow_table().to_pylist())) if path.exists() else 0
        if got != expected:
            raise SystemExit(f"bench: {db}.{table} has {got} live rows in silver, truth has {expected}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", type=float, default=0.05, help="generator scale of the first size (default 0.05)")
    p.add_argument("--engine", choices=("both", "rust", "spark"), default="both")
    p.add_argument("--landing", type=Path, help="measure this landing folder instead of generated data")
    p.add_argument("--end", help="with --landing: the last day to apply (YYYY-MM-DD)")
    p.add_argument("--workdir", type=Path, help="where to generate and load (default: a temp folder)")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    args = p.parse_args(argv)

    from binlake.generate.config import GenerateConfig
    from binlake.generate.run import generate

    work = args.workdir or Path(tempfile.mkdtemp(prefix="binlake-bench-pipeline-"))
    binlake = str(Path(sys.executable).with_name("binlake"))
    engines = ("spark", "rust") if args.engine == "both" else (args.engine,)
    if args.landing:
        sizes = [("given", None, args.landing, args.end)]
    else:
        sizes = []
        for name, scale in (("1x", args.scale), ("4x", args.scale * 4)):
            out = work / f"gen-{name}"
            if not (out / "manifest.json").exists():
                generate(out, GenerateConfig(seed=7, days=1, scale=scale, start_date=START))
            sizes.append((name, out, out / "landing", START.isoformat()))
    results = []
    for engine in engines:
        for name, out, landing, end in sizes:
            lake = work / f"lake-{engine}-{name}"
            shutil.rmtree(lake, ignore_errors=True)
            argv = [binlake, "run", "--landing", str(landing), "--lake", str(lake), "--engine", engine, "--json"]
            summary, seconds, peak = run_measured(argv + (["--end", end] if end else []))
            if out is not None:
                check(out / "truth", lake)
            mb = summary["bytes"] / 1e6
            changes = summary["changes_applied"]
            results.append({"engine": engine, "size": name, "mb": round(mb, 2), "changes": changes,
                            "seconds": round(seconds, 2), "changes_per_s": round(changes / seconds),
                            "mb_per_s": round(mb / seconds, 3), "peak_mb": round(peak / 2**20),
                            "stages": summary["stage_seconds"]})
    ratios = {}
    for engine in engines:
        mine = [r for r in results if r["engine"] == engine]
        if len(mine) == 2:
            ratios[engine] = {"time_4x_over_1x": round(mine[1]["seconds"] / mine[0]["seconds"], 2),
                              "peak_memory_4x_over_1x": round(mine[1]["peak_mb"] / mine[0]["peak_mb"], 2)}
    load_avg = os.getloadavg()[0]
    if args.json:
        print(json.dumps({"results": results, "ratios": ratios, "load_average": load_avg,
                          "cpus": os.cpu_count()}, indent=2))
        return 0
    print(f"work dir {work}; {os.cpu_count()} CPUs, load average {load_avg:.1f} (other work slows every stage); "
          "each run a fresh `binlake run` process with default settings")
    for r in results:
        stages = ", ".join(f"{k} {v:.1f}s" for k, v in r["stages"].items())
        print(f"{r['engine']:>5} {r['size']:>5}: {r['mb']:7.2f} MB, {r['changes']:8d} changes in {r['seconds']:7.2f} s"
              f" = {r['changes_per_s']} changes/s, {r['mb_per_s']:.2f} MB/s, peak {r['peak_mb']} MB  ({stages})")
    for engine, ratio in ratios.items():
        print(f"{engine:>5}: time 4x/1x {ratio['time_4x_over_1x']:.2f} (linear: 4), peak memory 4x/1x "
              f"{ratio['peak_memory_4x_over_1x']:.2f} (bounded: about 1)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
