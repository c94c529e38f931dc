"""Diff vectors in the WL#2955 F3 binlog format, against bytes built by hand from the specification."""

from __future__ import annotations

import pytest

from binlake.mysqljson import (
    DiffOp,
    JsonDiff,
    JsonDiffCorruptError,
    encode,
    full_update_size,
    parse_path,
    partial_update_size,
    read_diffs,
    use_partial_format,
    write_diffs,
)


def diff(op: DiffOp, path: str, value: object = None) -> JsonDiff:
    return JsonDiff(op, parse_path(path), value)


def test_each_operation_layout() -> None:
    # operation byte, net_field_length(path length), path, then (not for REMOVE) length and binary value
    raw = bytes.fromhex(
        "00"
        "03"
        "242e61"
        "03"
        "050700"  # REPLACE $.a 7
        "02"
        "03"
        "242e63"  # REMOVE $.c
        "01"
        "04"
        "245b315d"
        "04"
        "0c026666"  # INSERT $[1] "ff"
    )
    diffs = read_diffs(raw)
    assert diffs == (diff(DiffOp.REPLACE, "$.a", 7), diff(DiffOp.REMOVE, "$.c"), diff(DiffOp.INSERT, "$[1]", "ff"))
    assert write_diffs(diffs) == raw


def test_empty_vector_is_no_diffs() -> None:
    assert read_diffs(b"") == ()
    assert write_diffs(()) == b""


def test_packed_lengths_of_251_bytes_and_more() -> None:
    name = "k" * 249
    value = "v" * 300
    raw = write_diffs([diff(DiffOp.REPLACE, f"$.{name}", value)])
    assert raw[:4] == bytes.fromhex("00fcfb00")  # 251-byte path: 0xfc + 2 bytes
    value_bytes = encode(value)
    assert raw[4 + 251 : 4 + 251 + 3] == b"\xfc" + len(value_bytes).to_bytes(2, "little")
    assert read_diffs(raw)[0].value == value


@pytest.mark.parametrize(
    "raw",
    [
        "030124",  # operation 3 does not exist
        "00fb",  # NULL packed length
        "00fc01",  # 2-byte packed length cut short
        "0005242e61",  # path longer than the data
        "02022478",  # "$x" is not a path
        "0003242e61050500",  # value longer than the data
        "0003242e61010d",  # value of unknown type
        "0003242e61",  # REPLACE without its value
    ],
)
def test_corrupt_vectors_raise_with_offset(raw: str) -> None:
    with pytest.raises(JsonDiffCorruptError) as info:
        read_diffs(bytes.fromhex(raw))
    assert info.value.offset is not None


def test_size_rule_def1_def2() -> None:
    diffs = [diff(DiffOp.REPLACE, "$.age", 26)]
    # Def1: 4-byte length + op (1) + path length (1) + "$.age" (5) + value length (1) + int16 value (3)
    assert partial_update_size(diffs) == 4 + 1 + 1 + 5 + 1 + 3
    assert full_update_size(52) == 4 + 52
    assert use_partial_format(diffs, 52)  # FR11: partial is smaller
    big = [diff(DiffOp.REPLACE, "$.a", "x" * 100)]
    assert not use_partial_format(big, 60)  # FR12: partial is not smaller, write the full document
    assert not use_partial_format(None, 1000)  # no diffs could be collected


def test_diff_binary_length_is_the_written_length() -> None:
    for case in [
        diff(DiffOp.REMOVE, "$.a"),
        diff(DiffOp.REPLACE, '$."a b"[3]', {"k": [1, 2.5]}),
        diff(DiffOp.INSERT, "$.x", "y" * 300),
    ]:
        assert partial_update_size([case]) == 4 + len(write_diffs([case]))
