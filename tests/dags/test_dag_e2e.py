"""mysql_cdc_daily end to end with ``dag.test()`` on generated data, two days (the ALTER TABLE on the second):
every task succeeds, silver equals the generator's truth at the end of each day, the quality report of each run
and the dq_report across runs exist, and running the same day again changes no table."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from tests.dags.conftest import DAYS, LoadedLake, dag_test, silver_differences

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.slow]

TASKS = [
    "shop-primary.fetch",
    "shop-primary.plan",
    "shop-primary.snapshot_sdi",
    "shop-primary.ingest_binlogs",
    "shop-primary.apply_changes",
    "plan_validation",
    "validate",
    "report",
    "freshness",
]


def test_each_day_equals_the_generator_truth(loaded_lake: LoadedLake) -> None:
    for day, run in zip(DAYS, loaded_lake.runs):
        assert run["interval"][0] == f"{day} 00:00:00+00:00"
        assert sorted(run["tasks"]) == sorted(TASKS)
        loads = {t: s for t, s in run["tasks"].items() if not t.endswith(("validate", "report", "freshness"))}
        assert set(loads.values()) == {"success"}, (day, run["tasks"])
        assert run["differences"] == {}, f"silver differs from truth at the end of {day}"


def test_every_run_succeeds_validation_included(loaded_lake: LoadedLake) -> None:
    for day, run in zip(DAYS, loaded_lake.runs):
        assert run["state"] == "success", (day, run["tasks"])
        assert set(run["tasks"].values()) == {"success"}, (day, run["tasks"])


def test_each_run_has_its_quality_report_and_summary(loaded_lake: LoadedLake) -> None:
    reports = loaded_lake.lake / "reports"
    for day in DAYS:
        page = (reports / "quality" / "runs" / day / "summary.html").read_text()
        assert f"binlake data quality: run {day}" in page and "id='verdict'" in page
        summary = json.loads((reports / "runs" / f"{day}.json").read_text())
        [source] = summary["sources"]
        assert source["source"] == "shop-primary" and source["start"].startswith(day)
        end = (dt.date.fromisoformat(day) + dt.timedelta(days=1)).isoformat()
        assert source["end"].startswith(end)  # (the backfill test may rerun the last day as a full refresh)


def test_dq_report_builds_the_history_across_runs(loaded_lake: LoadedLake) -> None:
    run = dag_test(loaded_lake.env, "dq_report")
    assert run["state"] == "success"
    page = (loaded_lake.lake / "reports" / "quality" / "history" / "index.html").read_text()
    for day in DAYS:
        assert f"../runs/{day}/summary.html" in page
    assert "Open failures (0)" in page
    built = (loaded_lake.lake / "reports" / "quality" / "history" / "reports.jsonl").read_text().splitlines()
    assert json.loads(built[-1])["runs"] == len(DAYS)


def test_running_the_same_day_again_changes_nothing(loaded_lake: LoadedLake) -> None:
    from tests.e2e.runner import delta_versions

    # versions now, not when the fixture loaded the lake: other tests on the same lake (the backfill test) may
    # have written since
    before = {t: v for t, v in delta_versions(loaded_lake.lake).items() if t != "meta/dq_results"}
    assert {"bronze/binlog_events", "meta/checkpoints", "meta/schema_registry", "silver/shop__orders"} <= set(before)
    again = dag_test(loaded_lake.env, "mysql_cdc_daily", f"{_next(DAYS[-1])}T00:00:00+00:00")
    assert again["state"] == "success", again["tasks"]
    after = {t: v for t, v in delta_versions(loaded_lake.lake).items() if t != "meta/dq_results"}
    assert after == before  # no new Delta version anywhere but the validation results
    assert silver_differences(loaded_lake.out, loaded_lake.lake, DAYS[-1]) == {}


def _next(day: str) -> str:
    import datetime as dt

    return (dt.date.fromisoformat(day) + dt.timedelta(days=1)).isoformat()
