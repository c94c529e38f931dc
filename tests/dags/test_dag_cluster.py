"""mysql_cdc_daily with its ``spark_default`` connection pointed at a real Spark standalone cluster (a master and
two workers on 127.0.0.1): ``dag.test()`` of a day succeeds, silver equals the generator's truth, and the
Spark jobs ran on the cluster's workers (each app the DAG submitted has executor folders there)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from deltalake import DeltaTable

from tests.dags.conftest import VENV_BIN, airflow_env, dag_test, silver_differences
from tests.spark_cluster import spark_cluster  # noqa: F401  (pytest fixture)

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.slow]

START = dt.date(2024, 3, 1)


def test_daily_dag_on_a_standalone_cluster(spark_cluster, tmp_path: Path) -> None:  # noqa: F811
    import subprocess

    from binlake.generate.config import GenerateConfig
    from binlake.generate.run import generate

    # an Airflow home of its own: the DAG's dq_results asset is named by the lake path, so another lake in the
    # shared home would leave it inactive
    airflow_home = tmp_path / "airflow_home"
    airflow_home.mkdir()

    out, lake = tmp_path / "gen", tmp_path / "lake"
    # one day: the multi-day behaviour of the DAG is tested on local Spark (test_dag_e2e); here, that the jobs
    # run on the cluster and give the truth
    generate(out, GenerateConfig(seed=9, days=1, scale=0.003, start_date=START, max_binlog_size=96 * 1024))
    host, port = spark_cluster.master_url.rsplit(":", 1)
    conn = {
        "conn_type": "spark",
        "host": host,
        "port": int(port),
        "extra": {"deploy-mode": "client", "spark-binary": "spark-submit"},
    }
    env = airflow_env(
        airflow_home,
        {
            "BINLAKE_LANDING": str(out / "landing"),
            "BINLAKE_LAKE": str(lake),
            "BINLAKE_SDI": str(out / "sdi"),
            "BINLAKE_SOURCES": "shop-primary",
            "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps(conn),
        },
    )
    subprocess.run([str(VENV_BIN / "airflow"), "db", "migrate"], env=env, check=True, capture_output=True, timeout=300)
    apps_before = {d.name for w in spark_cluster.work_dirs if w.is_dir() for d in w.iterdir()}
    run = dag_test(env, "mysql_cdc_daily", f"{START + dt.timedelta(days=1)}T00:00:00+00:00")
    assert run["state"] == "success", run["tasks"]
    assert silver_differences(out, lake, START.isoformat()) == {}
    # the jobs' drivers found delta-spark (the venv's spark-defaults.conf, given as --properties-file beside the
    # class archive's empty SPARK_CONF_DIR): "auto" chose the spark engine
    metrics = DeltaTable(str(lake / "meta" / "run_metrics")).to_pyarrow_table(columns=["engine"]).to_pylist()
    assert metrics and {m["engine"] for m in metrics} == {"spark"}, metrics
    apps = {w: {d.name for d in w.iterdir()} - apps_before for w in spark_cluster.work_dirs}
    # snapshot_sdi, ingest, apply and validate were submitted to the cluster; both workers took part
    assert all(apps[w] for w in spark_cluster.work_dirs), apps
    assert len(set().union(*apps.values())) >= 4
    # every landed file is a task: the ingest ran executors on both workers
    names = {a["id"]: a["name"] for a in spark_cluster.status()["completedapps"]}
    [ingest] = [app for app in set().union(*apps.values()) if "ingest" in names.get(app, "")]
    assert all(ingest in apps[w] for w in spark_cluster.work_dirs), (ingest, apps)
    files = [p for p in (out / "landing").rglob("*") if p.is_file() and not p.name.endswith(".index")]
    assert len(files) > 2, files
