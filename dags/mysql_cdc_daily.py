"""
### mysql_cdc_daily: MySQL/MariaDB binlogs into Delta tables, one data interval (a UTC day) per run

For each configured source (one task group each):

1. **fetch**: when the source has a server connection (`binlake_source_<source>`), copy its new binlogs into
   the landing folder (`binlake fetch --until-now`); a cluster source (`BINLAKE_MEMBERS`) is fetched from its
   members, each into its own sub-folder, following a failover to the member that answers; without a
   connection the landing folder is used as it is.
2. **plan**: the arguments of the source's Spark jobs for the interval.
3. **snapshot_sdi** -> **ingest_binlogs** -> **apply_changes**: Spark jobs (`spark_jobs/`) run by `spark-submit`
   against the `spark_default` connection (`local[*]` locally; point it at a Spark cluster to run there).
   Ingest takes every landed transaction; apply applies, in binlog order, every one *committed* before
   `data_interval_end` (one rule, by commit time, also inside a file spanning midnight). With the
   `full_refresh` param, apply first empties the source's silver tables and checkpoints and rebuilds them
   from bronze.

Then, once for the run: **validate** (the data-quality suites over the whole lake, filed under the run's
day) and **report** (`<lake>/reports/runs/<day>.json`). Each source's apply updates the asset `binlake_silver`
and validate the asset `binlake_dq_results`; both trigger `dq_report` (and any DAG of yours scheduled on them).
Last, **freshness** fails when changes that landed before the data interval end are applied more than
`BINLAKE_MAX_LAG_HOURS` (default 24) late; a quiet source (nothing newer landed) is fresh. Every failed task calls
`binlake.orchestration.alerts.on_failure` (an ERROR log line, `<lake>/_orchestration/alerts.jsonl`, and a POST
to `BINLAKE_ALERT_WEBHOOK` when set), besides Airflow's own e-mail/UI channels.

Every step is idempotent: a rerun or a backfill of a day ingests nothing new (files are identified by content) and
applies nothing already applied (MERGE guarded by the binlog position), so the tables end as a normal run leaves
them; a run whose day a later run already covered succeeds as a no-op. The jobs of one source never run at once
(a lock per source in the lake, across scheduled, backfill and manual runs). Start a backfill from the DAG's page
(Trigger -> Backfill: From/To are the *first days* of the intervals, a run per day, each loading that day) or with
`airflow backfill create`; add
`{"full_refresh": true}` as its configuration to rebuild silver from bronze (e.g. after silver was damaged).

Settings (landing, lake, sources): `binlake.orchestration.config`, overridable by `BINLAKE_LANDING`,
`BINLAKE_LAKE`, `BINLAKE_SOURCES`.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import DAG, Asset, CronDataIntervalTimetable, Param, TaskGroup, chain, task

from binlake.orchestration.alerts import on_failure, on_success
from binlake.orchestration.config import DQ_RESULTS_ASSET, SILVER_ASSET, load_settings, source_group_id

settings = load_settings()
WRITES_LAKE = {"max_active_tis_per_dag": 1}  # one writer per table at a time, across runs and backfills

with DAG(
    dag_id=Path(__file__).stem,
    doc_md=__doc__,
    schedule=CronDataIntervalTimetable("0 0 * * *", timezone="UTC"),
    start_date=dt.datetime.combine(settings.start_date, dt.time(), dt.timezone.utc),
    catchup=False,
    max_active_runs=1,
    tags=["binlake", "cdc", "spark", "delta"],
    default_args={
        "owner": "binlake",
        "retries": 2,
        "retry_delay": dt.timedelta(minutes=1),
        "retry_exponential_backoff": True,
        "max_retry_delay": dt.timedelta(minutes=30),
        "execution_timeout": dt.timedelta(hours=4),
        "on_failure_callback": on_failure,
        "on_success_callback": on_success,
    },
    params={
        "sources": Param(
            list(settings.sources),
            type="array",
            items={"type": "string", "enum": list(settings.sources)},
            title="Sources",
            description="Sources to load in this run (default: all configured).",
        ),
        "tables": Param(
            [],
            type="array",
            items={"type": "string", "pattern": r"^[^.\s]+\.[^.\s]+$"},
            title="Table filter",
            description="Only these db.table patterns (* and ? allowed) are ingested; empty: all. "
            "Changes of other tables in the files ingested by this run are not kept.",
        ),
        "full_refresh": Param(
            False, type="boolean", title="Full refresh", description="Rebuild each source's silver tables from bronze."
        ),
    },
) as dag:
    dq_results = Asset(name=DQ_RESULTS_ASSET, uri=settings.dq_results_uri)
    silver = Asset(name=SILVER_ASSET, uri=settings.silver_uri)

    @task
    def fetch(source: str, params: dict | None = None) -> dict:
        from airflow.sdk.exceptions import AirflowSkipException

        from binlake.orchestration.tasks import fetch_source

        if source not in params["sources"]:
            raise AirflowSkipException(f"source {source} is not in this run's sources param")
        return fetch_source(settings, source)

    @task(multiple_outputs=True)
    def plan(
        source: str,
        params: dict | None = None,
        data_interval_start: dt.datetime | None = None,
        data_interval_end: dt.datetime | None = None,
    ) -> dict:
        from binlake.orchestration.tasks import plan_source

        return plan_source(
            settings, source, data_interval_start, data_interval_end, params["tables"], params["full_refresh"]
        )

    @task(multiple_outputs=True)
    def plan_validation(data_interval_start: dt.datetime | None = None) -> dict:
        from binlake.orchestration.tasks import plan_validate

        return plan_validate(settings, data_interval_start)

    def spark_job(job: str, source: str | None, planned, **kwargs) -> SparkSubmitOperator:
        # the job's argv and its driver JVM's settings (class archive; C1 only for a short run) come from the plan
        return SparkSubmitOperator(
            task_id=job,
            application=settings.spark_job(job),
            application_args=planned[job],
            conn_id=settings.spark_conn_id,
            conf=planned["spark_conf"],
            env_vars=planned["spark_env"],
            properties_file=planned["spark_properties"],
            name=f"binlake-{job}" + (f"-{source}" if source else ""),
            **kwargs,
        )

    applied = []
    for source in settings.sources:
        with TaskGroup(group_id=source_group_id(source)):
            planned = plan(source)
            chain(fetch(source), planned)
            chain(
                planned,
                spark_job("snapshot_sdi", source, planned, **WRITES_LAKE),
                spark_job("ingest_binlogs", source, planned, **WRITES_LAKE),
                apply := spark_job("apply_changes", source, planned, outlets=[silver], **WRITES_LAKE),
            )
            applied.append(apply)

    # once per run, after every source (none_failed_min_one_success: sources skipped by the param are fine);
    # a failed error-level expectation is not transient: no retry
    validate = spark_job(
        "validate",
        None,
        plan_validation(),
        retries=0,
        outlets=[dq_results],
        trigger_rule="none_failed_min_one_success",
        **WRITES_LAKE,
    )

    @task(trigger_rule="none_failed_min_one_success")
    def report(ti=None, run_id: str | None = None, data_interval_start: dt.datetime | None = None) -> str:
        from binlake.orchestration.tasks import run_key, write_run_summary

        intervals = [ti.xcom_pull(task_ids=f"{source_group_id(s)}.plan", key="interval") for s in settings.sources]
        return write_run_summary(settings, run_key(data_interval_start), run_id, intervals)

    @task(retries=0)
    def freshness(
        data_interval_start: dt.datetime | None = None, data_interval_end: dt.datetime | None = None
    ) -> list[dict]:
        from binlake.orchestration.tasks import run_freshness

        return run_freshness(settings, data_interval_start, data_interval_end)

    chain(applied, validate, report(), freshness())
