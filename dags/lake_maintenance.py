"""
### lake_maintenance: compact, vacuum and checkpoint every Delta table of the lake, weekly

Daily MERGEs leave many small files and old versions behind. Once a week (Sunday 12:00 UTC, away from the
daily load at midnight) this DAG runs `binlake maintain` on the lake: every table of bronze, silver (history
tables included) and meta is compacted (rows unchanged), files no version within the retention references
are vacuumed, and a Delta log checkpoint is written. The task log shows the progress per table and a summary
of what changed; the summary is also the task's XCom.

Settings: `BINLAKE_VACUUM_HOURS` (default 168, the safe minimum: time travel and readers within a week keep
working; a shorter retention is refused), `BINLAKE_MAINTENANCE_ENGINE` (`rust`, default: delta-rs in the
worker, no Spark; `spark` or `auto`: an embedded delta-spark session). Trigger it by hand with the `dry_run`
param to see what vacuum would delete. Its schedule keeps it away from `mysql_cdc_daily`; if the two
ever overlap, a conflicting Delta commit fails and the task is retried.
Failures alert through `binlake.orchestration.alerts.on_failure`.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from airflow.sdk import DAG, CronDataIntervalTimetable, Param, task

from binlake.orchestration.alerts import on_failure
from binlake.orchestration.config import load_settings

settings = load_settings()

with DAG(
    dag_id=Path(__file__).stem,
    doc_md=__doc__,
    schedule=CronDataIntervalTimetable("0 12 * * 0", timezone="UTC"),
    start_date=dt.datetime.combine(settings.start_date, dt.time(), dt.timezone.utc),
    catchup=False,
    max_active_runs=1,
    tags=["binlake", "maintenance", "delta"],
    default_args={
        "owner": "binlake",
        "retries": 2,
        "retry_delay": dt.timedelta(minutes=5),
        "retry_exponential_backoff": True,
        "max_retry_delay": dt.timedelta(hours=1),
        "execution_timeout": dt.timedelta(hours=6),
        "on_failure_callback": on_failure,
    },
    params={
        "dry_run": Param(
            False,
            type="boolean",
            title="Dry run",
            description="Change nothing; count what vacuum would delete per table.",
        ),
    },
) as dag:

    @task(max_active_tis_per_dag=1)
    def maintain(params: dict | None = None) -> dict:
        from airflow.sdk.exceptions import AirflowFailException

        from binlake.lake.maintain import UnsafeRetentionError
        from binlake.lake.status import LakeNotFoundError
        from binlake.orchestration.maintenance import maintain_lake_task

        try:
            return maintain_lake_task(settings, dry_run=bool(params["dry_run"]))
        except (LakeNotFoundError, UnsafeRetentionError) as exc:  # settings to fix: retrying will not help
            raise AirflowFailException(str(exc)) from exc

    maintain()
