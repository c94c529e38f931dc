"""Freshness checks and failure alerts for the DAGs.

* :func:`source_freshness`: per source, the commit time of the last applied change (the newest bronze row
  change or DDL up to the source's checkpoint) and the lag behind a reference time. Read with delta-rs and
  Arrow (bronze streamed in record batches, only the ``commit_ts`` column of the matching rows): no Spark in the
  Airflow worker.
* :func:`check_freshness`: the ``freshness`` task of ``mysql_cdc_daily``: raises :class:`SourceLagging` (the
  task fails, so Airflow alerts through its usual channels: the failure callback below, e-mail on failure,
  the UI) when a source's lag behind the run's data interval end exceeds ``BINLAKE_MAX_LAG_HOURS``.
* :func:`on_failure`: the DAGs' ``on_failure_callback``: one ``ERROR`` log line naming the DAG, task, run
  and the exception, a JSON line appended to ``<lake>/_orchestration/alerts.jsonl``, and a POST of the same
  JSON to ``BINLAKE_ALERT_WEBHOOK`` when it is set (a chat or paging webhook).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import urllib.request
from typing import Any, Iterable, Mapping, Optional

from binlake.orchestration.errors import OrchestrationError

log = logging.getLogger("binlake.alerts")

COMMITTED_OPS = ("insert", "update", "delete", "ddl")
ALERTS_FILE = "alerts.jsonl"


class SourceLagging(OrchestrationError):
    """A source's last applied commit is older than the freshness threshold allows (or none is applied)."""


def _utc(us: Optional[int]) -> Optional[dt.datetime]:
    return None if us is None else dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=us)


def last_commit_times(lake: str, sources: Iterable[str]) -> dict[str, Optional[dt.datetime]]:
    """source -> commit time of its last applied change (None: nothing applied yet)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
    from deltalake import DeltaTable

    from binlake.lake.layout import LakeLayout

    layout = LakeLayout(lake)
    out: dict[str, Optional[dt.datetime]] = {s: None for s in sources}
    if not DeltaTable.is_deltatable(layout.checkpoints) or not DeltaTable.is_deltatable(layout.bronze):
        return out
    ckpt = DeltaTable(layout.checkpoints).to_pyarrow_dataset().to_table(
        columns=["source", "_binlake_seq"], filter=ds.field("table_name").cast(pa.string()) == "*").to_pylist()
    seqs = {r["source"]: r["_binlake_seq"] for r in ckpt}
    bronze = DeltaTable(layout.bronze).to_pyarrow_dataset()
    for source in out:
        if source not in seqs:
            continue
        # delta-rs may hand strings over as string_view: compare them as plain strings
        where = ((ds.field("source").cast(pa.string()) == source) & (ds.field("_binlake_seq") <= seqs[source])
                 & ds.field("op").cast(pa.string()).isin(pa.array(COMMITTED_OPS)))
        newest = None
        for batch in bronze.to_batches(columns=["commit_ts"], filter=where):
            if batch.num_rows:
                m = pc.max(batch.column(0)).as_py()
                newest = m if newest is None or (m is not None and m > newest) else newest
        out[source] = _utc(newest)
    return out


def source_freshness(lake: str, sources: Iterable[str], reference: dt.datetime) -> list[dict[str, Any]]:
    """Per source: ``last_commit_time`` and ``lag_seconds`` behind ``reference`` (None when nothing applied)."""
    out = []
    for source, last in last_commit_times(lake, sources).items():
        out.append({"source": source, "last_commit_time": None if last is None else last.isoformat(),
                    "lag_seconds": None if last is None else (reference - last).total_seconds()})
    return out


def check_freshness(lake: str, sources: Iterable[str], reference: dt.datetime, max_lag_hours: float) -> list[dict]:
    """:func:`source_freshness`, raising :class:`SourceLagging` when a source lags more than
    ``max_lag_hours`` behind ``reference`` (a run's data interval end) or has nothing applied."""
    rows = source_freshness(lake, sources, reference)
    for r in rows:
        log.info("%s: last applied commit %s, lag %s s behind %s", r["source"], r["last_commit_time"],
                 r["lag_seconds"], reference.isoformat())
    late = [r for r in rows if r["lag_seconds"] is None or r["lag_seconds"] > max_lag_hours * 3600]
    if late:
        what = "; ".join(f"{r['source']}: " + ("nothing applied" if r["lag_seconds"] is None else
                                               f"last applied commit {r['last_commit_time']}, "
                                               f"{r['lag_seconds'] / 3600:.1f} h behind")
                         for r in late)
        raise SourceLagging(f"freshness: {what} (threshold {max_lag_hours:g} h behind {reference.isoformat()}); "
                            f"check the source's fetch and apply tasks, or raise BINLAKE_MAX_LAG_HOURS for a "
                            f"source that is quiet")
    return rows


def alert_record(context: Mapping[str, Any]) -> dict[str, Any]:
    """What an alert says, from an Airflow callback context."""
    ti = context.get("task_instance") or context.get("ti")
    dag_run = context.get("dag_run")
    exc = context.get("exception")
    return {"at": dt.datetime.now(dt.timezone.utc).isoformat(),
            "dag_id": getattr(ti, "dag_id", None) or getattr(dag_run, "dag_id", None),
            "task_id": getattr(ti, "task_id", None), "run_id": getattr(dag_run, "run_id", None)
            or getattr(ti, "run_id", None), "try_number": getattr(ti, "try_number", None),
            "error": None if exc is None else (str(exc).splitlines() or [type(exc).__name__])[0][:500],
            "log_url": getattr(ti, "log_url", None)}


def on_failure(context: Mapping[str, Any]) -> None:
    """The DAGs' ``on_failure_callback`` (see the module docstring). Never raises: an alert that can not be
    delivered is logged."""
    from binlake.orchestration.config import load_settings

    record = alert_record(context)
    log.error("binlake alert: %s.%s failed in run %s: %s", record["dag_id"], record["task_id"], record["run_id"],
              record["error"])
    settings = load_settings()
    try:
        os.makedirs(settings.orchestration_state, exist_ok=True)
        with open(os.path.join(settings.orchestration_state, ALERTS_FILE), "a", encoding="utf-8") as f:
            f.write(json.dumps(record, sort_keys=True) + "\n")
    except OSError as exc:
        log.error("binlake alert: could not append to %s: %s", settings.orchestration_state, exc)
    if settings.alert_webhook:
        request = urllib.request.Request(settings.alert_webhook, data=json.dumps(record).encode(),
                                         headers={"Content-Type": "application/json"}, method="POST")
        try:
            urllib.request.urlopen(request, timeout=10).close()
        except OSError as exc:
            log.error("binlake alert: webhook %s did not take the alert: %s", settings.alert_webhook, exc)
