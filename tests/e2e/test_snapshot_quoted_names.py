"""A column named ``b`c`` (a backtick inside) through every step, against a real MariaDB server (issue #25 case 8):
``binlake snapshot`` reads it, the seed selects it (quoted for Spark, backticks doubled), the binlog changes after
the seam apply on top (MERGE, fold), for a table with a primary key and one without (its equal rows numbered
over every column); silver equals the server's ``SELECT *``, on both engines."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tests.e2e.lake_compare import silver_rows
from tests.e2e.runner import binlake_run
from tests.e2e.test_snapshot_seam import cli
from tests.mariadb_server import MariaDBServer, require_mariadb

pytestmark = [pytest.mark.mariadb, pytest.mark.spark, pytest.mark.slow]

SETUP = """
CREATE DATABASE q;
CREATE TABLE q.keyed (id INT PRIMARY KEY, `b``c` INT, v VARCHAR(10));
CREATE TABLE q.bag (`b``c` INT, v VARCHAR(10));
INSERT INTO q.keyed VALUES (1, 10, 'a'), (2, 20, 'b'), (3, NULL, 'c');
INSERT INTO q.bag VALUES (1, 'x'), (1, 'x'), (2, 'y');
CREATE USER 'snap'@'127.0.0.1' IDENTIFIED BY 'pw';
GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'snap'@'127.0.0.1';
RESET MASTER;
"""
CHANGES = """
INSERT INTO q.keyed VALUES (4, 40, 'd');
UPDATE q.keyed SET `b``c` = `b``c` + 1 WHERE id IN (1, 4);
UPDATE q.keyed SET `b``c` = 7 WHERE id = 3;
DELETE FROM q.keyed WHERE id = 2;
INSERT INTO q.bag VALUES (1, 'x'), (3, 'z');
UPDATE q.bag SET `b``c` = 5 WHERE v = 'y';
DELETE FROM q.bag WHERE `b``c` = 1 LIMIT 1;
"""


def bag(rows) -> Counter:
    return Counter(json.dumps(r, default=str, sort_keys=True) for r in rows)


def select_all(server: MariaDBServer, table: str) -> Counter:
    conn = server.connect("q", raw=False)
    try:
        with conn.cursor() as cur:
            cur.execute(f"SELECT * FROM {table}")
            names = [d[0] for d in cur.description]
            return bag(dict(zip(names, r)) for r in cur.fetchall())
    finally:
        conn.close()


@pytest.mark.parametrize("engine", ["rust", "spark"])
def test_a_column_named_with_a_backtick_seeds_and_applies(spark, tmp_path: Path, monkeypatch, engine: str) -> None:
    require_mariadb()
    monkeypatch.setenv("BINLAKE_MYSQL_PASSWORD", "pw")
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    with MariaDBServer(tmp_path / "server") as server:
        server.execute(SETUP)
        uri = f"mysql://snap@127.0.0.1:{server.port}/?server_id=4321&name=src"
        code, _, err = cli("snapshot", "--source", uri, "--landing", str(landing), "--include", "q.*")
        assert code == 0, err
        code, _, err = cli("fetch", "--source", uri, "--landing", str(landing))
        assert code == 0, err
        [summary] = binlake_run(landing, lake, engine=engine)  # the seed alone: no binlog change yet
        assert sorted(summary["seeded_tables"]) == ["q.bag", "q.keyed"] and summary["quarantined"] == 0
        for table in ("keyed", "bag"):
            assert bag(silver_rows(lake, "q", table)) == select_all(server, table), table
        server.execute(CHANGES)
        code, _, err = cli("fetch", "--source", uri, "--landing", str(landing))
        assert code == 0, err
        [summary] = binlake_run(landing, lake, engine=engine)
        assert summary["changes_applied"] > 0 and summary["quarantined"] == 0
        for table in ("keyed", "bag"):
            assert bag(silver_rows(lake, "q", table)) == select_all(server, table), table
        assert {r["b`c"] for r in silver_rows(lake, "q", "keyed")} == {11, 7, 41}
