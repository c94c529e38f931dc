"""PARTIAL_UPDATE_ROWS_EVENT (type 39) built by hand from WL#2955 section 4: before-image | shared-image
(value_options, partial_columns with one bit per JSON column) | after-image, partial JSON cells holding diff
vectors (REPLACE/INSERT/REMOVE) -- the cases no real fixture covers (INSERT, REMOVE, several diffs, a full JSON
column next to a partial one, value_options=0)."""

from __future__ import annotations

import io
import struct

from binlake.binlog import read_events
from binlake.binlog.api import _row_changes
from binlake.binlog.decoders import DecodeContext
from binlake.binlog.events import ABSENT, JsonPartial, PartialUpdateRowsEvent
from binlake.binlog.render import json_diffs, verbose_rows
from tests.binlog import build

INT16 = 0x05
STRING = 0x0C


def jint(n: int) -> bytes:
    return bytes([INT16]) + struct.pack("<h", n)


def jstr(s: str) -> bytes:
    return bytes([STRING, len(s)]) + s.encode()


def diff(op: int, path: str, value: bytes | None = None) -> bytes:
    out = bytes([op]) + build.packed(len(path)) + path.encode()
    return out if value is None else out + build.packed(len(value)) + value


# WL#2955 section 6 example diff vector
SEED_DIFFS = (
    diff(0, "$.a", jint(7))
    + diff(0, "$.b[1]", jstr("bb"))
    + diff(2, "$.c")
    + diff(2, "$.d[0]")
    + diff(1, "$.e", jstr("ee"))
    + diff(1, "$.f[1]", jstr("ff"))
    + diff(1, "$.g", jstr("gg"))
)


def partial_binlog() -> bytes:
    # t(id INT, j JSON, k JSON); binlog_row_image=MINIMAL: before has id only, after has j and k
    tm = build.table_map(
        42, "test", "t", [3, 245, 245], bytes([4, 4]), [False, True, True], optional=build.names("id", "j", "k")
    )
    before = build.image([False], struct.pack("<i", 1))
    shared = build.packed(1) + bytes([0b01])  # value_options=PARTIAL_JSON; j partial, k not
    after = build.image(
        [False, False], struct.pack("<I", len(SEED_DIFFS)) + SEED_DIFFS, struct.pack("<I", 2) + b"\x04\x01"
    )  # k = true (full format)
    row1 = before + shared + after
    before2 = build.image([False], struct.pack("<i", 2))
    shared2 = build.packed(0)  # value_options=0: no partial_columns field
    after2 = build.image([False, True], struct.pack("<I", 3) + jint(9))  # j = 9 (full), k = NULL
    rows = build.rows_event(
        39,
        42,
        3,
        row1 + before2 + shared2 + after2,
        present=build.bitmap([True]),
        present_after=build.bitmap([False, True, True]),
    )
    return build.binlog(tm, rows)


def decode_all():
    ctx = DecodeContext()
    events = list(read_events(io.BytesIO(partial_binlog()), ctx=ctx))
    return events, ctx


def test_shared_image_and_partial_cells() -> None:
    events, _ = decode_all()
    body = events[-1].body
    assert isinstance(body, PartialUpdateRowsEvent)
    r1, r2 = body.rows
    assert r1.before == (1, ABSENT, ABSENT)
    assert r1.value_options == 1 and r1.partial_columns == (1,) and r1.partial_bits == b"\x01"
    cell = r1.after[1]
    assert isinstance(cell, JsonPartial) and cell.raw == SEED_DIFFS
    assert [(d.op.name, str(d.path)) for d in cell.diffs] == [
        ("REPLACE", "$.a"),
        ("REPLACE", "$.b[1]"),
        ("REMOVE", "$.c"),
        ("REMOVE", "$.d[0]"),
        ("INSERT", "$.e"),
        ("INSERT", "$.f[1]"),
        ("INSERT", "$.g"),
    ]
    assert r1.after[0] is ABSENT and r1.after[2].text == "true"
    assert r2.value_options == 0 and r2.partial_columns == () and r2.partial_bits is None
    assert r2.after[1].text == "9" and r2.after[2] is None


def test_row_changes_carry_diffs_keyed_by_column_name() -> None:
    events, ctx = decode_all()
    c1, c2 = _row_changes(iter(events), ctx, "mem")
    assert c1.before == {"id": 1}
    assert set(c1.after) == {"k"} and c1.after["k"].text == "true"
    assert json_diffs(c1.diffs) == {
        "j": [
            {"op": "REPLACE", "path": "$.a", "value": "7"},
            {"op": "REPLACE", "path": "$.b[1]", "value": '"bb"'},
            {"op": "REMOVE", "path": "$.c", "value": None},
            {"op": "REMOVE", "path": "$.d[0]", "value": None},
            {"op": "INSERT", "path": "$.e", "value": '"ee"'},
            {"op": "INSERT", "path": "$.f[1]", "value": '"ff"'},
            {"op": "INSERT", "path": "$.g", "value": '"gg"'},
        ]
    }
    assert c2.diffs is None and c2.after["j"].text == "9" and c2.after["k"] is None


def test_mysqlbinlog_v_uses_the_fr7_grammar() -> None:
    events, ctx = decode_all()
    lines = verbose_rows(events[-1], ctx.tables[42])
    text = "\n".join(lines)
    # WL#2955 section 6: functions nest in reverse order of the diffs, runs of one operation share a call,
    # INSERT at an array index is JSON_ARRAY_INSERT; "\n###      " separates functions and diffs
    expected = (
        "###   @2=JSON_INSERT(\n"
        "###      JSON_ARRAY_INSERT(\n"
        "###      JSON_INSERT(\n"
        "###      JSON_REMOVE(\n"
        "###      JSON_REPLACE(@2, '$.a', 7,\n"
        "###      '$.b[1]', 'bb'),\n"
        "###      '$.c',\n"
        "###      '$.d[0]'),\n"
        "###      '$.e', 'ee'),\n"
        "###      '$.f[1]', 'ff'),\n"
        "###      '$.g', 'gg')"
    )
    assert expected in text
    assert lines[:3] == ["### UPDATE `test`.`t`", "### WHERE", "###   @1=1"]
    assert "###   @3='true'" in lines
