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

A source with something to do tells how much when that is only new binlog files and changes waiting in bronze
(the ingest plan's bytes, and :data:`PENDING_ROW_BYTES` per bronze row after the checkpoint, e.g. the changes
after the previous run's cutoff in a file spanning midnight; no snapshot to seed, not a cluster): ``binlake run``
starts a JVM tuned for a short run when the total is small (:func:`is_short_run`). New files are planned by their
size here, not hashed: the run hashes them while its JVM starts (:func:`binlake.pipeline.identity.hash_ahead`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional, Sequence

from binlake.lake import driver_read
from binlake.pipeline.split import WHOLE_FILES
from binlake.vocabulary import SEQ_COL

if TYPE_CHECKING:
    from binlake.lake.layout import LakeLayout
    from binlake.lake.options import RunOptions
    from binlake.lake.run import RunReport


@dataclass(slots=True)
class LookAhead:
    """What a run of a source will do, as far as the driver can tell before Spark starts."""

    report: Optional["RunReport"]  # the report of a run with nothing to do; None when there is something
    new_bytes: Optional[int]  # binlog bytes the ingest decodes, when that is all the run does; None: unknown
    unhashed: tuple[str, ...] = ()  # new landing files, not hashed here (the ingest will: hash_ahead)


UNKNOWN = LookAhead(None, None)
# A run decoding at most this many bytes of binlogs is short: its JVM compiles with C1 only. Measured on two
# cores, whole runs: a 19 MB day 6 s sooner (of 23 s), a 91 MB day 7 s (of 32 s), a 20 MB day on a 10M-row
# table 8 s (of 41 s), even at 182 MB, a third slower at 683 MB.
SHORT_RUN_BYTES = 128 << 20
# What a bronze row waiting to be applied counts as, in binlog bytes: a row change of the production benchmark's
# OLTP table takes about 190 bytes of binlog (7.5M changes in 1.43 GB). A sample day waiting in bronze ran 31 s
# with the JVM a run with unknown work gets, 24 s with the short run's.
PENDING_ROW_BYTES = 200


def is_short_run(ahead: Sequence[LookAhead]) -> bool:
    """Whether a run of these sources is short: each one's new bytes known (nothing else to do) and all of
    them together at most :data:`SHORT_RUN_BYTES`."""
    known = [a.new_bytes for a in ahead if a.new_bytes is not None]
    return bool(ahead) and len(known) == len(ahead) and sum(known) <= SHORT_RUN_BYTES


def look_ahead(lake: "LakeLayout", landing_dir: str, opts: "RunOptions", engine_name: str) -> LookAhead:
    """Whether a run of ``opts.source`` has nothing to do (its report then), else how many new binlog bytes it
    decodes when nothing else is pending (see the module docstring); UNKNOWN on any doubt."""
    started = time.perf_counter()
    try:
        ahead = _look_ahead(lake, landing_dir, opts, engine_name)
    except Exception:  # noqa: BLE001 - anything unexpected: the jobs run and report it in their own words
        return UNKNOWN
    if ahead.report is not None:
        ahead.report.seconds = ahead.report.ingest.seconds = time.perf_counter() - started
    return ahead


def _look_ahead(lake: "LakeLayout", landing_dir: str, opts: "RunOptions", engine_name: str) -> LookAhead:
    from binlake.lake.checkpoints import read_checkpoint
    from binlake.lake.ingest import ingested_files, plan_ingest
    from binlake.lake.members import is_cluster
    from binlake.lake.run import RunReport
    from binlake.lake.seed import seams
    from binlake.snapshot import read_snapshots

    if is_cluster(landing_dir):
        return UNKNOWN
    reader: Any = driver_read.DriverRows()
    no_spark: Any = None  # the readers take a session for the spark engine's reads; delta-rs needs none
    snapshots = read_snapshots(landing_dir)
    if snapshots:
        seeded = seams(reader, lake, opts.source)
        if any(seeded.get((t.db, t.table), -1) < snap.seam_seq for snap in snapshots for t in snap.tables):
            return UNKNOWN
    checkpoint = read_checkpoint(no_spark, reader, lake.checkpoints, opts.source)
    plan = plan_ingest(
        landing_dir,
        opts.source,
        ingested_files(no_spark, reader, lake.bronze, opts.source),
        chunk_bytes=WHOLE_FILES,  # whether there is a file to decode, not its chunks
        seam_file=_seam_file(snapshots),
        applied_file=checkpoint.binlog_file,
        hash_new=False,
    )
    unhashed = tuple(t.path for t in plan.tasks if not t.identity.sha256)
    waiting = 0  # bronze rows ingested earlier that wait to be applied
    bronze = driver_read.open_table(lake.bronze)
    if bronze is not None:
        after = (driver_read.text("source") == opts.source) & (driver_read.field(SEQ_COL) > checkpoint.seq)
        for batch in driver_read.batches(bronze, [SEQ_COL], after):
            waiting += batch.num_rows
            if plan.bytes + waiting * PENDING_ROW_BYTES > SHORT_RUN_BYTES:
                return LookAhead(None, None, unhashed)  # not short: counting on tells nothing more
    if plan.tasks or plan.files or plan.refused or plan.waiting or waiting:
        return LookAhead(None, plan.bytes + waiting * PENDING_ROW_BYTES, unhashed)
    report = RunReport(opts.source, opts.new_run_id(), engine_name)
    report.ingest.skipped_files = len(plan.skipped)
    return LookAhead(report, 0)


def _seam_file(snapshots: Sequence[Any]) -> Optional[str]:
    """Where the oldest seam of the tables' newest snapshots is (as :func:`binlake.lake.seed.seed_from_snapshots`
    reports it to the ingest plan)."""
    newest = {(t.db, t.table): snap for snap in snapshots for t in snap.tables}
    if not newest:
        return None
    return min((snap.position for snap in newest.values()), key=lambda p: p.seam_seq).file
