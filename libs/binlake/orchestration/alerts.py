"""Freshness checks and failure alerts for the DAGs.

* :func:`source_freshness`: per source, the commit time of the last applied change (the newest bronze row
  change or DDL up to the source's checkpoint), of the newest landed one (the newest in bronze) and the lag
  behind what it should hold at a reference time. Read with delta-rs and Arrow (bronze streamed in record
  batches, two columns of the matching rows): no Spark in the Airflow worker.
* :func:`check_freshness`: the ``freshness`` task of ``mysql_cdc_daily``: raises :class:`SourceLagging` (the
  task fails, so Airflow alerts through its usual channels: the failure callback below, e-mail on failure,
  the UI) when changes that landed before the run's data interval end are not applied within
  ``BINLAKE_MAX_LAG_HOURS``. A quiet source (nothing newer landed) is not an outage.
* :func:`on_failure`: the DAGs' ``on_failure_callback``: one ``ERROR`` log line naming the DAG, task, run
  and the exception, a JSON line appended to ``<lake>/_orchestration/alerts.jsonl``, and a POST of the same
  JSON to ``BINLAKE_ALERT_WEBHOOK`` when it is set (a chat or paging webhook). A failed task of
  ``mysql_cdc_daily`` also rebuilds the data-quality history page, whose open failures list it.
* :func:`on_success` (``mysql_cdc_daily``'s ``on_success_callback``) and :func:`on_failure` record each
  task's outcome in ``<lake>/_orchestration/task_outcomes.jsonl``: a failure stays open in the history page
  until the same task succeeds in a later run.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import urllib.request
from typing import Any, Iterable, Mapping, Optional

from binlake.orchestration.errors import OrchestrationError
from binlake.vocabulary import SEQ_COL, SOURCE_ROW

log = logging.getLogger("binlake.alerts")

COMMITTED_OPS = ("insert", "update", "delete", "ddl")
ALERTS_FILE = "alerts.jsonl"
OUTCOMES_FILE = "task_outcomes.jsonl"
LOAD_DAG = "mysql_cdc_daily"


class SourceLagging(OrchestrationError):
    """A source's last applied commit is older than the freshness threshold allows (or none is applied)."""


def _utc(us: Optional[int]) -> Optional[dt.datetime]:
    return None if us is None else dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=us)


def commit_times(lake: str, sources: Iterable[str]) -> dict[str, tuple[Optional[dt.datetime], Optional[dt.datetime]]]:
    """source -> (commit time of its last applied change, commit time of its newest change in bronze); None:
    nothing applied / nothing ingested. Bronze holds every landed transaction a run's ingest found (ingest takes
    every landed file), so the second is the newest commit landed as of the run."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
    from deltalake import DeltaTable

    from binlake.lake.layout import LakeLayout

    layout = LakeLayout(lake)
    out: dict[str, tuple[Optional[dt.datetime], Optional[dt.datetime]]] = {s: (None, None) for s in sources}
    if not DeltaTable.is_deltatable(layout.bronze):
        return out
    seqs: dict[str, int] = {}
    if DeltaTable.is_deltatable(layout.checkpoints):
        ckpt = (
            DeltaTable(layout.checkpoints)
            .to_pyarrow_dataset()
            .to_table(columns=["source", SEQ_COL], filter=ds.field("table_name").cast(pa.string()) == SOURCE_ROW)
            .to_pylist()
        )
        seqs = {r["source"]: r[SEQ_COL] for r in ckpt}
    bronze = DeltaTable(layout.bronze).to_pyarrow_dataset()
    for source in out:
        # delta-rs may hand strings over as string_view: compare them as plain strings
        where = (ds.field("source").cast(pa.string()) == source) & ds.field("op").cast(pa.string()).isin(
            pa.array(COMMITTED_OPS)
        )
        applied = landed = None
        for batch in bronze.to_batches(columns=["commit_ts", SEQ_COL], filter=where):
            if not batch.num_rows:
                continue
            ts = batch.column(0)
            m = pc.max(ts).as_py()
            landed = m if landed is None or (m is not None and m > landed) else landed
            if source in seqs:
                m = pc.max(pc.filter(ts, pc.less_equal(batch.column(1), seqs[source]))).as_py()
                applied = m if applied is None or (m is not None and m > applied) else applied
        out[source] = (_utc(applied), _utc(landed))
    return out


def last_commit_times(lake: str, sources: Iterable[str]) -> dict[str, Optional[dt.datetime]]:
    """source -> commit time of its last applied change (None: nothing applied yet)."""
    return {s: applied for s, (applied, _) in commit_times(lake, sources).items()}


def source_freshness(lake: str, sources: Iterable[str], reference: dt.datetime) -> list[dict[str, Any]]:
    """Per source: ``last_commit_time`` (last applied), ``last_landed_commit_time`` (newest in bronze), the
    ``due`` time (``reference`` or, for a quiet source, its newest landed commit: the earlier), ``lag_seconds``
    of the last applied commit behind ``due`` (None when nothing is applied) and ``quiet`` (nothing landed that
    was committed after the last applied change and before ``reference``)."""
    out = []
    for source, (last, landed) in commit_times(lake, sources).items():
        due = reference if landed is None or landed > reference else landed
        quiet = last is not None and landed is not None and landed <= last and last < reference
        out.append(
            {
                "source": source,
                "last_commit_time": None if last is None else last.isoformat(),
                "last_landed_commit_time": None if landed is None else landed.isoformat(),
                "due": due.isoformat(),
                "quiet": quiet,
                "lag_seconds": None if last is None else max(0.0, (due - last).total_seconds()),
            }
        )
    return out


def check_freshness(lake: str, sources: Iterable[str], reference: dt.datetime, max_lag_hours: float) -> list[dict]:
    """:func:`source_freshness`, raising :class:`SourceLagging` when a source has nothing applied, or when its
    last applied commit lags more than ``max_lag_hours`` behind what it should hold at ``reference`` (a run's
    data interval end, not the wall clock: a backfill of an old day is judged against that day's end).

    What a source should hold at ``reference`` is every change committed before it that has landed. A quiet
    source (no change landed since its last applied one) is fresh up to its newest landed commit: its lag is 0
    however long ago that was; a source whose landed changes are not applied lags."""
    rows = source_freshness(lake, sources, reference)
    for r in rows:
        log.info(
            "%s: last applied commit %s, newest landed commit %s, lag %s s behind %s%s",
            r["source"],
            r["last_commit_time"],
            r["last_landed_commit_time"],
            r["lag_seconds"],
            r["due"],
            " (quiet: nothing newer landed)" if r["quiet"] else "",
        )
    late = [r for r in rows if r["lag_seconds"] is None or r["lag_seconds"] > max_lag_hours * 3600]
    if late:
        what = "; ".join(
            f"{r['source']}: "
            + (
                "nothing applied"
                if r["lag_seconds"] is None
                else f"last applied commit {r['last_commit_time']}, {r['lag_seconds'] / 3600:.1f} h behind {r['due']}"
            )
            for r in late
        )
        raise SourceLagging(
            f"freshness: {what} (threshold {max_lag_hours:g} h; changes landed before "
            f"{reference.isoformat()} are not applied); check the source's ingest and apply tasks"
        )
    return rows


def alert_record(context: Mapping[str, Any]) -> dict[str, Any]:
    """What an alert says, from an Airflow callback context."""
    ti = context.get("task_instance") or context.get("ti")
    dag_run = context.get("dag_run")
    exc = context.get("exception")
    return {
        "at": dt.datetime.now(dt.timezone.utc).isoformat(),
        "dag_id": getattr(ti, "dag_id", None) or getattr(dag_run, "dag_id", None),
        "task_id": getattr(ti, "task_id", None),
        "run_id": getattr(dag_run, "run_id", None) or getattr(ti, "run_id", None),
        "try_number": getattr(ti, "try_number", None),
        "error": None if exc is None else (str(exc).splitlines() or [type(exc).__name__])[0][:500],
        "log_url": getattr(ti, "log_url", None),
    }


def on_failure(context: Mapping[str, Any]) -> None:
    """The DAGs' ``on_failure_callback`` (see the module docstring). Never raises: an alert that can not be
    delivered is logged."""
    from binlake.orchestration.config import load_settings

    record = alert_record(context)
    log.error(
        "binlake alert: %s.%s failed in run %s: %s",
        record["dag_id"],
        record["task_id"],
        record["run_id"],
        record["error"],
    )
    settings = load_settings()
    try:
        os.makedirs(settings.orchestration_state, exist_ok=True)
        with open(os.path.join(settings.orchestration_state, ALERTS_FILE), "a", encoding="utf-8") as f:
            f.write(json.dumps(record, sort_keys=True) + "\n")
    except OSError as exc:
        log.error("binlake alert: could not append to %s: %s", settings.orchestration_state, exc)
    if record["dag_id"] == LOAD_DAG:
        _record_outcome(settings.orchestration_state, {**record, "state": "failed"})
        try:  # the history page lists the failure now, not only after the next successful load
            from binlake.orchestration.dq_history import build_history

            build_history(settings.lake, settings.dq_results, settings.reports)
        except Exception as exc:  # noqa: BLE001  (a report that can not be built must not hide the alert)
            log.error("binlake alert: could not rebuild the data-quality history: %s", exc)
    if settings.alert_webhook:
        request = urllib.request.Request(
            settings.alert_webhook,
            data=json.dumps(record).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            urllib.request.urlopen(request, timeout=10).close()
        except OSError as exc:
            log.error("binlake alert: webhook %s did not take the alert: %s", settings.alert_webhook, exc)


def _record_outcome(folder: str, record: Mapping[str, Any]) -> None:
    keep = ("at", "dag_id", "task_id", "run_id", "state", "error")
    try:
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, OUTCOMES_FILE), "a", encoding="utf-8") as f:
            f.write(json.dumps({k: record.get(k) for k in keep}, sort_keys=True) + "\n")
    except OSError as exc:
        log.error("binlake: could not append to %s: %s", os.path.join(folder, OUTCOMES_FILE), exc)


def on_success(context: Mapping[str, Any]) -> None:
    """``mysql_cdc_daily``'s ``on_success_callback``: the task's success in ``task_outcomes.jsonl`` (it closes
    an open failure of the same task). Never raises."""
    from binlake.orchestration.config import load_settings

    _record_outcome(load_settings().orchestration_state, {**alert_record(context), "state": "success"})


def read_outcomes(lake: str) -> list[dict[str, Any]]:
    """Every recorded task outcome of ``<lake>/_orchestration/task_outcomes.jsonl``, in the order written."""
    path = os.path.join(lake, "_orchestration", OUTCOMES_FILE)
    if not os.path.isfile(path):
        return []
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # a line cut short by a crash: the others still count
    return out


def open_task_failures(lake: str) -> list[dict[str, Any]]:
    """Tasks of ``mysql_cdc_daily`` (loads, validation, freshness) whose latest outcome is a failure: per task,
    the latest failure (run, error), the run it has failed since and in how many runs."""
    by_task: dict[str, list[dict[str, Any]]] = {}
    for r in read_outcomes(lake):
        if r.get("dag_id") == LOAD_DAG and r.get("task_id"):
            by_task.setdefault(r["task_id"], []).append(r)
    out = []
    for task_id, rows in by_task.items():
        failing: list[dict] = []
        for r in reversed(rows):
            if r.get("state") != "failed":
                break
            if r.get("run_id") not in {f.get("run_id") for f in failing}:
                failing.append(r)
        if failing:
            out.append(
                {
                    "task_id": task_id,
                    "run_id": failing[0].get("run_id"),
                    "at": failing[0].get("at"),
                    "error": failing[0].get("error"),
                    "since_run": failing[-1].get("run_id"),
                    "runs_failing": len(failing),
                }
            )
    return sorted(out, key=lambda f: f["task_id"])
