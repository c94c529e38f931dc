"""The native decoder core against the pure-Python decoder on a real MariaDB 10.11's binlogs: the oracle workload
(every column type, inserts, updates, deletes, an ALTER TABLE, old-format temporals, a second file) written as
MariaDB v1 rows events, once with MINIMAL images, MINIMAL metadata and no checksums, and once with compressed
events (``--log-bin-compress``: QUERY_COMPRESSED and *_ROWS_COMPRESSED_EVENT_V1). Batches are equal row by row
and ``binlake rows`` prints the same bytes; where the Python decoder fails (compressed rows events, see the xfail)
the native core fails with the same typed error."""

from __future__ import annotations

import pytest

from binlake.binlog import native
from binlake.binlog.schema_files import load_schema_provider
from tests.binlog.mariadb.oracle import old_time_schema
from tests.binlog.mariadb.workload import run_workload
from tests.binlog.test_columnar import assert_same_batches, assert_same_rows
from tests.mariadb_server import BinlogSettings, MariaDBServer, require_mariadb

pytestmark = [pytest.mark.mariadb, pytest.mark.slow,
              pytest.mark.skipif(not native.available(), reason="the native decoder core is not built")]

VARIANTS = {
    "compressed-events": BinlogSettings(extra_args=("--log-bin-compress=ON", "--log-bin-compress-min-len=10")),
    "minimal-image-minimal-metadata-no-checksum": BinlogSettings(row_image="MINIMAL", row_metadata="MINIMAL",
                                                                 checksum="NONE"),
}


@pytest.fixture(scope="module", params=list(VARIANTS), ids=list(VARIANTS))
def binlogs(request, tmp_path_factory) -> tuple[str, list]:
    require_mariadb()
    basedir = tmp_path_factory.mktemp(f"mariadb-{request.param}")
    with MariaDBServer(basedir, VARIANTS[request.param]) as server:
        run_workload(server)
        files = server.binlog_files()
    return request.param, files


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
    variant, files = binlogs
    rows, event_types = decoded_alike(monkeypatch, files)
    if variant != "compressed-events":
        assert rows > 50 and event_types == {23, 24, 25}, (rows, event_types)       # v1 rows events


@pytest.mark.xfail(strict=True, reason="the Python decoder (decode_rows_event) uncompresses a MariaDB compressed "
                                       "rows event from its column count, but only the rows after the "
                                       "columns-present bitmaps are compressed: CorruptEventError")
def test_mariadb_compressed_rows_events_decode(monkeypatch, binlogs) -> None:
    variant, files = binlogs
    if variant != "compressed-events":
        pytest.skip("this variant writes no compressed events")
    rows, event_types = decoded_alike(monkeypatch, files)
    assert rows > 50 and event_types & {166, 167, 168}, (rows, event_types)
