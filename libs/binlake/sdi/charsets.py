"""Collation id -> character set, Python codec and ``mbmaxlen``, for the collations MySQL 8 ships.

Mirrors the ids of ``strings/ctype-*.cc`` (``CHARSET_INFO::number``) as listed by
``INFORMATION_SCHEMA.COLLATIONS``; only what SDI decoding needs (ENUM/SET element names, key-prefix
lengths in characters) is kept.
"""

from __future__ import annotations

from typing import NamedTuple


class Charset(NamedTuple):
    name: str
    codec: str
    mbmaxlen: int


_CHARSETS = {
    "big5": Charset("big5", "big5", 2),
    "latin2": Charset("latin2", "iso8859_2", 1),
    "dec8": Charset("dec8", "latin_1", 1),
    "cp850": Charset("cp850", "cp850", 1),
    "hp8": Charset("hp8", "latin_1", 1),
    "koi8r": Charset("koi8r", "koi8_r", 1),
    "latin1": Charset("latin1", "cp1252", 1),
    "swe7": Charset("swe7", "ascii", 1),
    "ascii": Charset("ascii", "ascii", 1),
    "ujis": Charset("ujis", "euc_jp", 3),
    "sjis": Charset("sjis", "shift_jis", 2),
    "cp1251": Charset("cp1251", "cp1251", 1),
    "hebrew": Charset("hebrew", "iso8859_8", 1),
    "tis620": Charset("tis620", "tis_620", 1),
    "euckr": Charset("euckr", "euc_kr", 2),
    "latin7": Charset("latin7", "iso8859_13", 1),
    "koi8u": Charset("koi8u", "koi8_u", 1),
    "gb2312": Charset("gb2312", "gb2312", 2),
    "greek": Charset("greek", "iso8859_7", 1),
    "cp1250": Charset("cp1250", "cp1250", 1),
    "gbk": Charset("gbk", "gbk", 2),
    "cp1257": Charset("cp1257", "cp1257", 1),
    "latin5": Charset("latin5", "iso8859_9", 1),
    "armscii8": Charset("armscii8", "latin_1", 1),
    "utf8mb3": Charset("utf8mb3", "utf-8", 3),
    "ucs2": Charset("ucs2", "utf-16-be", 2),
    "cp866": Charset("cp866", "cp866", 1),
    "keybcs2": Charset("keybcs2", "latin_1", 1),
    "macce": Charset("macce", "mac_latin2", 1),
    "macroman": Charset("macroman", "mac_roman", 1),
    "cp852": Charset("cp852", "cp852", 1),
    "utf8mb4": Charset("utf8mb4", "utf-8", 4),
    "utf16": Charset("utf16", "utf-16-be", 4),
    "utf16le": Charset("utf16le", "utf-16-le", 4),
    "cp1256": Charset("cp1256", "cp1256", 1),
    "utf32": Charset("utf32", "utf-32-be", 4),
    "binary": Charset("binary", "latin_1", 1),
    "geostd8": Charset("geostd8", "latin_1", 1),
    "cp932": Charset("cp932", "cp932", 2),
    "eucjpms": Charset("eucjpms", "euc_jp", 3),
    "gb18030": Charset("gb18030", "gb18030", 4),
}

_BY_ID: dict[int, str] = {}


def _ids(charset: str, *ids: int | range) -> None:
    for item in ids:
        for cid in item if isinstance(item, range) else (item,):
            _BY_ID[cid] = charset


# fmt: off  (a table: the collation ids of each character set, several to a line)
_ids("big5", 1, 84)
_ids("latin2", 2, 9, 21, 27, 77)
_ids("dec8", 3, 69)
_ids("cp850", 4, 80)
_ids("latin1", 5, 8, 15, 31, 47, 48, 49, 94)
_ids("hp8", 6, 72)
_ids("koi8r", 7, 74)
_ids("swe7", 10, 82)
_ids("ascii", 11, 65)
_ids("ujis", 12, 91)
_ids("sjis", 13, 88)
_ids("cp1251", 14, 23, 50, 51, 52)
_ids("hebrew", 16, 71)
_ids("tis620", 18, 89)
_ids("euckr", 19, 85)
_ids("latin7", 20, 41, 42, 79)
_ids("koi8u", 22, 75)
_ids("gb2312", 24, 86)
_ids("greek", 25, 70)
_ids("cp1250", 26, 34, 44, 66, 99)
_ids("gbk", 28, 87)
_ids("cp1257", 29, 58, 59)
_ids("latin5", 30, 78)
_ids("armscii8", 32, 64)
_ids("utf8mb3", 33, 76, 83, range(192, 216), 223)
_ids("ucs2", 35, 90, range(128, 152), 159)
_ids("cp866", 36, 68)
_ids("keybcs2", 37, 73)
_ids("macce", 38, 43)
_ids("macroman", 39, 53)
_ids("cp852", 40, 81)
_ids("utf8mb4", 45, 46, range(224, 248))
_ids("utf16", 54, 55, range(101, 125))
_ids("utf16le", 56, 62)
_ids("cp1256", 57, 67)
_ids("utf32", 60, 61, range(160, 184))
_ids("binary", 63)
_ids("geostd8", 92, 93)
_ids("cp932", 95, 96)
_ids("eucjpms", 97, 98)
_ids("gb18030", 248, 249, 250)
# fmt: on

BINARY_COLLATION_ID = 63


def charset_of(collation_id: int) -> Charset | None:
    """The character set of a collation id; ids 255 and up are all utf8mb4 (the 0900 and later collations)."""
    if collation_id >= 255:
        return _CHARSETS["utf8mb4"]
    name = _BY_ID.get(collation_id)
    return _CHARSETS[name] if name is not None else None


def decode_text(raw: bytes, collation_id: int) -> str:
    """Text of ``raw`` in the column's character set; bytes no codec can map keep their value (surrogateescape)."""
    cs = charset_of(collation_id)
    codec = cs.codec if cs is not None else "utf-8"
    try:
        return raw.decode(codec)
    except UnicodeDecodeError:
        return raw.decode(codec if codec == "utf-8" else "latin_1", errors="surrogateescape")
