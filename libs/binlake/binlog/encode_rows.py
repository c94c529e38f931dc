"""Encoders of TABLE_MAP and rows events (WRITE/UPDATE/DELETE v1/v2, PARTIAL_UPDATE_ROWS) and of row values.

Row values are encoded per column by functions chosen once per TABLE_MAP (:class:`RowEncoder`), mirroring the
decoders of :mod:`binlake.binlog.columns` (``Field_*::pack`` in mysql-server ``sql/field.cc``; DECIMAL as
``decimal2bin``; TIME2/DATETIME2/TIMESTAMP2 as ``my_*_packed_to_binary``). A row image is the null bitmap of
the present columns then the present non-NULL values (``pack_row``, sql/rpl_record.cc). A PARTIAL_UPDATE_ROWS
row adds the shared-image (``value_options`` and the partial-columns bitmap) between its images (WL#2955 F2).
"""

from __future__ import annotations

import struct
from decimal import Context, Decimal
from typing import Any, Callable, Optional

from binlake.binlog import constants as C
from binlake.binlog import events as ev
from binlake.binlog.columns import string_real_type
from binlake.binlog.encode_base import U16, BinlogWriteError, packed_length
from binlake.binlog.table import Column, TableLayout, build_layout
from binlake.binlog.values import MysqlDate, MysqlDateTime, MysqlTime, MysqlTimestamp, collation_codec

Encoder = Callable[[Any], bytes]

_I8, _U8 = struct.Struct("<b"), struct.Struct("<B")
_I16, _U16 = struct.Struct("<h"), struct.Struct("<H")
_I32, _U32 = struct.Struct("<i"), struct.Struct("<I")
_I64, _U64 = struct.Struct("<q"), struct.Struct("<Q")
_F32, _F64 = struct.Struct("<f"), struct.Struct("<d")
_U32BE = struct.Struct(">I")

# TABLE_MAP column metadata sizes (``Field::do_save_field_metadata``); other types store none.
_META_ONE_BYTE = frozenset(
    {
        C.MYSQL_TYPE_FLOAT,
        C.MYSQL_TYPE_DOUBLE,
        C.MYSQL_TYPE_BLOB,
        C.MYSQL_TYPE_TINY_BLOB,
        C.MYSQL_TYPE_MEDIUM_BLOB,
        C.MYSQL_TYPE_LONG_BLOB,
        C.MYSQL_TYPE_GEOMETRY,
        C.MYSQL_TYPE_JSON,
        C.MYSQL_TYPE_TIMESTAMP2,
        C.MYSQL_TYPE_DATETIME2,
        C.MYSQL_TYPE_TIME2,
        C.MYSQL_TYPE_VECTOR,
    }
)
_META_TWO_BYTES_LE = frozenset({C.MYSQL_TYPE_VARCHAR, C.MYSQL_TYPE_VAR_STRING, C.MYSQL_TYPE_BIT})
_META_TWO_BYTES_BE = frozenset({C.MYSQL_TYPE_NEWDECIMAL, C.MYSQL_TYPE_STRING, C.MYSQL_TYPE_ENUM, C.MYSQL_TYPE_SET})

# Table_map_event::Optional_metadata_field_type
SIGNEDNESS, DEFAULT_CHARSET, COLUMN_CHARSET, COLUMN_NAME = 1, 2, 3, 4
SET_STR_VALUE, ENUM_STR_VALUE, GEOMETRY_TYPE, SIMPLE_PRIMARY_KEY = 5, 6, 7, 8
PRIMARY_KEY_WITH_PREFIX, ENUM_AND_SET_DEFAULT_CHARSET, ENUM_AND_SET_COLUMN_CHARSET = 9, 10, 11
COLUMN_VISIBILITY, VECTOR_DIMENSIONALITY = 12, 13


# --- TABLE_MAP -------------------------------------------------------------------------------------------------


def _column_metadata(type_code: int, meta: int) -> bytes:
    if type_code in _META_ONE_BYTE:
        return _U8.pack(meta)
    if type_code in _META_TWO_BYTES_LE:
        return _U16.pack(meta)
    if type_code in _META_TWO_BYTES_BE:
        return bytes((meta >> 8, meta & 0xFF))
    return b""


def _name(text: str, what: str) -> bytes:
    raw = text.encode("utf-8", "surrogateescape")
    if len(raw) > 255:
        raise BinlogWriteError(f"{what} is longer than 255 bytes", found=text)
    return _U8.pack(len(raw)) + raw + b"\0"


def _table_id(table_id: int, size: int) -> bytes:
    if table_id >> (8 * size):
        raise BinlogWriteError(f"table id does not fit in {size} bytes", found=table_id)
    return table_id.to_bytes(size, "little")


def encode_table_map(e: ev.TableMapEvent) -> bytes:
    """``Table_map_event::write_data_header`` + ``write_data_body`` (optional metadata as stored, or built)."""
    metadata = b"".join(_column_metadata(t, m) for t, m in zip(e.column_types, e.column_metadata))
    parts = [
        _table_id(e.table_id, e.table_id_size),
        U16.pack(e.flags),
        _name(e.db, "database name"),
        _name(e.table, "table name"),
        packed_length(len(e.column_types)),
        bytes(e.column_types),
        packed_length(len(metadata)),
        metadata,
        e.null_bits,
    ]
    fields = e.optional_metadata or optional_metadata_fields(e)
    for field_type, value in fields:
        parts.append(_U8.pack(field_type) + packed_length(len(value)) + value)
    return b"".join(parts)


def _bits_msb_first(flags: tuple[bool, ...]) -> bytes:
    out = bytearray((len(flags) + 7) // 8)
    for i, flag in enumerate(flags):
        if flag:
            out[i >> 3] |= 0x80 >> (i & 7)
    return bytes(out)


def _packed_list(values) -> bytes:
    return b"".join(packed_length(v) for v in values)


def _str_list(values: tuple[str, ...]) -> bytes:
    parts = [packed_length(len(values))]
    for v in values:
        raw = v.encode("utf-8", "surrogateescape")
        parts.append(packed_length(len(raw)) + raw)
    return b"".join(parts)


def _default_charset(dc: ev.DefaultCharset) -> bytes:
    return packed_length(dc.default_collation) + b"".join(packed_length(i) + packed_length(c) for i, c in dc.overrides)


def optional_metadata_fields(e: ev.TableMapEvent) -> tuple[tuple[int, bytes], ...]:
    """The TLV fields of TABLE_MAP optional metadata built from its parsed fields, in the order MySQL 8.0 and
    MariaDB write them (``Table_map_log_event::init_metadata_fields``; the ENUM/SET charset right after the
    column names, as the real 8.0.28 and MariaDB 10.5 binlogs in the fixtures show)."""
    out: list[tuple[int, bytes]] = []
    if e.signedness is not None:
        out.append((SIGNEDNESS, _bits_msb_first(e.signedness)))
    if e.default_charset is not None:
        out.append((DEFAULT_CHARSET, _default_charset(e.default_charset)))
    if e.column_charsets is not None:
        out.append((COLUMN_CHARSET, _packed_list(e.column_charsets)))
    if e.column_names is not None:
        out.append(
            (
                COLUMN_NAME,
                b"".join(
                    packed_length(len(r)) + r for r in (n.encode("utf-8", "surrogateescape") for n in e.column_names)
                ),
            )
        )
    if e.enum_and_set_default_charset is not None:
        out.append((ENUM_AND_SET_DEFAULT_CHARSET, _default_charset(e.enum_and_set_default_charset)))
    if e.enum_and_set_column_charsets is not None:
        out.append((ENUM_AND_SET_COLUMN_CHARSET, _packed_list(e.enum_and_set_column_charsets)))
    if e.set_str_values is not None:
        out.append((SET_STR_VALUE, b"".join(_str_list(v) for v in e.set_str_values)))
    if e.enum_str_values is not None:
        out.append((ENUM_STR_VALUE, b"".join(_str_list(v) for v in e.enum_str_values)))
    if e.geometry_types is not None:
        out.append((GEOMETRY_TYPE, _packed_list(e.geometry_types)))
    if e.simple_primary_key is not None:
        out.append((SIMPLE_PRIMARY_KEY, _packed_list(e.simple_primary_key)))
    if e.primary_key_with_prefix is not None:
        out.append(
            (
                PRIMARY_KEY_WITH_PREFIX,
                b"".join(packed_length(i) + packed_length(p) for i, p in e.primary_key_with_prefix),
            )
        )
    if e.column_visibility is not None:
        out.append((COLUMN_VISIBILITY, _bits_msb_first(e.column_visibility)))
    if e.vector_dimensionality is not None:
        out.append((VECTOR_DIMENSIONALITY, _packed_list(e.vector_dimensionality)))
    return tuple(out)


# --- column values ---------------------------------------------------------------------------------------------


def _int_encoder(packer: struct.Struct, unsigned_packer: struct.Struct) -> Encoder:
    pack, upack = packer.pack, unsigned_packer.pack

    def enc(v: int) -> bytes:
        return pack(v) if v < 0 else upack(v)

    return enc


def _int24(v: int) -> bytes:
    return (v & 0xFFFFFF).to_bytes(3, "little")


_INTEGERS: dict[int, Encoder] = {
    C.MYSQL_TYPE_TINY: _int_encoder(_I8, _U8),
    C.MYSQL_TYPE_SHORT: _int_encoder(_I16, _U16),
    C.MYSQL_TYPE_INT24: _int24,
    C.MYSQL_TYPE_LONG: _int_encoder(_I32, _U32),
    C.MYSQL_TYPE_LONGLONG: _int_encoder(_I64, _U64),
}
_DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
_DECIMAL_CONTEXT = Context(prec=200)  # DECIMAL(65, 30) needs more than the default 28 digits


def make_decimal_encoder(precision: int, scale: int) -> Encoder:
    """``decimal2bin``: the inverse of :func:`binlake.binlog.columns.make_decimal`."""
    intg = precision - scale
    int_groups, lead_digits = divmod(intg, 9)
    frac_groups, trail_digits = divmod(scale, 9)
    size = _DIG2BYTES[lead_digits] + 4 * int_groups + 4 * frac_groups + _DIG2BYTES[trail_digits]
    quantum = Decimal(1).scaleb(-scale)
    scale_pow, int_limit = 10**scale, 10**intg
    int_divisors = tuple(10 ** (9 * k) for k in range(int_groups - 1, -1, -1))
    frac_divisors = tuple(10 ** (scale - 9 * (k + 1)) for k in range(frac_groups))
    lead_divisor, trail_shift, trail_mod = 10 ** (9 * int_groups), 8 * _DIG2BYTES[trail_digits], 10**trail_digits
    mask = (1 << (8 * size)) - 1
    sign_bit = 1 << (8 * size - 1)

    def enc(v: Decimal) -> bytes:
        if not isinstance(v, Decimal):
            v = Decimal(v)
        n = int(_DECIMAL_CONTEXT.scaleb(_DECIMAL_CONTEXT.quantize(v.copy_abs(), quantum), scale))
        ipart, fpart = divmod(n, scale_pow)
        if ipart >= int_limit:
            raise BinlogWriteError(f"DECIMAL({precision},{scale}) can not hold the value", found=str(v))
        value = ipart // lead_divisor  # the leading partial group (0 bits when absent)
        for d in int_divisors:
            value = (value << 32) | (ipart // d % 1_000_000_000)
        for d in frac_divisors:
            value = (value << 32) | (fpart // d % 1_000_000_000)
        if trail_digits:
            value = (value << trail_shift) | (fpart % trail_mod)
        if v.is_signed():
            value ^= mask
        return (value ^ sign_bit).to_bytes(size, "big")

    return enc


def _year(v: int) -> bytes:
    return _U8.pack(v - 1900 if v else 0)


def _date(v: MysqlDate) -> bytes:
    return (v.day | v.month << 5 | v.year << 9).to_bytes(3, "little")


def _frac_encoder(fsp: int) -> Callable[[int], bytes]:
    if fsp <= 0:
        return lambda micro: b""
    if fsp <= 2:
        return lambda micro: _U8.pack(micro // 10000)
    if fsp <= 4:
        return lambda micro: (micro // 100).to_bytes(2, "big")
    return lambda micro: micro.to_bytes(3, "big")


def make_timestamp2_encoder(fsp: int) -> Encoder:
    frac = _frac_encoder(fsp)

    def enc(v: MysqlTimestamp) -> bytes:
        return _U32BE.pack(v.seconds) + frac(v.microsecond)

    return enc


def make_datetime2_encoder(fsp: int) -> Encoder:
    frac = _frac_encoder(fsp)

    def enc(v: MysqlDateTime) -> bytes:
        ymd = ((v.year * 13 + v.month) << 5) | v.day
        hms = (v.hour << 12) | (v.minute << 6) | v.second
        return (((ymd << 17) | hms) + 0x8000000000).to_bytes(5, "big") + frac(v.microsecond)

    return enc


def make_time2_encoder(fsp: int) -> Encoder:
    """``my_time_packed_to_binary``: the packed value (hms << 24 | microseconds, negated for negative times)."""

    def packed(v: MysqlTime) -> int:
        p = (((v.hour << 12) | (v.minute << 6) | v.second) << 24) + v.microsecond
        return -p if v.negative else p

    if fsp >= 5:
        return lambda v: (packed(v) + 0x800000000000).to_bytes(6, "big")
    if fsp == 0:
        return lambda v: ((packed(v) >> 24) + 0x800000).to_bytes(3, "big")
    divisor, nbytes = (10000, 1) if fsp <= 2 else (100, 2)

    def enc(v: MysqlTime) -> bytes:
        p = packed(v)
        frac = abs(p) % (1 << 24) // divisor
        if p < 0:
            frac = -frac
        return ((p >> 24) + 0x800000).to_bytes(3, "big") + (frac & ((1 << (8 * nbytes)) - 1)).to_bytes(nbytes, "big")

    return enc


def _time(v: MysqlTime) -> bytes:
    n = v.hour * 10000 + v.minute * 100 + v.second
    return (-n if v.negative else n).to_bytes(3, "little", signed=True)


def _datetime(v: MysqlDateTime) -> bytes:
    return _U64.pack(((v.year * 100 + v.month) * 100 + v.day) * 1_000_000 + (v.hour * 100 + v.minute) * 100 + v.second)


def _timestamp(v: MysqlTimestamp) -> bytes:
    return _U32.pack(v.seconds)


_LATIN1_UNDEFINED = {chr(b): b for b in (0x81, 0x8D, 0x8F, 0x90, 0x9D)}


def _text_encoder(codec: Optional[str]) -> Callable[[Any], bytes]:
    """str -> bytes with the column's charset (the inverse of ``binlake.binlog.values.decode_text``)."""
    if codec is None:
        codec = "utf-8"

    def enc(v: Any) -> bytes:
        if isinstance(v, (bytes, bytearray, memoryview)):
            return bytes(v)
        if codec == "cp1252":
            try:
                return v.encode("cp1252")
            except UnicodeEncodeError:
                return b"".join(
                    bytes((_LATIN1_UNDEFINED[ch],))
                    if ch in _LATIN1_UNDEFINED
                    else ch.encode("cp1252", "surrogateescape")
                    for ch in v
                )
        try:
            return v.encode(codec)
        except UnicodeEncodeError:
            return v.encode(codec if codec.startswith("utf-8") else "latin-1", "surrogateescape")

    return enc


def make_string_encoder(max_len: int, codec: Optional[str], strip_binary_pad: bool = False) -> Encoder:
    """CHAR/VARCHAR/BINARY/VARBINARY. ``strip_binary_pad``: BINARY(n) is stored without its trailing 0x00 pad
    (``Field_string::pack``; the decoder pads it back to n bytes)."""
    text = _text_encoder(codec)
    if strip_binary_pad:
        plain = text
        text = lambda v: plain(v).rstrip(b"\0")  # noqa: E731
    if max_len < 256:

        def enc(v: Any) -> bytes:
            raw = text(v)
            if len(raw) > 255:
                raise BinlogWriteError("string longer than its column allows", expected="<= 255 bytes", found=len(raw))
            return _U8.pack(len(raw)) + raw
    else:

        def enc(v: Any) -> bytes:
            raw = text(v)
            if len(raw) > 65535:
                raise BinlogWriteError(
                    "string longer than its column allows", expected="<= 65535 bytes", found=len(raw)
                )
            return _U16.pack(len(raw)) + raw

    return enc


def _json_bytes(v: Any) -> bytes:
    """The binary JSON of a JSON column value: a decoded cell (``.raw``), raw bytes, or a JSON value."""
    raw = getattr(v, "raw", None)
    if raw is not None:
        return raw
    if isinstance(v, (bytes, bytearray)):
        return bytes(v)
    from binlake.mysqljson import encode

    return encode(v)


def make_blob_encoder(length_bytes: int, to_bytes: Callable[[Any], bytes]) -> Encoder:
    limit = 1 << (8 * length_bytes)

    def enc(v: Any) -> bytes:
        raw = to_bytes(v)
        if len(raw) >= limit:
            raise BinlogWriteError(
                "value longer than its BLOB column's length field allows", expected=f"< {limit} bytes", found=len(raw)
            )
        return len(raw).to_bytes(length_bytes, "little") + raw

    return enc


def make_bit_encoder(meta: int) -> Encoder:
    nbytes = (meta >> 8) + (1 if meta & 0xFF else 0)
    return lambda v: v.to_bytes(nbytes, "big")


def make_enum_encoder(pack_length: int, values: Optional[tuple[str, ...]]) -> Encoder:
    index = {name: i + 1 for i, name in enumerate(values or ())}
    index[""] = 0

    def enc(v: Any) -> bytes:
        n = v if isinstance(v, int) else index.get(v)
        if n is None:
            raise BinlogWriteError("value is not a member of the ENUM", expected=values, found=v)
        return n.to_bytes(pack_length, "little")

    return enc


def make_set_encoder(pack_length: int, values: Optional[tuple[str, ...]]) -> Encoder:
    bit = {name: 1 << i for i, name in enumerate(values or ())}

    def enc(v: Any) -> bytes:
        if isinstance(v, int):
            return v.to_bytes(pack_length, "little")
        members = v.split(",") if isinstance(v, str) else v
        mask = 0
        for m in members:
            if m:
                if m not in bit:
                    raise BinlogWriteError("value is not a member of the SET", expected=values, found=m)
                mask |= bit[m]
        return mask.to_bytes(pack_length, "little")

    return enc


def _vector(v: Any) -> bytes:
    return struct.pack(f"<{len(v)}f", *v)


def column_encoder(col: Column) -> Encoder:
    """One encoder for a column of a :class:`~binlake.binlog.table.TableLayout` (inverse of its decoder)."""
    t, meta = col.type_code, col.metadata
    enc = _INTEGERS.get(t)
    if enc is not None:
        return enc
    codec = collation_codec(col.collation_id) if col.real_type in C.CHARACTER_TYPES else None
    if t == C.MYSQL_TYPE_FLOAT:
        return _F32.pack
    if t == C.MYSQL_TYPE_DOUBLE:
        return _F64.pack
    if t == C.MYSQL_TYPE_NEWDECIMAL:
        return make_decimal_encoder(meta >> 8, meta & 0xFF)
    if t == C.MYSQL_TYPE_YEAR:
        return _year
    if t in (C.MYSQL_TYPE_DATE, C.MYSQL_TYPE_NEWDATE):
        return _date
    if t == C.MYSQL_TYPE_TIME:
        return _time
    if t == C.MYSQL_TYPE_DATETIME:
        return _datetime
    if t == C.MYSQL_TYPE_TIMESTAMP:
        return _timestamp
    if t == C.MYSQL_TYPE_TIMESTAMP2:
        return make_timestamp2_encoder(meta)
    if t == C.MYSQL_TYPE_DATETIME2:
        return make_datetime2_encoder(meta)
    if t == C.MYSQL_TYPE_TIME2:
        return make_time2_encoder(meta)
    if t in (C.MYSQL_TYPE_VARCHAR, C.MYSQL_TYPE_VAR_STRING):
        return make_string_encoder(meta, codec)
    if t == C.MYSQL_TYPE_STRING:
        real, length = string_real_type(meta)
        if real == C.MYSQL_TYPE_ENUM:
            return make_enum_encoder(length, col.enum_values)
        if real == C.MYSQL_TYPE_SET:
            return make_set_encoder(length, col.set_values)
        return make_string_encoder(length, codec, strip_binary_pad=codec is None)
    if t == C.MYSQL_TYPE_ENUM:
        return make_enum_encoder(meta & 0xFF, col.enum_values)
    if t == C.MYSQL_TYPE_SET:
        return make_set_encoder(meta & 0xFF, col.set_values)
    if t == C.MYSQL_TYPE_BIT:
        return make_bit_encoder(meta)
    if t in (C.MYSQL_TYPE_BLOB, C.MYSQL_TYPE_TINY_BLOB, C.MYSQL_TYPE_MEDIUM_BLOB, C.MYSQL_TYPE_LONG_BLOB):
        return make_blob_encoder(meta, _text_encoder(codec))
    if t == C.MYSQL_TYPE_JSON:
        return make_blob_encoder(meta, _json_bytes)
    if t == C.MYSQL_TYPE_GEOMETRY:
        return make_blob_encoder(meta, bytes)
    if t == C.MYSQL_TYPE_VECTOR:
        return make_blob_encoder(meta, _vector)
    if t == C.MYSQL_TYPE_NULL:
        return lambda v: b""
    raise BinlogWriteError(f"column type {C.FIELD_TYPE_NAMES.get(t, t)} can not be written in a row image", found=t)


# --- rows events -----------------------------------------------------------------------------------------------


class RowEncoder:
    """Row-image encoding of one table id: one value encoder per column, chosen when the TABLE_MAP arrives."""

    __slots__ = ("_plans", "encoders", "json_columns", "json_pack_length", "layout", "null_padding")

    def __init__(self, layout: TableLayout, null_padding: int = 0) -> None:
        self.layout = layout
        self.null_padding = null_padding
        self.encoders = tuple(column_encoder(c) for c in layout.columns)
        self.json_columns = layout.json_columns
        self.json_pack_length = {i: layout.columns[i].metadata for i in layout.json_columns}
        self._plans: dict[bytes, tuple[int, ...]] = {}

    @classmethod
    def for_table_map(cls, tm: ev.TableMapEvent, null_padding: int = 0) -> "RowEncoder":
        """``null_padding``: the value of the unused bits of the last null-bitmap byte: 0 for MySQL 8.0
        (``Bit_writer``), 1 for MySQL 5.x and MariaDB (``pack_row`` started from 0xff)."""
        return cls(build_layout(tm), null_padding)

    def present(self, bitmap: bytes) -> tuple[int, ...]:
        got = self._plans.get(bitmap)
        if got is None:
            n = len(self.encoders)
            got = tuple(i for i in range(min(n, len(bitmap) * 8)) if bitmap[i >> 3] & (1 << (i & 7)))
            self._plans[bitmap] = got
        return got

    def image(self, values: tuple, present: tuple[int, ...], partial: tuple[int, ...] = ()) -> bytes:
        """``pack_row``: null bits (1 = NULL) for the present columns, then their values. Columns listed in
        ``partial`` hold a :class:`~binlake.binlog.events.JsonPartial` (a diff vector, WL#2955 F3)."""
        n = len(present)
        nulls = 0
        bit = 1
        parts = [b""]
        append = parts.append
        encoders = self.encoders
        try:
            for i in present:
                v = values[i]
                if v is None:
                    nulls |= bit
                elif partial and i in partial:
                    raw = v.raw
                    append(len(raw).to_bytes(self.json_pack_length[i], "little") + raw)
                else:
                    append(encoders[i](v))
                bit <<= 1
        except (TypeError, ValueError, OverflowError, AttributeError, struct.error) as exc:
            i = present[bit.bit_length() - 1]
            col = self.layout.columns[i]
            raise BinlogWriteError(
                f"`{self.layout.db}`.`{self.layout.table}` column {col.name} ({i}): can not encode {values[i]!r} "
                f"as {C.FIELD_TYPE_NAMES.get(col.real_type, col.real_type)}: {exc}"
            ) from None
        if n & 7 and self.null_padding:
            nulls |= ((1 << (8 - (n & 7))) - 1) << n  # MySQL 5.x/MariaDB set the unused bits
        parts[0] = nulls.to_bytes((n + 7) >> 3, "little")
        return b"".join(parts)


def partial_bits(json_columns: tuple[int, ...], partial_columns) -> bytes:
    """WL#2955 ``partial_columns``: one bit per JSON column of the table (LSB first), set when that column is
    in partial format in the after image."""
    out = bytearray((len(json_columns) + 7) // 8)
    for k, i in enumerate(json_columns):
        if i in partial_columns:
            out[k >> 3] |= 1 << (k & 7)
    return bytes(out)


def encode_rows(e: ev.RowsEvent, type_code: int, rows: RowEncoder) -> bytes:
    """``Rows_event::write_data_header`` + ``write_data_body`` for rows events v0/v1/v2 and PARTIAL_UPDATE_ROWS
    (MariaDB's zlib-compressed rows events are not written)."""
    if type_code in C.MARIADB_COMPRESSED_ROWS_TYPES:
        raise BinlogWriteError("MariaDB compressed rows events are not written", found=type_code)
    parts = [_table_id(e.table_id, e.table_id_size), U16.pack(e.flags)]
    if e.extra_data is not None:
        parts.append(U16.pack(len(e.extra_data) + 2) + e.extra_data)
    parts.append(packed_length(e.column_count))
    parts.append(e.columns_present)
    before = rows.present(e.columns_present)
    if isinstance(e, ev.UpdateRowsEvent):
        parts.append(e.columns_present_after)
        after = rows.present(e.columns_present_after)
        image = rows.image
        if isinstance(e, ev.PartialUpdateRowsEvent):
            for r in e.rows:
                parts.append(image(r.before, before))
                parts.append(packed_length(r.value_options))
                if r.value_options & C.PARTIAL_JSON_UPDATES:
                    parts.append(
                        r.partial_bits
                        if r.partial_bits is not None
                        else partial_bits(rows.json_columns, r.partial_columns)
                    )
                parts.append(image(r.after, after, r.partial_columns))
        else:
            for r in e.rows:
                parts.append(image(r.before, before))
                parts.append(image(r.after, after))
    else:
        image = rows.image
        parts.extend(image(r, before) for r in e.rows)
    return b"".join(parts)
