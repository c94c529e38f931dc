"""MySQL binary JSON: the format's constants and layouts (sql/json_binary.cc), and MySQL's object key order.

Layout: one type byte, then the value. Objects and arrays (small: 2-byte counts and offsets, large: 4-byte) hold
element count, byte size, key entries (offset, uint16 length), value entries (type byte, offset or inlined
value), then keys and values; offsets count from the byte after the type byte. :mod:`.decoder` reads it,
:mod:`.encoder` writes it.
"""

from __future__ import annotations

import struct
from itertools import pairwise

JSONB_TYPE_SMALL_OBJECT = 0x0
JSONB_TYPE_LARGE_OBJECT = 0x1
JSONB_TYPE_SMALL_ARRAY = 0x2
JSONB_TYPE_LARGE_ARRAY = 0x3
JSONB_TYPE_LITERAL = 0x4
JSONB_TYPE_INT16 = 0x5
JSONB_TYPE_UINT16 = 0x6
JSONB_TYPE_INT32 = 0x7
JSONB_TYPE_UINT32 = 0x8
JSONB_TYPE_INT64 = 0x9
JSONB_TYPE_UINT64 = 0xA
JSONB_TYPE_DOUBLE = 0xB
JSONB_TYPE_STRING = 0xC
JSONB_TYPE_OPAQUE = 0xF

JSONB_NULL_LITERAL = 0x0
JSONB_TRUE_LITERAL = 0x1
JSONB_FALSE_LITERAL = 0x2

JSON_DOCUMENT_MAX_DEPTH = 100  # json_syntax_check.h
JSON_KEY_MAX_LENGTH = 0xFFFF  # key lengths are stored in 2 bytes

SMALL_OFFSET_SIZE = 2
LARGE_OFFSET_SIZE = 4
KEY_ENTRY_SIZE_SMALL = 2 + SMALL_OFFSET_SIZE
KEY_ENTRY_SIZE_LARGE = 2 + LARGE_OFFSET_SIZE
VALUE_ENTRY_SIZE_SMALL = 1 + SMALL_OFFSET_SIZE
VALUE_ENTRY_SIZE_LARGE = 1 + LARGE_OFFSET_SIZE

INT16 = struct.Struct("<h")
UINT16 = struct.Struct("<H")
INT32 = struct.Struct("<i")
UINT32 = struct.Struct("<I")
INT64 = struct.Struct("<q")
UINT64 = struct.Struct("<Q")
DOUBLE = struct.Struct("<d")
SMALL_HEADER = struct.Struct("<HH")  # element count, size in bytes
LARGE_HEADER = struct.Struct("<II")
KEY_ENTRY_SMALL = struct.Struct("<HH")  # key offset, key length
KEY_ENTRY_LARGE = struct.Struct("<IH")
VALUE_ENTRY_SMALL = struct.Struct("<BH")  # type, offset or inlined value
VALUE_ENTRY_LARGE = struct.Struct("<BI")


def key_sort_key(key: str) -> tuple[int, bytes]:
    """MySQL's object key order (``Json_key_comparator``): shorter keys first, then by UTF-8 bytes."""
    raw = key.encode("utf-8")
    return len(raw), raw


def mysql_key_order(value: object) -> object:
    """``value`` with every object's members in MySQL's key order; the very same object when already so."""
    kind = type(value)
    if kind is dict:
        keys = list(value)  # type: ignore[call-overload]
        children = [mysql_key_order(item) for item in value.values()]  # type: ignore[attr-defined]
        sort_keys = [key_sort_key(key) for key in keys]
        in_order = all(a < b for a, b in pairwise(sort_keys))
        if in_order and all(new is old for new, old in zip(children, value.values())):  # type: ignore[attr-defined]
            return value
        return dict(sorted(zip(keys, children), key=lambda pair: key_sort_key(pair[0])))
    if kind is list:
        children = [mysql_key_order(item) for item in value]  # type: ignore[attr-defined]
        return value if all(new is old for new, old in zip(children, value)) else children  # type: ignore[call-overload]
    return value
