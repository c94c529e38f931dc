"""``--include``/``--exclude`` at every step of a real run (issue #25 case 8): a table left out is not seeded from
a snapshot (a real MariaDB server's), and rows of a table excluded after they reached bronze are neither applied
nor quarantined, while the other tables load; on both engines."""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from pathlib import Path

import pytest

from binlake.generate.config import GenerateConfig
from binlake.generate.run import generate
from tests.e2e.lake_compare import as_lines, diff_summary, silver_rows, truth_lines
from tests.e2e.runner import binlake_run
from tests.e2e.test_generator_e2e import TABLES
from tests.e2e.test_snapshot_seam import cli
from tests.mariadb_server import MariaDBServer, require_mariadb

pytestmark = [pytest.mark.spark, pytest.mark.slow]

DAY1, DAY2 = "2024-03-01", "2024-03-02"


def rows_of(lake: Path, db: str, table: str) -> Counter:
    return Counter(json.dumps(r, default=str, sort_keys=True) for r in silver_rows(lake, db, table))


def select_all(server: MariaDBServer, db: str, table: str) -> Counter:
    conn = server.connect(db, raw=False)
    try:
        with conn.cursor() as cur:
            cur.execute(f"SELECT * FROM `{table}`")
            names = [d[0] for d in cur.description]
            return Counter(json.dumps(dict(zip(names, r)), default=str, sort_keys=True) for r in cur.fetchall())
    finally:
        conn.close()


@pytest.mark.mariadb
@pytest.mark.parametrize("engine", ["rust", "spark"])
def test_an_excluded_table_is_not_seeded_from_a_snapshot(spark, tmp_path: Path, monkeypatch, engine: str) -> None:
    """A snapshot of `f`.`kept` and `f`.`other`, changes to both after it, ``binlake run --exclude f.other``: `kept`
    is seeded and equals the server's table, `other` has no silver table and no seed (it was seeded before)."""
    require_mariadb()
    monkeypatch.setenv("BINLAKE_MYSQL_PASSWORD", "pw")
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    with MariaDBServer(tmp_path / "server") as server:
        server.execute("""
            CREATE DATABASE f;
            CREATE TABLE f.kept (id INT PRIMARY KEY, v VARCHAR(10));
            CREATE TABLE f.other (id INT PRIMARY KEY, v VARCHAR(10));
            INSERT INTO f.kept VALUES (1, 'a'), (2, 'b'), (3, 'c');
            INSERT INTO f.other VALUES (1, 'x'), (2, 'y');
            CREATE USER 'snap'@'127.0.0.1' IDENTIFIED BY 'pw';
            GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'snap'@'127.0.0.1';
            RESET MASTER;""")
        uri = f"mysql://snap@127.0.0.1:{server.port}/?server_id=4311&name=src"
        code, _, err = cli("snapshot", "--source", uri, "--landing", str(landing), "--include", "f.*")
        assert code == 0, err
        server.execute("""
            INSERT INTO f.kept VALUES (4, 'd'); UPDATE f.kept SET v = 'B' WHERE id = 2; DELETE FROM f.kept WHERE id = 1;
            INSERT INTO f.other VALUES (3, 'z'); UPDATE f.other SET v = 'Y' WHERE id = 2;""")
        code, _, err = cli("fetch", "--source", uri, "--landing", str(landing))
        assert code == 0, err
        [summary] = binlake_run(landing, lake, "--exclude", "f.other", engine=engine)
        assert summary["seeded_tables"] == ["f.kept"] and summary["quarantined"] == 0
        assert rows_of(lake, "f", "kept") == select_all(server, "f", "kept")
    assert not (lake / "silver" / "f__other").exists()
    from deltalake import DeltaTable

    seeds = DeltaTable(str(lake / "meta" / "seeds")).to_pyarrow_table().to_pylist()
    assert [r["table_name"] for r in seeds] == ["f.kept"]


@pytest.mark.parametrize("engine", ["rust", "spark"])
def test_rows_in_bronze_of_a_table_excluded_later_are_not_applied(spark, tmp_path: Path, engine: str) -> None:
    """Day 1 applied; bronze already holds day 2 (ingest takes every landed file). The day-2 run excludes
    `shop`.`orders`: its day-2 rows, in bronze, are not applied and not quarantined (silver keeps day 1's orders);
    every other table loads day 2."""
    from deltalake import DeltaTable

    out = tmp_path / "gen"
    generate(
        out, GenerateConfig(seed=29, days=2, scale=0.004, start_date=dt.date(2024, 3, 1), max_binlog_size=96 * 1024)
    )
    landing, lake = out / "landing", tmp_path / "lake"
    binlake_run(landing, lake, "--end", DAY1, engine=engine)
    bronze = (
        DeltaTable(str(lake / "bronze" / "binlog_events"))
        .to_pyarrow_table(columns=["table_name", "op", "commit_ts"])
        .to_pylist()
    )
    day2_us = int(dt.datetime(2024, 3, 2, tzinfo=dt.timezone.utc).timestamp() * 1_000_000)
    pending = [
        r
        for r in bronze
        if r["table_name"] == "orders" and r["op"] in ("insert", "update", "delete") and r["commit_ts"] >= day2_us
    ]
    assert len(pending) > 50, "bronze should hold day 2's changes of orders before the excluding run"

    [summary] = binlake_run(landing, lake, "--end", DAY2, "--exclude", "shop.orders", engine=engine)
    assert summary["quarantined"] == 0 and summary["files"] == 0  # nothing new ingested
    quarantine = lake / "meta" / "quarantine"
    assert not (quarantine / "_delta_log").is_dir() or len(DeltaTable(str(quarantine)).to_pyarrow_table()) == 0
    for table in TABLES:
        day = DAY1 if table == "orders" else DAY2
        expected, columns = truth_lines(out / "truth", "shop", table, day)
        actual = as_lines(silver_rows(lake, "shop", table), columns)
        assert actual == expected, f"shop.{table} at the end of {day}: {diff_summary(expected, actual)}"
