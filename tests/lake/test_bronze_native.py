"""The native bronze writer (``binlake.pipeline.bronze_native``, issue #17) against the Python one
(``binlake.pipeline.bronze.iter_chunk_rows``, the reference): the same bronze rows, every column compared
(images, partial JSON diffs, row keys, layout rows, DDL statements, error rows with their bytes, end rows with
their counters), on every real fixture, on generated MySQL 8 workloads (partial JSON, compressed transactions,
FULL/MINIMAL/NOBLOB images, DDL) cut into chunks and read with table and GTID filters, on hand-built
transactions of every boundary kind, on hostile input and on mutations of the fuzz corpus.

Skips when the native core is not built (``bash scripts/setup.sh`` builds it)."""

from __future__ import annotations

import datetime as dt
import json
import random
import shutil
import struct
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pytest

from binlake.binlog import native, read_events
from binlake.binlog.schema import SchemaProvider
from binlake.binlog.silver_types import to_arrow
from binlake.generate.config import GenerateConfig
from binlake.generate.run import generate
from binlake.pipeline.bronze import BRONZE_SCHEMA, ChunkTask, decode_chunk
from binlake.pipeline.bronze_native import iter_native_batches
from binlake.pipeline.filters import GtidSet, TableFilter, TransactionFilter
from binlake.pipeline.identity import identify
from binlake.pipeline.split import plan_chunks
from tests.binlog import build
from tests.binlog.test_columnar import FIXTURE_FILES, json_table, mutate, payload_body

pytestmark = pytest.mark.skipif(
    not native.available(),
    reason="the native decoder core is not built (bash scripts/setup.sh builds it when cargo is installed)",
)

COLUMNS = tuple((n, t) for n, t, _ in BRONZE_SCHEMA)
Filter = Callable[[], TransactionFilter]


def python_rows(task: ChunkTask, tf: Filter, provider: SchemaProvider | None = None) -> list[dict]:
    return to_arrow(COLUMNS, decode_chunk(task, tf(), "run-1", provider)).to_pylist()


def native_rows(
    task: ChunkTask, tf: Filter, batch_rows: int = 8192, provider: SchemaProvider | None = None
) -> list[dict]:
    batches = list(iter_native_batches(task, tf(), "run-1", provider, batch_rows))
    for b in batches:
        b.validate(full=True)  # offsets, validity and UTF-8 of what came through the C interface
    return pa.Table.from_batches(batches).to_pylist()


def assert_same_bronze(
    path: Path,
    tf: Filter = TransactionFilter,
    start: int = 4,
    end: int | None = None,
    batch_rows: int = 8192,
    provider: SchemaProvider | None = None,
) -> list[dict]:
    task = ChunkTask(str(path), identify("s", path), start, end)
    py = outcome(lambda: python_rows(task, tf, provider))
    nat = outcome(lambda: native_rows(task, tf, batch_rows, provider))
    if isinstance(py, str) or isinstance(nat, str):
        assert nat == py  # both fail alike (names that are not UTF-8 have no bronze form in either)
        return []
    if any(r["op"] == "error" for r in py):
        # events read when the error stopped the chunk: Python reads the failing transaction to its end before
        # rendering it, the native writer stops at the failing event
        for r in py[-1:] + nat[-1:]:
            r["statement"] = json.dumps({**json.loads(r["statement"]), "events": None})
    assert len(nat) == len(py)
    for i, (a, b) in enumerate(zip(py, nat)):
        assert b == a, f"{path} [{start}, {end}) row {i}"
    return py


def outcome(read: Callable[[], list[dict]]) -> list[dict] | str:
    try:
        return read()
    except Exception as exc:  # noqa: BLE001 - compared: the same class from both writers
        return type(exc).__name__


def ops(rows: list[dict]) -> set[str]:
    return {r["op"] for r in rows}


# --- real fixtures ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=[p.name for p in FIXTURE_FILES])
def test_fixture_bronze_rows_equal_the_python_writer(tmp_path, path: Path) -> None:
    copy = tmp_path / "binlog.000001"  # landing names end with a sequence number; landing files that
    shutil.copyfile(path, copy)  # are symbolic links are refused (issue #25 case 6)
    assert_same_bronze(copy)


# --- generated MySQL 8 workloads --------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=["full", "minimal", "noblob"])
def generated(request, tmp_path_factory) -> list[Path]:
    out = tmp_path_factory.mktemp(f"gen-{request.param}")
    generate(
        out,
        GenerateConfig(
            days=2,
            scale=0.004,
            compression_share=0.4,
            max_binlog_size=120_000,
            row_image=request.param,
            ddl=True,
            seed=3,
            start_date=dt.date(2024, 3, 1),
        ),
    )
    return sorted((out / "landing" / "shop-primary").glob("mysql-bin.0*"))


def test_generated_workload_in_chunks_equals_the_python_writer(generated) -> None:
    seen: set[str] = set()
    keys = 0
    for path in generated:
        ident = identify("s", path)
        for task in plan_chunks(str(path), ident, 4, 40_000):
            rows = assert_same_bronze(path, start=task.start, end=task.end, batch_rows=50)
            seen |= ops(rows)
            keys += sum(r["key_before"] is not None or r["key_after"] is not None for r in rows)
    assert {"insert", "update", "delete", "layout", "ddl", "chunk_end", "file_end"} <= seen
    assert keys > 0


def test_generated_workload_has_partial_json_and_compressed_transactions(generated) -> None:
    rows = [r for p in generated for r in assert_same_bronze(p)]
    assert any(r["diffs"] for r in rows), "no partial JSON update"
    payloads = set()
    for p in generated:
        with open(p, "rb") as f:
            payloads |= {ev.pos for ev in read_events(f) if ev.header.type_code == 40}
    assert payloads & {r["pos"] for r in rows}, "no rows of a compressed transaction"
    changes = [(r["binlog_file"], r["pos"], r["row"]) for r in rows if r["op"] in ("insert", "update", "delete")]
    assert len(set(changes)) == len(changes)


def test_table_and_gtid_filters_count_alike(generated) -> None:
    path = generated[0]
    gtids = sorted({r["gtid"] for r in assert_same_bronze(path) if r["gtid"]})
    applied = GtidSet()
    for g in gtids[::2]:
        applied.add(g)

    def tf() -> TransactionFilter:
        return TransactionFilter(TableFilter(exclude=("*.orders",)), GtidSet.parse(str(applied)))

    rows = assert_same_bronze(path, tf)
    stats = json.loads(rows[-1]["statement"])
    assert stats["skipped_gtid"] == len(gtids[::2]) and stats["rows_filtered"] > 0
    assert not any(r["table_name"] == "orders" for r in rows)


# --- hand-built transactions -----------------------------------------------------------------------------------


def query(text: str | bytes, db: bytes = b"d", status: bytes = b"") -> tuple[int, bytes]:
    raw = text if isinstance(text, bytes) else text.encode()
    return 2, struct.pack("<IIBHH", 1, 0, len(db), 0, len(status)) + status + db + b"\x00" + raw


# Q_FLAGS2, Q_SQL_MODE, Q_CATALOG_NZ "std", then Q_CHARSET_CODE: latin1_swedish_ci (8) client, utf8mb4 rest
LATIN1_CLIENT = b"\x00" + bytes(4) + b"\x01" + bytes(8) + b"\x06\x03std" + b"\x04" + struct.pack("<HHH", 8, 255, 255)


def test_a_ddl_statement_in_the_client_character_set(tmp_path) -> None:
    """A statement a latin1 client wrote is decoded with its ``Q_CHARSET_CODE``, as the server read it (UTF-8
    bytes too); without one, invalid UTF-8 becomes U+FFFD: bronze gets text either way, never a failed ingest."""
    ddl = b"ALTER TABLE t COMMENT 'caf\xe9 \x80'"
    data = build.binlog(
        gtid(1),
        query(ddl, status=LATIN1_CLIENT),
        gtid(2),
        query(ddl),
        gtid(3),
        query("ALTER TABLE t COMMENT 'caf\u00e9'", status=LATIN1_CLIENT),
    )
    rows = assert_same_bronze(written(tmp_path, data))
    assert [r["statement"] for r in rows if r["op"] == "ddl"] == [
        "ALTER TABLE t COMMENT 'caf\u00e9 \u20ac'",
        "ALTER TABLE t COMMENT 'caf\ufffd \ufffd'",
        "ALTER TABLE t COMMENT 'caf\u00c3\u00a9'",
    ]


def gtid(gno: int, ts: int = 0) -> tuple[int, bytes]:
    from tests.binlog.test_events import SID

    return 33, bytes([0]) + SID + struct.pack("<q", gno) + bytes([2]) + struct.pack("<qq", 0, 1) + ts.to_bytes(
        7, "little"
    )


XID = (16, (5).to_bytes(8, "little"))


def row_of(a: int, b: int) -> bytes:
    return build.image([False, False], a.to_bytes(4, "little"), (2).to_bytes(4, "little") + b"\x04" + bytes([b]))


def written(tmp_path: Path, data: bytes, name: str = "b.000001") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_transactions_of_every_boundary_kind(tmp_path) -> None:
    """Rows outside a transaction, GTID and BEGIN/COMMIT transactions, ROLLBACK, ROLLBACK TO SAVEPOINT,
    XA PREPARE, a DDL alone, and an incomplete transaction at the end."""
    tm = json_table()
    ins = build.rows_event(30, 7, 2, row_of(1, 1))
    upd = build.rows_event(31, 7, 2, row_of(1, 1) + row_of(2, 2))
    xa = (38, bytes([0]) + struct.pack("<III", 1, 3, 2) + b"abcxy")
    data = build.binlog(
        tm,
        ins,
        gtid(1, 1700000000000001),
        query("BEGIN"),
        tm,
        ins,
        XID,
        query("BEGIN"),
        tm,
        ins,
        upd,
        query("COMMIT"),
        query("BEGIN"),
        tm,
        ins,
        query("ROLLBACK TO SAVEPOINT s"),
        ins,
        query("ROLLBACK"),
        query("XA START 'x'"),
        tm,
        ins,
        xa,
        gtid(2),
        query("  (create table t2 (a int))", b"shop"),
        gtid(3),
        query("BEGIN"),
        tm,
        ins,
    )
    rows = assert_same_bronze(written(tmp_path, data))
    assert [r["op"] for r in rows] == ["layout", "insert", "insert", "update", "insert", "ddl", "file_end"]
    assert rows[5]["statement"] == "  (create table t2 (a int))" and rows[5]["db"] == "shop"
    stats = json.loads(rows[-1]["statement"])
    assert (stats["rolled_back"], stats["incomplete"], stats["kept"]) == (1, 1, 4)
    assert rows[1]["commit_ts"] == 1700000000000001 and rows[1]["key_after"] == '{"@1":1,"@2":"true"}'


def test_a_layout_is_stated_again_when_its_transaction_was_dropped(tmp_path) -> None:
    tm = json_table()
    ins = build.rows_event(30, 7, 2, row_of(1, 1))
    data = build.binlog(query("BEGIN"), tm, ins, query("ROLLBACK"), query("BEGIN"), tm, ins, XID)
    rows = assert_same_bronze(written(tmp_path, data))
    assert [r["op"] for r in rows] == ["layout", "insert", "file_end"]


HOSTILE = [
    "corrupt-json-cell",
    "unknown-table",
    "bad-checksum",
    "not-finite-double",
    "truncated-row",
    "corrupt-zstd",
    "non-utf8-table-name",
    "non-utf8-column-name",
    "non-utf8-ddl-database",
    "pk-past-columns",
    "pk-past-columns-in-payload",
    "non-utf8-ddl-database-in-payload",
    "oversized-xid-in-payload",
]


def renamed_table_map(table: bytes = b"t", columns: list[bytes] | None = None) -> tuple[int, bytes]:
    """``json_table`` with raw bytes for its table name and, optionally, COLUMN_NAME metadata (type 4)."""
    names = b"" if columns is None else b"".join(build.packed(len(n)) + n for n in columns)
    code, body = build.table_map(
        7,
        "d",
        "tX",
        [3, 245],
        bytes([4]),
        [False, True],
        b"" if columns is None else bytes([4]) + build.packed(len(names)) + names,
    )
    return code, body.replace(b"\x02tX\x00", bytes([len(table)]) + table + b"\x00", 1)


@pytest.mark.parametrize("case", HOSTILE)
def test_hostile_input_gives_the_same_error_row(tmp_path, case: str) -> None:
    """A good transaction, then the damage: the good rows, an ``error`` row (the reason names the file and the
    offset; the stretch's first bytes) and the end row with the same counters."""
    tm = json_table()
    good = (query("BEGIN"), tm, build.rows_event(30, 7, 2, row_of(1, 1)), XID)
    if case == "corrupt-json-cell":
        bad = build.image([False, False], (2).to_bytes(4, "little"), (3).to_bytes(4, "little") + b"\x00\x09\x00")
        damage = (query("BEGIN"), tm, build.rows_event(30, 7, 2, row_of(5, 5) + bad), XID)
    elif case == "unknown-table":
        damage = (query("BEGIN"), build.rows_event(30, 8, 2, row_of(2, 2)), XID)
    elif case == "not-finite-double":
        dbl = build.table_map(3, "d", "t", [5], bytes([8]), [True])
        damage = (query("BEGIN"), dbl, build.rows_event(30, 3, 1, build.image([False], b"\x00" * 6 + b"\xf8\x7f")), XID)
    elif case == "truncated-row":
        damage = (query("BEGIN"), tm, build.rows_event(30, 7, 2, row_of(2, 2)[:-3]), XID)
    elif case == "non-utf8-table-name":
        damage = (query("BEGIN"), renamed_table_map(b"t\xff"), build.rows_event(30, 7, 2, row_of(2, 2)), XID)
    elif case == "non-utf8-column-name":
        damage = (
            query("BEGIN"),
            renamed_table_map(b"t", [b"id", b"caf\xe9"]),
            build.rows_event(30, 7, 2, row_of(2, 2)),
            XID,
        )
    elif case == "non-utf8-ddl-database":
        damage = (gtid(5), query("ALTER TABLE t ADD COLUMN c INT", b"sh\xf6p"))
    elif case.startswith("pk-past-columns"):
        pk = build.table_map(7, "d", "t", [3, 245], bytes([4]), [False, True], build.optional_field(8, b"\x02"))
        damage = (query("BEGIN"), pk, build.rows_event(30, 7, 2, row_of(2, 2)), XID)
        if case.endswith("in-payload"):
            damage = (gtid(5), (40, payload_body(b"".join(build.event(t, b, crc=False) for t, b in damage))))
    elif case == "non-utf8-ddl-database-in-payload":
        damage = (gtid(5), (40, payload_body(build.event(*query("ALTER TABLE t ADD c INT", b"sh\xf6p"), crc=False))))
    elif case == "oversized-xid-in-payload":
        damage = (
            gtid(5),
            (40, payload_body(build.event(*query("BEGIN"), crc=False) + build.event(16, bytes(64), crc=False))),
        )
    elif case == "corrupt-zstd":
        body = payload_body(build.event(16, (7).to_bytes(8, "little"), crc=False) * 40)
        frame = body.index(b"\x28\xb5\x2f\xfd")
        damage = ((40, body[:frame] + b"\x00\x00\x00\x00" + body[frame + 4 :]),)
    else:
        damage = good
    data = build.binlog(*good, *damage, *good)
    if case == "bad-checksum":
        data = data[:-40] + bytes([data[-40] ^ 1]) + data[-39:]
    path = written(tmp_path, data)
    rows = assert_same_bronze(path)
    ops_seen = [r["op"] for r in rows]
    assert ops_seen[:2] == ["layout", "insert"] and "error" in ops_seen and ops_seen[-1] == "file_end"
    err = next(r for r in rows if r["op"] == "error")
    assert str(path) in err["statement"] and str(err["pos"]) in err["statement"]
    assert err["raw"] == data[err["pos"] : err["pos"] + len(err["raw"])] and err["raw"]
    if case.startswith("non-utf8"):
        assert "is not UTF-8" in err["statement"]
    if case.startswith("pk-past-columns"):
        assert "TABLE_MAP_EVENT: primary key names a column past the TABLE_MAP's columns" in err["statement"]
    if case.endswith("in-payload"):  # located at the payload event, its bytes the evidence
        assert err["pos"] == len(build.binlog(*good, damage[0])) and "inner offset " in err["statement"]
        assert err["raw"][4] == 40


BAD_VALUE = build.rows_event(
    30,
    7,
    2,
    row_of(5, 5) + build.image([False, False], (2).to_bytes(4, "little"), (3).to_bytes(4, "little") + b"\x00\x09\x00"),
)  # JSON literal 0x05
UNKNOWN_TABLE = build.rows_event(30, 8, 2, row_of(2, 2))  # table id 8 has no TABLE_MAP: the reader fails


@pytest.mark.parametrize("payload", [False, True], ids=["plain", "in-payload"])
@pytest.mark.parametrize("first", ["non-utf8-table-name", "bad-json-value"])
def test_the_first_error_in_file_order_wins(tmp_path, first: str, payload: bool) -> None:
    """A transaction with a rows event that does not render (a table name that is not UTF-8, a JSON value with
    no form) and then an event the reader can not read: both writers report the first, where a reader meets it
    (the Python writer, which reads a whole transaction before rendering it, reported the later one)."""
    if first == "non-utf8-table-name":
        bad = (renamed_table_map(b"t\xff"), build.rows_event(30, 7, 2, row_of(2, 2)))
    else:
        bad = (json_table(), BAD_VALUE)
    trx = (query("BEGIN"), *bad, UNKNOWN_TABLE, XID)
    good = (query("BEGIN"), json_table(), build.rows_event(30, 7, 2, row_of(1, 1)), XID)
    damage = (gtid(5), (40, payload_body(b"".join(build.event(t, b, crc=False) for t, b in trx)))) if payload else trx
    data = build.binlog(*good, *damage)
    rows = assert_same_bronze(written(tmp_path, data))
    (err,) = [r for r in rows if r["op"] == "error"]
    expected = "table name b't\\xff' is not UTF-8" if first.startswith("non-utf8") else "unknown JSON literal 0x05"
    assert expected in err["statement"] and "has no TABLE_MAP_EVENT" not in err["statement"]
    bad_at = len(build.binlog(*good, damage[0])) if payload else len(build.binlog(*good, *trx[:2]))
    assert err["pos"] == bad_at and f"offset {bad_at}," in err["statement"]
    assert json.loads(rows[-1]["statement"])["kept"] == 1  # the good transaction only


@pytest.mark.parametrize("case", ["rolled-back", "already-applied"])
def test_rows_that_do_not_render_in_a_transaction_not_kept_are_no_error(tmp_path, case: str) -> None:
    """A rolled back or already applied (by GTID) transaction's rows are never written, so a value or a name
    in them that has no bronze form stops neither writer (the native writer, which renders rows as it reads
    them, stopped the chunk there); the transactions after it are written."""
    import uuid

    from tests.binlog.test_events import SID

    good = (query("BEGIN"), json_table(), build.rows_event(30, 7, 2, row_of(1, 1)), XID)
    skipped = []
    for bad in ((json_table(), BAD_VALUE), (renamed_table_map(b"t\xff"), build.rows_event(30, 7, 2, row_of(2, 2)))):
        if case == "rolled-back":
            skipped += [query("BEGIN"), *bad, query("ROLLBACK")]
        else:
            skipped += [gtid(5 + len(skipped)), query("BEGIN"), *bad, XID]
    applied = GtidSet.parse(f"{uuid.UUID(bytes=SID)}:1-20")

    def tf() -> TransactionFilter:
        return TransactionFilter(TableFilter(), applied)

    rows = assert_same_bronze(written(tmp_path, build.binlog(*good, *skipped, *good)), tf)
    assert [r["op"] for r in rows] == ["layout", "insert", "insert", "file_end"]
    stats = json.loads(rows[-1]["statement"])
    assert (stats["kept"], stats["error"]) == (2, False)
    assert stats["rolled_back" if case == "rolled-back" else "skipped_gtid"] == 2


def test_two_table_maps_of_one_table_id_in_one_transaction(tmp_path) -> None:
    """The TABLE_MAP in force when a rows event is read decodes it (MySQL: the latest TABLE_MAP of a table id
    wins, as the applier overwrites its map), not the transaction's last one, in a payload or not."""
    t3 = build.table_map(7, "d", "t3", [3], b"", [False])
    events = (
        query("BEGIN"),
        json_table(),
        build.rows_event(30, 7, 2, row_of(1, 1)),
        t3,
        build.rows_event(30, 7, 1, build.image([False], (9).to_bytes(4, "little"))),
        XID,
    )
    plain = build.binlog(*events)
    packed = build.binlog((40, payload_body(b"".join(build.event(t, b, crc=False) for t, b in events))))
    for name, data in (("plain", plain), ("payload", packed)):
        rows = assert_same_bronze(written(tmp_path, data, f"{name}.000001"))
        assert [(r["op"], r["table_name"], r["after"]) for r in rows[:-1]] == [
            ("layout", "t", None),
            ("insert", "t", '{"@1":1,"@2":"true"}'),
            ("layout", "t3", None),
            ("insert", "t3", '{"@1":9}'),
        ]


def test_a_ddl_inside_a_payload_is_placed_at_the_payload(tmp_path) -> None:
    """A statement inside a TRANSACTION_PAYLOAD orders at the payload event's offset, as its rows do (not at its
    inner offset, 0, before everything in the file)."""
    data = build.binlog(gtid(1), (40, payload_body(build.event(*query("ALTER TABLE t ADD c INT"), crc=False))))
    rows = assert_same_bronze(written(tmp_path, data))
    (ddl,) = [r for r in rows if r["op"] == "ddl"]
    assert ddl["pos"] == len(build.binlog(gtid(1))) and ddl["trx_pos"] == len(build.binlog())


def test_fuzz_corpus_and_mutations_write_alike(tmp_path) -> None:
    """The small seeds of the fuzz corpus and a fixed set of their mutations, each read as one chunk."""
    bronze_sweep(tmp_path, runs=80, seed=41)


@pytest.mark.slow
def test_many_mutations_write_alike(tmp_path) -> None:
    """Many more mutations (primary keys in TABLE_MAPs, compressed payloads and their declared sizes among the
    seeds): both writers give the same rows, or the same error row, or fail alike."""
    bronze_sweep(tmp_path, runs=1500, seed=43)


def bronze_sweep(tmp_path: Path, runs: int, seed: int) -> None:
    from tests.fuzz.targets import seeds

    corpus = [s for s in seeds("binlog") if len(s) < 16_000]
    rng = random.Random(seed)
    for n in range(runs):
        data = mutate(rng, rng.choice(corpus)) if n >= len(corpus) else corpus[n]
        if len(data) < 4 or data[:4] != b"\xfebin":
            continue
        assert_same_bronze(written(tmp_path, data, f"m.{n:06d}"))


def test_a_landing_file_swapped_for_a_link_after_the_plan_is_read_by_neither_writer(tmp_path) -> None:
    """The plan identified a regular file; an executor that finds a symbolic link there (to a secret) stops with
    LandingFileError and reads nothing through it (before: both writers read the secret as a damaged binlog and
    kept its first bytes as the error row's evidence, bound for meta/quarantine)."""
    from binlake.pipeline.errors import LandingFileError

    landing = tmp_path / "landing"
    landing.mkdir()
    path = landing / "binlog.000001"
    path.write_bytes(b"\xfebin" + bytes(200))
    task = ChunkTask(str(path), identify("s", path), 4, None)
    secret = tmp_path / "secret"
    secret.write_bytes(b"\xfebin" + b"TOP SECRET " * 20)
    path.unlink()
    path.symlink_to(secret)
    for read in (lambda: python_rows(task, TransactionFilter), lambda: native_rows(task, TransactionFilter)):
        with pytest.raises(LandingFileError, match=r"binlog\.000001: can not be read as the regular file"):
            read()


def test_a_chunk_with_bad_bytes_frees_its_reader_on_the_thread_that_read_it(tmp_path) -> None:
    """The native reader of a chunk (``BronzeRows``, bound to its thread) is freed when the chunk's batches are
    read, also when bad bytes were caught on the way: the caught error's traceback held the generator's frame, and a
    cyclic collection on another thread (a MERGE thread, a test's fake server) could not free it there ("is
    unsendable, but is being dropped on another thread") and printed that on stderr."""
    import gc
    import sys
    import threading

    good = (query("BEGIN"), json_table(), build.rows_event(30, 7, 2, row_of(1, 1)), XID)
    path = written(tmp_path, build.binlog(*good, query("BEGIN"), build.rows_event(30, 8, 2, row_of(2, 2)), XID))
    unraisable: list[str] = []
    hook, sys.unraisablehook = sys.unraisablehook, lambda u: unraisable.append(f"{u.exc_type.__name__}: {u.exc_value}")
    gc.collect()
    gc.disable()
    try:
        rows = native_rows(ChunkTask(str(path), identify("s", path), 4, None), TransactionFilter)
        assert [r["op"] for r in rows][-2:] == ["error", "file_end"]
        collector = threading.Thread(target=gc.collect)
        collector.start()
        collector.join()
    finally:
        gc.enable()
        sys.unraisablehook = hook
    assert unraisable == []
