"""The apply job: the batch (:mod:`~binlake.lake.apply.batch`), its scan (:mod:`~binlake.lake.apply.scan`), split at
its DDL statements (:mod:`~binlake.lake.apply.ddl`) into segments; each segment is folded
(:mod:`~binlake.lake.apply.fold`), written (:mod:`~binlake.lake.apply.write`) and checkpointed. A segment is a
:class:`Segment` (frozen); each step returns what it made instead of changing its inputs."""

from __future__ import annotations

import json
import shutil
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from binlake.lake.apply.batch import TableId, unapplied
from binlake.lake.apply.ddl import apply_ddl, check_against_registry, read_blocked, segment_ddls
from binlake.lake.apply.fold import FoldCounts, count_folded, fold_batch
from binlake.lake.apply.scan import BatchInfo, bronze_layouts, scan_batch
from binlake.lake.apply.scan_footer import read_footers, scan_from_footers
from binlake.lake.apply.segment import ApplyContext, Segment
from binlake.lake.apply.write import write_blocked, write_folded
from binlake.lake.checkpoints import read_checkpoint, write_checkpoints
from binlake.lake.crash import crash_point, reset_crash_counts
from binlake.lake.owned import scratch_folder
from binlake.lake.seed import after_seams, seams
from binlake.lake.silver import reserved_names, reserved_reason
from binlake.lake.table_names import in_tables, table_name
from binlake.pipeline.filters import GtidSet
from binlake.vocabulary import CHANGE_OPS, SEQ_COL, SOURCE_ROW

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from binlake.lake.delta import DeltaEngine
    from binlake.lake.layout import LakeLayout
    from binlake.lake.options import RunOptions


@dataclass
class ApplyReport:
    changes: int = 0
    tables: int = 0
    ops: Counter = field(default_factory=Counter)  # fold counters: insert, update, delete, key_change, ...
    quarantined: int = 0
    invalid_temporals: int = 0  # zero or invalid dates stored as NULL
    checkpoint_seq: Optional[int] = None
    table_names: list[str] = field(default_factory=list)
    ddl: list[str] = field(default_factory=list)  # DDL actions applied at their position
    blocked: dict[str, str] = field(default_factory=dict)  # table -> why its changes go to quarantine
    ddl_tables: set[TableId] = field(default_factory=set)  # tables a DDL of the batch changed (new names)
    schema_mismatches: dict[str, str] = field(default_factory=dict)  # table -> how silver differs from its SDI
    seconds: float = 0.0
    stage_seconds: dict[str, float] = field(default_factory=dict)
    scanned: Optional[tuple[int, BatchInfo]] = None  # (the checkpoint it started after, the scan of every
    # bronze row after it up to the cutoff), when that scan saw every such row (no seam of a seeded table
    # inside): meta.run_metrics counts from it instead of reading bronze again

    def add_segment(self, info: BatchInfo, counts: FoldCounts) -> None:
        """Count a folded and written segment (``info``: its scan without the tables left out)."""
        self.changes += info.changes
        self.table_names = sorted(set(self.table_names) | {f"{db}.{t}" for db, t in info.tables})
        self.tables = len(self.table_names)
        self.invalid_temporals += sum(sum(c.values()) for c in counts.invalid_temporals.values())
        self.ops.update(counts.ops)

    def add_seconds(self, stage: str, since: float) -> None:
        self.stage_seconds[stage] = self.stage_seconds.get(stage, 0.0) + time.perf_counter() - since


def apply_job(
    spark: "SparkSession", engine: "DeltaEngine", lake: "LakeLayout", opts: "RunOptions", run_id: str
) -> ApplyReport:
    """Apply the source's unapplied bronze changes (up to the cutoff) to silver, then move the checkpoint.

    DDL splits the batch: the changes before a DDL statement are applied (and checkpointed), then the DDL
    (``binlake.lake.ddl_apply``: TRUNCATE, DROP, RENAME, ADD/DROP/RENAME/MODIFY COLUMN), then its own checkpoint,
    so a rerun never applies a DDL twice. A DDL binlake can not follow blocks that table: its later changes go
    to quarantine (kind ``schema``) while every other table keeps loading."""
    from pyspark.sql import functions as F

    reset_crash_counts()
    started = time.perf_counter()
    report = ApplyReport()
    if not engine.exists(lake.bronze):
        return report
    ctx = ApplyContext(spark, engine, lake, opts, run_id)
    ckpt = read_checkpoint(spark, engine, lake.checkpoints, opts.source)
    t0 = time.perf_counter()
    batch, before = unapplied(spark, engine, lake.bronze, opts.source, ckpt.seq, opts.cutoff_us)
    table_seams = seams(engine, lake, opts.source)
    batch = after_seams(batch, table_seams)
    layouts = bronze_layouts(spark, engine, lake.bronze, opts.source)
    unseeded = all(seam <= ckpt.seq + 1 for seam in table_seams.values())
    # a footer stands for its whole file only when no seam inside the batch leaves out rows of a table
    footers = read_footers(batch, lake.bronze, opts.source) if unseeded else None

    def scan(frame: "DataFrame", after: int, until: Optional[int] = before) -> BatchInfo:
        """The scan of ``frame``: the batch's rows after ``after`` and before ``until``."""
        if footers is None:
            return scan_batch(frame, layouts)
        return scan_from_footers(frame, footers, after, until).resolve_layouts(layouts)

    info = scan(batch, ckpt.seq)
    report.stage_seconds["scan"] = time.perf_counter() - t0
    if unseeded:
        report.scanned = (ckpt.seq, info)
    if info.last is None:
        return report
    blocked = read_blocked(spark, engine, lake, opts.source)
    gtids = ckpt.gtid_executed
    ddls = segment_ddls(engine, lake, info.ddls, table_seams)
    lo = ckpt.seq
    for ddl, actions in ddls:
        part = batch.filter(F.col(SEQ_COL) < ddl[SEQ_COL]).filter(F.col(SEQ_COL) > lo)
        gtids = apply_segment(ctx, Segment(part, scan(part, lo, ddl[SEQ_COL]), lo), blocked, gtids, report)
        blocked = apply_ddl(ctx, ddl, actions, blocked, report)
        gtids = ",".join(g for g in (gtids, ddl["gtid"]) if g)
        write_checkpoints(
            spark,
            engine,
            lake.checkpoints,
            [_source_row(ctx, ddl[SEQ_COL], ddl["binlog_file"], ddl["pos"], gtids, report)],
        )
        lo = report.checkpoint_seq = ddl[SEQ_COL]
    if ddls:
        batch = batch.filter(F.col(SEQ_COL) > lo)
        info = scan(batch, lo)
    if info.last is not None:
        apply_segment(ctx, Segment(batch, info, lo), blocked, gtids, report)
    report.schema_mismatches = check_against_registry(spark, engine, lake, report.ddl_tables, opts.cutoff_us)
    report.seconds = time.perf_counter() - started
    return report


def apply_segment(
    ctx: ApplyContext, segment: Segment, blocked: dict[TableId, str], gtids: str, report: ApplyReport
) -> str:
    """Fold and write one segment, then its checkpoint (added to ``report``); returns the GTID set after it.

    The steps: leave out the tables ``--exclude`` names (rows ingested before it) and quarantine the changes of
    the tables apply holds back (:func:`held_back`), fold (staged once), count, write, checkpoint."""
    from pyspark.sql import functions as F

    last = segment.info.last  # the segment's checkpoint, whichever tables are left out
    if last is None:
        return gtids
    segment = segment.without([t for t in segment.info.tables if not ctx.opts.tables.keeps(*t)])
    held = held_back(segment.info, blocked)
    if held:  # a held table's changes: quarantined with the reason, not folded
        changes = segment.rows.filter(in_tables(held) & F.col("op").isin(*CHANGE_OPS))
        report.blocked.update({f"{db}.{t}": why for (db, t), why in held.items()})
        report.quarantined += write_blocked(ctx, changes, held)
        segment = segment.without(held)
    info = segment.info
    t0 = time.perf_counter()
    folder = scratch_folder(ctx.lake.staging, f"fold-{ctx.run_id}-{last[0]}")  # not through a link
    folded, counts = fold_batch(
        ctx.spark,
        ctx.engine,
        ctx.lake,
        segment.rows,
        info,
        ctx.opts.history,
        ctx.opts.temporal_text,
        source=ctx.opts.source,
        after_seq=segment.after_seq,
        scratch=folder,
    )
    try:
        if counts is None:
            counts = count_folded(folded, info)
        report.add_seconds("fold", t0)
        t0 = time.perf_counter()
        quarantined = write_folded(ctx, segment, folded, counts)
        report.quarantined += sum(quarantined.values())
        report.add_seconds("merge", t0)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    report.add_segment(info, counts)
    gtids = ",".join(g for g in (gtids, info.gtids) if g)
    crash_point("before_checkpoint")
    write_checkpoints(
        ctx.spark,
        ctx.engine,
        ctx.lake.checkpoints,
        [_source_row(ctx, last[0], last[1], last[2], gtids, report), *table_rows(ctx, info, counts, quarantined)],
    )
    report.checkpoint_seq = last[0]
    return gtids


def held_back(info: BatchInfo, blocked: dict[TableId, str]) -> dict[TableId, str]:
    """The segment's tables apply does not fold, with why: blocked (a DDL binlake can not follow, another
    source owns it: :func:`~binlake.lake.apply.ddl.read_blocked`), or a column named ``_binlake_*``."""
    held = {t: why for t, why in blocked.items() if t in info.tables}
    for t, ti in info.tables.items():
        if t not in held and (names := reserved_names(ti.metas)):
            held[t] = reserved_reason(*t, names)
    return held


def table_rows(
    ctx: ApplyContext, info: BatchInfo, counts: FoldCounts, quarantined: dict[tuple, int]
) -> list[dict[str, Any]]:
    """The segment's ``meta.checkpoints`` rows of its tables."""
    rows = []
    for table in sorted(info.tables):
        ti = info.tables[table]
        invalid = dict(counts.invalid_temporals.get(table, {}))
        rows.append(
            {
                "source": ctx.opts.source,
                "table_name": table_name(*table),
                SEQ_COL: ti.last_seq,
                "changes": ti.changes,
                "quarantined": quarantined.get(table, 0),
                "run_id": ctx.run_id,
                "invalid_temporals": json.dumps(invalid, sort_keys=True) if invalid else None,
            }
        )
    return rows


def _source_row(
    ctx: ApplyContext, seq: int, binlog_file: str, pos: int, gtids: str, report: ApplyReport
) -> dict[str, Any]:
    """The segment's ``meta.checkpoints`` row of the whole source (its running counts: ``report``)."""
    return {
        "source": ctx.opts.source,
        "table_name": SOURCE_ROW,
        SEQ_COL: seq,
        "binlog_file": binlog_file,
        "pos": pos,
        "gtid_executed": GtidSet.parse(gtids).to_text(),
        "changes": report.changes,
        "quarantined": report.quarantined,
        "run_id": ctx.run_id,
    }
