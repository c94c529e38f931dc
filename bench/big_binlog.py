"""A production-size binlog through ``binlake run`` with default settings, on each Delta engine: a real MariaDB
server writes one large binlog file (default about 1.5M row changes of an ordinary OLTP table, about 200 MB),
then ``binlake run`` loads it into a fresh lake per engine while the peak resident memory of its whole process
tree is sampled, and silver is compared with the server's own ``SELECT`` row by row.

    python bench/big_binlog.py                       # 1.5M changes, both engines
    python bench/big_binlog.py --changes 300000 --engine rust
    python bench/big_binlog.py --reuse DIR           # keep the generated landing folder in DIR between runs
    python bench/big_binlog.py --python-writer       # each engine also with the Python bronze writer: the ratio

``--python-writer`` runs each engine a second time with ``BINLAKE_NATIVE=0`` (the pure-Python bronze writer,
the baseline) and prints the ratios of run and ingest seconds, Python writer over native writer.

Needs MariaDB (``scripts/install_mariadb.sh``). Prints changes/s, MB/s, peak MB and the stage breakdown per
engine; exits non-zero when silver differs from the server.
"""

from __future__ import annotations

import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != BENCH_DIR]
sys.path.insert(0, str(ROOT))

import argparse
import importlib.util
import shutil
import tempfile

TABLE = """CREATE TABLE shop.orders (
  id BIGINT NOT NULL PRIMARY KEY, customer INT NOT NULL, status VARCHAR(16) NOT NULL,
  amount DECIMAL(12,2) NOT NULL, note VARCHAR(200), qty SMALLINT UNSIGNED, updated DATETIME(6) NOT NULL)"""
BATCH = 1000


def _pipeline_bench():
    spec = importlib.util.spec_from_file_location("bench_pipeline", BENCH_DIR / "pipeline.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_workload(server, changes: int) -> None:
    """Inserts (40%), updates (40%, each row touched once) and deletes (20%), 1000 rows per statement."""
    inserts, updates = changes * 2 // 5, changes * 2 // 5
    deletes = changes - inserts - updates
    server.execute("CREATE DATABASE shop; " + TABLE)
    conn = server.connect("shop", raw=False)
    cur = conn.cursor()
    note = "lorem ipsum dolor sit amet " * 5
    for start in range(0, inserts, BATCH):
        rows = [
            (
                i,
                i % 9973,
                ("new", "paid", "shipped")[i % 3],
                f"{i % 100000}.{i % 100:02d}",
                note[: i % 120],
                i % 65536,
                f"2024-03-01 {i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}.{i % 1000000:06d}",
            )
            for i in range(start, min(start + BATCH, inserts))
        ]
        cur.executemany("INSERT INTO orders VALUES (%s, %s, %s, %s, %s, %s, %s)", rows)
        conn.commit()
    for start in range(0, updates, BATCH):
        hi = min(start + BATCH, updates) - 1
        cur.execute(
            "UPDATE orders SET status = 'done', amount = amount + 1, note = CONCAT('u:', note), "
            "updated = updated + INTERVAL 1 SECOND WHERE id BETWEEN %s AND %s",
            (start, hi),
        )
        conn.commit()
    for start in range(0, deletes, BATCH):
        lo = inserts - deletes + start
        cur.execute("DELETE FROM orders WHERE id BETWEEN %s AND %s", (lo, min(lo + BATCH, inserts) - 1))
        conn.commit()
    conn.close()


def server_rows(server) -> list[tuple]:
    conn = server.connect("shop", raw=False)
    cur = conn.cursor()
    cur.execute("SELECT id, customer, status, amount, note, qty, updated FROM orders ORDER BY id")
    rows = [tuple(str(v) if v is not None else None for v in r) for r in cur.fetchall()]
    conn.close()
    return rows


def silver_rows(lake: Path) -> list[tuple]:
    from deltalake import DeltaTable

    from binlake.lake.silver import live_rows

    cols = ("id", "customer", "status", "amount", "note", "qty", "updated")
    rows = live_rows(DeltaTable(str(lake / "silver" / "shop__orders")).to_pyarrow_table().to_pylist())
    return sorted((tuple(str(r[c]) if r[c] is not None else None for c in cols) for r in rows), key=lambda r: int(r[0]))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--changes", type=int, default=1_500_000)
    p.add_argument("--engine", choices=("both", "rust", "spark"), default="both")
    p.add_argument("--reuse", type=Path, help="keep (or reuse) the landing folder and the expected rows here")
    p.add_argument(
        "--python-writer",
        action="store_true",
        help="also run each engine with the pure-Python bronze writer (BINLAKE_NATIVE=0): the baseline",
    )
    args = p.parse_args(argv)

    import json

    from tests.mariadb_server import BinlogSettings, MariaDBServer, require_mariadb

    bench = _pipeline_bench()
    work = args.reuse or Path(tempfile.mkdtemp(prefix="binlake-bench-big-"))
    landing = work / "landing" / "mariadb"
    expected_file = work / "expected.json"
    if not expected_file.exists():
        require_mariadb()
        with MariaDBServer(work / "server", BinlogSettings()) as server:
            print(f"writing {args.changes} row changes with MariaDB ...", flush=True)
            write_workload(server, args.changes)
            server.flush_logs()
            landing.mkdir(parents=True, exist_ok=True)
            for f in server.binlog_files():
                shutil.copy2(f, landing / f.name)
            expected_file.write_text(json.dumps(server_rows(server)))
    expected = [tuple(r) for r in json.loads(expected_file.read_text())]
    size = sum(f.stat().st_size for f in landing.iterdir())
    print(f"landing: {len(list(landing.iterdir()))} file(s), {size / 1e6:.0f} MB; server holds {len(expected)} rows")
    binlake = str(Path(sys.executable).with_name("binlake"))
    failed = False
    writers = {"native": {}, "python": {"BINLAKE_NATIVE": "0"}} if args.python_writer else {"": {}}
    for engine in ("spark", "rust") if args.engine == "both" else (args.engine,):
        timed: dict[str, tuple[float, float]] = {}
        for writer, env in writers.items():
            lake = work / f"lake-{engine}"
            shutil.rmtree(lake, ignore_errors=True)
            summary, seconds, peak = bench.run_measured(
                [binlake, "run", "--landing", str(landing.parent), "--lake", str(lake), "--engine", engine, "--json"],
                env,
            )
            same = silver_rows(lake) == expected
            failed |= not same
            stages = summary["stage_seconds"]
            timed[writer] = (summary["seconds"], stages["ingest"])
            label = f"{engine}{', ' + writer + ' writer' if writer else ''}"
            print(
                f"{label}: {summary['changes_applied']} changes, {summary['bytes'] / 1e6:.0f} MB in {seconds:.1f} s "
                f"= {summary['changes_applied'] / seconds:.0f} changes/s, {summary['bytes'] / 1e6 / seconds:.2f} "
                f"MB/s; peak {peak / 2**20:.0f} MB; silver {'equals' if same else 'DIFFERS FROM'} the server's "
                f"SELECT ({', '.join(f'{k} {v:.1f}s' for k, v in stages.items())})",
                flush=True,
            )
        if args.python_writer:
            (run_n, ingest_n), (run_p, ingest_p) = timed["native"], timed["python"]
            print(
                f"{engine}: Python writer / native writer: run {run_p / run_n:.2f}x, ingest {ingest_p / ingest_n:.2f}x",
                flush=True,
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
