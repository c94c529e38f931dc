"""``meta.checkpoints``: what is applied, per source (``table_name = '*'``) and per source table.

The source row is the resume point: ``_binlake_seq`` is the ordering key up to which every bronze row of the
source is applied, with the file and position it stands for and ``gtid_executed``, the GTIDs applied (the
ingest's skip set). Table rows record each table's last applied change and counts (``invalid_temporals``: JSON
{column: n} of the
zero or invalid dates the run stored as NULL; ``blocked``: why a DDL binlake can not follow sends that
table's changes to quarantine). Checkpoints are written
after the tables they describe (one MERGE, equal ``_binlake_seq`` means nothing to do); a crash before it is
safe because the silver MERGE and the fold skip changes not newer than a row's ``_binlake_seq``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Optional

from binlake.binlog.silver_types import to_arrow
from binlake.vocabulary import SEQ_COL, SOURCE_ROW

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from binlake.lake.delta import DeltaEngine

CHECKPOINT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("source", "string"),
    ("table_name", "string"),
    (SEQ_COL, "bigint"),
    ("binlog_file", "string"),
    ("pos", "bigint"),
    ("gtid_executed", "string"),
    ("changes", "bigint"),
    ("quarantined", "bigint"),
    ("run_id", "string"),
    ("invalid_temporals", "string"),
    ("blocked", "string"),
)
CHECKPOINT_KEYS = ("source", "table_name")


@dataclass(frozen=True, slots=True)
class Checkpoint:
    seq: int = -1
    binlog_file: Optional[str] = None
    pos: Optional[int] = None
    gtid_executed: str = ""


def read_checkpoint(spark: "SparkSession", engine: "DeltaEngine", path: str, source: str) -> Checkpoint:
    rows = engine.read_rows(
        spark, path, (SEQ_COL, "binlog_file", "pos", "gtid_executed"), {"source": source, "table_name": SOURCE_ROW}
    )
    if not rows:
        return Checkpoint()
    r = rows[0]
    return Checkpoint(r[SEQ_COL], r["binlog_file"], r["pos"], r["gtid_executed"] or "")


def write_checkpoints(
    spark: "SparkSession", engine: "DeltaEngine", path: str, rows: Iterable[dict[str, Any]]
) -> Optional[int]:
    """MERGE ``rows`` by (source, table_name): a row newer than the table's (by ``_binlake_seq``) replaces it.
    The few rows are checked on the driver (one per key; the table's rows read with delta-rs), so the MERGE
    holds only rows that change the table and skips the engine's own checks (Spark jobs each); without a
    change, nothing is committed. A table delta-rs can not read is merged with the engine's checks."""
    from binlake.lake.delta.plan import duplicate_key_error

    values = [tuple(r.get(n) for n, _ in CHECKPOINT_COLUMNS) for r in rows]
    if not values:
        return None
    keys = Counter(r[:2] for r in values)
    for key, n in keys.items():
        if n > 1:
            raise duplicate_key_error(path, CHECKPOINT_KEYS, key, n)
    try:
        held = _held_seqs(path, {r[0] for r in values})
    except Exception:  # noqa: BLE001 - e.g. a table feature delta-rs lacks: the engine checks instead
        held = None
    if held is not None:
        values = [r for r in values if _changes(r[2], held.get(r[:2], _ABSENT))]
        if not values:
            return None
    data = engine.frame(spark, to_arrow(CHECKPOINT_COLUMNS, values))
    return engine.merge(path, data, CHECKPOINT_KEYS, SEQ_COL, op_col=None, effective=held is not None).version


_ABSENT = object()


def _held_seqs(path: str, sources: set[str]) -> dict[tuple[str, str], Any]:
    """(source, table_name) -> ``_binlake_seq`` of the table's rows of ``sources`` (read on the driver)."""
    from binlake.lake import driver_read

    where = driver_read.text("source").isin(sorted(sources))
    return {
        (r["source"], r["table_name"]): r[SEQ_COL]
        for r in driver_read.read(path, ("source", "table_name", SEQ_COL), where)
    }


def _changes(seq: Optional[int], held: Any) -> bool:
    """Whether the MERGE (binlake.lake.delta.plan.MergeSpec without an op column) would write a row of ``seq``
    over a table row of ``_binlake_seq`` ``held``: no such row, a row without a seq, or an older one."""
    return held is _ABSENT or held is None or (seq is not None and seq > held)
