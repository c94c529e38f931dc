"""Fuzz targets: each takes arbitrary bytes and may only return or raise binlake's own typed errors.

A target mirrors one way binlake meets hostile input: a binlog file (events, rows, their JSON rendering), a
binary JSON cell, a partial-update diff vector and its application, an ``.ibd``/SDI file, and the replication
packet stream of a server. Anything else escaping (IndexError, struct.error, RecursionError, MemoryError...) is a
crash. ``seeds()`` gives each target's starting corpus: inputs built here, plus the shared real fixtures when
present. Used by tests/fuzz/test_fuzz.py (short, fixed run counts) and bench/fuzz.py (long runs).
"""

from __future__ import annotations

import io
import json
import struct
from pathlib import Path
from typing import Callable, Iterator

from binlake.errors import BinlakeError

MAX_EVENT = 1 << 20  # a fuzz input never needs more: keeps every run's memory small


def binlog_target(data: bytes) -> None:
    """``read_events`` + row changes + their JSON rendering (what ``binlake rows`` does)."""
    from binlake.binlog.api import _row_changes
    from binlake.binlog.decoders import DecodeContext
    from binlake.binlog.reader import ReadStats, read_events
    from binlake.binlog.render import event_record, json_diffs, json_image

    ctx = DecodeContext()
    try:
        events = []
        for ev in read_events(
            io.BytesIO(data), file="fuzz", ctx=ctx, stats=ReadStats(), verify_checksum=False, max_event_size=MAX_EVENT
        ):
            event_record(ev)
            events.append(ev)
        for change in _row_changes(iter(events), ctx, "fuzz"):
            json.dumps([json_image(change.before), json_image(change.after), json_diffs(change.diffs)], allow_nan=False)
    except BinlakeError:
        pass


def json_target(data: bytes) -> None:
    """A binary JSON cell: decode, MySQL text, and the encoder's round trip of what decoded."""
    from binlake.mysqljson import decode, encode, to_text

    try:
        value = decode(data)
        to_text(value)
        encode(value)
    except BinlakeError:
        pass


def diff_target(data: bytes) -> None:
    """A partial-update cell (Json_diff_vector) read and applied to a document, then rendered."""
    from binlake.mysqljson import apply_json_diffs, read_diffs, render_mysqlbinlog, to_text

    doc = {"a": [1, 2, {"b": "c"}], "d": None, "e": "x"}
    try:
        diffs = read_diffs(data)
        render_mysqlbinlog("@1", diffs)
        result = apply_json_diffs(doc, diffs)
        if result.document is not None:
            to_text(result.document if not hasattr(result.document, "value") else result.document.value)
    except BinlakeError:
        pass


def sdi_target(data: bytes) -> None:
    """Any SDI source (an ``.ibd`` image, ibd2sdi output, one SDI document): entries, typed documents."""
    from binlake.sdi.readers import entries_from_bytes

    try:
        for entry in entries_from_bytes(data, "fuzz", verify_checksums=False):
            entry.document()
    except BinlakeError:
        pass


class _Conn:
    """PyMySQL's connection as the packet reader uses it: ``_read_bytes`` (short reads are a lost connection)."""

    def __init__(self, data: bytes) -> None:
        self.stream = io.BytesIO(data)
        self._current_timeout = None

    def _read_bytes(self, n: int) -> bytes:
        import pymysql.err

        out = self.stream.read(n)
        if len(out) < n:
            raise pymysql.err.OperationalError(2013, "Lost connection to MySQL server during query")
        return out


def packet_target(data: bytes) -> None:
    """The replication stream: packets reassembled by ReplicationClient, parsed, ROTATEs and FDEs read."""
    from binlake.transport import protocol
    from binlake.transport.client import ReplicationClient
    from binlake.transport.uri import parse_mysql_uri

    client = ReplicationClient(parse_mysql_uri("mysql://fuzz@127.0.0.1:3306/?server_id=9&max_packet=2000000"))
    client._conn = _Conn(data)
    semi = bool(data[:1]) and data[0] & 1 == 1
    client.semi_sync = semi
    try:
        for _ in range(64):
            item = client.read()
            if not isinstance(item, protocol.StreamEvent):
                break
            header = item.header
            if header.type_code == 4:
                protocol.parse_rotate(item.raw, checksum=protocol.event_crc_ok(item.raw))
            elif header.type_code == 15:
                protocol.checksum_alg_of_fde(item.raw)
            protocol.is_heartbeat(header)
    except BinlakeError:
        pass


class _Choices:
    """Decisions drawn from the fuzz input, one byte each (0 once it is used up)."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def byte(self) -> int:
        self.at += 1
        return self.data[self.at - 1] if self.at <= len(self.data) else 0

    def pick(self, options: list) -> object:
        return options[self.byte() % len(options)]


HOSTILE_VALUES = [
    None,
    "",
    "0",
    "-1",
    "2",
    str(1 << 64),
    str(1 << 70),
    "x",
    "1e3",
    " 7",
    "mysql-bin",
    "../a.000001",
    "a/b.000001",
    ".hidden.000001",
    "binlog.000001",
    "\x00",
    "\x1b[2J",
    "ID",
    "id",
    b"",
    b"\xff\xfe",
    b"a",
    "9" * 400,
    "InnoDB",
    "MyISAM",
    "int",
    "varchar",
    "decimal",
    "PRIMARY",
]


class _ScriptedSnapshotServer:
    """A PyMySQL connection stand-in answering the snapshot's statements from tests/snapshot/fake_server.py's
    ``Answers``, each answer possibly changed as the fuzz input decides: a cell replaced by a hostile value, a
    column dropped or added, rows dropped or doubled, or a server error instead."""

    def __init__(self, data: bytes) -> None:
        from tests.snapshot.fake_server import Answers

        self.choices = _Choices(data)
        mysql = self.choices.byte() & 1
        self.answers = Answers(**({"flavor": "mysql", "version": (["v", "id"], [["8.4.0", "1"]])} if mysql else {}))

    def cursor(self, cls: object = None) -> "_ScriptedCursor":
        import pymysql.cursors

        return _ScriptedCursor(self, cls is pymysql.cursors.DictCursor)

    def close(self) -> None:
        pass

    def result(self, sql: str) -> tuple[list, list]:
        import pymysql.err

        answer = self.answers.answer(sql)
        if answer is None or answer == "ok":
            return [], []
        if isinstance(answer[0], int):
            raise pymysql.err.ProgrammingError(answer[0], answer[1])
        names, rows = list(answer[0]), [list(r) for r in answer[1]]
        c = self.choices
        kind = c.byte() % 8
        if kind == 1 and rows:
            row = rows[c.byte() % len(rows)]
            if row:
                row[c.byte() % len(row)] = c.pick(HOSTILE_VALUES)
        elif kind == 2 and names:
            i = c.byte() % len(names)
            names.pop(i)
            rows = [r[:i] + r[i + 1 :] for r in rows]
        elif kind == 3:
            names.append(str(c.pick(HOSTILE_VALUES[-6:])))
            rows = [r + [c.pick(HOSTILE_VALUES)] for r in rows]
        elif kind == 4:
            rows = []
        elif kind == 5:
            rows = rows + rows
        elif kind == 6:
            code = c.pick([1064, 1146, 1054, 1045, 1142, 1205, 1412, 2013, 1927, 9999])
            error = pymysql.err.OperationalError if code in (2013, 1927) else pymysql.err.ProgrammingError
            raise error(code, "scripted server error")
        return names, rows


class _ScriptedCursor:
    _result = None  # PyMySQL's unbuffered result: none here (the rows are held)

    def __init__(self, conn: _ScriptedSnapshotServer, dicts: bool) -> None:
        self.conn, self.dicts, self.rows, self.at = conn, dicts, [], 0

    def execute(self, sql: str, params: object = None) -> None:
        shown = tuple(str(p) if isinstance(p, int) else "'?'" for p in (params or ()))
        names, rows = self.conn.result(sql % shown)
        width = len(names)
        rows = [tuple((list(r) + [None] * width)[:width]) for r in rows]  # PyMySQL: one value per column
        self.rows = [dict(zip(names, r)) for r in rows] if self.dicts else rows
        self.at = 0

    def fetchall(self) -> list:
        out, self.at = self.rows[self.at :], len(self.rows)
        return out

    def fetchone(self) -> object:
        if self.at >= len(self.rows):
            return None
        self.at += 1
        return self.rows[self.at - 1]

    def fetchmany(self, n: int) -> list:
        out = self.rows[self.at : self.at + n]
        self.at += len(out)
        return out

    def close(self) -> None:
        pass


def snapshot_target(data: bytes) -> None:
    """``take_snapshot`` against a scripted server whose answers the input changes: a typed error, or a snapshot
    marked complete that :func:`binlake.snapshot.read_snapshots` reads back (it can seed); nothing else."""
    import tempfile

    from binlake.snapshot import read_snapshots, take_snapshot
    from binlake.snapshot.take import SnapshotOptions
    from binlake.transport.uri import parse_mysql_uri

    server = _ScriptedSnapshotServer(data)
    with tempfile.TemporaryDirectory() as landing:
        try:
            take_snapshot(
                parse_mysql_uri("mysql://fuzz@127.0.0.1/?server_id=9&name=src"),
                landing,
                SnapshotOptions(chunk_rows=1 + server.choices.byte() % 3),
                connector=lambda **kw: server,
                stream=io.StringIO(),
            )
        except BinlakeError:
            return
        for snapshot in read_snapshots(Path(landing) / "src"):  # outside the try: must not raise at all
            assert snapshot.tables


SNAPSHOT_KINDS = ["int8", "int32", "int64", "decimal:12,2", "decimal:20,0", "double", "float", "utf8", "ascii"]
SNAPSHOT_KINDS += ["bytes", "date", "timestamp", "timestamp_utc", "raw"]


def _snapshot_rows_base() -> bytes:
    """A valid result of four columns: values in the server's forms and in others, NULLs, a long value."""
    from tests.snapshot.support import text_result

    return text_result(
        [
            [b"1", b"-2.50", b"2024-02-29 10:00:00.5", None],
            [b"255", b"0.00", b"0000-00-00 00:00:00", "é".encode()],
            [b"-7", b"1e5", b"2024-02-30", b"x" * 300],
            [b"0", None, b"", b"\xff"],
        ]
    )


def snapshot_rows_target(data: bytes) -> None:
    """The native snapshot reader (``binlake_native.TextRows``) on a result's packets: the input picks four
    column kinds and a batch size, then overwrites, inserts or cuts bytes of a valid result (so that every
    input, however short, is a hostile stream near a real one; libFuzzer sees no coverage inside the native
    core). Every batch must be a valid Arrow batch of its row count; anything refused must be a ServerError or
    ProtocolError (a panic is a crash)."""
    import pyarrow as pa

    from binlake.binlog.columnar import ArrowCapsules
    from binlake.binlog.native import load

    native = load()
    if native is None:
        return
    head, edits = (data[:5] + bytes(5))[:5], data[5:]
    columns = [(f"c{i}", SNAPSHOT_KINDS[b % len(SNAPSHOT_KINDS)]) for i, b in enumerate(head[1:5])]
    stream = bytearray(_snapshot_rows_base())
    for k in range(0, len(edits) - 2, 3):
        at, byte, how = int.from_bytes(edits[k : k + 2], "little") % (len(stream) + 1), edits[k + 2], edits[k] % 4
        if how == 0:
            stream.insert(at, byte)
        elif how == 1:
            del stream[at:]
        elif at < len(stream):
            stream[at] = byte
    rows = native.TextRows(io.BytesIO(bytes(stream)), 1, columns, b"key", [0, 3])
    try:
        while (got := rows.batch(1 + head[0] % 8, 1 << 20)) is not None:
            batch = pa.record_batch(ArrowCapsules(got[0]))
            batch.validate(full=True)
            assert batch.num_rows == got[1] and batch.num_columns == 4 and len(got[5]) == 2
    except (native.ServerError, native.ProtocolError):
        pass


TARGETS: dict[str, Callable[[bytes], None]] = {
    "binlog": binlog_target,
    "json": json_target,
    "diff": diff_target,
    "sdi": sdi_target,
    "packets": packet_target,
    "snapshot": snapshot_target,
    "snapshot_rows": snapshot_rows_target,
}


# --- seeds --------------------------------------------------------------------------------------------------------


def _fixtures() -> Path | None:
    from tests.support import FIXTURES

    return FIXTURES if FIXTURES.is_dir() else None


def _built_binlogs() -> Iterator[bytes]:
    from tests.binlog import build

    tm = build.table_map(
        7,
        "d",
        "t",
        [3, 15, 245, 246, 252],
        bytes([44, 1, 4, 10, 2, 2]),
        [True] * 5,
        optional=build.names("a", "b", "c", "d", "e"),
    )
    row = build.image(
        [False] * 5,
        (1).to_bytes(4, "little"),
        b"\x02hi",
        (2).to_bytes(4, "little") + b"\x04\x00",
        bytes.fromhex("800000000a"),
        b"\x01\x00z",
    )
    yield build.binlog(tm, build.rows_event(30, 7, 5, row))
    yield build.binlog((230, b"x" * 30), crc=False)
    # primary keys in TABLE_MAP (SIMPLE_PRIMARY_KEY, PRIMARY_KEY_WITH_PREFIX): mutations reach indexes past the
    # columns; transactions in TRANSACTION_PAYLOADs (zstd and uncompressed) with their declared sizes: mutations
    # reach inner lengths, declared uncompressed sizes and fixed-size events declared larger
    keyed = build.table_map(
        8,
        "d",
        "k",
        [3, 15],
        bytes([80, 0]),
        [False, True],
        optional=build.names("a", "b") + build.optional_field(8, b"\x00"),
    )
    prefixed = build.table_map(
        8, "d", "k", [3, 15], bytes([80, 0]), [False, True], optional=build.optional_field(9, b"\x01\x04")
    )
    krow = build.image([False, False], (5).to_bytes(4, "little"), b"\x03abc")
    yield build.binlog(keyed, build.rows_event(30, 8, 2, krow), prefixed, build.rows_event(30, 8, 2, krow))
    begin = (2, struct.pack("<IIBHH", 1, 0, 1, 0, 0) + b"d\x00BEGIN")
    inner = b"".join(
        build.event(t, body, crc=False)
        for t, body in (
            begin,
            keyed,
            build.rows_event(30, 8, 2, krow),
            prefixed,
            build.rows_event(31, 8, 2, krow + krow),
            (16, (9).to_bytes(8, "little")),
        )
    )
    for compressed in (True, False):
        yield build.binlog((40, _payload(inner, compressed)))


def _payload(inner: bytes, compressed: bool) -> bytes:
    """A TRANSACTION_PAYLOAD body (``Transaction_payload_event``): compression type, uncompressed size, payload
    size, end mark, payload."""
    import zstandard

    data = zstandard.ZstdCompressor(level=3).compress(inner) if compressed else inner

    def field(ftype: int, value: int) -> bytes:
        from tests.binlog import build

        v = build.packed(value)
        return build.packed(ftype) + build.packed(len(v)) + v

    return field(2, 0 if compressed else 255) + field(3, len(inner)) + field(1, len(data)) + b"\0" + data


def seeds(target: str) -> Iterator[bytes]:
    """The starting corpus of ``target`` (small inputs; real fixtures when present)."""
    root = _fixtures()
    if target == "binlog":
        yield from _built_binlogs()
        if root is not None:
            for p in sorted((root / "binlog").rglob("*")):
                if p.is_file() and p.stat().st_size <= 16 << 10:
                    yield p.read_bytes()
    elif target in ("json", "diff"):
        yield b"\x00\x01\x00\x0e\x00\x0b\x00\x01\x00\x05\x02\x00a"
        if root is not None:
            name = "jsonb_vectors.json" if target == "json" else "json_diff_vectors.json"
            for v in json.loads((root / "json_vectors" / name).read_text())["vectors"]:
                yield bytes.fromhex(v["hex"])
    elif target == "sdi":
        yield b'{"mysqld_version_id": 80040, "dd_version": 80023, "sdi_version": 80019, "dd_object_type": "Table"}'
        if root is not None:
            for p in sorted((root / "sdi" / "extracted").glob("*.json"))[:8]:
                yield p.read_bytes()
            for p in sorted((root / "sdi" / "ibd").glob("*.ibd"))[:2]:
                yield p.read_bytes()[: 96 << 10]
    elif target == "snapshot":
        yield b""  # the scripted answers unchanged (MariaDB)
        yield b"\x01"  # MySQL
        for i in range(1, 8):
            yield bytes([i % 2]) + bytes([i, 0, 0, 3]) * 12
    elif target == "snapshot_rows":
        for kinds in (bytes([0, 0, 3, 11, 7]), bytes([3, 2, 5, 10, 9]), bytes([7, 13, 1, 12, 8])):
            yield kinds  # the valid result, three ways of typing it
        yield bytes([1, 1, 3, 11, 7, 9, 0, 0x41])  # a byte of the first row changed
        yield bytes([1, 1, 3, 11, 7, 1, 1, 0])  # cut in a packet header
    elif target == "packets":
        for log in _built_binlogs():
            yield _as_packets(log)
        if root is not None:
            for name in ("rust_mysql_common/json.binlog.000001", "rust_mysql_common/transaction_compression.000001"):
                yield _as_packets((root / "binlog" / name).read_bytes())
    else:
        raise KeyError(target)


def _as_packets(binlog: bytes) -> bytes:
    """A binlog's events as a replication stream (OK byte + event per packet), then an EOF packet."""
    out = bytearray()
    pos, seq = 4, 0
    while pos + 19 <= len(binlog):
        size = struct.unpack_from("<I", binlog, pos + 9)[0]
        if size < 19 or pos + size > len(binlog):
            break
        payload = b"\x00" + binlog[pos : pos + size]
        out += len(payload).to_bytes(3, "little") + bytes([seq & 0xFF]) + payload
        pos, seq = pos + size, seq + 1
    return bytes(out + b"\x05\x00\x00" + bytes([seq & 0xFF]) + b"\xfe\x00\x00\x02\x00")
