"""Step 1 of apply, the batch: a source's bronze rows after its checkpoint, up to the first change or DDL
committed at or after the cutoff. This one commit-time rule decides what a run (a day) applies, inside files too.
The steps name a batch's tables in Spark with :func:`binlake.lake.table_names.in_tables`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from binlake.vocabulary import CHANGE_OPS, SEQ_COL

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from binlake.lake.delta import DeltaEngine

TableId = tuple[str, str]  # (db, table)


def unapplied(
    spark: "SparkSession",
    engine: "DeltaEngine",
    bronze_path: str,
    source: str,
    after_seq: int,
    cutoff_us: Optional[int],
) -> tuple["DataFrame", Optional[int]]:
    """The source's bronze rows after ``after_seq`` and before the first change or DDL committed at or after
    ``cutoff_us`` (a prefix of the binlog order: a day ends exactly at midnight, also inside a file), and that
    first row's seq (None: no such row)."""
    from pyspark.sql import functions as F

    rows = engine.scan(spark, bronze_path, above={SEQ_COL: after_seq})
    rows = rows.filter((F.col("source") == source) & (F.col(SEQ_COL) > after_seq))
    for name, kind in (("raw", "binary"), ("layout", "string")):
        if name not in rows.columns:  # bronze written before undecodable bytes were kept / layouts stated once
            rows = rows.withColumn(name, F.lit(None).cast(kind))
    if cutoff_us is None:
        return rows, None
    late = (
        rows.filter((F.col("commit_ts") >= cutoff_us) & F.col("op").isin(*CHANGE_OPS, "ddl"))
        .agg(F.min(SEQ_COL))
        .first()[0]
    )
    return (rows, None) if late is None else (rows.filter(F.col(SEQ_COL) < late), late)
