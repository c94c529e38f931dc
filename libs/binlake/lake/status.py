"""The lake's status, per source and table: what ``binlake status`` prints and the freshness check reads.

Per source: the commit time of the last applied change (the newest bronze row change or DDL of the source up
to its checkpoint), the lag now, the last recorded run (``meta.run_metrics``), landing files not ingested yet
(with a landing folder) and the rows it has in ``meta.quarantine``. Per table: the live rows of its silver
table (:func:`binlake.lake.silver.live_row_count`) and the commit time of its last applied change.
Everything is aggregated by Spark; the driver only sees one row per table.
"""

from __future__ import annotations

import datetime as dt
import os
from typing import TYPE_CHECKING, Any, Callable, Optional

from binlake.lake.errors import LakeError
from binlake.lake.metrics import SOURCE_ROW, applied_commits, read_metrics, source_checkpoints, utc

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from binlake.lake.delta import DeltaEngine
    from binlake.lake.layout import LakeLayout


class LakeNotFoundError(LakeError):
    """The folder given as a lake holds no lake (no bronze/, silver/ or meta/)."""


def iso(when: Optional[dt.datetime]) -> Optional[str]:
    """ISO 8601 in UTC with a ``Z`` (None stays None)."""
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return when.astimezone(dt.timezone.utc).isoformat().replace("+00:00", "Z")


def check_lake(lake: "LakeLayout") -> None:
    if not any(os.path.isdir(lake.path(d)) for d in ("bronze", "silver", "meta")):
        raise LakeNotFoundError(f"{lake.root} holds no lake (no bronze/, silver/ or meta/): pass the --lake "
                                f"folder given to `binlake run`")


def pending_files(spark: "SparkSession", engine: "DeltaEngine", lake: "LakeLayout", landing_dir: str,
                  source: str) -> tuple[int, Optional[str]]:
    """Landing files of ``source`` not (fully) ingested yet, and the gap that stops the source (or None)."""
    from binlake.lake.errors import BinlogGapError
    from binlake.lake.ingest import ingested_files, plan_ingest

    if not os.path.isdir(landing_dir):
        return 0, None
    done = ingested_files(spark, engine, lake.bronze, source)
    try:
        return len(plan_ingest(landing_dir, source, done, chunk_bytes=1 << 30).files), None
    except BinlogGapError as exc:
        return 0, str(exc)


def lake_status(spark: "SparkSession", engine: "DeltaEngine", lake: "LakeLayout", *,
                landing: Optional[str] = None, now: Optional[dt.datetime] = None,
                progress: Callable[[str], None] = lambda text: None) -> dict[str, Any]:
    """The status document (``binlake status --json``; see the module docstring)."""
    from binlake.lake.checkpoints import SOURCE_ROW as CKPT_SOURCE_ROW
    from binlake.lake.silver import live_row_count

    check_lake(lake)
    now = now or dt.datetime.now(dt.timezone.utc)
    checkpoints = source_checkpoints(engine, lake)
    sources = set(checkpoints)
    if landing and os.path.isdir(landing):
        sources |= {d.name for d in os.scandir(landing) if d.is_dir()}
    progress(f"{len(sources)} source(s): reading bronze up to each checkpoint")
    groups = [r.asDict() for r in applied_commits(spark, engine, lake, checkpoints).collect()]
    tables_of: dict[str, list[str]] = {}
    for r in engine.read_rows(None, lake.checkpoints, ("source", "table_name"), None):
        if r["table_name"] != CKPT_SOURCE_ROW:
            tables_of.setdefault(r["source"], []).append(r["table_name"])
    quarantine: dict[tuple, int] = {}
    if engine.exists(lake.quarantine):
        for r in engine.read(spark, lake.quarantine).groupBy("source", "db", "table_name").count().collect():
            quarantine[(r["source"], r["db"], r["table_name"])] = r["count"]
    runs: dict[str, dict] = {}
    for r in read_metrics(lake):
        if r["table_name"] == SOURCE_ROW and (r["source"] not in runs or r["run_end"] > runs[r["source"]]["run_end"]):
            runs[r["source"]] = r

    def lag(us: Optional[int]) -> Optional[float]:
        return None if us is None else round((now - utc(us)).total_seconds(), 3)

    out = []
    for source in sorted(sources):
        mine = [g for g in groups if g["source"] == source]
        last_us = max((g["last_commit_us"] for g in mine if g["last_commit_us"] is not None), default=None)
        tables = []
        for name in sorted(tables_of.get(source, [])):
            db, _, table = name.partition(".")
            change_us = max((g["last_change_us"] for g in mine if (g["db"], g["table_name"]) == (db, table)
                             and g["last_change_us"] is not None), default=None)
            path = lake.silver(db, table)
            live = None
            if engine.exists(path):
                progress(f"[{source}] {name}: counting live rows")
                df = engine.read(spark, path)
                live = df.agg(live_row_count(df.columns).alias("n")).first()["n"]
            tables.append({"table": name, "live_rows": live, "last_commit_time": iso(utc(change_us)),
                           "lag_seconds": lag(change_us), "quarantined_rows": quarantine.get((source, db, table), 0)})
        run = runs.get(source)
        entry: dict[str, Any] = {
            "source": source, "last_commit_time": iso(utc(last_us)), "lag_seconds": lag(last_us),
            "checkpoint_seq": checkpoints.get(source),
            "last_run": None if run is None else {
                "run_id": run["run_id"], "run_end": iso(run["run_end"]), "result": run["result"],
                "changes": run["changes"], "quarantined": run["quarantined"]},
            "quarantined_rows": sum(n for (s, _, _), n in quarantine.items() if s == source),
            "pending_files": None, "gap": None, "tables": tables}
        if landing:
            entry["pending_files"], entry["gap"] = pending_files(spark, engine, lake, os.path.join(landing, source),
                                                                 source)
            entry["refused_files"] = refused_files(os.path.join(landing, source))
        out.append(entry)
    return {"lake": lake.root, "generated_at": iso(now), "sources": out}


def refused_files(landing_dir: str) -> list[str]:
    """Landing entries with a binlog's name that ingest does not read (symbolic links, ...): ``"name: reason"``."""
    from binlake.pipeline.identity import landing_listing

    return landing_listing(landing_dir)[1] if os.path.isdir(landing_dir) else []


def duration(seconds: Optional[float]) -> str:
    """A lag for people: ``3d 4h``, ``2h 5m``, ``42s`` (``-`` when unknown)."""
    if seconds is None:
        return "-"
    s = int(seconds)
    sign, s = ("-", -s) if s < 0 else ("", s)
    d, rest = divmod(s, 86400)
    h, rest = divmod(rest, 3600)
    m, sec = divmod(rest, 60)
    if d:
        return f"{sign}{d}d {h}h"
    if h:
        return f"{sign}{h}h {m}m"
    return f"{sign}{m}m {sec}s" if m else f"{sign}{sec}s"


def format_status(doc: dict[str, Any]) -> str:
    """``binlake status``'s human output: one block per source, a table of its tables."""
    lines = [f"lake {doc['lake']} at {doc['generated_at']}"]
    if not doc["sources"]:
        lines.append("no source has been applied yet (no meta/checkpoints rows)")
    for s in doc["sources"]:
        run = s["last_run"]
        lines += ["", f"source {s['source']}",
                  f"  last applied commit  {s['last_commit_time'] or '-'}  (lag {duration(s['lag_seconds'])})",
                  "  last run             " + (f"{run['run_id']} ended {run['run_end']}: {run['result']}, "
                                               f"{run['changes']} change(s), {run['quarantined']} quarantined"
                                               if run else "- (no run recorded in meta/run_metrics)"),
                  f"  pending files        {'-' if s['pending_files'] is None else s['pending_files']}"
                  + ("" if s["pending_files"] is not None else " (pass --landing to count them)"),
                  f"  quarantined rows     {s['quarantined_rows']}"]
        if s.get("gap"):
            lines.append(f"  STOPPED              {s['gap']}")
        for refused in s.get("refused_files") or ():
            lines.append(f"  NOT READ             {refused}")
        rows = [("table", "live rows", "last applied commit", "lag", "quarantined")]
        rows += [(t["table"], "-" if t["live_rows"] is None else str(t["live_rows"]), t["last_commit_time"] or "-",
                  duration(t["lag_seconds"]), str(t["quarantined_rows"])) for t in s["tables"]]
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        for r in rows:
            lines.append("  " + "  ".join(c.rjust(w) if i in (1, 4) else c.ljust(w)
                                          for i, (c, w) in enumerate(zip(r, widths))).rstrip())
    return "\n".join(lines)
