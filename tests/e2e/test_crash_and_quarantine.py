"""Crash-and-rerun convergence (the job stopped between any two Delta commits by a test hook, then rerun) and a
diverged source (a partial JSON update whose path does not exist: quarantined, counted, reported, nothing
invalid written)."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest

from binlake.binlog import iter_row_changes
from binlake.generate.config import GenerateConfig
from binlake.generate.run import generate
from binlake.lake.crash import CRASH_ENV, InjectedCrash
from binlake.mysqljson import parse_text
from tests.e2e.lake_compare import as_lines, diff_summary, silver_rows, truth_lines
from tests.e2e.runner import binlake_run, delta_versions
from tests.e2e.test_generator_e2e import TABLES, assert_equals_truth

pytestmark = [pytest.mark.spark, pytest.mark.slow]

DAY1, DAY2 = "2024-03-01", "2024-03-02"


@pytest.fixture(scope="module")
def day1(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Generated data (2 days) and a lake with day 1 applied (built once; tests copy the lake)."""
    root = tmp_path_factory.mktemp("crash")
    out = root / "gen"
    generate(
        out, GenerateConfig(seed=23, days=2, scale=0.004, start_date=dt.date(2024, 3, 1), max_binlog_size=96 * 1024)
    )
    return out, root / "lake-day1"


def _lake_after_day1(spark, day1: tuple[Path, Path], tmp_path: Path, engine: str) -> Path:
    out, base = day1
    base = base.with_name(f"{base.name}-{engine}")
    if not base.exists():
        binlake_run(out / "landing", base, "--end", DAY1, engine=engine)
    lake = tmp_path / "lake"
    shutil.copytree(base, lake)
    return lake


@pytest.mark.parametrize(
    "point, engine",
    [
        ("after_bronze", "spark"),
        ("after_tombstones", "rust"),
        ("after_silver:1", "rust"),
        ("after_silver:3", "spark"),
        ("before_checkpoint", "rust"),
    ],
)
def test_crash_then_rerun_converges(spark, day1, tmp_path: Path, monkeypatch, point: str, engine: str) -> None:
    out, _ = day1
    # ingest takes every landed file, so the day-1 lake holds all of bronze already: crash the first ingest
    lake = tmp_path / "lake" if point == "after_bronze" else _lake_after_day1(spark, day1, tmp_path, engine)
    monkeypatch.setenv(CRASH_ENV, point)
    with pytest.raises(InjectedCrash):
        binlake_run(out / "landing", lake, "--end", DAY2, engine=engine)
    monkeypatch.delenv(CRASH_ENV)
    [summary] = binlake_run(out / "landing", lake, "--end", DAY2, engine=engine)
    assert summary["quarantined"] == 0
    if point == "after_bronze":
        assert summary["files"] == 0  # bronze got the files before the crash: not ingested twice
    assert_equals_truth(out, lake, DAY2)
    versions = delta_versions(lake)
    binlake_run(out / "landing", lake, "--end", DAY2, engine=engine)
    assert delta_versions(lake) == versions


def _partially_updated_orders(out: Path) -> list[int]:
    """order_ids whose `doc` gets partial JSON diffs on day 2 (read from the day's binlogs)."""
    manifest = json.loads((out / "manifest.json").read_text())
    day = manifest["days"][1]
    first, last = (int(day[k].rsplit(".", 1)[1]) for k in ("first_binlog", "last_binlog"))
    ids = []
    for path in sorted((out / "landing" / manifest["source"]).glob("mysql-bin.0*")):
        if first <= int(path.name.rsplit(".", 1)[1]) <= last:
            ids += [
                c.before["order_id"]
                for c in iter_row_changes(path)
                if c.table == "orders" and c.diffs and "doc" in c.diffs
            ]
    return ids


def test_diverged_partial_update_is_quarantined(spark, day1, tmp_path: Path, monkeypatch) -> None:
    from deltalake import DeltaTable

    out, _ = day1
    lake = _lake_after_day1(spark, day1, tmp_path, "rust")
    silver_orders = DeltaTable(str(lake / "silver" / "shop__orders"))
    live = {r["order_id"] for r in silver_orders.to_pyarrow_table().to_pylist() if r["_binlake_op"] != "delete"}
    target = next(i for i in _partially_updated_orders(out) if i in live)
    # the source diverges from silver: the document no longer has the members the diffs address
    silver_orders.update(predicate=f"order_id = {target}", updates={"doc": "'[]'"})

    monkeypatch.setenv(CRASH_ENV, "after_quarantine")  # and a crash right after the quarantine write
    with pytest.raises(InjectedCrash):
        binlake_run(out / "landing", lake, "--end", DAY2, engine="rust")
    monkeypatch.delenv(CRASH_ENV)
    [summary] = binlake_run(out / "landing", lake, "--end", DAY2, engine="rust")

    quarantine = DeltaTable(str(lake / "meta" / "quarantine")).to_pyarrow_table().to_pylist()
    assert summary["quarantined"] >= 1
    assert len(quarantine) == summary["quarantined"]  # the rerun added no duplicates
    first = min(quarantine, key=lambda q: q["_binlake_seq"])
    assert (first["table_name"], first["column_name"], first["status"]) == ("orders", "doc", "REJECTED")
    assert first["document"] == "[]" and first["diffs"] and first["reason"]
    assert {q["kind"] for q in quarantine} == {"json_diff"}
    # meta.run_metrics counts the rerun's quarantined rows from meta.quarantine (per table and in total)
    metrics = DeltaTable(str(lake / "meta" / "run_metrics")).to_pyarrow_table().to_pylist()
    rerun = [m for m in metrics if m["run_end"] == max(x["run_end"] for x in metrics)]
    assert {m["table_name"]: m["quarantined"] for m in rerun}["*"] == len(quarantine)
    assert {m["table_name"]: m["quarantined"] for m in rerun}["shop.orders"] == len(quarantine)

    rows = silver_rows(lake, "shop", "orders")
    for r in rows:
        parse_text(r["doc"])  # every document in silver is valid JSON
    expected, columns = truth_lines(out / "truth", "shop", "orders", DAY2)
    others = [r for r in rows if r["order_id"] != target]
    truth_others = [line for line in expected if json.loads(line)["order_id"] != target]
    assert as_lines(others, columns) == truth_others, diff_summary(truth_others, as_lines(others, columns))
    for table in TABLES:
        if table != "orders":
            exp, cols = truth_lines(out / "truth", "shop", table, DAY2)
            assert as_lines(silver_rows(lake, "shop", table), cols) == exp
