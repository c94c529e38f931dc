"""The ``binlake events|rows|show`` contracts of issue 2: field names, value encodings, payload_pos, diffs, and
one-line errors with a non-zero exit."""

from __future__ import annotations

import itertools
import json
import struct
from pathlib import Path

import pytest

from binlake.cli import main
from tests.binlog import build
from tests.binlog.test_partial import partial_binlog
from tests.support import fixture_path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _datetime2(y: int, mo: int, d: int, h: int, mi: int, s: int) -> bytes:
    return (((((y * 13 + mo) << 5) | d) << 17 | (h << 12 | mi << 6 | s)) + 0x8000000000).to_bytes(5, "big")


def every_type_binlog() -> bytes:
    # t(u INT UNSIGNED, d DECIMAL(5,2), dt DATETIME(3), tm TIME(0), dz DATE, s VARCHAR(10) utf8mb4,
    #   b VARBINARY(4), j JSON, n INT NULL, f FLOAT)
    types = [3, 246, 18, 19, 10, 15, 15, 245, 3, 4]
    meta = bytes([5, 2, 3, 0]) + struct.pack("<H", 40) + struct.pack("<H", 4) + bytes([4, 4])
    optional = (
        build.optional_field(1, bytes([0b10000000]))  # u unsigned; d, n, f signed
        + build.optional_field(3, build.packed(45) + build.packed(63))
        + build.names("u", "d", "dt", "tm", "dz", "s", "b", "j", "n", "f")
    )
    tm = build.table_map(5, "db", "t", types, meta, [True] * 10, optional)
    # JSON {"a": 1}: small object (type 0), count 1, size 12, key entry (offset 11, length 1), value entry
    # (int16 inlined: type 5, value 1), key "a"
    obj = b"\x00" + struct.pack("<HH", 1, 12) + struct.pack("<HH", 11, 1) + bytes([0x05]) + struct.pack("<H", 1) + b"a"
    values = [
        struct.pack("<I", 4294967295),
        bytes([0x7F, 0xFE, 0xCD]),  # DECIMAL(5,2) -1.50
        _datetime2(2024, 2, 29, 23, 59, 58) + (120).to_bytes(2, "big"),
        (0x800000 - ((30 << 12) | (1 << 6) | 2)).to_bytes(3, "big"),  # TIME2 -30:01:02
        b"\0\0\0",  # DATE 0000-00-00
        b"\x03" + "hé".encode(),
        b"\x02\x00\xff",
        struct.pack("<I", len(obj)) + obj,
        b"",  # NULL: no bytes
        struct.pack("<f", 0.5),
    ]
    nulls = [False] * 10
    nulls[8] = True
    row = build.rows_event(30, 5, 10, build.image(nulls, *[v for i, v in enumerate(values) if i != 8]))
    return build.binlog(tm, row)


def test_rows_jsonl_value_encodings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "every.000001"
    path.write_bytes(every_type_binlog())
    code, out, err = run(capsys, "rows", str(path), "--format", "jsonl")
    assert code == 0, err
    (rec,) = [json.loads(line) for line in out.splitlines()]
    assert set(rec) == {"file", "pos", "row", "gtid", "db", "table", "op", "before", "after"}
    assert (rec["file"], rec["row"], rec["gtid"], rec["db"], rec["table"], rec["op"], rec["before"]) == (
        str(path),
        0,
        None,
        "db",
        "t",
        "insert",
        None,
    )
    assert rec["after"] == {
        "u": 4294967295,
        "d": "-1.50",
        "dt": "2024-02-29 23:59:58.012",
        "tm": "-30:01:02",
        "dz": "0000-00-00",
        "s": "hé",
        "b": {"hex": "00ff"},
        "j": '{"a": 1}',
        "n": None,
        "f": 0.5,
    }


def test_rows_partial_json_diffs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "partial.000001"
    path.write_bytes(partial_binlog())
    _code, out, _ = run(capsys, "rows", str(path))
    first, second = (json.loads(line) for line in out.splitlines())
    assert first["before"] == {"id": 1} and first["after"] == {"k": "true"}
    assert first["diffs"]["j"][0] == {"op": "REPLACE", "path": "$.a", "value": "7"}
    assert first["diffs"]["j"][2] == {"op": "REMOVE", "path": "$.c", "value": None}
    assert "diffs" not in second and second["after"] == {"j": "9", "k": None}


def test_events_jsonl_with_payload_pos(capsys: pytest.CaptureFixture[str]) -> None:
    path = fixture_path("binlog/rust_mysql_common/transaction_compression.000001")
    code, out, _ = run(capsys, "events", str(path), "--format", "jsonl")
    recs = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    for r in recs:
        assert {"pos", "type_code", "type", "timestamp", "server_id", "size", "payload_pos"} <= set(r)
    (payload,) = [r for r in recs if r["type"] == "TRANSACTION_PAYLOAD_EVENT"]
    i = recs.index(payload)
    inner = recs[i + 1 : i + 5]
    assert [r["type"] for r in inner] == ["QUERY_EVENT", "TABLE_MAP_EVENT", "WRITE_ROWS_EVENT", "XID_EVENT"]
    assert all(r["payload_pos"] == payload["pos"] for r in inner)
    outer = [r for r in recs if r["payload_pos"] is None]
    assert all(b["pos"] == a["pos"] + a["size"] for a, b in itertools.pairwise(outer))
    code, text, _ = run(capsys, "events", str(path))
    assert code == 0 and len(text.splitlines()) == len(recs)


def test_show_verbose_prints_rows_as_pseudo_sql(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "show", "-v", str(fixture_path("binlog/rust_mysql_common/json.binlog.000001")))
    assert code == 0
    assert "### INSERT INTO `mysql`.`t`\n### SET\n###   @1=1\n" in out
    assert "###   @2=JSON_REPLACE(@2, '$.age', 26)" in out
    assert out.count("# at ") == 36


def test_errors_are_one_line_with_non_zero_exit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "rows", str(fixture_path("binlog/mysql-binlog-connector-rust/non-binlog")))
    assert code != 0 and out == "" and err.count("\n") == 1
    assert "non-binlog, offset 0: not a binlog" in err
    data = bytearray(fixture_path("binlog/rust_mysql_common/json.binlog.000001").read_bytes())
    data[500] ^= 0x10
    bad = tmp_path / "bad.000001"
    bad.write_bytes(bytes(data))
    code, _, err = run(capsys, "events", str(bad))
    assert code != 0 and err.count("\n") == 1 and "CRC32 mismatch" in err and "offset 491" in err
    code, _, err = run(capsys, "events", "--no-verify-checksum", str(bad))
    assert "CRC32" not in err


def test_incomplete_file_reports_cleanly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = fixture_path("binlog/rust_mysql_common/json.binlog.000001").read_bytes()
    cut = tmp_path / "growing.000001"
    cut.write_bytes(data[:1010])  # inside the TABLE_MAP at 1000
    code, out, err = run(capsys, "events", str(cut), "--format", "jsonl")
    assert code == 3 and "incomplete final event" in err and len(out.splitlines()) == 8
    code, out, err = run(capsys, "events", str(cut), "--allow-incomplete")
    assert code == 0 and "note: " in err and len(out.splitlines()) == 8


def no_metadata_binlog(hires_time: bool = True) -> bytes:
    """t(id INT, s VARCHAR(20)[, tm TIME(3)]) as MariaDB logs it with binlog_row_metadata=NO_LOG and
    mysql56_temporal_format=OFF: no names, no charsets, and TIME (type 11) in MariaDB 5.3's hires format, whose
    fractional digits are not in the TABLE_MAP."""
    n = 3 if hires_time else 2
    tm = build.table_map(7, "db", "t", [3, 15, 11][:n], struct.pack("<H", 80), [True] * n)
    # TIME(3) '01:02:03.456': 5 big-endian bytes of 10^-3 s offset by (838:59:59 + 1 s) (sql/field.cc
    # Field_time_hires::store_TIME: zero_point = (TIME_MAX_VALUE_SECONDS + 1) * 10^fsp)
    hires = (3723_456 + (3020399 + 1) * 1000).to_bytes(5, "big")
    rows = build.image(
        [False] * n, struct.pack("<i", 1), b"\x03" + "été".encode("latin-1"), hires[: 5 * (n - 2)]
    ) + build.image([False, False, True][:n], struct.pack("<i", 2), b"\x02ok")
    return build.binlog(tm, build.rows_event(30, 7, n, rows), server_version="10.11.6-MariaDB-log")


def test_rows_text_that_is_not_utf8_comes_out_as_hex(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "nolog.000001"
    path.write_bytes(no_metadata_binlog(hires_time=False))
    code, out, err = run(capsys, "rows", str(path), "--format", "jsonl")
    assert code == 0, err
    out.encode("utf-8")  # raises on surrogate escapes: every line must be valid UTF-8
    first, second = (json.loads(line)["after"] for line in out.splitlines())
    assert first["@2"] == {"hex": "e974e9"}  # latin1 'été' is not UTF-8: its bytes, losslessly
    assert second == {"@1": 2, "@2": "ok"}


def test_rows_with_a_column_list_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "nolog.000001"
    path.write_bytes(no_metadata_binlog())
    schema = tmp_path / "schema.json"
    schema.write_text(
        json.dumps(
            {
                "tables": [
                    {
                        "db": "db",
                        "table": "t",
                        "columns": ["id", {"name": "s", "charset": "latin1"}, {"name": "tm", "fsp": 3}],
                    }
                ]
            }
        )
    )
    code, out, err = run(capsys, "rows", str(path), "--schema", str(schema))
    assert code == 0, err
    first, second = (json.loads(line)["after"] for line in out.splitlines())
    assert first == {"id": 1, "s": "été", "tm": "01:02:03.456"}
    assert second == {"id": 2, "s": "ok", "tm": None}
    code, out, err = run(capsys, "show", str(path), "-v", "--schema", str(schema))
    assert code == 0 and "'01:02:03.456'" in out, err


def test_bad_schema_file_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "nolog.000001"
    path.write_bytes(no_metadata_binlog())
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"tables": [{"db": "db", "table": "t", "columns": [{"name": "s", "fsp": 9}]}]}))
    code, out, err = run(capsys, "rows", str(path), "--schema", str(schema))
    assert code != 0 and out == ""
    assert len(err.strip().splitlines()) == 1 and "fsp" in err and "schema.json" in err
