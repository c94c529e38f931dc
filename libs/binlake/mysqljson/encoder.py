"""Encode MySQL binary JSON (``json_binary::serialize``): the bytes MySQL stores for a value.

Members in MySQL's key order, the smallest integer type, small containers unless offsets outgrow 16 bits.
"""

from __future__ import annotations

import math
import struct
from decimal import Decimal

from binlake.mysqljson.binary import (
    DOUBLE,
    INT16,
    INT32,
    INT64,
    JSON_DOCUMENT_MAX_DEPTH,
    JSON_KEY_MAX_LENGTH,
    JSONB_FALSE_LITERAL,
    JSONB_NULL_LITERAL,
    JSONB_TRUE_LITERAL,
    JSONB_TYPE_DOUBLE,
    JSONB_TYPE_INT16,
    JSONB_TYPE_INT32,
    JSONB_TYPE_INT64,
    JSONB_TYPE_LARGE_ARRAY,
    JSONB_TYPE_LARGE_OBJECT,
    JSONB_TYPE_LITERAL,
    JSONB_TYPE_OPAQUE,
    JSONB_TYPE_SMALL_ARRAY,
    JSONB_TYPE_SMALL_OBJECT,
    JSONB_TYPE_STRING,
    JSONB_TYPE_UINT64,
    KEY_ENTRY_LARGE,
    KEY_ENTRY_SMALL,
    LARGE_HEADER,
    SMALL_HEADER,
    UINT64,
    VALUE_ENTRY_LARGE,
    VALUE_ENTRY_SMALL,
)
from binlake.mysqljson.errors import JsonDepthError, JsonEncodeError
from binlake.mysqljson.values import (
    MYSQL_TYPE_NEWDECIMAL,
    JsonDate,
    JsonDatetime,
    JsonOpaque,
    JsonTime,
    decimal_to_opaque,
)

_INT16_MIN, _INT16_MAX = -(1 << 15), (1 << 15) - 1
_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_UINT64_MAX = (1 << 64) - 1


class _TooBigForSmall(Exception):
    """Internal: a small container overflowed 16-bit offsets; serialize it again as large."""


def encode(value: object) -> bytes:
    """Serialize a value as MySQL binary JSON (``json_binary::serialize``).

    Object members are written in MySQL's key order (by key length, then bytes), as MySQL always stores them.
    """
    buf = bytearray(b"\x00")
    buf[0] = _append_value(buf, value, 0, small_parent=False)
    return bytes(buf)


def _utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise JsonEncodeError(f"string holds a lone surrogate at character {exc.start}; not valid UTF-8") from None


def _append_value(buf: bytearray, value: object, depth: int, small_parent: bool) -> int:
    """Append the body of ``value`` (without its type byte) to ``buf``; return its type byte.

    A container is written in the small format first and again in the large one when it outgrows 16-bit
    offsets; inside a small parent it gives up at once instead, since the parent must be redone as large anyway
    (``serialize_json_value``'s ``small_parent``).
    """
    kind = type(value)
    if kind is str:
        raw = _utf8(value)  # type: ignore[arg-type]
        _append_variable_length(buf, len(raw))
        buf += raw
        return JSONB_TYPE_STRING
    if kind is dict or kind is list or kind is tuple:
        if depth + 1 > JSON_DOCUMENT_MAX_DEPTH:
            raise JsonDepthError(f"JSON document exceeds the maximum depth of {JSON_DOCUMENT_MAX_DEPTH}")
        start = len(buf)
        try:
            return _append_container(buf, value, depth + 1, large=False)
        except _TooBigForSmall:
            if small_parent:
                raise
            del buf[start:]
            return _append_container(buf, value, depth + 1, large=True)
    if kind is bool:
        buf.append(JSONB_TRUE_LITERAL if value else JSONB_FALSE_LITERAL)
        return JSONB_TYPE_LITERAL
    if value is None:
        buf.append(JSONB_NULL_LITERAL)
        return JSONB_TYPE_LITERAL
    if kind is int:
        type_byte, packer = _int_type(value)  # type: ignore[arg-type]
        buf += packer.pack(value)
        return type_byte
    if kind is float:
        if not math.isfinite(value):  # type: ignore[arg-type]
            raise JsonEncodeError(f"{value} is not a JSON number (MySQL stores no NaN or infinity)")
        buf += DOUBLE.pack(value)
        return JSONB_TYPE_DOUBLE
    if isinstance(value, bool):  # bool subclasses are still booleans
        return _append_value(buf, bool(value), depth, small_parent)
    if isinstance(value, int):
        return _append_value(buf, int(value), depth, small_parent)
    if isinstance(value, float):
        return _append_value(buf, float(value), depth, small_parent)
    if isinstance(value, str):
        return _append_value(buf, str(value), depth, small_parent)
    field_type, data = opaque_parts(value)
    buf.append(field_type)
    _append_variable_length(buf, len(data))
    buf += data
    return JSONB_TYPE_OPAQUE


def opaque_parts(value: object) -> tuple[int, bytes]:
    """(field type, data) of an opaque value of the value model; JsonEncodeError for anything else."""
    if isinstance(value, Decimal):
        return MYSQL_TYPE_NEWDECIMAL, decimal_to_opaque(value)
    if isinstance(value, (JsonDate, JsonDatetime, JsonTime)):
        try:
            return value.field_type, INT64.pack(value.packed())
        except struct.error:
            raise JsonEncodeError(f"{value!r} does not fit MySQL's packed temporal format") from None
    if isinstance(value, JsonOpaque):
        if not 0 <= value.field_type <= 0xFF:
            raise JsonEncodeError(f"opaque field type {value.field_type} does not fit in one byte")
        return value.field_type, bytes(value.data)
    raise JsonEncodeError(f"{type(value).__name__} value {value!r} has no MySQL JSON form")


def _int_type(value: int) -> tuple[int, struct.Struct]:
    """``Json_int``/``Json_uint`` storage: the smallest of int16/int32/int64, uint64 above INT64_MAX."""
    if _INT16_MIN <= value <= _INT16_MAX:
        return JSONB_TYPE_INT16, INT16
    if _INT32_MIN <= value <= _INT32_MAX:
        return JSONB_TYPE_INT32, INT32
    if _INT64_MIN <= value <= _INT64_MAX:
        return JSONB_TYPE_INT64, INT64
    if value <= _UINT64_MAX:
        return JSONB_TYPE_UINT64, UINT64
    raise JsonEncodeError(f"integer {value} does not fit in 64 bits (store it as a float or Decimal)")


def _append_variable_length(buf: bytearray, length: int) -> None:
    while True:
        byte = length & 0x7F
        length >>= 7
        if length:
            buf.append(byte | 0x80)
        else:
            buf.append(byte)
            return


def _pair_order(pair: tuple[bytes, object]) -> tuple[int, bytes]:
    return len(pair[0]), pair[0]


def _append_container(buf: bytearray, value, depth: int, large: bool) -> int:
    """``serialize_json_object`` / ``serialize_json_array``: header, entries, keys, then the values.

    Literals, int16 (and int32 in the large format) are inlined in their value entry (``attempt_inline_value``).
    """
    is_object = type(value) is dict
    if is_object:
        pairs = []
        for key, item in value.items():
            if type(key) is not str:
                raise JsonEncodeError(f"object key {key!r} is not a string")
            pairs.append((_utf8(key), item))
        pairs.sort(key=_pair_order)
        keys = [key for key, _ in pairs]
        values = [item for _, item in pairs]
    else:
        keys = []
        values = list(value)
    count = len(values)
    start = len(buf)
    if large:
        header, key_entry, value_entry, limit = LARGE_HEADER, KEY_ENTRY_LARGE, VALUE_ENTRY_LARGE, 0xFFFFFFFF
    else:
        header, key_entry, value_entry, limit = SMALL_HEADER, KEY_ENTRY_SMALL, VALUE_ENTRY_SMALL, 0xFFFF
    key_entries_at = start + header.size
    value_entries_at = key_entries_at + key_entry.size * len(keys)
    data_at = value_entries_at + value_entry.size * count
    if count > limit or data_at - start > limit:
        if large:
            raise JsonEncodeError("JSON array/object too large")
        raise _TooBigForSmall
    buf += bytes(data_at - start)
    if keys:
        entries = bytearray()
        offset = data_at - start
        for raw in keys:
            length = len(raw)
            if length > JSON_KEY_MAX_LENGTH:
                raise JsonEncodeError(f"object key of {length} bytes exceeds {JSON_KEY_MAX_LENGTH} bytes")
            if offset > limit:
                raise _TooBigForSmall
            entries += key_entry.pack(offset, length)
            offset += length
        buf[key_entries_at:value_entries_at] = entries
        buf += b"".join(keys)
    pack_entry = value_entry.pack_into
    entry_size = value_entry.size
    entry_at = value_entries_at
    for item in values:
        kind = type(item)
        if kind is int and _INT16_MIN <= item <= _INT16_MAX:
            pack_entry(buf, entry_at, JSONB_TYPE_INT16, item & 0xFFFF)
        elif item is None:
            pack_entry(buf, entry_at, JSONB_TYPE_LITERAL, JSONB_NULL_LITERAL)
        elif kind is bool:
            pack_entry(buf, entry_at, JSONB_TYPE_LITERAL, JSONB_TRUE_LITERAL if item else JSONB_FALSE_LITERAL)
        elif large and kind is int and _INT32_MIN <= item <= _INT32_MAX:
            pack_entry(buf, entry_at, JSONB_TYPE_INT32, item & 0xFFFFFFFF)
        else:
            offset = len(buf) - start
            if offset > limit:
                raise _TooBigForSmall
            if kind is str:
                raw = _utf8(item)
                length = len(raw)
                if length < 0x80:
                    buf.append(length)
                else:
                    _append_variable_length(buf, length)
                buf += raw
                pack_entry(buf, entry_at, JSONB_TYPE_STRING, offset)
            else:
                pack_entry(buf, entry_at, _append_value(buf, item, depth, small_parent=not large), offset)
        entry_at += entry_size
    size = len(buf) - start
    if size > limit:
        if large:
            raise JsonEncodeError("JSON document exceeds 4 GiB")
        raise _TooBigForSmall
    header.pack_into(buf, start, count, size)
    if is_object:
        return JSONB_TYPE_LARGE_OBJECT if large else JSONB_TYPE_SMALL_OBJECT
    return JSONB_TYPE_LARGE_ARRAY if large else JSONB_TYPE_SMALL_ARRAY
