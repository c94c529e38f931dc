"""What the DAGs' tasks do, as plain functions of settings and the run's data interval (no Airflow imports here
except where a connection is looked up when the task runs: :func:`fetch_source`, :func:`spark_launch`).

* :func:`plan_source`: the argument lists of a source's Spark jobs (``spark_jobs/<job>.py``, each a thin
  ``main(argv)``) for one data interval. What a run applies is decided by one rule, the apply job's commit-time
  cut: every transaction committed before the interval's end (ingest takes every landed transaction).
* :func:`spark_launch`: how those jobs start their driver JVM (its class archive; C1 only for a short run).
* :func:`plan_validate`: the one validation of a DAG run, after all its sources.
* :func:`fetch_source`: ``binlake fetch --until-now`` for a source that has a server connection.
* :func:`write_run_summary`: one JSON file per DAG run listing what each source did.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from binlake.orchestration.config import SPARK_CONF, Settings, source_conn_id
from binlake.orchestration.errors import FetchFailed

log = logging.getLogger(__name__)

FETCH_PASSWORD_ENV = "BINLAKE_MYSQL_PASSWORD"


def run_key(start: dt.datetime) -> str:
    """The run id every job of one interval files its rows under: the interval's start date (``2024-03-01``),
    so a rerun or a backfill of the day files under the same id as the scheduled run did."""
    return start.astimezone(dt.timezone.utc).strftime("%Y-%m-%d")


def job_args(
    settings: Settings,
    source: str,
    start: dt.datetime,
    end: dt.datetime,
    tables: Sequence[str] = (),
    full_refresh: bool = False,
) -> dict[str, list[str]]:
    """``argv`` of each Spark job of one source and interval (the ``main(argv)`` contract of ``spark_jobs/``)."""
    run_id = run_key(start)
    cutoff = end.astimezone(dt.timezone.utc).isoformat()
    common = ["--lake", settings.lake, "--source", source, "--run-id", run_id]
    table_args = [a for pattern in tables for a in ("--include", pattern)]
    return {
        "snapshot_sdi": ["--lake", settings.lake, "--sdi", settings.sdi, "--seen-at", cutoff],
        "ingest_binlogs": ["--landing", settings.landing, *common, "--end", cutoff, *table_args],
        "apply_changes": [*common, "--end", cutoff] + (["--full-refresh"] if full_refresh else []),
    }


def validate_args(settings: Settings, start: dt.datetime) -> list[str]:
    """``argv`` of the run's one validation (all sources, filed under the run key)."""
    return ["--lake", settings.lake, "--run-id", run_key(start)]


def plan_validate(settings: Settings, start: dt.datetime) -> dict[str, Any]:
    """The validation's ``argv`` (key ``validate``, as the job) and how its driver starts (:func:`spark_launch`;
    it reads all of silver: never a short run), pushed as one XCom per key."""
    return {"validate": validate_args(settings, start), **spark_launch(settings, short_run=False)}


def plan_source(
    settings: Settings,
    source: str,
    start: dt.datetime,
    end: dt.datetime,
    tables: Sequence[str] = (),
    full_refresh: bool = False,
) -> dict[str, Any]:
    """The source's jobs' arguments for ``[start, end)``: a flat dict (``interval``, ``run_id`` and one ``argv``
    per job name), pushed as one XCom per key."""
    interval = {
        "source": source,
        "start": start.isoformat(),
        "end": end.isoformat(),
        "landing": settings.source_landing(source),
        "full_refresh": full_refresh,
    }
    log.info(
        "%s: apply every transaction committed before %s (landing %s)%s",
        source,
        end.isoformat(),
        interval["landing"],
        "; full refresh: silver rebuilt from bronze" if full_refresh else "",
    )
    return {
        "interval": interval,
        "run_id": run_key(start),
        **job_args(settings, source, start, end, tables, full_refresh),
        **spark_launch(settings, not full_refresh and _short_run(settings, source)),
    }


def _short_run(settings: Settings, source: str) -> bool:
    """Whether the source's jobs have little to do (:func:`binlake.lake.idle.is_short_run`: few new binlog bytes
    and nothing else pending), told from the lake with delta-rs before any Spark starts."""
    from binlake.lake.idle import is_short_run, look_ahead
    from binlake.lake.options import RunOptions

    return is_short_run([look_ahead(settings.layout, settings.source_landing(source), RunOptions(source), "spark")])


def spark_launch(settings: Settings, short_run: bool) -> dict[str, Any]:
    """How a source's spark-submits start their driver JVM, as the ``spark_conf``, ``spark_env`` and
    ``spark_properties`` of their operators: as ``binlake run`` starts its own (:func:`binlake.lake.session.
    build_session`), mapping the checkout's class archive (its empty ``SPARK_CONF_DIR``, the venv's
    ``spark-defaults.conf`` as ``--properties-file``) with the throughput collector, compiling with C1 only for a
    short run and else with C2 for the hottest code only (:data:`binlake.lake.session.LONG_RUN_JIT`), Delta's jars
    on its class path (:func:`binlake.lake.session.driver_jars`). These only serve a driver started on this
    machine: the connection's master is ``local`` or a standalone cluster, in client mode (and the connection can
    be read)."""
    from binlake.lake import class_archive
    from binlake.lake.session import SHORT_RUN_JIT, driver_jars, driver_java_options, project_delta_jars

    conf = dict(SPARK_CONF)
    master = _driver_master(settings)
    archive = class_archive.launch() if master else None
    jars = project_delta_jars() if master else []
    if master and jars:
        conf.update(driver_jars(jars, master.startswith("local"), {}))
    options = driver_java_options(archive, short_run) if master else SHORT_RUN_JIT if short_run else ""
    if options:
        conf["spark.driver.defaultJavaOptions"] = options
    return {
        "spark_conf": conf,
        "spark_env": archive.env if archive else None,
        "spark_properties": archive.properties_file if archive else None,
    }


def _driver_master(settings: Settings) -> str | None:
    """The connection's master when spark-submit on it starts the driver JVM on this machine: a ``local`` master,
    or a standalone cluster's (``spark://``) in client mode; else None."""
    from airflow.sdk import BaseHook

    try:
        conn = BaseHook.get_connection(settings.spark_conn_id)
    except Exception:  # noqa: BLE001 - spark-submit will say what is wrong with the connection
        return None
    master = conn.host or ""
    here = master.startswith(("local", "spark://")) and conn.extra_dejson.get("deploy-mode", "client") != "cluster"
    return master if here else None


def run_freshness(settings: Settings, start: dt.datetime, end: dt.datetime) -> list[dict]:
    """The ``freshness`` task: :func:`binlake.orchestration.alerts.check_freshness` as of the interval's end,
    its result also written into the run's summary page (``runs/<run key>/summary.html``), so a run that failed
    freshness does not read PASSED there; a lagging source still fails the task."""
    from binlake.lake.layout import LakeLayout
    from binlake.orchestration.alerts import SourceLagging, check_freshness, source_freshness
    from binlake.quality.report import record_freshness

    page = os.path.join(LakeLayout(settings.lake).reports, "runs", run_key(start), "summary.html")
    try:
        rows = check_freshness(settings.lake, settings.sources, end, settings.max_lag_hours)
    except SourceLagging as exc:
        record_freshness(page, source_freshness(settings.lake, settings.sources, end), str(exc))
        raise
    record_freshness(page, rows, None)
    return rows


def fetch_source(settings: Settings, source: str) -> dict[str, Any]:
    """Fetch a source's new binlogs from its server when the connection ``binlake_source_<source>`` exists
    (``mysql://user:password@host:port/?server_id=N``; the password goes to ``binlake fetch`` through the
    environment, never on its command line). Without a connection the landing folder is used as it is."""
    from airflow.sdk import BaseHook
    from airflow.sdk.exceptions import AirflowNotFoundException

    conn_id = source_conn_id(source)
    try:
        conn = BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        log.info(
            "%s: no connection %s; using the files already in %s", source, conn_id, settings.source_landing(source)
        )
        return {"fetched": False, "connection": conn_id}
    members = settings.source_members(source)
    uris = (
        [fetch_uri(host, port, conn.login, conn.extra_dejson, member_name(host, port)) for host, port in members]
        if members
        else [fetch_uri(conn.host, conn.port, conn.login, conn.extra_dejson, source)]
    )
    binlake = shutil.which("binlake") or str(Path(sys.executable).with_name("binlake"))
    argv = [
        binlake,
        "fetch",
        *(a for uri in uris for a in ("--source", uri)),
        "--landing",
        settings.landing,
        "--name",
        source,
        "--until-now",
        "--password-env",
        FETCH_PASSWORD_ENV,
    ]
    env = {**os.environ, FETCH_PASSWORD_ENV: conn.password or ""}
    log.info("%s: %s", source, " ".join(argv))
    done = subprocess.run(argv, env=env, check=False)
    if done.returncode != 0:
        raise FetchFailed(
            f"binlake fetch for source {source} (connection {conn_id}) exited with "
            f"{done.returncode}; see the task log above, fix the connection or the server, and "
            f"clear the task to retry"
        )
    return {"fetched": True, "connection": conn_id}


def member_name(host: str, port: int) -> str:
    """A cluster member's landing folder: ``<host>-<port>`` (as ``binlake fetch`` names a server)."""
    return f"{re.sub(r'[^A-Za-z0-9._-]', '-', host).strip('-._')}-{port}"


def fetch_uri(
    host: Optional[str], port: Optional[int], login: Optional[str], extra: Mapping[str, Any], source: str
) -> str:
    """The ``mysql://`` URI ``binlake fetch`` takes, from a connection's fields (extra: ``server_id`` and any
    other query parameter of the URI, e.g. ``heartbeat``, ``ssl``)."""
    from urllib.parse import quote, urlencode

    query = {
        "server_id": extra.get("server_id", 4242),
        "name": source,
        **{k: v for k, v in extra.items() if k not in ("server_id", "name")},
    }
    user = f"{quote(login, safe='')}@" if login else ""
    return f"mysql://{user}{host or '127.0.0.1'}:{port or 3306}/?{urlencode(query)}"


def write_run_summary(settings: Settings, key: str, dag_run_id: str, intervals: Sequence[Optional[dict]]) -> str:
    """``<lake>/reports/runs/<run key>.json``: each loaded source's interval and the quality report's path
    (``intervals``: the plan step's ``interval`` of each source, None for a source not loaded)."""
    out = Path(settings.lake, "reports", "runs", f"{key}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    summary = {
        "run": key,
        "dag_run_id": dag_run_id,
        "quality_report": os.path.join(settings.layout.reports, "runs", key, "summary.html"),
        "sources": [i for i in intervals if i],
    }
    out.write_text(json.dumps(summary, indent=1, sort_keys=True), encoding="utf-8")
    return str(out)
