"""The whole pipeline on each Delta engine gives the same lake: the same rows and the same Delta types in bronze,
every silver table, the quarantine, the checkpoints and the registry (``binlake run`` day by day over generated
data with partial JSON, compressed transactions, key changes and a table without primary key), and both equal
the generator's truth."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from binlake.generate.config import GenerateConfig
from binlake.generate.run import generate
from binlake.lake.ingest import BRONZE_PROPERTIES
from binlake.lake.job_args import cutoff_us
from tests.e2e.lake_compare import diff_summary, history_versions, versions_from_bronze
from tests.e2e.runner import binlake_run
from tests.e2e.test_generator_e2e import assert_equals_truth

pytestmark = [pytest.mark.spark, pytest.mark.slow]

START = dt.date(2024, 3, 1)
RUN_COLUMNS = {
    "ingest_run",
    "run_id",  # each run draws its own id
    # meta/run_metrics: when and how long each run took, and on which engine
    "engine",
    "run_start",
    "run_end",
    "seconds",
    "ingest_seconds",
    "apply_seconds",
    "stage_seconds",
    "lag_seconds",
}


def table_state(path: Path) -> tuple[list[tuple[str, str]], list[str]]:
    """(Delta schema as (name, type), sorted rows as canonical JSON without run ids) of a table."""
    from deltalake import DeltaTable

    table = DeltaTable(str(path))
    fields = [(f.name, str(f.type)) for f in table.schema().fields]
    rows = [
        json.dumps({k: v for k, v in r.items() if k not in RUN_COLUMNS}, sort_keys=True, default=str)
        for r in table.to_pyarrow_table().to_pylist()
    ]
    return fields, sorted(rows)


def same(expected: list, actual: list, what: str) -> None:
    """Fail with a short summary (a full diff of thousands of rows would bury the rest of the test log)."""
    if expected != actual:
        pytest.fail(f"{what} differ: {diff_summary([str(x) for x in expected], [str(x) for x in actual])}")


def test_spark_and_rust_engines_build_the_same_lake(spark, tmp_path: Path) -> None:
    out = tmp_path / "gen"
    generate(out, GenerateConfig(seed=3, days=2, scale=0.003, start_date=START, max_binlog_size=96 * 1024))
    lakes = {}
    for engine in ("spark", "rust"):
        lake = lakes[engine] = tmp_path / f"lake-{engine}"
        for day in (START, START + dt.timedelta(days=1)):
            [summary] = binlake_run(out / "landing", lake, "--end", day.isoformat(), "--history", engine=engine)
            assert summary["engine"] == engine
            assert_equals_truth(out, lake, day.isoformat())
            # every change committed by the end of the day is a version of the history, including the keys born
            # and deleted inside one run (a recomputed fold once dropped those on the spark engine)
            before_us = cutoff_us(dt.datetime.combine(day + dt.timedelta(days=1), dt.time()))
            same(
                versions_from_bronze(lake, "shop", "orders", before_us),
                history_versions(lake, "shop", "orders"),
                f"{engine}: shop.orders history at the end of {day}",
            )
    tables = sorted(str(p.parent.relative_to(lakes["spark"])) for p in lakes["spark"].glob("*/*/_delta_log"))
    assert tables == sorted(str(p.parent.relative_to(lakes["rust"])) for p in lakes["rust"].glob("*/*/_delta_log"))
    assert "silver/shop__orders__history" in tables and "meta/checkpoints" in tables
    for name in tables:
        spark_fields, spark_rows = table_state(lakes["spark"] / name)
        rust_fields, rust_rows = table_state(lakes["rust"] / name)
        assert spark_fields == rust_fields, name
        same(spark_rows, rust_rows, f"{name} (spark expected, rust actual)")
    # bronze keeps file statistics of the columns its readers skip files by, not of the row images (both engines)
    for engine, lake in lakes.items():
        from deltalake import DeltaTable

        bronze = DeltaTable(str(lake / "bronze" / "binlog_events"))
        assert bronze.metadata().configuration == BRONZE_PROPERTIES, engine
        mins = bronze.get_add_actions().column("min").to_pylist()
        assert mins and all(set(m) == {"source", "file_seq", "_binlake_seq", "commit_ts"} for m in mins), mins[:1]
