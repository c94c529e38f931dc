"""Per-column value decoders for row images: ``decoder(buf, pos) -> (value, new_pos)``.

:func:`column_decoder` picks (or builds, as a closure over the column's metadata) one function per column when
a TABLE_MAP arrives, so decoding a row is a loop over precomputed functions. The encodings mirror the
``Field_*::unpack`` functions of mysql-server ``sql/field.cc`` and ``log_event_print_value`` in
``sql/log_event.cc``; DECIMAL follows ``bin2decimal`` (strings/decimal.cc), TIME2/DATETIME2/TIMESTAMP2 follow
``my_*_packed_from_binary`` (mysys/my_time.cc).

Most decoders are written once, as source statements (:func:`from_source`): compiled row readers
(table.compile_reader) paste them into one function per row pattern, so a row is read without a function call
per value; the same statements also make the decoder function itself. Temporal values are built with
``tuple.__new__`` (they are NamedTuples, see :mod:`.values`).

Decoders may read past the end of ``buf`` only through slicing (which yields short data) or ``struct`` (which
raises ``struct.error``); the row decoder checks the final position against the fence and turns those into
typed errors.
"""

from __future__ import annotations

import struct
from decimal import MAX_EMAX, MAX_PREC, MIN_EMIN, Context, Decimal
from typing import Any, Callable, Optional

from binlake.binlog import constants as C
from binlake.binlog.errors import UnsupportedError
from binlake.binlog.jsonvalue import make_json_value
from binlake.binlog.values import MysqlDate, MysqlDateTime, MysqlTime, MysqlTimestamp, decode_text

Decoder = Callable[[bytes, int], tuple[Any, int]]
_TN = tuple.__new__


def from_source(statements: tuple[str, ...], **objects: Any) -> Decoder:
    """A decoder made from source statements that read one value into ``{v}`` from ``buf`` at ``pos`` and
    advance ``pos``; ``{k}`` is a unique suffix for the names of ``objects`` (the helpers the statements use,
    e.g. ``G{k}``). A statement may span lines (a block). The statements stay on the function as ``.inline``
    for compiled row readers."""
    try:
        key = (statements, tuple(sorted(objects.items())))
        hash(key)
    except TypeError:
        key = None
    dec = _DECODER_CACHE.get(key) if key is not None else None
    if dec is not None:
        return dec
    env = dict(objects)
    source = (
        "def dec(buf, pos):\n"
        + "".join("    " + line.format(v="v", k="").replace("\n", "\n    ") + "\n" for line in statements)
        + "    return v, pos\n"
    )
    exec(compile(source, "<binlake column decoder>", "exec"), env)
    dec = env["dec"]
    dec.inline = (statements, objects)
    if key is not None:
        if len(_DECODER_CACHE) >= DECODER_CACHE_SIZE:
            _DECODER_CACHE.pop(next(iter(_DECODER_CACHE)))
        _DECODER_CACHE[key] = dec
    return dec


# Decoders made from the same statements and helper objects are the same pure function: made once (a wide
# TABLE_MAP of like columns compiles one decoder, not one per column). Bounded, oldest entries dropped first.
DECODER_CACHE_SIZE = 4096
_DECODER_CACHE: dict[tuple, Decoder] = {}

_i8 = struct.Struct("<b").unpack_from
_i16 = struct.Struct("<h").unpack_from
_u16 = struct.Struct("<H").unpack_from
_i32 = struct.Struct("<i").unpack_from
_u32 = struct.Struct("<I").unpack_from
_i64 = struct.Struct("<q").unpack_from
_u64 = struct.Struct("<Q").unpack_from
_f32 = struct.Struct("<f")
_f64 = struct.Struct("<d").unpack_from
_u32be = struct.Struct(">I").unpack_from


# --- integers and floating point ------------------------------------------------------------------------------


def _tiny(buf: bytes, pos: int) -> tuple[int, int]:
    return _i8(buf, pos)[0], pos + 1


def _utiny(buf: bytes, pos: int) -> tuple[int, int]:
    return buf[pos], pos + 1


def _short(buf: bytes, pos: int) -> tuple[int, int]:
    return _i16(buf, pos)[0], pos + 2


def _ushort(buf: bytes, pos: int) -> tuple[int, int]:
    return _u16(buf, pos)[0], pos + 2


def uint_source(nbytes: int, order: str = "little", at: str = "pos") -> str:
    """The source of an unsigned ``nbytes`` integer at ``at`` in ``buf``: byte subscripts up to 3 bytes (cheaper
    than slicing for ``int.from_bytes``; a read past the fence raises IndexError, a typed error at the event)."""
    if nbytes > 3 or nbytes <= 0:
        return f"int.from_bytes(buf[{at}:{at} + {nbytes}], {order!r})"
    shifts = range(nbytes) if order == "little" else range(nbytes - 1, -1, -1)
    terms = [f"buf[{at} + {i}]" if i else f"buf[{at}]" for i in range(nbytes)]
    parts = [f"{t} << {8 * sh}" if sh else t for t, sh in zip(terms, shifts)]
    return parts[0] if nbytes == 1 else "(" + " | ".join(parts) + ")"


_int24 = from_source(("{v} = " + uint_source(3), "if {v} & 0x800000: {v} -= 0x1000000", "pos += 3"))
_uint24 = from_source(("{v} = " + uint_source(3), "pos += 3"))


def _long(buf: bytes, pos: int) -> tuple[int, int]:
    return _i32(buf, pos)[0], pos + 4


def _ulong(buf: bytes, pos: int) -> tuple[int, int]:
    return _u32(buf, pos)[0], pos + 4


def _longlong(buf: bytes, pos: int) -> tuple[int, int]:
    return _i64(buf, pos)[0], pos + 8


def _ulonglong(buf: bytes, pos: int) -> tuple[int, int]:
    return _u64(buf, pos)[0], pos + 8


_f32_unpack = _f32.unpack
_f32_pack = _f32.pack


def shortest_float32(raw: bytes) -> float:
    """The float with the fewest digits (6 to 9) that is the same float32 as ``raw`` (MySQL prints FLOAT that
    way). Round-tripping is monotonic in the digits (the nearest d-digit decimal is at least as close as any
    shorter one), so 7 digits are tried first: then 6 if they fit, else 8, else 9 (two tries for most values)."""
    value = _f32_unpack(raw)[0]
    candidate = float("%.7g" % value)
    if _f32_pack(candidate) == raw:
        shorter = float("%.6g" % value)
        return shorter if _f32_pack(shorter) == raw else candidate
    candidate = float("%.8g" % value)
    if _f32_pack(candidate) == raw:
        return candidate
    return float("%.9g" % value)


_FLOAT_CACHE: dict[bytes, float] = {}


def _float_miss(raw: bytes) -> float:
    if len(_FLOAT_CACHE) > 65536:
        _FLOAT_CACHE.clear()
    value = _FLOAT_CACHE[raw] = shortest_float32(raw)
    return value


_float = from_source(
    ("_r = buf[pos:pos + 4]", "{v} = FG{k}(_r)", "if {v} is None: {v} = FM{k}(_r)", "pos += 4"),
    FG=_FLOAT_CACHE.get,
    FM=_float_miss,
)


def _double(buf: bytes, pos: int) -> tuple[float, int]:
    return _f64(buf, pos)[0], pos + 8


def _null(buf: bytes, pos: int) -> tuple[None, int]:
    return None, pos


# decoders that are one struct field: runs of them are read with one ``unpack_from`` (see TableLayout.plan)
STRUCT_CODES: dict[Callable, str] = {
    _tiny: "b",
    _utiny: "B",
    _short: "h",
    _ushort: "H",
    _long: "i",
    _ulong: "I",
    _longlong: "q",
    _ulonglong: "Q",
    _double: "d",
}

_INTEGERS = {
    (C.MYSQL_TYPE_TINY, False): _tiny,
    (C.MYSQL_TYPE_TINY, True): _utiny,
    (C.MYSQL_TYPE_SHORT, False): _short,
    (C.MYSQL_TYPE_SHORT, True): _ushort,
    (C.MYSQL_TYPE_INT24, False): _int24,
    (C.MYSQL_TYPE_INT24, True): _uint24,
    (C.MYSQL_TYPE_LONG, False): _long,
    (C.MYSQL_TYPE_LONG, True): _ulong,
    (C.MYSQL_TYPE_LONGLONG, False): _longlong,
    (C.MYSQL_TYPE_LONGLONG, True): _ulonglong,
}


MEMO_ENTRIES = 4096
# DECIMAL arithmetic that never rounds (65 digits at most), independent of the thread's decimal context
_EXACT = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN, traps=[])

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
        raise UnsupportedError(
            "DECIMAL column with invalid precision/scale",
            expected="precision 1..65, scale 0..30 <= precision",
            found=f"({precision}, {scale})",
        )
    intg = precision - scale
    pieces: list[tuple[int, int, int]] = []  # (start, end, digits) of each group
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
    sign_bit = 1 << (8 * size - 1)
    # the groups as shifts of the whole big-endian integer, joined into the coefficient by Horner's rule; the
    # Decimal is the coefficient times +-1E-<scale> in an exact context (the value, sign (-0 included) and
    # exponent of "<int>.<fraction>", cheaper than parsing text)
    value = ""
    for s, e, d in pieces:
        shift, mask = 8 * (size - e), (1 << (8 * (e - s))) - 1
        group = f"(x >> {shift} & {mask})" if shift else f"(x & {mask})"
        value = f"({value}) * {10**d} + {group}" if value else group
    cache: dict[bytes, Decimal] = {}
    # memoized per raw bytes (amounts repeat, and so do the unchanged columns of an UPDATE's after image);
    # Decimal values are immutable, so sharing them is safe
    return from_source(
        (
            f"_r = buf[pos:pos + {size}]",
            "{v} = G{k}(_r)",
            "if {v} is None:\n"
            "    x = int.from_bytes(_r, 'big')\n"
            f"    if x & {sign_bit}:\n"
            f"        x ^= {sign_bit}\n"
            f"        {{v}} = MUL{{k}}(DEC{{k}}({value or 0}), P{{k}})\n"
            "    else:\n"
            f"        x ^= {((1 << (8 * size)) - 1) ^ sign_bit}\n"
            f"        {{v}} = MUL{{k}}(DEC{{k}}({value or 0}), N{{k}})\n"
            f"    if len(C{{k}}) >= {MEMO_ENTRIES}: C{{k}}.clear()\n"
            "    C{k}[_r] = {v}",
            f"pos += {size}",
        ),
        G=cache.get,
        C=cache,
        DEC=Decimal,
        MUL=_EXACT.multiply,
        P=Decimal(f"1E-{scale}"),
        N=Decimal(f"-1E-{scale}"),
    )


_year = from_source(("{v} = buf[pos]", "if {v}: {v} += 1900", "pos += 1"))
_date = from_source(
    ("_x = " + uint_source(3), "{v} = TN{k}(D{k}, (_x >> 9, _x >> 5 & 15, _x & 31))", "pos += 3"), TN=_TN, D=MysqlDate
)


def _time(buf: bytes, pos: int) -> tuple[MysqlTime, int]:
    v = int.from_bytes(buf[pos : pos + 3], "little", signed=True)
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
_TIME_MAX_VALUE_SECONDS = 3020399  # 838:59:59


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
            frac = int.from_bytes(buf[pos + 4 : pos + 4 + nfrac], "big")
            return MysqlTimestamp(_u32be(buf, pos)[0], _unshift(frac, fsp), fsp), pos + 4 + nfrac

        return dec
    if type_code == C.MYSQL_TYPE_TIME:
        size = _TIME_HIRES_BYTES[fsp]
        zero = (_TIME_MAX_VALUE_SECONDS + 1) * 10**fsp

        def dec(buf: bytes, pos: int) -> tuple[Any, int]:
            v = _unshift(int.from_bytes(buf[pos : pos + size], "big") - zero, fsp)
            neg = v < 0
            secs, micro = divmod(-v if neg else v, 1_000_000)
            return MysqlTime(neg, secs // 3600, secs // 60 % 60, secs % 60, micro, fsp), pos + size

        return dec
    size = _DATETIME_HIRES_BYTES[fsp]

    def dt(buf: bytes, pos: int) -> tuple[Any, int]:
        v = _unshift(int.from_bytes(buf[pos : pos + size], "big"), fsp)
        v, micro = divmod(v, 1_000_000)
        v, second = divmod(v, 60)
        v, minute = divmod(v, 60)
        v, hour = divmod(v, 24)
        v, day = divmod(v, 32)
        year, month = divmod(v, 13)
        return MysqlDateTime(year, month, day, hour, minute, second, micro, fsp), pos + size

    return dt


# the fractional part of TIMESTAMP2/DATETIME2 by stored bytes (``my_datetime_packed_from_binary``): struct
# fields, and the source of its value in microseconds from the unpacked names _f, _g (stored in units of 10^-2,
# 10^-4 or 10^-6 s)
_FRACTIONS = {0: ("", "0"), 1: ("B", "_f * 10000"), 2: ("H", "_f * 100"), 3: ("BH", "_f << 16 | _g")}


def _fraction(fsp: int) -> tuple[int, str, str, str]:
    """(bytes, struct fields, unpacked names, microseconds source) of a fraction of ``fsp`` digits."""
    if not 0 <= fsp <= 6:
        raise UnsupportedError("temporal column with invalid fractional digits", expected="0..6", found=fsp)
    nfrac = (fsp + 1) // 2 if fsp > 0 else 0
    fields, micro = _FRACTIONS[nfrac]
    return nfrac, fields, "".join(f", {n}" for n in ("_f", "_g")[: len(fields)]), micro


def make_timestamp2(fsp: int) -> Decoder:
    """TIMESTAMP2: big-endian seconds, then the fraction (``my_timestamp_from_binary``)."""
    nfrac, fields, names, micro = _fraction(fsp)
    return from_source(
        (f"_s{names}, = U{{k}}(buf, pos)", f"{{v}} = TN{{k}}(T{{k}}, (_s, {micro}, {fsp}))", f"pos += {4 + nfrac}"),
        U=struct.Struct(">I" + fields).unpack_from,
        TN=_TN,
        T=MysqlTimestamp,
    )


def make_datetime2(fsp: int) -> Decoder:
    """DATETIME2: 40 bits offset by 2^39 (year*13+month, day, hour, minute, second), then the fraction."""
    nfrac, fields, names, micro = _fraction(fsp)
    if nfrac == 3:
        # 5 + 3 bytes: one big-endian 64-bit integer, the fraction in its low 24 bits
        return from_source(
            (
                "_w, = U{k}(buf, pos)",
                "_x = (_w >> 24) - 0x8000000000",
                "if _x < 0: _x = -_x",
                "_y = _x >> 22",
                f"{{v}} = TN{{k}}(DT{{k}}, (_y // 13, _y % 13, _x >> 17 & 31, _x >> 12 & 31, "
                f"_x >> 6 & 63, _x & 63, _w & 16777215, {fsp}))",
                "pos += 8",
            ),
            U=struct.Struct(">Q").unpack_from,
            TN=_TN,
            DT=MysqlDateTime,
        )
    return from_source(
        (
            f"_a, _x{names}, = U{{k}}(buf, pos)",
            "_x = (_a << 32 | _x) - 0x8000000000",
            "if _x < 0: _x = -_x",
            "_d = _x >> 17",
            "_y = _d >> 5",
            f"{{v}} = TN{{k}}(DT{{k}}, (_y // 13, _y % 13, _d & 31, _x >> 12 & 31, _x >> 6 & 63, "
            f"_x & 63, {micro}, {fsp}))",
            f"pos += {5 + nfrac}",
        ),
        U=struct.Struct(">BI" + fields).unpack_from,
        TN=_TN,
        DT=MysqlDateTime,
    )


def make_time2(fsp: int) -> Decoder:
    """TIME2: ``my_time_packed_from_binary`` then ``TIME_from_longlong_time_packed``: 3 bytes of
    sign/hour/minute/second offset by 2^23, then (fsp >= 1) 1-3 bytes of fraction; fsp 5-6 read as one 6-byte
    integer offset by 2^47."""
    _fraction(fsp)  # checks the digits
    if fsp == 0 or fsp >= 5:
        size = 3 if fsp == 0 else 6
        return from_source(
            (
                f"_x = {uint_source(size, 'big')} - {1 << (8 * size - 1)}",
                "_n = _x < 0",
                "if _n: _x = -_x",
                "_h = _x >> 24" if fsp else "_h = _x",
                f"{{v}} = TN{{k}}(T{{k}}, (_n, _h >> 12 & 1023, _h >> 6 & 63, _h & 63, "
                f"{'_x & 16777215' if fsp else '0'}, {fsp}))",
                f"pos += {size}",
            ),
            TN=_TN,
            T=MysqlTime,
        )
    size = 4 if fsp <= 2 else 5
    unit = 10000 if size == 4 else 100

    def value(buf: bytes, pos: int) -> MysqlTime:
        intpart = int.from_bytes(buf[pos : pos + 3], "big") - 0x800000
        frac = int.from_bytes(buf[pos + 3 : pos + size], "big")
        # negative values store the fraction in reverse order (for binary sort)
        if intpart < 0 and frac:
            intpart += 1
            frac -= 1 << (8 * (size - 3))
        v = (intpart << 24) + frac * unit
        neg = v < 0
        if neg:
            v = -v
        hms = v >> 24
        return _TN(MysqlTime, (neg, (hms >> 12) & 0x3FF, (hms >> 6) & 63, hms & 63, v & 0xFFFFFF, fsp))

    return from_source(("{v} = F{k}(buf, pos)", f"pos += {size}"), F=value)


# --- strings, blobs, bit, enum, set ---------------------------------------------------------------------------


def _length_prefixed(length_bytes: int, convert: str = "{d}", **objects: Any) -> Decoder:
    """A value of ``length_bytes`` little-endian length then data; ``convert`` maps the data expression
    ``{d}`` (and may use ``objects``)."""
    if length_bytes == 1:
        end = "_e = pos + 1 + buf[pos]"
    elif length_bytes == 2:
        end = "_e = pos + 2 + (buf[pos] | buf[pos + 1] << 8)"
    elif length_bytes == 4:
        end = "_e = pos + 4 + L{k}(buf, pos)[0]"
        objects["L"] = _u32
    else:
        end = f"_e = pos + {length_bytes} + int.from_bytes(buf[pos:pos + {length_bytes}], 'little')"
    data = f"buf[pos + {length_bytes}:_e]"
    return from_source((end, "{v} = " + convert.replace("{d}", data), "pos = _e"), **objects)


def _text(length_bytes: int, codec: Optional[str]) -> Decoder:
    """Length-prefixed text in ``codec`` (bytes when None: the binary charset)."""
    if codec is None:
        return _length_prefixed(length_bytes)
    if codec == "utf-8":
        return _length_prefixed(length_bytes, "{d}.decode('utf-8', 'surrogateescape')")
    return _length_prefixed(length_bytes, "T{k}({d}, C{k})", T=decode_text, C=codec)


def make_string(max_len: int, codec: Optional[str], pad_binary: bool = False) -> Decoder:
    """CHAR/VARCHAR/BINARY/VARBINARY: a 1-byte length when the column's max byte length is < 256, else 2.

    ``pad_binary``: BINARY(n) (CHAR with the binary charset) values are stored without their trailing 0x00
    pad bytes (``Field_string::pack`` strips the charset's pad character); they are padded back to n bytes."""
    n = 1 if max_len < 256 else 2
    if codec is None and pad_binary:
        return _length_prefixed(n, "{d}.ljust(%d, b'\\x00')" % max_len)
    return _text(n, codec)


def make_blob(length_bytes: int, conv: Optional[Callable[[bytes], Any]] = None) -> Decoder:
    """BLOB/TEXT/JSON/GEOMETRY/VECTOR: a little-endian length of ``length_bytes`` (1-4), then the data
    (``conv(data)`` when given)."""
    if not 1 <= length_bytes <= 4:
        raise UnsupportedError("BLOB-like column with an invalid length size", expected="1..4", found=length_bytes)
    if conv is None:
        return _length_prefixed(length_bytes)
    return _length_prefixed(length_bytes, "C{k}({d})", C=conv)


def make_text_blob(length_bytes: int, codec: Optional[str]) -> Decoder:
    """BLOB/TEXT with a collation: bytes for binary, text otherwise."""
    make_blob(length_bytes)  # checks the length size
    return _text(length_bytes, codec)


def make_bit(meta: int) -> Decoder:
    nbytes = (meta >> 8) + (1 if meta & 0xFF else 0)
    return from_source(("{v} = " + uint_source(nbytes, "big"), f"pos += {nbytes}"))


def make_enum(pack_length: int, values: Optional[tuple[str, ...]]) -> Decoder:
    """ENUM: a 1- or 2-byte 1-based index; the value's name when the names are known ('' for index 0)."""
    if pack_length not in (1, 2):
        raise UnsupportedError("ENUM column with an invalid pack length", expected="1 or 2", found=pack_length)
    read = "{v} = " + uint_source(pack_length)
    if values is None:
        return from_source((read, f"pos += {pack_length}"))
    names = ("",) + tuple(values)
    return from_source((read, "if {v} < %d: {v} = N{k}[{v}]" % len(names), f"pos += {pack_length}"), N=names)


def make_set(pack_length: int, values: Optional[tuple[str, ...]]) -> Decoder:
    """SET: a bitmask of 1-8 bytes; the comma-separated member names when they are known."""
    if not 1 <= pack_length <= 8:
        raise UnsupportedError("SET column with an invalid pack length", expected="1..8", found=pack_length)
    read = "{v} = " + uint_source(pack_length)
    if values is None:
        return from_source((read, f"pos += {pack_length}"))
    names = tuple(values)
    texts: dict[int, Any] = {}

    def text(mask: int) -> Any:
        if mask >> len(names):
            return mask
        got = texts[mask] = ",".join(n for i, n in enumerate(names) if mask >> i & 1)
        return got

    return from_source(
        (
            "_m = " + uint_source(pack_length),
            "{v} = G{k}(_m)",
            "if {v} is None: {v} = M{k}(_m)",
            f"pos += {pack_length}",
        ),
        G=texts.get,
        M=text,
    )


def _vector(raw: bytes) -> tuple[float, ...]:
    count = len(raw) // 4
    return tuple(shortest_float32(raw[i : i + 4]) for i in range(0, count * 4, 4))


def string_real_type(meta: int) -> tuple[int, int]:
    """The CHAR metadata trick (``Field_string::do_save_field_metadata``): (real_type, max byte length or
    ENUM/SET pack length) from the 2-byte metadata ``byte0 << 8 | byte1`` of a MYSQL_TYPE_STRING column."""
    byte0, byte1 = meta >> 8, meta & 0xFF
    if byte0 and (byte0 & 0x30) != 0x30:
        return byte0 | 0x30, (((byte0 & 0x30) ^ 0x30) << 4) | byte1
    return (byte0 or C.MYSQL_TYPE_STRING), byte1


def column_decoder(
    type_code: int,
    meta: int,
    *,
    unsigned: bool = False,
    codec: Optional[str] = None,
    enum_values: Optional[tuple[str, ...]] = None,
    set_values: Optional[tuple[str, ...]] = None,
    hires_fsp: int = 0,
) -> Decoder:
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
        return make_decimal(meta >> 8, meta & 0xFF)
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
        return make_timestamp2(meta)
    if t == C.MYSQL_TYPE_DATETIME2:
        return make_datetime2(meta)
    if t == C.MYSQL_TYPE_TIME2:
        return make_time2(meta)
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
        return make_blob(meta)
    if t == C.MYSQL_TYPE_VECTOR:
        return make_blob(meta, _vector)
    if t == C.MYSQL_TYPE_NULL:
        return _null
    name = C.FIELD_TYPE_NAMES.get(t, str(t))
    raise UnsupportedError(
        f"column type MYSQL_TYPE_{name} can not appear in a row image", expected="a row-based column type", found=t
    )
