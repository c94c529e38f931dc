"""The ``mysql_snapshot`` DAG: its structure and typed params (parsed in a child Airflow with no reachable
metadata DB), and a real ``dag.test()`` against a private MariaDB server: the snapshot lands next to the
source's binlogs with the server's rows, and the load (``binlake run``) seeds silver from it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.dags.conftest import airflow_env, run_python
from tests.mariadb_server import MariaDBServer, require_mariadb

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

PARSE = r"""
import json
from airflow.dag_processing.dagbag import DagBag

bag = DagBag("dags")
dag = bag.dags["mysql_snapshot"]
print(json.dumps({
    "errors": bag.import_errors, "schedule": type(dag.timetable).__name__, "doc_md": dag.doc_md,
    "catchup": dag.catchup, "max_active_runs": dag.max_active_runs, "tags": sorted(dag.tags),
    "params": {k: dag.params.get_param(k).schema for k in dag.params},
    "defaults": {k: dag.params.get_param(k).value for k in dag.params},
    "tasks": {t.task_id: {"upstream": sorted(t.upstream_task_ids), "retries": t.retries,
                          "backoff": t.retry_exponential_backoff, "max_tis": t.max_active_tis_per_dag}
              for t in dag.tasks},
}, default=str))
"""

DAG_TEST = r"""
import json, sys
from airflow.dag_processing.dagbag import DagBag
from airflow.utils.session import create_session
from airflow.models import TaskInstance
from airflow.models.xcom import XComModel

dag = DagBag("dags").get_dag("mysql_snapshot")
run = dag.test(run_conf=json.loads(sys.argv[1]))
with create_session() as session:
    tis = session.query(TaskInstance).filter_by(dag_id=run.dag_id, run_id=run.run_id).all()
    states = {ti.task_id: str(getattr(ti.state, "value", ti.state)) for ti in tis}
    xcoms = {x.task_id: x.value for x in session.query(XComModel).filter_by(dag_id=run.dag_id, run_id=run.run_id,
                                                                            key="return_value")}
print(json.dumps({"state": str(getattr(run.state, "value", run.state)), "tasks": states, "xcoms": xcoms},
                 default=str))
"""


def test_structure_and_typed_params(airflow_home: Path, tmp_path: Path) -> None:
    env = airflow_env(
        airflow_home,
        {
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": "sqlite:////nonexistent/no-db/airflow.db",
            "BINLAKE_LANDING": str(tmp_path / "landing"),
            "BINLAKE_LAKE": str(tmp_path / "lake"),
        },
    )
    d = run_python(PARSE, env)
    assert d["errors"] == {}
    assert d["schedule"] == "NullTimetable" and d["catchup"] is False and d["max_active_runs"] == 1
    assert "mysql_snapshot" in d["doc_md"] and "binlake" in d["tags"]
    assert d["tasks"] == {
        "snapshot": {"upstream": [], "retries": 2, "backoff": True, "max_tis": 1},
        "load": {"upstream": ["snapshot"], "retries": 2, "backoff": True, "max_tis": 1},
    }
    assert d["defaults"] == {
        "source_uri": None,
        "name": None,
        "landing": str(tmp_path / "landing"),
        "lake": str(tmp_path / "lake"),
        "include": [],
        "exclude": [],
        "password_env": "BINLAKE_MYSQL_PASSWORD",
        "chunk_rows": 100000,
    }
    params = d["params"]
    assert params["source_uri"]["type"] == ["null", "string"] and params["source_uri"]["pattern"] == "^mysql://"
    assert params["include"]["items"]["pattern"] and params["exclude"]["type"] == "array"
    assert params["chunk_rows"]["type"] == "integer" and params["password_env"]["pattern"]


@pytest.mark.mariadb
@pytest.mark.spark
def test_dag_run_snapshots_a_live_server_and_loads_it(airflow_home: Path, tmp_path: Path) -> None:
    from binlake.snapshot import read_snapshots

    require_mariadb()
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    with MariaDBServer(tmp_path / "mariadb") as server:
        server.execute(
            "CREATE DATABASE shop; USE shop; CREATE TABLE shop.customers (id INT PRIMARY KEY, "
            "name VARCHAR(20), since DATE) ENGINE=InnoDB; INSERT INTO shop.customers SELECT seq, "
            "CONCAT('c', seq), '2024-03-01' + INTERVAL seq DAY FROM seq_1_to_250; "
            "CREATE TABLE shop.skip_me (id INT PRIMARY KEY); "
            "CREATE USER 'snap'@'127.0.0.1' IDENTIFIED BY 'dag-pw'; GRANT SELECT ON shop.* TO "
            "'snap'@'127.0.0.1'"
        )
        env = airflow_env(
            airflow_home,
            {
                "BINLAKE_SNAPSHOT_TEST_PW": "dag-pw",
                "BINLAKE_DELTA_ENGINE": "rust",
                "BINLAKE_LANDING": str(landing),
                "BINLAKE_LAKE": str(lake),
            },
        )
        conf = {
            "source_uri": f"mysql://snap@127.0.0.1:{server.port}/?server_id=4301",
            "name": "shop-primary",
            "include": ["shop.*"],
            "exclude": ["shop.skip_me"],
            "password_env": "BINLAKE_SNAPSHOT_TEST_PW",
            "chunk_rows": 100,
            "landing": str(landing),
            "lake": str(lake),
        }
        run = run_python(DAG_TEST, env, json.dumps(conf))
    assert (run["state"], run["tasks"]) == ("success", {"snapshot": "success", "load": "success"}), run
    [snap] = read_snapshots(landing / "shop-primary")
    [table] = snap.tables
    assert (table.db, table.table, table.rows, len(table.files)) == ("shop", "customers", 250, 3)
    assert snap.position.file.startswith("binlog.")
    taken, loaded = (
        json.loads(run["xcoms"][t]) if isinstance(run["xcoms"][t], str) else run["xcoms"][t]
        for t in ("snapshot", "load")
    )
    assert taken["snapshot"] == snap.id and taken["rows"] == 250 and taken["source"] == "shop-primary"
    assert loaded["source"] == "shop-primary"  # binlake run's summary of the source
    from deltalake import DeltaTable  # the load seeded silver from the snapshot

    silver = DeltaTable(str(lake / "silver" / "shop__customers")).to_pyarrow_table()
    assert silver.num_rows == 250 and sorted(silver.column("id").to_pylist()) == list(range(1, 251))
