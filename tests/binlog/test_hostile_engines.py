"""Hostile binlogs both decoders meet alike (issue #25): a TABLE_MAP whose primary key names a column it does not
have, command-line integers out of range, a compressed payload that inflates to a gigabyte behind an event type
that can not be that large, two TABLE_MAPs of one table id in one transaction, and where an error inside a
payload is located. Each is checked on the pure-Python decoder and on the native core (differential: the same
batches, the same ``binlake rows`` bytes, the same typed error)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from binlake.binlog import CorruptEventError, read_events
from binlake.binlog.decoders import DecodeContext
from tests.binlog import build
from tests.binlog.test_columnar import assert_same_batches, batches, json_table, needs_native, rows_output

ROOT = Path(__file__).resolve().parents[2]
XID = (16, (5).to_bytes(8, "little"))


def inner(*events: tuple[int, bytes]) -> bytes:
    """Events as a TRANSACTION_PAYLOAD holds them (no checksums)."""
    return b"".join(build.event(t, body, crc=False) for t, body in events)


def payload(data: bytes, *, compress: bool = True, uncompressed_size: int | None = None) -> tuple[int, bytes]:
    """A TRANSACTION_PAYLOAD_EVENT of ``data`` (``Transaction_payload_event``: type, length, value fields)."""
    packed = zstandard.ZstdCompressor(level=3).compress(data) if compress else data
    size = len(data) if uncompressed_size is None else uncompressed_size
    return 40, payload_fields(0 if compress else 255, size, packed)


def payload_fields(compression: int, size: int, packed: bytes) -> bytes:
    """A TRANSACTION_PAYLOAD_EVENT's body: its type, uncompressed size and length fields, then ``packed``."""

    def field(ftype: int, value: int) -> bytes:
        v = build.packed(value)
        return build.packed(ftype) + build.packed(len(v)) + v

    return field(2, compression) + field(3, size) + field(1, len(packed)) + b"\0" + packed


def query(text: str, db: bytes = b"d") -> tuple[int, bytes]:
    import struct

    return 2, struct.pack("<IIBHH", 1, 0, len(db), 0, 0) + db + b"\x00" + text.encode()


def row_of(a: int, b: int) -> bytes:
    return build.image([False, False], a.to_bytes(4, "little"), (2).to_bytes(4, "little") + b"\x04" + bytes([b]))


def write(tmp_path: Path, data: bytes, name: str = "b.000001") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def event_offsets(data: bytes) -> list[int]:
    pos, out = 4, []
    while pos + 19 <= len(data):
        out.append(pos)
        pos += int.from_bytes(data[pos + 9 : pos + 13], "little")
    return out


# --- 8: a primary key column index past the TABLE_MAP's columns --------------------------------------------------


def pk_past_columns(field_type: int) -> tuple[int, bytes]:
    """``json_table`` (2 columns) whose SIMPLE_PRIMARY_KEY (8) or PRIMARY_KEY_WITH_PREFIX (9) names column 5."""
    value = build.packed(5) + (build.packed(0) if field_type == 9 else b"")
    return build.table_map(
        7,
        "d",
        "t",
        [3, 245],
        bytes([4]),
        [False, True],
        build.names("id", "j") + build.optional_field(field_type, value),
    )


@pytest.mark.parametrize("field_type", [8, 9], ids=["simple", "with-prefix"])
def test_a_primary_key_past_the_columns_is_a_corrupt_table_map(field_type: int) -> None:
    data = build.binlog(
        json_table(),
        build.rows_event(30, 7, 2, row_of(1, 1)),
        pk_past_columns(field_type),
        build.rows_event(30, 7, 2, row_of(2, 2)),
    )
    with pytest.raises(CorruptEventError) as err:
        list(read_events(io.BytesIO(data), file="pk.bin", ctx=DecodeContext()))
    e = err.value
    assert (e.file, e.offset, e.event_type) == ("pk.bin", event_offsets(data)[3], "TABLE_MAP_EVENT")
    assert (e.expected, e.found) == ("a column index below 2", 5)
    assert "primary key names a column past the TABLE_MAP's columns" in str(e)


@needs_native
@pytest.mark.parametrize("field_type", [8, 9], ids=["simple", "with-prefix"])
def test_a_primary_key_past_the_columns_fails_alike_on_both_engines(monkeypatch, tmp_path, field_type) -> None:
    data = build.binlog(
        json_table(),
        build.rows_event(30, 7, 2, row_of(1, 1)),
        pk_past_columns(field_type),
        build.rows_event(30, 7, 2, row_of(2, 2)),
    )
    _, err = batches(data, "native")
    assert err is not None and err[0] == "CorruptEventError" and err[3] == event_offsets(data)[3]
    assert_same_batches(data)
    path = write(tmp_path, data)
    out, err_text, code = rows_output(monkeypatch, path, True)
    assert code == 2 and out.count(b"\n") == 1 and "primary key names a column past" in err_text
    assert (out, err_text, code) == rows_output(monkeypatch, path, False)


# --- 9: command-line integers out of range -----------------------------------------------------------------------


def run_cli(path: Path, native_on: bool, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "BINLAKE_NATIVE": "1" if native_on else "0"}
    return subprocess.run(
        [str(Path(sys.executable).with_name("binlake")), "rows", str(path), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )


@pytest.mark.parametrize("native_on", [pytest.param(True, marks=needs_native), False], ids=["native", "python"])
@pytest.mark.parametrize("start", ["99999999999999999999", "-1", "18446744073709551616"])
def test_a_start_position_out_of_range_is_one_typed_line(tmp_path, native_on: bool, start: str) -> None:
    path = write(tmp_path, build.binlog(XID))
    done = run_cli(path, native_on, f"--start-position={start}")
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [
        f"binlake: error: {path}: start position is not an offset in a binlog "
        f"(expected 4..9223372036854775807, found {start})"
    ]


@pytest.mark.parametrize("native_on", [pytest.param(True, marks=needs_native), False], ids=["native", "python"])
@pytest.mark.parametrize("size", ["99999999999999999999", "-1", "4294967296"])
def test_a_max_event_size_out_of_range_is_refused_by_the_parser(tmp_path, native_on: bool, size: str) -> None:
    path = write(tmp_path, build.binlog(XID))
    done = run_cli(path, native_on, f"--max-event-size={size}")
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1].startswith("binlake rows: error: argument --max-event-size: must be at")


@needs_native
def test_the_native_options_raise_the_python_readers_error() -> None:
    from binlake.binlog import StartPositionError, native
    from binlake.binlog.columnar import iter_table_batches

    data = build.binlog(XID)
    for start in (-1, 1 << 64, 10**20):
        nat, py = batches(data, "native", start_position=start), batches(data, "python", start_position=start)
        assert nat == py and nat[1][0] == "StartPositionError"
    with pytest.raises(StartPositionError):
        native.options(start_position=-1)
    assert native.options(max_event_size=1 << 70)["max_event_size"] == (1 << 64) - 1
    assert list(iter_table_batches(data, engine="native", max_event_size=1 << 70)) == []


# --- 10: a payload that inflates to a gigabyte behind an event that can not be that large -----------------------


def bomb(path: Path, inner_size: int, type_code: int = 16) -> None:
    """A small binlog whose TRANSACTION_PAYLOAD inflates to one ``type_code`` event of ``inner_size`` bytes
    (zeros after its header), compressed as a stream (the test never holds the inflated bytes)."""
    head = build.event(type_code, b"", crc=False)
    head = head[:9] + inner_size.to_bytes(4, "little") + head[13:]
    z = zstandard.ZstdCompressor(level=3).compressobj(size=inner_size)
    parts = [z.compress(head)]
    zeros = bytes(1 << 20)
    left = inner_size - 19
    while left:
        n = min(left, len(zeros))
        parts.append(z.compress(zeros[:n]))
        left -= n
    parts.append(z.flush())
    packed = b"".join(parts)

    def field(ftype: int, value: int) -> bytes:
        v = build.packed(value)
        return build.packed(ftype) + build.packed(len(v)) + v

    body = field(2, 0) + field(3, inner_size) + field(1, len(packed)) + b"\0" + packed
    path.write_bytes(build.binlog((40, body)))


# the process's own peak: VmHWM starts anew at exec (ru_maxrss keeps the forking parent's, e.g. pytest's)
PEAK = """
import sys
from binlake.cli import main
code = main(sys.argv[1:])
sys.stdout.flush()
hwm = next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(f"PEAK {hwm} EXIT {code}", file=sys.stderr)
"""


@pytest.mark.parametrize("native_on", [pytest.param(True, marks=needs_native), False], ids=["native", "python"])
def test_an_xid_inflated_to_512_mib_is_a_typed_error_in_bounded_memory(tmp_path, native_on: bool) -> None:
    path = tmp_path / "bomb.000001"
    bomb(path, 512 << 20)
    assert path.stat().st_size < 64 << 10
    env = {**os.environ, "BINLAKE_NATIVE": "1" if native_on else "0"}
    done = subprocess.run(
        [sys.executable, "-c", PEAK, "rows", str(path)], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300
    )
    *lines, last = done.stderr.splitlines()
    peak_kib, code = int(last.split()[1]), int(last.split()[3])
    assert done.stdout == "" and code == 2
    assert lines == [
        f"binlake: error: {path}, offset {event_offsets(path.read_bytes())[1]}, XID_EVENT: "
        "inner event larger than any event of its type (inner offset 0) "
        f"(expected at most 27 bytes, found {512 << 20})"
    ]
    assert peak_kib < 200 << 10, f"peak {peak_kib >> 10} MiB for a {path.stat().st_size}-byte file"


@pytest.mark.parametrize("type_code,size", [(16, 8), (5, 9), (13, 16)], ids=["xid", "intvar", "rand"])
def test_a_fixed_size_event_declared_larger_is_corrupt_outer_and_inner(type_code: int, size: int) -> None:
    body = bytes(size + 1)
    for data, inside in (
        (build.binlog((type_code, body)), False),
        (build.binlog(payload(inner((type_code, body)))), True),
    ):
        assert_same_batches(data)
        _, err = batches(data, "python")
        assert err[0] == "CorruptEventError" and "larger than any event of its type" in err[1]
        assert ("inner offset 0" in err[1]) == inside and err[3] == event_offsets(data)[1]
        exact = build.binlog((type_code, bytes(size)))  # the exact size reads
        assert batches(exact, "python") == ([], None)


@needs_native
def test_an_inner_event_declared_past_its_payload_allocates_nothing_near_its_size(tmp_path) -> None:
    """An inner event declaring 512 MiB in a payload that declares as much but holds 200 bytes: the native core
    reads what is there (no buffer of the declared size), then fails as the Python reader does."""
    head = build.event(230, bytes(200), crc=False)
    head = head[:9] + (512 << 20).to_bytes(4, "little") + head[13:]
    path = write(tmp_path, build.binlog(payload(head, uncompressed_size=512 << 20)))
    env = {**os.environ, "BINLAKE_NATIVE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", PEAK, "rows", str(path)], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300
    )
    *lines, last = done.stderr.splitlines()
    assert int(last.split()[3]) == 2 and "payload ends inside an event (inner offset 0)" in lines[0]
    assert int(last.split()[1]) < 200 << 10
    assert_same_batches(path.read_bytes())


# --- 11: two TABLE_MAPs of one table id in one transaction; errors inside a payload --------------------------------


def remapped(*, compressed: bool) -> bytes:
    """Table id 7 maps `d`.`t` (2 columns), a row; then `d`.`t3` (1 column), a row: one transaction."""
    t3 = build.table_map(7, "d", "t3", [3], b"", [False])
    events = (
        query("BEGIN"),
        json_table(),
        build.rows_event(30, 7, 2, row_of(1, 1)),
        t3,
        build.rows_event(30, 7, 1, build.image([False], (9).to_bytes(4, "little"))),
        XID,
    )
    return build.binlog(payload(inner(*events))) if compressed else build.binlog(*events)


@pytest.mark.parametrize("compressed", [True, False], ids=["in-payload", "plain"])
def test_the_table_map_in_force_at_each_rows_event_decodes_it_on_both_engines(
    monkeypatch, tmp_path, compressed: bool
) -> None:
    data = remapped(compressed=compressed)
    tables = assert_same_batches(data)
    assert [(tb[2], [r["after"] for r in tb[6]]) for tb in tables] == [
        ("t", [{"@1": 1, "@2": "true"}]),
        ("t3", [{"@1": 9}]),
    ]
    if native_available():
        out = assert_same_rows_text(monkeypatch, write(tmp_path, data))
        assert [line.split('"table": ')[1][:4] for line in out.splitlines()] == ['"t",', '"t3"']


def native_available() -> bool:
    from binlake.binlog import native

    return native.available()


def assert_same_rows_text(monkeypatch, path: Path) -> str:
    py = rows_output(monkeypatch, path, False)
    nat = rows_output(monkeypatch, path, True)
    assert nat == py and py[2] == 0
    return py[0].decode()


# --- a TRANSACTION_PAYLOAD whose zstd frame is cut short ---------------------------------------------------------


@needs_native
@pytest.mark.parametrize("cut", [1, 4, 40])
def test_a_cut_zstd_frame_is_a_payload_shorter_than_declared_on_both_engines(monkeypatch, tmp_path, cut: int) -> None:
    """A compressed payload whose frame lacks its last ``cut`` bytes (its sizes as declared): what its whole blocks
    held decodes, then one CorruptEventError at the payload, "shorter than its declared uncompressed size", as
    python-zstandard's stream reader ends there; the native core's zstd reader reported "incomplete frame"."""
    events = inner(json_table(), build.rows_event(30, 7, 2, row_of(1, 1)), XID)
    frame = zstandard.ZstdCompressor(level=3).compress(events)[:-cut]
    data = build.binlog((40, payload_fields(0, len(events), frame)))
    _, err = batches(data, "native")
    assert err is not None and err[0] == "CorruptEventError" and err[3] == event_offsets(data)[1]
    assert "payload shorter than its declared uncompressed size" in err[1]
    assert_same_batches(data)
    path = write(tmp_path, data)
    assert rows_output(monkeypatch, path, True) == rows_output(monkeypatch, path, False)
