"""The native decoder core against the pure-Python decoder on a real MariaDB 10.11's binlogs: the oracle workload
(every column type, inserts, updates, deletes, an ALTER TABLE, old-format temporals, a second file) written as
MariaDB v1 rows events, once with MINIMAL images, MINIMAL metadata and no checksums, and once with compressed
events (``--log-bin-compress``: QUERY_COMPRESSED and *_ROWS_COMPRESSED_EVENT_V1). Batches are equal row by row
and ``binlake rows`` prints the same bytes. The compressed events decode to the rows ``mariadb-binlog -vv`` prints
and the server's SELECT holds, and to the same rows as the same statements written without compression; a
damaged compressed event is the same typed error in both engines. The native bronze writer writes the Python
writer's bronze rows for every file, whole and in chunks."""

from __future__ import annotations

import io
import struct
import zlib

import pytest

from binlake.binlog import native, read_events
from binlake.sdi.schema_files import load_schema_provider
from tests.binlog.mariadb import oracle
from tests.binlog.mariadb import test_mariadb_oracle as oracle_checks
from tests.binlog.mariadb.oracle import old_time_schema
from tests.binlog.test_columnar import assert_same_batches, assert_same_rows, batches
from tests.mariadb_server import BinlogSettings, require_mariadb

pytestmark = [
    pytest.mark.mariadb,
    pytest.mark.slow,
    pytest.mark.skipif(not native.available(), reason="the native decoder core is not built"),
]

VARIANTS = {
    "compressed-events": BinlogSettings(extra_args=("--log-bin-compress=ON", "--log-bin-compress-min-len=10")),
    "minimal-image-minimal-metadata-no-checksum": BinlogSettings(
        row_image="MINIMAL", row_metadata="MINIMAL", checksum="NONE"
    ),
}


@pytest.fixture(scope="module", params=list(VARIANTS), ids=list(VARIANTS))
def binlogs(request, tmp_path_factory) -> tuple[str, oracle.WorkloadRun]:
    require_mariadb()
    return request.param, oracle.run_on_fresh_server(
        tmp_path_factory.mktemp(f"mariadb-{request.param}"), VARIANTS[request.param]
    )


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory) -> oracle.WorkloadRun:
    """The same workload with the server's default binlog settings: no compression."""
    require_mariadb()
    return oracle.run_on_fresh_server(tmp_path_factory.mktemp("mariadb-plain"), BinlogSettings())


def decoded_alike(monkeypatch, files) -> tuple[int, set]:
    """Both engines on every file (equal batches, equal ``binlake rows`` bytes), the old-format temporals'
    fractional digits given by a schema as the oracle gives them: rows, rows event types."""
    schema = old_time_schema(files[0].parent)
    provider = load_schema_provider([str(schema)])
    rows, event_types = 0, set()
    for path in files:
        for tb in assert_same_batches(path, schema_provider=provider):
            rows += len(tb[6])
            event_types |= {r["event_type"] for r in tb[6]}
        assert_same_rows(monkeypatch, path, "--schema", str(schema))
    return rows, event_types


def test_mariadb_binlogs_decode_alike(monkeypatch, binlogs) -> None:
    variant, run = binlogs
    rows, event_types = decoded_alike(monkeypatch, run.files)
    if variant != "compressed-events":
        assert rows > 50 and event_types == {23, 24, 25}, (rows, event_types)  # v1 rows events


def test_mariadb_bronze_rows_equal_the_python_writer(binlogs) -> None:
    """The native bronze writer (binlake.pipeline.bronze_native) writes the Python writer's rows, byte for byte,
    for a real server's files: whole, and cut into chunks at transaction boundaries."""
    from binlake.pipeline.identity import identify
    from binlake.pipeline.split import plan_chunks
    from tests.lake.test_bronze_native import assert_same_bronze

    provider = load_schema_provider([str(old_time_schema(binlogs[1].files[0].parent))])
    changes = 0
    for path in binlogs[1].files:
        rows = assert_same_bronze(path, provider=provider)
        changes += sum(r["op"] in ("insert", "update", "delete") for r in rows)
        for task in plan_chunks(str(path), identify("s", path), 4, 4096):
            assert_same_bronze(path, start=task.start, end=task.end, batch_rows=20, provider=provider)
    assert changes > 50


@pytest.mark.parametrize("binlogs", ["compressed-events"], indirect=True)
def test_mariadb_compressed_rows_events_decode(monkeypatch, request, binlogs) -> None:
    """``row_log_event_uncompress``: only the rows after the plain columns-present bitmaps are compressed."""
    _, run = binlogs
    rows, event_types = decoded_alike(monkeypatch, run.files)
    # rows below --log-bin-compress-min-len stay in plain events
    assert rows > 50 and {166, 167, 168} <= event_types <= {23, 24, 25, 166, 167, 168}, (rows, event_types)
    # the server's own truth: the rows mariadb-binlog -vv prints, and the final SELECT
    oracle_checks.test_binlake_rows_rebuild_the_select(run)
    oracle_checks.test_binlake_rows_equal_mariadb_binlog(run)
    # the same statements written without compression decode to the same row changes, in the same order
    plain = request.getfixturevalue("plain_run")
    assert decoded_alike(monkeypatch, plain.files)[1] == {23, 24, 25}
    (got, got_problems), (want, want_problems) = oracle.binlake_changes(run), oracle.binlake_changes(plain)
    assert not got_problems and not want_problems, got_problems + want_problems

    def key(c: oracle.Change) -> tuple:
        return c.file, c.gtid, c.table, c.op, c.before, c.after

    assert len(got) == len(want) > 50
    assert [key(c) for c in got] == [key(c) for c in want]


@pytest.mark.parametrize("binlogs", ["compressed-events"], indirect=True)
def test_mariadb_damaged_compressed_rows_event_fails_alike(binlogs) -> None:
    """The Adler-32 trailer of a real compressed rows event flipped (the event's CRC32 recomputed): a
    CorruptEventError at that event in both engines."""
    _, run = binlogs
    data = bytearray(run.files[0].read_bytes())
    event = next((e for e in read_events(io.BytesIO(bytes(data))) if e.header.type_code == 166), None)
    assert event is not None, "no WRITE_ROWS_COMPRESSED_EVENT_V1 in the first file"
    pos = event.header.log_pos - event.header.event_size
    end = pos + event.header.event_size - 4  # the CRC32 follows the body
    data[end - 1] ^= 0xFF  # the last byte of the zlib stream's Adler-32
    data[end : end + 4] = struct.pack("<I", zlib.crc32(bytes(data[pos:end])))
    py, py_err = batches(bytes(data), "python")
    assert py is None and py_err[0] == "CorruptEventError" and py_err[3] == pos, py_err
    assert "compressed rows: zlib data does not decompress" in py_err[1], py_err
    assert_same_batches(bytes(data))
