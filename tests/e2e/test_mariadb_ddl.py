"""DDL applied where it happened, against a real MariaDB server: three days of DML interleaved with TRUNCATE, DROP
TABLE (and a new table of the same name), RENAME TABLE, ALTER TABLE ... RENAME TO, ADD COLUMN ... DEFAULT (AFTER),
DROP COLUMN, RENAME/CHANGE COLUMN, widening MODIFYs, and one change no widening covers. Event times are set per day
(``SET timestamp``); after ``binlake run --end DAY`` for each day, every silver table equals the server's
``SELECT *`` at the end of that day as a bag of rows (read with delta-rs and with Spark), renamed and dropped
tables hold no live rows, the blocked table's later changes are in quarantine and every other table kept
loading. Tables with and without a primary key; typed columns."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.runner import binlake_run
from tests.mariadb_server import BinlogSettings, MariaDBServer, require_mariadb

pytestmark = [pytest.mark.mariadb, pytest.mark.spark, pytest.mark.slow]

DAYS = [dt.date(2024, 5, 1) + dt.timedelta(days=i) for i in range(3)]

SETUP = """
CREATE DATABASE shop;
CREATE TABLE shop.items (id INT PRIMARY KEY, name VARCHAR(20), price DECIMAL(8,2), qty SMALLINT,
                         weight FLOAT, made DATE, seen DATETIME(3), at TIMESTAMP(6) NULL);
CREATE TABLE shop.log (who VARCHAR(10), n INT, note VARCHAR(10));
CREATE TABLE shop.tmp (id INT PRIMARY KEY, v VARCHAR(5));
CREATE TABLE shop.old_name (id INT PRIMARY KEY, v INT);
CREATE TABLE shop.gone (id INT PRIMARY KEY, v INT);
CREATE TABLE shop.strict (id INT PRIMARY KEY, code VARCHAR(10));
"""

# (day index, statements): each day's work, in order, with event times inside that day
WORK: list[tuple[int, list[str]]] = [
    (
        0,
        [
            "INSERT INTO shop.items VALUES (1,'a',1.50,3,0.5,'2024-01-02','2024-01-02 03:04:05.678',"
            "'2024-01-02 03:04:05.123456'),"
            "(2,'b',2.25,-4,1.25,NULL,NULL,NULL),(3,'c',9.99,7,2.5,'1999-12-31','1999-12-31 23:59:59.999',NULL)",
            "INSERT INTO shop.log VALUES ('x',1,'n'),('x',1,'n'),('y',2,NULL)",
            "INSERT INTO shop.tmp VALUES (1,'p'),(2,'q')",
            "INSERT INTO shop.old_name VALUES (1,10),(2,20)",
            "INSERT INTO shop.gone VALUES (1,1)",
            "INSERT INTO shop.strict VALUES (1,'10'),(2,'20')",
            "UPDATE shop.items SET price = price + 1 WHERE id = 1",
            "DELETE FROM shop.log WHERE who = 'x' LIMIT 1",
            "TRUNCATE TABLE shop.tmp",
            "INSERT INTO shop.tmp VALUES (3,'r')",
        ],
    ),
    (
        1,
        [
            "ALTER TABLE shop.items ADD COLUMN color VARCHAR(8) NOT NULL DEFAULT 'red' AFTER name",
            "INSERT INTO shop.items (id,name,color,price,qty,weight) VALUES (4,'d','blue',4.00,1,3.5)",
            "ALTER TABLE shop.items MODIFY price DECIMAL(12,2), MODIFY qty INT, MODIFY name VARCHAR(60), "
            "MODIFY weight DOUBLE",
            "UPDATE shop.items SET price = 123456.78, qty = 100000, name = REPEAT('n', 40) WHERE id = 2",
            "RENAME TABLE shop.old_name TO shop.new_name",
            "INSERT INTO shop.new_name VALUES (3,30)",
            "DROP TABLE shop.gone",
            "CREATE TABLE shop.gone (id INT PRIMARY KEY, w VARCHAR(3))",
            "INSERT INTO shop.gone VALUES (7,'new')",
            "ALTER TABLE shop.strict MODIFY code INT",  # no safe widening: quarantined from here on
            "INSERT INTO shop.strict VALUES (3, 30)",
            "INSERT INTO shop.log VALUES ('z',3,'m')",
        ],
    ),
    (
        2,
        [
            "ALTER TABLE shop.items DROP COLUMN at",
            "ALTER TABLE shop.items RENAME COLUMN made TO made_on",
            "ALTER TABLE shop.items CHANGE seen seen_at DATETIME(3)",
            "UPDATE shop.items SET made_on = '2024-05-03' WHERE id = 3",
            "ALTER TABLE shop.new_name RENAME TO shop.newer_name",
            "UPDATE shop.newer_name SET v = v + 1",
            "DELETE FROM shop.log WHERE who = 'y'",
            "UPDATE shop.strict SET code = 31 WHERE id = 3",
            "DELETE FROM shop.items WHERE id = 1",
        ],
    ),
]
LIVE = {
    0: ["items", "log", "tmp", "old_name", "gone", "strict"],
    1: ["items", "log", "tmp", "new_name", "gone"],
    2: ["items", "log", "tmp", "newer_name", "gone"],
}
GONE = {1: ["old_name"], 2: ["old_name", "new_name"]}


def select_all(server: MariaDBServer, table: str) -> list[dict[str, Any]]:
    conn = server.connect("shop", raw=False)
    try:
        cur = conn.cursor()
        cur.execute(f"SELECT * FROM `{table}`")
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]
    finally:
        conn.close()


def canonical(row: dict[str, Any]) -> str:
    """A row as a comparable JSON line (typed silver and PyMySQL's Python values meet here; FLOAT at float32)."""
    import struct

    out = {}
    for k, v in row.items():
        if isinstance(v, Decimal):
            v = format(v.normalize() if v == v.to_integral_value() else v, "f")
        elif isinstance(v, dt.datetime):
            v = (v.astimezone(dt.timezone.utc).replace(tzinfo=None) if v.tzinfo else v).isoformat()
        elif isinstance(v, dt.date):
            v = v.isoformat()
        elif isinstance(v, float):
            v = round(struct.unpack("<f", struct.pack("<f", v))[0], 5)
        out[k] = v
    return json.dumps(out, sort_keys=True, default=str)


def silver_bag(lake: Path, table: str) -> Counter:
    from deltalake import DeltaTable

    from binlake.lake.silver import live_rows

    path = lake / "silver" / f"shop__{table}"
    if not (path / "_delta_log").is_dir():
        return Counter()
    return Counter(canonical(r) for r in live_rows(DeltaTable(str(path)).to_pyarrow_table().to_pylist()))


def test_ddl_over_three_days_equals_select_at_the_end_of_each_day(spark, tmp_path: Path) -> None:
    """On the embedded engine (the DDL actions themselves run on both engines in tests/lake/test_ddl_apply.py;
    the spark engine's run of this workload takes minutes more than CI's budget allows for one test)."""
    engine = "rust"
    require_mariadb()
    landing = tmp_path / "landing" / "maria"
    lake = tmp_path / "lake"
    truth: dict[int, dict[str, Counter]] = {}
    with MariaDBServer(tmp_path / "server", BinlogSettings()) as server:
        conn = server.connect(raw=False)
        cur = conn.cursor()
        start = int(dt.datetime.combine(DAYS[0], dt.time(1), dt.timezone.utc).timestamp())
        cur.execute(f"SET timestamp = {start}")
        for statement in SETUP.strip().split(";"):
            if statement.strip():
                cur.execute(statement)
        for day, statements in WORK:
            base = int(dt.datetime.combine(DAYS[day], dt.time(2), dt.timezone.utc).timestamp())
            for i, statement in enumerate(statements):
                cur.execute(f"SET timestamp = {base + 60 * i}")
                cur.execute(statement)
            truth[day] = {t: Counter(canonical(r) for r in select_all(server, t)) for t in LIVE[day]}
        conn.close()
        server.flush_logs()
        landing.mkdir(parents=True)
        for f in server.binlog_files():
            shutil.copy(f, landing / f.name)

    for day in range(3):
        [summary] = binlake_run(landing.parent, lake, "--end", DAYS[day].isoformat(), engine=engine)
        for table in LIVE[day]:
            if table == "strict" and day > 0:
                continue  # blocked from day 2's ALTER on: checked below
            assert silver_bag(lake, table) == truth[day][table], (day, table)
        for table in GONE.get(day, []):
            assert silver_bag(lake, table) == Counter(), (day, table)
        if day == 1:
            assert list(summary["blocked_tables"]) == ["shop.strict"]
            assert "quarantine" in summary["blocked_tables"]["shop.strict"]
    # the dropped table's first life is retired, out of the live namespace
    assert list((lake / "silver" / "_retired").glob("shop__gone__*"))
    # the blocked table keeps what it had before the DDL; its later changes are quarantined with the reason
    assert silver_bag(lake, "strict") == Counter(
        canonical(r) for r in [{"id": 1, "code": "10"}, {"id": 2, "code": "20"}]
    )
    from deltalake import DeltaTable

    quarantine = DeltaTable(str(lake / "meta" / "quarantine")).to_pyarrow_table().to_pylist()
    blocked = [q for q in quarantine if q["table_name"] == "strict"]
    assert len(blocked) == 2 and {q["kind"] for q in blocked} == {"schema"}
    # Spark reads the same silver tables
    for table in LIVE[2]:
        rows = [r.asDict() for r in spark.read.format("delta").load(str(lake / "silver" / f"shop__{table}")).collect()]
        from binlake.lake.silver import live_rows

        assert Counter(canonical(r) for r in live_rows(rows)) == truth[2][table], table
