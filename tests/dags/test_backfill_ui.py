"""Airflow for real: ``airflow standalone`` (API server + UI, scheduler, DAG processor, triggerer) started by
``scripts/airflow_standalone.sh`` on a loopback port, with the session's Airflow home and the loaded lake.

* The DAG's page in headless Chromium with Trigger -> Backfill open: screenshot and the dialog's text.
* Silver is damaged (rows deleted), then a backfill of the last day with ``{"full_refresh": true}`` is created
  through ``POST /api/v2/backfills`` (what that dialog sends), runs to success, and silver equals the
  generator's truth again.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

from tests.dags.cdp import Browser
from tests.dags.conftest import DAYS, ROOT, LoadedLake, airflow_env, silver_differences

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.slow]

DAG_ID = "mysql_cdc_daily"


class Api:
    def __init__(self, base: str) -> None:
        self.base = base
        self.http = httpx.Client(base_url=base, timeout=60)
        token = self._retry("POST", "/auth/token", json={"username": "admin", "password": "admin"})
        self.token = token["access_token"]
        self.http.headers["Authorization"] = f"Bearer {self.token}"

    def _retry(self, method: str, path: str, **kwargs: Any) -> Any:
        """One request; SQLite may answer 'database is locked' while the scheduler writes: retry those."""
        for attempt in range(10):
            r = self.http.request(method, path, **kwargs)
            if r.status_code < 500 or attempt == 9:
                assert r.status_code < 400, f"{method} {path}: {r.status_code} {r.text}"
                return r.json() if r.content else None
            time.sleep(2)

    def get(self, path: str, **params: Any) -> Any:
        return self._retry("GET", path, params=params)

    def post(self, path: str, body: dict) -> Any:
        return self._retry("POST", path, json=body)

    def patch(self, path: str, body: dict) -> Any:
        return self._retry("PATCH", path, json=body)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(what: str, probe, timeout: float, log: Path) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = probe()
        except (OSError, httpx.HTTPError, AssertionError, KeyError):
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; standalone log tail:\n"
                                 + log.read_text(errors="replace")[-4000:])
        time.sleep(2)


@pytest.fixture(scope="module")
def airflow_server(loaded_lake: LoadedLake, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    port = _free_port()
    env = airflow_env(loaded_lake.home, {**loaded_lake.binlake_env, "AIRFLOW__API__PORT": str(port)})
    log = tmp_path_factory.mktemp("standalone") / "standalone.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(["bash", str(ROOT / "scripts" / "airflow_standalone.sh")], env=env, cwd=ROOT,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"

        def healthy() -> bool:
            h = httpx.get(f"{base}/api/v2/monitor/health", timeout=10).json()
            return h["metadatabase"]["status"] == "healthy" and h["scheduler"]["status"] == "healthy"

        _wait("a healthy API server and scheduler", healthy, 240, log)
        api = Api(base)
        _wait(f"{DAG_ID} parsed", lambda: api.get(f"/api/v2/dags/{DAG_ID}"), 240, log)
        yield api
    finally:
        os.kill(proc.pid, signal.SIGINT)          # standalone stops its children cleanly only on SIGINT
        try:
            proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)   # the process group this fixture started
            proc.wait(timeout=30)


def test_backfill_dialog_in_the_ui(airflow_server: Api, tmp_path: Path) -> None:
    browser = Browser(tmp_path / "profile")
    try:
        browser.send("Network.enable")
        browser.send("Network.setCookie", name="_token", value=airflow_server.token, url=airflow_server.base)
        browser.send("Page.navigate", url=f"{airflow_server.base}/dags/{DAG_ID}")
        browser.wait_for("document.body && document.body.innerText.includes('mysql_cdc_daily')", 120)
        browser.click_text("button", "Trigger", 120)
        browser.wait_for("document.body.innerText.includes('Single Run')")
        browser.click_text("label, [role=radio], button, span", "Backfill")
        text = browser.wait_for("document.body.innerText.includes('Reprocess Behavior') && document.body.innerText")
        png = browser.screenshot(tmp_path / "backfill_dialog.png")
    finally:
        browser.close()
    for expected in ("Run Backfill - mysql_cdc_daily", "Date Range", "Reprocess Behavior", "Missing Runs",
                     "Missing and Errored Runs", "All Runs", "Max Active Runs", "Run Backwards",
                     "Unpause mysql_cdc_daily on trigger", "Full refresh", "Rebuild each source's silver tables"):
        assert expected in text, expected
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000


def test_backfill_through_the_rest_api_restores_damaged_silver(airflow_server: Api,
                                                                loaded_lake: LoadedLake) -> None:
    from deltalake import DeltaTable

    lake, last_day = loaded_lake.lake, DAYS[2]
    DeltaTable(str(lake / "silver" / "shop__orders")).delete()
    DeltaTable(str(lake / "silver" / "shop__customers")).delete("_binlake_seq % 2 = 0")
    assert set(silver_differences(loaded_lake.out, lake, last_day)) == {"orders", "customers"}

    # Backfill dates are the runs' run_after, the end of their data interval: the day after last_day.
    run_after = (dt.date.fromisoformat(last_day) + dt.timedelta(days=1)).isoformat()
    request = {"dag_id": DAG_ID, "from_date": f"{run_after}T00:00:00Z", "to_date": f"{run_after}T00:00:00Z",
               "run_backwards": False, "dag_run_conf": {"full_refresh": True}, "reprocess_behavior": "completed",
               "max_active_runs": 1}
    dry = airflow_server.post("/api/v2/backfills/dry_run", request)
    assert len(dry["backfills"]) == 1
    backfill = airflow_server.post("/api/v2/backfills", request)
    airflow_server.patch(f"/api/v2/dags/{DAG_ID}", {"is_paused": False})   # the dialog's "Unpause on trigger"

    deadline = time.monotonic() + 1800
    runs: list[dict] = []
    while time.monotonic() < deadline:
        runs = airflow_server.get(f"/api/v2/dags/{DAG_ID}/dagRuns", limit=50)["dag_runs"]
        for run in runs:      # unpausing also schedules the latest interval: keep this test to the backfill
            if run["run_type"] == "scheduled" and run["state"] in ("queued", "running"):
                airflow_server.patch(f"/api/v2/dags/{DAG_ID}/dagRuns/{run['dag_run_id']}", {"state": "failed"})
        done = airflow_server.get(f"/api/v2/backfills/{backfill['id']}")
        if done["completed_at"]:
            break
        time.sleep(5)
    ours = [r for r in runs if r["run_type"] == "backfill"]
    assert len(ours) == 1, runs
    run = airflow_server.get(f"/api/v2/dags/{DAG_ID}/dagRuns/{ours[0]['dag_run_id']}")
    assert run["state"] == "success", run
    assert run["conf"] == {"full_refresh": True}
    assert run["data_interval_start"].startswith(last_day)
    tis = airflow_server.get(f"/api/v2/dags/{DAG_ID}/dagRuns/{run['dag_run_id']}/taskInstances")
    states = {t["task_id"]: t["state"] for t in tis["task_instances"]}
    assert states["shop-primary.apply_changes"] == "success" and states["validate"] == "success"
    plan = airflow_server.get(f"/api/v2/dags/{DAG_ID}/dagRuns/{run['dag_run_id']}/taskInstances/shop-primary.plan"
                              "/xcomEntries/apply_changes")
    assert "--full-refresh" in str(plan["value"])          # the apply job rebuilt silver from bronze
    assert silver_differences(loaded_lake.out, lake, last_day) == {}
