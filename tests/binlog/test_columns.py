"""Column value decoding from hand-built bytes: the storage formats of sql/field.cc, strings/decimal.cc and
mysys/my_time.cc, with expected values from the format description, MySQL's own comments (the TIME2 table in
``my_time_packed_from_binary``) and the origin repositories' tests (go-mysql, MySqlCdc)."""

from __future__ import annotations

import struct
from decimal import Decimal

import pytest

from binlake.binlog import constants as C
from binlake.binlog.columns import column_decoder, decimal_size, string_real_type
from binlake.binlog.values import MysqlDate, MysqlDateTime, MysqlTime, MysqlTimestamp, collation_codec
from binlake.mysqljson import BinaryJson


def decode(type_code: int, meta: int, data: bytes, **kw):
    value, end = column_decoder(type_code, meta, **kw)(data, 0)
    assert end == len(data), "decoder must consume exactly the value's bytes"
    return value


@pytest.mark.parametrize(
    "type_code,unsigned,data,expected",
    [
        (C.MYSQL_TYPE_TINY, False, b"\xff", -1),
        (C.MYSQL_TYPE_TINY, True, b"\xff", 255),
        (C.MYSQL_TYPE_SHORT, False, b"\x00\x80", -32768),
        (C.MYSQL_TYPE_SHORT, True, b"\xff\xff", 65535),
        (C.MYSQL_TYPE_INT24, False, b"\xff\xff\xff", -1),
        (C.MYSQL_TYPE_INT24, True, b"\xff\xff\xff", 16777215),
        (C.MYSQL_TYPE_INT24, False, b"\x00\x00\x80", -8388608),
        (C.MYSQL_TYPE_LONG, False, b"\xff\xff\xff\xff", -1),
        (C.MYSQL_TYPE_LONG, True, b"\xff\xff\xff\xff", 4294967295),
        (C.MYSQL_TYPE_LONGLONG, False, b"\xff" * 8, -1),
        (C.MYSQL_TYPE_LONGLONG, True, b"\xff" * 8, 2**64 - 1),
        (C.MYSQL_TYPE_LONGLONG, False, b"\x00" * 7 + b"\x80", -(2**63)),
    ],
)
def test_integers_signed_and_unsigned(type_code: int, unsigned: bool, data: bytes, expected: int) -> None:
    assert decode(type_code, 0, data, unsigned=unsigned) == expected


def test_float_prints_like_mysql_and_double_is_exact() -> None:
    assert decode(C.MYSQL_TYPE_FLOAT, 4, struct.pack("<f", 1.1)) == 1.1
    assert decode(C.MYSQL_TYPE_FLOAT, 4, bytes([0, 0, 0, 192])) == -2.0  # go-mysql test vector
    assert decode(C.MYSQL_TYPE_DOUBLE, 8, bytes([0, 0, 0, 0, 0, 0, 0, 192])) == -2.0
    assert decode(C.MYSQL_TYPE_DOUBLE, 8, struct.pack("<d", 0.1)) == 0.1


@pytest.mark.parametrize(
    "precision,scale,data,expected",
    [
        # go-mysql replication/row_event_test.go decimal vectors (bytes, precision, scale, value)
        (4, 2, bytes([117, 200]), "-10.55"),
        (5, 0, bytes([127, 255, 244]), "-11"),
        (7, 3, bytes([127, 245, 253, 217]), "-10.550"),
        (15, 14, bytes([118, 196, 101, 54, 0, 254, 121, 96]), "-9.99999999999999"),
        (
            30,
            25,
            bytes([128, 0, 0, 0, 188, 97, 78, 53, 183, 191, 135, 0, 135, 253, 217]),
            "0.0123456789012345678912345",
        ),
        (15, 14, bytes([127, 255, 255, 255, 243, 255, 121, 59]), "-0.00000001234500"),
        (30, 5, bytes([128, 0, 0, 0, 0, 0, 4, 210, 29, 205, 139, 148, 0, 195, 80]), "1234500009876.50000"),
        (5, 0, bytes([128, 0, 0]), "0"),
        # MySqlCdc DecimalParserTests, DECIMAL(65,10)
        (
            65,
            10,
            bytes(
                [
                    129,
                    13,
                    251,
                    56,
                    210,
                    6,
                    176,
                    139,
                    229,
                    33,
                    200,
                    92,
                    19,
                    0,
                    16,
                    248,
                    159,
                    19,
                    239,
                    59,
                    244,
                    39,
                    205,
                    127,
                    73,
                    59,
                    2,
                    55,
                    215,
                    2,
                ]
            ),
            "1234567890112233445566778899001112223334445556667778889.9900011112",
        ),
        (
            65,
            10,
            bytes(
                [
                    126,
                    242,
                    4,
                    199,
                    45,
                    249,
                    79,
                    116,
                    26,
                    222,
                    55,
                    163,
                    236,
                    255,
                    239,
                    7,
                    96,
                    236,
                    16,
                    196,
                    11,
                    216,
                    50,
                    128,
                    182,
                    196,
                    253,
                    200,
                    40,
                    253,
                ]
            ),
            "-1234567890112233445566778899001112223334445556667778889.9900011112",
        ),
    ],
)
def test_decimal_exact(precision: int, scale: int, data: bytes, expected: str) -> None:
    assert decimal_size(precision, scale) == len(data)
    value = decode(C.MYSQL_TYPE_NEWDECIMAL, precision << 8 | scale, data)
    assert isinstance(value, Decimal) and format(value, "f") == expected


def test_year_date_and_zero_dates() -> None:
    assert decode(C.MYSQL_TYPE_YEAR, 0, bytes([124])) == 2024
    assert decode(C.MYSQL_TYPE_YEAR, 0, bytes([0])) == 0
    v = (2024 << 9) | (2 << 5) | 29
    assert decode(C.MYSQL_TYPE_DATE, 0, v.to_bytes(3, "little")) == MysqlDate(2024, 2, 29)
    zero = decode(C.MYSQL_TYPE_DATE, 0, b"\0\0\0")
    assert str(zero) == "0000-00-00"
    with pytest.raises(ValueError):
        zero.to_date()


def _time2(negative: bool, h: int, m: int, s: int, micro: int) -> bytes:
    """TIME2 with fsp 5-6 (my_time_packed_to_binary): the packed value ((h<<12|m<<6|s) << 24) + micro, negated
    when negative, plus 0x800000000000, in 6 big-endian bytes."""
    packed = (((h << 12) | (m << 6) | s) << 24) + micro
    return ((-packed if negative else packed) + 0x800000000000).to_bytes(6, "big")


@pytest.mark.parametrize(
    "data,fsp,text",
    [
        # the disk-value table in my_time_packed_from_binary (mysys/my_time.cc), fsp 1-2
        (bytes.fromhex("80000000"), 2, "00:00:00.00"),
        (bytes.fromhex("7fffffff"), 2, "-00:00:00.01"),
        (bytes.fromhex("7fffff9d"), 2, "-00:00:00.99"),
        (bytes.fromhex("7fffff00"), 2, "-00:00:01.00"),
        (bytes.fromhex("7ffffeff"), 2, "-00:00:01.01"),
        (bytes.fromhex("7ffffef6"), 2, "-00:00:01.10"),
        # fsp 3-4: the same layout with a 2-byte fraction in units of 100 microseconds
        (bytes.fromhex("7fffffffff"), 4, "-00:00:00.0001"),
        (bytes.fromhex("7ffffe0000"), 4, "-00:00:02.0000"),
        # fsp 0 and 5-6: the packed value plus an offset
        ((0x800000 + ((838 << 12) | (59 << 6) | 59)).to_bytes(3, "big"), 0, "838:59:59"),
        ((0x800000 - ((838 << 12) | (59 << 6) | 59)).to_bytes(3, "big"), 0, "-838:59:59"),
        ((0x800000 + ((25 << 12) | (0 << 6) | 1)).to_bytes(3, "big"), 0, "25:00:01"),
        (_time2(True, 1, 2, 3, 456789), 6, "-01:02:03.456789"),
        (_time2(False, 100, 0, 0, 1), 6, "100:00:00.000001"),
    ],
)
def test_time2_negative_and_beyond_24_hours(data: bytes, fsp: int, text: str) -> None:
    value = decode(C.MYSQL_TYPE_TIME2, fsp, data)
    assert isinstance(value, MysqlTime) and str(value) == text


def test_old_time_and_datetime_and_timestamp() -> None:
    assert str(decode(C.MYSQL_TYPE_TIME, 0, (-8385959).to_bytes(3, "little", signed=True))) == "-838:59:59"
    assert str(decode(C.MYSQL_TYPE_DATETIME, 0, struct.pack("<Q", 20240229235958))) == "2024-02-29 23:59:58"
    assert str(decode(C.MYSQL_TYPE_DATETIME, 0, bytes(8))) == "0000-00-00 00:00:00"
    assert str(decode(C.MYSQL_TYPE_TIMESTAMP, 0, struct.pack("<I", 86400))) == "1970-01-02 00:00:00"


def _datetime2(y: int, mo: int, d: int, h: int, mi: int, s: int) -> bytes:
    """The 5-byte DATETIME2 integer part: ((year*13+month)<<5|day)<<17 | (h<<12|m<<6|s), offset 2^39."""
    ymd = ((y * 13 + mo) << 5) | d
    return ((ymd << 17 | (h << 12 | mi << 6 | s)) + 0x8000000000).to_bytes(5, "big")


def test_datetime2_with_fractional_seconds_and_zero_date() -> None:
    assert str(decode(C.MYSQL_TYPE_DATETIME2, 0, _datetime2(2024, 2, 29, 23, 59, 58))) == "2024-02-29 23:59:58"
    v = decode(C.MYSQL_TYPE_DATETIME2, 3, _datetime2(1988, 11, 27, 14, 12, 13) + (3450).to_bytes(2, "big"))
    assert str(v) == "1988-11-27 14:12:13.345" and v.microsecond == 345000
    v = decode(C.MYSQL_TYPE_DATETIME2, 6, _datetime2(2000, 1, 1, 0, 0, 0) + (999999).to_bytes(3, "big"))
    assert str(v) == "2000-01-01 00:00:00.999999"
    v = decode(C.MYSQL_TYPE_DATETIME2, 1, _datetime2(2000, 1, 1, 0, 0, 0) + bytes([50]))
    assert str(v) == "2000-01-01 00:00:00.5"
    zero = decode(C.MYSQL_TYPE_DATETIME2, 0, bytes.fromhex("8000000000"))
    assert zero == MysqlDateTime(0, 0, 0) and str(zero) == "0000-00-00 00:00:00"
    assert (
        decode(C.MYSQL_TYPE_DATETIME2, 0, _datetime2(2001, 2, 3, 4, 5, 6)).to_datetime().isoformat()
        == "2001-02-03T04:05:06"
    )


def test_timestamp2_with_fsp() -> None:
    v = decode(C.MYSQL_TYPE_TIMESTAMP2, 3, struct.pack(">I", 1700000000) + (1230).to_bytes(2, "big"))
    assert str(v) == "2023-11-14 22:13:20.123" and v.microsecond == 123000
    assert v.to_datetime().timestamp() == 1700000000.123
    zero = decode(C.MYSQL_TYPE_TIMESTAMP2, 0, b"\0\0\0\0")
    assert zero == MysqlTimestamp(0) and str(zero) == "0000-00-00 00:00:00"
    assert (
        str(decode(C.MYSQL_TYPE_TIMESTAMP2, 6, struct.pack(">I", 0) + (1).to_bytes(3, "big")))
        == "1970-01-01 00:00:00.000001"
    )


def test_bit_enum_set() -> None:
    # BIT(28): metadata bytes (bits % 8 = 4, whole bytes = 3) -> 4 bytes, big-endian
    assert decode(C.MYSQL_TYPE_BIT, 3 << 8 | 4, (0x7B55787).to_bytes(4, "big")) == 0x7B55787
    assert decode(C.MYSQL_TYPE_BIT, 1 << 8 | 0, b"\x20") == 32
    # ENUM/SET travel as MYSQL_TYPE_STRING with the real type in the metadata's first byte
    enum_meta = C.MYSQL_TYPE_ENUM << 8 | 1
    assert decode(C.MYSQL_TYPE_STRING, enum_meta, b"\x02", enum_values=("Low", "Medium", "High")) == "Medium"
    assert decode(C.MYSQL_TYPE_STRING, enum_meta, b"\x00", enum_values=("Low",)) == ""
    assert decode(C.MYSQL_TYPE_STRING, enum_meta, b"\x02") == 2
    set_meta = C.MYSQL_TYPE_SET << 8 | 1
    assert decode(C.MYSQL_TYPE_STRING, set_meta, b"\x05", set_values=("a", "b", "c")) == "a,c"
    assert decode(C.MYSQL_TYPE_STRING, set_meta, b"\x05") == 5
    assert (
        decode(
            C.MYSQL_TYPE_STRING, C.MYSQL_TYPE_ENUM << 8 | 2, b"\x01\x01", enum_values=tuple(str(i) for i in range(300))
        )
        == "256"
    )


def test_char_real_type_metadata_trick() -> None:
    # CHAR(255) utf8mb4: 1020 bytes max; Field_string stores real_type ^ ((1020 & 0x300) >> 4) and 1020 & 0xff
    meta = (0xFE ^ ((1020 & 0x300) >> 4)) << 8 | (1020 & 0xFF)
    assert string_real_type(meta) == (C.MYSQL_TYPE_STRING, 1020)
    cut = decode(C.MYSQL_TYPE_STRING, meta, struct.pack("<H", 3) + "ab€".encode()[:3], codec="utf-8")
    assert cut.encode("utf-8", "surrogateescape") == b"ab\xe2"  # invalid UTF-8 kept, not dropped
    assert decode(C.MYSQL_TYPE_STRING, meta, struct.pack("<H", 5) + "ab€".encode(), codec="utf-8") == "ab€"
    # CHAR(10) latin1: plain metadata, 1-byte length
    assert decode(C.MYSQL_TYPE_STRING, 0xFE << 8 | 10, b"\x03caf", codec="cp1252") == "caf"
    # BINARY(4): binary collation gives bytes
    assert decode(C.MYSQL_TYPE_STRING, 0xFE << 8 | 4, b"\x02ab") == b"ab\x00\x00"


def test_varchar_and_blobs_with_charsets() -> None:
    assert decode(C.MYSQL_TYPE_VARCHAR, 300, b"\x02\x00\xc3\xa9", codec=collation_codec(45)) == "é"
    assert decode(C.MYSQL_TYPE_VARCHAR, 255, b"\x01\xe9", codec=collation_codec(8)) == "é"  # latin1
    assert decode(C.MYSQL_TYPE_VARCHAR, 255, b"\x01\x81", codec=collation_codec(8)) == "\x81"  # MySQL latin1
    assert decode(C.MYSQL_TYPE_VARCHAR, 255, b"\x02\x82\xa0", codec=collation_codec(13)) == "あ"  # sjis
    assert decode(C.MYSQL_TYPE_VARCHAR, 10, b"\x02\xff\x00") == b"\xff\x00"  # VARBINARY
    assert decode(C.MYSQL_TYPE_BLOB, 2, b"\x03\x00abc") == b"abc"
    assert decode(C.MYSQL_TYPE_BLOB, 4, b"\x03\x00\x00\x00abc", codec="utf-8") == "abc"
    assert decode(C.MYSQL_TYPE_BLOB, 1, b"\x02\xc3\xa9", codec=collation_codec(255)) == "é"
    assert collation_codec(63) is None and collation_codec(None) is None


def test_json_geometry_vector_null() -> None:
    # JSON: 4-byte length then MySQL binary JSON (a literal true: type 0x04 value 0x01)
    value = decode(C.MYSQL_TYPE_JSON, 4, b"\x02\x00\x00\x00\x04\x01")
    assert isinstance(value, BinaryJson) and value.text == "true"
    # GEOMETRY: SRID + WKB POINT(1 2)
    wkb = struct.pack("<I", 0) + b"\x01" + struct.pack("<Idd", 1, 1.0, 2.0)
    assert decode(C.MYSQL_TYPE_GEOMETRY, 4, struct.pack("<I", len(wkb)) + wkb) == wkb
    vec = struct.pack("<3f", 1.5, -2.0, 0.1)
    assert decode(C.MYSQL_TYPE_VECTOR, 4, struct.pack("<I", 12) + vec) == (1.5, -2.0, 0.1)
    assert decode(C.MYSQL_TYPE_NULL, 0, b"") is None


def test_mariadb_53_hires_temporals_with_fsp_from_a_schema() -> None:
    # bytes a MariaDB 10.11 server wrote with mysql56_temporal_format=OFF (values from its INSERT statement)
    def hires(type_code: int, fsp: int, data: bytes) -> str:
        return str(decode(type_code, 0, data, hires_fsp=fsp))

    assert hires(C.MYSQL_TYPE_TIME, 3, bytes.fromhex("00b15478eb")) == "-12:34:56.789"
    assert hires(C.MYSQL_TYPE_TIME, 6, bytes.fromhex("057e7bbcf7ff")) == "838:59:59.999999"
    assert hires(C.MYSQL_TYPE_TIMESTAMP, 2, bytes.fromhex("7fffffff63")) == "2038-01-19 03:14:07.99"
    # DATETIME(4) '9999-12-31 23:59:59.9999': MariaDB pack_time / 10^(6-4), 7 bytes big-endian
    packed = ((((((9999 * 13 + 12) * 32 + 31) * 24 + 23) * 60 + 59) * 60 + 59) * 1_000_000 + 999900) // 100
    assert hires(C.MYSQL_TYPE_DATETIME, 4, packed.to_bytes(7, "big")) == "9999-12-31 23:59:59.9999"
    # fsp 0 columns keep the classic formats
    assert str(decode(C.MYSQL_TYPE_TIME, 0, bytes.fromhex("590a80"))) == "-838:59:59"


def test_binary_char_values_are_padded_to_their_length() -> None:
    # BINARY(8) / MariaDB UUID, INET4: Field_string::pack strips the trailing 0x00 pad bytes
    assert decode(C.MYSQL_TYPE_STRING, 0xFE << 8 | 8, b"\x02\x01\x02") == b"\x01\x02" + b"\0" * 6
    assert decode(C.MYSQL_TYPE_STRING, 0xFE << 8 | 4, b"\x00") == b"\0\0\0\0"
    # VARBINARY is not padded; CHAR with a charset is not padded either (trailing spaces are not restored,
    # as SELECT does not show them)
    assert decode(C.MYSQL_TYPE_VARCHAR, 8, b"\x01\x01") == b"\x01"
    assert decode(C.MYSQL_TYPE_STRING, 0xFE << 8 | 8, b"\x01a", codec="utf-8") == "a"
