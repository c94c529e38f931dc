"""Every real binlog fixture decodes completely (or fails with the typed error its origin documents), and decoded
values equal what the fixtures' origins state: ../shared/fixtures/manifest.json, the statements inside the
binlogs themselves, and the origin repositories' tests (cited per test)."""

from __future__ import annotations

import json
from collections import Counter
from decimal import Decimal

import pytest

from binlake.binlog import (
    BinlogError,
    CorruptEventError,
    IncompleteEventError,
    NotABinlogError,
    TruncatedEventError,
    iter_row_changes,
    open_binlog,
)
from binlake.binlog.events import (
    FormatDescriptionEvent,
    GtidEvent,
    MariadbGtidEvent,
    PreviousGtidsEvent,
    QueryEvent,
    RowsEvent,
    TableMapEvent,
    TransactionPayloadEvent,
)
from binlake.binlog.values import MysqlDate, MysqlDateTime, MysqlTime, MysqlTimestamp
from tests.support import FIXTURES, fixture_path, require_fixtures

# Files the origins document as broken (rust_mysql_common's binlog_file tests skip them at the same events), cut
# short, or not binlogs at all; the error each must raise.
EXPECTED_FAILURES = {
    "binlog/mysql-binlog-connector-rust/non-binlog": NotABinlogError,
    "binlog/rust_mysql_common/binlog_truncated_event.000001": IncompleteEventError,
    "binlog/rust_mysql_common/binlog_truncated_prev_gtid_event.000001": IncompleteEventError,
    # "corrupt-relay-bin.000624 testfile contains broken query event" (rust_mysql_common tests)
    "binlog/rust_mysql_common/corrupt-relay-bin.000624": TruncatedEventError,
    # 5.2.2 prototype builds ("a_drop6p13") with a pre-GA event numbering; rust_mysql_common: "contains broken
    # xid event" (in _r, type 16 is 38 bytes: larger than any XID_EVENT, refused at its header)
    "binlog/rust_mysql_common/ver_5_1-wl2325_r.001": CorruptEventError,
    "binlog/rust_mysql_common/ver_5_1-wl2325_s.001": TruncatedEventError,
}


def _manifest() -> list[dict]:
    if not FIXTURES.is_dir():
        return []
    return [e for e in json.loads((FIXTURES / "manifest.json").read_text()) if e["file"].startswith("binlog/")]


MANIFEST = _manifest()


def _histogram(entry_histogram: dict[str, int]) -> Counter:
    return Counter({int(k.split(":")[0]): v for k, v in entry_histogram.items()})


@pytest.mark.parametrize("entry", MANIFEST, ids=[e["file"] for e in MANIFEST])
def test_fixture_decodes_completely_or_fails_as_documented(entry: dict) -> None:
    path = fixture_path(entry["file"])
    binlog = open_binlog(path)
    expected_error = EXPECTED_FAILURES.get(entry["file"])
    if expected_error is not None:
        with pytest.raises(expected_error) as info:
            for _ in binlog:
                pass
        assert str(path) in str(info.value)  # errors name the file and an offset
        assert "offset" in str(info.value)
        return
    outer = Counter()
    inner = Counter()
    checksummed = 0
    for ev in binlog:
        (inner if ev.payload_pos is not None else outer)[ev.type_code] += 1
        checksummed += ev.checksum is not None
    meta = entry["binlog"]
    assert outer == _histogram(meta["histogram"])
    assert inner == _histogram(meta["payload_inner_histogram"])
    if meta["checksum_alg"] == 1:
        assert checksummed == meta["crc32_ok"]
    fde = binlog.format_description.body
    assert isinstance(fde, FormatDescriptionEvent)
    assert fde.server_version == meta["server_version"]
    assert binlog.stats.unknown_total == sum(n for code, n in outer.items() if code == 100)


def test_statements_in_manifest_are_the_decoded_query_texts() -> None:
    require_fixtures()
    checked = 0
    for entry in MANIFEST:
        if entry["file"] in EXPECTED_FAILURES or not entry["binlog"]["statements"]:
            continue
        queries = [
            ev.body.query
            for ev in open_binlog(FIXTURES / entry["file"])
            if isinstance(ev.body, QueryEvent) and ev.body.query not in ("BEGIN", "COMMIT")
        ]
        for stmt in entry["binlog"]["statements"]:
            assert any(q.startswith(stmt) for q in queries), (entry["file"], stmt)
            checked += 1
    assert checked > 20


def test_table_map_metadata_matches_the_create_table_in_the_same_binlog() -> None:
    # CREATE TABLE t1 (f1 INT UNSIGNED INVISIBLE, f2 INT UNSIGNED INVISIBLE, f3 INT , f4 TEXT, f5 BLOB,
    #                  f6 BIGINT UNSIGNED INVISIBLE)  -- the QUERY_EVENT of binlog-invisible-columns.000001
    tms = [
        ev.body
        for ev in open_binlog(fixture_path("binlog/rust_mysql_common/binlog-invisible-columns.000001"))
        if isinstance(ev.body, TableMapEvent)
    ]
    assert len(tms) == 3
    tm = tms[0]
    assert (tm.db, tm.table) == ("mysql", "t1")
    assert tm.column_names == ("f1", "f2", "f3", "f4", "f5", "f6")
    assert tm.column_types == (3, 3, 3, 252, 252, 8)
    assert tm.signedness == (True, True, False, True)  # f1, f2, f3, f6 are numeric
    assert tm.column_visibility == (False, False, True, True, True, False)
    assert tm.column_charsets == (255, 63)  # TEXT utf8mb4_0900_ai_ci, BLOB binary


def test_invisible_columns_rows_use_signedness_and_charsets() -> None:
    changes = list(iter_row_changes(fixture_path("binlog/rust_mysql_common/binlog-invisible-columns.000001")))
    assert [c.op for c in changes] == ["insert", "insert", "update"]
    first = changes[0].after
    assert isinstance(first["f4"], str) and isinstance(first["f5"], bytes)  # TEXT vs BLOB by collation
    assert changes[1].after["f1"] is None and changes[1].after["f3"] < 0
    assert changes[2].after["f3"] == -333 and changes[2].before["f3"] == -33


def test_enum_set_and_long_char_values_from_rust_mysql_common_tests() -> None:
    # rust_mysql_common src/binlog/mod.rs: write row = (100-char string, 300-char string, ENUM index 1,
    # SET 0b101, '0123456789'); update after / delete before = ('field1', 'field_2', 2, 0b1010, 300-char string)
    # CREATE TABLE t(f1 CHAR(128), f2 VARCHAR(300), f3 ENUM('var1','variant2','foo'),
    #                f4 SET('one','two','three','four'), f5 TEXT)
    s100 = "0123456789" * 10
    s300 = ("0123456789" * 13 + "012345678") * 2 + "0123456789" * 3 + "0123456789"[:0]
    changes = list(iter_row_changes(fixture_path("binlog/rust_mysql_common/mysql-enum-string-set.000001")))
    assert [c.op for c in changes] == ["insert", "update", "delete"]
    ins = changes[0].after
    assert ins["f1"] == s100 and ins["f3"] == "var1" and ins["f4"] == "one,three" and ins["f5"] == "0123456789"
    assert len(ins["f2"]) == 298 and ins["f2"].startswith(s300[:100])
    upd = changes[1]
    assert upd.before == ins
    assert upd.after["f1"] == "field1" and upd.after["f2"] == "field_2"
    assert upd.after["f3"] == "variant2" and upd.after["f4"] == "two,four"
    assert changes[2].before == upd.after


def test_bit_values_from_rust_mysql_common_tests() -> None:
    # rust_mysql_common: after image = [Bytes([0b100]), Bytes(b"foo"), Bytes([0b100000])] for
    # CREATE TABLE foo(a BIT(3), b TEXT, c BIT(8))
    (change,) = iter_row_changes(fixture_path("binlog/rust_mysql_common/mysql_type_bit.000001"))
    assert change.after == {"a": 0b100, "b": "foo", "c": 0b100000}


# SELECT * FROM decodedecimal, as printed in go-mysql's replication tests for the binlog tcb-eval002c-bin.003320
# (id, v4_2, v5_0, v7_3, v10_2, v10_3, v13_2, v15_14, v20_10, v30_5, v30_20, v30_25, prec, scale)
DECODEDECIMAL_SELECT = """
1 -10.55 -11 -10.550 -10.55 -10.550 -10.55 -9.99999999999999 -10.5500000000 -10.55000 -10.55000000000000000000 -10.5500000000000000000000000 4 2
2 0.01 0 0.012 0.01 0.012 0.01 0.01234567890123 0.0123456789 0.01235 0.01234567890123456789 0.0123456789012345678912345 30 25
3 99.99 12345 9999.999 12345.00 12345.000 12345.00 9.99999999999999 12345.0000000000 12345.00000 12345.00000000000000000000 12345.0000000000000000000000000 5 0
4 99.99 12345 9999.999 12345.00 12345.000 12345.00 9.99999999999999 12345.0000000000 12345.00000 12345.00000000000000000000 12345.0000000000000000000000000 10 3
5 99.99 123 123.450 123.45 123.450 123.45 9.99999999999999 123.4500000000 123.45000 123.45000000000000000000 123.4500000000000000000000000 10 3
6 -99.99 -123 -123.450 -123.45 -123.450 -123.45 -9.99999999999999 -123.4500000000 -123.45000 -123.45000000000000000000 -123.4500000000000000000000000 20 10
7 0.00 0 0.000 0.00 0.000 0.00 0.00012345000099 0.0001234500 0.00012 0.00012345000098765000 0.0001234500009876500000000 15 14
8 0.00 0 0.000 0.00 0.000 0.00 0.00012345000099 0.0001234500 0.00012 0.00012345000098765000 0.0001234500009876500000000 22 20
9 0.12 0 0.123 0.12 0.123 0.12 0.12345000098765 0.1234500010 0.12345 0.12345000098765000000 0.1234500009876500000000000 30 20
10 0.00 0 0.000 0.00 0.000 0.00 -0.00000001234500 -0.0000000123 0.00000 -0.00000001234500009877 -0.0000000123450000987650000 30 20
11 99.99 99999 9999.999 99999999.99 9999999.999 99999999999.99 9.99999999999999 9999999999.9999999999 1234500009876.50000 9999999999.99999999999999999999 99999.9999999999999999999999999 30 5
12 99.99 99999 9999.999 99999999.99 9999999.999 111111111.11 9.99999999999999 111111111.1100000000 111111111.11000 111111111.11000000000000000000 99999.9999999999999999999999999 10 2
13 0.01 0 0.010 0.01 0.010 0.01 0.01000000000000 0.0100000000 0.01000 0.01000000000000000000 0.0100000000000000000000000 7 3
14 99.99 123 123.400 123.40 123.400 123.40 9.99999999999999 123.4000000000 123.40000 123.40000000000000000000 123.4000000000000000000000000 10 2
15 -99.99 -563 -562.580 -562.58 -562.580 -562.58 -9.99999999999999 -562.5800000000 -562.58000 -562.58000000000000000000 -562.5800000000000000000000000 13 2
16 -99.99 -3699 -3699.010 -3699.01 -3699.010 -3699.01 -9.99999999999999 -3699.0100000000 -3699.01000 -3699.01000000000000000000 -3699.0100000000000000000000000 13 2
17 -99.99 -1948 -1948.140 -1948.14 -1948.140 -1948.14 -9.99999999999999 -1948.1400000000 -1948.14000 -1948.14000000000000000000 -1948.1400000000000000000000000 13 2
"""


def test_decimal_values_equal_the_servers_select_from_go_mysql_tests() -> None:
    changes = list(iter_row_changes(fixture_path("binlog/go-mysql/tcb-eval002c-bin.003320")))
    expected = [line.split() for line in DECODEDECIMAL_SELECT.strip().splitlines()]
    assert len(changes) == len(expected) == 17
    for change, row in zip(changes, expected):
        values = list(change.after.values())
        assert values[0] == int(row[0]) and values[-2:] == [int(row[-2]), int(row[-1])]
        got = [format(v, "f") for v in values[1:-2]]
        assert all(isinstance(v, Decimal) for v in values[1:-2])
        assert got == row[1:-2], change.row


def test_every_column_type_of_the_mysqlcdc_sample() -> None:
    # MySqlCdc samples: INSERT ... values(123, 12345, 1234567, 123456789, 1234567890987654321, 12345.6789,
    # 123456789.0987654321, 1234567890112233445566778899001112223334445556667778889.9900011112,
    # 'Asd234234 234234 zdfsfsdfsdf', 'Hello world!', x'1234564534454534', '{"id": 1, "name": "John"}', x'152354',
    # b'0111101101010101011110000111', 'Medium', 'Red', 1989, '1985-10-23', '1988-11-27 14:12:13.345',
    # '15:22:33.67', '1985-10-13 13:22:23.567')   (MySQL 5.7: no TABLE_MAP names, so @1..@n)
    changes = list(iter_row_changes(fixture_path("binlog/MySqlCdc/mysql-bin.000001")))
    assert len(changes) == 3
    row = changes[2].after
    assert [row[f"@{i}"] for i in range(2, 7)] == [123, 12345, 1234567, 123456789, 1234567890987654321]
    assert row["@7"] == pytest.approx(12345.6789, rel=1e-7)
    assert row["@8"] == 123456789.0987654321
    assert row["@9"] == Decimal("1234567890112233445566778899001112223334445556667778889.9900011112")
    assert row["@10"] == "Asd234234 234234 zdfsfsdfsdf" and row["@11"] == "Hello world!"
    # VARBINARY without charset metadata reads as text: its bytes are intact
    assert row["@12"].encode("utf-8", "surrogateescape") == bytes.fromhex("1234564534454534")
    assert row["@13"].text == '{"id": 1, "name": "John"}'
    assert row["@14"] == bytes.fromhex("152354")
    assert row["@15"] == 0b0111101101010101011110000111
    assert (row["@16"], row["@17"]) == (2, 4)  # ENUM index, SET bits (no names)
    assert row["@18"] == 1989
    assert row["@19"] == MysqlDate(1985, 10, 23) and str(row["@19"]) == "1985-10-23"
    assert str(row["@20"]) == "1988-11-27 14:12:13.345" and isinstance(row["@20"], MysqlDateTime)
    assert str(row["@21"]) == "15:22:33.67" and isinstance(row["@21"], MysqlTime)
    ts = row["@22"]
    assert isinstance(ts, MysqlTimestamp) and ts.microsecond == 567000 and ts.fsp == 3
    assert str(ts).endswith(":22:23.567")  # server time zone unknown: UTC text


def test_json_columns_and_partial_update_diffs_match_the_json_diff_vectors() -> None:
    vectors = json.loads((require_fixtures() / "json_vectors" / "json_diff_vectors.json").read_text())["vectors"]
    by_row = {v["id"].split("@")[1]: v for v in vectors if v["id"].startswith("binlog:rust_mysql_common/json")}
    changes = list(iter_row_changes(fixture_path("binlog/rust_mysql_common/json.binlog.000001")))
    partial = [c for c in changes if c.diffs is not None]
    assert len(partial) == 6
    for c in partial:
        key = f"{c.pos}/row{c.row}/col1"
        if key not in by_row:
            continue
        vec = by_row[key]
        (diffs,) = c.diffs.values()
        assert [(d.op.name, str(d.path), d.value) for d in diffs] == [
            (e["op"], e["path"], e["value"]) for e in vec["expected"]
        ]
    assert {f"{c.pos}/row{c.row}/col1" for c in partial} >= set(by_row)
    # the full-format UPDATE before them: age 24 -> 25 etc. (json_diff_vectors notes)
    full = [c for c in changes if c.op == "update" and c.diffs is None]
    assert [c.before["@2"].value["age"] for c in full[:3]] == [24, 32, 40]
    assert [c.after["@2"].value["age"] for c in full[:3]] == [25, 33, 41]


def test_transaction_payload_inner_events_and_rows() -> None:
    events = list(open_binlog(fixture_path("binlog/rust_mysql_common/transaction_compression.000001")))
    (payload,) = [e for e in events if isinstance(e.body, TransactionPayloadEvent)]
    inner = [e for e in events if e.payload_pos is not None]
    # rust_mysql_common tests: QUERY, TABLE_MAP, WRITE_ROWS, XID inside, nothing more
    assert [e.type_name for e in inner] == ["QUERY_EVENT", "TABLE_MAP_EVENT", "WRITE_ROWS_EVENT", "XID_EVENT"]
    assert all(e.payload_pos == payload.pos for e in inner)
    assert payload.body.compression_type == 0 and payload.body.uncompressed_size == sum(
        e.header.event_size for e in inner
    )
    (change,) = iter_row_changes(fixture_path("binlog/rust_mysql_common/transaction_compression.000001"))
    assert change.pos == payload.pos and change.op == "insert"


def test_compressed_update_from_connector_java() -> None:
    (change,) = iter_row_changes(fixture_path("binlog/mysql-binlog-connector-java/mysql-bin.compressed"))
    assert change.op == "update" and change.table == "movies"
    assert change.before["@5"] == "Western" and change.after["@5"] == "Western|Action"


def test_mariadb_events_gtids_and_rows_match_the_annotated_statement() -> None:
    path = fixture_path("binlog/rust_mysql_common/mariadb-bin.000001")
    events = list(open_binlog(path))
    gtids = [e.body.gtid for e in events if isinstance(e.body, MariadbGtidEvent)]
    assert gtids == ["0-1-1", "0-1-2"]
    annotate = [e.body.query for e in events if e.type_code == 160]
    assert annotate[0] == "insert into outbox (topic, event_type, event) values ('foo', 'JSON', '{\"foo\":1}')"
    changes = list(iter_row_changes(path))
    assert [c.gtid for c in changes] == gtids
    # rust_mysql_common tests: columns id, topic, event_type, event, created; charsets utf8mb4, utf8mb4, binary
    assert list(changes[0].after) == ["id", "topic", "event_type", "event", "created"]
    assert changes[0].after["topic"] == "foo" and changes[0].after["event_type"] == "JSON"
    assert changes[0].after["event"] == b'{"foo":1}'


def test_mysql_gtid_and_previous_gtids() -> None:
    events = list(open_binlog(fixture_path("binlog/rust-mysql-binlog/bin-log.000001")))
    gtids = [e.body.gtid for e in events if isinstance(e.body, GtidEvent)]
    assert gtids[-2:] == ["87cee3a4-6b31-11e7-bdfd-0d98d6698870:14918", "87cee3a4-6b31-11e7-bdfd-0d98d6698870:14919"]
    (prev,) = [e.body for e in events if isinstance(e.body, PreviousGtidsEvent)]
    assert prev.gtid_set().startswith("87cee3a4-6b31-11e7-bdfd-0d98d6698870:1-")


def test_utf8mb4_emoji_and_rows_of_connector_rust() -> None:
    changes = list(iter_row_changes(fixture_path("binlog/mysql-binlog-connector-rust/mysql-bin.000080")))
    emoji = [c for c in changes if c.table == "emoji"]
    assert emoji and all(ord(ch) > 0xFFFF for ch in emoji[0].after["@2"])


def test_corrupt_relay_log_error_names_the_broken_query_event() -> None:
    # rust_mysql_common: the broken QUERY_EVENT is 171 bytes long
    path = fixture_path("binlog/rust_mysql_common/corrupt-relay-bin.000624")
    with pytest.raises(BinlogError) as info:
        for _ in open_binlog(path):
            pass
    assert info.value.event_type == "QUERY_EVENT"
    data = path.read_bytes()
    assert int.from_bytes(data[info.value.offset + 9 : info.value.offset + 13], "little") == 171


def test_rows_events_in_every_decodable_fixture_have_rows() -> None:
    require_fixtures()
    total = 0
    for entry in MANIFEST:
        if entry["file"] in EXPECTED_FAILURES:
            continue
        for ev in open_binlog(FIXTURES / entry["file"]):
            if isinstance(ev.body, RowsEvent):
                assert ev.body.rows or ev.body.table_id == 0x00FFFFFF or not ev.body.column_count
                total += len(ev.body.rows)
    assert total >= 200


def test_corrupt_event_is_typed_not_python_error() -> None:
    assert issubclass(CorruptEventError, BinlogError)
