"""``meta.run_metrics``: what each run did, per source (``table_name = '*'``) and per source table, appended
by every ``binlake run`` (``run.run_source`` calls :func:`record_run` last).

A row holds the run (id, engine, result, start and end time), the changes applied by operation, the files and
bytes ingested, the stage times, the checkpoint reached, the commit time of the last applied change and the lag
(run end minus that commit time), what was quarantined, and the run's events worth seeing on a plot: new
schema versions (SDI snapshots), undecodable stretches of a binlog (``decode_errors``, gaps in what was
applied), and a source stopped by a gap in its binlogs (``result = 'gap'``) or by another typed error
(``result = 'stopped'``: an unusable snapshot, a decode error with ``fail``, ...).

Counts come from the lake, not from the job's counters: the changes of a run are the source's bronze rows
between the checkpoint the previous recorded run reached and the checkpoint now (one Spark aggregation), so
they hold for every engine and for reruns. Only those rows are read (bronze's data skipping on
``_binlake_seq``), so recording costs a run's size, not the source's history; a table they do not touch keeps
the last change time of its newest recorded row. A run before any recorded one counts everything up to its
checkpoint. A run that changed nothing (a rerun) appends nothing, so reruns keep every table's version.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, Any, Optional

from binlake.binlog.silver_types import to_arrow
from binlake.lake.table_names import split_table_name, table_name
from binlake.vocabulary import CHANGE_OPS, KEY_CHANGE_OP, SEQ_COL, SOURCE_ROW

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from binlake.lake.delta import DeltaEngine
    from binlake.lake.layout import LakeLayout
    from binlake.lake.run import RunReport

RUN_METRICS = "run_metrics"
COMMITTED_OPS = (*CHANGE_OPS, "ddl")  # rows whose commit time counts as "applied up to"
METRICS_COLUMNS: tuple[tuple[str, str], ...] = (
    ("run_id", "string"),
    ("source", "string"),
    ("table_name", "string"),
    ("engine", "string"),
    ("result", "string"),
    ("run_start", "timestamp"),
    ("run_end", "timestamp"),
    ("inserts", "bigint"),
    ("updates", "bigint"),
    ("deletes", "bigint"),
    ("changes", "bigint"),
    ("key_changes", "bigint"),
    ("already_applied", "bigint"),
    ("files_ingested", "bigint"),
    ("files_skipped", "bigint"),
    ("bytes_ingested", "bigint"),
    ("bronze_rows", "bigint"),
    ("seconds", "double"),
    ("ingest_seconds", "double"),
    ("apply_seconds", "double"),
    ("stage_seconds", "string"),
    ("checkpoint_seq", "bigint"),
    ("last_commit_time", "timestamp"),
    ("lag_seconds", "double"),
    ("quarantined", "bigint"),
    ("registry_versions", "bigint"),
    ("decode_errors", "bigint"),
)


def metrics_path(lake: "LakeLayout") -> str:
    return lake.meta(RUN_METRICS)


def utc(us: Optional[int]) -> Optional[dt.datetime]:
    """Microseconds since the epoch (bronze ``commit_ts``) as an aware UTC datetime."""
    return None if us is None else dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=us)


def applied_commits(
    spark: "SparkSession",
    engine: "DeltaEngine",
    lake: "LakeLayout",
    checkpoints: dict[str, int],
    after: Optional[dict[str, int]] = None,
    only_after: bool = False,
) -> "DataFrame":
    """Per (source, db, table_name) of the bronze rows applied (``_binlake_seq`` up to each source's checkpoint
    seq in ``checkpoints``): ``last_change_us`` (newest commit time of a row change), ``last_commit_us`` (of a
    row change or DDL), and the rows after ``after[source]`` (this run's) by op: ``inserts``, ``updates``,
    ``deletes``, ``decode_errors``. DDL and undecodable stretches group under NULL tables. ``only_after``:
    only the rows after ``after[source]`` are read (a run's, not the source's whole history)."""
    from pyspark.sql import functions as F

    if not checkpoints or not engine.exists(lake.bronze):
        return spark.createDataFrame(
            [],
            "source string, db string, table_name string, last_change_us bigint, "
            "last_commit_us bigint, inserts bigint, updates bigint, deletes bigint, "
            "decode_errors bigint",
        )
    bounds = spark.createDataFrame(
        [(s, int(seq), int((after or {}).get(s, -1))) for s, seq in checkpoints.items()],
        "source string, ckpt_seq bigint, after_seq bigint",
    )
    bound = min((after or {}).get(s, -1) for s in checkpoints) if only_after else -1
    rows = (
        engine.scan(spark, lake.bronze, above={SEQ_COL: bound})
        .select("source", "db", "table_name", "op", "commit_ts", SEQ_COL)
        .where(F.col("op").isin(*COMMITTED_OPS, "error"))
        .join(F.broadcast(bounds), "source")
        .where(F.col(SEQ_COL) <= F.col("ckpt_seq"))
    )
    new = F.col(SEQ_COL) > F.col("after_seq")
    if only_after:
        rows = rows.where(new)

    def count(op: str) -> Any:
        return F.sum(F.when(new & (F.col("op") == op), 1).otherwise(0)).cast("bigint")

    return rows.groupBy("source", "db", "table_name").agg(
        F.max(F.when(F.col("op").isin(*CHANGE_OPS), F.col("commit_ts"))).alias("last_change_us"),
        F.max(F.when(F.col("op").isin(*COMMITTED_OPS), F.col("commit_ts"))).alias("last_commit_us"),
        count("insert").alias("inserts"),
        count("update").alias("updates"),
        count("delete").alias("deletes"),
        count("error").alias("decode_errors"),
    )


def scanned_groups(report: "RunReport", prev: int, seq: Optional[int]) -> Optional[list[dict[str, Any]]]:
    """:func:`applied_commits`'s rows for the run from its apply's scan (``ApplyReport.scanned``), when that scan
    covered exactly the bronze rows after ``prev`` (the checkpoint the previous recorded run reached, -1 for
    none) up to ``seq`` (the checkpoint now); None otherwise (a run after one that was not recorded, a seam
    inside the batch, an apply that stopped), and the rows are read from bronze."""
    a = report.apply
    if a.scanned is None:
        return None
    start, info = a.scanned
    end = start if a.checkpoint_seq is None else a.checkpoint_seq
    if prev != start or (-1 if seq is None else seq) != end:
        return None
    none = {"inserts": 0, "updates": 0, "deletes": 0, "decode_errors": 0}
    groups = [
        {
            **none,
            "source": report.source,
            "db": db,
            "table_name": table,
            "last_change_us": t.last_commit_ts,
            "last_commit_us": t.last_commit_ts,
            **{f"{op}s": t.ops.get(op, 0) for op in CHANGE_OPS},
        }
        for (db, table), t in info.tables.items()
    ]
    ddl = [d["commit_ts"] for d in info.ddls if d["commit_ts"] is not None]
    groups.append(
        {
            **none,
            "source": report.source,
            "db": None,
            "table_name": None,
            "last_change_us": None,
            "last_commit_us": max(ddl, default=None),
            "decode_errors": len(info.errors),
        }
    )
    return groups


def source_checkpoints(engine: "DeltaEngine", lake: "LakeLayout") -> dict[str, int]:
    """source -> the ``_binlake_seq`` applied (the checkpoints' source rows), read on the driver with delta-rs
    (a few rows; no Spark job), else with the engine."""
    from binlake.lake.driver_read import DriverRows
    from binlake.vocabulary import SOURCE_ROW as CKPT_SOURCE_ROW

    args = (None, lake.checkpoints, ("source", SEQ_COL), {"table_name": CKPT_SOURCE_ROW})
    try:
        rows = DriverRows().read_rows(*args)
    except Exception:  # noqa: BLE001 - a table delta-rs can not read: the engine reads it
        rows = engine.read_rows(*args)
    return {r["source"]: r[SEQ_COL] for r in rows}


def run_quarantined(
    spark: "SparkSession", engine: "DeltaEngine", lake: "LakeLayout", source: str, run_id: str
) -> dict[tuple, int]:
    """(db, table_name) -> the rows of ``meta.quarantine`` of one run of a source: counted on the driver with
    delta-rs and pyarrow batch by batch (bounded memory, no Spark job), else with the engine."""
    from binlake.lake import driver_read

    table = driver_read.open_table(lake.quarantine)
    if table is None:
        return {}
    out: dict[tuple, int] = {}
    try:
        where = (driver_read.text("source") == source) & (driver_read.text("run_id") == run_id)
        for batch in driver_read.batches(table, ["db", "table_name"], where):
            for db, name in zip(batch.column("db").to_pylist(), batch.column("table_name").to_pylist()):
                out[db, name] = out.get((db, name), 0) + 1
        return out
    except Exception:  # noqa: BLE001 - a table delta-rs can not read: the engine counts
        pass
    from pyspark.sql import functions as F

    rows = (
        engine.read(spark, lake.quarantine)
        .where((F.col("source") == source) & (F.col("run_id") == run_id))
        .groupBy("db", "table_name")
        .count()
        .collect()
    )
    return {(r["db"], r["table_name"]): r["count"] for r in rows}


def _us(ts: Optional[dt.datetime]) -> Optional[int]:
    return None if ts is None else (ts - utc(0).replace(tzinfo=ts.tzinfo)) // dt.timedelta(microseconds=1)


def _unchanged_tables(recorded: list[dict[str, Any]], groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Groups for the tables the recorded runs of a source saw that this run's rows do not touch: no changes,
    their last change time as the newest recorded row of each has it (so a run reads its own bronze rows, not
    the source's history, and still reports every table's lag)."""
    seen = {table_name(g["db"], g["table_name"]) for g in groups if g["db"] is not None and g["table_name"] is not None}
    newest: dict[str, dict[str, Any]] = {}
    for r in recorded:
        name = r["table_name"]
        if (
            name != SOURCE_ROW
            and name not in seen
            and r["last_commit_time"] is not None
            and (name not in newest or r["run_end"] > newest[name]["run_end"])
        ):
            newest[name] = r
    out = []
    for name, r in newest.items():
        db, table = split_table_name(name)
        last = _us(r["last_commit_time"])
        out.append(
            {
                "source": r["source"],
                "db": db,
                "table_name": table,
                "last_change_us": last,
                "last_commit_us": last,
                "inserts": 0,
                "updates": 0,
                "deletes": 0,
                "decode_errors": 0,
            }
        )
    return out


def run_metrics_rows(
    spark: "SparkSession",
    engine: "DeltaEngine",
    lake: "LakeLayout",
    report: "RunReport",
    ended: dt.datetime,
    result: str = "ok",
) -> list[dict[str, Any]]:
    """The metrics rows of one finished run of one source (see the module docstring)."""

    source = report.source
    started = ended - dt.timedelta(seconds=report.seconds)
    seq = source_checkpoints(engine, lake).get(source)
    recorded = [r for r in read_metrics(lake) if r["source"] == source]
    prev = max(
        (r["checkpoint_seq"] for r in recorded if r["table_name"] == SOURCE_ROW and r["checkpoint_seq"] is not None),
        default=-1,
    )
    groups = scanned_groups(report, prev, seq)
    if groups is None:
        groups = (
            []
            if seq is None
            else [
                r.asDict()
                for r in applied_commits(
                    spark, engine, lake, {source: seq}, {source: prev}, only_after=prev >= 0
                ).collect()
            ]
        )
    groups += _unchanged_tables(recorded, groups)
    quarantined = run_quarantined(spark, engine, lake, source, report.run_id)
    i, a = report.ingest, report.apply
    base = {
        "run_id": report.run_id,
        "source": source,
        "engine": report.engine,
        "result": result,
        "run_start": started,
        "run_end": ended,
        "checkpoint_seq": seq,
    }

    def lag(us: Optional[int]) -> Optional[float]:
        return None if us is None else round((ended - utc(us)).total_seconds(), 3)

    tables = []
    for g in sorted(
        (g for g in groups if g["db"] is not None and g["table_name"] is not None and g["last_change_us"] is not None),
        key=lambda g: (g["db"], g["table_name"]),
    ):
        n = g["inserts"] + g["updates"] + g["deletes"]
        tables.append(
            {
                **base,
                "table_name": table_name(g["db"], g["table_name"]),
                "inserts": g["inserts"],
                "updates": g["updates"],
                "deletes": g["deletes"],
                "changes": n,
                "last_commit_time": utc(g["last_change_us"]),
                "lag_seconds": lag(g["last_change_us"]),
                "quarantined": quarantined.get((g["db"], g["table_name"]), 0),
                "decode_errors": 0,
            }
        )
    last_us = max((g["last_commit_us"] for g in groups if g["last_commit_us"] is not None), default=None)
    stages = {"ingest": i.seconds, **a.stage_seconds, "apply": a.seconds}
    total = {
        **base,
        "table_name": SOURCE_ROW,
        "inserts": sum(t["inserts"] for t in tables),
        "updates": sum(t["updates"] for t in tables),
        "deletes": sum(t["deletes"] for t in tables),
        "changes": sum(t["changes"] for t in tables),
        "key_changes": a.ops.get(KEY_CHANGE_OP, 0),
        "already_applied": a.ops.get("already_applied", 0),
        "files_ingested": i.files,
        "files_skipped": i.skipped_files,
        "bytes_ingested": i.bytes,
        "bronze_rows": sum(i.rows.values()),
        "seconds": round(report.seconds, 3),
        "ingest_seconds": round(i.seconds, 3),
        "apply_seconds": round(a.seconds, 3),
        "stage_seconds": json.dumps({k: round(v, 3) for k, v in stages.items()}, sort_keys=True),
        "last_commit_time": utc(last_us),
        "lag_seconds": lag(last_us),
        "quarantined": sum(quarantined.values()),
        "registry_versions": report.registry_versions,
        "decode_errors": sum(g["decode_errors"] for g in groups),
    }
    return [total, *tables]


def record_run(
    spark: "SparkSession",
    engine: "DeltaEngine",
    lake: "LakeLayout",
    report: "RunReport",
    ended: Optional[dt.datetime] = None,
    result: str = "ok",
) -> list[dict[str, Any]]:
    """Append the run's rows to ``meta.run_metrics``; returns them. A run that ingested, applied and
    registered nothing records nothing (rerunning a loaded day leaves every table at its version), unless it
    stopped (``result="gap"``: a gap in the source's binlogs; ``"stopped"``: another typed error)."""
    if (
        result == "ok"
        and not report.ingest.files
        and report.apply.checkpoint_seq is None
        and not report.registry_versions
    ):
        return []
    ended = ended or dt.datetime.now(dt.timezone.utc)
    rows = run_metrics_rows(spark, engine, lake, report, ended, result)
    data = to_arrow(METRICS_COLUMNS, [tuple(r.get(n) for n, _ in METRICS_COLUMNS) for r in rows])
    engine.append(metrics_path(lake), engine.frame(spark, data))
    return rows


def read_metrics(lake: "LakeLayout") -> list[dict[str, Any]]:
    """Every row of ``meta.run_metrics`` (small: a few rows per run), read with deltalake on the driver."""
    import os

    from deltalake import DeltaTable

    path = metrics_path(lake)
    if not os.path.isdir(os.path.join(path, "_delta_log")):
        return []
    return DeltaTable(path).to_pyarrow_table().to_pylist()
