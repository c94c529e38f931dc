"""A snapshot placed in a cluster source's stream by its GTID set (the seam by GTID).

A snapshot's binlog position (file:pos) is a place in one server's binlog. For a source that follows a
replication cluster, the stream is made of several servers' files (``binlake.lake.members``), so a position is a
place in the stream only when the snapshot was taken on the member the stream starts with, before any switch.
Every other snapshot (taken on a replica, or on the new primary after a failover) is placed by its GTID set ``S``
(MySQL ``gtid_executed`` / MariaDB ``gtid_binlog_pos`` at the snapshot's view): the snapshot holds exactly the
transactions in ``S``. In a single-primary history ``S`` is a prefix of the stream, so the seam is the
``_binlake_seq`` of the stream's first transaction not in ``S``: the seeded tables skip what comes before it (in
the snapshot) and apply what follows, as with a position seam (``binlake.lake.seed``).

- The seam is looked for among the bronze rows not yet applied, after the ingest (so the newly landed
  transactions count). A snapshot that holds a transaction the source has not ingested yet, but no ingested one
  that is not in ``S``, waits: it is placed by a later run, once the stream has passed ``S``.
- A snapshot missing a transaction the source has applied is older than silver: not used (the seed's warning).
- A transaction in ``S`` after the seam (``S`` not a prefix of the stream: two MariaDB domains interleaved) can
  not be placed: :class:`binlake.snapshot.errors.InvalidSnapshotError` stops the source before anything is
  applied twice.
- A snapshot whose tables include every table the source holds also fills a GTID gap at a switch
  (:func:`binlake.lake.members.check_switch`): the transactions in ``S`` are skipped at that ingest, for the
  whole source, and every table is seeded from ``S``. The fill is recorded before that ingest's bronze append
  (``binlake.lake.seed.record_gap_fill``): until the tables are seeded at or after the switch, the snapshot is
  the only copy of what the gap held, so a source whose filler is no longer landed stops
  (:func:`unseeded_gap`) instead of applying the new member's changes over tables that lack it.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from binlake.pipeline.filters import GtidSet
from binlake.vocabulary import SEQ_COL, SOURCE_ROW

if TYPE_CHECKING:
    from pyspark.sql import Column, SparkSession

    from binlake.lake.delta import DeltaEngine
    from binlake.lake.layout import LakeLayout

_MARIADB_POSITION = re.compile(r"(\d+)-(\d+)-(\d+)\Z")


def snapshot_gtids(snap: Any) -> Optional[GtidSet]:
    """The GTID set a snapshot's view holds, or None when the server had GTIDs off (no seam by GTID)."""
    text = snap.position.gtid
    return GtidSet.parse(text) if text else None


def holds_all(held: GtidSet, applied: str) -> bool:
    """Whether every GTID of ``applied`` (a checkpoint's set) is in ``held``."""
    return GtidSet.parse(",".join(t for t in (held.to_text(), applied) if t)) == held


def in_gtid_set(gtid: "Column", gset: GtidSet) -> "Column":
    """Whether a bronze row's GTID text is in ``gset`` (:meth:`GtidSet.__contains__` as a Spark expression)."""
    from pyspark.sql import functions as F

    inside = F.lit(False)
    domain = F.regexp_extract(gtid, r"^(\d+)-\d+-(\d+)$", 1)
    seq = F.regexp_extract(gtid, r"^(\d+)-\d+-(\d+)$", 2)
    for item in filter(None, gset.mariadb_position().split(",")):
        m = _MARIADB_POSITION.match(item)
        if m:
            inside = inside | ((domain == m.group(1)) & (seq.try_cast("decimal(20,0)") <= int(m.group(3))))
    prefix = F.regexp_extract(F.lower(gtid), r"^(.+):(\d+)$", 1)
    number = F.regexp_extract(gtid, r"^(.+):(\d+)$", 2).try_cast("decimal(20,0)")
    for sid in gset.sids():
        for lo, hi in gset.intervals(sid):
            inside = inside | ((prefix == sid.text) & number.between(lo, hi))
    return F.coalesce(inside, F.lit(False))


def gtid_seam(
    spark: "SparkSession", engine: "DeltaEngine", lake: "LakeLayout", source: str, held: GtidSet, applied_seq: int
) -> tuple[Optional[int], Optional[int]]:
    """(seam, last): the ``_binlake_seq`` of the first unapplied bronze transaction of ``source`` not in
    ``held`` (None: every ingested one is in it), and of the last one in ``held`` after that seam (None when
    there is none: ``held`` is a prefix of the stream), or, without a seam, of the last one ingested."""
    from pyspark.sql import functions as F

    from binlake.lake.members import HELD_OPS

    rows = (
        engine.scan(spark, lake.bronze, above={SEQ_COL: applied_seq})
        .where((F.col("source") == source) & (F.col(SEQ_COL) > applied_seq) & F.col("op").isin(*HELD_OPS))
        .where(F.col("gtid").isNotNull())
        .select(SEQ_COL, in_gtid_set(F.col("gtid"), held).alias("held"))
    )
    [first] = rows.agg(F.min(F.when(~F.col("held"), F.col(SEQ_COL))).alias("seam"), F.max(SEQ_COL)).collect()
    seam = first["seam"]
    if seam is None:
        return None, first[1]
    [after] = rows.where(F.col("held") & (F.col(SEQ_COL) > seam)).agg(F.max(SEQ_COL).alias("last")).collect()
    return seam, after["last"]


def source_tables(
    spark: "SparkSession", engine: "DeltaEngine", lake: "LakeLayout", source: str
) -> set[tuple[str, str]]:
    """The tables a source holds in silver: its ``meta.checkpoints`` table rows (applied or seeded)."""
    from binlake.lake.table_names import split_table_name

    rows = engine.read_rows(spark, lake.checkpoints, ("table_name",), {"source": source})
    return {split_table_name(r["table_name"]) for r in rows if r["table_name"] not in (None, SOURCE_ROW)}


def gap_fillers(snapshots: Sequence[Any], tables: set[tuple[str, str]], keeps: Any) -> list[tuple[str, GtidSet]]:
    """(id, GTID set) of the snapshots (newest first) that hold every table of ``tables`` the run keeps
    (``keeps(db, table)``): each may fill a GTID gap at a switch."""
    out = []
    for snap in reversed(list(snapshots)):
        held = snapshot_gtids(snap)
        have = {(t.db, t.table) for t in snap.tables}
        if held is not None and all(t in have for t in tables if keeps(*t)):
            out.append((snap.id, held))
    return out


def unseeded_gap(
    spark: "SparkSession", engine: "DeltaEngine", lake: "LakeLayout", source: str, landing_dir: str, keeps: Any
) -> None:
    """:class:`GapSnapshotMissingError` when the snapshot that filled the source's last GTID gap
    (``binlake.lake.seed.gap_fill``) is no longer in ``landing_dir`` and a table the source held before the switch
    (and the run keeps: ``keeps(db, table)``) is not seeded at or after it."""
    from binlake.lake.errors import GapSnapshotMissingError
    from binlake.lake.seed import gap_fill, seams
    from binlake.lake.table_names import split_table_name
    from binlake.snapshot import read_snapshots
    from binlake.snapshot.manifest import SNAPSHOTS_DIR

    fill = gap_fill(engine, lake, source)
    if fill is None or fill.snapshot_id in {s.id for s in read_snapshots(landing_dir)}:
        return
    seeded = seams(engine, lake, source)
    missing = []
    for r in engine.read_rows(spark, lake.checkpoints, ("table_name", SEQ_COL), {"source": source}):
        if r["table_name"] in (None, SOURCE_ROW) or (r[SEQ_COL] is not None and r[SEQ_COL] >= fill.switch_seq):
            continue  # the source row, or a table first followed after the switch
        table = split_table_name(r["table_name"])
        if keeps(*table) and seeded.get(table, -1) < fill.switch_seq:
            missing.append(".".join(table))
    if missing:
        raise GapSnapshotMissingError(
            f"source {source}: snapshot {fill.snapshot_id} filled the GTID gap at the switch to {fill.member_file} "
            f"(the switch skipped the GTIDs {fill.gtids}, the snapshot's among them), but it is no longer in "
            f"{os.path.join(landing_dir, SNAPSHOTS_DIR)} and {len(missing)} table(s) were not seeded from it "
            f"({', '.join(sorted(missing))}): they would miss what only it held. Put that snapshot folder back, or "
            "take a new snapshot of every table of the source on the member it reads now (binlake snapshot), and "
            "run again"
        )


def place_snapshots(
    spark: "SparkSession",
    engine: "DeltaEngine",
    lake: "LakeLayout",
    source: str,
    snapshots: Sequence[Any],
    applied_seq: int,
    applied_gtids: str,
    stream_place: Callable[[Any], Optional[int]],
) -> tuple[list[Any], list[str]]:
    """(the snapshots placed at their GTID seam, a warning per snapshot that waits or is older than silver);
    :class:`InvalidSnapshotError` for one that can not be placed (see the module docstring). A snapshot that holds
    every transaction ingested is placed at its position, when it was taken on a member of the stream
    (``stream_place``: the ``_binlake_seq`` of its position in that member's files, or None) past them."""
    from binlake.snapshot.errors import InvalidSnapshotError

    placed, warnings = [], []
    for snap in snapshots:
        held = snapshot_gtids(snap)
        assert held is not None  # (members.snapshots_of sends only snapshots with a GTID set here)
        if not holds_all(held, applied_gtids):
            placed.append(replace(snap, placed_seq=0))  # older than what is applied: the seed warns, not used
            continue
        seam, last = gtid_seam(spark, engine, lake, source, held, applied_seq)
        at = stream_place(snap) if seam is None else None
        if seam is None and at is not None and at > max(applied_seq, last if last is not None else -1):
            placed.append(replace(snap, placed_seq=at))
        elif seam is None:
            warnings.append(
                f"snapshot {snap.id} (gtid {snap.position.gtid}) waits: it holds transactions the source has not "
                f"ingested yet; its tables are seeded once their binlogs land and are read"
            )
        elif last is not None:
            raise InvalidSnapshotError(
                f"source {source}: snapshot {snap.id} (gtid {snap.position.gtid}) can not be placed in the source's "
                f"stream: a transaction it holds comes after one it does not (the GTID set is not a prefix of the "
                f"binlogs, e.g. two replication domains interleaved); take the snapshot on the member the source "
                f"reads, after its binlogs have landed, and move this one out of _snapshots"
            )
        else:
            placed.append(replace(snap, placed_seq=seam))
    return sorted(placed, key=lambda s: s.seam_seq), warnings
