"""Per-column value decoders for row images: ``decoder(buf, pos) -> (value, new_pos)``.

:func:`column_decoder` picks (or builds, as a closure over the column's metadata) one function per column when
a TABLE_MAP arrives, so decoding a row is a loop over precomputed functions. The encodings mirror the
``Field_*::unpack`` functions of mysql-server ``sql/field.cc`` and ``log_event_print_value`` in
``sql/log_event.cc``; DECIMAL follows ``bin2decimal`` (strings/decimal.cc), TIME2/DATETIME2/TIMESTAMP2 follow
``my_*_packed_from_binary`` (mysys/my_time.cc).

Decoders may read past the end of ``buf`` only through slicing (which yields short data) or ``struct`` (which
raises ``struct.error``); the row decoder checks the final position against the fence and turns those into
typed errors.
"""

from __future__ import annotations

import struct
from decimal import Decimal
from typing import Any, Callable, Optional

from binlake.binlog import constants as C
from binlake.binlog.errors import UnsupportedError
from binlake.binlog.jsonvalue import make_json_value
from binlake.binlog.values import (MysqlDate, MysqlDateTime, MysqlTime, MysqlTimestamp, decode_text)

Decoder = Callable[[bytes, int], tuple[Any, int]]


def inline(dec: Decoder, statements: tuple[str, ...], **objects: Any) -> Decoder:
    """Attach the source a compiled row reader may use instead of calling ``dec`` (table.compile_reader):
    statements that read the value into ``{v}`` from ``buf`` at ``pos`` and advance ``pos``; ``{k}`` is a
    unique suffix for the names of ``objects`` (helpers the statements use, e.g. ``{{G{k}}}``)."""
    dec.inline = (statements, objects)  # type: ignore[attr-defined]
    return dec

_i8 = struct.Struct("<b").unpack_from
_u8 = struct.Struct("<B").unpack_from
_i16 = struct.Struct("<h").unpack_from
_u16 = struct.Struct("<H").unpack_from
_i32 = struct.Struct("<i").unpack_from
_u32 = struct.Struct("<I").unpack_from
_i64 = struct.Struct("<q").unpack_from
_u64 = struct.Struct("<Q").unpack_from
_f32 = struct.Struct("<f")
_f64 = struct.Struct("<d").unpack_from
_u32be = struct.Struct(">I").unpack_from
_u16be = struct.Struct(">H").unpack_from


# --- integers and floating point ------------------------------------------------------------------------------

def _tiny(buf: bytes, pos: int) -> tuple[int, int]:
    return _i8(buf, pos)[0], pos + 1


def _utiny(buf: bytes, pos: int) -> tuple[int, int]:
    return buf[pos], pos + 1


def _short(buf: bytes, pos: int) -> tuple[int, int]:
    return _i16(buf, pos)[0], pos + 2


def _ushort(buf: bytes, pos: int) -> tuple[int, int]:
    return _u16(buf, pos)[0], pos + 2


def _int24(buf: bytes, pos: int) -> tuple[int, int]:
    return int.from_bytes(buf[pos:pos + 3], "little", signed=True), pos + 3


def _uint24(buf: bytes, pos: int) -> tuple[int, int]:
    return int.from_bytes(buf[pos:pos + 3], "little"), pos + 3


inline(_int24, ("{v} = int.from_bytes(buf[pos:pos + 3], 'little', signed=True)", "pos += 3"))
inline(_uint24, ("{v} = int.from_bytes(buf[pos:pos + 3], 'little')", "pos += 3"))


def _long(buf: bytes, pos: int) -> tuple[int, int]:
    return _i32(buf, pos)[0], pos + 4


def _ulong(buf: bytes, pos: int) -> tuple[int, int]:
    return _u32(buf, pos)[0], pos + 4


def _longlong(buf: bytes, pos: int) -> tuple[int, int]:
    return _i64(buf, pos)[0], pos + 8


def _ulonglong(buf: bytes, pos: int) -> tuple[int, int]:
    return _u64(buf, pos)[0], pos + 8


def shortest_float32(raw: bytes) -> float:
    """The float with the fewest digits that is the same float32 as ``raw`` (MySQL prints FLOAT that way)."""
    value = _f32.unpack(raw)[0]
    pack = _f32.pack
    for digits in (6, 7, 8):
        candidate = float(f"{value:.{digits}g}")
        if pack(candidate) == raw:
            return candidate
    return float(f"{value:.9g}")


_FLOAT_CACHE: dict[bytes, float] = {}


def _float_miss(raw: bytes) -> float:
    if len(_FLOAT_CACHE) > 65536:
        _FLOAT_CACHE.clear()
    value = _FLOAT_CACHE[raw] = shortest_float32(raw)
    return value


def _float(buf: bytes, pos: int) -> tuple[float, int]:
    raw = buf[pos:pos + 4]
    value = _FLOAT_CACHE.get(raw)
    if value is None:
        value = _float_miss(raw)
    return value, pos + 4


inline(_float, ("_r = buf[pos:pos + 4]", "{v} = FG{k}(_r)", "if {v} is None: {v} = FM{k}(_r)", "pos += 4"),
       FG=_FLOAT_CACHE.get, FM=_float_miss)


def _double(buf: bytes, pos: int) -> tuple[float, int]:
    return _f64(buf, pos)[0], pos + 8


def _null(buf: bytes, pos: int) -> tuple[None, int]:
    return None, pos


# decoders that are one struct field: runs of them are read with one ``unpack_from`` (see TableLayout.plan)
STRUCT_CODES: dict[Callable, str] = {_tiny: "b", _utiny: "B", _short: "h", _ushort: "H", _long: "i",
                                     _ulong: "I", _longlong: "q", _ulonglong: "Q", _double: "d"}

_INTEGERS = {
    (C.MYSQL_TYPE_TINY, False): _tiny, (C.MYSQL_TYPE_TINY, True): _utiny,
    (C.MYSQL_TYPE_SHORT, False): _short, (C.MYSQL_TYPE_SHORT, True): _ushort,
    (C.MYSQL_TYPE_INT24, False): _int24, (C.MYSQL_TYPE_INT24, True): _uint24,
    (C.MYSQL_TYPE_LONG, False): _long, (C.MYSQL_TYPE_LONG, True): _ulong,
    (C.MYSQL_TYPE_LONGLONG, False): _longlong, (C.MYSQL_TYPE_LONGLONG, True): _ulonglong,
}


# --- DECIMAL ---------------------------------------------------------------------------------------------------

_DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)


def decimal_size(precision: int, scale: int) -> int:
    """``decimal_bin_size``: bytes of a DECIMAL(precision, scale) in binary format."""
    intg = precision - scale
    return (intg // 9) * 4 + _DIG2BYTES[intg % 9] + (scale // 9) * 4 + _DIG2BYTES[scale % 9]


def make_decimal(precision: int, scale: int) -> Decoder:
    """``bin2decimal``: groups of 9 digits in 4 big-endian bytes, a leading/trailing partial group, sign bit
    flipped on the first byte, every byte inverted for negative numbers."""
    if not 0 < precision <= 65 or not 0 <= scale <= 30 or scale > precision:
        raise UnsupportedError("DECIMAL column with invalid precision/scale", expected="precision 1..65, "
                               "scale 0..30 <= precision", found=f"({precision}, {scale})")
    intg = precision - scale
    pieces: list[tuple[int, int, int]] = []   # (start, end, digits) of each group
    off = 0
    lead = _DIG2BYTES[intg % 9]
    if lead:
        pieces.append((off, off + lead, intg % 9))
        off += lead
    for _ in range(intg // 9):
        pieces.append((off, off + 4, 9))
        off += 4
    for _ in range(scale // 9):
        pieces.append((off, off + 4, 9))
        off += 4
    if scale % 9:
        pieces.append((off, off + _DIG2BYTES[scale % 9], scale % 9))
        off += _DIG2BYTES[scale % 9]
    size = off
    mask = (1 << (8 * size)) - 1
    sign_bit = 1 << (8 * size - 1)
    # digit groups are printed by one %-format; 1-, 2- and 4-byte groups come from one Struct (3-byte groups,
    # of 5 or 6 digits, are read with int.from_bytes)
    widths = [e - s for s, e, _d in pieces]
    int_groups = len(pieces) - (scale // 9) - (1 if scale % 9 else 0)
    text_fmt = "".join(("%d" if i == 0 else f"%0{d}d") for i, (_s, _e, d) in enumerate(pieces[:int_groups])) \
        or "0"
    if scale:
        text_fmt += "." + "".join(f"%0{d}d" for _s, _e, d in pieces[int_groups:])
    if 3 not in widths:
        unpack = struct.Struct(">" + "".join({1: "B", 2: "H", 4: "I"}[w] for w in widths)).unpack
    else:
        spans = tuple((s, e) for s, e, _d in pieces)

        def unpack(raw: bytes) -> tuple[int, ...]:
            return tuple(int.from_bytes(raw[s:e], "big") for s, e in spans)

    def dec(buf: bytes, pos: int) -> tuple[Decimal, int]:
        end = pos + size
        value = int.from_bytes(buf[pos:end], "big")
        if value & sign_bit:
            return Decimal(text_fmt % unpack((value ^ sign_bit).to_bytes(size, "big"))), end
        return Decimal("-" + text_fmt % unpack((value ^ mask ^ sign_bit).to_bytes(size, "big"))), end

    return dec


# --- temporals -------------------------------------------------------------------------------------------------

MEMO_ENTRIES = 4096


def memoized(size: int, dec: Decoder) -> Decoder:
    """A fixed-size decoder that reuses the values of byte strings seen before in this column (dates repeat,
    and the unchanged columns of an UPDATE's after image repeat its before image). Values are immutable, so
    sharing them is safe; the cache is cleared when it reaches MEMO_ENTRIES."""
    cache: dict[bytes, Any] = {}
    get = cache.get

    def miss(raw: bytes) -> Any:
        value = dec(raw, 0)[0]
        if len(raw) == size:        # a cut-short value is not cached (the row decoder rejects it)
            if len(cache) >= MEMO_ENTRIES:
                cache.clear()
            cache[raw] = value
        return value

    def cached(buf: bytes, pos: int) -> tuple[Any, int]:
        end = pos + size
        raw = buf[pos:end]
        value = get(raw)
        if value is None:
            value = miss(raw)
        return value, end
    return inline(cached, (f"_r = buf[pos:pos + {size}]", "{v} = G{k}(_r)", "if {v} is None: {v} = M{k}(_r)",
                           f"pos += {size}"), G=get, M=miss)


def _year(buf: bytes, pos: int) -> tuple[int, int]:
    y = buf[pos]
    return (y + 1900 if y else 0), pos + 1


inline(_year, ("{v} = buf[pos]", "if {v}: {v} += 1900", "pos += 1"))


def _date(buf: bytes, pos: int) -> tuple[MysqlDate, int]:
    v = int.from_bytes(buf[pos:pos + 3], "little")
    return MysqlDate(v >> 9, (v >> 5) & 15, v & 31), pos + 3


def _time(buf: bytes, pos: int) -> tuple[MysqlTime, int]:
    v = int.from_bytes(buf[pos:pos + 3], "little", signed=True)
    neg = v < 0
    v = -v if neg else v
    return MysqlTime(neg, v // 10000, (v // 100) % 100, v % 100), pos + 3


def _datetime(buf: bytes, pos: int) -> tuple[MysqlDateTime, int]:
    v = _u64(buf, pos)[0]
    d, t = divmod(v, 1_000_000)
    return MysqlDateTime(d // 10000, (d // 100) % 100, d % 100, t // 10000, (t // 100) % 100, t % 100), pos + 8


def _timestamp(buf: bytes, pos: int) -> tuple[MysqlTimestamp, int]:
    return MysqlTimestamp(_u32(buf, pos)[0]), pos + 4


# --- MariaDB 5.3 temporal formats (mysql56_temporal_format=OFF; sql/field.cc Field_*_hires) -------------------

_SEC_PART_BYTES = (0, 1, 1, 2, 2, 3, 3)
_TIME_HIRES_BYTES = (3, 4, 4, 5, 5, 5, 6)
_DATETIME_HIRES_BYTES = (5, 6, 6, 7, 7, 7, 8)
_TIME_MAX_VALUE_SECONDS = 3020399              # 838:59:59


def _unshift(value: int, fsp: int) -> int:
    """``sec_part_unshift``: a value stored in units of 10^-fsp seconds back to microseconds."""
    return value * 10 ** (6 - fsp)


def make_mariadb_hires(type_code: int, fsp: int) -> Decoder:
    """TIME(n)/DATETIME(n)/TIMESTAMP(n), n > 0, as MariaDB 5.3 stores them: big-endian, fractions in units of
    10^-n seconds; TIME offset by 838:59:59 + 1s (``zero_point``); DATETIME as MariaDB's ``pack_time``."""
    if not 1 <= fsp <= 6:
        raise UnsupportedError("MariaDB hires temporal with invalid fractional digits", expected="1..6", found=fsp)
    if type_code == C.MYSQL_TYPE_TIMESTAMP:
        nfrac = _SEC_PART_BYTES[fsp]

        def dec(buf: bytes, pos: int) -> tuple[Any, int]:
            frac = int.from_bytes(buf[pos + 4:pos + 4 + nfrac], "big")
            return MysqlTimestamp(_u32be(buf, pos)[0], _unshift(frac, fsp), fsp), pos + 4 + nfrac
        return dec
    if type_code == C.MYSQL_TYPE_TIME:
        size = _TIME_HIRES_BYTES[fsp]
        zero = (_TIME_MAX_VALUE_SECONDS + 1) * 10 ** fsp

        def dec(buf: bytes, pos: int) -> tuple[Any, int]:
            v = _unshift(int.from_bytes(buf[pos:pos + size], "big") - zero, fsp)
            neg = v < 0
            secs, micro = divmod(-v if neg else v, 1_000_000)
            return MysqlTime(neg, secs // 3600, secs // 60 % 60, secs % 60, micro, fsp), pos + size
        return dec
    size = _DATETIME_HIRES_BYTES[fsp]

    def dt(buf: bytes, pos: int) -> tuple[Any, int]:
        v = _unshift(int.from_bytes(buf[pos:pos + size], "big"), fsp)
        v, micro = divmod(v, 1_000_000)
        v, second = divmod(v, 60)
        v, minute = divmod(v, 60)
        v, hour = divmod(v, 24)
        v, day = divmod(v, 32)
        year, month = divmod(v, 13)
        return MysqlDateTime(year, month, day, hour, minute, second, micro, fsp), pos + size
    return dt


def _frac_reader(fsp: int) -> tuple[int, Callable[[bytes, int], int]]:
    """(bytes, reader) of the fractional part of TIMESTAMP2/DATETIME2 with ``fsp`` digits (unsigned)."""
    if fsp <= 0:
        return 0, lambda buf, pos: 0
    if fsp <= 2:
        return 1, lambda buf, pos: buf[pos] * 10000
    if fsp <= 4:
        return 2, lambda buf, pos: _u16be(buf, pos)[0] * 100
    return 3, lambda buf, pos: int.from_bytes(buf[pos:pos + 3], "big")


def _timestamp2_0(buf: bytes, pos: int) -> tuple[MysqlTimestamp, int]:
    return MysqlTimestamp(_u32be(buf, pos)[0]), pos + 4


def make_timestamp2(fsp: int) -> Decoder:
    if fsp <= 0:
        return _timestamp2_0
    nfrac = (fsp + 1) // 2
    scale = 10 ** (6 - 2 * nfrac)        # the fraction is stored in units of 10^-2, 10^-4 or 10^-6 s

    def dec(buf: bytes, pos: int) -> tuple[MysqlTimestamp, int]:
        end = pos + 4 + nfrac
        return MysqlTimestamp(_u32be(buf, pos)[0], int.from_bytes(buf[pos + 4:end], "big") * scale, fsp), end
    return dec


def make_datetime2(fsp: int) -> Decoder:
    nfrac, frac = _frac_reader(fsp)

    def dec(buf: bytes, pos: int) -> tuple[MysqlDateTime, int]:
        ymdhms = int.from_bytes(buf[pos:pos + 5], "big") - 0x8000000000
        neg = ymdhms < 0
        if neg:
            ymdhms = -ymdhms
        ymd, hms = ymdhms >> 17, ymdhms & 0x1FFFF
        ym = ymd >> 5
        return (MysqlDateTime(ym // 13, ym % 13, ymd & 31, hms >> 12, (hms >> 6) & 63, hms & 63,
                              frac(buf, pos + 5), fsp), pos + 5 + nfrac)
    return dec


def make_time2(fsp: int) -> Decoder:
    """TIME2: ``my_time_packed_from_binary`` then ``TIME_from_longlong_time_packed``."""
    if fsp >= 5:
        size = 6

        def packed(buf: bytes, pos: int) -> int:
            return int.from_bytes(buf[pos:pos + 6], "big") - 0x800000000000
    elif fsp >= 1:
        size = 4 if fsp <= 2 else 5

        def packed(buf: bytes, pos: int) -> int:
            # negative values store the fraction in reverse order (for binary sort): read it unsigned
            intpart = int.from_bytes(buf[pos:pos + 3], "big") - 0x800000
            if size == 4:
                frac = buf[pos + 3]
                if intpart < 0 and frac:
                    intpart += 1
                    frac -= 0x100
                return (intpart << 24) + frac * 10000
            frac = _u16be(buf, pos + 3)[0]
            if intpart < 0 and frac:
                intpart += 1
                frac -= 0x10000
            return (intpart << 24) + frac * 100
    else:
        size = 3

        def packed(buf: bytes, pos: int) -> int:
            return (int.from_bytes(buf[pos:pos + 3], "big") - 0x800000) << 24

    def dec(buf: bytes, pos: int) -> tuple[MysqlTime, int]:
        v = packed(buf, pos)
        neg = v < 0
        if neg:
            v = -v
        hms = v >> 24
        return (MysqlTime(neg, (hms >> 12) & 0x3FF, (hms >> 6) & 63, hms & 63, v & 0xFFFFFF, fsp),
                pos + size)
    return dec


# --- strings, blobs, bit, enum, set ---------------------------------------------------------------------------

def _text_or_bytes(codec: Optional[str]) -> Callable[[bytes], Any]:
    if codec is None:
        return bytes
    if codec == "utf-8":
        return lambda raw: raw.decode("utf-8", "surrogateescape")
    return lambda raw: decode_text(raw, codec)


def _length_prefixed(dec: Decoder, length_bytes: int, convert: str) -> Decoder:
    """Inline source for a value of ``length_bytes`` little-endian length then data; ``convert`` maps the
    data expression ``{d}``."""
    if length_bytes == 1:
        end = "_e = pos + 1 + buf[pos]"
    elif length_bytes == 2:
        end = "_e = pos + 2 + (buf[pos] | buf[pos + 1] << 8)"
    else:
        end = f"_e = pos + {length_bytes} + int.from_bytes(buf[pos:pos + {length_bytes}], 'little')"
    data = f"buf[pos + {length_bytes}:_e]"
    return inline(dec, (end, "{v} = " + convert.replace("{d}", data), "pos = _e"))


_UTF8 = "{d}.decode('utf-8', 'surrogateescape')"


def make_string(max_len: int, codec: Optional[str], pad_binary: bool = False) -> Decoder:
    """CHAR/VARCHAR/BINARY/VARBINARY: a 1-byte length when the column's max byte length is < 256, else 2.

    ``pad_binary``: BINARY(n) (CHAR with the binary charset) values are stored without their trailing 0x00
    pad bytes (``Field_string::pack`` strips the charset's pad character); they are padded back to n bytes."""
    n = 1 if max_len < 256 else 2
    if codec is None and pad_binary:
        def dec(buf: bytes, pos: int) -> tuple[Any, int]:
            start = pos + n
            end = start + int.from_bytes(buf[pos:start], "little")
            return buf[start:end].ljust(max_len, b"\0"), end
        return dec
    if codec is None:
        def dec(buf: bytes, pos: int) -> tuple[Any, int]:
            start = pos + n
            end = start + int.from_bytes(buf[pos:start], "little")
            return buf[start:end], end
        return _length_prefixed(dec, n, "{d}")
    if codec == "utf-8":
        def dec(buf: bytes, pos: int) -> tuple[Any, int]:
            start = pos + n
            end = start + int.from_bytes(buf[pos:start], "little")
            return buf[start:end].decode("utf-8", "surrogateescape"), end
        return _length_prefixed(dec, n, _UTF8)

    def dec(buf: bytes, pos: int) -> tuple[Any, int]:
        start = pos + n
        end = start + int.from_bytes(buf[pos:start], "little")
        return decode_text(buf[start:end], codec), end
    return dec


def make_blob(length_bytes: int, conv: Callable[[bytes], Any]) -> Decoder:
    """BLOB/TEXT/JSON/GEOMETRY/VECTOR: a little-endian length of ``length_bytes`` (1-4), then the data."""
    if not 1 <= length_bytes <= 4:
        raise UnsupportedError("BLOB-like column with an invalid length size", expected="1..4",
                               found=length_bytes)
    n = length_bytes

    def dec(buf: bytes, pos: int) -> tuple[Any, int]:
        start = pos + n
        end = start + int.from_bytes(buf[pos:start], "little")
        return conv(buf[start:end]), end
    if conv is bytes:
        return _length_prefixed(dec, n, "{d}")
    return dec


def make_text_blob(length_bytes: int, codec: Optional[str]) -> Decoder:
    """BLOB/TEXT with a collation: bytes for binary, text otherwise."""
    dec = make_blob(length_bytes, _text_or_bytes(codec))
    return _length_prefixed(dec, length_bytes, _UTF8) if codec == "utf-8" else dec


def make_bit(meta: int) -> Decoder:
    nbytes = (meta >> 8) + (1 if meta & 0xFF else 0)

    def dec(buf: bytes, pos: int) -> tuple[int, int]:
        return int.from_bytes(buf[pos:pos + nbytes], "big"), pos + nbytes
    return inline(dec, (f"{{v}} = int.from_bytes(buf[pos:pos + {nbytes}], 'big')", f"pos += {nbytes}"))


def make_enum(pack_length: int, values: Optional[tuple[str, ...]]) -> Decoder:
    """ENUM: a 1- or 2-byte 1-based index; the value's name when the names are known ('' for index 0)."""
    if pack_length not in (1, 2):
        raise UnsupportedError("ENUM column with an invalid pack length", expected="1 or 2", found=pack_length)
    names = ("",) + tuple(values) if values is not None else None

    def dec(buf: bytes, pos: int) -> tuple[Any, int]:
        idx = int.from_bytes(buf[pos:pos + pack_length], "little")
        if names is not None and idx < len(names):
            return names[idx], pos + pack_length
        return idx, pos + pack_length
    if names is None:
        return dec
    read = "{v} = buf[pos]" if pack_length == 1 else "{v} = buf[pos] | buf[pos + 1] << 8"
    return inline(dec, (read, "if {v} < %d: {v} = N{k}[{v}]" % len(names), f"pos += {pack_length}"),
                  N=names)


def make_set(pack_length: int, values: Optional[tuple[str, ...]]) -> Decoder:
    """SET: a bitmask of 1-8 bytes; the comma-separated member names when they are known."""
    if not 1 <= pack_length <= 8:
        raise UnsupportedError("SET column with an invalid pack length", expected="1..8", found=pack_length)
    names = tuple(values) if values is not None else None
    texts: dict[int, str] = {}

    def dec(buf: bytes, pos: int) -> tuple[Any, int]:
        mask = int.from_bytes(buf[pos:pos + pack_length], "little")
        if names is None or mask >> len(names):
            return mask, pos + pack_length
        text = texts.get(mask)
        if text is None:
            text = texts[mask] = ",".join(n for i, n in enumerate(names) if mask >> i & 1)
        return text, pos + pack_length
    return dec


def _vector(raw: bytes) -> tuple[float, ...]:
    count = len(raw) // 4
    return tuple(shortest_float32(raw[i:i + 4]) for i in range(0, count * 4, 4))


def string_real_type(meta: int) -> tuple[int, int]:
    """The CHAR metadata trick (``Field_string::do_save_field_metadata``): (real_type, max byte length or
    ENUM/SET pack length) from the 2-byte metadata ``byte0 << 8 | byte1`` of a MYSQL_TYPE_STRING column."""
    byte0, byte1 = meta >> 8, meta & 0xFF
    if byte0 and (byte0 & 0x30) != 0x30:
        return byte0 | 0x30, (((byte0 & 0x30) ^ 0x30) << 4) | byte1
    return (byte0 or C.MYSQL_TYPE_STRING), byte1


def column_decoder(type_code: int, meta: int, *, unsigned: bool = False, codec: Optional[str] = None,
                   enum_values: Optional[tuple[str, ...]] = None,
                   set_values: Optional[tuple[str, ...]] = None, hires_fsp: int = 0) -> Decoder:
    """One decoder for a column of TABLE_MAP type ``type_code`` with metadata ``meta`` (see TableMapEvent).

    ``hires_fsp``: fractional digits of a TIME/DATETIME/TIMESTAMP column in MariaDB's 5.3 format (known only
    from a schema, TABLE_MAP does not carry them)."""
    if hires_fsp and type_code in (C.MYSQL_TYPE_TIME, C.MYSQL_TYPE_DATETIME, C.MYSQL_TYPE_TIMESTAMP):
        return make_mariadb_hires(type_code, hires_fsp)
    dec = _INTEGERS.get((type_code, unsigned))
    if dec is not None:
        return dec
    t = type_code
    if t == C.MYSQL_TYPE_FLOAT:
        return _float
    if t == C.MYSQL_TYPE_DOUBLE:
        return _double
    if t == C.MYSQL_TYPE_NEWDECIMAL:
        return memoized(decimal_size(meta >> 8, meta & 0xFF), make_decimal(meta >> 8, meta & 0xFF))
    if t == C.MYSQL_TYPE_YEAR:
        return _year
    if t in (C.MYSQL_TYPE_DATE, C.MYSQL_TYPE_NEWDATE):
        return memoized(3, _date)
    if t == C.MYSQL_TYPE_TIME:
        return memoized(3, _time)
    if t == C.MYSQL_TYPE_DATETIME:
        return memoized(8, _datetime)
    if t == C.MYSQL_TYPE_TIMESTAMP:
        return memoized(4, _timestamp)
    if t == C.MYSQL_TYPE_TIMESTAMP2:
        return memoized(4 + (meta + 1) // 2, make_timestamp2(meta))
    if t == C.MYSQL_TYPE_DATETIME2:
        return memoized(5 + (meta + 1) // 2, make_datetime2(meta))
    if t == C.MYSQL_TYPE_TIME2:
        return memoized(3 + (meta + 1) // 2, make_time2(meta))
    if t in (C.MYSQL_TYPE_VARCHAR, C.MYSQL_TYPE_VAR_STRING):
        return make_string(meta, codec)
    if t == C.MYSQL_TYPE_STRING:
        real_type, length = string_real_type(meta)
        if real_type == C.MYSQL_TYPE_ENUM:
            return make_enum(length, enum_values)
        if real_type == C.MYSQL_TYPE_SET:
            return make_set(length, set_values)
        return make_string(length, codec, pad_binary=True)
    if t == C.MYSQL_TYPE_ENUM:
        return make_enum(meta & 0xFF, enum_values)
    if t == C.MYSQL_TYPE_SET:
        return make_set(meta & 0xFF, set_values)
    if t == C.MYSQL_TYPE_BIT:
        return make_bit(meta)
    if t in (C.MYSQL_TYPE_BLOB, C.MYSQL_TYPE_TINY_BLOB, C.MYSQL_TYPE_MEDIUM_BLOB, C.MYSQL_TYPE_LONG_BLOB):
        return make_text_blob(meta, codec)
    if t == C.MYSQL_TYPE_JSON:
        return make_blob(meta, make_json_value)
    if t == C.MYSQL_TYPE_GEOMETRY:
        return make_blob(meta, bytes)
    if t == C.MYSQL_TYPE_VECTOR:
        return make_blob(meta, _vector)
    if t == C.MYSQL_TYPE_NULL:
        return _null
    name = C.FIELD_TYPE_NAMES.get(t, str(t))
    raise UnsupportedError(f"column type MYSQL_TYPE_{name} can not appear in a row image",
                           expected="a row-based column type", found=t)
