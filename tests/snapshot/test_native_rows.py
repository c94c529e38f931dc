"""The native snapshot row reader (``binlake_native.TextRows``) against the Python reader and the protocol.

Values: every column kind's text, as servers print it and in forms they do not, read by the native reader (what
it types, and Python's converters for what it leaves) must give the Arrow array, the zero-date count and the
error the Python reader gives. Fingerprints: each batch's XOR of per-row MD5s must equal
the one computed here with hashlib from the server's formula (``ServerSession.fingerprint``; the real server's
own fingerprint is compared in test_snapshot_mariadb.py). Protocol: long values, rows split over 16 MiB
packets, batch bounds, ERR packets, a cut connection, wrong sequence numbers and malformed rows are typed
errors.
"""

from __future__ import annotations

import hashlib
import io
import random
import struct
from typing import Any, Optional

import pytest

from binlake.binlog.native import load
from binlake.snapshot.columns import ColumnReader, column_reader
from binlake.snapshot.errors import SnapshotAnswerError
from binlake.snapshot.server import TableDef, as_pymysql, native_kinds
from binlake.snapshot.take import _Values
from tests.snapshot.support import packets, text_result
from tests.snapshot.test_snapshot_units import _info

native = load()
pytestmark = pytest.mark.skipif(native is None, reason="the native core is not built (scripts/setup.sh builds it)")


def _batches(data: bytes, columns: list[tuple[str, str]], key: Optional[bytes] = b"key", **bounds: int) -> list:
    rows = native.TextRows(io.BytesIO(data), 1, columns, key, list(range(len(columns))))
    out = []
    while (got := rows.batch(bounds.get("rows", 1 << 20), bounds.get("bytes", 1 << 40))) is not None:
        out.append(got)
    return out


# -- values: the native reader types exactly what Python's converters give ------------------------------------


def _f32_texts(rng: random.Random, n: int) -> list[str]:
    """FLOAT values as the server prints ``CAST(c AS DOUBLE)``: the stored float32 as the shortest double."""
    out = []
    while len(out) < n:
        (x,) = struct.unpack("<f", rng.getrandbits(32).to_bytes(4, "little"))
        if x == x and abs(x) != float("inf"):
            out.append(repr(x))
    return out


def _cases() -> list[tuple[str, dict[str, Any], list[Any], list[Any]]]:
    """(name, column info, values as a server prints them, values in other forms)."""
    rng = random.Random(27)
    ints = lambda lo, hi: [str(rng.randint(lo, hi)) for _ in range(200)] + [str(lo), str(hi), "0"]  # noqa: E731
    odd_ints = ["+5", " 5", "5 ", "1_0", "", "0x1", "007", "-", "--1", "1e3", "٣"]
    decimals = [f"{rng.randint(-(10**10), 10**10 - 1)}.{rng.randint(0, 99):02d}" for _ in range(200)]
    return [
        ("tinyint", _info("tinyint(4)", "tinyint"), ints(-128, 127), odd_ints + ["128", "-129"]),
        ("smallint unsigned", _info("smallint(5) unsigned", "smallint"), ints(0, 65535), ["65536", "-1"]),
        ("int", _info("int(11)", "int"), ints(-(2**31), 2**31 - 1), odd_ints + ["2147483648"]),
        ("bigint", _info("bigint(20)", "bigint"), ints(-(2**63), 2**63 - 1), ["9223372036854775808"]),
        ("bigint unsigned", _info("bigint(20) unsigned", "bigint"), ints(0, 2**64 - 1), ["18446744073709551616"]),
        ("year", _info("year(4)", "year"), ["2024", "0000", "1901", "2155"], ["99999"]),
        (
            "decimal",
            _info("decimal(12,2)", "decimal", p=12, s=2),
            decimals + ["0.00", "-0.00", "9999999999.99", "-9999999999.99"],
            ["5.5", "5", "1.234", "12345678901.00", "1e5", ".5", "5.", "-", "+1.00", " 1.00", "1,00", ""],
        ),
        ("decimal(5,0)", _info("decimal(5,0)", "decimal", p=5, s=0), ["12345", "-99999", "0"], ["1.0", "123456"]),
        ("decimal(40,5)", _info("decimal(40,5)", "decimal", p=40, s=5), ["1" * 35 + ".12345", "-0.00001"], []),
        (
            "float",
            _info("float", "float"),
            _f32_texts(rng, 300) + ["0", "-0", "3.4028234663852886e38", "1.401298464324817e-45"],
            ["1e39", "-1e39", "3.4028235677973366e38", "1e-50", "nan", "inf", "1_0", ""],
        ),
        (
            "double",
            _info("double", "double"),
            [repr(rng.uniform(-1e9, 1e9)) for _ in range(200)]
            + [repr(struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]) for _ in range(200)]
            + ["1e100", "-1.5e-7", "1.7976931348623157e308", "5e-324", "0", "-0"],
            ["1e400", "nan", "Infinity", "1_0", "", "."],
        ),
        (
            "date",
            _info("date", "date"),
            ["2024-02-29", "1000-01-01", "9999-12-31", "0001-01-01", "1970-01-01", "1969-12-31"],
            ["0000-00-00", "2023-02-29", "2024-00-10", "2024-13-01", "2024/02/29", "2024-2-9", "", "0000-01-01"],
        ),
        (
            "datetime(6)",
            _info("datetime(6)", "datetime", fsp=6),
            ["2024-03-01 10:00:00.123456", "1000-01-01 00:00:00.000000", "9999-12-31 23:59:59.999999"],
            [
                "0000-00-00 00:00:00.000000",
                "2024-03-01 24:00:00.000000",
                "2024-03-01 10:60:00",
                "2024-03-01 10:00:00.",
                "2024-03-01T10:00:00",
                "2024-03-01 10:00:00.1234567",
                "2024-02-30 10:00:00",
            ],
        ),
        (
            "datetime",
            _info("datetime", "datetime", fsp=0),
            ["2024-03-01 10:00:00", "1969-12-31 23:59:59"],
            ["2024-03-01 10:00:00.5", "2024-03-01"],
        ),
        (
            "timestamp(3)",
            _info("timestamp(3)", "timestamp", fsp=3),
            ["2038-01-19 03:14:07.999", "1970-01-01 00:00:01.000"],
            ["0000-00-00 00:00:00.000"],
        ),
        ("time(2)", _info("time(2)", "time", fsp=2), ["-838:59:59.00", "12:00:00.50", "00:00:00.00"], []),
        ("json", _info("json", "json"), ['{"a": 1}', '"é😀"', "[]"], []),
        (
            "varchar utf8mb4",
            _info("varchar(20)", "varchar", "utf8mb4"),
            [b"plain", "é€😀".encode(), b"", b"a\x00b"],
            [b"\xff\xfe", b"\xed\xa0\x80", b"\xc3", b"\xf4\x90\x80\x80"],
        ),
        ("char ascii", _info("char(3)", "char", "ascii"), [b"abc", b""], [b"\xe9"]),
        ("char latin1", _info("char(3)", "char", "latin1"), [b"\xe9\x80", b"abc"], []),
        ("varbinary", _info("varbinary(9)", "varbinary"), [b"\x00\xff", b"", bytes(range(256))], []),
        ("bit(5)", _info("bit(5)", "bit", p=5), [b"\x1f", b"\x00"], []),
        ("point", _info("point", "point"), [b"\x00" * 25], []),
    ]


CASES = _cases()


def _table(reader: ColumnReader) -> TableDef:
    return TableDef("d", "t", "InnoDB", (reader,), (), "", 0)


def _python(reader: ColumnReader, encoding: Optional[str], raw: list[Optional[bytes]]) -> tuple:
    values = _Values(_table(reader), "w")
    try:
        array = values.column(0, [as_pymysql(v, encoding) for v in raw])
    except SnapshotAnswerError:
        return ("error",)
    return array, values.invalid


def _native(reader: ColumnReader, encoding: Optional[str], raw: list[Optional[bytes]]) -> tuple:
    import pyarrow as pa

    from binlake.binlog.columnar import ArrowCapsules

    kinds = native_kinds([reader], [encoding])
    [(capsules, count, untyped, _, _, _)] = _batches(text_result([[v] for v in raw]), kinds)
    values = _Values(_table(reader), "w")
    array = pa.record_batch(ArrowCapsules(capsules)).column(0)
    assert count == len(raw)
    try:
        if untyped:
            array = values.column(0, [as_pymysql(v, encoding) for v in array.to_pylist()])
    except SnapshotAnswerError:
        return ("error",), untyped
    return (array, values.invalid), untyped


def _same(got: Any, expected: Any) -> bool:
    """Equal types and values (NaN equal to NaN, -0.0 unequal to 0.0)."""
    return got.type == expected.type and [repr(v) for v in got.to_pylist()] == [repr(v) for v in expected.to_pylist()]


@pytest.mark.parametrize("name, info, printed, other", CASES, ids=[c[0] for c in CASES])
def test_each_kind_gives_what_the_python_reader_gives(name: str, info: dict, printed: list, other: list) -> None:
    reader = column_reader(info, where="t")
    encoding = None if reader.native[1] else "utf8"
    as_bytes = [v if isinstance(v, bytes) else v.encode() for v in printed]
    expected = _python(reader, encoding, as_bytes + [None])
    got, untyped = _native(reader, encoding, as_bytes + [None])
    assert expected != ("error",) and _same(got[0], expected[0]) and got[1] == expected[1] == {}, name
    assert untyped == ([0] if reader.native[0] == "raw" else []), "the printed forms are typed natively"
    for v in other:  # each other form alone, then among printed values: Python decides, and so the same
        raw = v if isinstance(v, bytes) else v.encode()
        for column in ([raw], as_bytes[:3] + [raw, None]):
            expected = _python(reader, encoding, column)
            got, _ = _native(reader, encoding, column)
            assert got[0] == "error" if expected == ("error",) else _same(got[0], expected[0]), (name, v)
            assert expected == ("error",) or got[1] == expected[1], (name, v)


def test_a_column_sent_in_another_form_than_asked_is_typed_by_python() -> None:
    text_col = column_reader(_info("varchar(20)", "varchar", "utf8mb4"), where="t")
    int_col = column_reader(_info("int(11)", "int"), where="t")
    assert native_kinds([text_col, int_col], ["utf8", None]) == [("c", "raw"), ("c", "raw")]
    assert native_kinds([text_col, int_col], [None, "ascii"]) == [("c", "utf8"), ("c", "int32")]


# -- fingerprints ------------------------------------------------------------------------------------------------


def _fingerprint(key: bytes, rows: list[list[Optional[bytes]]]) -> tuple[int, int]:
    """``ServerSession.fingerprint``'s formula: per row MD5(key, length:value or N for each value), XORed."""
    a = b = 0
    for r in rows:
        d = hashlib.md5(key + b"".join(b"N" if v is None else b"%d:%s" % (len(v), v) for v in r)).digest()
        a, b = a ^ int.from_bytes(d[:8], "big"), b ^ int.from_bytes(d[8:], "big")
    return a, b


def test_each_batch_carries_the_fingerprint_of_its_rows() -> None:
    rng = random.Random(5)
    rows = [
        [str(i).encode(), None if i % 7 == 0 else rng.randbytes(rng.randint(0, 300)), b"2024-01-01"]
        for i in range(1000)
    ]
    cols = [("id", "int64"), ("v", "bytes"), ("d", "date")]
    batches = _batches(text_result(rows), cols, key=b"0123abcd", rows=128)
    assert [b[1] for b in batches] == [128] * 7 + [104]
    at = 0
    for _, count, _, a, b, last in batches:
        assert (a, b) == _fingerprint(b"0123abcd", rows[at : at + count])
        assert last == rows[at + count - 1]
        at += count
    assert _batches(text_result(rows[:3]), cols, key=None)[0][3:5] == (0, 0)


# -- the protocol ------------------------------------------------------------------------------------------------


def test_long_values_and_rows_over_16_mibpackets() -> None:
    import pyarrow as pa

    from binlake.binlog.columnar import ArrowCapsules

    rows = [[b"1", b"x" * 300], [b"2", b"y" * 70_000], [b"3", b"z" * (0xFFFFFF + 10)], [b"4", b""], [b"5", None]]
    [(capsules, count, untyped, _, _, last)] = _batches(text_result(rows), [("id", "int32"), ("v", "bytes")])
    batch = pa.record_batch(ArrowCapsules(capsules))
    assert count == 5 and untyped == [] and last == [b"5", None]
    assert batch.column(0).to_pylist() == [1, 2, 3, 4, 5]
    assert batch.column(1).to_pylist() == [r[1] for r in rows]


def test_a_batch_ends_at_its_row_or_byte_bound_and_the_next_goes_on() -> None:
    rows = [[str(i).encode(), b"v" * 100] for i in range(50)]
    data = text_result(rows)
    assert [b[1] for b in _batches(data, [("id", "int32"), ("v", "bytes")], bytes=1000)] == [10] * 5
    reader = native.TextRows(io.BytesIO(data + b"next"), 1, [("id", "int32"), ("v", "bytes")], None, [0])
    while reader.batch(7, 1 << 30) is not None:
        pass
    assert reader.seq == 52  # 50 rows and the EOF packet after sequence number 1


@pytest.mark.parametrize(
    "data, error, lost",
    [
        (packets([b"\x011", b"\xff\x15\x04#HY000Query execution was interrupted"]), "ServerError", None),
        (text_result([[b"1"]], end=b"")[:-1], "ProtocolError", True),  # the connection closed in a packet
        (text_result([[b"1"]], end=b""), "ProtocolError", True),  # ... between packets, before the EOF packet
        (b"\x02\x00\x00\x05\x011", "ProtocolError", False),  # sequence number 5 where 1 was expected
        (b"\x02\x00\x00\x00\x011", "ProtocolError", True),  # 0: MariaDB's error at shutdown
        (packets([b"\x011\x012"]), "ProtocolError", False),  # two values in a row of one
        (packets([b""]), "ProtocolError", False),  # no value
        (packets([b"\x05ab"]), "ProtocolError", False),  # a value longer than its packet
        (packets([b"\xfc\x01"]), "ProtocolError", False),  # a length cut
        (packets([b"\xff"]), "ServerError", None),  # an ERR packet, however short
    ],
)
def test_broken_results_are_typed_errors(data: bytes, error: str, lost: Optional[bool]) -> None:
    with pytest.raises(getattr(native, error)) as caught:
        _batches(data, [("id", "int32")])
    if lost is not None:
        message, was_lost = caught.value.args
        assert was_lost is lost and isinstance(message, str) and message
    else:
        assert caught.value.args[0] == data[4:] if data[4] == 0xFF else caught.value.args[0].startswith(b"\xff")


def test_an_unknown_kind_no_column_or_a_last_column_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown kind"):
        native.TextRows(io.BytesIO(b""), 1, [("c", "int128")], None, [])
    for columns, last in (([], []), ([("c", "int32")], [1])):
        with pytest.raises(ValueError, match="no columns"):
            native.TextRows(io.BytesIO(b""), 1, columns, None, last)
