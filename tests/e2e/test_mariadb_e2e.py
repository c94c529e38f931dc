"""End to end against a real server: the MariaDB workload of the binlog oracle tests (every column type it has,
inserts, multi-row updates, primary-key changes, deletes, an ALTER TABLE ... ADD COLUMN mid-stream), its binlogs
through ``binlake run``, and every silver table equals the server's own ``SELECT *``."""

from __future__ import annotations

import datetime as dt
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from tests.binlog.mariadb import normalize
from tests.binlog.mariadb.oracle import run_on_fresh_server, select_state
from tests.binlog.mariadb.workload import DB, final_tables, run_workload
from tests.e2e.lake_compare import canonical_temporal, silver_rows
from tests.e2e.runner import binlake_run
from tests.mariadb_server import BinlogSettings, MariaDBServer, require_mariadb

pytestmark = [pytest.mark.mariadb, pytest.mark.spark, pytest.mark.slow]

# MariaDB 5.3-format TIME/DATETIME/TIMESTAMP columns can not be decoded from the binlog alone (the decoder says
# so): that table's binlog file is quarantined as a decode error instead (asserted below).
UNDECODABLE = "t_old_time"


def _binlake_encoding(col: Any, value: Any) -> Any:
    """A typed silver value back in the `binlake rows` JSON encoding that normalize.from_binlake reads (silver
    keeps BIGINT UNSIGNED as decimal(20,0), BIT(64) as 8 bytes, DATETIME/TIMESTAMP as timestamps, DATE as date)."""
    if isinstance(value, (bytes, bytearray)):
        return {"hex": bytes(value).hex()}
    if isinstance(value, Decimal):
        return int(value) if col.kind in ("int", "bit") else format(value, "f")
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc)
        fsp = int(col.sql.split("(", 1)[1].split(")", 1)[0]) if "(" in col.sql else 0
        return value.strftime("%Y-%m-%d %H:%M:%S") + ("." + f"{value.microsecond:06d}"[:fsp] if fsp else "")
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


def test_mariadb_workload_through_binlake_run_equals_select(spark, tmp_path: Path) -> None:
    require_mariadb()
    run = run_on_fresh_server(tmp_path / "server", BinlogSettings())
    landing = tmp_path / "landing" / "mariadb-1"
    landing.mkdir(parents=True)
    for f in run.files:
        shutil.copy(f, landing / f.name)
    lake = tmp_path / "lake"
    [summary] = binlake_run(tmp_path / "landing", lake)
    assert summary["files"] == len(run.files) and summary["changes_applied"] > 0
    assert_silver_equals_select(lake, run.select)


def test_binlogs_fetched_from_the_live_server_give_silver_equal_to_select(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 10's end-to-end proof: `binlake fetch` from the running server, then `binlake run` on the fetched
    files (the last one still growing), and silver equals the server's SELECT."""
    require_mariadb()
    from binlake.transport import FetchOptions, fetch, parse_mysql_uri

    with MariaDBServer(tmp_path / "server", BinlogSettings()) as server:
        server.execute(
            "CREATE USER 'repl'@'127.0.0.1' IDENTIFIED BY 'pw-e2e';"
            " GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'repl'@'127.0.0.1';"
        )
        monkeypatch.setenv("BINLAKE_E2E_PW", "pw-e2e")
        source = parse_mysql_uri(
            f"mysql://repl@127.0.0.1:{server.port}/?server_id=4243&name=live", password_env="BINLAKE_E2E_PW"
        )
        run_workload(server)
        select = select_state(server)
        result = fetch(source, tmp_path / "landing", FetchOptions(until_now=True, sync_interval_s=0.0, max_retries=0))
        assert result.events > 0
        fetched = sorted(p.name for p in (tmp_path / "landing" / "live").iterdir() if p.name[-1].isdigit())
        assert fetched == [f.name for f in server.binlog_files()] and len(fetched) > 1
    lake = tmp_path / "lake"
    [summary] = binlake_run(tmp_path / "landing", lake, engine="rust")
    assert summary["files"] == len(fetched) and summary["changes_applied"] > 0
    assert_silver_equals_select(lake, select)


def _typed_truth(table: Any, rows: dict) -> dict:
    """The server's rows as typed silver holds them: a zero or invalid date (``0000-00-00``, ``2024-00-00``) of a
    DATE/DATETIME/TIMESTAMP column is NULL there (its text stays in bronze)."""
    temporal = [c.name for c in table.columns if c.kind in ("date", "datetime", "timestamp")]
    return {
        key: {
            k: (None if k in temporal and isinstance(v, str) and canonical_temporal(v) is None else v)
            for k, v in row.items()
        }
        for key, row in rows.items()
    }


def assert_silver_equals_select(lake: Path, select: dict) -> None:
    for name, table in final_tables().items():
        if name == UNDECODABLE:
            continue
        rows = silver_rows(lake, DB, name)
        got = {}
        for r in rows:
            got[r["id"]] = {
                c.name: normalize.from_binlake(c, _binlake_encoding(c, r.get(c.name))) for c in table.columns
            }
        expected = _typed_truth(table, select[name])
        if name == "t_int":
            # ADD COLUMN ... DEFAULT 'dflt' fills existing rows inside the server; the binlog carries the value
            # only for rows written after the ALTER, so silver has NULL for the others (documented limitation).
            for key, row in got.items():
                if row["added"] is None and key in expected:
                    row["added"] = expected[key]["added"]
        assert got == expected, f"{DB}.{name}"

    quarantine = DeltaTable(str(lake / "meta" / "quarantine")).to_pyarrow_table().to_pylist()
    assert [q["kind"] for q in quarantine] == ["decode"]
    assert "TIME" in quarantine[0]["reason"] or "temporal" in quarantine[0]["reason"].lower()
