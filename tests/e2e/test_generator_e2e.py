"""End to end against the generator's ground truth: ``binlake generate`` (3 days, an ALTER TABLE on day 2,
partial JSON, compressed transactions, key changes, a table without primary key), ``binlake run`` day by day,
and every silver table equals ``truth/`` exactly (JSON text included) at the end of each day, as does the
newest version per key of the SCD2 history table; rerunning a day or the whole range changes nothing (no new
Delta version, same contents)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from binlake.generate.config import GenerateConfig
from binlake.generate.run import generate
from tests.e2e.lake_compare import as_lines, diff_summary, silver_rows, truth_lines
from tests.e2e.runner import binlake_run, delta_versions

pytestmark = [pytest.mark.spark, pytest.mark.slow]

TABLES = ("customers", "products", "orders", "audit_log")
START = dt.date(2024, 3, 1)


def history_state(lake: Path, table: str) -> list[dict]:
    """The SCD2 history table read as of its end: the newest version of each key, deletes dropped."""
    from deltalake import DeltaTable

    rows = DeltaTable(str(lake / "silver" / f"shop__{table}__history")).to_pyarrow_table().to_pylist()
    newest: dict = {}
    for r in sorted(rows, key=lambda r: r["_binlake_seq"]):
        newest[r["_binlake_key"]] = r
    return [r for r in newest.values() if r["_binlake_op"] != "delete"]


def assert_equals_truth(out: Path, lake: Path, day: str) -> None:
    for table in TABLES:
        expected, columns = truth_lines(out / "truth", "shop", table, day)
        actual = as_lines(silver_rows(lake, "shop", table), columns)
        assert actual == expected, f"shop.{table} at the end of {day}: {diff_summary(expected, actual)}"


@pytest.mark.parametrize("row_image, engine", [("full", "spark"), ("minimal", "rust")])
def test_day_by_day_equals_truth_and_reruns_change_nothing(spark, tmp_path: Path, row_image: str, engine: str) -> None:
    out = tmp_path / "gen"
    cfg = GenerateConfig(seed=11, days=3, scale=0.004, start_date=START, row_image=row_image, max_binlog_size=96 * 1024)
    generate(out, cfg)
    landing, lake = out / "landing", tmp_path / "lake"
    days = [(START + dt.timedelta(days=i)).isoformat() for i in range(3)]
    applied = 0
    from deltalake import DeltaTable

    for i, day in enumerate(days):
        [summary] = binlake_run(landing, lake, "--end", day, "--history", engine=engine)
        assert summary["quarantined"] == 0
        # the registry is a snapshot as of the run's cutoff: the ALTERed definition only from its day on
        registry = DeltaTable(str(lake / "meta" / "schema_registry")).to_pyarrow_table().to_pylist()
        assert sum(r["table_name"] == "customers" for r in registry) == 1 + (i >= cfg.effective_alter_day)
        applied += summary["changes_applied"]
        assert_equals_truth(out, lake, day)
        expected, columns = truth_lines(out / "truth", "shop", "orders", day)
        assert as_lines(history_state(lake, "orders"), columns) == expected
    assert applied > 500
    registry = DeltaTable(str(lake / "meta" / "schema_registry")).to_pyarrow_table().to_pylist()
    customers = sorted((r["version"], r["column_count"]) for r in registry if r["table_name"] == "customers")
    # the generator's ALTER TABLE customers ADD COLUMN: two SDI versions, the second one column wider (the
    # counts include InnoDB's hidden DB_TRX_ID and DB_ROLL_PTR)
    assert [v for v, _ in customers] == [1, 2] and customers[1][1] == customers[0][1] + 1
    versions = delta_versions(lake)
    assert {
        "bronze/binlog_events",
        "meta/checkpoints",
        "silver/shop__orders",
        "silver/shop__audit_log",
        "silver/shop__orders__history",
    } <= set(versions)

    [again] = binlake_run(landing, lake, "--end", days[1], "--history", engine=engine)  # an earlier day again
    [whole] = binlake_run(
        landing, lake, "--start", days[0], "--end", days[2], "--history", engine=engine
    )  # the whole range
    for summary in (again, whole):
        assert summary["files"] == 0 and summary["changes_applied"] == 0
    assert delta_versions(lake) == versions
    assert_equals_truth(out, lake, days[2])
