"""MySQL binary JSON: decode and encode (sql/json_binary.cc, ``json_binary::parse_binary`` / ``serialize``).

Layout: one type byte, then the value. Objects and arrays (small: 2-byte counts and offsets, large: 4-byte) hold
element count, byte size, key entries (offset, uint16 length), value entries (type byte, offset or inlined
value), then keys and values; offsets count from the byte after the type byte. Decoding follows offsets only,
so documents updated in place (unused bytes, non-monotonic offsets) decode as MySQL reads them.
"""

from __future__ import annotations

import math
import struct
from decimal import Decimal

from binlake.mysqljson.errors import JsonCorruptError, JsonDepthError, JsonEncodeError, JsonTruncatedError
from binlake.mysqljson.values import (
    MYSQL_TYPE_DATE,
    MYSQL_TYPE_DATETIME,
    MYSQL_TYPE_NEWDECIMAL,
    MYSQL_TYPE_TIME,
    MYSQL_TYPE_TIMESTAMP,
    JsonDate,
    JsonDatetime,
    JsonOpaque,
    JsonTime,
    decimal_from_opaque,
    decimal_to_opaque,
    temporal_from_packed,
)

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

_INT16_MIN, _INT16_MAX = -(1 << 15), (1 << 15) - 1
_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_UINT64_MAX = (1 << 64) - 1

_TEMPORAL_TYPES = frozenset((MYSQL_TYPE_DATE, MYSQL_TYPE_TIME, MYSQL_TYPE_DATETIME, MYSQL_TYPE_TIMESTAMP))
_LITERALS = {JSONB_NULL_LITERAL: None, JSONB_TRUE_LITERAL: True, JSONB_FALSE_LITERAL: False}


# ----------------------------------------------------------------------------------------------------- decoding


def decode(data: bytes | bytearray | memoryview) -> object:
    """Decode one JSON column cell (``json_binary::parse_binary``).

    A zero-length cell is the JSON null literal, as MySQL reads it (values inserted with IGNORE or in
    non-strict mode). Bytes after the top-level value are ignored, as MySQL does.
    """
    buf = bytes(data)
    if not buf:
        return None
    return _decode_value(buf[0], buf, 1, len(buf), _UNBOUNDED, 0)


_UNBOUNDED = 1 << 62


def _fail(end: int, declared: int, buf: bytes, what: str, pos: int) -> None:
    """Raise for ``what`` at ``pos`` needing the bytes up to ``end``, past its bound.

    Truncation when the enclosing container's declared end (``declared``) says the bytes exist but the data
    stops first; corruption when they lie outside the declared container.
    """
    if len(buf) < end <= declared:
        raise JsonTruncatedError(f"truncated JSON: {what} needs {end - pos} bytes, {max(len(buf) - pos, 0)} left", pos)
    raise JsonCorruptError(f"{what} ({end - pos} bytes) runs past the end of its array/object", pos)


def read_variable_length(buf: bytes, pos: int, limit: int, declared: int = _UNBOUNDED) -> tuple[int, int]:
    """``read_variable_length``: 7 bits per byte, low bits first, at most 5 bytes. Returns (length, new pos)."""
    length = 0
    for i in range(5):
        if pos + i >= limit:
            _fail(pos + i + 1, declared, buf, "variable-length string length", pos + i)
        byte = buf[pos + i]
        length |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            if length > 0xFFFFFFFF:
                raise JsonCorruptError(f"string length {length} exceeds 4 GiB", pos)
            return length, pos + i + 1
    raise JsonCorruptError("variable-length string length longer than 5 bytes", pos)


_SCALARS = {
    JSONB_TYPE_INT16: (INT16, "int16"),
    JSONB_TYPE_UINT16: (UINT16, "uint16"),
    JSONB_TYPE_INT32: (INT32, "int32"),
    JSONB_TYPE_UINT32: (UINT32, "uint32"),
    JSONB_TYPE_INT64: (INT64, "int64"),
    JSONB_TYPE_UINT64: (UINT64, "uint64"),
    JSONB_TYPE_DOUBLE: (DOUBLE, "double"),
}


def _decode_value(type_byte: int, buf: bytes, pos: int, limit: int, declared: int, depth: int) -> object:
    """Decode the value of ``type_byte`` at ``pos`` (``parse_value``).

    ``limit`` bounds the enclosing container; ``declared`` is its declared end, which may lie past the data.
    """
    if type_byte == JSONB_TYPE_STRING:
        length, start = read_variable_length(buf, pos, limit, declared)
        end = start + length
        if end > limit:
            _fail(end, declared, buf, "string", start)
        try:
            return buf[start:end].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonCorruptError(f"string is not valid UTF-8 ({exc.reason})", start + exc.start) from None
    if type_byte <= JSONB_TYPE_LARGE_ARRAY:
        return _decode_container(type_byte, buf, pos, limit, declared, depth + 1)
    scalar = _SCALARS.get(type_byte)
    if scalar is not None:
        packer, what = scalar
        if pos + packer.size > limit:
            _fail(pos + packer.size, declared, buf, what, pos)
        return packer.unpack_from(buf, pos)[0]
    if type_byte == JSONB_TYPE_LITERAL:
        if pos >= limit:
            _fail(pos + 1, declared, buf, "literal", pos)
        return _literal(buf[pos], pos)
    if type_byte == JSONB_TYPE_OPAQUE:
        if pos >= limit:
            _fail(pos + 1, declared, buf, "opaque field type", pos)
        field_type = buf[pos]
        length, start = read_variable_length(buf, pos + 1, limit, declared)
        end = start + length
        if end > limit:
            _fail(end, declared, buf, "opaque value", start)
        return opaque_value(field_type, buf[start:end], start)
    raise JsonCorruptError(f"unknown JSON binary type byte 0x{type_byte:02x}", pos - 1)


def _literal(byte: int, pos: int) -> object:
    try:
        return _LITERALS[byte]
    except KeyError:
        raise JsonCorruptError(f"unknown JSON literal 0x{byte:02x}", pos) from None


def opaque_value(field_type: int, data: bytes, pos: int = 0) -> object:
    """The value of an opaque field: Decimal, a temporal dataclass, or :class:`JsonOpaque`."""
    if field_type == MYSQL_TYPE_NEWDECIMAL:
        try:
            return decimal_from_opaque(data)
        except JsonCorruptError as exc:
            raise JsonCorruptError(str(exc), pos) from None
    if field_type in _TEMPORAL_TYPES:
        if len(data) != 8:
            raise JsonCorruptError(f"temporal opaque value (type {field_type}) needs 8 bytes, found {len(data)}", pos)
        return temporal_from_packed(field_type, INT64.unpack(data)[0])
    return JsonOpaque(field_type, data)


def _decode_container(type_byte: int, buf: bytes, base: int, limit: int, declared: int, depth: int) -> object:
    """``parse_array_or_object`` plus every element: header, key entries, value entries, keys, values.

    Hot path: nested containers, strings with a one-byte length, inlined int16 and literals are decoded in the
    loop; every other entry (and every entry that fails a check) goes through :func:`_entry_value`.
    """
    if depth > JSON_DOCUMENT_MAX_DEPTH:
        raise JsonDepthError(f"JSON document exceeds the maximum depth of {JSON_DOCUMENT_MAX_DEPTH} (at offset {base})")
    large = type_byte & 1
    header = LARGE_HEADER if large else SMALL_HEADER
    if base + header.size > limit:
        _fail(base + header.size, declared, buf, "array/object header", base)
    count, size = header.unpack_from(buf, base)
    if size < header.size:
        raise JsonCorruptError(f"array/object size {size} is smaller than its header", base)
    # MySQL rejects a declared size past the data; some writers declare more bytes than they wrote, so the
    # enclosing bound clamps it instead (every access is still checked).
    end = min(base + size, limit)
    own_declared = min(base + size, declared)
    pos = base + header.size
    value_entry = VALUE_ENTRY_LARGE if large else VALUE_ENTRY_SMALL
    is_object = type_byte <= JSONB_TYPE_LARGE_OBJECT
    keys: list[str] = []
    if is_object:
        key_entry = KEY_ENTRY_LARGE if large else KEY_ENTRY_SMALL
        entries_at = pos + count * key_entry.size
        values_end = entries_at + count * value_entry.size
        if values_end > end:
            _fail(values_end, own_declared, buf, f"{count} object entries", pos)
        keys = _decode_keys(key_entry.iter_unpack(buf[pos:entries_at]), buf, base, values_end, end, own_declared)
    else:
        entries_at = pos
        values_end = pos + count * value_entry.size
        if values_end > end:
            _fail(values_end, own_declared, buf, f"{count} array entries", pos)
    values: list = []
    append = values.append
    entry_size = value_entry.size
    entry_end = entries_at
    try:
        for vtype, voff in value_entry.iter_unpack(buf[entries_at:values_end]):
            entry_end += entry_size
            if vtype == JSONB_TYPE_STRING:
                start = base + voff
                if entry_end <= start < end:
                    length = buf[start]
                    stop = start + 1 + length
                    if length < 0x80 and stop <= end:
                        append(buf[start + 1 : stop].decode("utf-8"))
                        continue
            elif vtype <= JSONB_TYPE_LARGE_ARRAY:
                start = base + voff
                if entry_end <= start < end:
                    append(_decode_container(vtype, buf, start, end, own_declared, depth + 1))
                    continue
            elif vtype == JSONB_TYPE_INT16:
                voff &= 0xFFFF
                append(voff - 0x10000 if voff & 0x8000 else voff)
                continue
            elif vtype == JSONB_TYPE_LITERAL and voff & 0xFF in _LITERALS:
                append(_LITERALS[voff & 0xFF])
                continue
            append(_entry_value(vtype, voff, buf, base, end, own_declared, depth, large, entry_end))
    except UnicodeDecodeError as exc:
        raise JsonCorruptError(f"string is not valid UTF-8 ({exc.reason})", base) from None
    if is_object:
        return dict(zip(keys, values))
    return values


def _decode_keys(entries, buf: bytes, base: int, values_end: int, end: int, declared: int) -> list[str]:
    """Object keys (``Value::key``): each must lie after the entries and inside the object.

    Fast path: keys inside one ASCII region between the first key's start and the last key's end (the layout
    MySQL writes) are decoded with one call and sliced; anything else is checked and decoded key by key.
    """
    spans = list(entries)
    if not spans:
        return []
    low = base + spans[0][0]
    high = base + spans[-1][0] + spans[-1][1]
    if values_end <= low <= high <= end:
        region = buf[low:high]
        if region.isascii():
            text = region.decode("ascii")
            shift = low - base
            width = high - low
            keys = []
            for key_offset, key_length in spans:
                first = key_offset - shift
                if first < 0 or first + key_length > width:
                    break
                keys.append(text[first : first + key_length])
            else:
                return keys
    keys = []
    for key_offset, key_length in spans:
        start = base + key_offset
        if start < values_end:
            raise JsonCorruptError(f"object key offset {key_offset} points into the entries", start)
        if start + key_length > end:
            _fail(start + key_length, declared, buf, "object key", start)
        try:
            keys.append(buf[start : start + key_length].decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise JsonCorruptError(f"object key is not valid UTF-8 ({exc.reason})", start) from None
    return keys


def _entry_value(
    vtype: int, voff: int, buf: bytes, base: int, end: int, declared: int, depth: int, large: int, min_start: int
) -> object:
    """The value of one value entry (``Value::element``): inlined (literal, int16, uint16; int32/uint32 in
    large) or at an offset after the entry itself (``min_start``) and inside the container."""
    if vtype == JSONB_TYPE_INT16:
        voff &= 0xFFFF
        return voff - 0x10000 if voff & 0x8000 else voff
    if vtype == JSONB_TYPE_UINT16:
        return voff & 0xFFFF
    if vtype == JSONB_TYPE_LITERAL:
        return _literal(voff & 0xFF, base)
    if large and vtype == JSONB_TYPE_INT32:
        return voff - 0x100000000 if voff & 0x80000000 else voff
    if large and vtype == JSONB_TYPE_UINT32:
        return voff
    start = base + voff
    if start < min_start:
        raise JsonCorruptError(f"value offset {voff} points into the entries of its array/object", base)
    if start >= end:
        _fail(start + 1, declared, buf, f"value at offset {voff}", start)
    return _decode_value(vtype, buf, start, end, declared, depth)


# ----------------------------------------------------------------------------------------------------- encoding


class _TooBigForSmall(Exception):
    """Internal: a small container overflowed 16-bit offsets; serialize it again as large."""


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
        in_order = all(a < b for a, b in zip(sort_keys, sort_keys[1:]))
        if in_order and all(new is old for new, old in zip(children, value.values())):  # type: ignore[attr-defined]
            return value
        return dict(sorted(zip(keys, children), key=lambda pair: key_sort_key(pair[0])))
    if kind is list:
        children = [mysql_key_order(item) for item in value]  # type: ignore[attr-defined]
        return value if all(new is old for new, old in zip(children, value)) else children  # type: ignore[call-overload]
    return value


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
