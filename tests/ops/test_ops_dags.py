"""The lake_maintenance DAG and the failure alerts, through real Airflow ``dag.test()`` runs."""

from __future__ import annotations

import json
import shutil
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from tests.dags.conftest import airflow_env, airflow_home, dag_test  # noqa: F401  (airflow_home: fixture)

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.slow]


def test_lake_maintenance_dag_compacts_the_lake(loaded_lake, airflow_home: Path, tmp_path: Path) -> None:  # noqa: F811
    from deltalake import DeltaTable

    lake = tmp_path / "lake"
    shutil.copytree(loaded_lake.lake, lake)
    bronze = DeltaTable(str(lake / "bronze" / "binlog_events"))
    files, rows = len(bronze.file_uris()), bronze.to_pyarrow_table().num_rows
    assert files > 1
    run = dag_test(airflow_env(airflow_home, {"BINLAKE_LAKE": str(lake)}), "lake_maintenance")
    assert run["state"] == "success" and run["tasks"] == {"maintain": "success"}
    after = DeltaTable(str(lake / "bronze" / "binlog_events"))
    assert len(after.file_uris()) < files and after.to_pyarrow_table().num_rows == rows
    assert not (lake / "_orchestration" / "alerts.jsonl").exists()


class _Hook(BaseHTTPRequestHandler):
    received: ClassVar[list[dict]] = []

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers["Content-Length"]))
        _Hook.received.append(json.loads(body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def test_a_failed_task_alerts_by_file_and_webhook(airflow_home: Path, tmp_path: Path) -> None:  # noqa: F811
    server = HTTPServer(("127.0.0.1", 0), _Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        lake = tmp_path / "no-lake"
        env = airflow_env(
            airflow_home,
            {"BINLAKE_LAKE": str(lake), "BINLAKE_ALERT_WEBHOOK": f"http://127.0.0.1:{server.server_port}/"},
        )
        run = dag_test(env, "lake_maintenance")
    finally:
        server.shutdown()
    assert run["state"] == "failed" and run["tasks"] == {"maintain": "failed"}
    [alert] = [json.loads(line) for line in (lake / "_orchestration" / "alerts.jsonl").read_text().splitlines()]
    assert alert["dag_id"] == "lake_maintenance" and alert["task_id"] == "maintain"
    assert "holds no lake" in alert["error"]
    assert _Hook.received == [alert]
