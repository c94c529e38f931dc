"""Binary JSON against bytes computed by hand from the format (sql/json_binary.cc, WL#10570's worked example)."""

from __future__ import annotations

import struct
from decimal import Decimal

import pytest

from binlake.mysqljson import (
    JsonCorruptError,
    JsonDate,
    JsonDatetime,
    JsonDepthError,
    JsonEncodeError,
    JsonOpaque,
    JsonTime,
    JsonTruncatedError,
    decode,
    decode_text,
    encode,
    to_text,
)

# WL#10570 "Extending partial update support to JSON_REMOVE": {"a": "x", "b": "y", "c": "z"} byte by byte.
WL10570_DOC = bytes.fromhex(
    "00"
    "0300"
    "2200"  # small object, 3 members, 34 bytes
    "19000100"
    "1a000100"
    "1b000100"  # key entries: offset, length
    "0c1c00"
    "0c1e00"
    "0c2000"  # value entries: string at 0x1c, 0x1e, 0x20
    "616263"  # keys a b c
    "0178"
    "0179"
    "017a"  # values "x" "y" "z"
)
# The same document after MySQL removed "b" in place: entries shifted, 7 stale bytes left behind.
WL10570_AFTER_REMOVE = bytes.fromhex(
    "00"
    "0200"
    "2200"
    "19000100"
    "1b000100"
    "0c1c00"
    "0c2000"
    "000c1e000c2000"  # (free)
    "616263"
    "0178"
    "0179"
    "017a"
)


def test_encoder_writes_the_worked_example_of_wl10570() -> None:
    assert encode({"c": "z", "a": "x", "b": "y"}) == WL10570_DOC
    assert decode(WL10570_DOC) == {"a": "x", "b": "y", "c": "z"}


def test_document_updated_in_place_decodes_by_offsets() -> None:
    value = decode(WL10570_AFTER_REMOVE)
    assert value == {"a": "x", "c": "z"}
    assert to_text(value) == '{"a": "x", "c": "z"}'


def test_scalars_have_the_smallest_type_mysql_uses() -> None:
    assert encode(None) == bytes.fromhex("0400")
    assert encode(True) == bytes.fromhex("0401")
    assert encode(False) == bytes.fromhex("0402")
    assert encode(32767) == bytes.fromhex("05ff7f")
    assert encode(-32768) == bytes.fromhex("050080")
    assert encode(32768) == bytes.fromhex("0700800000")
    assert encode(2**31) == bytes.fromhex("090000008000000000")
    assert encode(2**63) == bytes.fromhex("0a0000000000000080")
    assert encode(1.5) == bytes.fromhex("0b000000000000f83f")
    assert encode("") == bytes.fromhex("0c00")
    assert encode("x" * 127)[:2] == bytes.fromhex("0c7f")
    assert encode("x" * 128)[:3] == bytes.fromhex("0c8001")
    with pytest.raises(JsonEncodeError):
        encode(2**64)


def test_unsigned_types_decode() -> None:
    assert decode(bytes.fromhex("06ffff")) == 65535
    assert decode(bytes.fromhex("08ffffffff")) == 2**32 - 1
    assert decode(bytes.fromhex("0affffffffffffffff")) == 2**64 - 1


def test_large_object_layout() -> None:
    """Above 64 KiB MySQL switches to 4-byte counts, sizes and offsets (key lengths stay 2 bytes)."""
    text = "x" * 70000
    raw = encode({"a": text})
    size = 4 + 4 + 6 + 5 + 1 + 3 + 70000
    expected_head = (
        b"\x01"
        + struct.pack("<II", 1, size)
        + struct.pack("<IH", 19, 1)
        + b"\x0c"
        + struct.pack("<I", 20)
        + b"a"
        + bytes((0xF0, 0xA2, 0x04))  # 70000 in 7-bit groups
    )
    assert raw[: len(expected_head)] == expected_head
    assert len(raw) == 1 + size
    assert decode(raw) == {"a": text}


def test_large_array_inlines_int32_but_small_does_not() -> None:
    small = encode([100000])
    assert small == bytes.fromhex("0201000b00070700a0860100")  # 4 + 3 + 4 bytes
    big = encode(["x" * 70000, 100000, -5])
    entries = big[9 : 9 + 15]
    assert entries[5:10] == b"\x07" + struct.pack("<i", 100000)
    assert entries[10:15] == b"\x05" + struct.pack("<hxx", -5)
    assert decode(big) == ["x" * 70000, 100000, -5]


def test_empty_cell_is_json_null_and_trailing_bytes_are_ignored() -> None:
    assert decode(b"") is None
    assert decode_text(b"") == "null"
    assert decode(bytes.fromhex("0401deadbeef")) is True


def _nested_arrays(depth: int) -> bytes:
    """Hand-built [[...[]...]]: each level a small array holding one array value at offset 7."""
    body = bytes.fromhex("00000400")  # innermost empty array body
    for _ in range(depth - 1):
        size = 4 + 3 + len(body)
        body = struct.pack("<HH", 1, size) + b"\x02" + struct.pack("<H", 7) + body
    return b"\x02" + body


def test_depth_limit_is_mysqls_100() -> None:
    assert to_text(decode(_nested_arrays(100))) == "[" * 100 + "]" * 100
    with pytest.raises(JsonDepthError):
        decode(_nested_arrays(101))
    deep: list = []
    for _ in range(100):
        deep = [deep]
    with pytest.raises(JsonDepthError):
        encode(deep)


def test_decimal_opaque_layout() -> None:
    # DECIMAL(11,1) 1234567890.5: 1 leading digit (1 byte), one 9-digit word, 1 fraction digit (1 byte).
    assert encode(Decimal("1234567890.5")) == bytes.fromhex("0ff6080b01810dfb38d205")
    assert encode(Decimal("-1234567890.5")) == bytes.fromhex("0ff6080b017ef204c72dfa")
    assert decode(bytes.fromhex("0ff6080b017ef204c72dfa")) == Decimal("-1234567890.5")
    assert to_text(Decimal("1.50")) == "1.50"
    with pytest.raises(JsonCorruptError):
        decode(bytes.fromhex("0ff6030b0181"))  # DECIMAL(11,1) needs 6 bytes


def test_temporal_opaques_render_as_mysql() -> None:
    assert to_text(decode(encode(JsonDate(2024, 2, 29)))) == '"2024-02-29"'
    assert to_text(JsonDatetime(2015, 1, 15, 23, 24, 25, 120000)) == '"2015-01-15 23:24:25.120000"'
    stamp = JsonDatetime(1999, 12, 31, 23, 59, 59, 0, field_type=7)
    assert decode(encode(stamp)) == stamp
    assert to_text(stamp) == '"1999-12-31 23:59:59.000000"'
    negative = JsonTime(838, 59, 59, 0, negative=True)
    assert decode(encode(negative)) == negative
    assert to_text(negative) == '"-838:59:59.000000"'
    with pytest.raises(JsonCorruptError):
        decode(bytes.fromhex("0f0c0400000000"))  # DATETIME needs 8 bytes


def test_other_opaques_render_as_base64_with_their_type() -> None:
    assert to_text(JsonOpaque(255, b"\x00\x01")) == '"base64:type255:AAE="'
    assert to_text(decode(bytes.fromhex("0ffd03616263"))) == '"abc"'  # VAR_STRING prints as a plain string


@pytest.mark.parametrize(
    "raw, error",
    [
        ("0d", JsonCorruptError),  # unknown type byte
        ("0403", JsonCorruptError),  # unknown literal
        ("00", JsonTruncatedError),  # object header missing
        ("0001000b00", JsonTruncatedError),  # one entry announced, none present
        ("0c05616263", JsonTruncatedError),  # string longer than the data
        ("0c8080808080", JsonCorruptError),  # 6-byte variable length
        ("020100070004ff00", JsonCorruptError),  # value entry type 0x04 inlined literal 0xff
        ("02010007000c0000", JsonCorruptError),  # value offset 0 points into the header
        ("0001000c00ffff010004010061", JsonCorruptError),  # key offset beyond the object
        ("0001000e000b0001000c0c00ff0162", JsonCorruptError),  # key is not UTF-8
    ],
)
def test_bad_bytes_raise_typed_errors(raw: str, error: type) -> None:
    with pytest.raises(error):
        decode(bytes.fromhex(raw))


@pytest.mark.parametrize("value", [float("nan"), float("inf"), {1: 2}, "\ud800", {"a": object()}, JsonTime(2**40)])
def test_values_without_a_mysql_form_raise_encode_errors(value: object) -> None:
    with pytest.raises(JsonEncodeError):
        encode(value)


def test_large_values_nested_deep_inside_small_parents() -> None:
    """Every level must switch to the large format; each is redone once, not once per descendant."""
    value: object = "x" * 70000
    for _ in range(99):
        value = [value]
    raw = encode(value)
    assert raw[0] == 0x03 and len(raw) == 1 + 70000 + 3 + 99 * (4 + 4 + 5)
    assert decode(raw) == value
