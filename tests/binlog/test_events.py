"""Event bodies no fixture holds, built from their documented layouts: GTID_TAGGED (mysql::serialization
format), tagged PREVIOUS_GTIDS, XA_PREPARE, USER_VAR, INCIDENT, HEARTBEAT_V2, MariaDB GTID_LIST / GTID with XA /
BINLOG_CHECKPOINT and the zlib-compressed QUERY and rows events (``binlog_buf_compress``), v1 rows events."""

from __future__ import annotations

import io
import struct
import uuid
import zlib

from binlake.binlog import iter_row_changes, read_events
from binlake.binlog.events import (
    BinlogCheckpointEvent,
    GtidListEvent,
    GtidTaggedEvent,
    HeartbeatEventV2,
    IncidentEvent,
    MariadbGtidEvent,
    PreviousGtidsEvent,
    QueryEvent,
    UserVarEvent,
    WriteRowsEvent,
    XaPrepareEvent,
)
from tests.binlog import build

SID = uuid.UUID("3e11fa47-71ca-11e1-9e33-c80aa9429562").bytes


def bodies(*events: tuple[int, bytes], server_version: str = "8.4.0") -> list:
    return [e.body for e in read_events(io.BytesIO(build.binlog(*events, server_version=server_version)))][1:]


def varlen(n: int) -> bytes:
    """mysql::serialization unsigned varlen: (bytes - 1) trailing one bits, a zero bit, then the value."""
    for size in range(1, 9):
        if n < 1 << (7 * size):
            return ((n << size) | ((1 << (size - 1)) - 1)).to_bytes(size, "little")
    return b"\xff" + n.to_bytes(8, "little")


def zigzag(n: int) -> bytes:
    return varlen(n << 1 if n >= 0 else ((-(n + 1)) << 1) | 1)


def test_varlen_examples_from_the_serialization_readme() -> None:
    # readme: 65535 unsigned is "00000111 11111111 11111011" (big-endian display)
    assert varlen(65535) == bytes([0b11111011, 0b11111111, 0b00000111])
    assert zigzag(-65535) == bytes([0b11101011, 0b11111111, 0b00001111])


def test_gtid_tagged_event() -> None:
    fields = (
        varlen(0)
        + varlen(1)  # gtid_flags = 1
        + varlen(1)
        + b"".join(varlen(b) for b in SID)  # SID as 16 varlen bytes
        + varlen(2)
        + zigzag(42)  # GNO
        + varlen(3)
        + varlen(4)
        + b"blue"  # tag
        + varlen(4)
        + zigzag(7)
        + varlen(5)
        + zigzag(8)  # logical clock
        + varlen(6)
        + varlen(1700000000123456)  # immediate_commit_timestamp
        + varlen(8)
        + varlen(1234)  # transaction_length
        + varlen(9)
        + varlen(80400)
    )  # immediate_server_version
    body = bytes([2]) + varlen(len(fields) + 4) + varlen(0) + fields
    (ev,) = bodies((42, body))
    assert isinstance(ev, GtidTaggedEvent)
    assert ev.gtid == "3e11fa47-71ca-11e1-9e33-c80aa9429562:blue:42"
    assert (ev.flags, ev.last_committed, ev.sequence_number) == (1, 7, 8)
    assert (ev.immediate_commit_timestamp, ev.transaction_length, ev.immediate_server_version) == (
        1700000000123456,
        1234,
        80400,
    )
    assert ev.original_commit_timestamp is None and ev.raw == body


def test_previous_gtids_tagged_and_untagged() -> None:
    untagged = struct.pack("<Q", 1) + SID + struct.pack("<Q", 2) + struct.pack("<qq", 1, 6) + struct.pack("<qq", 8, 9)
    tagged = (
        struct.pack("<Q", (1 << 56) | (1 << 8) | 1)
        + SID
        + varlen(3)
        + b"red"
        + struct.pack("<Q", 1)
        + struct.pack("<qq", 1, 4)
    )
    a, b = bodies((35, untagged), (35, tagged))
    assert isinstance(a, PreviousGtidsEvent) and not a.tagged
    assert a.gtid_set() == "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:8"
    assert b.tagged and b.gtid_set() == "3e11fa47-71ca-11e1-9e33-c80aa9429562:red:1-3"


def test_small_statement_events() -> None:
    xa = bytes([0]) + struct.pack("<III", 1, 3, 2) + b"abcxy"
    user_var = struct.pack("<I", 1) + b"v" + bytes([0, 0]) + struct.pack("<II", 33, 2) + b"hi" + bytes([1])
    incident = struct.pack("<H", 1) + bytes([4]) + b"lost"
    heartbeat = (
        build.packed(1)
        + build.packed(9)
        + b"bin.00001"
        + build.packed(2)
        + build.packed(1)
        + build.packed(120)
        + build.packed(0)
    )
    x, u, i, h = bodies((38, xa), (14, user_var), (26, incident), (41, heartbeat))
    assert x == XaPrepareEvent(False, 1, b"abc", b"xy")
    assert u == UserVarEvent("v", False, 0, 33, b"hi", 1)
    assert i == IncidentEvent(1, "lost")
    assert h == HeartbeatEventV2("bin.00001", 120)


def _mariadb_compress(data: bytes) -> bytes:
    """binlog_buf_compress: 0x80 | length-of-length, the length big-endian, the zlib stream."""
    return bytes([0x80 | 4]) + len(data).to_bytes(4, "big") + zlib.compress(data)


def test_mariadb_events_and_compressed_query_and_rows(tmp_path) -> None:
    mv = "10.11.6-MariaDB-log"
    gtid_list = struct.pack("<I", 2) + struct.pack("<IIQ", 0, 1, 10) + struct.pack("<IIQ", 1, 2, 20)
    checkpoint = struct.pack("<I", 12) + b"maria.000001"
    gtid_xa = struct.pack("<QIB", 5, 0, 64) + struct.pack("<I", 1) + bytes([2, 1]) + b"gtb"
    query_post = struct.pack("<IIBHH", 7, 0, 2, 0, 0)
    query = query_post + b"db\0" + _mariadb_compress(b"INSERT INTO t VALUES (1)")
    tm = build.table_map(3, "db", "t", [3], b"", [False])
    v1_rows = (3).to_bytes(6, "little") + b"\x01\x00" + build.packed(1) + b"\x01"
    row = build.image([False], struct.pack("<i", -5))
    compressed = (166, v1_rows + _mariadb_compress(row))  # row_log_event_uncompress: rows only
    plain = (23, v1_rows + row)
    events = (163, gtid_list), (161, checkpoint), (162, gtid_xa), (165, query), tm, compressed, plain
    gl, cp, g, q, _, wc, wp = bodies(*events, server_version=mv)
    assert isinstance(gl, GtidListEvent) and [(x.domain_id, x.server_id, x.seq_no) for x in gl.gtids] == [
        (0, 1, 10),
        (1, 2, 20),
    ]
    assert cp == BinlogCheckpointEvent("maria.000001")
    assert isinstance(g, MariadbGtidEvent) and g.xid == (1, b"gt", b"b") and g.gtid == "0-1-5"
    assert isinstance(q, QueryEvent) and q.query == "INSERT INTO t VALUES (1)" and q.db == "db"
    assert isinstance(wc, WriteRowsEvent) and wc.rows == ((-5,),) == wp.rows
    path = tmp_path / "maria.000001"
    path.write_bytes(build.binlog(*events, server_version=mv))
    assert [(c.gtid, c.after) for c in iter_row_changes(path)] == [("0-1-5", {"@1": -5})] * 2
