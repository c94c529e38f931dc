"""The logic behind the DAGs (fast tier, no Airflow): settings, the job arguments (one commit-time cutoff, the
full refresh, one validation per run), the DQ history report."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pytest

import binlake.lake.idle as idle
from binlake.generate.config import GenerateConfig
from binlake.generate.run import generate
from binlake.lake.idle import look_ahead
from binlake.lake.job_args import cutoff_us
from binlake.lake.options import RunOptions
from binlake.orchestration.config import load_settings, source_conn_id
from binlake.orchestration.tasks import fetch_uri, job_args, plan_source, plan_validate, run_key, validate_args

UTC = dt.timezone.utc


def test_settings_from_environment_with_defaults(tmp_path: Path) -> None:
    default = load_settings({})
    assert default.landing.endswith(os.path.join("sample", "landing"))
    assert default.sdi.endswith(os.path.join("sample", "sdi"))
    assert default.sources == ("shop-primary",) and default.spark_conn_id == "spark_default"
    assert Path(default.spark_job("validate")).is_file()  # spark_jobs/ of this checkout
    env = {
        "BINLAKE_LANDING": str(tmp_path / "in"),
        "BINLAKE_LAKE": str(tmp_path / "lake"),
        "BINLAKE_SOURCES": "db1, db2 ,",
        "BINLAKE_START_DATE": "2025-01-02",
    }
    s = load_settings(env)
    assert (s.landing, s.lake, s.sdi) == (str(tmp_path / "in"), str(tmp_path / "lake"), str(tmp_path / "sdi"))
    assert s.sources == ("db1", "db2") and s.start_date == dt.date(2025, 1, 2)
    assert s.source_landing("db1") == str(tmp_path / "in" / "db1")
    assert s.dq_results_uri == (tmp_path / "lake" / "meta" / "dq_results").as_uri()
    assert source_conn_id("shop-primary.eu") == "binlake_source_shop_primary_eu"


def test_job_arguments_carry_the_interval_cutoff_and_run_key(tmp_path: Path) -> None:
    s = load_settings({"BINLAKE_LANDING": str(tmp_path / "in"), "BINLAKE_LAKE": str(tmp_path / "lake")})
    start = dt.datetime(2024, 3, 2, tzinfo=UTC)
    args = job_args(s, "db1", start, start + dt.timedelta(days=1), ["shop.orders", "shop.c*"])
    assert run_key(start) == "2024-03-02"
    assert args["ingest_binlogs"] == [
        "--landing",
        s.landing,
        "--lake",
        s.lake,
        "--source",
        "db1",
        "--run-id",
        "2024-03-02",
        "--end",
        "2024-03-03T00:00:00+00:00",
        "--include",
        "shop.orders",
        "--include",
        "shop.c*",
    ]
    assert args["apply_changes"][-2:] == ["--end", "2024-03-03T00:00:00+00:00"]
    assert "validate" not in args and validate_args(s, start) == ["--lake", s.lake, "--run-id", "2024-03-02"]
    refresh = plan_source(s, "db1", start, start + dt.timedelta(days=1), full_refresh=True)
    assert refresh["apply_changes"][-1] == "--full-refresh" and refresh["run_id"] == "2024-03-02"
    assert refresh["interval"]["end"] == "2024-03-03T00:00:00+00:00" and "--full-refresh" not in args["apply_changes"]


def test_spark_jobs_start_their_driver_as_binlake_run_does(tmp_path: Path, monkeypatch) -> None:
    """A source's plan gives its spark-submits the class archive (an empty SPARK_CONF_DIR, the venv's defaults as
    --properties-file) when the driver starts on this machine, and C1 only when the source has few new bytes."""
    from binlake.lake import class_archive
    from binlake.lake.session import DRIVER_GC, DRIVER_METASPACE, LONG_RUN_JIT, SHORT_RUN_JIT, project_delta_jars

    if not class_archive.is_current():
        pytest.fail("scripts/setup.sh writes the class archive (python -m binlake.cli.class_archive_cmd)")
    monkeypatch.delenv("SPARK_CONF_DIR", raising=False)
    generate(tmp_path / "gen", GenerateConfig(seed=5, days=1, scale=0.002, source="db1"))
    s = load_settings({"BINLAKE_LANDING": str(tmp_path / "gen" / "landing"), "BINLAKE_LAKE": str(tmp_path / "lake")})
    landed = sum(f.stat().st_size for f in Path(s.source_landing("db1")).glob("mysql-bin.0*"))
    start = dt.datetime(2024, 3, 2, tzinfo=UTC)
    conn = {"conn_type": "spark", "host": "local[*]", "extra": {"deploy-mode": "client"}}
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps(conn))
    ahead = look_ahead(s.layout, s.source_landing("db1"), RunOptions("db1"), "spark")
    assert (ahead.report, ahead.new_bytes) == (None, landed)  # a new lake: every landed byte is new
    plan = plan_source(s, "db1", start, start + dt.timedelta(days=1))  # a short run
    launch = class_archive.launch()
    short_run = f"{launch.java_options} {DRIVER_GC} {DRIVER_METASPACE} {SHORT_RUN_JIT}"
    assert plan["spark_conf"]["spark.driver.defaultJavaOptions"] == short_run
    assert plan["spark_env"] == {"SPARK_CONF_DIR": launch.conf_dir} and plan["spark_properties"].endswith(
        "/conf/spark-defaults.conf"
    )
    assert plan["spark_conf"]["spark.sql.session.timeZone"] == "UTC"
    # Delta's jars on the driver's class path, as the archive was written; a local driver fetches none
    jars = project_delta_jars()
    assert plan["spark_conf"]["spark.driver.extraClassPath"] == os.pathsep.join(jars) and jars
    assert plan["spark_conf"]["spark.jars"] == ""
    cluster = {**conn, "host": "spark://127.0.0.1:7077"}  # its executors still fetch them
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps(cluster))
    on_cluster = plan_source(s, "db1", start, start + dt.timedelta(days=1))["spark_conf"]
    assert on_cluster["spark.jars"] == ",".join(jars)
    assert on_cluster["spark.driver.extraClassPath"] == os.pathsep.join(jars)
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps(conn))
    refresh = plan_source(s, "db1", start, start + dt.timedelta(days=1), full_refresh=True)  # all of bronze
    long_run = f"{launch.java_options} {DRIVER_GC} {DRIVER_METASPACE} {LONG_RUN_JIT}"
    assert refresh["spark_conf"]["spark.driver.defaultJavaOptions"] == long_run
    assert plan_validate(s, start)["spark_conf"]["spark.driver.defaultJavaOptions"] == long_run
    monkeypatch.setattr(idle, "SHORT_RUN_BYTES", landed - 1)
    assert plan_source(s, "db1", start, start)["spark_conf"]["spark.driver.defaultJavaOptions"] == long_run

    # a driver started elsewhere (cluster deploy mode, YARN): no archive, no SPARK_CONF_DIR of this machine
    for elsewhere in ({**conn, "extra": {"deploy-mode": "cluster"}}, {"conn_type": "spark", "host": "yarn"}):
        monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps(elsewhere))
        plan = plan_source(s, "db1", start, start + dt.timedelta(days=1), full_refresh=True)
        assert (plan["spark_env"], plan["spark_properties"]) == (None, None)
        assert "spark.driver.defaultJavaOptions" not in plan["spark_conf"]
        assert not {"spark.driver.extraClassPath", "spark.jars"} & set(plan["spark_conf"])


def test_fetch_uri_from_connection_fields() -> None:
    assert (
        fetch_uri("db1", 3307, "repl@x", {"server_id": 77, "heartbeat": 5}, "shop")
        == "mysql://repl%40x@db1:3307/?server_id=77&name=shop&heartbeat=5"
    )
    assert fetch_uri(None, None, None, {}, "s") == "mysql://127.0.0.1:3306/?server_id=4242&name=s"


def test_cutoff_takes_naive_as_utc() -> None:
    assert cutoff_us(dt.datetime(1970, 1, 1, 0, 0, 1, 5)) == 1_000_005
    assert cutoff_us(dt.datetime(1970, 1, 1, 1, 0, 0, tzinfo=dt.timezone(dt.timedelta(hours=1)))) == 0
    assert cutoff_us(None) is None


def test_one_cutoff_for_a_day_and_an_interval_end() -> None:
    """``binlake run --end DAY`` and the DAG's job (interval end) cut at the same instant: the day's next midnight."""
    assert cutoff_us(dt.date(1970, 1, 1)) == 86_400 * 1_000_000
    assert (
        cutoff_us(dt.date(2024, 3, 1))
        == cutoff_us(dt.datetime(2024, 3, 2))
        == cutoff_us(dt.datetime(2024, 3, 2, tzinfo=dt.timezone.utc))
    )


def test_engine_for_takes_the_staging_root() -> None:
    from binlake.lake.delta import ENGINE_NAMES, engine_for

    assert ENGINE_NAMES == ("auto", "rust", "spark")
    assert engine_for(None, "rust", staging_root="/lake/_staging").staging_root == "/lake/_staging"
    assert engine_for(None, "rust").staging_root == ""


def test_dq_history_open_failures_and_trend(tmp_path: Path) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    from binlake.orchestration.dq_history import build_history
    from binlake.quality.results import DQ_RESULTS_SCHEMA, ResultRow

    def row(run: str, at: int, suite: str, ok: bool, level: str = "error") -> ResultRow:
        return ResultRow(
            run,
            dt.datetime(2024, 3, at),
            suite,
            None,
            "expect_x",
            "id",
            "{}",
            level,
            None,
            "why",
            ok,
            10,
            0 if ok else 1,
            None,
            None,
            None,
            None,
        )

    rows = [
        row("d1", 1, "a", True),
        row("d1", 1, "b", True),
        row("d2", 2, "a", False),
        row("d2", 2, "b", True),
        row("d3", 3, "a", False),
        row("d3", 3, "b", False, "warning"),
        row("d3", 4, "a", False),
        row("d3", 4, "b", True),
    ]  # d3 validated again: supersedes the first
    cols = [c for c, _, _ in DQ_RESULTS_SCHEMA]
    types = {
        "string": pa.string(),
        "timestamp": pa.timestamp("us"),
        "boolean": pa.bool_(),
        "bigint": pa.int64(),
        "double": pa.float64(),
    }
    table = pa.table({c: pa.array([getattr(r, c) for r in rows], types[t]) for c, t, _ in DQ_RESULTS_SCHEMA})
    assert table.column_names == cols
    results = tmp_path / "meta" / "dq_results"
    write_deltalake(str(results), table)
    history = build_history(str(tmp_path), str(results), str(tmp_path / "reports"))
    assert [(t.run_id, t.checked, t.failed_errors, t.failed_warnings) for t in history.runs] == [
        ("d1", 2, 0, 0),
        ("d2", 2, 1, 0),
        ("d3", 2, 1, 0),
    ]
    assert [(f.latest.suite, f.since_run, f.runs_failing) for f in history.open_failures] == [("a", "d2", 2)]
    page = Path(history.index_path).read_text()
    assert "Open failures (1)" in page and "d2 (2 runs)" in page and "../runs/d3/summary.html" in page
    build_history(str(tmp_path), str(results), str(tmp_path / "reports"))
    log = [json.loads(x) for x in (tmp_path / "reports" / "history" / "reports.jsonl").read_text().splitlines()]
    assert [(x["runs"], x["latest_run"], x["open_errors"]) for x in log] == [(3, "d3", 1), (3, "d3", 1)]


def test_failed_load_and_freshness_tasks_stay_open_until_they_succeed(tmp_path: Path, monkeypatch) -> None:
    """The callbacks record each mysql_cdc_daily task's outcome; the history page lists the tasks whose latest
    outcome failed (a failed load, a failed freshness check) among its open failures, even with no
    validation at all, and a later success of the same task closes it."""
    from types import SimpleNamespace

    from binlake.orchestration.alerts import on_failure, on_success, open_task_failures
    from binlake.orchestration.dq_history import build_history

    lake = tmp_path / "lake"
    monkeypatch.setenv("BINLAKE_LAKE", str(lake))
    monkeypatch.delenv("BINLAKE_ALERT_WEBHOOK", raising=False)

    def context(task_id: str, run_id: str, exc: Exception | None = None) -> dict:
        ti = SimpleNamespace(dag_id="mysql_cdc_daily", task_id=task_id, run_id=run_id, try_number=1, log_url="")
        return {"ti": ti, "dag_run": SimpleNamespace(dag_id="mysql_cdc_daily", run_id=run_id), "exception": exc}

    on_failure(context("shop-primary.apply_changes", "backfill__2024-03-02", RuntimeError("apply broke")))
    on_success(context("freshness", "backfill__2024-03-02"))
    on_failure(context("freshness", "backfill__2024-03-03", RuntimeError("freshness: 30.0 h behind")))
    on_failure(context("freshness", "scheduled__2024-03-04", RuntimeError("freshness: 54.0 h behind")))
    failing = {f["task_id"]: f for f in open_task_failures(str(lake))}
    assert set(failing) == {"shop-primary.apply_changes", "freshness"}
    assert failing["freshness"]["runs_failing"] == 2 and failing["freshness"]["since_run"] == "backfill__2024-03-03"
    assert failing["freshness"]["error"] == "freshness: 54.0 h behind"
    settings = load_settings()
    page = Path(settings.reports, "history", "index.html").read_text()  # rebuilt by the failure callback
    assert "Open failures (2)" in page and "apply broke" in page and "54.0 h behind" in page

    on_success(context("shop-primary.apply_changes", "backfill__2024-03-05"))
    history = build_history(settings.lake, settings.dq_results, settings.reports)
    assert [f["task_id"] for f in history.task_failures] == ["freshness"]
    assert "Open failures (1)" in Path(history.index_path).read_text()


def test_cluster_members_per_source_from_the_environment() -> None:
    """Issue 29: BINLAKE_MEMBERS lists the servers of a cluster source; the fetch task lands each in its folder."""
    import pytest

    from binlake.orchestration.config import load_settings
    from binlake.orchestration.errors import OrchestrationError
    from binlake.orchestration.tasks import member_name

    s = load_settings({"BINLAKE_MEMBERS": "shop=db1:3307, db2 ;billing=10.0.0.5:3306", "BINLAKE_SOURCES": "shop"})
    assert s.source_members("shop") == (("db1", 3307), ("db2", 3306))
    assert s.source_members("billing") == (("10.0.0.5", 3306),) and s.source_members("other") == ()
    assert load_settings({}).source_members("shop") == ()
    assert member_name("db1.example.com", 3307) == "db1.example.com-3307" and member_name("::1", 3306) == "1-3306"
    with pytest.raises(OrchestrationError, match="BINLAKE_MEMBERS part 'shop'"):
        load_settings({"BINLAKE_MEMBERS": "shop"})
