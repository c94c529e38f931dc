"""The binlog writer: every event type it writes decodes back to the same event (decode(encode(e)) == e), row
values of every column type and image, PARTIAL_UPDATE_ROWS with REPLACE/INSERT/REMOVE and several diffs per
column, rotation, transaction_length, compression; plus bytes checked against values stated by MySQL."""

from __future__ import annotations

import io
import uuid
from dataclasses import replace
from decimal import Decimal

import pytest

from binlake.binlog import constants as C
from binlake.binlog import events as ev
from binlake.binlog.encode_rows import make_decimal_encoder, make_time2_encoder, optional_metadata_fields
from binlake.binlog.errors import BinlogError
from binlake.binlog.reader import read_events
from binlake.binlog.values import MysqlDate, MysqlDateTime, MysqlTime, MysqlTimestamp
from binlake.binlog.writer import MYSQL_80_POST_HEADER_LENGTHS, BinlogWriter, Event, EventWriter, payload_event_body
from binlake.mysqljson import BinaryJson, DiffOp, JsonDiff, parse_path, write_diffs

SID = uuid.UUID("3e11fa47-71ca-11e1-9e33-c80aa9429562").bytes
FDE = ev.FormatDescriptionEvent(
    4, "8.0.36", 1_700_000_000, 19, MYSQL_80_POST_HEADER_LENGTHS, C.BINLOG_CHECKSUM_ALG_CRC32
)


def _table_map(table_id: int = 77) -> ev.TableMapEvent:
    """A table with one column of each common type, with full optional metadata."""
    types = (
        C.MYSQL_TYPE_LONG,
        C.MYSQL_TYPE_TINY,
        C.MYSQL_TYPE_SHORT,
        C.MYSQL_TYPE_INT24,
        C.MYSQL_TYPE_LONGLONG,
        C.MYSQL_TYPE_FLOAT,
        C.MYSQL_TYPE_DOUBLE,
        C.MYSQL_TYPE_NEWDECIMAL,
        C.MYSQL_TYPE_DATE,
        C.MYSQL_TYPE_DATETIME2,
        C.MYSQL_TYPE_TIMESTAMP2,
        C.MYSQL_TYPE_TIME2,
        C.MYSQL_TYPE_YEAR,
        C.MYSQL_TYPE_VARCHAR,
        C.MYSQL_TYPE_STRING,
        C.MYSQL_TYPE_STRING,
        C.MYSQL_TYPE_STRING,
        C.MYSQL_TYPE_BLOB,
        C.MYSQL_TYPE_BLOB,
        C.MYSQL_TYPE_BIT,
        C.MYSQL_TYPE_JSON,
        C.MYSQL_TYPE_JSON,
        C.MYSQL_TYPE_VARCHAR,
    )
    metas = (
        0,
        0,
        0,
        0,
        0,
        4,
        8,
        20 << 8 | 6,
        0,
        6,
        3,
        4,
        0,
        400,
        0xFE << 8 | 8,
        C.MYSQL_TYPE_ENUM << 8 | 1,
        C.MYSQL_TYPE_SET << 8 | 1,
        2,
        2,
        1 << 8 | 3,
        4,
        4,
        1000,
    )
    names = (
        "id",
        "t",
        "s",
        "m",
        "b",
        "f",
        "d",
        "dec",
        "dt",
        "dtm",
        "ts",
        "tm",
        "y",
        "vc",
        "ch",
        "en",
        "st",
        "txt",
        "bl",
        "bits",
        "j1",
        "j2",
        "latin",
    )
    tm = ev.TableMapEvent(
        table_id,
        1,
        "db",
        "every_type",
        types,
        metas,
        b"\xfe\xff\x7f",
        signedness=(True, False, False, False, False, False, False, False),
        default_charset=ev.DefaultCharset(255, ((3, 63), (4, 8))),
        column_names=names,
        set_str_values=(("a", "b", "c"),),
        enum_str_values=(("x", "y"),),
        simple_primary_key=(0,),
        enum_and_set_default_charset=ev.DefaultCharset(255),
        column_visibility=tuple(True for _ in types),
    )
    return replace(tm, optional_metadata=optional_metadata_fields(tm))


ROW_A = (
    1,
    -5,
    300,
    -70000,
    2**62,
    1.5,
    -2.25e-7,
    Decimal("-12345678901234.567890"),
    MysqlDate(2024, 2, 29),
    MysqlDateTime(2023, 12, 31, 23, 59, 58, 123456, 6),
    MysqlTimestamp(1_700_000_123, 456000, 3),
    MysqlTime(True, 838, 59, 59, 500000, 4),
    2155,
    "grüße 東京",
    "NL",
    "y",
    "a,c",
    "some text",
    b"\x00\x01binary\xff",
    0b11111111111,
    BinaryJson.from_value({"k": [1, 2.5, "x", None, True]}),
    None,
    "café",
)
ROW_B = (
    2,
    127,
    0,
    8388607,
    -1,
    -0.5,
    1e300,
    Decimal("0.000001"),
    MysqlDate(1000, 1, 1),
    MysqlDateTime(1000, 1, 1, 0, 0, 0, 0, 6),
    MysqlTimestamp(1, 0, 3),
    MysqlTime(False, 0, 0, 1, 0, 4),
    1901,
    "",
    "",
    "x",
    "",
    "",
    b"",
    0,
    BinaryJson.from_value([]),
    BinaryJson.from_value({"a": {"b": [10, 20]}}),
    None,
)


def _roundtrip(events: list[Event]) -> list[ev.BinlogEvent]:
    w = EventWriter()
    data = C.BINLOG_MAGIC + b"".join(w.encode(e) for e in [Event(FDE, 1)] + events)
    decoded = list(read_events(io.BytesIO(data), file="mem"))
    last = [e for e in decoded if e.payload_pos is None][-1]
    assert last.pos + last.header.event_size == len(data)
    for e in decoded:
        if e.payload_pos is None:
            assert e.header.log_pos == e.pos + e.header.event_size  # positions point past each event
    return decoded[1:]


def _bits(n: int, present) -> bytes:
    out = bytearray((n + 7) // 8)
    for i in present:
        out[i >> 3] |= 1 << (i & 7)
    return bytes(out)


def test_control_and_statement_events_roundtrip():
    bodies = [
        ev.PreviousGtidsEvent((ev.GtidSetEntry(SID, "", (ev.GtidInterval(1, 8), ev.GtidInterval(10, 11))),)),
        ev.GtidEvent(0, SID, 8, C.LOGICAL_TIMESTAMP_TYPECODE, 3, 4, 1_700_000_000_123_456, None, 400, 80036),
        ev.GtidEvent(
            1,
            SID,
            9,
            C.LOGICAL_TIMESTAMP_TYPECODE,
            4,
            5,
            1_700_000_000_123_456,
            1_600_000_000_000_001,
            2**20,
            80036,
            80027,
        ),
        ev.AnonymousGtidEvent(0, bytes(16), 0, C.LOGICAL_TIMESTAMP_TYPECODE, 0, 1, 5, None, 77, 80036),
        ev.QueryEvent(42, 1, 0, b"\x00\x00\x00\x00\x00", "shop", "BEGIN"),
        ev.QueryEvent(42, 0, 0, b"", "", "CREATE TABLE `t` (a INT) /* é */"),
        ev.XidEvent(2**63 + 5),
        ev.IntvarEvent(C.INSERT_ID_EVENT, 99),
        ev.RandEvent(1, 2),
        ev.UserVarEvent("v", False, 0, 33, b"abc", 0),
        ev.UserVarEvent("n", True),
        ev.IncidentEvent(1, "LOST_EVENTS"),
        ev.RowsQueryEvent("UPDATE t SET a = 1", 18),
        ev.XaPrepareEvent(False, 1, b"gtrid", b"bq"),
        ev.RotateEvent(4, "mysql-bin.000002"),
    ]
    decoded = _roundtrip([Event(b, 1_700_000_001, server_id=7) for b in bodies])
    assert [d.body for d in decoded] == bodies
    assert all(d.header.server_id == 7 for d in decoded)


@pytest.mark.parametrize("image", ["full", "minimal", "noblob"])
def test_rows_events_roundtrip_every_column_type(image):
    tm = _table_map()
    n = tm.column_count
    blobs = {17, 18, 20, 21}
    if image == "full":
        before = after = tuple(range(n))
    elif image == "minimal":
        before, after = (0,), (0, 7, 13, 20)
    else:
        before = after = tuple(i for i in range(n) if i not in blobs)

    def img(row, present):
        return tuple(v if i in present else ev.ABSENT for i, v in enumerate(row))

    full = tuple(range(n))
    events = [
        Event(tm, 5),
        Event(ev.WriteRowsEvent(77, 0, b"", n, _bits(n, full), (ROW_A, ROW_B)), 5),
        Event(
            ev.UpdateRowsEvent(
                77,
                0,
                b"",
                n,
                _bits(n, before),
                (ev.UpdateRow(img(ROW_A, before), img(ROW_B, after)),),
                6,
                _bits(n, after),
            ),
            5,
        ),
        Event(ev.DeleteRowsEvent(77, C.STMT_END_F, b"", n, _bits(n, before), (img(ROW_B, before),)), 5),
        Event(ev.WriteRowsEvent(77, 0, None, n, _bits(n, full), (ROW_B,)), 5, type_code=C.WRITE_ROWS_EVENT_V1),
    ]
    decoded = _roundtrip(events)
    assert [d.body for d in decoded] == [e.body for e in events]
    assert [d.header.type_code for d in decoded] == [19, 30, 31, 32, 23]


def _diffs(*items) -> tuple[JsonDiff, ...]:
    return tuple(JsonDiff(op, parse_path(path), *value) for op, path, *value in items)


def test_partial_update_rows_roundtrip_replace_insert_remove_multi_diff():
    tm = _table_map()
    n = tm.column_count
    j1 = _diffs(
        (DiffOp.REPLACE, "$.k[1]", 3.75),
        (DiffOp.INSERT, "$.new", {"deep": [1, {"x": None}]}),
        (DiffOp.REMOVE, "$.k[0]"),
        (DiffOp.INSERT, "$.k[2]", "ins"),
        (DiffOp.REPLACE, "$.k", [1]),
    )
    j2 = _diffs((DiffOp.REMOVE, "$.a.b[1]"), (DiffOp.INSERT, '$."key with space"', False))
    partial_after = list(ROW_A)
    partial_after[20] = ev.JsonPartial(write_diffs(j1), j1)
    partial_after[21] = ev.JsonPartial(write_diffs(j2), j2)
    full = _bits(n, range(n))
    rows = (
        ev.PartialUpdateRow(ROW_B, tuple(partial_after), C.PARTIAL_JSON_UPDATES, (20, 21), b"\x03"),
        ev.PartialUpdateRow(ROW_A, ROW_B, 0),  # nothing partial: full values
        ev.PartialUpdateRow(
            ROW_B, tuple(partial_after[:21]) + (None, "x"), C.PARTIAL_JSON_UPDATES, (20,), b"\x01"
        ),  # one partial, the other NULL
    )
    body = ev.PartialUpdateRowsEvent(77, C.STMT_END_F, b"", n, full, rows, 6, full)
    decoded = _roundtrip([Event(tm, 5), Event(body, 5)])
    assert decoded[1].header.type_code == C.PARTIAL_UPDATE_ROWS_EVENT
    assert decoded[1].body == body
    got = decoded[1].body.rows[0].after[20]
    assert [(d.op, str(d.path)) for d in got.diffs] == [
        (0, "$.k[1]"),
        (1, "$.new"),
        (2, "$.k[0]"),
        (1, "$.k[2]"),
        (0, "$.k"),
    ]


def test_binary_n_is_stored_without_its_zero_pad():
    tm = replace(
        _table_map(),
        column_metadata=_table_map().column_metadata[:14] + (0xFE << 8 | 8,) + _table_map().column_metadata[15:],
        default_charset=ev.DefaultCharset(255, ((1, 63), (3, 63), (4, 8))),
    )
    tm = replace(tm, optional_metadata=optional_metadata_fields(tm))
    n = tm.column_count
    row = list(ROW_B)
    row[14] = b"ab\x00c\x00\x00\x00\x00"  # BINARY(8): stored as b"ab\x00c"
    body = ev.WriteRowsEvent(77, 0, b"", n, _bits(n, range(n)), (tuple(row),))
    w = EventWriter()
    w.encode(Event(FDE, 1))
    w.encode(Event(tm, 1))
    assert b"\x04ab\x00c" in w.encode(Event(body, 1))
    assert _roundtrip([Event(tm, 5), Event(body, 5)])[1].body == body


def test_table_map_roundtrip_keeps_optional_metadata():
    tm = _table_map()
    decoded = _roundtrip([Event(tm, 5)])
    assert decoded[0].body == tm
    assert decoded[0].body.column_names[7] == "dec"


def test_transaction_payload_roundtrip_and_inner_events():
    tm = _table_map()
    n = tm.column_count
    inner = EventWriter(pos=0, in_payload=True)
    rows = ev.WriteRowsEvent(77, C.STMT_END_F, b"", n, _bits(n, range(n)), (ROW_A,))
    raw = b"".join(
        inner.encode(e)
        for e in [
            Event(ev.QueryEvent(1, 0, 0, b"", "", "BEGIN"), 9),
            Event(tm, 9),
            Event(rows, 9),
            Event(ev.XidEvent(5), 9),
        ]
    )
    payload = payload_event_body(raw, compress=True)
    decoded = _roundtrip([Event(payload, 9)])
    assert decoded[0].body == payload
    assert payload.payload[:4] == b"\x28\xb5\x2f\xfd"  # a zstd frame
    assert [d.body for d in decoded[1:]][2] == rows
    assert all(d.header.log_pos == 0 and d.payload_pos == decoded[0].pos for d in decoded[1:])


def test_binlog_writer_rotates_and_counts_transaction_length(tmp_path):
    tm = _table_map()
    n = tm.column_count
    rows = ev.WriteRowsEvent(77, C.STMT_END_F, b"", n, _bits(n, range(n)), (ROW_A, ROW_B))
    with BinlogWriter(tmp_path, max_size=2000, create_timestamp=1_700_000_000) as w:
        for gno in range(1, 8):
            w.write_transaction(
                [Event(ev.QueryEvent(1, 0, 0, b"", "", "BEGIN")), Event(tm), Event(rows), Event(ev.XidEvent(gno))],
                gno=gno,
                commit_time_us=1_700_000_000_000_000 + gno,
                compress=gno % 2 == 0,
            )
    assert len(w.files) >= 3
    assert (tmp_path / "mysql-bin.index").read_text().splitlines() == [f"./{p.name}" for p in w.files]
    gnos = []
    for i, path in enumerate(w.files):
        events = [e for e in read_events(open(path, "rb"), file=str(path))]
        outer = [e for e in events if e.payload_pos is None]
        assert isinstance(outer[0].body, ev.FormatDescriptionEvent) and outer[0].body.checksum_alg == 1
        prev = outer[1].body
        assert isinstance(prev, ev.PreviousGtidsEvent)
        assert [(iv.start, iv.end) for e in prev.entries for iv in e.intervals] == ([(1, gnos[-1] + 1)] if gnos else [])
        if i < len(w.files) - 1:
            assert outer[-1].body == ev.RotateEvent(4, w.files[i + 1].name)
        for k, e in enumerate(outer):
            if isinstance(e.body, ev.GtidEvent):
                gnos.append(e.body.gno)
                end = next(
                    (o.pos for o in outer[k + 1 :] if isinstance(o.body, (ev.GtidEvent, ev.RotateEvent))),
                    path.stat().st_size,
                )
                assert e.body.transaction_length == end - e.pos
                assert e.body.immediate_commit_timestamp == 1_700_000_000_000_000 + e.body.gno
    assert gnos == list(range(1, 8))


@pytest.mark.parametrize("fsp", [2, 4, 6])
def test_negative_time2_with_fraction_roundtrip(fsp):
    tm = _table_map()
    n = tm.column_count
    row = list(ROW_B)
    row[11] = MysqlTime(True, 12, 34, 56, 780000, fsp)
    tm = replace(tm, column_metadata=tm.column_metadata[:11] + (fsp,) + tm.column_metadata[12:])
    body = ev.WriteRowsEvent(77, 0, b"", n, _bits(n, range(n)), (tuple(row),))
    assert _roundtrip([Event(tm, 5), Event(body, 5)])[1].body == body


# --- bytes stated by MySQL's documentation / source ---------------------------------------------------------------


def test_decimal_bytes_match_mysql_documentation():
    # strings/decimal.cc decimal2bin comment: 1234567890.1234 as DECIMAL(14,4) is 81 0D FB 38 D2 04 D2,
    # and the negative value is every byte inverted.
    enc = make_decimal_encoder(14, 4)
    assert enc(Decimal("1234567890.1234")) == bytes.fromhex("810DFB38D204D2")
    assert enc(Decimal("-1234567890.1234")) == bytes.fromhex("7EF204C72DFB2D")


def test_time2_negative_fraction_follows_my_time_packed_to_binary():
    # -00:00:01.5 with fsp 1: int part floor(-1.5 s) = -2 s -> 0x800000 - 2, fraction byte -50 as a signed char
    assert make_time2_encoder(1)(MysqlTime(True, 0, 0, 1, 500000, 1)) == bytes.fromhex("7ffffe") + bytes([206])
    hms = 1 << 12 | 2 << 6 | 3
    assert make_time2_encoder(0)(MysqlTime(False, 1, 2, 3, 0, 0)) == (0x800000 + hms).to_bytes(3, "big")


def test_optional_metadata_builder_matches_mysql_bytes():
    """Rebuilding TABLE_MAP optional metadata from its parsed fields gives the bytes real MySQL 8 servers wrote
    (field order, bit order of SIGNEDNESS/COLUMN_VISIBILITY, packed lists)."""
    from tests.support import require_fixtures

    root = require_fixtures() / "binlog"
    checked = 0
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        try:
            events = list(read_events(open(path, "rb"), file=str(path)))
        except BinlogError:  # truncated/corrupt fixtures: covered by the reader's tests
            continue
        for e in events:
            if isinstance(e.body, ev.TableMapEvent) and e.body.optional_metadata:
                assert optional_metadata_fields(replace(e.body, optional_metadata=())) == e.body.optional_metadata
                checked += 1
    assert checked >= 10
