"""DAG integrity, in the style of Airflow's own example-DAG tests: every file in dags/ imports without errors,
parsing runs no metadata-DB query, looks up no connection or variable and opens no socket (proved with an
unreachable database URL and counters), and each DAG has the structure and policies we promise."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tests.dags.conftest import ROOT, airflow_env, run_python

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

PARSE = r"""
import json, socket, sys
from pathlib import Path

import sqlalchemy.event
from sqlalchemy.engine import Engine

queries, lookups, sockets = [], [], []
sqlalchemy.event.listen(Engine, "before_cursor_execute", lambda *a: queries.append(a[2]))
real_connect = socket.socket.connect
def connect(self, address):
    sockets.append(str(address))
    return real_connect(self, address)
socket.socket.connect = connect

from airflow.sdk import BaseHook, Variable
from airflow.models.connection import Connection
def record(what):
    def lookup(*args, **kwargs):
        lookups.append(what)
        raise RuntimeError(f"{what} looked up while parsing")
    return lookup
BaseHook.get_connection = classmethod(record("connection"))
Connection.get_connection_from_secrets = classmethod(record("connection"))
Variable.get = staticmethod(record("variable"))

from airflow.dag_processing.dagbag import DagBag
from airflow.serialization.serialized_objects import DagSerialization

def _from_plan(value):  # another task's XCom as "task_id:key"
    operator = getattr(value, "operator", None)
    return f"{operator.task_id}:{value.key}" if operator is not None else value


bag = DagBag(dag_folder=sys.argv[1] if len(sys.argv) > 1 else "dags")
out = {"import_errors": bag.import_errors, "queries": queries, "lookups": lookups, "sockets": sockets,
       "files": sorted(Path(d.fileloc).name for d in bag.dags.values()), "dags": {}}
for dag in bag.dags.values():
    cond = getattr(dag.timetable, "asset_condition", None)
    DagSerialization.to_dict(dag)          # what the DAG processor stores must serialize
    out["dags"][dag.dag_id] = {
        "fileloc": Path(dag.fileloc).stem, "doc_md": dag.doc_md, "tags": sorted(dag.tags),
        "catchup": dag.catchup, "max_active_runs": dag.max_active_runs, "timetable": type(dag.timetable).__name__,
        "schedule": [getattr(dag.timetable, "expression", None), str(getattr(dag.timetable, "timezone", ""))],
        "start_date": dag.start_date.isoformat(), "paused_upon_creation": dag.is_paused_upon_creation,
        "params": {k: dag.params.get_param(k).schema for k in dag.params},
        "param_defaults": {k: dag.params[k] for k in dag.params},
        "assets": sorted(str(a.uri) for a in cond.objects) if cond is not None else [],
        "tasks": {t.task_id: {
            "type": type(t).__name__, "upstream": sorted(t.upstream_task_ids), "retries": t.retries,
            "backoff": t.retry_exponential_backoff, "max_tis": t.max_active_tis_per_dag,
            "trigger_rule": getattr(t.trigger_rule, "value", t.trigger_rule), "conn_id": getattr(t, "_conn_id", None),
            "application": getattr(t, "application", None), "conf": _from_plan(getattr(t, "conf", None)),
            "env_vars": _from_plan(getattr(t, "env_vars", None)),
            "properties_file": _from_plan(getattr(t, "properties_file", None)),
            "outlets": sorted(str(o.uri) for o in t.outlets)} for t in dag.tasks},
    }
print(json.dumps(out, default=str))
"""


@pytest.fixture(scope="module")
def parsed(airflow_home: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """dags/ parsed with a metadata DB that can not be opened (its folder does not exist)."""
    lake = tmp_path_factory.mktemp("parse") / "lake"
    env = airflow_env(
        airflow_home,
        {
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": "sqlite:////nonexistent/binlake-no-db/airflow.db",
            "BINLAKE_LAKE": str(lake),
            "BINLAKE_SOURCES": "shop-primary,eu.replica",
        },
    )
    return run_python(PARSE, env)


def test_every_dag_file_imports_without_errors(parsed: dict) -> None:
    assert parsed["import_errors"] == {}
    assert parsed["files"] == sorted(p.name for p in (ROOT / "dags").glob("*.py"))


def test_parsing_touches_no_database_connection_variable_or_network(parsed: dict) -> None:
    assert parsed["queries"] == []
    assert parsed["lookups"] == []
    assert parsed["sockets"] == []


def test_dag_ids_docs_and_policies(parsed: dict) -> None:
    dags = parsed["dags"]
    assert sorted(dags) == ["dq_report", "lake_maintenance", "mysql_cdc_daily", "mysql_snapshot"]
    for dag_id, d in dags.items():
        assert d["fileloc"] == dag_id
        assert d["doc_md"] and dag_id in d["doc_md"]
        assert d["catchup"] is False and d["max_active_runs"] == 1
        assert "binlake" in d["tags"]
        assert d["start_date"] == "2024-03-01T00:00:00+00:00"
        for task_id, t in d["tasks"].items():
            if task_id in ("validate", "freshness"):
                assert t["retries"] == 0  # a failed expectation or a stale source is not transient
            else:
                assert t["retries"] >= 2 and t["backoff"] is True, task_id


def test_daily_dag_runs_on_utc_day_intervals_with_typed_params(parsed: dict) -> None:
    d = parsed["dags"]["mysql_cdc_daily"]
    assert d["timetable"] == "CronDataIntervalTimetable" and d["schedule"] == ["0 0 * * *", "UTC"]
    assert d["param_defaults"] == {"sources": ["shop-primary", "eu.replica"], "tables": [], "full_refresh": False}
    assert d["params"]["sources"]["type"] == "array"
    assert d["params"]["sources"]["items"]["enum"] == ["shop-primary", "eu.replica"]
    assert d["params"]["tables"]["items"]["pattern"]
    assert d["params"]["full_refresh"]["type"] == "boolean"


def test_daily_dag_task_structure_per_source(parsed: dict) -> None:
    tasks = parsed["dags"]["mysql_cdc_daily"]["tasks"]
    chain = ["fetch", "plan", "snapshot_sdi", "ingest_binlogs", "apply_changes"]
    spark_jobs = {"validate": tasks["validate"]}
    for group in ("shop-primary", "eu_replica"):  # task group ids: source names made id-safe
        ids = [f"{group}.{t}" for t in chain]
        for before, after in itertools.pairwise(ids):
            assert before in tasks[after]["upstream"], (before, after)
        assert f"{group}.apply_changes" in tasks["validate"]["upstream"]
        spark_jobs.update(
            {f"{group}.{job}": tasks[f"{group}.{job}"] for job in ("snapshot_sdi", "ingest_binlogs", "apply_changes")}
        )
        for writer in ("snapshot_sdi", "ingest_binlogs", "apply_changes"):
            assert tasks[f"{group}.{writer}"]["max_tis"] == 1  # one writer at a time, backfills included
    for task_id, t in spark_jobs.items():
        assert t["type"] == "SparkSubmitOperator" and t["conn_id"] == "spark_default"
        assert t["application"] == str(ROOT / "spark_jobs" / f"{task_id.rpartition('.')[2]}.py")
        # argv and the driver's settings (class archive, JIT) come from the source's plan or the validation's
        plan = "plan_validation" if task_id == "validate" else f"{task_id.rpartition('.')[0]}.plan"
        assert (t["conf"], t["env_vars"], t["properties_file"]) == tuple(
            f"{plan}:{key}" for key in ("spark_conf", "spark_env", "spark_properties")
        )
    # one validation per DAG run, after every source, then the report
    assert tasks["validate"]["max_tis"] == 1 and "plan_validation" in tasks["validate"]["upstream"]
    assert tasks["validate"]["trigger_rule"] == "none_failed_min_one_success"
    assert tasks["report"]["upstream"] == ["validate"]
    assert tasks["report"]["trigger_rule"] == "none_failed_min_one_success"
    assert tasks["freshness"]["upstream"] == ["report"]  # then the freshness check, which alerts on lag
    assert len(tasks) == 2 * len(chain) + 4


def test_dq_report_is_scheduled_on_what_the_loads_and_validations_update(parsed: dict) -> None:
    daily = parsed["dags"]["mysql_cdc_daily"]["tasks"]
    report = parsed["dags"]["dq_report"]
    outlets = {u for t in daily.values() for u in t["outlets"]}
    assert outlets == set(report["assets"]) and len(outlets) == 2
    by_task = {task_id: t["outlets"] for task_id, t in daily.items() if t["outlets"]}
    silver = {task_id for task_id, o in by_task.items() if o[0].endswith("/lake/silver")}
    assert silver == {"shop-primary.apply_changes", "eu_replica.apply_changes"}  # each source's load
    assert by_task["validate"][0].endswith("/lake/meta/dq_results")
    assert report["paused_upon_creation"] is False  # useful from the first load on
    assert parsed["dags"]["mysql_cdc_daily"]["paused_upon_creation"] is not False
    assert list(report["tasks"]) == ["build_report"]
    assert report["params"]["max_runs"]["type"] == "integer"
