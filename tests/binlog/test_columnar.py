"""The native decoder core against the pure-Python decoder (issue #17): the same Arrow batches, row by row, and
the same ``binlake rows`` bytes, on every real fixture, on generated MySQL 8 workloads (partial JSON, compressed
transactions, MINIMAL/NOBLOB images), on hand-built hostile input and on mutations of the fuzz corpus; on input
that does not decode both raise the same typed error (class, file, offset, message). Plus the batch layout itself
(binlake.binlog.columnar's docstring) checked against values the decoder gives.

Tests that need the native module skip when it is not built (``bash scripts/setup.sh`` builds it)."""

from __future__ import annotations

import datetime as dt
import io
import random
import struct
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from binlake.binlog import iter_row_changes, native
from binlake.binlog.columnar import iter_table_batches
from binlake.binlog.errors import BinlogError, CorruptEventError, EventTooLargeError, UnknownTableError
from binlake.cli import main as cli_main
from binlake.generate.config import GenerateConfig
from binlake.generate.run import generate
from tests.binlog import build
from tests.support import FIXTURES

ROOT = Path(__file__).resolve().parents[2]
MAX_EVENT = 1 << 20

needs_native = pytest.mark.skipif(
    not native.available(),
    reason="the native decoder core is not built (bash scripts/setup.sh builds it when cargo is installed)",
)


def _fixture_files() -> list[Path]:
    folder = FIXTURES / "binlog"
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []


FIXTURE_FILES = _fixture_files()


def batches(source, engine: str, **kw) -> tuple[list, tuple | None]:
    """(batches as comparable tuples, None) or (None, (error class, message, file, offset))."""
    try:
        out = [
            (b.file, b.db, b.table, b.columns, b.primary_key, b.batch.schema, valid(b.batch).to_pylist())
            for b in iter_table_batches(source, engine=engine, **kw)
        ]
    except BinlogError as exc:
        return None, (type(exc).__name__, str(exc), exc.file, exc.offset)
    return out, None


def valid(batch: pa.RecordBatch) -> pa.RecordBatch:
    batch.validate(full=True)  # offsets, validity bitmaps and UTF-8 of what came through the C interface
    return batch


def assert_same_batches(source, **kw) -> list:
    py, py_err = batches(source, "python", **kw)
    nat, nat_err = batches(source, "native", **kw)
    assert nat_err == py_err
    if py is not None:
        assert len(nat) == len(py)
        for a, b in zip(py, nat):
            assert a[:6] == b[:6]
            for i, (ra, rb) in enumerate(zip(a[6], b[6])):
                assert ra == rb, f"{a[1]}.{a[2]} row {i}"
            assert len(a[6]) == len(b[6])
    return py or []


def rows_output(monkeypatch, path: Path, use_native: bool, *args: str) -> tuple[bytes, str, int]:
    """``binlake rows PATH`` in-process, stdout a real file (the native core writes to its descriptor)."""
    monkeypatch.setenv("BINLAKE_NATIVE", "1" if use_native else "0")
    out_path = path.parent / f".{path.name}.out"
    with open(out_path, "w+b") as f:
        out = io.TextIOWrapper(f, encoding="utf-8", newline="", write_through=True)
        err = io.StringIO()
        monkeypatch.setattr(sys, "stdout", out)
        monkeypatch.setattr(sys, "stderr", err)
        code = cli_main(["rows", str(path), *args])
        out.flush()
    monkeypatch.undo()
    return out_path.read_bytes(), err.getvalue(), code


def assert_same_rows(monkeypatch, path: Path, *args: str) -> bytes:
    py = rows_output(monkeypatch, path, False, *args)
    nat = rows_output(monkeypatch, path, True, *args)
    assert nat == py
    return py[0]


# --- real fixtures ------------------------------------------------------------------------------------------------


@needs_native
@pytest.mark.parametrize("path", FIXTURE_FILES, ids=[str(p.relative_to(FIXTURES)) for p in FIXTURE_FILES])
def test_fixture_batches_and_rows_equal_the_python_decoder(monkeypatch, tmp_path, path: Path) -> None:
    assert_same_batches(path)
    copy = tmp_path / path.name
    copy.write_bytes(path.read_bytes())
    assert_same_rows(monkeypatch, copy)


def test_fixtures_are_there_or_the_reason_is_given() -> None:
    if not FIXTURE_FILES:
        pytest.skip(f"real fixtures not found at {FIXTURES} (a clone without ../shared); set BINLAKE_SHARED")
    assert len(FIXTURE_FILES) >= 40


# --- generated MySQL 8 workloads ------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=["full", "minimal", "noblob"])
def generated(request, tmp_path_factory) -> list[Path]:
    out = tmp_path_factory.mktemp(f"gen-{request.param}")
    generate(
        out,
        GenerateConfig(
            days=1, scale=0.004, compression_share=0.4, max_binlog_size=60_000, row_image=request.param, seed=3
        ),
    )
    return sorted((out / "landing" / "shop-primary").glob("mysql-bin.0*"))


@needs_native
def test_generated_workload_batches_and_rows_equal_the_python_decoder(monkeypatch, generated) -> None:
    ops = set()
    for path in generated:
        for tb in assert_same_batches(path, batch_rows=50):
            ops |= set(tb[6][i]["op"] for i in range(len(tb[6])))
        assert_same_rows(monkeypatch, path)
    assert ops == {"insert", "update", "delete"}


@needs_native
def test_generated_workload_covers_partial_json_and_compressed_transactions(generated) -> None:
    diffs = payload_rows = 0
    for path in generated:
        payloads = {e.pos for e in native_events(path) if e.header.type_code == 40}
        for tb in iter_table_batches(path, engine="native"):
            d = tb.batch.to_pydict()
            diffs += sum(1 for x in d["diffs"] if x)
            payload_rows += sum(1 for p in d["pos"] if p in payloads)
    assert diffs > 0 and payload_rows > 0


# --- the batch layout -----------------------------------------------------------------------------------------


@needs_native
def test_batch_values_are_the_decoders_values_typed_as_silver(generated) -> None:
    """Every column of every row equals the Python decoder's value converted as silver converts it."""
    from binlake.binlog.render import json_value
    from binlake.binlog.silver_types import silver_type, to_silver

    path = generated[0]
    changes = list(iter_row_changes(path))
    rows = []
    for tb in iter_table_batches(path, engine="native"):
        rows += [(tb, r) for r in tb.batch.to_pylist()]
    rows.sort(key=lambda x: (x[1]["pos"], x[1]["row"]))
    assert [(r["pos"], r["row"], r["op"], r["gtid"]) for _, r in rows] == [
        (c.pos, c.row, c.op, c.gtid) for c in changes
    ]
    checked = 0
    for (tb, r), c in zip(rows, changes):
        kinds = {m[0]: silver_type(list(m)) for m in tb.columns}
        for side in ("before", "after"):
            image = getattr(c, side)
            if image is None:
                assert r[side] is None
                continue
            for name, value in image.items():
                want, got = to_silver(kinds[name])(json_value(value)), r[side][name]
                if kinds[name] == "float" and want is not None:
                    want, got = struct.pack("<f", want), struct.pack("<f", got)
                assert got == want, (side, name)
                checked += 1
    assert checked > 1000


def test_layout_names_the_documented_columns() -> None:
    data = build.binlog(
        build.table_map(5, "d", "t", [3], b"", [True]),
        build.rows_event(30, 5, 1, build.image([False], (7).to_bytes(4, "little"))),
    )
    (tb,) = iter_table_batches(data, engine="python")
    assert tb.batch.schema.names == [
        "pos",
        "row",
        "op",
        "gtid",
        "trx_pos",
        "commit_ts",
        "event_type",
        "before",
        "before_present",
        "after",
        "after_present",
        "diffs",
    ]
    assert tb.batch.schema.field("diffs").type == pa.list_(
        pa.struct([pa.field(n, pa.large_string()) for n in ("column", "op", "path", "value")])
    )
    row = tb.batch.to_pylist()[0]
    assert (row["op"], row["before"], row["after"], row["after_present"]) == ("insert", None, {"@1": 7}, None)
    assert tb.columns == (("@1", 3, 3, 0, False, None),) and tb.primary_key is None


@needs_native
def test_positions_gtid_and_commit_time_of_a_compressed_transaction() -> None:
    path = FIXTURES / "binlog" / "rust_mysql_common" / "transaction_compression.000001"
    if not path.exists():
        pytest.skip(f"real fixtures not found at {FIXTURES}")
    payload = next(e for e in native_events(path) if e.header.type_code == 40)
    gtid = next(e for e in native_events(path) if e.header.type_code == 34)  # ANONYMOUS_GTID: no GTID
    (tb,) = iter_table_batches(path, engine="native")
    row = tb.batch.to_pylist()[0]
    assert (row["pos"], row["row"], row["op"], row["after"]) == (payload.pos, 0, "insert", {"@1": 1})
    assert row["trx_pos"] == gtid.pos and row["gtid"] is None
    assert row["commit_ts"] == gtid.body.immediate_commit_timestamp == 1695159109445737
    assert_same_batches(path)


def native_events(path: Path):
    from binlake.binlog import read_events

    with open(path, "rb") as f:
        yield from read_events(f, decode_payloads=False)


@needs_native
def test_typed_values_of_the_bench_types() -> None:
    """DECIMAL, BIGINT UNSIGNED, DATETIME/TIMESTAMP/DATE (a zero date -> null), TIME text, BIT, ENUM/SET names,
    binary bytes and invalid UTF-8 text as silver holds them, from hand-built rows."""
    # columns: DECIMAL(5,2), BIGINT UNSIGNED, DATETIME2(3), TIMESTAMP2(0), DATE, TIME2(0), BIT(12), VARCHAR, BLOB
    types = [246, 8, 18, 17, 10, 19, 16, 15, 252]
    meta = bytes([5, 2]) + bytes([3, 0, 0]) + bytes([0x04, 0x01]) + (40).to_bytes(2, "little") + bytes([2])
    optional = build.optional_field(1, bytes([0b01000000])) + build.optional_field(
        3, b"".join(build.packed(x) for x in (45, 63))
    )
    tm = build.table_map(9, "d", "t", types, meta, [True] * 9, optional)
    dt2 = ((2024 * 13 + 2) << 22 | 29 << 17 | 13 << 12 | 14 << 6 | 15) + (1 << 39)
    values = [
        bytes([0x80, 123, 45]),
        (2**64 - 1).to_bytes(8, "little"),
        dt2.to_bytes(5, "big") + (456 * 10).to_bytes(2, "big"),
        (1700000000).to_bytes(4, "big"),
        bytes(3),
        ((1 << 23) + (838 << 12 | 59 << 6 | 58)).to_bytes(3, "big"),
        (0xABC).to_bytes(2, "big"),
        b"\x02\xff\xfe",
        b"\x03\x00\x00\x01\x02",
    ]
    data = build.binlog(tm, build.rows_event(30, 9, 9, build.image([False] * 9, *values)))
    rows = assert_same_batches(data)
    after = rows[0][6][0]["after"]
    assert after == {
        "@1": Decimal("123.45"),
        "@2": Decimal(2**64 - 1),
        "@3": dt.datetime(2024, 2, 29, 13, 14, 15, 456000),
        "@4": dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=dt.timezone.utc),
        "@5": None,
        "@6": "838:59:58",
        "@7": 0xABC,
        "@8": "{'hex': 'fffe'}",
        "@9": b"\x00\x01\x02",
    }


@needs_native
def test_small_batches_end_at_transaction_boundaries(generated) -> None:
    tables = assert_same_batches(generated[0], batch_rows=7)
    assert len(tables) > 3
    seen: dict[tuple, set] = {}
    for tb in tables:
        trx = {r["trx_pos"] for r in tb[6]}
        assert None not in trx
        assert not trx & seen.get(tb[1:3], set()), "a transaction split across batches"
        seen.setdefault(tb[1:3], set()).update(trx)


# --- hostile input --------------------------------------------------------------------------------------------


def payload_body(inner: bytes, *, compress: bool = True) -> bytes:
    import zstandard

    data = zstandard.ZstdCompressor(level=3).compress(inner) if compress else inner

    def field(ftype: int, value: int) -> bytes:
        v = build.packed(value)
        return build.packed(ftype) + build.packed(len(v)) + v

    return field(2, 0 if compress else 255) + field(3, len(inner)) + field(1, len(data)) + b"\0" + data


def json_table(table_id: int = 7) -> tuple[int, bytes]:
    return build.table_map(table_id, "d", "t", [3, 245], bytes([4]), [False, True])


@needs_native
@pytest.mark.parametrize(
    "case",
    [
        "oversized-inner-event",
        "corrupt-json-cell",
        "unknown-table",
        "bad-checksum",
        "not-finite-double",
        "truncated-row",
        "invalid-decimal-metadata",
        "cut-short",
        "corrupt-zstd",
    ],
)
def test_hostile_input_raises_the_same_typed_error(monkeypatch, tmp_path, case: str) -> None:
    expected = {
        "oversized-inner-event": EventTooLargeError,
        "corrupt-json-cell": CorruptEventError,
        "unknown-table": UnknownTableError,
        "bad-checksum": BinlogError,
        "not-finite-double": CorruptEventError,
        "truncated-row": BinlogError,
        "invalid-decimal-metadata": BinlogError,
        "cut-short": BinlogError,
        "corrupt-zstd": CorruptEventError,
    }[case]
    ok_row = build.image([False, False], (1).to_bytes(4, "little"), (2).to_bytes(4, "little") + b"\x04\x00")
    if case == "oversized-inner-event":
        data = build.binlog((40, payload_body(build.event(230, bytes(4 << 20), crc=False))))
    elif case == "corrupt-json-cell":
        bad = build.image([False, False], (2).to_bytes(4, "little"), (3).to_bytes(4, "little") + b"\x00\x09\x00")
        data = build.binlog(json_table(), build.rows_event(30, 7, 2, ok_row + bad))
    elif case == "unknown-table":
        data = build.binlog(json_table(), build.rows_event(30, 8, 2, ok_row))
    elif case == "bad-checksum":
        good = build.binlog(json_table(), build.rows_event(30, 7, 2, ok_row))
        data = good[:-1] + bytes([good[-1] ^ 1])
    elif case == "not-finite-double":
        tm = build.table_map(3, "d", "t", [5], bytes([8]), [True])
        data = build.binlog(tm, build.rows_event(30, 3, 1, build.image([False], b"\x00" * 6 + b"\xf8\x7f")))
    elif case == "truncated-row":
        data = build.binlog(json_table(), build.rows_event(30, 7, 2, ok_row[:-3]))
    elif case == "invalid-decimal-metadata":
        tm = build.table_map(3, "d", "t", [246], bytes([70, 2]), [True])
        data = build.binlog(tm, build.rows_event(30, 3, 1, build.image([False], bytes(30))))
    elif case == "cut-short":
        data = build.binlog(json_table(), build.rows_event(30, 7, 2, ok_row))[:-9]
    else:
        inner = build.event(16, (7).to_bytes(8, "little"), crc=False) * 40
        body = payload_body(inner)
        frame = body.index(b"\x28\xb5\x2f\xfd")
        data = build.binlog((40, body[:frame] + b"\x00\x00\x00\x00" + body[frame + 4 :]))
    _py, py_err = batches(data, "python", max_event_size=MAX_EVENT)
    assert py_err is not None and issubclass(getattr(sys.modules["binlake.binlog.errors"], py_err[0]), expected)
    assert py_err[2] is not None and py_err[3] is not None
    assert_same_batches(data, max_event_size=MAX_EVENT)
    path = tmp_path / "hostile.bin"
    path.write_bytes(data)
    out, err, code = rows_output(monkeypatch, path, True, "--max-event-size", str(MAX_EVENT))
    assert code != 0 and err.startswith("binlake: error: ") and str(path) in err
    assert (out, err, code) == rows_output(monkeypatch, path, False, "--max-event-size", str(MAX_EVENT))


def mutate(rng: random.Random, data: bytes) -> bytes:
    d = bytearray(data)
    k = rng.randrange(4)
    if k == 0:
        for _ in range(rng.randrange(1, 8)):
            d[rng.randrange(len(d))] = rng.randrange(256)
    elif k == 1:
        d = d[: rng.randrange(len(d))]
    elif k == 2:
        i = rng.randrange(len(d))
        del d[i : i + rng.randrange(1, 16)]
    else:
        i = rng.randrange(len(d))
        d[i:i] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8)))
    return bytes(d)


def fuzz_sweep(monkeypatch, tmp_path, runs: int, seed: int, max_seed: int) -> None:
    from tests.fuzz.targets import seeds

    corpus = [s for s in seeds("binlog") if len(s) < max_seed]
    rng = random.Random(seed)
    path = tmp_path / "mutant.bin"
    for n in range(runs):
        data = mutate(rng, rng.choice(corpus)) if n >= len(corpus) else corpus[n]
        assert_same_batches(data, verify_checksum=False, max_event_size=MAX_EVENT)
        path.write_bytes(data)
        assert_same_rows(monkeypatch, path, "--no-verify-checksum", "--max-event-size", str(MAX_EVENT))


@needs_native
def test_fuzz_corpus_and_mutations_decode_or_fail_alike(monkeypatch, tmp_path) -> None:
    """The small seeds of the fuzz corpus and a fixed set of their mutations (checksums off: bodies are reached)."""
    fuzz_sweep(monkeypatch, tmp_path, runs=60, seed=17, max_seed=8_000)


@needs_native
@pytest.mark.slow
def test_many_mutations_decode_or_fail_alike(monkeypatch, tmp_path) -> None:
    """Every seed of the fuzz corpus and many mutations of them."""
    fuzz_sweep(monkeypatch, tmp_path, runs=800, seed=29, max_seed=300_000)


# --- engines and the command line -----------------------------------------------------------------------------


def test_python_engine_needs_no_native_module(monkeypatch) -> None:
    monkeypatch.setenv("BINLAKE_NATIVE", "0")
    data = build.binlog(
        json_table(),
        build.rows_event(
            30, 7, 2, build.image([False, False], (1).to_bytes(4, "little"), (2).to_bytes(4, "little") + b"\x04\x00")
        ),
    )
    (tb,) = iter_table_batches(data)  # auto falls back to the pure-Python decoder
    assert tb.batch.to_pylist()[0]["after"] == {"@1": 1, "@2": "null"}
    with pytest.raises(RuntimeError, match="native decoder is not available"):
        list(iter_table_batches(data, engine="native"))


@needs_native
def test_binlake_rows_subprocess_prints_the_python_bytes(tmp_path) -> None:
    path = FIXTURES / "binlog" / "rust_mysql_common" / "json.binlog.000001"
    if not path.exists():
        pytest.skip(f"real fixtures not found at {FIXTURES}")
    cmd = [str(Path(sys.executable).with_name("binlake")), "rows", str(path), "--format", "jsonl"]
    nat = subprocess.run(cmd, capture_output=True, check=True)
    py = subprocess.run(cmd, capture_output=True, check=True, env={"BINLAKE_NATIVE": "0", "PATH": ""})
    assert nat.stdout == py.stdout and nat.stdout.count(b"\n") == 18


@needs_native
def test_schema_provider_names_and_types_a_table_map_without_metadata(monkeypatch, tmp_path) -> None:
    """A TABLE_MAP with MINIMAL metadata (signedness and charsets, no names) named by a schema file, on both
    engines."""
    import json

    from binlake.sdi.schema_files import load_schema_provider

    path = FIXTURES / "binlog" / "rust_mysql_common" / "minimal_row_metadata.000001"
    if not path.exists():
        pytest.skip(f"real fixtures not found at {FIXTURES}")
    schema = tmp_path / "t1.json"
    schema.write_text(
        json.dumps(
            {
                "tables": [
                    {
                        "db": "noria",
                        "table": "t1",
                        "columns": [
                            "id",
                            {"name": "blob_c", "charset": "binary"},
                            {"name": "name", "charset": "utf8mb4"},
                            {"name": "u", "unsigned": True},
                            "n",
                        ],
                    }
                ]
            }
        )
    )
    provider = load_schema_provider([str(schema)])
    (tb,) = assert_same_batches(path, schema_provider=provider)
    assert [c[0] for c in tb[3]] == ["id", "blob_c", "name", "u", "n"]
    assert tb[5].field("after").type.names == ["id", "blob_c", "name", "u", "n"]
    assert tb[5].field("after").type.field("n").type == pa.int64()  # INT UNSIGNED (TABLE_MAP's signedness)
    copy = tmp_path / path.name
    copy.write_bytes(path.read_bytes())
    assert b'"name": "a", "n": 3230202323}' in assert_same_rows(monkeypatch, copy, "--schema", str(schema))


@needs_native
def test_names_that_are_not_utf8_and_characters_json_escapes(monkeypatch, tmp_path) -> None:
    """A column name that is not UTF-8 turns the whole line to ASCII escapes (``ensure_ascii``), as
    ``binlake rows`` does; quotes, backslashes, control characters, DEL and astral characters escape alike; the
    Arrow field of such a column is ``@n``."""

    def names(*raw: bytes) -> bytes:
        return build.optional_field(4, b"".join(build.packed(len(n)) + n for n in raw))

    optional = names(b"ok", b"\xff\xfe", "é€😀".encode(), b'a"b\\c\n\x01') + build.optional_field(
        3, build.packed(45) + build.packed(45)
    )
    tm = build.table_map(7, "db", "t", [3, 15, 15, 3], (200).to_bytes(2, "little") * 2, [True] * 4, optional)
    row = build.image(
        [False] * 4, (5).to_bytes(4, "little"), b"\x03a\xffb", b"\x05\xe2\x82\xac\x01\x7f", (9).to_bytes(4, "little")
    )
    data = build.binlog(tm, build.rows_event(30, 7, 4, row + row))
    (tb,) = assert_same_batches(data)
    assert tb[6][1]["after"] == {"ok": 5, "@2": "{'hex': '61ff62'}", "é€😀": "€\x01\x7f", 'a"b\\c\n\x01': 9}
    path = tmp_path / "names.bin"
    path.write_bytes(data)
    out = assert_same_rows(monkeypatch, path)
    assert b'"\\udcff\\udcfe": {"hex": "61ff62"}, "\\u00e9\\u20ac\\ud83d\\ude00": "\\u20ac\\u0001\\u007f"' in out


def random_json(rng: random.Random, depth: int = 0) -> object:
    """A JSON value of every kind binary JSON holds: containers, strings (escapes, astral), integers at the
    storage widths' edges, doubles of every magnitude, DECIMAL and temporal opaques, other opaques."""
    from binlake.mysqljson import JsonDate, JsonDatetime, JsonOpaque, JsonTime

    kind = rng.randrange(12 if depth < 4 else 9)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.choice(
            [
                0,
                -1,
                32767,
                -32768,
                65535,
                2**31 - 1,
                -(2**31),
                2**32 - 1,
                2**63 - 1,
                -(2**63),
                2**64 - 1,
                rng.randrange(-(10**6), 10**6),
            ]
        )
    if kind == 2:
        return rng.choice(
            [
                0.0,
                -0.0,
                1e16,
                1e15,
                1.5e-7,
                0.1,
                123.456,
                1e300,
                -2.5e-300,
                5e-324,
                rng.uniform(-1e6, 1e6),
                rng.random() * 10 ** rng.randrange(-30, 30),
            ]
        )
    if kind == 3:
        return "".join(
            rng.choice(["a", '"', "\\", "\n", "\x01", "\x7f", "é", "€", "😀", "\u2028", " "])
            for _ in range(rng.randrange(12))
        )
    if kind == 4:
        return Decimal(rng.choice(["0", "-0.00", "1.50", "-123456789012345678901234567890.123", "0.000000001"]))
    if kind == 5:
        return JsonDate(rng.randrange(0, 10000), rng.randrange(13), rng.randrange(32))
    if kind == 6:
        return JsonDatetime(
            rng.randrange(10000),
            rng.randrange(13),
            rng.randrange(32),
            rng.randrange(24),
            rng.randrange(60),
            rng.randrange(60),
            rng.randrange(10**6),
            rng.choice([12, 7]),
        )
    if kind == 7:
        return JsonTime(
            rng.randrange(839), rng.randrange(60), rng.randrange(60), rng.randrange(10**6), rng.random() < 0.5
        )
    if kind == 8:
        return JsonOpaque(rng.choice([253, 252, 16, 255]), bytes(rng.randrange(256) for _ in range(rng.randrange(9))))
    if kind in (9, 10):
        return [random_json(rng, depth + 1) for _ in range(rng.randrange(6))]
    keys = ["a", "b", "é", "k" * rng.randrange(1, 4), "", "😀"]
    return {rng.choice(keys): random_json(rng, depth + 1) for _ in range(rng.randrange(6))}


def json_cell_binlog(cell: bytes) -> bytes:
    return build.binlog(
        json_table(),
        build.rows_event(
            30, 7, 2, build.image([False, False], (1).to_bytes(4, "little"), len(cell).to_bytes(4, "little") + cell)
        ),
    )


@needs_native
def test_binary_json_documents_and_their_mutations_render_alike(monkeypatch, tmp_path) -> None:
    """MySQL's JSON text of real binary JSON vectors, random documents of every value kind, and byte mutations
    of them (the same text, or the same typed error), as batches and as ``binlake rows`` lines."""
    import json

    from binlake.mysqljson import encode

    rng = random.Random(5)
    cells = []
    vectors = FIXTURES / "json_vectors" / "jsonb_vectors.json"
    if vectors.exists():
        cells += [bytes.fromhex(v["hex"]) for v in json.loads(vectors.read_text())["vectors"]]
    cells += [encode(random_json(rng)) for _ in range(100)]
    cells += [mutate(rng, c) for c in cells[:] if c]
    path = tmp_path / "json.bin"
    rendered = 0
    for n, cell in enumerate(cells):
        data = json_cell_binlog(cell)
        rows = assert_same_batches(data)
        rendered += bool(rows)
        if n % 5 == 0:
            path.write_bytes(data)
            assert_same_rows(monkeypatch, path)
    assert rendered > 150


@needs_native
def test_text_in_every_charset_decodes_alike(monkeypatch, tmp_path) -> None:
    """VARCHAR columns in MySQL's charsets (latin1's undefined bytes, multi-byte Asian charsets, UTF-16/32, ASCII,
    binary) with valid and invalid byte strings: the same strings (or hex) on both engines."""
    collations = [8, 5, 63, 11, 13, 1, 28, 54, 35, 60, 7, 45, 33, 95, 248, 97, 56, 19, 300]
    rng = random.Random(11)
    samples = [
        b"",
        b"abc",
        "café".encode("latin-1"),
        b"\x81\x8d\x8f\x90\x9d\x80\x9f",
        "日本".encode("shift_jis"),
        "中文".encode("gbk"),
        "é".encode("utf-16-be"),
        b"\xd8\x00",
        b"\xff\xfe\xfd",
        "€😀".encode(),
    ]
    optional = build.optional_field(3, b"".join(build.packed(c) for c in collations))
    n = len(collations)
    tm = build.table_map(4, "d", "t", [15] * n, (60).to_bytes(2, "little") * n, [True] * n, optional)
    rows = b""
    for _ in range(40):
        values = [rng.choice(samples + [bytes(rng.randrange(256) for _ in range(rng.randrange(6)))]) for _ in range(n)]
        rows += build.image([False] * n, *(bytes([len(v)]) + v for v in values))
    data = build.binlog(tm, build.rows_event(30, 4, n, rows))
    (tb,) = assert_same_batches(data)
    assert len(tb[6]) == 40
    path = tmp_path / "charsets.bin"
    path.write_bytes(data)
    assert_same_rows(monkeypatch, path)


# (type code, metadata bytes, value bytes) of fixed-width columns: random bytes are values MySQL may never write
# (February 30, minute 63, year 16000, fractions past 999999, NaN, BIT past its width): every one must decode,
# type and render alike, or fail alike
FIXED_WIDTH = (
    [
        (1, b"", 1),
        (2, b"", 2),
        (9, b"", 3),
        (3, b"", 4),
        (8, b"", 8),
        (4, b"\x04", 4),
        (5, b"\x08", 8),
        (13, b"", 1),
        (10, b"", 3),
        (11, b"", 3),
        (12, b"", 8),
        (7, b"", 4),
        (246, bytes([10, 4]), 5),
        (246, bytes([40, 10]), 19),
        (246, bytes([20, 0]), 9),
        (16, bytes([7, 7]), 8),
        (16, bytes([0, 8]), 8),
        (16, bytes([3, 1]), 2),
        (254, bytes([0xF7, 2]), 2),
        (254, bytes([0xF8, 3]), 3),
    ]
    + [(17, bytes([f]), 4 + (f + 1) // 2) for f in range(7)]
    + [(18, bytes([f]), 5 + (f + 1) // 2) for f in range(7)]
    + [(19, bytes([f]), 3 + (f + 1) // 2) for f in range(7)]
)


def random_value(rng: random.Random, type_code: int, meta: bytes, size: int) -> bytes:
    """Random bytes; mostly in range for DECIMAL and BIT(63) (the silver type holds them), so rows get typed."""
    raw = bytearray(rng.randrange(256) for _ in range(size))
    if rng.random() < 0.95:
        if type_code == 246:  # a positive DECIMAL whose digit groups are all 0..9s
            raw = bytearray(size)
            raw[0] = 0x80
            raw[-1] = rng.randrange(10)
        elif type_code == 16 and meta == bytes([7, 7]):
            raw[0] &= 0x7F
    return bytes(raw)


@needs_native
@pytest.mark.parametrize("temporal_text", [False, True])
def test_random_fixed_width_values_decode_alike(monkeypatch, tmp_path, temporal_text: bool) -> None:
    rng = random.Random(23)
    types = [t for t, _, _ in FIXED_WIDTH]
    meta = b"".join(m for _, m, _ in FIXED_WIDTH)
    n = len(types)
    signed = bytes([0b01010101, 0b00110011])
    enum_set = build.optional_field(
        6, build.packed(3) + b"".join(build.packed(1) + x for x in (b"a", b"b", b"c"))
    ) + build.optional_field(5, build.packed(2) + build.packed(1) + b"x" + build.packed(1) + b"y")
    tm = build.table_map(4, "d", "t", types, meta, [True] * n, build.optional_field(1, signed) + enum_set)
    path = tmp_path / "fixed.bin"
    decoded = 0
    for _ in range(40):
        rows = b""
        for _ in range(3):
            nulls = [rng.random() < 0.1 for _ in range(n)]
            values = [random_value(rng, t, m, size) for (t, m, size), null in zip(FIXED_WIDTH, nulls) if not null]
            rows += build.image(nulls, *values)
        data = build.binlog(tm, build.rows_event(30, 4, n, rows))
        decoded += bool(assert_same_batches(data, temporal_text=temporal_text))
        if not temporal_text:
            path.write_bytes(data)
            assert_same_rows(monkeypatch, path)
    assert decoded > 15


@needs_native
def test_random_variable_width_values_decode_alike(monkeypatch, tmp_path) -> None:
    """VECTOR (a NaN element now and then), GEOMETRY, BLOB/TEXT of 1- and 3-byte lengths, BINARY(n) padding,
    VARBINARY, JSON and the NULL type with random contents; a column type no row image holds."""
    from binlake.mysqljson import encode

    rng = random.Random(31)

    def some(n: int) -> bytes:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(n)))

    def vector() -> bytes:
        xs = [rng.uniform(-1e6, 1e6) for _ in range(rng.randrange(4))] + ([float("nan")] if rng.random() < 0.03 else [])
        return struct.pack(f"<{len(xs)}f", *xs)

    # (type, metadata, collation (character columns), length bytes, value maker)
    cols = [
        (242, b"\x04", None, 4, vector),
        (255, b"\x04", None, 4, lambda: some(30)),
        (252, b"\x01", 63, 1, lambda: some(20)),
        (252, b"\x03", 45, 3, lambda: rng.choice(["", "naïve", "日本"]).encode() + some(2)),
        (245, b"\x04", None, 4, lambda: encode(random_json(rng))),
        (6, b"", None, 0, None),
        (254, bytes([0xFE, 5]), 63, 1, lambda: bytes(rng.randrange(1, 256) for _ in range(rng.randrange(6)))),
        (15, (20).to_bytes(2, "little"), 63, 1, lambda: some(20)),
    ]
    optional = build.optional_field(3, b"".join(build.packed(c) for _, _, c, _, _ in cols if c is not None))
    tm = build.table_map(4, "d", "t", [c[0] for c in cols], b"".join(c[1] for c in cols), [True] * len(cols), optional)
    path = tmp_path / "var.bin"
    for _ in range(30):
        rows = b""
        for _ in range(3):
            values = [len(v).to_bytes(n, "little") + v for _, _, _, n, make in cols if make for v in [make()]]
            rows += build.image([False] * len(cols), *values)
        data = build.binlog(tm, build.rows_event(30, 4, len(cols), rows))
        assert_same_batches(data)
        path.write_bytes(data)
        assert_same_rows(monkeypatch, path)
    tm_bad = build.table_map(5, "d", "u", [0, 3], b"", [True, True])  # MYSQL_TYPE_DECIMAL: no row holds it
    for image in (build.image([True, False], (1).to_bytes(4, "little")), build.image([False, False], bytes(8))):
        assert_same_batches(build.binlog(tm_bad, build.rows_event(30, 5, 2, image)))


PEAK_RSS = """
import sys
from binlake.binlog.columnar import iter_table_batches
from binlake.binlog.errors import BinlogError
data = open(sys.argv[1], "rb").read()
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")                        # resets the peak resident size (VmHWM) to the current one
try:
    for _ in iter_table_batches(data, engine="native", max_event_size=int(sys.argv[2])):
        pass
except BinlogError as exc:
    print(type(exc).__name__, file=sys.stderr)
status = dict(line.split(":", 1) for line in open("/proc/self/status"))
print(int(status["VmHWM"].split()[0]) // 1024)
"""


def peak_rss_mb(tmp_path: Path, data: bytes, max_event: int) -> tuple[int, str]:
    """The peak resident MiB of a fresh process while the native engine reads ``data`` (after its imports)."""
    path = tmp_path / f"in-{len(data)}-{max_event}.bin"
    path.write_bytes(data)
    out = subprocess.run(
        [sys.executable, "-c", PEAK_RSS, str(path), str(max_event)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return int(out.stdout.strip()), out.stderr.strip()


@needs_native
@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="peak memory is read from Linux's /proc")
def test_native_memory_is_bounded_by_the_event_size_cap(tmp_path) -> None:
    """A compressed transaction whose inner event declares 64 MiB is refused at the 1 MiB cap without holding
    it (peak memory as for a tiny input); under a cap that admits it, it is held about once."""
    bomb = build.binlog((40, payload_body(build.event(230, b"\x01\x02\x03\x04" * (16 << 20), crc=False))))
    assert len(bomb) < 64 << 10
    base, _ = peak_rss_mb(tmp_path, build.binlog(), 1 << 20)
    refused, err = peak_rss_mb(tmp_path, bomb, 1 << 20)
    assert err == "EventTooLargeError" and refused - base < 16, (base, refused)
    held, err = peak_rss_mb(tmp_path, bomb, 1 << 30)
    assert err == "" and 48 < held - base < 3 * 64, (base, held)


@needs_native
def test_transactions_of_every_boundary_kind(monkeypatch, tmp_path) -> None:
    """GTID, tagged GTID (decoded by the Python decoder for the native core), BEGIN/COMMIT, ROLLBACK, ROLLBACK TO
    SAVEPOINT, XA PREPARE, a DDL alone and rows outside any transaction: gtid, trx_pos and commit_ts alike, and
    equal to what the events say."""
    from tests.binlog.test_events import SID, varlen, zigzag

    def query(text: str) -> tuple[int, bytes]:
        return 2, struct.pack("<IIBHH", 1, 0, 1, 0, 0) + b"d\x00" + text.encode()

    def gtid(gno: int, ts: int) -> tuple[int, bytes]:
        return 33, bytes([0]) + SID + struct.pack("<q", gno) + bytes([2]) + struct.pack("<qq", 0, 1) + ts.to_bytes(
            7, "little"
        )

    tagged_fields = (
        varlen(0)
        + varlen(1)
        + varlen(1)
        + b"".join(varlen(b) for b in SID)
        + varlen(2)
        + zigzag(9)
        + varlen(3)
        + varlen(4)
        + b"blue"
        + varlen(6)
        + varlen(1700000000123456)
    )
    tagged = (42, bytes([2]) + varlen(len(tagged_fields) + 4) + varlen(0) + tagged_fields)
    tm = json_table()
    row = build.rows_event(
        30, 7, 2, build.image([False, False], (1).to_bytes(4, "little"), (2).to_bytes(4, "little") + b"\x04\x00")
    )
    xid = (16, (5).to_bytes(8, "little"))
    xa = (38, bytes([0]) + struct.pack("<III", 1, 3, 2) + b"abcxy")
    data = build.binlog(
        tm,
        row,  # rows outside a transaction
        gtid(1, 1700000000000001),
        query("BEGIN"),
        tm,
        row,
        xid,
        tagged,
        query("BEGIN"),
        tm,
        row,
        row,
        query("COMMIT"),
        query("BEGIN"),
        tm,
        row,
        query("ROLLBACK TO SAVEPOINT s"),
        row,
        query("ROLLBACK"),
        query("XA START 'x'"),
        tm,
        row,
        xa,
        query("  (create table t2 (a int))"),
        tm,
        row,
    )
    (tb,) = assert_same_batches(data)
    rows = tb[6]
    assert [r["gtid"] for r in rows[:4]] == [
        None,
        "3e11fa47-71ca-11e1-9e33-c80aa9429562:1",
        "3e11fa47-71ca-11e1-9e33-c80aa9429562:blue:9",
        "3e11fa47-71ca-11e1-9e33-c80aa9429562:blue:9",
    ]
    assert rows[0]["trx_pos"] is None and rows[0]["commit_ts"] is None
    assert rows[1]["commit_ts"] == 1700000000000001 and rows[2]["commit_ts"] == 1700000000123456
    assert rows[2]["trx_pos"] == rows[3]["trx_pos"] != rows[1]["trx_pos"]
    assert rows[5]["gtid"] is None  # after ROLLBACK TO (binlake rows)
    assert [r["commit_ts"] for r in rows[4:]] == [1700000000 * 10**6] * 3 + [None]  # header times; after a DDL
    assert rows[4]["trx_pos"] == rows[5]["trx_pos"] != rows[6]["trx_pos"]
    path = tmp_path / "trx.bin"
    path.write_bytes(data)
    assert_same_rows(monkeypatch, path)


@pytest.mark.skipif(not native.available(), reason="the native decoder core is not built")
def test_a_typed_error_does_not_keep_the_native_reader() -> None:
    """The native reader (``Batches``, bound to its thread) is freed when its batches end in an error: the error's
    traceback, which a caller may keep until a cyclic collection on another thread, holds none of it."""
    ok_row = build.image([False, False], (1).to_bytes(4, "little"), (2).to_bytes(4, "little") + b"\x04\x00")
    data = build.binlog(json_table(), build.rows_event(30, 8, 2, ok_row))  # table id 8 has no TABLE_MAP
    with pytest.raises(UnknownTableError) as raised:
        list(iter_table_batches(data, engine="native"))
    tb, held = raised.value.__traceback__, []
    while tb is not None:
        held += [type(v).__name__ for v in tb.tb_frame.f_locals.values() if type(v).__name__ == "Batches"]
        tb = tb.tb_next
    assert held == []
