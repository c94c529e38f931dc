"""Decode throughput: binlake vs python-mysql-replication on the same large binlog, offline, in one run.

    python bench/decode.py            # build (once, cached) a ~40 MB MariaDB binlog, decode it both ways
    python bench/decode.py --mb 200   # a bigger one
    python bench/decode.py --binlog FILE --no-compare   # any binlog written with binlog_row_metadata=FULL

With ``--binlog``, python-mysql-replication decodes the WRITE/UPDATE/DELETE rows events it can read offline; it
has no TRANSACTION_PAYLOAD support and the bench does not hand it PARTIAL_UPDATE_ROWS events, so on a MySQL 8
binlog (e.g. ``binlake generate --out DIR --days 1 --scale 0.2``: JSON, partial JSON, compressed transactions)
it returns fewer rows than binlake: compare rows per CPU second. Values are compared on generated binlogs only.

The binlog comes from a private MariaDB server (tests/mariadb_server.py; install it with
``bash scripts/install_mariadb.sh``) running a generated workload over a table of 19 column types: multi-row
INSERTs, UPDATEs of every row (full before and after images) and DELETEs, until the file reaches ``--mb``. It is
kept under ``--workdir`` (a temp folder by default, never in git) and reused while its size setting matches.

binlake decodes it four ways, timed in the same run: the pure-Python decoder
(``binlake.binlog.iter_row_changes(path)``), the native core into Arrow batches per table, values typed as silver
types them (``binlake.binlog.columnar.iter_table_batches(path, engine="native")``, one core), and ``binlake rows
FILE --format jsonl`` as a subprocess (process start and every output line included; the bench reads the lines
from a pipe and counts them), which uses the native core when it is built. Each gets rows/s and ratios against
python-mysql-replication. python-mysql-replication (PyPI
``mysql-replication``) has no file reader: each event is wrapped as ``pymysql.protocol.MysqlPacket(b"\\x00" +
header + body)`` and given to its ``BinLogPacketWrapper`` with a stand-in control connection (it never queries:
column names, signedness and charsets come from the TABLE_MAP's own optional metadata). Both decode on one core,
values included; then a second, untimed pass compares every row both decoded, per column type.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Running `python bench/decode.py` puts bench/ first on sys.path, where a sibling script's name (bench/json.py)
# would shadow a standard module: look modules up without it.
BENCH_DIR = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != BENCH_DIR]

import argparse
import collections
import datetime
import json
import os
import shutil
import struct
import tempfile
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Callable, Iterator

ROOT = BENCH_DIR.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

os.environ["TZ"] = "UTC"  # python-mysql-replication renders TIMESTAMP with utcfromtimestamp; keep all in UTC
time.tzset()

BENCH_DB = "bench"
BATCH_ROWS = 20_000
BINLOG_MAGIC = b"\xfebin"
EVENT_HEADER = struct.Struct("<IBIIIH")  # timestamp, type_code, server_id, event_size, log_pos, flags
EVENT_HEADER_LEN = 19
FORMAT_DESCRIPTION_EVENT = 15
TABLE_MAP_EVENT = 19
ROWS_EVENT_TYPES = {23: "insert", 24: "update", 25: "delete", 30: "insert", 31: "update", 32: "delete"}
BINLOG_CHECKSUM_ALG_CRC32 = 1

# The benchmark table: column name -> (SQL type, comparison kind, generating SQL expression over `seq`).
COLUMNS: dict[str, tuple[str, str, str]] = {
    "id": ("BIGINT UNSIGNED NOT NULL PRIMARY KEY", "int", "seq"),
    "customer": ("INT NOT NULL", "int", "CAST(seq % 100003 AS SIGNED) - 50000"),
    "qty": ("SMALLINT UNSIGNED", "int", "seq % 65536"),
    "flags": ("TINYINT", "int", "IF(seq % 11 = 0, NULL, CAST(seq % 256 AS SIGNED) - 128)"),
    "big_u": ("BIGINT UNSIGNED", "int", "18446744073709551615 - seq"),
    "price": ("DECIMAL(12,2)", "decimal", "ROUND(seq * 1.37, 2) - 5000.5"),
    "ratio": ("DOUBLE", "double", "seq / 7"),
    "score": ("FLOAT", "float", "IF(seq % 13 = 0, NULL, seq / 3)"),
    "created": ("DATETIME(6)", "datetime", "TIMESTAMPADD(MICROSECOND, seq * 1234567, '2020-01-01')"),
    "updated": ("TIMESTAMP(3) NULL", "datetime", "FROM_UNIXTIME(1600000000 + seq + (seq % 1000) / 1000)"),
    "ship_date": ("DATE", "date", "DATE_ADD('2000-01-01', INTERVAL seq % 9000 DAY)"),
    "ship_time": ("TIME", "time", "SEC_TO_TIME(CAST(seq % 3000000 AS SIGNED) - 1500000)"),
    "y": ("YEAR", "int", "1901 + seq % 255"),
    "status": (
        "ENUM('new','paid','shipped','cancelled')",
        "enum",
        "ELT(1 + seq % 4, 'new','paid','shipped','cancelled')",
    ),
    "tags": ("SET('a','b','c','d')", "set", "MAKE_SET(seq % 16, 'a','b','c','d')"),
    "name": ("VARCHAR(64) CHARACTER SET utf8mb4", "text", "CONCAT('customer ', seq, ' ü€😀')"),
    "note": ("TEXT", "text", "IF(seq % 7 = 0, NULL, REPEAT(CONCAT('note ', seq, ' '), 1 + seq % 5))"),
    "payload": ("BLOB", "bytes", "UNHEX(SHA2(seq, 256))"),
    "attrs": ("JSON", "text", "JSON_OBJECT('k', seq, 'tags', JSON_ARRAY(seq % 3, 'x'))"),
    "bits": ("BIT(12)", "bit", "seq % 4096"),
}


def log(message: str) -> None:
    print(message, flush=True)


# -- building the binlog -------------------------------------------------------------------------------------------
def _round_statements(lo: int, hi: int) -> list[str]:
    names = ", ".join(COLUMNS)
    exprs = ", ".join(expr for _, _, expr in COLUMNS.values())
    return [
        f"INSERT INTO {BENCH_DB}.orders ({names}) SELECT {exprs} FROM seq_{lo}_to_{hi}",
        f"UPDATE {BENCH_DB}.orders SET price = price + 1, status = 'paid', updated = updated + INTERVAL 1 SECOND, "
        f"tags = 'a,d', note = NULL WHERE id BETWEEN {lo} AND {hi}",
        f"DELETE FROM {BENCH_DB}.orders WHERE id BETWEEN {lo} AND {lo + BATCH_ROWS // 10 - 1}",
    ]


def build_binlog(workdir: Path, megabytes: int) -> list[Path]:
    """Binlog files of at least ``megabytes`` MB (cached in ``workdir`` by their size setting)."""
    from tests.mariadb_server import BinlogSettings, MariaDBServer, missing_binaries

    marker = workdir / "binlog.json"
    if marker.is_file():
        info = json.loads(marker.read_text())
        files = [Path(p) for p in info["files"]]
        if info.get("mb") == megabytes and all(p.is_file() for p in files):
            log(
                f"build: reusing {len(files)} file(s), {sum(p.stat().st_size for p in files) / 1e6:.1f} MB, "
                f"under {workdir} (--rebuild to make new ones)"
            )
            return files
    missing = missing_binaries()
    if missing:
        raise SystemExit(
            f"bench: MariaDB is not installed (missing {', '.join(missing)}); run "
            "`bash scripts/install_mariadb.sh`, or pass --binlog FILE"
        )
    server_dir = workdir / "server"
    if server_dir.exists():
        shutil.rmtree(server_dir)
    target = megabytes * 1_000_000
    started = time.perf_counter()
    with MariaDBServer(server_dir, BinlogSettings(max_binlog_size=1 << 30)) as server:
        cols = ", ".join(f"`{name}` {sql}" for name, (sql, _, _) in COLUMNS.items())
        server.execute(f"CREATE DATABASE {BENCH_DB}; CREATE TABLE {BENCH_DB}.orders ({cols}) ENGINE=InnoDB")
        conn = server.connect(BENCH_DB)  # the seq_1_to_N tables need a current database
        try:
            cur = conn.cursor()
            lo = 1
            while server.current_binlog().stat().st_size < target:
                for stmt in _round_statements(lo, lo + BATCH_ROWS - 1):
                    cur.execute(stmt)
                lo += BATCH_ROWS
                size = server.current_binlog().stat().st_size
                log(
                    f"build: {size / 1e6:6.1f} / {megabytes} MB  ({lo - 1} rows inserted, "
                    f"{time.perf_counter() - started:.0f} s)"
                )
        finally:
            conn.close()
        files = server.binlog_files()
    shutil.rmtree(server.datadir, ignore_errors=True)  # keep only the binlog files
    marker.write_text(json.dumps({"mb": megabytes, "files": [str(p) for p in files]}))
    return files


# -- python-mysql-replication, offline ---------------------------------------------------------------------------
class StandInControlConnection:
    """What BinLogPacketWrapper asks of its control connection: a charset and the server flavour.

    It never needs a query here (binlog_row_metadata=FULL puts names, signedness and charsets in TABLE_MAP);
    if it did ask for INFORMATION_SCHEMA column names, the stand-in answers with none.
    """

    charset = "utf8mb4"

    def __init__(self, dbms: str) -> None:
        self.dbms = dbms

    def _get_dbms(self) -> str:
        return self.dbms

    def cursor(self) -> "StandInControlConnection":
        return self

    def execute(self, *args: Any) -> None:
        return None

    def fetchall(self) -> list:
        return []

    def close(self) -> None:
        return None


def iter_events(path: Path) -> Iterator[tuple[int, bytes, bytes]]:
    """(type_code, 19-byte header, body incl. checksum) of each event of a binlog file."""
    data = path.read_bytes()
    if not data.startswith(BINLOG_MAGIC):
        raise SystemExit(f"bench: {path} is not a binlog file (no magic number)")
    pos = len(BINLOG_MAGIC)
    while pos + EVENT_HEADER_LEN <= len(data):
        _, type_code, _, size, _, _ = EVENT_HEADER.unpack_from(data, pos)
        if size < EVENT_HEADER_LEN or pos + size > len(data):
            raise SystemExit(f"bench: {path} offset {pos}: event size {size} runs past the end of the file")
        yield type_code, data[pos : pos + EVENT_HEADER_LEN], data[pos + EVENT_HEADER_LEN : pos + size]
        pos += size


def pmr_row_changes(paths: list[Path]) -> Iterator[tuple[str, str, dict | None, dict | None]]:
    """(table, op, before, after) of every row, decoded by python-mysql-replication from the files' bytes."""
    from pymysql.protocol import MysqlPacket
    from pymysqlreplication import event as pmr_event
    from pymysqlreplication import row_event as pmr_rows
    from pymysqlreplication.packet import BinLogPacketWrapper

    allowed = {
        pmr_event.FormatDescriptionEvent,
        pmr_rows.TableMapEvent,
        pmr_rows.WriteRowsEvent,
        pmr_rows.UpdateRowsEvent,
        pmr_rows.DeleteRowsEvent,
    }
    for path in paths:
        table_map: dict = {}
        version, post_header_lengths, use_checksum = (0, 0, 0), None, False
        ctl = StandInControlConnection("mysql")
        for type_code, header, body in iter_events(path):
            if type_code == FORMAT_DESCRIPTION_EVENT:
                server_version = body[2:52].rstrip(b"\x00").decode()
                ctl = StandInControlConnection("mariadb" if "MariaDB" in server_version else "mysql")
                use_checksum = body[-5] == BINLOG_CHECKSUM_ALG_CRC32
            elif type_code != TABLE_MAP_EVENT and type_code not in ROWS_EVENT_TYPES:
                continue
            packet = MysqlPacket(b"\x00" + header + body, "utf8")
            wrapper = BinLogPacketWrapper(
                packet,
                table_map,
                ctl,
                version,
                use_checksum,
                allowed,
                None,
                None,
                None,
                None,
                False,
                False,
                False,
                True,
                False,
                False,
                post_header_lengths,
            )
            ev = wrapper.event
            if type_code == FORMAT_DESCRIPTION_EVENT:
                version, post_header_lengths = ev.mysql_version, ev.post_header_len
            elif type_code == TABLE_MAP_EVENT:
                table_map[ev.table_id] = ev.get_table()
            else:
                op = ROWS_EVENT_TYPES[type_code]
                for row in ev.rows:
                    if op == "update":
                        yield ev.table, op, row["before_values"], row["after_values"]
                    elif op == "insert":
                        yield ev.table, op, None, row["values"]
                    else:
                        yield ev.table, op, row["values"], None


# -- binlake -------------------------------------------------------------------------------------------------------
def binlake_row_changes(paths: list[Path]) -> Iterator[tuple[str, str, Any, Any]]:
    """(table, op, before, after) of every row, from ``binlake.binlog.iter_row_changes``."""
    from binlake.binlog import iter_row_changes

    for path in paths:
        for change in iter_row_changes(path):
            yield change.table, change.op, change.before, change.after


def native_batches(paths: list[Path]) -> Iterator[int]:
    """The row count of each Arrow batch the native core makes (``iter_table_batches(engine="native")``)."""
    from binlake.binlog.columnar import iter_table_batches

    for path in paths:
        for tb in iter_table_batches(path, engine="native"):
            yield tb.batch.num_rows


def timed_native(paths: list[Path], megabytes: float) -> Timing:
    import binlake.binlog.columnar  # noqa: F401  (pyarrow's import is not decoding: outside the clock)

    log("decode: binlake native columnar ...")
    rows = 0
    started, cpu_started = time.perf_counter(), time.process_time()
    for n in native_batches(paths):
        rows += n
    timing = Timing(
        "binlake native columnar", rows, time.perf_counter() - started, time.process_time() - cpu_started, megabytes
    )
    log(f"decode: binlake native columnar: {rows} rows in {timing.seconds:.2f} s (CPU {timing.cpu_seconds:.2f} s)")
    return timing


def rows_command(path: Path) -> list[str]:
    """``binlake rows PATH --format jsonl`` with the venv's ``binlake``."""
    env_bin = Path(sys.executable).with_name("binlake")
    return [str(env_bin) if env_bin.exists() else "binlake", "rows", str(path), "--format", "jsonl"]


def timed_cli(paths: list[Path], megabytes: float) -> Timing:
    """``binlake rows FILE --format jsonl`` per file as a subprocess: wall time from its start to its last line,
    the children's CPU time; the lines are read from a pipe and counted."""
    import resource
    import subprocess

    log("decode: binlake rows --format jsonl (subprocess) ...")
    rows = 0
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    for path in paths:
        proc = subprocess.Popen(rows_command(path), stdout=subprocess.PIPE, bufsize=0)
        assert proc.stdout is not None
        while chunk := proc.stdout.read(1 << 20):
            rows += chunk.count(b"\n")
        if proc.wait() != 0:
            raise SystemExit(f"bench: binlake rows {path} exited {proc.returncode}")
    seconds = time.perf_counter() - started
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu_after.ru_utime + cpu_after.ru_stime) - (cpu_before.ru_utime + cpu_before.ru_stime)
    timing = Timing("binlake rows --format jsonl", rows, seconds, cpu, megabytes)
    log(f"decode: binlake rows: {rows} lines in {seconds:.2f} s (CPU {cpu:.2f} s, process start included)")
    return timing


def rows_outputs_identical(paths: list[Path]) -> tuple[bool, str]:
    """Whether ``binlake rows`` prints the same bytes with the native core and without it (``BINLAKE_NATIVE=0``):
    (identical, their SHA-256)."""
    import hashlib
    import subprocess

    digests = []
    for native in ("1", "0"):
        h = hashlib.sha256()
        for path in paths:
            proc = subprocess.Popen(
                rows_command(path), stdout=subprocess.PIPE, env={**os.environ, "BINLAKE_NATIVE": native}
            )
            assert proc.stdout is not None
            while chunk := proc.stdout.read(1 << 20):
                h.update(chunk)
            proc.wait()
        digests.append(h.hexdigest())
    return digests[0] == digests[1], f"native {digests[0][:16]}, python {digests[1][:16]}"


# -- comparable values ---------------------------------------------------------------------------------------------
def _micros_of_time_text(text: str) -> int:
    negative = text.startswith("-")
    hms, _, frac = text.lstrip("-").partition(".")
    h, m, s = (int(x) for x in hms.split(":"))
    micros = ((h * 60 + m) * 60 + s) * 1_000_000 + int((frac + "000000")[:6])
    return -micros if negative else micros


def _datetime_text(text: str) -> str:
    base, _, frac = text.partition(".")
    return f"{base}.{(frac + '000000')[:6]}"


def _bytes(value: Any) -> bytes:
    if isinstance(value, dict) and "hex" in value:
        return bytes.fromhex(value["hex"])
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return str(value).encode("utf-8")


def comparable(kind: str, value: Any) -> Any:
    """One form per kind for either decoder's value (Python objects of either library, or text)."""
    if value is None:
        return None
    if kind == "int":
        return int(value)
    if kind == "decimal":
        return Decimal(str(value))
    if kind == "double":
        return float(value)
    if kind == "float":
        return struct.unpack("<f", struct.pack("<f", float(value)))[0]
    if kind == "datetime":
        if isinstance(value, datetime.datetime):
            return value.strftime("%Y-%m-%d %H:%M:%S.%f")
        return _datetime_text(str(value))
    if kind == "date":
        return value.isoformat() if isinstance(value, datetime.date) else str(value)
    if kind == "time":
        if isinstance(value, datetime.timedelta):
            return (value.days * 86400 + value.seconds) * 1_000_000 + value.microseconds
        return _micros_of_time_text(str(value))
    if kind == "text":
        return value.decode("utf-8") if isinstance(value, (bytes, bytearray)) else str(value)
    if kind == "bytes":
        return _bytes(value)
    if kind == "enum":
        return str(value)
    if kind == "set":
        if isinstance(value, str):
            return frozenset(v for v in value.split(",") if v)
        return frozenset(value)
    if kind == "bit":
        if isinstance(value, int):
            return value
        if isinstance(value, str) and set(value) <= {"0", "1"}:  # python-mysql-replication: '0101...'
            return int(value or "0", 2)
        return int.from_bytes(_bytes(value), "big")
    raise ValueError(f"unknown kind {kind}")


def image_values(image: Any) -> dict[str, Any]:
    """A row image as {column name: value}, from a mapping or an object with ``items()``/``as_dict()``."""
    if image is None:
        return {}
    if isinstance(image, dict):
        return image
    for attr in ("as_dict", "to_dict"):
        if hasattr(image, attr):
            return getattr(image, attr)()
    if hasattr(image, "items"):
        return dict(image.items())
    raise TypeError(f"can not read a row image of type {type(image).__name__}")


# -- running -------------------------------------------------------------------------------------------------------
@dataclass
class Timing:
    name: str
    rows: int
    seconds: float
    cpu_seconds: float
    megabytes: float

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.seconds if self.seconds else float("inf")

    @property
    def mb_per_s(self) -> float:
        return self.megabytes / self.seconds if self.seconds else float("inf")

    @property
    def rows_per_cpu_s(self) -> float:
        return self.rows / self.cpu_seconds if self.cpu_seconds else float("inf")


def timed(
    name: str, changes: Callable[[list[Path]], Iterator], paths: list[Path], megabytes: float, progress_every: int
) -> Timing:
    log(f"decode: {name} ...")
    rows = 0
    started, cpu_started = time.perf_counter(), time.process_time()
    for _table, _op, _before, _after in changes(paths):
        rows += 1
        if rows % progress_every == 0:
            log(f"decode: {name}: {rows} rows, {time.perf_counter() - started:.1f} s")
    timing = Timing(name, rows, time.perf_counter() - started, time.process_time() - cpu_started, megabytes)
    log(f"decode: {name}: {rows} rows in {timing.seconds:.2f} s (CPU {timing.cpu_seconds:.2f} s)")
    return timing


def pmr_known_loss(kind: str, ours: Any, theirs: Any) -> str | None:
    """A difference that is python-mysql-replication losing data by design (not a value both decode)."""
    if kind == "set" and theirs is None and ours == frozenset():
        return "python-mysql-replication returns None for an empty SET ('')"
    return None


def compare(
    paths: list[Path], limit: int | None
) -> tuple[int, collections.Counter, dict[str, list[str]], collections.Counter]:
    """Compare the two decoders row by row: rows compared, differences by column type, examples, and values
    python-mysql-replication loses (excluded from the differences)."""
    kinds = {name: (sql.split("(")[0].split(" ")[0], kind) for name, (sql, kind, _) in COLUMNS.items()}
    differences: collections.Counter = collections.Counter()
    examples: dict[str, list[str]] = collections.defaultdict(list)
    losses: collections.Counter = collections.Counter()
    compared = 0
    ours, theirs = binlake_row_changes(paths), pmr_row_changes(paths)
    sentinel = object()
    for index in range(limit if limit is not None else sys.maxsize):
        a, b = next(ours, sentinel), next(theirs, sentinel)
        if a is sentinel or b is sentinel:
            if a is not b:
                differences["(row count)"] += 1
                examples["(row count)"].append(f"one decoder stopped at row {index}, the other did not")
            break
        compared += 1
        if (a[0], a[1]) != (b[0], b[1]):
            differences["(table/op)"] += 1
            examples["(table/op)"].append(f"row {index}: binlake {a[:2]} vs python-mysql-replication {b[:2]}")
            continue
        for side, ours_image, theirs_image in (("before", a[2], b[2]), ("after", a[3], b[3])):
            mine, other = image_values(ours_image), image_values(theirs_image)
            if not mine and not other:
                continue
            for name, (sql_type, kind) in kinds.items():
                x, y = comparable(kind, mine.get(name)), comparable(kind, other.get(name))
                if x != y and (loss := pmr_known_loss(kind, x, y)):
                    losses[loss] += 1
                elif x != y:
                    differences[sql_type] += 1
                    if len(examples[sql_type]) < 3:
                        examples[sql_type].append(
                            f"row {index} {side}.{name}: binlake {mine.get(name)!r:.80} "
                            f"vs python-mysql-replication {other.get(name)!r:.80}"
                        )
    return compared, differences, examples, losses


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python bench/decode.py",
        description="Decode rows/s and MB/s of binlake vs python-mysql-replication on the same binlog, offline.",
    )
    parser.add_argument("--mb", type=int, default=40, help="size of the generated binlog in MB (default 40)")
    parser.add_argument(
        "--workdir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "binlake-bench",
        help="where the generated binlog and its server live (default: %(default)s)",
    )
    parser.add_argument("--rebuild", action="store_true", help="generate the binlog again even if cached")
    parser.add_argument(
        "--binlog",
        type=Path,
        action="append",
        help="decode this binlog file instead of generating one (repeatable; needs "
        "binlog_row_metadata=FULL for python-mysql-replication to name columns)",
    )
    parser.add_argument(
        "--compare-rows", type=int, default=None, help="compare values on the first N rows only (default: all rows)"
    )
    parser.add_argument("--no-compare", action="store_true", help="time only, skip the value comparison")
    args = parser.parse_args(argv)

    if args.binlog:
        paths = args.binlog
    else:
        args.workdir.mkdir(parents=True, exist_ok=True)
        if args.rebuild and (args.workdir / "binlog.json").exists():
            (args.workdir / "binlog.json").unlink()
        paths = build_binlog(args.workdir, args.mb)
    megabytes = sum(p.stat().st_size for p in paths) / 1e6
    log(f"input: {', '.join(str(p) for p in paths)} ({megabytes:.1f} MB)")

    try:
        from binlake.binlog import iter_row_changes  # noqa: F401  (checked before a long run)
    except ImportError as exc:
        log(f"bench: binlake.binlog.iter_row_changes is not available ({exc}); timing python-mysql-replication only")
        timed("python-mysql-replication", pmr_row_changes, paths, megabytes, 50_000)
        return 2
    ours = timed("binlake python", binlake_row_changes, paths, megabytes, 200_000)
    from binlake.binlog import native

    extra = []
    if native.available():
        extra = [timed_native(paths, megabytes), timed_cli(paths, megabytes)]
    else:
        log(
            "decode: the native core is not built (bash scripts/setup.sh builds it): timing `binlake rows` on the "
            "pure-Python decoder only"
        )
        extra = [timed_cli(paths, megabytes)]
    theirs = timed("python-mysql-replication", pmr_row_changes, paths, megabytes, 50_000)
    log("")
    log(
        f"{'decoder':<30}{'rows':>10}{'seconds':>10}{'rows/s':>12}{'MB/s':>9}{'CPU s':>9}{'rows/CPU s':>13}"
        f"{'x pmr':>8}{'x pmr CPU':>11}"
    )
    for t in (theirs, ours, *extra):
        ratio = t.rows_per_s / theirs.rows_per_s if theirs.rows_per_s else float("inf")
        cpu_ratio = t.rows_per_cpu_s / theirs.rows_per_cpu_s if theirs.rows_per_cpu_s else float("inf")
        log(
            f"{t.name:<30}{t.rows:>10}{t.seconds:>10.2f}{t.rows_per_s:>12,.0f}{t.mb_per_s:>9.1f}"
            f"{t.cpu_seconds:>9.2f}{t.rows_per_cpu_s:>13,.0f}{ratio:>8.1f}{cpu_ratio:>11.1f}"
        )
    log(
        "ratios: rows/s (wall) and rows per CPU second against python-mysql-replication (pmr); on a busy machine "
        "the CPU figures are the steadier ones"
    )
    log("targets: native columnar >= 500,000 rows/s on one core; `binlake rows` >= 10x pmr")
    for t in (ours, *extra):
        if t.rows != theirs.rows:
            log(f"note: {t.name} returned {t.rows} rows, python-mysql-replication {theirs.rows}")

    if args.no_compare or args.binlog:
        if args.binlog and not args.no_compare:
            log("compare: skipped (--binlog files: the value comparison knows only the generated bench table)")
        return 0
    log("")
    if native.available():
        same, digests = rows_outputs_identical(paths)
        log(
            f"compare: `binlake rows` with and without the native core: {'identical' if same else 'DIFFERENT'} "
            f"({digests})"
        )
        if not same:
            return 1
    log("compare: decoding both again, value by value (untimed) ...")
    compared, differences, examples, losses = compare(paths, args.compare_rows)
    for reason, count in losses.items():
        log(f"compare: {count} values not compared: {reason}")
    if not differences:
        log(f"compare: {compared} rows, every other value identical")
        return 0
    log(f"compare: {compared} rows; values that differ, by column type:")
    for sql_type, count in differences.most_common():
        log(f"  {sql_type:<12} {count:>8}")
        for line in examples[sql_type]:
            log(f"      {line}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
