"""The Spark jobs on a real standalone cluster (a master and two workers on 127.0.0.1), submitted with
``spark-submit --master spark://...`` exactly as the DAG's SparkSubmitOperator does: the real MariaDB workload
loads into silver equal to the server's own SELECT, executors run on both workers. Generated data through the
DAG on a cluster: tests/dags/test_dag_cluster.py."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest

from tests.spark_cluster import spark_cluster  # noqa: F401  (pytest fixture)

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def submit(cluster, job: str, *args: str) -> dict:
    done = cluster.submit(f"spark_jobs/{job}.py", *args)
    assert done.returncode == 0, f"{job}: {cluster.failure(done)}"
    report = json.loads([line for line in done.stdout.splitlines() if line.startswith("{")][-1])
    return {"report": report, "workers": cluster.workers_used(done)}


def load_day(cluster, landing: Path, lake: Path, source: str, end: dt.datetime) -> dict:
    common = ["--lake", str(lake), "--source", source, "--run-id", end.date().isoformat(), "--end", end.isoformat()]
    ingest = submit(cluster, "ingest_binlogs", "--landing", str(landing), *common)
    apply = submit(cluster, "apply_changes", *common)
    return {"ingest": ingest, "apply": apply}


@pytest.mark.mariadb
def test_mariadb_workload_on_a_two_worker_cluster_equals_select(spark_cluster, tmp_path: Path) -> None:  # noqa: F811
    from tests.binlog.mariadb.oracle import run_on_fresh_server
    from tests.e2e.test_mariadb_e2e import assert_silver_equals_select
    from tests.mariadb_server import BinlogSettings, require_mariadb

    require_mariadb()
    run = run_on_fresh_server(tmp_path / "server", BinlogSettings())
    landing = tmp_path / "landing" / "mariadb-1"
    landing.mkdir(parents=True)
    for f in run.files:
        shutil.copy(f, landing / f.name)
    lake = tmp_path / "lake"
    done = load_day(
        spark_cluster, tmp_path / "landing", lake, "mariadb-1", dt.datetime(2100, 1, 1, tzinfo=dt.timezone.utc)
    )
    assert done["ingest"]["report"]["files"] == len(run.files)
    assert done["apply"]["workers"] == {0, 1}
    assert_silver_equals_select(lake, run.select)
