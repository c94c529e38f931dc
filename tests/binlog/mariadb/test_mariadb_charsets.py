"""A real MariaDB server's charset metadata (binlog_row_metadata=FULL) numbers GEOMETRY columns among the
character columns: text after a GEOMETRY column decodes in its own charset."""

from __future__ import annotations

import pytest

from binlake.binlog import open_binlog
from tests.mariadb_server import MariaDBServer, mariadb_server  # noqa: F401

pytestmark = [pytest.mark.mariadb, pytest.mark.slow]


def test_text_after_a_geometry_column_keeps_its_charset(mariadb_server: MariaDBServer) -> None:
    mariadb_server.execute(
        "CREATE DATABASE d CHARACTER SET utf8mb4;"
        "CREATE TABLE d.t (id INT PRIMARY KEY, g GEOMETRY, a TEXT CHARACTER SET latin1,"
        " b VARCHAR(10) CHARACTER SET utf8mb4) DEFAULT CHARSET=utf8mb4;"
        "CREATE TABLE d.u (id INT PRIMARY KEY, g GEOMETRY, a TEXT) DEFAULT CHARSET=utf8mb4;"
        "INSERT INTO d.t VALUES (1, ST_GeomFromText('POINT(1 1)'), CONVERT('café' USING latin1), 'héé');"
        "INSERT INTO d.u VALUES (1, NULL, 'naïve');"
    )
    changes = list(open_binlog(mariadb_server.current_binlog()).row_changes())
    assert [(c.table, c.after["a"]) for c in changes] == [("t", "café"), ("u", "naïve")]
    assert changes[0].after["b"] == "héé"
