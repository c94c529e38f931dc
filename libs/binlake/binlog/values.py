"""Typed column values that Python's own types can not hold faithfully, and collation -> codec mapping.

MySQL temporals include zero dates (``0000-00-00``), TIME beyond 24 hours and negative TIME; these small
immutable values keep them exactly and print MySQL's text (``str(v)``) with the column's fractional digits,
mirroring ``my_date_to_str`` / ``my_time_to_str`` / ``my_datetime_to_str`` (mysys/my_time.cc). Converters to
``datetime`` objects raise ``ValueError`` when the value has no Python equivalent.

Per-row values are typed ``NamedTuple`` subclasses rather than frozen dataclasses: a row decoder makes millions
of them, and ``tuple.__new__(MysqlDateTime, fields)`` costs a tenth of a frozen dataclass ``__init__``. They are
just as immutable and typed (named fields, keyword construction with defaults); equality and hashing also
compare the type, so a ``MysqlDate`` never equals a ``MysqlTimestamp`` (or a plain tuple) with the same fields.
"""

from __future__ import annotations

import codecs
import datetime as _dt
import time as _time
from typing import NamedTuple

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def _frac(microsecond: int, fsp: int) -> str:
    return "." + f"{microsecond:06d}"[:fsp] if fsp > 0 else ""


def _same_type_eq(self: tuple, other: object) -> bool:
    return type(other) is type(self) and tuple.__eq__(self, other)


def _same_type_ne(self: tuple, other: object) -> bool:
    return not _same_type_eq(self, other)


def _typed_hash(self: tuple) -> int:
    return hash((type(self).__name__, tuple(self)))


class MysqlDate(NamedTuple):
    """DATE (and NEWDATE): year/month/day, each possibly 0."""

    year: int
    month: int
    day: int

    def __eq__(self, other: object) -> bool:
        return _same_type_eq(self, other)

    def __ne__(self, other: object) -> bool:
        return _same_type_ne(self, other)

    def __hash__(self) -> int:
        return _typed_hash(self)

    def __str__(self) -> str:
        return f"{self.year:04d}-{self.month:02d}-{self.day:02d}"

    def to_date(self) -> _dt.date:
        return _dt.date(self.year, self.month, self.day)


class MysqlTime(NamedTuple):
    """TIME/TIME2: a signed duration up to 838:59:59.000000."""

    negative: bool
    hour: int
    minute: int
    second: int
    microsecond: int = 0
    fsp: int = 0

    def __eq__(self, other: object) -> bool:
        return _same_type_eq(self, other)

    def __ne__(self, other: object) -> bool:
        return _same_type_ne(self, other)

    def __hash__(self) -> int:
        return _typed_hash(self)

    def __str__(self) -> str:
        sign = "-" if self.negative else ""
        return f"{sign}{self.hour:02d}:{self.minute:02d}:{self.second:02d}{_frac(self.microsecond, self.fsp)}"

    def to_timedelta(self) -> _dt.timedelta:
        td = _dt.timedelta(hours=self.hour, minutes=self.minute, seconds=self.second, microseconds=self.microsecond)
        return -td if self.negative else td


class MysqlDateTime(NamedTuple):
    """DATETIME/DATETIME2: a calendar date and time with no time zone; parts may be 0 (zero dates)."""

    year: int
    month: int
    day: int
    hour: int = 0
    minute: int = 0
    second: int = 0
    microsecond: int = 0
    fsp: int = 0

    def __eq__(self, other: object) -> bool:
        return _same_type_eq(self, other)

    def __ne__(self, other: object) -> bool:
        return _same_type_ne(self, other)

    def __hash__(self) -> int:
        return _typed_hash(self)

    def __str__(self) -> str:
        return (
            f"{self.year:04d}-{self.month:02d}-{self.day:02d} "
            f"{self.hour:02d}:{self.minute:02d}:{self.second:02d}{_frac(self.microsecond, self.fsp)}"
        )

    def to_datetime(self) -> _dt.datetime:
        return _dt.datetime(self.year, self.month, self.day, self.hour, self.minute, self.second, self.microsecond)


class MysqlTimestamp(NamedTuple):
    """TIMESTAMP/TIMESTAMP2: seconds since the epoch (UTC) and microseconds; 0 is the zero timestamp.

    ``str()`` renders it in UTC (as ``SELECT`` does with ``time_zone='+00:00'``).
    """

    seconds: int
    microsecond: int = 0
    fsp: int = 0

    def __eq__(self, other: object) -> bool:
        return _same_type_eq(self, other)

    def __ne__(self, other: object) -> bool:
        return _same_type_ne(self, other)

    def __hash__(self) -> int:
        return _typed_hash(self)

    def __str__(self) -> str:
        if self.seconds == 0 and self.microsecond == 0:
            return "0000-00-00 00:00:00" + _frac(0, self.fsp)
        t = _time.gmtime(self.seconds)  # (an unsigned 32-bit count: always in gmtime's range)
        return f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d} {t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}" + _frac(
            self.microsecond, self.fsp
        )

    def to_datetime(self) -> _dt.datetime:
        if self.seconds == 0 and self.microsecond == 0:
            raise ValueError("the zero TIMESTAMP has no datetime equivalent")
        return _EPOCH + _dt.timedelta(seconds=self.seconds, microseconds=self.microsecond)


# --- collation id -> Python codec ----------------------------------------------------------------------------


def _latin1_mysql(error: UnicodeError) -> tuple[str, int]:
    """MySQL's latin1 is cp1252 with the five undefined bytes mapped to the same C1 code points."""
    if not isinstance(error, UnicodeDecodeError):
        raise error
    bad = error.object[error.start : error.end]
    return "".join(chr(b) for b in bad), error.end


codecs.register_error("binlake-latin1", _latin1_mysql)

# charset name -> Python codec (MySQL charset names, mysys/charset and strings/ctype-*.cc)
_CHARSET_CODECS = {
    "big5": "big5",
    "dec8": "latin-1",
    "cp850": "cp850",
    "hp8": "latin-1",
    "koi8r": "koi8_r",
    "latin1": "cp1252",
    "latin2": "iso8859_2",
    "swe7": "ascii",
    "ascii": "ascii",
    "ujis": "euc_jp",
    "sjis": "shift_jis",
    "hebrew": "iso8859_8",
    "tis620": "tis_620",
    "euckr": "euc_kr",
    "koi8u": "koi8_u",
    "gb2312": "gb2312",
    "greek": "iso8859_7",
    "cp1250": "cp1250",
    "gbk": "gbk",
    "latin5": "iso8859_9",
    "armscii8": "latin-1",
    "utf8mb3": "utf-8",
    "ucs2": "utf-16-be",
    "cp866": "cp866",
    "keybcs2": "latin-1",
    "macce": "mac_latin2",
    "macroman": "mac_roman",
    "cp852": "cp852",
    "latin7": "iso8859_13",
    "utf8mb4": "utf-8",
    "cp1251": "cp1251",
    "utf16": "utf-16-be",
    "utf16le": "utf-16-le",
    "cp1256": "cp1256",
    "cp1257": "cp1257",
    "utf32": "utf-32-be",
    "binary": None,
    "geostd8": "latin-1",
    "cp932": "cp932",
    "eucjpms": "euc_jp",
    "gb18030": "gb18030",
}

# collation id -> charset name, for ids below 256 (MySQL 8.0 / MariaDB share these assignments)
_COLLATION_CHARSETS: dict[int, str] = {}


def _assign(charset: str, *ids: int | range) -> None:
    for item in ids:
        for cid in item if isinstance(item, range) else (item,):
            _COLLATION_CHARSETS[cid] = charset


_assign("big5", 1, 84)
_assign("latin2", 2, 9, 21, 27, 77)
_assign("dec8", 3, 69)
_assign("cp850", 4, 80)
_assign("latin1", 5, 8, 15, 31, 47, 48, 49, 94)
_assign("hp8", 6, 72)
_assign("koi8r", 7, 74)
_assign("swe7", 10, 82)
_assign("ascii", 11, 65)
_assign("ujis", 12, 91)
_assign("sjis", 13, 88)
_assign("cp1251", 14, 23, 50, 51, 52)
_assign("hebrew", 16, 71)
_assign("tis620", 18, 89)
_assign("euckr", 19, 85)
_assign("latin7", 20, 41, 42, 79)
_assign("koi8u", 22, 75)
_assign("gb2312", 24, 86)
_assign("greek", 25, 70)
_assign("cp1250", 26, 34, 44, 66, 99)
_assign("gbk", 28, 87)
_assign("cp1257", 29, 58, 59)
_assign("latin5", 30, 78)
_assign("armscii8", 32, 64)
_assign("utf8mb3", 33, 76, 83, range(192, 224))
_assign("ucs2", 35, 90, range(128, 160))
_assign("cp866", 36, 68)
_assign("keybcs2", 37, 73)
_assign("macce", 38, 43)
_assign("macroman", 39, 53)
_assign("cp852", 40, 81)
_assign("utf8mb4", 45, 46, range(224, 248), range(255, 256))
_assign("cp1256", 57, 67)
_assign("utf16", 54, 55, range(101, 125))
_assign("utf16le", 56, 62)
_assign("utf32", 60, 61, range(160, 184))
_assign("binary", 63)
_assign("geostd8", 92, 93)
_assign("cp932", 95, 96)
_assign("eucjpms", 97, 98)
_assign("gb18030", 248, 249, 250)


def collation_codec(collation_id: int | None) -> str | None:
    """The Python codec for a MySQL/MariaDB collation id; None for ``binary`` (63) or no collation.

    Ids from 256 up are MySQL 8.0's utf8mb4 collations (255-323) and MariaDB's UCA-14 and utf8mb4 ids, which
    all encode utf8mb4 (MariaDB's non-utf8 ids above 256 are rare; they decode as UTF-8 with the raw bytes kept
    via surrogateescape).
    """
    if collation_id is None:
        return None
    name = _COLLATION_CHARSETS.get(collation_id)
    if name is None:
        return "utf-8"
    return _CHARSET_CODECS[name]


def decode_text(raw: bytes, codec: str) -> str:
    """Decode column text with its charset's codec; undecodable bytes are kept (surrogateescape)."""
    if codec == "cp1252":
        return raw.decode("cp1252", "binlake-latin1")
    try:
        return raw.decode(codec)
    except UnicodeDecodeError:
        return raw.decode(codec if codec.startswith("utf-8") else "latin-1", "surrogateescape")


def charset_collation_id(charset: str) -> int | None:
    """A collation id of a MySQL charset name (its lowest: same codec as every other of the charset)."""
    name = charset.lower()
    if name == "utf8":
        name = "utf8mb3"
    ids = [cid for cid, cs in _COLLATION_CHARSETS.items() if cs == name]
    return min(ids) if ids else None
