"""The apply scan's table layouts: stated once per chunk in bronze, looked up when a batch starts after them."""

from __future__ import annotations

import json

import pytest

from binlake.lake.apply import SCAN_COLUMNS, BatchInfo, _scan
from binlake.lake.errors import LayoutMissingError
from binlake.pipeline.bronze import layout_id

COLUMNS = json.dumps([["id", 3, 3, 0, False, None], ["name", 15, 15, 40, False, 255], ["qty", 3, 3, 0, False, None]])
PK = json.dumps(["id"])
LID = layout_id(COLUMNS, PK)


def row(seq, op, **values):
    r = dict.fromkeys(SCAN_COLUMNS)
    r.update({"_binlake_seq": seq, "binlog_file": "b.000001", "pos": seq, "op": op, "db": "d", "table_name": "t"})
    r.update(values)
    return r


def layout_row(seq):
    return row(seq, "layout", columns=COLUMNS, primary_key=PK, layout=LID)


def key_change(seq, after):
    return row(seq, "update", layout=LID, key_before="[1]", key_after="[2]", after=json.dumps(after))


def scanned(rows, lookup=lambda ids: {}):
    return _scan(iter(rows)).resolve_layouts(lookup)


def test_a_batch_holding_the_layout_row_needs_no_lookup():
    def lookup(ids):
        raise AssertionError(f"looked up {ids}")

    info = scanned([layout_row(1), key_change(1, {"id": 2, "name": "a", "qty": 1})], lookup)
    t = info.tables["d", "t"]
    assert t.metas == {COLUMNS} and t.pk == ["id"] and not t.dependent and t.changes == 1


def test_a_batch_starting_after_the_layout_row_looks_it_up():
    asked = []

    def lookup(ids):
        asked.append(ids)
        return {LID: (COLUMNS, PK)}

    info = scanned([key_change(5, {"id": 2, "name": "a", "qty": 1})], lookup)
    assert asked == [[LID]] and info.tables["d", "t"].metas == {COLUMNS} and info.tables["d", "t"].pk == ["id"]


def test_a_minimal_after_image_makes_the_table_dependent_whatever_the_partition_order():
    partial = key_change(2, {"id": 2})                           # MINIMAL: fewer columns than the layout's
    for parts in ([[layout_row(1)], [partial]], [[partial], [layout_row(1)]]):
        info = BatchInfo()
        for p in parts:
            info.add(_scan(iter(p)))
        assert info.resolve_layouts(lambda ids: {}).tables["d", "t"].dependent


def test_a_layout_missing_from_bronze_is_a_typed_error():
    with pytest.raises(LayoutMissingError, match=LID):
        scanned([key_change(5, {"id": 2, "name": "a", "qty": 1})])


def test_bronze_rows_with_their_own_columns_still_scan():
    old = key_change(3, {"id": 2})
    old.update(layout=None, columns=COLUMNS, primary_key=PK)
    t = scanned([old]).tables["d", "t"]
    assert t.metas == {COLUMNS} and t.pk == ["id"] and t.dependent
