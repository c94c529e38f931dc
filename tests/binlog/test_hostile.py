"""Hostile binlogs (issue #16): memory bombs, unbounded work and errors without their place.

Each test builds its input here and measures bounded memory or work by counting (tracemalloc peaks, cache
sizes, calls), never by timing."""

from __future__ import annotations

import io
import tracemalloc

import pytest
import zstandard

from binlake.binlog import BinlogError, CorruptEventError, EventTooLargeError, read_events
from binlake.binlog.decoders import DecodeContext
from tests.binlog import build

IGNORABLE_UNKNOWN = 230  # an event type no server writes, kept undecoded


def payload_body(inner: bytes, *, compress: bool = True, uncompressed_size: int | None = None) -> bytes:
    """A TRANSACTION_PAYLOAD body: (type, length, value) fields, end mark, payload (``Transaction_payload_event``)."""
    data = zstandard.ZstdCompressor(level=3).compress(inner) if compress else inner
    usize = len(inner) if uncompressed_size is None else uncompressed_size

    def field(ftype: int, value: int) -> bytes:
        v = build.packed(value)
        return build.packed(ftype) + build.packed(len(v)) + v

    return field(2, 0 if compress else 255) + field(3, usize) + field(1, len(data)) + b"\0" + data


def bomb(inner_size: int) -> bytes:
    """A small binlog whose compressed transaction (its last event) holds one inner event of ``inner_size``
    bytes (zeros)."""
    inner = build.event(IGNORABLE_UNKNOWN, bytes(inner_size - 19), crc=False)
    return build.binlog((40, payload_body(inner)))


def last_event_pos(data: bytes) -> int:
    pos = 4
    while True:
        size = int.from_bytes(data[pos + 9 : pos + 13], "little")
        if pos + size >= len(data):
            return pos
        pos += size


def read_all(data: bytes, **kw) -> list:
    return list(read_events(io.BytesIO(data), file="bomb.bin", ctx=DecodeContext(), **kw))


def peak_of(fn) -> int:
    tracemalloc.start()
    try:
        fn()
    except BinlogError:
        pass
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def test_inner_event_above_the_cap_is_a_typed_error_naming_file_and_payload_offset() -> None:
    data = bomb(16 << 20)
    assert len(data) < 64 << 10
    with pytest.raises(EventTooLargeError) as err:
        read_all(data, max_event_size=1 << 20)
    e = err.value
    assert e.file == "bomb.bin" and e.offset == last_event_pos(data)
    assert "inner offset 0" in str(e) and "at most 1048576 bytes" in str(e) and str(16 << 20) in str(e)


def test_rejecting_an_oversized_inner_event_allocates_nothing_near_its_size() -> None:
    data = bomb(32 << 20)
    peak = peak_of(lambda: read_all(data, max_event_size=1 << 20))
    assert peak < 4 << 20, peak


def test_a_legitimate_large_inner_event_is_held_once_not_copied() -> None:
    size = 24 << 20
    data = bomb(size)
    events = []
    peak = peak_of(lambda: events.extend(e.header.event_size for e in read_all(data)))
    assert events[-1] == size
    # the event's bytes and the body kept by UnknownEvent; no third copy from joining header and rest
    assert peak < 2.3 * size, peak / size


def test_outer_event_above_the_cap_is_a_typed_error() -> None:
    data = build.binlog((IGNORABLE_UNKNOWN, bytes(5000)))
    with pytest.raises(EventTooLargeError) as err:
        read_all(data, max_event_size=4096)
    assert err.value.expected == "at most 4096 bytes" and err.value.found == 5000 + 19 + 4


def test_payload_must_decompress_to_its_declared_size() -> None:
    inner = build.event(IGNORABLE_UNKNOWN, b"x" * 100, crc=False)
    short = build.binlog((40, payload_body(inner, uncompressed_size=len(inner) + 50)))
    with pytest.raises(CorruptEventError, match="shorter than its declared uncompressed size"):
        read_all(short)
    long = build.binlog((40, payload_body(inner + inner, uncompressed_size=len(inner))))
    with pytest.raises(CorruptEventError):
        read_all(long)


def test_cli_max_event_size(tmp_path, capsys) -> None:
    from binlake.cli import main

    path = tmp_path / "bomb.bin"
    path.write_bytes(bomb(4 << 20))
    assert main(["events", str(path), "--max-event-size", "65536"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "larger than the maximum event size" in err[0] and str(path) in err[0]


# --- wide and many TABLE_MAPs: linear work, bounded memory ------------------------------------------------------


def wide_table_map(n: int, table: str = "t", table_id: int = 1) -> tuple[int, bytes]:
    """A TABLE_MAP of ``n`` BLOB columns and no optional metadata (binlog_row_metadata=MINIMAL: no charsets)."""
    return build.table_map(table_id, "d", table, [252] * n, bytes([2]) * n, [True] * n)


def test_wide_table_map_compiles_a_decoder_per_kind_not_per_column(monkeypatch) -> None:
    import builtins

    from binlake.binlog import columns

    calls = []

    def counting_compile(*args, **kwargs):
        calls.append(1)
        return builtins.compile(*args, **kwargs)

    monkeypatch.setattr(columns, "compile", counting_compile, raising=False)
    monkeypatch.setattr(columns, "_DECODER_CACHE", {})
    ctx = DecodeContext()
    list(read_events(io.BytesIO(build.binlog(wide_table_map(20000))), ctx=ctx))
    assert len(ctx.tables[1].columns) == 20000
    assert len(calls) <= 4, len(calls)


def test_wide_table_map_without_charsets_decodes_in_linear_time(tmp_path) -> None:
    """200k columns under a CPU-time limit far above a linear decode (about 2 s here) and far below a
    quadratic one (minutes)."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import io, resource, sys
        resource.setrlimit(resource.RLIMIT_CPU, (60, 60))
        from tests.binlog import build
        from tests.binlog.test_hostile import wide_table_map
        from binlake.binlog import read_events
        from binlake.binlog.decoders import DecodeContext
        ctx = DecodeContext()
        list(read_events(io.BytesIO(build.binlog(wide_table_map(200000))), ctx=ctx))
        print(len(ctx.tables[1].columns))
    """)
    root = __import__("pathlib").Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "200000"


def test_table_map_cache_is_owned_by_the_context_and_bounded_by_columns() -> None:
    from binlake.binlog import decoders
    from binlake.binlog.decoders import TableMapCache

    assert not hasattr(decoders, "_TABLE_MAP_CACHE")
    ctx = DecodeContext(table_map_cache=TableMapCache(max_columns=10000))
    maps = [wide_table_map(2000, f"t{i}", i + 1) for i in range(40)]
    list(read_events(io.BytesIO(build.binlog(*maps)), ctx=ctx))
    assert ctx.table_map_cache.columns <= 10000 and len(ctx.table_map_cache) == 5
    other = DecodeContext()
    assert len(other.table_map_cache) == 0


def test_table_map_cache_reuses_a_repeated_body() -> None:
    ctx = DecodeContext()
    tm = wide_table_map(10)
    list(read_events(io.BytesIO(build.binlog(tm, tm, tm)), ctx=ctx))
    assert len(ctx.table_map_cache) == 1


# --- typed one-line errors instead of tracebacks ----------------------------------------------------------------


def small_binlog() -> bytes:
    return build.binlog((230, b"a" * 10), (230, b"b" * 10))


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    from binlake.cli import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    "start,message",
    [
        (10**30, "start position is not an offset in a binlog"),
        (-5, "start position is not an offset in a binlog"),
        (1, "start position is not an offset in a binlog"),
        (50, "start position is inside the first event"),
        (100000, "start position is past the end of the file"),
    ],
)
def test_bad_start_positions_are_one_line_errors(tmp_path, capsys, start, message) -> None:
    path = tmp_path / "b.bin"
    path.write_bytes(small_binlog())
    code, out, err = cli(capsys, "events", str(path), "--start-position", str(start))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err and str(path) in err


def test_start_position_at_the_end_reads_nothing_and_past_it_fails_also_unseekable() -> None:
    from binlake.binlog import StartPositionError

    data = small_binlog()
    assert [e.pos for e in read_all(data, start_position=len(data))] == [4]

    class Pipe(io.RawIOBase):
        def __init__(self, b: bytes) -> None:
            self._b = io.BytesIO(b)

        def readable(self) -> bool:
            return True

        def readinto(self, target) -> int:
            chunk = self._b.read(len(target))
            target[: len(chunk)] = chunk
            return len(chunk)

    with pytest.raises(StartPositionError, match="past the end"):
        list(read_events(io.BufferedReader(Pipe(data)), start_position=len(data) + 1, ctx=DecodeContext()))


@pytest.mark.parametrize(
    "column,found",
    [
        ({"name": "a", "charset": 5}, 'bad "charset"'),
        ({"name": "a", "collation_id": "utf8"}, 'bad "collation_id"'),
        ({"name": "a", "enum": 5}, 'bad "enum"'),
        ({"name": "a", "set": [1, 2]}, 'bad "set"'),
        ({"name": "a", "unsigned": "no"}, 'bad "unsigned"'),
        ({"name": "a", "fsp": True}, "bad fsp"),
    ],
)
def test_schema_column_list_with_wrong_types_is_a_typed_error(tmp_path, capsys, column, found) -> None:
    import json

    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"tables": [{"db": "d", "table": "t", "columns": [column]}]}))
    path = tmp_path / "b.bin"
    path.write_bytes(small_binlog())
    code, _out, err = cli(capsys, "rows", str(path), "--schema", str(schema))
    assert code == 2 and len(err.strip().splitlines()) == 1 and found in err and str(schema) in err


@pytest.mark.parametrize("text", ["[" * 100000 + "]" * 100000, '{"tables": [' + "9" * 5000 + "]}"])
def test_hostile_schema_json_is_a_typed_error(tmp_path, capsys, text) -> None:
    schema = tmp_path / "s.json"
    schema.write_text(text)
    path = tmp_path / "b.bin"
    path.write_bytes(small_binlog())
    code, _out, err = cli(capsys, "rows", str(path), "--schema", str(schema))
    assert code == 2 and len(err.strip().splitlines()) == 1 and str(schema) in err


# --- errors name their place and say what was expected and found -------------------------------------------------


def json_rows_binlog(cell: bytes) -> bytes:
    """TABLE_MAP `d`.`t` (id INT, doc JSON) with names, then one WRITE_ROWS whose JSON cell is ``cell``."""
    tm = build.table_map(7, "d", "t", [3, 245], bytes([4]), [False, True], optional=build.names("id", "doc"))
    row = build.image([False, False], (1).to_bytes(4, "little"), len(cell).to_bytes(4, "little") + cell)
    return build.binlog(tm, build.rows_event(30, 7, 2, row))


@pytest.mark.parametrize("command", ["rows", "show"])
def test_json_that_does_not_decode_in_a_row_names_file_offset_event_and_column(tmp_path, capsys, command) -> None:
    data = json_rows_binlog(b"\x00\x05\x00\xff\xff")  # an object claiming 5 members in 5 bytes
    path = tmp_path / "j.bin"
    path.write_bytes(data)
    code, _out, err = cli(capsys, command, *(["-v"] if command == "show" else []), str(path))
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert str(path) in err and f"offset {last_event_pos(data)}" in err and "WRITE_ROWS_EVENT" in err
    assert "column `doc`" in err and "row 0" in err


def test_rows_past_the_event_end_say_what_was_expected_not_an_exception_name() -> None:
    from binlake.binlog import TruncatedEventError

    tm = build.table_map(7, "d", "t", [15], (300).to_bytes(2, "little"), [False], optional=build.names("v"))
    row = build.image([False], b"\x05")  # VARCHAR(300): a 2-byte length of which 1 byte is left
    data = build.binlog(tm, build.rows_event(30, 7, 1, row))
    with pytest.raises(BinlogError) as err:
        list(read_all(data))
    assert isinstance(err.value, TruncatedEventError)
    text = str(err.value)
    assert "IndexError" not in text and "struct.error" not in text and "expected" in text


# --- machine-readable output is valid or the command fails -------------------------------------------------------


@pytest.mark.parametrize("double", [float("nan"), float("inf")])
def test_rows_jsonl_never_prints_nan_or_infinity(tmp_path, capsys, double) -> None:
    import struct

    tm = build.table_map(7, "d", "t", [5], bytes([8]), [False], optional=build.names("x"))
    row = build.image([False], struct.pack("<d", double))
    path = tmp_path / "d.bin"
    path.write_bytes(build.binlog(tm, build.rows_event(30, 7, 1, row)))
    code, out, err = cli(capsys, "rows", str(path))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "not a finite number" in err and "column `x`" in err


# --- fidelity: held-out real files -------------------------------------------------------------------------------


def vector_then_text_binlog(charset_field: bytes) -> bytes:
    """`d`.`t` (v VECTOR(2), note TEXT) with the given charset optional metadata field, one row."""
    import struct

    optional = build.names("v", "note") + charset_field
    tm = build.table_map(7, "d", "t", [242, 252], bytes([4, 2]), [True, True], optional=optional)
    vec = struct.pack("<ff", 1.5, -2.0)
    row = build.image([False, False], len(vec).to_bytes(4, "little") + vec, (5).to_bytes(2, "little") + "héé".encode())
    return build.binlog(tm, build.rows_event(30, 7, 2, row))


@pytest.mark.parametrize(
    "charset_field",
    [
        build.optional_field(2, build.packed(63) + build.packed(1) + build.packed(255)),  # DEFAULT_CHARSET binary, #1
        build.optional_field(3, build.packed(63) + build.packed(255)),  # COLUMN_CHARSET
    ],
)
def test_vector_columns_are_numbered_among_character_columns(tmp_path, charset_field) -> None:
    from binlake.binlog import open_binlog

    path = tmp_path / "v.bin"
    path.write_bytes(vector_then_text_binlog(charset_field))
    [change] = list(open_binlog(path).row_changes())
    assert change.after == {"v": (1.5, -2.0), "note": "héé"}


def geometry_then_text_binlog(server_version: str) -> bytes:
    """`d`.`t` (g GEOMETRY, note TEXT) with DEFAULT_CHARSET utf8mb4_general_ci and an override #0 -> binary."""
    charset = build.optional_field(2, build.packed(45) + build.packed(0) + build.packed(63))
    tm = build.table_map(
        7, "d", "t", [255, 252], bytes([4, 2]), [True, True], optional=build.names("g", "note") + charset
    )
    row = build.image([True, False], (5).to_bytes(2, "little") + "héé".encode())
    return build.binlog(tm, build.rows_event(30, 7, 2, row), server_version=server_version)


def test_mariadb_numbers_geometry_columns_among_character_columns(tmp_path) -> None:
    from binlake.binlog import open_binlog

    path = tmp_path / "m.bin"
    path.write_bytes(geometry_then_text_binlog("10.11.6-MariaDB-log"))
    [change] = list(open_binlog(path).row_changes())
    assert change.after == {"g": None, "note": "héé"}
    path.write_bytes(geometry_then_text_binlog("8.0.40"))  # MySQL does not number GEOMETRY
    [change] = list(open_binlog(path).row_changes())
    assert change.after == {"g": None, "note": "héé".encode()}


def test_live_table_maps_are_bounded_by_columns() -> None:
    from binlake.binlog.decoders import TableMaps

    ctx = DecodeContext(tables=TableMaps(max_columns=10000))
    maps = [wide_table_map(2000, f"t{i}", i + 1) for i in range(40)]
    list(read_events(io.BytesIO(build.binlog(*maps)), ctx=ctx))
    assert ctx.tables.columns <= 10000 and sorted(ctx.tables) == [36, 37, 38, 39, 40]
    assert DecodeContext().tables.max_columns == 1 << 18  # about 70 MB of layouts at most


# --- an undecodable stretch in the pipeline: its first bytes are kept, bounded -----------------------------------


def event_positions(data: bytes) -> list[int]:
    out, pos = [], 4
    while pos < len(data):
        out.append(pos)
        pos += int.from_bytes(data[pos + 9 : pos + 13], "little")
    return out


@pytest.mark.parametrize("which, whole", [(-3, False), (-1, True)])
def test_undecodable_stretch_keeps_its_first_bytes_up_to_the_cap(tmp_path, which, whole) -> None:
    """A CRC32 mismatch in an event: bronze's ``error`` row names the file and offset and holds the stretch's bytes
    from that offset, exactly as in the file, at most an event header and 64 KiB."""
    from binlake.pipeline.bronze import BRONZE_COLUMNS, RAW_CAP, ChunkTask, decode_chunk
    from binlake.pipeline.filters import TransactionFilter
    from binlake.pipeline.identity import identify

    data = bytearray(build.binlog((230, b"a" * 10), (230, b"b" * 100_000), (230, b"c" * 100_000), (230, b"d" * 10)))
    bad = event_positions(bytes(data))[which]
    data[bad + 19 + 5] ^= 0xFF  # a body byte: the CRC32 no longer matches
    path = tmp_path / "damaged.000001"
    path.write_bytes(bytes(data))
    rows = decode_chunk(ChunkTask(str(path), identify("s", path), 4, None), TransactionFilter(), "run")
    [error] = [dict(zip(BRONZE_COLUMNS, r)) for r in rows if r[BRONZE_COLUMNS.index("op")] == "error"]
    assert error["pos"] == bad and str(path) in error["statement"] and f"offset {bad}" in error["statement"]
    assert "CRC32" in error["statement"]
    assert error["raw"] == bytes(data[bad : bad + RAW_CAP]) and RAW_CAP == 19 + 65536
    assert len(error["raw"]) == (len(data) - bad if whole else RAW_CAP)
    assert all(r[BRONZE_COLUMNS.index("raw")] is None for r in rows if r[BRONZE_COLUMNS.index("op")] != "error")


def test_decode_error_policy_is_checked(capsys) -> None:
    from binlake.cli import main
    from binlake.errors import BinlakeError
    from binlake.lake.options import RunOptions

    with pytest.raises(BinlakeError, match="choose one of quarantine, fail"):
        RunOptions("s", on_decode_error="ignore")
    with pytest.raises(SystemExit):
        main(["run", "--landing", "x", "--lake", "y", "--on-decode-error", "ignore"])
    assert "invalid choice: 'ignore'" in capsys.readouterr().err


def test_sdi_jsonl_is_one_valid_line_per_record_whatever_the_stored_layout(tmp_path, capsys) -> None:
    """A pretty-printed ``.sdi`` file (line breaks between tokens, a U+2028 inside a string): each record is one
    line of valid JSON holding the same document."""
    import datetime as dt
    import json

    from binlake.generate.sdi_out import sdi_documents
    from binlake.generate.tables import base_tables
    from binlake.sdi.writer import to_json

    at = dt.datetime(2024, 3, 1)
    doc = json.loads(to_json(sdi_documents(base_tables()[0], at, at)[0]))
    doc["dd_object"]["comment"] = "line\u2028separator </script>"
    path = tmp_path / "customers_1.sdi"
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False), encoding="utf-8")
    code, out, err = cli(capsys, "sdi", "--format", "jsonl", str(path))
    assert code == 0, err
    lines = out.split("\n")
    assert lines[-1] == "" and len(lines) == 2
    assert json.loads(lines[0]) == {"file": str(path), "type": 1, "id": 1, "sdi": doc}  # id from the name
