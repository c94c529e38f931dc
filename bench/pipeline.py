"""End-to-end pipeline throughput and memory: generated binlogs -> bronze -> silver with ``binlake run`` (default
settings, validation off), for each Delta engine, at two input sizes (the second four times the first).

    python bench/pipeline.py                       # both engines, --scale 0.05 and 0.2 (about 5 and 20 MB)
    python bench/pipeline.py --scale 0.1 --engine spark
    python bench/pipeline.py --landing DIR --end YYYY-MM-DD   # a landing folder of your own (one size)

Each run is a fresh ``binlake run`` process on a fresh lake, so its whole process tree (the Python driver, the
JVM, Spark's Python workers) is measured: the peak resident memory of the tree (PSS: shared pages once) is
sampled every 0.1 s. Printed
per engine and size: changes/s, MB/s, peak memory, the stage breakdown; then the ratios 4x/1x of time (aim:
about 4, linear) and of peak memory (aim: about 1: memory must not grow with the input). Live silver row
counts are checked against the generator's truth, so a fast wrong run does not count.

The issue's end-to-end target, on a real MariaDB binlog (``--mariadb``):

    python bench/pipeline.py --mariadb [--mb 40] [--engine spark|rust|both] [--binlog-dir DIR] [--json]

1. gets the binlog with bench/decode.py's ``build_binlog`` (one OLTP table ``bench.orders`` of 19 column types:
   multi-row INSERTs, UPDATEs of every row, DELETEs; needs ``bash scripts/install_mariadb.sh``), cached in
   ``--binlog-dir`` (default /tmp/binlake-bench, decode.py's own cache) for the 1x size of ``--mb`` MB, and in
   ``<binlog-dir>-2x`` for the 2x size: a second build asked for twice the megabytes (the workload is
   deterministic, so it is twice as many rounds of the same statements; a renamed copy of the 1x file would
   repeat its GTIDs and be skipped);
2. times python-mysql-replication (pmr) decode-only on the same file(s) with decode.py's ``pmr_row_changes`` and
   ``timed`` (one core, values decoded). The same pass records which ``id`` each row change inserts or deletes
   (a set add/discard per row, well under 1% of pmr's per-row cost, inside its clock): the ids the server held
   at the end, independent of binlake's decoder;
3. links the file(s) into ``<workdir>/landing-<N>x/bench/`` (source ``bench``) and runs ``binlake run --landing
   ... --lake <fresh lake> --engine ENGINE --json`` as a fresh process per engine and size (validation off);
4. fails loudly unless silver ``bench__orders`` holds exactly those ids (one live row each) and the 2x run applied
   about twice the 1x run's changes;
5. prints per engine and size: changes, wall seconds (process start included), changes/s, the run's own
   ``seconds`` and ``stage_seconds``, bronze bytes per change (Parquet on disk, Arrow in flight); and against
   the targets, with MET / NOT MET: binlake changes/s over pmr decode rows/s >= 3 (by wall time and by the run's
   own seconds) and time(2x)/time(1x) <= 2.1; and per engine the marginal rate (the 2x run's extra changes over
   its extra seconds) and the fixed seconds it leaves (a run's cost that does not grow with its input: Spark
   jobs, Delta commits and log reads, JVM warm-up); the wall time of a run with nothing to load (process, JVM
   and Spark session start); and the ratio to pmr those fixed costs allow the 1x run at most.
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
from typing import Optional

START = dt.date(2024, 3, 1)


def tree_memory(pid: int) -> int:
    """Resident bytes of a process and all its descendants, each page counted once: the sum of their proportional
    set sizes (PSS: a page shared by n processes counts 1/n in each; Spark's Python workers are forked from one
    daemon and share its pages, which a sum of RSS would count once per worker). RSS where PSS can not be read."""
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    total = 0
    for p in procs:
        try:
            total += _pss(p.pid)
        except OSError:  # no smaps_rollup (or gone): its RSS
            try:
                total += p.memory_info().rss
            except psutil.NoSuchProcess:
                pass
    return total


def _pss(pid: int) -> int:
    """A process's proportional set size from ``/proc/<pid>/smaps_rollup`` (one line of the kernel's sum;
    psutil's ``memory_full_info`` formats every mapping of ``smaps``, which for a JVM of a few GB ten times a
    second slowed the measured run itself by about 10%)."""
    with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
        for line in f:
            if line.startswith(b"Pss:"):
                return int(line.split()[1]) * 1024
    raise OSError(f"no Pss line for {pid}")


def run_measured(argv: list[str], env: Optional[dict] = None) -> tuple[dict, float, int]:
    """(the run's JSON summary, wall seconds, peak memory of its process tree in bytes, :func:`tree_memory`) of one
    ``binlake run`` process (``env``:
    variables set for it)."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})}
    )
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, tree_memory(proc.pid))
            done.wait(2.0)  # a sample walks every mapping of the JVM: ten a second slowed the run ~10%, one ~5%

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    seconds = time.perf_counter() - started
    done.set()
    sampler.join()
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


# -- --mariadb: the end-to-end target on a real MariaDB binlog ------------------------------------------------------
TARGET_X_PMR = 3.0  # binlake run changes/s over python-mysql-replication decode-only rows/s: at least
TARGET_2X_OVER_1X = 2.1  # time(2x) / time(1x): at most
MARIADB_SOURCE = "bench"


def load_decode_bench():
    """bench/decode.py as a module (bench/ is not on sys.path, see above)."""
    import importlib.util

    name = "binlake_bench_decode"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCH_DIR / "decode.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def pmr_decode_and_live_ids(decode, paths: list[Path], megabytes: float) -> tuple[object, set]:
    """python-mysql-replication decode-only timing of ``paths`` (decode.py's ``timed``), and the ``id`` values of
    ``bench.orders`` live at the end of them, from pmr's decoded rows: inserted minus deleted (an UPDATE that
    changes the key moves it)."""
    live: set = set()

    def changes(files: list[Path]):
        for table, op, before, after in decode.pmr_row_changes(files):
            if table == "orders":
                if before is not None:
                    live.discard(before["id"])
                if after is not None:
                    live.add(after["id"])
            yield table, op, before, after

    timing = decode.timed("python-mysql-replication", changes, paths, megabytes, 50_000)
    return timing, live


def land(files: list[Path], landing: Path) -> Path:
    """``landing/bench/<file name>`` for each binlog file: hard links where possible, else copies."""
    shutil.rmtree(landing, ignore_errors=True)
    folder = landing / MARIADB_SOURCE
    folder.mkdir(parents=True)
    for f in files:
        try:
            os.link(f, folder / f.name)
        except OSError:
            shutil.copy2(f, folder / f.name)
    return landing


def check_ids(lake: Path, expected: set) -> int:
    """Silver ``bench__orders`` holds exactly the ``expected`` ids, one live row each; returns the live count."""
    from deltalake import DeltaTable

    path = lake / "silver" / f"{MARIADB_SOURCE}__orders"
    if not path.exists():
        raise SystemExit(f"bench: FAILED: {path} does not exist")
    table = DeltaTable(str(path))
    names = {f.name for f in table.schema().fields}
    rows = table.to_pyarrow_table(columns=["id"] + (["_binlake_op"] if "_binlake_op" in names else [])).to_pydict()
    ops = rows.get("_binlake_op") or [None] * len(rows["id"])
    ids = [i for i, op in zip(rows["id"], ops) if op != "delete"]
    got = set(ids)
    if len(ids) != len(got) or got != expected:
        raise SystemExit(
            f"bench: FAILED: {path} has {len(ids)} live rows ({len(got)} distinct ids), the server "
            f"held {len(expected)}: {len(got - expected)} ids too many, {len(expected - got)} missing"
        )
    return len(ids)


def bronze_bytes(lake: Path) -> tuple[int, int, int]:
    """(bronze rows, bytes of bronze's Parquet files on disk, bytes of its Arrow form: what travels between the
    decoder and Spark, and what the apply reads back)."""
    from deltalake import DeltaTable

    path = lake / "bronze" / "binlog_events"
    table = DeltaTable(str(path))
    disk = sum(Path(uri.removeprefix("file://")).stat().st_size for uri in table.file_uris())
    arrow = table.to_pyarrow_table()
    return arrow.num_rows, disk, arrow.nbytes


def verdict(ok: bool) -> str:
    return "MET" if ok else "NOT MET"


def main_mariadb(args: argparse.Namespace) -> int:
    decode = load_decode_bench()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="binlake-bench-mariadb-"))
    work.mkdir(parents=True, exist_ok=True)
    binlake = str(Path(sys.executable).with_name("binlake"))
    engines = ("spark", "rust") if args.engine == "both" else (args.engine,)

    sizes = []  # (name, factor, files, megabytes, pmr timing, live ids)
    for name, factor, binlog_dir in (
        ("1x", 1, args.binlog_dir),
        ("2x", 2, args.binlog_dir.with_name(args.binlog_dir.name + "-2x")),
    ):
        binlog_dir.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        files = decode.build_binlog(binlog_dir, args.mb * factor)
        build_s = time.perf_counter() - started
        mb = sum(f.stat().st_size for f in files) / 1e6
        decode.log(f"input {name}: {', '.join(str(f) for f in files)} ({mb:.1f} MB; got in {build_s:.0f} s)")
        timing, live = pmr_decode_and_live_ids(decode, files, mb)
        sizes.append((name, factor, files, mb, timing, live))

    results = []
    floors = {}  # engine -> wall seconds of a run with nothing to load: process, JVM and Spark session start
    for engine in engines:
        empty = work / "landing-empty"
        (empty / "bench").mkdir(parents=True, exist_ok=True)
        lake = work / f"lake-empty-{engine}"
        shutil.rmtree(lake, ignore_errors=True)
        _, floors[engine], _ = run_measured(
            [binlake, "run", "--landing", str(empty), "--lake", str(lake), "--engine", engine, "--json"]
        )
        decode.log(f"run: {engine} with nothing to load: {floors[engine]:.1f} s wall")
        for name, _factor, files, mb, pmr, live in sizes:
            landing = land(files, work / f"landing-{name}")
            lake = work / f"lake-mariadb-{engine}-{name}"
            shutil.rmtree(lake, ignore_errors=True)
            argv = [binlake, "run", "--landing", str(landing), "--lake", str(lake), "--engine", engine, "--json"]
            decode.log(f"run: {engine} {name}: {' '.join(argv)}")
            summary, seconds, peak = run_measured(argv)
            changes = summary["changes_applied"]
            live_rows = check_ids(lake, live)
            run_s = summary["seconds"]
            _, disk, arrow = bronze_bytes(lake)
            decode.log(
                f"run: {engine} {name}: {changes} changes in {seconds:.1f} s wall ({run_s:.1f} s in the run); "
                f"silver: {live_rows} live rows, as the server held"
            )
            results.append(
                {
                    "engine": engine,
                    "size": name,
                    "mb": round(mb, 2),
                    "changes": changes,
                    "pmr_rows": pmr.rows,
                    "live_rows": live_rows,
                    "wall_seconds": round(seconds, 2),
                    "changes_per_s": round(changes / seconds),
                    "run_seconds": run_s,
                    "run_changes_per_s": round(changes / run_s) if run_s else None,
                    "x_pmr_wall": round(changes / seconds / pmr.rows_per_s, 2),
                    "x_pmr_run": round(changes / run_s / pmr.rows_per_s, 2) if run_s else None,
                    "peak_mb": round(peak / 2**20),
                    "stages": summary["stage_seconds"],
                    "bronze_disk_bytes_per_change": round(disk / changes),
                    "bronze_arrow_bytes_per_change": round(arrow / changes),
                }
            )

    ratios = {}
    for engine in engines:
        one, two = (next(r for r in results if r["engine"] == engine and r["size"] == s) for s in ("1x", "2x"))
        if not 1.8 <= two["changes"] / one["changes"] <= 2.2:
            raise SystemExit(
                f"bench: FAILED: {engine} applied {two['changes']} changes at 2x, {one['changes']} at "
                "1x: not about twice"
            )
        added_s = two["run_seconds"] - one["run_seconds"]
        marginal = (two["changes"] - one["changes"]) / added_s if added_s > 0 else None
        ratios[engine] = {
            "changes_2x_over_1x": round(two["changes"] / one["changes"], 3),
            "wall_2x_over_1x": round(two["wall_seconds"] / one["wall_seconds"], 2),
            "run_2x_over_1x": round(two["run_seconds"] / one["run_seconds"], 2),
            # what the second half of the input costs: the run's rate without its fixed part
            "marginal_changes_per_s": round(marginal) if marginal else None,
            "marginal_x_pmr": round(marginal / sizes[0][4].rows_per_s, 2) if marginal else None,
            "fixed_seconds": round(one["run_seconds"] - one["changes"] / marginal, 1) if marginal else None,
            "empty_run_wall_seconds": round(floors[engine], 2),
        }
        if marginal:
            # the 1x wall time that does not grow with the input (the run's fixed seconds and the process start
            # outside them) bounds the 1x ratio whatever the per-change speed
            floor = ratios[engine]["fixed_seconds"] + one["wall_seconds"] - one["run_seconds"]
            ratios[engine]["ceiling_x_pmr_wall_1x"] = round(one["changes"] / floor / sizes[0][4].rows_per_s, 2)
    targets = {}  # label -> (value, target text, met)
    for r in results:
        for kind, key in (("wall", "x_pmr_wall"), ("run seconds", "x_pmr_run")):
            value = r[key] or 0.0
            targets[f"{r['engine']} {r['size']} x pmr ({kind})"] = (
                value,
                f">= {TARGET_X_PMR:g}",
                value >= TARGET_X_PMR,
            )
    for engine, ratio in ratios.items():
        for kind, key in (("wall", "wall_2x_over_1x"), ("run seconds", "run_2x_over_1x")):
            targets[f"{engine} time 2x/1x ({kind})"] = (
                ratio[key],
                f"<= {TARGET_2X_OVER_1X:g}",
                ratio[key] <= TARGET_2X_OVER_1X,
            )
    load_avg = os.getloadavg()[0]
    pmr_out = {
        name: {
            "mb": round(mb, 2),
            "rows": t.rows,
            "seconds": round(t.seconds, 2),
            "rows_per_s": round(t.rows_per_s),
            "cpu_seconds": round(t.cpu_seconds, 2),
            "rows_per_cpu_s": round(t.rows_per_cpu_s),
            "live_ids": len(live),
            "files": [str(f) for f in files],
        }
        for name, _, files, mb, t, live in sizes
    }
    if args.json:
        print(
            json.dumps(
                {
                    "mode": "mariadb",
                    "work": str(work),
                    "pmr": pmr_out,
                    "results": results,
                    "ratios": ratios,
                    "targets": {"x_pmr_at_least": TARGET_X_PMR, "time_2x_over_1x_at_most": TARGET_2X_OVER_1X},
                    "met": {label: {"value": v, "target": t, "met": ok} for label, (v, t, ok) in targets.items()},
                    "load_average": load_avg,
                    "cpus": os.cpu_count(),
                },
                indent=2,
            )
        )
        return 0
    print()
    print(
        f"work dir {work}; {os.cpu_count()} CPUs, load average {load_avg:.1f} (other work slows every stage); "
        "each run a fresh `binlake run` process, default settings, validation off"
    )
    for name, p in pmr_out.items():
        print(
            f"  pmr {name}: {p['mb']:6.1f} MB, {p['rows']:8d} rows decoded in {p['seconds']:7.2f} s = "
            f"{p['rows_per_s']:,} rows/s (CPU {p['cpu_seconds']:.2f} s = {p['rows_per_cpu_s']:,} rows/CPU s); "
            f"{p['live_ids']} ids live at the end"
        )
    print(
        f"{'engine':>6} {'size':>4} {'changes':>8} {'wall s':>8} {'changes/s':>10} {'x pmr':>6} "
        f"{'run s':>8} {'changes/s':>10} {'x pmr':>6} {'peak MB':>8} {'bronze B/change':>15}  stages (s)"
    )
    for r in results:
        stages = ", ".join(f"{k} {v:.1f}" for k, v in r["stages"].items())
        print(
            f"{r['engine']:>6} {r['size']:>4} {r['changes']:>8d} {r['wall_seconds']:>8.2f} "
            f"{r['changes_per_s']:>10,} {r['x_pmr_wall']:>6.2f} {r['run_seconds']:>8.2f} "
            f"{r['run_changes_per_s']:>10,} {r['x_pmr_run']:>6.2f} {r['peak_mb']:>8} "
            f"{r['bronze_disk_bytes_per_change']:>6} / {r['bronze_arrow_bytes_per_change']:<6}  {stages}"
        )
    print(
        "stages: ingest + apply make up the run's seconds (wall minus run s: process and Spark session start); "
        "scan, fold and merge are parts of apply; bronze B/change: on disk (Parquet) / in Arrow (in flight)"
    )
    print(
        f"targets: changes/s over pmr decode rows/s >= {TARGET_X_PMR:g}; time 2x/1x <= {TARGET_2X_OVER_1X:g} "
        "(wall: the whole `binlake run` process; run s: its own summary's seconds)"
    )
    for engine, ratio in ratios.items():
        print(
            f"{engine:>6}: changes 2x/1x {ratio['changes_2x_over_1x']:.3f}; time 2x/1x wall "
            f"{ratio['wall_2x_over_1x']:.2f}, run {ratio['run_2x_over_1x']:.2f} (target <= {TARGET_2X_OVER_1X:g}); "
            f"the 1x more changes of 2x add {ratio['marginal_changes_per_s'] or 0:,} changes/s "
            f"({ratio['marginal_x_pmr'] or 0:.2f}x pmr), so about {ratio['fixed_seconds'] or 0:.1f} s of a run "
            "does not grow with its input"
        )
        print(
            f"{'':>6}  a run with nothing to load takes {ratio['empty_run_wall_seconds']:.1f} s wall; with the "
            f"fixed seconds the 1x run can reach at most {ratio.get('ceiling_x_pmr_wall_1x') or 0:.2f}x pmr by "
            "wall time however fast each change is"
        )
    for label, (value, target, ok) in targets.items():
        print(f"  {label:<34} {value:6.2f}  (target {target:<7}) {verdict(ok)}")
    print("correctness: silver bench__orders holds exactly the ids pmr's decoded rows leave live, in every run")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", type=float, default=0.05, help="generator scale of the first size (default 0.05)")
    p.add_argument("--engine", choices=("both", "rust", "spark"), default="both")
    p.add_argument("--landing", type=Path, help="measure this landing folder instead of generated data")
    p.add_argument("--end", help="with --landing: the last day to apply (YYYY-MM-DD)")
    p.add_argument("--workdir", type=Path, help="where to generate and load (default: a temp folder)")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument(
        "--mariadb",
        action="store_true",
        help="measure the end-to-end target on a real MariaDB binlog (bench/decode.py's), 1x and 2x",
    )
    p.add_argument("--mb", type=int, default=40, help="with --mariadb: the 1x binlog size in MB (default 40)")
    p.add_argument(
        "--binlog-dir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "binlake-bench",
        help="with --mariadb: where the 1x binlog is built and cached (default: %(default)s, "
        "bench/decode.py's); the 2x one goes to <this>-2x",
    )
    args = p.parse_args(argv)
    if args.mariadb:
        return main_mariadb(args)

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
            results.append(
                {
                    "engine": engine,
                    "size": name,
                    "mb": round(mb, 2),
                    "changes": changes,
                    "seconds": round(seconds, 2),
                    "changes_per_s": round(changes / seconds),
                    "mb_per_s": round(mb / seconds, 3),
                    "peak_mb": round(peak / 2**20),
                    "stages": summary["stage_seconds"],
                }
            )
    ratios = {}
    for engine in engines:
        mine = [r for r in results if r["engine"] == engine]
        if len(mine) == 2:
            ratios[engine] = {
                "time_4x_over_1x": round(mine[1]["seconds"] / mine[0]["seconds"], 2),
                "peak_memory_4x_over_1x": round(mine[1]["peak_mb"] / mine[0]["peak_mb"], 2),
            }
    load_avg = os.getloadavg()[0]
    if args.json:
        print(
            json.dumps(
                {"results": results, "ratios": ratios, "load_average": load_avg, "cpus": os.cpu_count()}, indent=2
            )
        )
        return 0
    print(
        f"work dir {work}; {os.cpu_count()} CPUs, load average {load_avg:.1f} (other work slows every stage); "
        "each run a fresh `binlake run` process with default settings"
    )
    for r in results:
        stages = ", ".join(f"{k} {v:.1f}s" for k, v in r["stages"].items())
        print(
            f"{r['engine']:>5} {r['size']:>5}: {r['mb']:7.2f} MB, {r['changes']:8d} changes in {r['seconds']:7.2f} s"
            f" = {r['changes_per_s']} changes/s, {r['mb_per_s']:.2f} MB/s, peak {r['peak_mb']} MB  ({stages})"
        )
    for engine, ratio in ratios.items():
        print(
            f"{engine:>5}: time 4x/1x {ratio['time_4x_over_1x']:.2f} (linear: 4), peak memory 4x/1x "
            f"{ratio['peak_memory_4x_over_1x']:.2f} (bounded: about 1)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
