"""Whether ``binlake run`` has nothing to do for a source, decided on the driver with delta-rs (no JVM): then the
run does not start Spark at all (its JVM and session start is most of a run that loads nothing).

A source is idle when every one of these holds (read from the lake's Delta tables with
:mod:`binlake.lake.driver_read`): it is not a cluster source; every complete snapshot in its landing folder has
seeded each of its tables already (``meta/seeds``); the ingest plan (:func:`binlake.lake.ingest.plan_ingest`,
with its gap and order checks) has no file to decode, refuses no landing entry and waits at no file; and bronze
holds no row of the source after its checkpoint. Anything else, or anything that can not be read or checked
here (an error included), is not idle: the run starts Spark and the jobs decide, warn or stop as they always do.
The idle run's report is the one the jobs would give: nothing ingested (the landed files counted as already
ingested), nothing applied, and nothing recorded in ``meta.run_metrics`` (:func:`binlake.lake.metrics.record_run`
records nothing for such a run either).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Optional, Sequence

from binlake.lake import driver_read
from binlake.pipeline.split import WHOLE_FILES
from binlake.vocabulary import SEQ_COL

if TYPE_CHECKING:
    from binlake.lake.layout import LakeLayout
    from binlake.lake.options import RunOptions
    from binlake.lake.run import RunReport


def idle_report(lake: "LakeLayout", landing_dir: str, opts: "RunOptions", engine_name: str) -> Optional["RunReport"]:
    """The report of a run of ``opts.source`` that has nothing to do, or None when it may have something to do
    (see the module docstring)."""
    started = time.perf_counter()
    try:
        report = _idle_report(lake, landing_dir, opts, engine_name)
    except Exception:  # noqa: BLE001 - anything unexpected: the jobs run and report it in their own words
        return None
    if report is not None:
        report.seconds = report.ingest.seconds = time.perf_counter() - started
    return report


def _idle_report(lake: "LakeLayout", landing_dir: str, opts: "RunOptions", engine_name: str) -> Optional["RunReport"]:
    from binlake.lake.checkpoints import read_checkpoint
    from binlake.lake.ingest import ingested_files, plan_ingest
    from binlake.lake.members import is_cluster
    from binlake.lake.run import RunReport
    from binlake.lake.seed import seams
    from binlake.snapshot import read_snapshots

    if is_cluster(landing_dir):
        return None
    reader: Any = driver_read.DriverRows()
    no_spark: Any = None  # the readers take a session for the spark engine's reads; delta-rs needs none
    snapshots = read_snapshots(landing_dir)
    if snapshots:
        seeded = seams(reader, lake, opts.source)
        if any(seeded.get((t.db, t.table), -1) < snap.seam_seq for snap in snapshots for t in snap.tables):
            return None
    checkpoint = read_checkpoint(no_spark, reader, lake.checkpoints, opts.source)
    plan = plan_ingest(
        landing_dir,
        opts.source,
        ingested_files(no_spark, reader, lake.bronze, opts.source),
        chunk_bytes=WHOLE_FILES,  # whether there is a file to decode, not its chunks
        seam_file=_seam_file(snapshots),
        applied_file=checkpoint.binlog_file,
    )
    if plan.tasks or plan.files or plan.refused or plan.waiting:
        return None
    bronze = driver_read.open_table(lake.bronze)
    if bronze is not None:
        after = (driver_read.text("source") == opts.source) & (driver_read.field(SEQ_COL) > checkpoint.seq)
        if any(batch.num_rows for batch in driver_read.batches(bronze, [SEQ_COL], after)):
            return None
    report = RunReport(opts.source, opts.new_run_id(), engine_name)
    report.ingest.skipped_files = len(plan.skipped)
    return report


def _seam_file(snapshots: Sequence[Any]) -> Optional[str]:
    """Where the oldest seam of the tables' newest snapshots is (as :func:`binlake.lake.seed.seed_from_snapshots`
    reports it to the ingest plan)."""
    newest = {(t.db, t.table): snap for snap in snapshots for t in snap.tables}
    if not newest:
        return None
    return min((snap.position for snap in newest.values()), key=lambda p: p.seam_seq).file
