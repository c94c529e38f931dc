"""Decode MySQL binary JSON (``json_binary::parse_binary`` and ``Value::element`` / ``Value::key``).

Decoding follows offsets only, so documents updated in place (unused bytes, non-monotonic offsets) decode as
MySQL reads them; every access is bounds-checked, and a bad cell raises a typed error with its offset.
"""

from __future__ import annotations

from binlake.mysqljson.binary import (
    DOUBLE,
    INT16,
    INT32,
    INT64,
    JSON_DOCUMENT_MAX_DEPTH,
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
    JSONB_TYPE_STRING,
    JSONB_TYPE_UINT16,
    JSONB_TYPE_UINT32,
    JSONB_TYPE_UINT64,
    KEY_ENTRY_LARGE,
    KEY_ENTRY_SMALL,
    LARGE_HEADER,
    SMALL_HEADER,
    UINT16,
    UINT32,
    UINT64,
    VALUE_ENTRY_LARGE,
    VALUE_ENTRY_SMALL,
)
from binlake.mysqljson.errors import JsonCorruptError, JsonDepthError, JsonTruncatedError
from binlake.mysqljson.values import (
    MYSQL_TYPE_DATE,
    MYSQL_TYPE_DATETIME,
    MYSQL_TYPE_NEWDECIMAL,
    MYSQL_TYPE_TIME,
    MYSQL_TYPE_TIMESTAMP,
    JsonOpaque,
    decimal_from_opaque,
    temporal_from_packed,
)

_TEMPORAL_TYPES = frozenset((MYSQL_TYPE_DATE, MYSQL_TYPE_TIME, MYSQL_TYPE_DATETIME, MYSQL_TYPE_TIMESTAMP))
_LITERALS = {JSONB_NULL_LITERAL: None, JSONB_TRUE_LITERAL: True, JSONB_FALSE_LITERAL: False}
_UNBOUNDED = 1 << 62  # the declared end of the top-level value: any missing byte there is truncation


def decode(data: bytes | bytearray | memoryview) -> object:
    """Decode one JSON column cell (``json_binary::parse_binary``).

    A zero-length cell is the JSON null literal, as MySQL reads it (values inserted with IGNORE or in
    non-strict mode). Bytes after the top-level value are ignored, as MySQL does.
    """
    buf = bytes(data)
    if not buf:
        return None
    return _decode_value(buf[0], buf, 1, len(buf), _UNBOUNDED, 0)


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
