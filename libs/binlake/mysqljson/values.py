"""Value types for JSON opaque values, and their binary forms.

The value model of this package: ``dict`` (members in stored order), ``list``, ``str``, ``int``, ``float``,
``bool``, ``None`` (JSON null), ``decimal.Decimal`` (a DECIMAL opaque), and the frozen dataclasses below for the
other opaque values MySQL can hold in a JSON document (``Json_datetime`` and ``Json_opaque`` in sql/json_dom.h).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from decimal import Decimal

from binlake.mysqljson.errors import JsonCorruptError, JsonEncodeError

# enum_field_types (include/field_types.h) values that matter inside JSON opaque values.
MYSQL_TYPE_TIMESTAMP = 7
MYSQL_TYPE_DATE = 10
MYSQL_TYPE_TIME = 11
MYSQL_TYPE_DATETIME = 12
MYSQL_TYPE_VARCHAR = 15
MYSQL_TYPE_BIT = 16
MYSQL_TYPE_NEWDECIMAL = 246
MYSQL_TYPE_BLOB = 252
MYSQL_TYPE_VAR_STRING = 253
MYSQL_TYPE_STRING = 254
MYSQL_TYPE_GEOMETRY = 255

DECIMAL_MAX_PRECISION = 65
DECIMAL_MAX_SCALE = 30
DIG_PER_DEC1 = 9
_DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
_POW10 = tuple(10**i for i in range(10))


@dataclass(frozen=True, slots=True)
class JsonOpaque:
    """An opaque value of any other MySQL type (BIT, BLOB, VARBINARY, GEOMETRY, ...), as ``Json_opaque``.

    MySQL prints it as ``"base64:type<field_type>:<base64 of data>"``; an opaque of type VAR_STRING (253) prints
    as a plain JSON string of its bytes (``wrapper_to_string`` in sql/json_dom.cc).
    """

    field_type: int
    data: bytes

    def to_text(self) -> str:
        if self.field_type == MYSQL_TYPE_VAR_STRING:
            return self.data.decode("utf-8", "replace")
        return f"base64:type{self.field_type}:{base64.b64encode(self.data).decode('ascii')}"


@dataclass(frozen=True, slots=True)
class JsonDate:
    """A DATE in a JSON document (``Json_datetime`` with MYSQL_TYPE_DATE). Zero dates are allowed."""

    year: int
    month: int
    day: int

    field_type = MYSQL_TYPE_DATE

    def to_text(self) -> str:
        """``my_TIME_to_str`` for MYSQL_TIMESTAMP_DATE: ``YYYY-MM-DD``."""
        return f"{self.year:04d}-{self.month:02d}-{self.day:02d}"

    def packed(self) -> int:
        return _datetime_packed(self.year, self.month, self.day, 0, 0, 0, 0)


@dataclass(frozen=True, slots=True)
class JsonDatetime:
    """A DATETIME or TIMESTAMP in a JSON document (``Json_datetime``); ``field_type`` tells which."""

    year: int
    month: int
    day: int
    hour: int = 0
    minute: int = 0
    second: int = 0
    microsecond: int = 0
    field_type: int = MYSQL_TYPE_DATETIME

    def to_text(self) -> str:
        """``my_TIME_to_str(t, 6)``: ``YYYY-MM-DD HH:MM:SS.ffffff`` (JSON always prints 6 decimals)."""
        return (
            f"{self.year:04d}-{self.month:02d}-{self.day:02d} "
            f"{self.hour:02d}:{self.minute:02d}:{self.second:02d}.{self.microsecond:06d}"
        )

    def packed(self) -> int:
        return _datetime_packed(self.year, self.month, self.day, self.hour, self.minute, self.second, self.microsecond)


@dataclass(frozen=True, slots=True)
class JsonTime:
    """A TIME in a JSON document (``Json_datetime`` with MYSQL_TYPE_TIME); hours may exceed 23."""

    hour: int
    minute: int = 0
    second: int = 0
    microsecond: int = 0
    negative: bool = False

    field_type = MYSQL_TYPE_TIME

    def to_text(self) -> str:
        """``my_TIME_to_str(t, 6)`` for MYSQL_TIMESTAMP_TIME: ``[-]HH:MM:SS.ffffff``."""
        sign = "-" if self.negative else ""
        return f"{sign}{self.hour:02d}:{self.minute:02d}:{self.second:02d}.{self.microsecond:06d}"

    def packed(self) -> int:
        """``TIME_to_longlong_time_packed``."""
        hms = (self.hour << 12) | (self.minute << 6) | self.second
        tmp = (hms << 24) + self.microsecond
        return -tmp if self.negative else tmp


JsonTemporal = JsonDate | JsonDatetime | JsonTime


def _datetime_packed(year: int, month: int, day: int, hour: int, minute: int, second: int, micro: int) -> int:
    """``TIME_to_longlong_datetime_packed`` (non-negative values only, as DATE/DATETIME are)."""
    ymd = ((year * 13 + month) << 5) | day
    hms = (hour << 12) | (minute << 6) | second
    return (((ymd << 17) | hms) << 24) + micro


def temporal_from_packed(field_type: int, packed: int) -> JsonTemporal:
    """``TIME_from_longlong_packed``: the 8-byte packed integer of a temporal opaque value."""
    if field_type == MYSQL_TYPE_TIME:
        negative = packed < 0
        tmp = -packed if negative else packed
        hms = tmp >> 24
        return JsonTime((hms >> 12) % (1 << 10), (hms >> 6) % (1 << 6), hms % (1 << 6), tmp % (1 << 24), negative)
    if packed < 0:
        raise JsonCorruptError(f"negative packed value {packed} for temporal type {field_type}")
    micro = packed % (1 << 24)
    ymdhms = packed >> 24
    ymd = ymdhms >> 17
    ym = ymd >> 5
    hms = ymdhms % (1 << 17)
    year, month, day = ym // 13, ym % 13, ymd % (1 << 5)
    if field_type == MYSQL_TYPE_DATE:
        return JsonDate(year, month, day)
    return JsonDatetime(year, month, day, hms >> 12, (hms >> 6) % (1 << 6), hms % (1 << 6), micro, field_type)


def decimal_binary_size(precision: int, scale: int) -> int:
    """``decimal_bin_size``: bytes of the binary DECIMAL(precision, scale) form."""
    intg = precision - scale
    return (
        (intg // DIG_PER_DEC1) * 4
        + _DIG2BYTES[intg % DIG_PER_DEC1]
        + (scale // DIG_PER_DEC1) * 4
        + _DIG2BYTES[scale % DIG_PER_DEC1]
    )


def decimal_from_opaque(data: bytes) -> Decimal:
    """``Json_decimal::convert_from_binary``: precision byte, scale byte, then ``bin2decimal`` bytes.

    Like the server's reader, which checks only that the bytes fit ``decimal_bin_size(precision, scale)``, a
    precision above DECIMAL_MAX_PRECISION (65: what MySQL writes) is read by its binary layout."""
    if len(data) < 2:
        raise JsonCorruptError(f"DECIMAL opaque value needs 2 bytes of precision and scale, found {len(data)}")
    precision, scale = data[0], data[1]
    if not (0 < precision and scale <= DECIMAL_MAX_SCALE and scale <= precision):
        raise JsonCorruptError(f"DECIMAL opaque value has invalid precision {precision} / scale {scale}")
    size = decimal_binary_size(precision, scale)
    if size != len(data) - 2:
        raise JsonCorruptError(f"DECIMAL({precision},{scale}) opaque value needs {size} bytes, found {len(data) - 2}")
    raw = bytearray(data[2:])
    negative = not (raw[0] & 0x80)
    raw[0] ^= 0x80
    if negative:
        raw = bytearray(b ^ 0xFF for b in raw)
    intg = precision - scale
    groups: list[int] = []  # (digit count) per group, in byte order
    lead = intg % DIG_PER_DEC1
    if lead:
        groups.append(lead)
    groups.extend([DIG_PER_DEC1] * (intg // DIG_PER_DEC1))
    frac_groups = [DIG_PER_DEC1] * (scale // DIG_PER_DEC1)
    if scale % DIG_PER_DEC1:
        frac_groups.append(scale % DIG_PER_DEC1)
    pos = 0
    parts: list[str] = []
    for index, digits in enumerate(groups + frac_groups):
        nbytes = 4 if digits == DIG_PER_DEC1 else _DIG2BYTES[digits]
        word = int.from_bytes(raw[pos : pos + nbytes], "big")
        pos += nbytes
        if word >= _POW10[digits]:
            raise JsonCorruptError(f"DECIMAL opaque value has an invalid digit group {word}")
        parts.append(f"{word:0{digits}d}")
        if index == len(groups) - 1 and frac_groups:
            parts.append(".")
    if not groups:
        parts.insert(0, "0.")
    text = "".join(parts) or "0"
    return Decimal(("-" if negative else "") + text)


def decimal_to_opaque(value: Decimal) -> bytes:
    """``Json_decimal::get_binary``: precision and scale bytes, then ``decimal2bin``.

    Precision is the smallest that holds the value with at least one integer digit, as MySQL gives literals.
    """
    if not value.is_finite():
        raise JsonEncodeError(f"{value} has no MySQL DECIMAL form")
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    scale = max(0, -exponent)
    digit_text = ("".join(map(str, digits)) + "0" * max(0, exponent)).rjust(scale + 1, "0")
    split = len(digit_text) - scale
    int_text = digit_text[:split].lstrip("0") or "0"
    frac_text = digit_text[split:]
    intg = len(int_text)
    precision = intg + scale
    if precision > DECIMAL_MAX_PRECISION or scale > DECIMAL_MAX_SCALE:
        raise JsonEncodeError(f"{value} exceeds DECIMAL({DECIMAL_MAX_PRECISION},{DECIMAL_MAX_SCALE})")
    out = bytearray()
    lead = intg % DIG_PER_DEC1
    chunks = []
    if lead:
        chunks.append(int_text[:lead])
    chunks.extend(int_text[i : i + DIG_PER_DEC1] for i in range(lead, intg, DIG_PER_DEC1))
    chunks.extend(frac_text[i : i + DIG_PER_DEC1] for i in range(0, scale, DIG_PER_DEC1))
    for chunk in chunks:
        nbytes = 4 if len(chunk) == DIG_PER_DEC1 else _DIG2BYTES[len(chunk)]
        word = int(chunk)
        out += word.to_bytes(nbytes, "big")
    if sign and any(digits):
        out = bytearray(b ^ 0xFF for b in out)
    out[0] ^= 0x80
    return bytes((precision, scale)) + bytes(out)
