"""DDL written by a latin1 client on a real MariaDB server: bronze holds each statement as the server read it
(the client character set of ``Q_CHARSET_CODE``), in both bronze writers, where the decoder's UTF-8 view of the
bytes is not text at all. The server's own catalog (``information_schema``) is the truth."""

from __future__ import annotations

import pytest

from binlake.binlog import native
from binlake.binlog.silver_types import to_arrow
from binlake.pipeline.bronze import BRONZE_SCHEMA, ChunkTask, decode_chunk
from binlake.pipeline.filters import TransactionFilter
from binlake.pipeline.identity import identify
from tests.mariadb_server import mariadb_server  # noqa: F401  (pytest fixture)

pytestmark = [pytest.mark.mariadb, pytest.mark.slow]

COLUMNS = tuple((n, t) for n, t, _ in BRONZE_SCHEMA)
COMMENT = "café à 5 € - déjà"  # every character in latin1 (cp1252: € is 0x80)


def test_latin1_client_ddl_reads_as_the_server_read_it(mariadb_server):  # noqa: F811
    import pymysql

    mariadb_server.execute("CREATE DATABASE shop; CREATE TABLE shop.t (id INT PRIMARY KEY)")
    conn = pymysql.connect(unix_socket=str(mariadb_server.socket), user="root", charset="latin1", autocommit=True)
    with conn.cursor() as cur:
        cur.execute(f"ALTER TABLE shop.t COMMENT '{COMMENT}'")
        cur.execute("SELECT @@character_set_client")
        assert cur.fetchone()[0] == "latin1"
    conn.close()
    [[truth]] = [
        line.split("\t")
        for line in mariadb_server.execute(
            "SELECT table_comment FROM information_schema.tables WHERE table_schema = 'shop' AND table_name = 't'"
        ).splitlines()
    ]
    assert truth == COMMENT
    path = mariadb_server.current_binlog()
    task = ChunkTask(str(path), identify("s", path), 4, None)
    rows = to_arrow(COLUMNS, decode_chunk(task, TransactionFilter(), "r")).to_pylist()
    statements = [r["statement"] for r in rows if r["op"] == "ddl"]
    assert f"ALTER TABLE shop.t COMMENT '{truth}'" in statements
    if native.available():
        import pyarrow as pa

        from binlake.pipeline.bronze_native import iter_native_batches

        nat = pa.Table.from_batches(list(iter_native_batches(task, TransactionFilter(), "r"))).to_pylist()
        assert nat == rows
