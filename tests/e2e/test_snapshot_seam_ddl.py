"""Statements before a table's seam never apply to it, against a real MariaDB server: ``DROP DATABASE IF EXISTS dd;
CREATE DATABASE dd; CREATE TABLE dd.t ...; INSERT ...`` before ``binlake snapshot``, changes after it, and the
binlogs landed from their start (before the seam): silver equals the server's ``SELECT *`` (before the fix the
DROP DATABASE replayed after seeding retired the fresh table). A database whose name holds a dot (```a.b```) and a
table renamed onto a snapshotted name before the seam load the same way, with nothing quarantined and no warning
on the next run; a column added after the seam applies on top. Both Delta engines."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from binlake.cli import main
from binlake.lake.layout import LakeLayout
from binlake.lake.silver import live_rows
from tests.mariadb_server import MariaDBServer, require_mariadb

pytestmark = [pytest.mark.mariadb, pytest.mark.spark, pytest.mark.slow]

BEFORE = """
CREATE USER 'snap'@'127.0.0.1' IDENTIFIED BY 'pw';
GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'snap'@'127.0.0.1';
CREATE DATABASE dd; CREATE TABLE dd.t (id INT PRIMARY KEY, v VARCHAR(10)); INSERT INTO dd.t VALUES (9, 'old');
DROP DATABASE IF EXISTS dd;
CREATE DATABASE dd;
CREATE TABLE dd.t (id INT PRIMARY KEY, v VARCHAR(10));
INSERT INTO dd.t VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd');
CREATE DATABASE `a.b`;
CREATE TABLE `a.b`.t (id INT PRIMARY KEY, v VARCHAR(10));
INSERT INTO `a.b`.t VALUES (1, 'x'), (2, 'y'), (3, 'z');
DELETE FROM `a.b`.t WHERE id = 2;
CREATE TABLE dd.old (id INT PRIMARY KEY, v VARCHAR(10));
INSERT INTO dd.old VALUES (1, 'r1'), (2, 'r2');
RENAME TABLE dd.old TO dd.moved;
"""
AFTER = """
INSERT INTO dd.t VALUES (5, 'e');
UPDATE dd.t SET v = 'B' WHERE id = 2;
INSERT INTO `a.b`.t VALUES (4, 'w');
UPDATE `a.b`.t SET v = 'X' WHERE id = 1;
INSERT INTO dd.moved VALUES (3, 'r3');
ALTER TABLE dd.t ADD COLUMN w INT DEFAULT 7;
INSERT INTO dd.t VALUES (6, 'f', 8);
"""
TABLES = (("dd", "t"), ("a.b", "t"), ("dd", "moved"))


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def rows_of(pairs: Any) -> Counter:
    return Counter(json.dumps(r, default=str, sort_keys=True) for r in pairs)


@pytest.fixture(scope="module")
def seam_landing(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """A landing folder with a snapshot of dd.* and `a.b`.* taken after BEFORE, and every binlog of the server
    (from its first, before the seam); the server's final rows of each table."""
    require_mariadb()
    base = tmp_path_factory.mktemp("seam-ddl")
    landing = base / "landing"
    with MariaDBServer(base / "server") as server:
        server.execute(BEFORE)
        uri = f"mysql://snap@127.0.0.1:{server.port}/?server_id=4302&name=src"
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("BINLAKE_MYSQL_PASSWORD", "pw")
            code, out, err = cli(
                "snapshot", "--source", uri, "--landing", str(landing), "--include", "dd.*", "--include", "a?b.*"
            )  # (a pattern has one dot)
        assert code == 0, out + err
        server.execute(AFTER)
        server.flush_logs()
        for f in server.binlog_files():
            shutil.copy(f, landing / "src" / f.name)
        conn = server.connect(raw=False)
        truth = {}
        with conn.cursor() as cur:
            for db, table in TABLES:
                cur.execute(f"SELECT * FROM `{db}`.`{table}`")
                names = [d[0] for d in cur.description]
                truth[db, table] = rows_of(dict(zip(names, r)) for r in cur.fetchall())
        conn.close()
    return landing, truth


def silver(lake: Path, db: str, table: str) -> Counter:
    from deltalake import DeltaTable

    data = DeltaTable(LakeLayout(str(lake)).silver(db, table)).to_pyarrow_table().to_pylist()
    return rows_of(live_rows(data))


@pytest.mark.parametrize("engine", ["rust", "spark"])
def test_statements_before_a_seam_never_apply_to_the_seeded_table(
    spark, seam_landing, tmp_path: Path, engine: str
) -> None:
    from deltalake import DeltaTable

    template, truth = seam_landing
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    shutil.copytree(template, landing)
    args = ("run", "--landing", str(landing), "--lake", str(lake), "--engine", engine, "--json")
    code, out, err = cli(*args)
    assert code == 0, err
    [summary] = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert sorted(summary["seeded_tables"]) == ["a.b.t", "dd.moved", "dd.t"]
    for db, table in TABLES:
        assert silver(lake, db, table) == truth[db, table], (db, table)
    assert summary["quarantined"] == 0 and "WARNING" not in err, err
    retired = [p.name for p in (lake / "silver" / "_retired").glob("*")]
    assert not [n for n in retired if n.startswith(("dd__t__", "dd__moved__"))], retired
    assert (
        not (lake / "meta" / "quarantine").exists()
        or not DeltaTable(str(lake / "meta" / "quarantine")).to_pyarrow_table().num_rows
    )
    # the next run finds nothing to seed again and nothing to warn about
    code, out, err = cli(*args)
    assert code == 0 and "WARNING" not in err, err
    [summary] = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert summary["seeded_tables"] == [] and summary["changes_applied"] == 0
    for db, table in TABLES:
        assert silver(lake, db, table) == truth[db, table], (db, table)
