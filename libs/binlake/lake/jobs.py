"""The pipeline's jobs: snapshot SDI -> ingest -> apply, as functions of (Spark session, Delta engine, lake).

``spark_jobs/*.py`` and ``binlake run`` call these same functions. Every job is safe to rerun: with nothing
new to do it writes nothing (no new Delta version anywhere).

Test hook: ``BINLAKE_TEST_CRASH_AT=<point>[:<n>]`` raises :class:`InjectedCrash` at the n-th (default first)
pass through a :func:`crash_point` (``after_bronze``, ``after_quarantine``, ``after_history``, ``after_silver``,
``before_checkpoint``), the way a killed job stops between two Delta commits.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from binlake.lake.bronze import decode_tasks, ingested_files, plan_ingest, summarize
from binlake.lake.checkpoints import SOURCE_ROW, read_checkpoint, write_checkpoints
from binlake.lake.delta.plan import OP_COL, SEQ_COL
from binlake.lake.quarantine import quarantine_row, write_quarantine
from binlake.lake.resolve import first_late_seq, from_ipc, resolve, scan_batch, unapplied
from binlake.lake.silver import (COMMIT_TS_COL, COUNT_COL, KEY_COL, engine_input, merge_keys, read_rows,
                                 silver_name, to_arrow)
from binlake.pipeline.filters import GtidSet, TableFilter
from binlake.pipeline.split import DEFAULT_CHUNK_BYTES

if TYPE_CHECKING:
    import argparse

    from pyspark.sql import SparkSession

    from binlake.lake.delta import DeltaEngine

CRASH_ENV = "BINLAKE_TEST_CRASH_AT"
_crash_counts: Counter = Counter()


class InjectedCrash(BaseException):
    """Raised by :func:`crash_point` under the test hook (a BaseException: nothing catches it by accident)."""


def crash_point(name: str) -> None:
    want = os.environ.get(CRASH_ENV)
    if not want:
        return
    point, _, nth = want.partition(":")
    if point != name:
        return
    _crash_counts[name] += 1
    if _crash_counts[name] == int(nth or 1):
        _crash_counts.clear()
        raise InjectedCrash(f"test hook: crash at {want}")


@dataclass(frozen=True, slots=True)
class LakeLayout:
    """Where each table lives under the lake root."""

    root: str

    def path(self, *parts: str) -> str:
        return str(Path(self.root, *parts))

    @property
    def bronze(self) -> str:
        return self.path("bronze", "binlog_events")

    def silver(self, db: str, table: str) -> str:
        return self.path("silver", silver_name(db, table))

    def history(self, db: str, table: str) -> str:
        return self.path("silver", silver_name(db, table) + "__history")

    @property
    def checkpoints(self) -> str:
        return self.path("meta", "checkpoints")

    @property
    def quarantine(self) -> str:
        return self.path("meta", "quarantine")

    @property
    def schema_registry(self) -> str:
        return self.path("meta", "schema_registry")


@dataclass(frozen=True, slots=True)
class RunOptions:
    """What one run of the jobs does, for one source."""

    source: str
    tables: TableFilter = TableFilter()
    cutoff_us: Optional[int] = None          # apply changes committed before this (microseconds, UTC)
    history: bool = False                    # also write SCD2 history tables
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    run_id: str = ""

    def new_run_id(self) -> str:
        """``run_id``, or a fresh random one (each call) when none was given."""
        return self.run_id or uuid.uuid4().hex[:12]


# --- snapshot_sdi ----------------------------------------------------------------------------------------------

def snapshot_sdi_job(spark: "SparkSession", engine: "DeltaEngine", lake: LakeLayout,
                     sdi_paths: Sequence[str], seen_at: dt.datetime) -> int:
    """Load SDI (.ibd/.sdi/ibd2sdi files or folders) into ``meta.schema_registry``; returns new versions.

    Only definitions whose fingerprint the registry does not hold yet are observed (a folder may hold several
    versions of a table, e.g. the generator's ``sdi/<db>/<table>/v<N>/``, so "seen again" is not meaningful
    here), and the table is rewritten only when a new version appears: rerunning changes nothing.

    The snapshot is taken as of ``seen_at`` (a run's cutoff): a definition whose SDI ``last_altered`` (UTC,
    ``YYYYMMDDHHMMSS``) is later did not exist yet then, so it waits for the run whose cutoff reaches it."""
    from binlake.sdi.canonical import fingerprint
    from binlake.sdi.readers import iter_sdi_files, read_entries
    from binlake.sdi.registry import REGISTRY_ROW_SCHEMA, SchemaRegistry

    as_of = int(seen_at.strftime("%Y%m%d%H%M%S"))
    rows = registry_rows(spark, engine, lake)
    registry = SchemaRegistry.from_rows(rows)
    known = {r["fingerprint"] for r in rows}
    added = 0
    for path in iter_sdi_files(sdi_paths):
        for entry in read_entries(path):
            doc = entry.document()
            if doc.table is None or fingerprint(doc.table) in known or doc.table.last_altered > as_of:
                continue
            known.add(fingerprint(doc.table))
            added += registry.observe(doc, seen_at, None, str(path))
    if added:
        cols = [(n, t) for n, t, _ in REGISTRY_ROW_SCHEMA]
        data = [tuple(r[n] for n, _ in cols) for r in registry.to_rows()]
        engine.overwrite(lake.schema_registry, engine_input(engine, to_arrow(cols, data)))
    return added


def registry_rows(spark: "SparkSession", engine: "DeltaEngine", lake: LakeLayout) -> list[dict[str, Any]]:
    from binlake.sdi.registry import REGISTRY_ROW_SCHEMA

    rows = read_rows(engine, spark, lake.schema_registry, [n for n, _, _ in REGISTRY_ROW_SCHEMA])
    return [{k: _naive_utc(v) for k, v in r.items()} for r in rows]


def _naive_utc(value: Any) -> Any:
    """The registry model keeps naive UTC datetimes; Delta timestamps come back UTC-aware."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value


# --- ingest ----------------------------------------------------------------------------------------------------

@dataclass
class IngestReport:
    files: int = 0
    skipped_files: int = 0
    bytes: int = 0
    rows: Counter = field(default_factory=Counter)     # bronze rows per op
    totals: dict[str, int] = field(default_factory=dict)   # events, transactions, skipped_gtid, ...
    version: Optional[int] = None
    seconds: float = 0.0


def ingest_job(spark: "SparkSession", engine: "DeltaEngine", lake: LakeLayout, landing_dir: str,
               opts: RunOptions, run_id: str) -> IngestReport:
    """Decode the source's new landing files on Spark and append them to bronze in one commit."""
    _crash_counts.clear()
    started = time.perf_counter()
    done = ingested_files(spark, engine, lake.bronze, opts.source)
    cutoff_s = None if opts.cutoff_us is None else opts.cutoff_us // 1_000_000
    plan = plan_ingest(landing_dir, opts.source, done, created_before=cutoff_s, chunk_bytes=opts.chunk_bytes)
    report = IngestReport(len(plan.files), len(plan.skipped), plan.bytes)
    if plan.tasks:
        applied = read_checkpoint(spark, engine, lake.checkpoints, opts.source).gtid_executed
        data = decode_tasks(spark, plan.tasks, opts.tables, applied, run_id, registry_rows(spark, engine, lake) or None)
        report.version = engine.append(lake.bronze, engine_input(engine, data))
        crash_point("after_bronze")
        ops = data.column("op").to_pylist()
        report.rows = Counter(ops)
        report.totals = summarize([s for s, op in zip(data.column("statement").to_pylist(), ops)
                                   if op in ("file_end", "chunk_end")])
    report.seconds = time.perf_counter() - started
    return report


# --- apply -----------------------------------------------------------------------------------------------------

@dataclass
class ApplyReport:
    changes: int = 0
    tables: int = 0
    ops: Counter = field(default_factory=Counter)      # fold counters: insert, update, delete, key_change, ...
    quarantined: int = 0
    checkpoint_seq: Optional[int] = None
    seconds: float = 0.0
    stage_seconds: dict[str, float] = field(default_factory=dict)


def apply_job(spark: "SparkSession", engine: "DeltaEngine", lake: LakeLayout, opts: RunOptions,
              run_id: str) -> ApplyReport:
    """Apply the source's unapplied bronze changes (up to the cutoff) to silver, then move the checkpoint."""
    _crash_counts.clear()
    started = time.perf_counter()
    report = ApplyReport()
    if not engine.exists(lake.bronze):
        return report
    ckpt = read_checkpoint(spark, engine, lake.checkpoints, opts.source)
    late = first_late_seq(engine, spark, lake.bronze, opts.source, ckpt.seq, opts.cutoff_us)
    batch = unapplied(engine.read(spark, lake.bronze), opts.source, ckpt.seq, late).cache()
    t0 = time.perf_counter()
    info = scan_batch(batch)
    report.stage_seconds["scan"] = time.perf_counter() - t0
    if info.last is None:
        batch.unpersist()
        return report
    t0 = time.perf_counter()
    folded = resolve(spark, engine, batch, info, lake.silver, history=opts.history)
    batch.unpersist()
    report.stage_seconds["resolve"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    table_rows = []
    for tb in folded:
        db, name = tb.table
        q = [quarantine_row(r, source=opts.source, db=db, table=name, kind=_kind(r), run_id=run_id)
             for r in tb.quarantine]
        write_quarantine(engine, lake.quarantine, q)
        report.quarantined += len(q)
        crash_point("after_quarantine")
        if opts.history and tb.history:
            _write_history(engine, lake.history(db, name), tb.columns, bool(tb.pk), tb.history)
            crash_point("after_history")
        if tb.silver_ipc is not None:
            keys, null_safe = merge_keys(tb.pk, tb.columns)
            engine.merge(lake.silver(db, name), engine_input(engine, from_ipc(tb.silver_ipc)), keys, SEQ_COL,
                         op_col=OP_COL, keep_tombstones=True, null_safe_keys=null_safe)
            crash_point("after_silver")
        report.changes += tb.changes
        report.ops.update(tb.stats)
        table_rows.append({"source": opts.source, "table_name": f"{db}.{name}", SEQ_COL: tb.last_seq,
                           "changes": tb.changes, "quarantined": len(tb.quarantine), "run_id": run_id})
    report.tables = len(folded)
    errors = [quarantine_row({SEQ_COL: r[SEQ_COL], "binlog_file": r["binlog_file"], "pos": r["pos"], "row": 0,
                              "column_name": "", "status": "ERROR", "reason": r["statement"]},
                             source=opts.source, db=None, table=None, kind="decode", run_id=run_id)
              for r in info.others if r["op"] == "error"]
    write_quarantine(engine, lake.quarantine, errors)
    report.quarantined += len(errors)
    report.stage_seconds["merge"] = time.perf_counter() - t0
    gtids = GtidSet.parse(ckpt.gtid_executed)
    gtids.update(sorted(info.gtids))
    last, last_file, last_pos = info.last
    crash_point("before_checkpoint")
    write_checkpoints(engine, lake.checkpoints, [
        {"source": opts.source, "table_name": SOURCE_ROW, SEQ_COL: last, "binlog_file": last_file,
         "pos": last_pos, "gtid_executed": gtids.to_text(), "changes": report.changes,
         "quarantined": report.quarantined, "run_id": run_id}, *table_rows])
    report.checkpoint_seq = last
    report.seconds = time.perf_counter() - started
    return report


def _kind(record: dict[str, Any]) -> str:
    return "missing_row" if record["status"] == "MISSING_ROW" else "json_diff"


def _write_history(engine: "DeltaEngine", path: str, cols: list[tuple[str, str]], has_pk: bool,
                   history: list[tuple[str, Any, int]]) -> None:
    """SCD2 history: one row per key and applied change (the row after it, or the deleted row), keyed by
    (``_binlake_key``, ``_binlake_seq``). A version is valid from its ``_binlake_seq``/``_binlake_commit_ts``
    until the next version of its key (``lead(_binlake_seq)`` over ``_binlake_key``)."""
    from binlake.pipeline.types import to_silver

    convert = [(n, to_silver(k)) for n, k in cols]
    rows = [tuple(conv(st.values.get(n)) for n, conv in convert) + (key, st.seq, st.op, ts)
            + (() if has_pk else (st.count,)) for key, st, ts in history]
    columns = [*cols, (KEY_COL, "string"), (SEQ_COL, "bigint"), (OP_COL, "string"), (COMMIT_TS_COL, "bigint")]
    if not has_pk:
        columns.append((COUNT_COL, "bigint"))
    engine.merge(path, engine_input(engine, to_arrow(columns, rows)), [KEY_COL, SEQ_COL], SEQ_COL, op_col=None)


# --- the whole run ---------------------------------------------------------------------------------------------

@dataclass
class RunReport:
    source: str
    run_id: str
    registry_versions: int = 0
    ingest: IngestReport = field(default_factory=IngestReport)
    apply: ApplyReport = field(default_factory=ApplyReport)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        i, a = self.ingest, self.apply
        return {"source": self.source, "run_id": self.run_id, "registry_versions": self.registry_versions,
                "files": i.files, "files_skipped": i.skipped_files, "bytes": i.bytes,
                "events": i.totals.get("events", 0), "transactions": i.totals.get("transactions", 0),
                "bronze_rows": dict(i.rows), "changes_applied": a.changes, "tables": a.tables,
                "ops": {k: a.ops.get(k, 0) for k in ("insert", "update", "delete", "key_change",
                                                     "already_applied")},
                "quarantined": a.quarantined, "seconds": round(self.seconds, 3),
                "stage_seconds": {"ingest": round(i.seconds, 3), **{k: round(v, 3) for k, v in
                                                                     a.stage_seconds.items()},
                                  "apply": round(a.seconds, 3)}}


def run_source(spark: "SparkSession", engine: "DeltaEngine", lake: LakeLayout, landing_dir: str,
               opts: RunOptions, sdi_paths: Sequence[str] = (),
               progress: Callable[[str], None] = lambda text: None) -> RunReport:
    """snapshot_sdi (when SDI paths are given) -> ingest -> apply, for one source."""
    started = time.perf_counter()
    run_id = opts.new_run_id()
    report = RunReport(opts.source, run_id)
    if sdi_paths:
        seen = (dt.datetime.fromtimestamp(opts.cutoff_us / 1e6, dt.timezone.utc).replace(tzinfo=None)
                if opts.cutoff_us is not None else dt.datetime.now(dt.timezone.utc).replace(tzinfo=None))
        report.registry_versions = snapshot_sdi_job(spark, engine, lake, sdi_paths, seen)
        progress(f"[{opts.source}] snapshot_sdi: {report.registry_versions} new table version(s)")
    i = report.ingest = ingest_job(spark, engine, lake, landing_dir, opts, run_id)
    progress(f"[{opts.source}] ingest: {i.files} file(s), {i.bytes / 1e6:.1f} MB -> "
             f"{sum(i.rows.values())} bronze rows in {i.seconds:.1f} s ({i.skipped_files} already ingested)")
    a = report.apply = apply_job(spark, engine, lake, opts, run_id)
    progress(f"[{opts.source}] apply: {a.changes} change(s) to {a.tables} table(s), {a.quarantined} quarantined, "
             f"in {a.seconds:.1f} s")
    report.seconds = time.perf_counter() - started
    return report


def summary_json(report: RunReport) -> str:
    return json.dumps(report.as_dict(), sort_keys=True)


__all__ = ["ApplyReport", "IngestReport", "InjectedCrash", "LakeLayout", "RunOptions", "RunReport", "apply_job",
           "crash_point", "ingest_job", "run_source", "snapshot_sdi_job"]


# --- the thin Spark job entry points (spark_jobs/*.py) share their argument handling ----------------------------

def job_parser(prog: str, doc: str | None, *, landing: bool = False, filters: bool = False,
               history: bool = False) -> "argparse.ArgumentParser":
    import argparse

    p = argparse.ArgumentParser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    if landing:
        p.add_argument("--landing", required=True, help="landing root (binlogs in <landing>/<source>/)")
    p.add_argument("--lake", required=True, help="lake root")
    p.add_argument("--source", required=True)
    p.add_argument("--run-id", default="", help="the run's id (the DAG passes its interval start)")
    p.add_argument("--end", type=dt.datetime.fromisoformat,
                   help="interval end (exclusive): changes committed before it; naive times are UTC")
    p.add_argument("--engine", choices=("auto", "rust", "spark"), default="auto")
    if filters:
        p.add_argument("--include", action="append", default=[], metavar="DB.TABLE")
        p.add_argument("--exclude", action="append", default=[], metavar="DB.TABLE")
    if history:
        p.add_argument("--history", action="store_true", help="also write SCD2 history tables")
    return p


def job_session(app: str) -> "SparkSession":
    """The session of a Spark job: the master spark-submit configured, else a local one."""
    from binlake.lake.session import build_session

    return build_session(app)


def job_setup(args: Any, app: str) -> tuple["SparkSession", "DeltaEngine", LakeLayout, RunOptions]:
    from binlake.lake.delta import engine_for

    cutoff = None
    if args.end is not None:
        end = args.end if args.end.tzinfo is not None else args.end.replace(tzinfo=dt.timezone.utc)
        cutoff = int(end.timestamp() * 1_000_000)
    tables = TableFilter(tuple(getattr(args, "include", ())), tuple(getattr(args, "exclude", ())))
    opts = RunOptions(args.source, tables, cutoff, getattr(args, "history", False), run_id=args.run_id)
    spark = job_session(app)
    return spark, engine_for(spark, args.engine), LakeLayout(args.lake), opts


def source_dir(landing: str, source: str) -> str:
    folder = Path(landing, source)
    return str(folder if folder.is_dir() else Path(landing))


def print_report(report: Any) -> int:
    """A job's report as one JSON line (``dataclasses.asdict`` would mangle its Counters)."""
    import dataclasses

    fields = {f.name: getattr(report, f.name) for f in dataclasses.fields(report)}
    print(json.dumps({k: dict(v) if isinstance(v, dict) else v for k, v in fields.items()}, default=str,
                     sort_keys=True))
    return 0
