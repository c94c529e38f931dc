"""The private MariaDB harness starts with the binlog options asked for, writes a binlog, and stops cleanly."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mariadb_server import BinlogSettings, MariaDBServer, mariadb_server, require_mariadb  # noqa: F401

pytestmark = [pytest.mark.mariadb, pytest.mark.slow]


@pytest.mark.parametrize(
    "mariadb_server",
    [BinlogSettings(row_image="NOBLOB", row_metadata="MINIMAL", server_id=42, checksum="NONE")],
    indirect=True,
)
def test_server_runs_with_the_requested_binlog_settings(mariadb_server: MariaDBServer) -> None:
    conn = mariadb_server.connect()
    try:
        cur = conn.cursor()
        cur.execute(
            "SELECT @@log_bin, @@binlog_format, @@binlog_row_image, @@binlog_row_metadata, @@server_id, "
            "@@binlog_checksum, @@character_set_server, @@port, @@bind_address"
        )
        assert cur.fetchone() == (
            "1",
            "ROW",
            "NOBLOB",
            "MINIMAL",
            "42",
            "NONE",
            "utf8mb4",
            str(mariadb_server.port),
            "127.0.0.1",
        )
    finally:
        conn.close()
    files = mariadb_server.binlog_files()
    assert len(files) == 1 and files[0].read_bytes()[:4] == b"\xfebin"


def test_stop_ends_the_server_process(tmp_path: Path) -> None:
    require_mariadb()
    server = MariaDBServer(tmp_path / "m").start()
    process = server.process
    assert process is not None and process.poll() is None
    server.stop()
    assert process.poll() is not None and server.process is None
    server.stop()  # a second stop is harmless
