"""One Airflow home for the whole test session (SQLite, migrated once: ``dag.test()`` needs nothing concurrent),
and Airflow run in child processes. The tests that run Airflow's services use PostgreSQL (test_backfill_ui.py).

Airflow reads its configuration when it is first imported, so every test that runs Airflow does it in a child
Python (or the ``airflow`` CLI) with the environment of ``scripts/airflow_env.sh`` pointed at the session's
home: nothing of Airflow is imported into the pytest process.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent


def airflow_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment scripts/airflow_env.sh gives, for ``home`` (plus ``extra``), on a SQLite metadata database
    in ``home`` unless ``extra`` names another."""
    script = f". {ROOT / 'scripts' / 'airflow_env.sh'} >/dev/null && env -0"
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "BINLAKE_")) or k == "BINLAKE_HOME"}
    base.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
            **(extra or {}),
        }
    )
    out = subprocess.run(["bash", "-c", script], env=base, check=True, capture_output=True).stdout
    env = dict(item.split("=", 1) for item in out.decode().split("\0") if "=" in item)
    env.update(extra or {})
    return env


def run_python(code: str, env: Mapping[str, str], *args: str, timeout: float = 1800) -> Any:
    """Run ``code`` in a child Python with ``env``; it prints one JSON document as its last stdout line."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        env=dict(env),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        raise AssertionError(f"child Python failed ({done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-8000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def airflow_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An Airflow home with a migrated SQLite metadata DB, shared by every Airflow test of the session."""
    home = tmp_path_factory.mktemp("airflow_home")
    subprocess.run(
        [str(VENV_BIN / "airflow"), "db", "migrate"],
        env=airflow_env(home),
        check=True,
        capture_output=True,
        timeout=300,
    )
    return home


DAG_TEST = r"""
import datetime as dt, json, sys
from airflow.dag_processing.dagbag import DagBag
from airflow.utils.session import create_session

dag = DagBag("dags").get_dag(sys.argv[1])
kwargs = {"logical_date": dt.datetime.fromisoformat(sys.argv[2])} if len(sys.argv) > 2 else {}
run = dag.test(**kwargs)
with create_session() as session:
    from airflow.models import TaskInstance
    tis = session.query(TaskInstance).filter_by(dag_id=run.dag_id, run_id=run.run_id).all()
    states = {ti.task_id: str(getattr(ti.state, "value", ti.state)) for ti in tis}
print(json.dumps({"state": str(getattr(run.state, "value", run.state)),
                  "interval": [str(run.data_interval_start), str(run.data_interval_end)], "tasks": states}))
"""


def dag_test(env: Mapping[str, str], dag_id: str, logical_date: str | None = None) -> dict:
    """``dag.test()`` of one DAG in a child process: the run's state, data interval and task states."""
    return run_python(DAG_TEST, env, dag_id, *([logical_date] if logical_date else []))


START = dt.date(2024, 3, 1)
DAYS = [(START + dt.timedelta(days=i)).isoformat() for i in range(2)]


@dataclass(frozen=True)
class LoadedLake:
    """Generated sample data loaded day by day through mysql_cdc_daily's dag.test()."""

    out: Path
    lake: Path
    home: Path
    binlake_env: dict[str, str]  # BINLAKE_* settings of the loaded lake
    env: dict[str, str]
    runs: list[dict]


@pytest.fixture(scope="session")
def loaded_lake(airflow_home: Path, tmp_path_factory: pytest.TempPathFactory) -> LoadedLake:
    """Two generated days (several files a day, an ALTER TABLE on day 2, partial JSON, compressed
    transactions), each loaded by a ``dag.test()`` run of its data interval."""
    from binlake.generate.config import GenerateConfig
    from binlake.generate.run import generate

    base = tmp_path_factory.mktemp("cdc")
    out, lake = base / "gen", base / "lake"
    generate(
        out,
        GenerateConfig(seed=5, days=len(DAYS), scale=0.004, start_date=START, max_binlog_size=96 * 1024, alter_day=1),
    )
    settings = {
        "BINLAKE_LANDING": str(out / "landing"),
        "BINLAKE_LAKE": str(lake),
        "BINLAKE_SDI": str(out / "sdi"),
        "BINLAKE_SOURCES": "shop-primary",
        "BINLAKE_DELTA_ENGINE": "rust",
    }  # CI time: the spark engine's DAG run is test_dag_cluster's
    env = airflow_env(airflow_home, settings)
    runs = []
    for day in DAYS:  # a manual run's data interval is the one that ends at its logical date
        next_midnight = dt.datetime.combine(
            dt.date.fromisoformat(day) + dt.timedelta(days=1), dt.time(), dt.timezone.utc
        )
        runs.append(dag_test(env, "mysql_cdc_daily", next_midnight.isoformat()))
        runs[-1]["differences"] = silver_differences(out, lake, day)
    return LoadedLake(out, lake, airflow_home, settings, env, runs)


TABLES = ("customers", "products", "orders", "audit_log")


def silver_differences(out: Path, lake: Path, day: str) -> dict[str, str]:
    """Per table, how silver differs from the generator's truth at the end of ``day`` (empty: equal)."""
    from tests.e2e.lake_compare import as_lines, diff_summary, silver_rows, truth_lines

    diffs = {}
    for table in TABLES:
        expected, columns = truth_lines(out / "truth", "shop", table, day)
        actual = as_lines(silver_rows(lake, "shop", table), columns)
        if actual != expected:
            diffs[table] = diff_summary(expected, actual)
    return diffs
