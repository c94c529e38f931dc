"""Seeding silver from a snapshot (``binlake snapshot``): a table's rows at one binlog position, the seam.

The ingest job calls :func:`seed_from_snapshots` for the complete snapshots found in the source's landing
folder. Each table of a snapshot newer than the one it was last seeded from replaces its silver table in one
Delta overwrite (atomic: readers see the old table or the new one), every row stamped ``_binlake_seq = seam - 1``,
and ``meta/seeds`` records the seam per (source, table). The apply job then skips that table's binlog changes
and DDL before the seam (:func:`seams` and :func:`after_seams`): they are in the snapshot. Changes at or after
the seam apply on top, exactly once: a transaction committed after the position the snapshot's view is exact
at has all its events after that position in the binlog.

A snapshot older than what the source has already applied (its seam before the checkpoint) is not used: the
changes between the two are no longer in the unapplied batch. A re-snapshot taken later is the fix, and the
warning says so. Seeding a table also lifts a block a DDL binlake could not follow put on it (the snapshot holds
the table as it is now). A table another source owns (it applied or seeded it first, ``binlake.lake.apply.ddl``'s
"two sources, one table") is never seeded: that table of the snapshot is refused, reported and counted, and the
rest of the snapshot seeds. A table the run's ``--include``/``--exclude`` leaves out is not seeded either."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from binlake.binlog.silver_types import to_arrow
from binlake.lake.checkpoints import read_checkpoint, write_checkpoints
from binlake.lake.delta.plan import quote_spark
from binlake.lake.silver import reserved_reason
from binlake.lake.table_names import split_table_name, table_name
from binlake.pipeline.filters import TableFilter
from binlake.vocabulary import DUP_COL, OP_COL, RESERVED_PREFIX, SEQ_COL, SOURCE_ROW

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from binlake.lake.delta import DeltaEngine
    from binlake.lake.layout import LakeLayout

TableId = tuple[str, str]
SEEDS = "seeds"
SEED_COLUMNS: tuple[tuple[str, str], ...] = (
    ("source", "string"),
    ("table_name", "string"),
    ("snapshot_id", "string"),
    ("seam_seq", "bigint"),
    ("binlog_file", "string"),
    ("pos", "bigint"),
    ("gtid_set", "string"),
    ("rows", "bigint"),
    ("seeded_at", "string"),
)


@dataclass
class SeedReport:
    tables: list[str] = field(default_factory=list)  # "db.table" seeded by this run
    rows: int = 0
    seam_file: Optional[str] = None  # where the newest snapshot's position is
    warnings: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # "db.table" another source owns: not seeded

    def add(self, other: "SeedReport") -> None:
        """Count ``other`` (a second seed of the same run) in this report."""
        self.tables += other.tables
        self.rows += other.rows
        self.warnings += other.warnings
        self.refused += other.refused


def seeds_path(lake: "LakeLayout") -> str:
    return lake.meta(SEEDS)


def last_seeds(engine: "DeltaEngine", lake: "LakeLayout", source: str) -> dict[TableId, tuple[int, str]]:
    """(db, table) -> (seam, id) of the snapshot the table was last seeded from."""
    out = {}
    for r in engine.read_rows(None, seeds_path(lake), ("table_name", "seam_seq", "snapshot_id"), {"source": source}):
        if r["table_name"] != SOURCE_ROW:  # the source's gap fill (record_gap_fill), not a seed
            out[split_table_name(r["table_name"])] = (r["seam_seq"], r["snapshot_id"])
    return out


@dataclass(frozen=True)
class GapFill:
    """The snapshot that filled a GTID gap at a cluster source's switch (``meta/seeds``' source row)."""

    snapshot_id: str
    switch_seq: int  # the first ``_binlake_seq`` of the member switched to
    member_file: str  # that member's first file, as bronze names it
    gtids: str  # the GTID set the switch skipped: what the source held and the snapshot's


def record_gap_fill(
    spark: "SparkSession", engine: "DeltaEngine", lake: "LakeLayout", source: str, fill: GapFill
) -> None:
    """Record ``fill`` before the switch's bronze append skips the snapshot's transactions: from then on the
    snapshot is the only copy of what the gap held until the source's tables are seeded at or after the switch
    (``binlake.lake.gtid_seam.unseeded_gap``). One row per source (``table_name = '*'``); a later switch's replaces
    it."""
    row = (source, SOURCE_ROW, fill.snapshot_id, fill.switch_seq, fill.member_file, None, fill.gtids, None, None)
    engine.merge(
        seeds_path(lake),
        engine.frame(spark, to_arrow(SEED_COLUMNS, [row])),
        ["source", "table_name"],
        "seam_seq",
        op_col=None,
    )


def gap_fill(engine: "DeltaEngine", lake: "LakeLayout", source: str) -> Optional[GapFill]:
    """The source's last :class:`GapFill`, or None."""
    rows = engine.read_rows(
        None,
        seeds_path(lake),
        ("snapshot_id", "seam_seq", "binlog_file", "gtid_set"),
        {"source": source, "table_name": SOURCE_ROW},
    )
    if not rows:
        return None
    r = rows[0]
    return GapFill(r["snapshot_id"], r["seam_seq"], r["binlog_file"], r["gtid_set"])


def seams(engine: "DeltaEngine", lake: "LakeLayout", source: str) -> dict[TableId, int]:
    """(db, table) -> the seam of the snapshot the table was last seeded from."""
    return {t: seam for t, (seam, _) in last_seeds(engine, lake, source).items()}


def owners(spark: "SparkSession", engine: "DeltaEngine", lake: "LakeLayout", source: str) -> dict[TableId, str]:
    """(db, table) -> the other source that owns it: the first to apply changes to it or seed it (its
    ``meta.checkpoints`` table row)."""
    from binlake.vocabulary import SOURCE_ROW

    out: dict[TableId, str] = {}
    for r in engine.read_rows(spark, lake.checkpoints, ("source", "table_name"), None):
        if r["source"] != source and r["table_name"] not in (None, SOURCE_ROW):
            out.setdefault(split_table_name(r["table_name"]), r["source"])
    return out


def after_seams(batch: "DataFrame", table_seams: dict[TableId, int]) -> "DataFrame":
    """The batch without the row changes of seeded tables before their seam (the snapshot holds them)."""
    from pyspark.sql import functions as F

    if not table_seams:
        return batch
    spark = batch.sparkSession
    bounds = spark.createDataFrame(
        [(db, t, s) for (db, t), s in table_seams.items()], "__db string, __table string, __seam bigint"
    )
    joined = batch.join(
        F.broadcast(bounds), (batch["db"] == bounds["__db"]) & (batch["table_name"] == bounds["__table"]), "left"
    )
    keep = F.col("__seam").isNull() | (F.col(SEQ_COL) >= F.col("__seam"))
    return joined.where(keep).drop("__db", "__table", "__seam")


def seed_from_snapshots(
    spark: "SparkSession",
    engine: "DeltaEngine",
    lake: "LakeLayout",
    source: str,
    snapshots: Sequence[Any],
    progress: Callable[[str], None] = lambda text: None,
    tables: TableFilter = TableFilter(),
) -> SeedReport:
    """Seed silver from each table's newest snapshot not seeded yet (``snapshots``: complete, oldest first, as
    ``binlake.snapshot.read_snapshots`` returns them), of the tables ``tables`` keeps (``--include``/``--exclude``)."""
    report = SeedReport()
    if not snapshots:
        return report
    done = seams(engine, lake, source)
    applied = read_checkpoint(spark, engine, lake.checkpoints, source).seq
    owned = owners(spark, engine, lake, source)
    newest: dict[TableId, tuple[Any, Any]] = {}
    for snap in snapshots:
        for t in snap.tables:
            newest[t.db, t.table] = (snap, t)
    # binlogs before the oldest seam the tables start from are held by the snapshots (see binlake.lake.gaps)
    report.seam_file = min((snap.position for snap, _ in newest.values()), key=lambda p: p.seam_seq).file
    rows = []
    for (db, table), (snap, t) in sorted(newest.items()):
        if done.get((db, table), -1) >= snap.seam_seq or not tables.keeps(db, table):
            continue
        if (db, table) in owned:
            report.refused.append(f"{db}.{table}")
            report.warnings.append(
                f"snapshot {snap.id} of {db}.{table} not seeded: the table belongs to source {owned[db, table]!r} "
                f"(the first to load it), and source {source} may not overwrite it; load each table from one source"
            )
            continue
        reserved = sorted(c.name for c in t.columns if c.name.lower().startswith(RESERVED_PREFIX))
        if reserved:  # silver's own columns would overwrite them: the table alone is not seeded
            report.refused.append(f"{db}.{table}")
            report.warnings.append(f"snapshot {snap.id} not seeded: {reserved_reason(db, table, reserved)}")
            continue
        if snap.seam_seq <= applied:
            report.warnings.append(
                f"snapshot {snap.id} of {db}.{table} is older than what source {source} has applied "
                f"(its position {snap.position.file}:{snap.position.pos} is before the checkpoint): not used; "
                "take a new snapshot to reseed the table"
            )
            continue
        progress(f"[{source}] seed {db}.{table} from snapshot {snap.id} ({t.rows} row(s))")
        engine.overwrite(lake.silver(db, table), silver_frame(spark, t, snap.seam_seq - 1))
        lake.record_name(db, table)
        engine.delete(lake.tombstones, {"source": source, "db": db, "table_name": table})
        report.tables.append(f"{db}.{table}")
        report.rows += t.rows
        rows.append(
            (
                source,
                table_name(db, table),
                snap.id,
                snap.seam_seq,
                snap.position.file,
                snap.position.pos,
                snap.position.gtid or "",
                t.rows,
                dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            )
        )
    if rows:
        engine.merge(
            seeds_path(lake),
            engine.frame(spark, to_arrow(SEED_COLUMNS, rows)),
            ["source", "table_name"],
            "seam_seq",
            op_col=None,
        )
        # a seeded table is followed again from its seam: lift a block an earlier DDL put on it
        write_checkpoints(
            spark,
            engine,
            lake.checkpoints,
            [{"source": source, "table_name": r[1], SEQ_COL: r[3] - 1, "blocked": None} for r in rows],
        )
    return report


def silver_frame(spark: "SparkSession", table: Any, seq: int) -> "DataFrame":
    """A snapshot table's Parquet files as its silver rows: the data columns as the snapshot typed them (the
    silver mapping), ``_binlake_seq``, ``_binlake_op = 'insert'`` and, for a table without a primary key,
    ``_binlake_dup`` numbering equal rows 0, 1, ..."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from binlake.lake.key_ranges import KEY_RANGE_MIN_ROWS

    names = [c.name for c in table.columns]
    df = spark.read.parquet(*[str(p) for p in table.files]).select(*[F.col(quote_spark(n)) for n in names])
    if table.primary_key and table.rows >= KEY_RANGE_MIN_ROWS:
        # one key range per file (about a million rows each), so that a day's MERGE and the fold's read of the
        # touched keys skip the files outside their keys (binlake.lake.key_ranges); Spark packs the snapshot's
        # files into tasks by size, not by key, and every file would otherwise span the whole key range
        parts = max(1, table.rows // KEY_RANGE_MIN_ROWS)
        df = df.repartitionByRange(parts, *[F.col(quote_spark(k)) for k in table.primary_key])
    df = df.withColumn(SEQ_COL, F.lit(seq).cast("bigint")).withColumn(OP_COL, F.lit("insert"))
    if not table.primary_key:
        same = Window.partitionBy(*[F.col(quote_spark(n)) for n in names]).orderBy(F.lit(0))
        df = df.withColumn(DUP_COL, (F.row_number().over(same) - 1).cast("bigint"))
    return df
