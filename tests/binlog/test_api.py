"""The reader API (WL#3283 shape): URIs, creation timestamp (R1), start position, transactions, content handlers,
row changes, and the schema-provider hook for binlogs without TABLE_MAP optional metadata."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from binlake.binlog import (
    BinlogError,
    ContentHandler,
    SchemaMismatchError,
    iter_row_changes,
    open_binlog,
    register_transport,
)
from binlake.binlog.events import QueryEvent, RowsEvent, TableMapEvent, XidEvent
from binlake.binlog.schema import ColumnInfo, TableSchema
from tests.binlog import build
from tests.support import fixture_path

JSON_BINLOG = "binlog/rust_mysql_common/json.binlog.000001"


def test_file_uri_plain_path_and_unknown_scheme() -> None:
    path = fixture_path(JSON_BINLOG)
    by_path = [e.pos for e in open_binlog(path)]
    by_uri = [e.pos for e in open_binlog(path.as_uri())]
    assert by_path == by_uri and by_path[0] == 4
    with pytest.raises(BinlogError, match="no transport for URI scheme 'nope'"):
        list(open_binlog("nope://host/binlog.000001"))


def test_registered_transport_is_used(tmp_path: Path) -> None:
    data = fixture_path(JSON_BINLOG).read_bytes()
    import io

    register_transport("mem", lambda uri: (uri, io.BytesIO(data)))
    assert sum(1 for _ in open_binlog("mem://json")) == 36


def test_creation_timestamp_r1() -> None:
    binlog = open_binlog(fixture_path(JSON_BINLOG))
    fde_header_ts = next(iter(binlog)).header.timestamp
    assert binlog.creation_timestamp == 1615797724 == fde_header_ts
    # a binlog whose FORMAT_DESCRIPTION sets create_timestamp reports that
    assert open_binlog(fixture_path("binlog/rust_mysql_common/mariadb-bin.000001")).creation_timestamp == 1650493071


def test_start_position_skips_to_an_event() -> None:
    path = fixture_path(JSON_BINLOG)
    all_events = list(open_binlog(path))
    start = all_events[10].pos
    events = list(open_binlog(path, start_position=start))
    assert events[0].type_name == "FORMAT_DESCRIPTION_EVENT"
    assert [e.pos for e in events[1:]] == [e.pos for e in all_events[10:]]


def test_transactions_group_gtid_begin_xid_and_ddl_alone() -> None:
    trxs = list(open_binlog(fixture_path(JSON_BINLOG)).transactions())
    assert [t.kind for t in trxs] == ["ddl", "ddl"] + ["commit"] * 6
    assert all(isinstance(t.events[-1].body, XidEvent) for t in trxs[2:])
    assert trxs[2].start_pos == 845 and trxs[2].end_pos == trxs[3].start_pos
    # MariaDB: GTID_EVENT opens the group (no BEGIN), XID closes it
    maria = list(open_binlog(fixture_path("binlog/rust_mysql_common/mariadb-bin.000001")).transactions())
    assert [(t.kind, t.gtid) for t in maria] == [("commit", "0-1-1"), ("commit", "0-1-2")]
    # a compressed transaction: the payload's inner BEGIN ... XID belong to the GTID's group
    (trx,) = open_binlog(fixture_path("binlog/rust_mysql_common/transaction_compression.000001")).transactions()
    assert trx.kind == "commit" and [e.type_code for e in trx.events] == [34, 40, 2, 19, 30, 16]


def test_content_handler_chain_transforms_and_consumes() -> None:
    seen: list[str] = []

    class DropQueries(ContentHandler):
        def on_query(self, event):
            seen.append(event.body.query)
            return None  # consumed

    class CountRows(ContentHandler):
        rows = 0

        def on_rows(self, event):
            CountRows.rows += len(event.body.rows)
            return event

    binlog = open_binlog(fixture_path(JSON_BINLOG))
    binlog.insert_content_handler(DropQueries())
    binlog.insert_content_handler(CountRows())
    binlog.insert_content_handler(lambda ev: ev if not isinstance(ev.body, TableMapEvent) else None)
    out = list(binlog)
    assert not any(isinstance(e.body, (QueryEvent, TableMapEvent)) for e in out)
    assert len(seen) == 8 and seen.count("BEGIN") == 6
    assert CountRows.rows == sum(len(e.body.rows) for e in out if isinstance(e.body, RowsEvent)) == 18


def _minimal_binlog() -> bytes:
    """binlog_row_metadata=MINIMAL: no names, no signedness -> a schema provider fills them."""
    tm = build.table_map(3, "shop", "item", [3, 15], struct.pack("<H", 40), [False, True])
    row = build.rows_event(30, 3, 2, build.image([False, False], b"\xff\xff\xff\xff", b"\x03abc"))
    return build.binlog(tm, row)


def test_without_metadata_columns_are_numbered_and_integers_signed(tmp_path: Path) -> None:
    path = tmp_path / "b.000001"
    path.write_bytes(_minimal_binlog())
    (change,) = iter_row_changes(path)
    assert change.after == {"@1": -1, "@2": "abc"}


def test_schema_provider_names_and_unsigned(tmp_path: Path) -> None:
    path = tmp_path / "b.000001"
    path.write_bytes(_minimal_binlog())
    asked = []

    def provider(db, table, types):
        asked.append((db, table, tuple(types)))
        return TableSchema(
            db, table, (ColumnInfo("id", 3, unsigned=True), ColumnInfo("name", 15, collation_id=63)), source="test"
        )

    (change,) = iter_row_changes(path, schema_provider=provider)
    assert asked == [("shop", "item", (3, 15))]
    assert change.after == {"id": 4294967295, "name": b"abc"}  # INT UNSIGNED, VARBINARY from the schema

    def wrong(db, table, types):
        return TableSchema(db, table, (ColumnInfo("only"),), source="sdi v1")

    with pytest.raises(SchemaMismatchError, match="expected 2 columns, found 1 columns"):
        list(iter_row_changes(path, schema_provider=wrong))


def test_row_changes_order_and_positions_are_unique() -> None:
    changes = list(iter_row_changes(fixture_path(JSON_BINLOG)))
    keys = [(c.pos, c.row) for c in changes]
    assert keys == sorted(keys) and len(set(keys)) == len(keys) == 18
    assert {c.op for c in changes} == {"insert", "update"}
