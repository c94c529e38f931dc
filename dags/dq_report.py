"""
### dq_report: the data-quality report across runs

Reads `meta.dq_results` (every expectation result of every `mysql_cdc_daily` validation) and `meta.run_metrics`
(every recorded load) and writes `<lake>/reports/quality/history/index.html`: the **operations overview** (plots
of lag per source, changes per day per table, quarantined rows per run and the expectation pass rate; the loads,
each linked to its page `history/loads/<run>.html`), each run's totals (newest first, linked to the run's own
summary page) and the open failures (expectations whose latest result failed, and since which run). Each build
is appended to `history/reports.jsonl`. The task logs the page's `file://` link and returns its path.

Runs whenever a `mysql_cdc_daily` load updates silver (asset `binlake_silver`) or a validation updates the
`binlake_dq_results` asset, unpaused from the start; trigger it by hand at any time (it only reads the lake, so
it never interferes with a load). Failed load tasks (a load, the validation, freshness) are among the open
failures; a failed task also rebuilds the page at once (its failure callback).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from airflow.sdk import DAG, Asset, Param, task

from binlake.orchestration.alerts import on_failure
from binlake.orchestration.config import DQ_RESULTS_ASSET, SILVER_ASSET, load_settings

settings = load_settings()

with DAG(
    dag_id=Path(__file__).stem,
    doc_md=__doc__,
    schedule=(
        Asset(name=SILVER_ASSET, uri=settings.silver_uri) | Asset(name=DQ_RESULTS_ASSET, uri=settings.dq_results_uri)
    ),
    is_paused_upon_creation=False,  # useful from the first load on
    start_date=dt.datetime.combine(settings.start_date, dt.time(), dt.timezone.utc),
    catchup=False,
    max_active_runs=1,
    tags=["binlake", "data-quality"],
    default_args={
        "owner": "binlake",
        "retries": 2,
        "retry_delay": dt.timedelta(seconds=30),
        "retry_exponential_backoff": True,
        "max_retry_delay": dt.timedelta(minutes=10),
        "execution_timeout": dt.timedelta(minutes=30),
        "on_failure_callback": on_failure,
    },
    params={
        "max_runs": Param(
            60,
            type="integer",
            minimum=1,
            title="Runs shown",
            description="How many of the newest runs the report lists.",
        ),
    },
) as dag:

    @task
    def build_report(params: dict | None = None) -> str:
        from binlake.orchestration.dq_history import build_history

        history = build_history(settings.lake, settings.dq_results, settings.reports, max_runs=params["max_runs"])
        print(f"report: {Path(history.index_path).as_uri()}")
        return history.index_path

    build_report()
