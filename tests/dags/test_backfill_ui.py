"""Airflow for real, as the README has a new user run it: ``scripts/airflow_standalone.sh`` (API server + UI,
scheduler, DAG processor, triggerer; LocalExecutor) on its PostgreSQL metadata database (a private cluster
started by the script), on a loopback port, over a freshly generated sample of the README's days.

* In headless Chromium, as a new user: the DAG paused, Trigger -> Backfill, the README's dates (From 2024-03-01
  To 2024-03-03) typed into the dialog, **All Runs**, Run Backfill with "Unpause on trigger" ticked: the
  scheduler runs one run per day, each loading that day; every run and task green (in the API and on the DAG's
  runs page), and silver equal to the generator's truth day by day (silver as of the end of each run's apply,
  by Delta time travel).
* Today's run on that (by now quiet) sample: green, a no-op, fresh (a quiet source is not an outage).
* Silver damaged, then a backfill of the last day with ``{"full_refresh": true}``: silver equals truth again.

Screenshots go to ``.test-logs/airflow-backfill/`` (their content is checked through the DOM); a failed step of
the Chromium test leaves a screenshot in the test's tmp dir.
The DAG's start date is today (BINLAKE_START_DATE), so with ``catchup=False`` the scheduler's first own run is
tomorrow's: it does not race the backfill for the first day (it would load all three days at once, leaving the
backfill nothing to do, and silver of the earlier days could not be compared); today's interval is triggered
explicitly instead. Not after today: Airflow creates no task instance of a task whose start date is after a
non-backfill run's logical date (``DagRun.verify_integrity``), so such a run is an empty "success".
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

from tests.dags.cdp import Browser
from tests.dags.conftest import ROOT, TABLES, airflow_env

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.slow]

DAG_ID = "mysql_cdc_daily"
README_FROM, README_TO = "2024-03-01", "2024-03-03"  # README.md / airflow/README.md's backfill example
DAYS = ["2024-03-01", "2024-03-02", "2024-03-03"]
SCREENS = ROOT / ".test-logs" / "airflow-backfill"


class Api:
    def __init__(self, base: str) -> None:
        self.base = base
        self.http = httpx.Client(base_url=base, timeout=60)
        self.token = self.http.post("/auth/token", json={"username": "admin", "password": "admin"}).json()[
            "access_token"
        ]
        self.http.headers["Authorization"] = f"Bearer {self.token}"

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        r = self.http.request(method, path, **kwargs)
        assert r.status_code < 400, f"{method} {path}: {r.status_code} {r.text}"  # PostgreSQL: no retries
        return r.json() if r.content else None

    def get(self, path: str, **params: Any) -> Any:
        return self.call("GET", path, params=params)

    def post(self, path: str, body: dict) -> Any:
        return self.call("POST", path, json=body)

    def patch(self, path: str, body: dict) -> Any:
        return self.call("PATCH", path, json=body)

    def runs(self) -> list[dict]:
        return self.get(f"/api/v2/dags/{DAG_ID}/dagRuns", limit=100, order_by="logical_date")["dag_runs"]

    def task_states(self, run_id: str) -> dict[str, dict]:
        from urllib.parse import quote

        tis = self.get(f"/api/v2/dags/{DAG_ID}/dagRuns/{quote(run_id, safe='')}/taskInstances", limit=100)[
            "task_instances"
        ]
        return {t["task_id"]: t for t in tis}

    def wait_backfill(self, backfill_id: int, log: Path, timeout: float = 5400) -> None:  # a guard: 3 runs at load 40
        _wait(
            f"backfill {backfill_id} completed",
            lambda: self.get(f"/api/v2/backfills/{backfill_id}")["completed_at"],
            timeout,
            log,
        )


@dataclass
class Server:
    api: Api
    gen: Path
    lake: Path
    log: Path


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
            raise AssertionError(
                f"timed out waiting for {what}; standalone log tail:\n" + log.read_text(errors="replace")[-4000:]
            )
        time.sleep(3)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    from binlake.generate.config import GenerateConfig
    from binlake.generate.run import generate

    base = tmp_path_factory.mktemp("backfill")
    gen, lake = base / "gen", base / "lake"
    generate(
        gen,
        GenerateConfig(
            seed=5, days=3, scale=0.004, start_date=dt.date.fromisoformat(DAYS[0]), max_binlog_size=96 * 1024
        ),
    )
    pg = Path(tempfile.mkdtemp(prefix="binlake-pg-"))  # PostgreSQL runs as `postgres`: a folder it can reach
    pg.chmod(0o755)
    port = _free_port()
    today = dt.datetime.now(dt.timezone.utc).date().isoformat()
    env = airflow_env(
        base / "home",
        {
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": "",  # airflow_env.sh's default: the local PostgreSQL
            "BINLAKE_PG_DIR": str(pg / "pg"),
            "BINLAKE_PG_PORT": str(_free_port()),
            "AIRFLOW__API__PORT": str(port),
            "BINLAKE_LANDING": str(gen / "landing"),
            "BINLAKE_SDI": str(gen / "sdi"),
            "BINLAKE_LAKE": str(lake),
            "BINLAKE_SOURCES": "shop-primary",
            "BINLAKE_START_DATE": today,
            "BINLAKE_DELTA_ENGINE": "rust",
        },
    )  # CI time: the spark engine's DAG run is test_dag_cluster's
    env.pop("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN")  # airflow_env.sh (sourced by the script) names PostgreSQL
    log = base / "standalone.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            ["bash", str(ROOT / "scripts" / "airflow_standalone.sh")],
            env=env,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        url = f"http://127.0.0.1:{port}"

        def healthy() -> bool:
            h = httpx.get(f"{url}/api/v2/monitor/health", timeout=10).json()
            return h["metadatabase"]["status"] == "healthy" and h["scheduler"]["status"] == "healthy"

        _wait("a healthy API server and scheduler", healthy, 300, log)
        api = Api(url)
        _wait(f"{DAG_ID} parsed", lambda: api.get(f"/api/v2/dags/{DAG_ID}"), 300, log)
        assert "postgresql" in log.read_text(errors="replace") or (pg / "pg" / "data" / "PG_VERSION").is_file()
        yield Server(api, gen, lake, log)
    finally:
        proc.send_signal(signal.SIGTERM)  # the script passes it on to airflow as SIGINT, then stops PG
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the process group this fixture started
            proc.wait(timeout=30)
        subprocess.run(
            ["bash", str(ROOT / "scripts" / "airflow_postgres.sh"), "stop"],
            env={**env, "BINLAKE_PG_DIR": str(pg / "pg")},
            check=False,
        )


def _silver_as_of(lake: Path, table: str, when: dt.datetime) -> list[dict]:
    """silver.shop__<table> as it was at ``when`` (Delta time travel), read as lake_compare reads it."""
    import struct

    import pyarrow as pa
    from deltalake import DeltaTable

    from binlake.binlog.columns import shortest_float32
    from tests.e2e.lake_compare import live_rows

    t = DeltaTable(str(lake / "silver" / f"shop__{table}"))
    t.load_as_version(when)
    data = t.to_pyarrow_table()
    floats = [f.name for f in data.schema if f.type == pa.float32()]
    rows = live_rows(data.to_pylist())
    for r in rows:
        for name in floats:
            if r[name] is not None:
                r[name] = shortest_float32(struct.pack("<f", r[name]))
    return rows


def _differences(gen: Path, lake: Path, day: str, when: dt.datetime | None = None) -> dict[str, str]:
    from tests.e2e.lake_compare import as_lines, diff_summary, silver_rows, truth_lines

    out = {}
    for table in TABLES:
        expected, columns = truth_lines(gen / "truth", "shop", table, day)
        rows = silver_rows(lake, "shop", table) if when is None else _silver_as_of(lake, table, when)
        actual = as_lines(rows, columns)
        if actual != expected:
            out[table] = diff_summary(expected, actual)
    return out


TRIGGER_DIALOG = "[...document.querySelectorAll('[role=dialog]')].find(d => d.innerText.includes('Single Run'))"
DATE_BOX = "[...document.querySelectorAll('input')].find(e => e.placeholder === 'YYYY/MM/DD' && e.offsetParent)"


def _type_date(browser: Browser, index: int, day: str, shown: str) -> None:
    """What a user does with the dialog's index-th date field: click it, click the popover's Date box, type the
    day (YYYY/MM/DD), see the field show ``shown`` (the UI fills the time: 00:00 for From, 23:59 for To) and
    press Escape, which closes the popover and leaves the dialog open."""
    field = f"{TRIGGER_DIALOG}.querySelectorAll('[data-testid=datetime-input]')[{index}]"
    browser.click(field)
    browser.click(DATE_BOX)
    browser.wait_for(f"document.activeElement === {DATE_BOX}")
    browser.type_text(day.replace("-", "/"))
    browser.wait_for(f"{field}.innerText.includes({shown!r})")
    browser.press("Escape")
    browser.wait_for(f"!{DATE_BOX} && !!{TRIGGER_DIALOG}")


def _open(api: Api, tmp_path: Path, page: str) -> Browser:
    """Chromium, logged in (the API's token as the UI's cookie), on ``page``; a failed wait leaves a screenshot
    in ``tmp_path``."""
    browser = Browser(tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}", shots=tmp_path)
    try:
        browser.send("Network.enable")
        browser.send("Network.setCookie", name="_token", value=api.token, url=api.base)
        browser.send("Page.navigate", url=f"{api.base}{page}")
    except BaseException:
        browser.close()
        raise
    return browser


def test_backfill_from_the_ui_dialog_loads_the_readme_dates_day_by_day(server: Server, tmp_path: Path) -> None:
    """As a new user: the DAG paused (as it is created), its page, Trigger -> Backfill, the README's dates typed,
    All Runs, Run Backfill with "Unpause on trigger" as ticked by default; the scheduler runs one run per day."""
    for readme in (ROOT / "README.md", ROOT / "airflow" / "README.md"):  # the dates this test types
        assert f"From `{README_FROM}` To `{README_TO}`" in readme.read_text(), readme
    api = server.api
    api.patch(f"/api/v2/dags/{DAG_ID}", {"is_paused": True})  # as Airflow creates it
    assert api.runs() == []
    known = {b["id"] for b in api.get("/api/v2/backfills", dag_id=DAG_ID)["backfills"]}
    browser = _open(api, tmp_path, f"/dags/{DAG_ID}")
    try:
        browser.click_text("button", "Trigger", 180)
        browser.click_text("span", "Backfill", within=TRIGGER_DIALOG)
        browser.wait_for(f"{TRIGGER_DIALOG}.innerText.includes('Reprocess Behavior')")
        _type_date(browser, 0, README_FROM, "Mar 01, 2024 00:00")
        _type_date(browser, 1, README_TO, "Mar 03, 2024 23:59")
        browser.click_text("span", "All Runs", within=TRIGGER_DIALOG)
        dialog = browser.wait_for(
            f"{TRIGGER_DIALOG}.innerText.includes('3 runs will be triggered') && {TRIGGER_DIALOG}.innerText", 120
        )
        unpause = browser.evaluate(
            f"[...{TRIGGER_DIALOG}.querySelectorAll('label')].filter(e => e.innerText.includes('Unpause'))"
            ".map(e => e.querySelector('input').checked)"
        )
        browser.evaluate(f"{TRIGGER_DIALOG}.querySelector('h2, [id*=title]').scrollIntoView({{block: 'end'}})")
        browser.wait_for(f"{TRIGGER_DIALOG}.querySelector('h2, [id*=title]').getBoundingClientRect().top >= 0")
        SCREENS.mkdir(parents=True, exist_ok=True)
        browser.screenshot(SCREENS / "backfill_dialog.png")  # the dialog from its title, as docs/ shows it
        fields = browser.evaluate(
            f"[...{TRIGGER_DIALOG}.querySelectorAll('[data-testid=datetime-input]')].map(e => e.innerText.trim())"
        )
        assert fields == ["Mar 01, 2024 00:00", "Mar 03, 2024 23:59"]  # From, To
        for expected in (
            "Run Backfill - mysql_cdc_daily",
            "3 runs will be triggered",
            "All Runs",
            "Unpause mysql_cdc_daily on trigger",
            "Full refresh",
        ):
            assert expected in dialog, (expected, dialog)
        assert unpause == [True]  # ticked by default
        browser.click_text("button", "Run Backfill", within=TRIGGER_DIALOG)
        browser.wait_for(f"!{TRIGGER_DIALOG}", 120)  # the dialog closes once the backfill is created
        [backfill] = [b for b in api.get("/api/v2/backfills", dag_id=DAG_ID)["backfills"] if b["id"] not in known]
        assert backfill["from_date"][:10] == README_FROM and backfill["to_date"][:16] == f"{README_TO}T23:59"
        assert backfill["reprocess_behavior"] == "completed" and backfill["max_active_runs"] == 1
        assert api.get(f"/api/v2/dags/{DAG_ID}")["is_paused"] is False  # "Unpause on trigger"
    except BaseException:
        browser.failure_screenshot("failed")
        raise
    finally:
        browser.close()
    api.wait_backfill(backfill["id"], server.log)  # minutes: no browser left idle meanwhile
    browser = _open(api, tmp_path, f"/dags/{DAG_ID}/runs")  # the user comes back to the DAG's runs page
    try:
        # the runs table: run id -> state, once it lists the three backfill runs and the UI's translations have
        # loaded (on a busy machine the state cells show their message keys, "states.success", for a moment)
        shown = browser.wait_for(
            "(() => { const rows = Object.fromEntries([...document.querySelectorAll('tbody tr')]"
            ".map(r => [...r.querySelectorAll('td')].map(c => c.innerText.trim()))"
            ".filter(c => (c[1] || '').startsWith('backfill__')).map(c => [c[1], c[3]]));"
            " return Object.keys(rows).length === 3"
            " && !Object.values(rows).some(s => (s || '').startsWith('states.')) && rows; })()",
            180,
        )
        browser.screenshot(SCREENS / "backfill_runs.png")
    except BaseException:
        browser.failure_screenshot("failed")
        raise
    finally:
        browser.close()
    runs = api.runs()
    assert [r["run_type"] for r in runs] == ["backfill"] * 3, runs  # nothing ran beside the backfill
    for day, run in zip(DAYS, runs):
        start = dt.date.fromisoformat(day)
        assert run["data_interval_start"][:10] == day  # the From/To dates are the days loaded
        assert run["data_interval_end"][:10] == (start + dt.timedelta(days=1)).isoformat()
        assert run["state"] == "success", run
        tis = api.task_states(run["dag_run_id"])
        assert {t: s["state"] for t, s in tis.items() if s["state"] != "success"} == {}, run["dag_run_id"]
        applied = dt.datetime.fromisoformat(tis["shop-primary.apply_changes"]["end_date"].replace("Z", "+00:00"))
        assert _differences(server.gen, server.lake, day, applied) == {}, day  # silver as that run left it
    assert shown == {r["dag_run_id"]: "Success" for r in runs}  # what the user sees on the runs page


def test_todays_run_on_a_quiet_source_is_a_green_no_op(server: Server) -> None:
    api = server.api
    api.patch(f"/api/v2/dags/{DAG_ID}", {"is_paused": False})  # a paused DAG's runs stay queued
    today = dt.datetime.combine(dt.datetime.now(dt.timezone.utc).date(), dt.time(), dt.timezone.utc)
    run = api.post(
        f"/api/v2/dags/{DAG_ID}/dagRuns",
        {"dag_run_id": f"today__{today.date().isoformat()}", "logical_date": today.isoformat(), "conf": {}},
    )
    _wait(
        "today's run finished",
        lambda: api.get(f"/api/v2/dags/{DAG_ID}/dagRuns/{run['dag_run_id']}")["state"] in ("success", "failed"),
        1800,
        server.log,
    )
    done = api.get(f"/api/v2/dags/{DAG_ID}/dagRuns/{run['dag_run_id']}")
    assert done["state"] == "success", api.task_states(run["dag_run_id"])
    states = {t: s["state"] for t, s in api.task_states(run["dag_run_id"]).items()}
    assert states, "today's run has no task instances (a logical date before the DAG's start date?)"
    assert set(states.values()) == {"success"} and "freshness" in states, states
    end = dt.datetime.fromisoformat(done["data_interval_end"].replace("Z", "+00:00"))
    assert end == today  # the interval from yesterday to today, as scheduled daily
    from binlake.orchestration.alerts import source_freshness

    [row] = source_freshness(str(server.lake), ["shop-primary"], end)  # what the freshness task judged
    assert row["quiet"] and row["lag_seconds"] == 0, row
    assert _differences(server.gen, server.lake, DAYS[-1]) == {}


def test_full_refresh_backfill_restores_damaged_silver(server: Server) -> None:
    from deltalake import DeltaTable

    api, lake, last_day = server.api, server.lake, DAYS[-1]
    DeltaTable(str(lake / "silver" / "shop__orders")).delete()
    DeltaTable(str(lake / "silver" / "shop__customers")).delete("_binlake_seq % 2 = 0")
    assert set(_differences(server.gen, lake, last_day)) == {"orders", "customers"}
    request = {
        "dag_id": DAG_ID,
        "from_date": f"{last_day}T00:00:00Z",
        "to_date": f"{last_day}T00:00:00Z",
        "run_backwards": False,
        "dag_run_conf": {"full_refresh": True},
        "reprocess_behavior": "completed",
        "max_active_runs": 1,
    }
    backfill = api.post("/api/v2/backfills", request)
    api.wait_backfill(backfill["id"], server.log)
    [run] = [r for r in api.runs() if r["run_type"] == "backfill" and r["data_interval_start"][:10] == last_day]
    assert run["state"] == "success" and run["conf"] == {"full_refresh": True}, run
    plan = api.get(
        f"/api/v2/dags/{DAG_ID}/dagRuns/{run['dag_run_id']}/taskInstances/shop-primary.plan/xcomEntries/apply_changes"
    )
    assert "--full-refresh" in str(plan["value"])  # the apply job rebuilt silver from bronze
    assert _differences(server.gen, lake, last_day) == {}
