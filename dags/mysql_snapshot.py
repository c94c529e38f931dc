"""
### mysql_snapshot: a live server's tables as a consistent snapshot, then loaded into the lake

Triggered by hand (no schedule), with the source as params:

1. **snapshot**: `binlake snapshot` of the server `source_uri` (`mysql://user@host:port/?server_id=N`, as for
   `binlake fetch`; the password is read from the Airflow worker's environment variable named by `password_env`,
   never a param) into `<landing>/<name>/_snapshots/`: the selected tables (`include`/`exclude`, `db.table`
   patterns) read in one consistent view, with the binlog position at which that view is exact. A retry of a
   failed or killed snapshot resumes it.
2. **load**: `binlake run` of that source's landing folder into `lake` (it seeds silver from the snapshot
   and applies the binlogs landed after it).

Errors that need a person (access, grants, unknown tables, a table in an engine without consistent reads)
fail without retries; a dropped connection or a table changed while read is retried (and resumes). Do not
run it while `mysql_cdc_daily` loads the same lake. Details: docs/SNAPSHOT.md.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from airflow.sdk import DAG, Param, task

from binlake.orchestration.alerts import on_failure
from binlake.orchestration.config import load_settings

settings = load_settings()
TABLE_PATTERN = {"type": "string", "pattern": r"^[^.\s]+\.[^.\s]+$"}

with DAG(
    dag_id=Path(__file__).stem,
    doc_md=__doc__,
    schedule=None,
    start_date=dt.datetime.combine(settings.start_date, dt.time(), dt.timezone.utc),
    catchup=False,
    max_active_runs=1,
    tags=["binlake", "snapshot", "delta"],
    default_args={
        "owner": "binlake",
        "retries": 2,
        "retry_delay": dt.timedelta(minutes=1),
        "retry_exponential_backoff": True,
        "max_retry_delay": dt.timedelta(minutes=30),
        "execution_timeout": dt.timedelta(hours=12),
        "on_failure_callback": on_failure,
    },
    params={
        "source_uri": Param(
            None,
            type=["null", "string"],
            pattern=r"^mysql://",
            title="Source URI",
            description="mysql://user@host:port/?server_id=N (required; no password in it).",
        ),
        "name": Param(
            None,
            type=["null", "string"],
            pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$",
            title="Source name",
            description="Landing sub-folder (default: the URI's name= or host-port).",
        ),
        "landing": Param(settings.landing, type="string", minLength=1, title="Landing root"),
        "lake": Param(settings.lake, type="string", minLength=1, title="Lake root"),
        "include": Param(
            [],
            type="array",
            items=TABLE_PATTERN,
            title="Include tables",
            description="db.table patterns (* and ? allowed); empty: every base table.",
        ),
        "exclude": Param([], type="array", items=TABLE_PATTERN, title="Exclude tables"),
        "password_env": Param(
            "BINLAKE_MYSQL_PASSWORD",
            type="string",
            pattern=r"^(BINLAKE|MYSQL)_[A-Za-z0-9_]{1,120}$",
            title="Password variable",
            description="Environment variable of the Airflow worker holding the password "
            "(its name starts with BINLAKE_ or MYSQL_).",
        ),
        "chunk_rows": Param(100_000, type="integer", minimum=1, title="Rows per chunk"),
    },
) as dag:

    @task(max_active_tis_per_dag=1)
    def snapshot(params: dict | None = None) -> dict:
        from airflow.sdk.exceptions import AirflowFailException

        from binlake.errors import BinlakeError
        from binlake.snapshot.tasks import snapshot_task

        if not params["source_uri"]:
            raise AirflowFailException("set the source_uri param (mysql://user@host:port/?server_id=N)")
        try:
            return snapshot_task(
                params["source_uri"],
                params["landing"],
                name=params["name"],
                include=params["include"],
                exclude=params["exclude"],
                password_env=params["password_env"],
                chunk_rows=params["chunk_rows"],
            )
        except BinlakeError as exc:
            if getattr(exc, "retryable", False):
                raise
            raise AirflowFailException(str(exc)) from exc  # settings or grants to fix: a retry will not help

    @task(max_active_tis_per_dag=1)
    def load(taken: dict, params: dict | None = None) -> dict:
        from binlake.snapshot.tasks import load_task

        return load_task(params["landing"], params["lake"], taken["source"])

    load(snapshot())
