"""One source's whole run: snapshot_sdi -> ingest -> apply (what ``binlake run`` does per source, and what the
DAG's three Spark jobs do one by one), with its report."""

from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

from binlake.errors import BinlakeError
from binlake.lake.apply import ApplyReport, apply_job
from binlake.lake.crash import reset_crash_counts
from binlake.lake.damage import printable
from binlake.lake.errors import BinlogGapError
from binlake.lake.failures import stage
from binlake.lake.ingest import IngestReport, ingest_job
from binlake.lake.metrics import record_run
from binlake.lake.registry import snapshot_sdi_job
from binlake.vocabulary import CHANGE_OPS, KEY_CHANGE_OP

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from binlake.lake.delta import DeltaEngine
    from binlake.lake.layout import LakeLayout
    from binlake.lake.options import RunOptions


@dataclass
class RunReport:
    source: str
    run_id: str
    engine: str = ""
    registry_versions: int = 0
    ingest: IngestReport = field(default_factory=IngestReport)
    apply: ApplyReport = field(default_factory=ApplyReport)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        i, a = self.ingest, self.apply
        return {
            "source": self.source,
            "run_id": self.run_id,
            "engine": self.engine,
            "registry_versions": self.registry_versions,
            "files": i.files,
            "files_skipped": i.skipped_files,
            "bytes": i.bytes,
            "files_refused": i.refused,
            "seeded_tables": i.seeded.tables,
            "seeded_rows": i.seeded.rows,
            "seeds_refused": i.seeded.refused,
            "waiting": i.waiting,
            "held_files": i.held,
            "member": i.member,
            "member_switches": i.switches,
            "events": i.totals.get("events", 0),
            "transactions": i.totals.get("transactions", 0),
            "bronze_rows": dict(i.rows),
            "changes_applied": a.changes,
            "tables": a.tables,
            "ops": {k: a.ops.get(k, 0) for k in (*CHANGE_OPS, KEY_CHANGE_OP, "already_applied")},
            "quarantined": a.quarantined,
            "invalid_temporals": a.invalid_temporals,
            "ddl": a.ddl,
            "blocked_tables": a.blocked,
            "schema_mismatches": a.schema_mismatches,
            "seconds": round(self.seconds, 3),
            "stage_seconds": {
                "ingest": round(i.seconds, 3),
                **{k: round(v, 3) for k, v in a.stage_seconds.items()},
                "apply": round(a.seconds, 3),
            },
        }


def run_source(
    spark: "SparkSession",
    engine: "DeltaEngine",
    lake: "LakeLayout",
    landing_dir: str,
    opts: "RunOptions",
    sdi_paths: Sequence[str] = (),
    progress: Callable[[str], None] = lambda text: None,
) -> RunReport:
    """snapshot_sdi (when SDI paths are given) -> ingest -> apply, for one source."""
    started = time.perf_counter()
    reset_crash_counts(commits=True)
    run_id = opts.new_run_id()
    report = RunReport(opts.source, run_id, engine.name)
    if sdi_paths:
        seen = (
            dt.datetime.fromtimestamp(opts.cutoff_us / 1e6, dt.timezone.utc).replace(tzinfo=None)
            if opts.cutoff_us is not None
            else dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
        )
        with stage("snapshot_sdi", lake):
            report.registry_versions = snapshot_sdi_job(spark, engine, lake, sdi_paths, seen)
        progress(f"[{opts.source}] snapshot_sdi: {report.registry_versions} new table version(s)")
    try:
        with stage("ingest", lake):
            i = report.ingest = ingest_job(spark, engine, lake, landing_dir, opts, run_id)
    except BinlakeError as exc:
        report.seconds = time.perf_counter() - started
        _record_stop(spark, engine, lake, report, "gap" if isinstance(exc, BinlogGapError) else "stopped", progress)
        raise
    if i.seeded.tables:
        progress(
            f"[{opts.source}] seeded {len(i.seeded.tables)} table(s) from snapshots ({i.seeded.rows} rows): "
            + ", ".join(i.seeded.tables)
        )
    for warning in i.seeded.warnings:
        progress(f"[{opts.source}] WARNING: {warning}")
    for refused in i.refused:
        progress(f"[{opts.source}] WARNING: landing file not read: {refused}")
    progress(
        f"[{opts.source}] ingest: {i.files} file(s), {i.bytes / 1e6:.1f} MB -> "
        f"{sum(i.rows.values())} bronze rows in {i.seconds:.1f} s ({i.skipped_files} already ingested)"
    )
    for switch in i.switches:
        progress(f"[{opts.source}] switched members {switch}: its transactions the source already held skipped by GTID")
    if i.waiting:
        progress(
            f"[{opts.source}] WARNING: {i.waiting}: {len(i.held)} later file(s) wait for it (pending); changes "
            "up to it apply now, the rest once it is whole"
        )
    with stage("apply", lake):
        a = report.apply = apply_job(spark, engine, lake, opts, run_id)
    progress(
        f"[{opts.source}] apply: {a.changes} change(s) to {a.tables} table(s), {a.quarantined} quarantined, "
        f"in {a.seconds:.1f} s"
    )
    report.seconds = time.perf_counter() - started
    record_run(spark, engine, lake, report)  # meta.run_metrics
    return report


def _record_stop(
    spark: "SparkSession",
    engine: "DeltaEngine",
    lake: "LakeLayout",
    report: RunReport,
    result: str,
    progress: Callable[[str], None],
) -> None:
    """``meta.run_metrics`` records a stopped source (``binlake status`` shows it); a lake too damaged to record it
    must not hide why the source stopped, so that failure is only a warning beside the stop's own error."""
    try:
        record_run(spark, engine, lake, report, result=result)
    except Exception as exc:  # noqa: BLE001 - the stop's own error is what the user needs
        reason = printable(str(exc).splitlines()[0]) if str(exc).strip() else type(exc).__name__
        progress(
            f"[{report.source}] WARNING: the stop was not recorded in meta.run_metrics "
            f"({type(exc).__name__}: {reason}); binlake status will not show it"
        )


def summary_json(report: RunReport) -> str:
    return json.dumps(report.as_dict(), sort_keys=True)
