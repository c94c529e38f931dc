"""Step 1 of apply, the batch: a source's bronze rows after its checkpoint, up to the first change or DDL
committed at or after the cutoff. This one commit-time rule decides what a run (a day) applies, inside files too.
Also the one way the steps name a batch's tables in Spark (:func:`in_tables`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Optional

from binlake.vocabulary import CHANGE_OPS, SEQ_COL

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from binlake.lake.delta import DeltaEngine

TableId = tuple[str, str]  # (db, table)


def table_tag(db: str, table: str) -> str:
    """A table as one string, as :func:`in_tables` compares it (MySQL names hold no NUL byte)."""
    return f"{db}\x00{table}"


def in_tables(tables: Iterable[TableId]) -> "Column":
    """Column: whether a row's (``db``, ``table_name``) is one of ``tables`` (False for none)."""
    from pyspark.sql import functions as F

    tags = [table_tag(*t) for t in tables]
    return F.concat_ws("\x00", "db", "table_name").isin(tags) if tags else F.lit(False)


def unapplied(
    spark: "SparkSession",
    engine: "DeltaEngine",
    bronze_path: str,
    source: str,
    after_seq: int,
    cutoff_us: Optional[int],
) -> "DataFrame":
    """The source's bronze rows after ``after_seq`` and before the first change or DDL committed at or after
    ``cutoff_us`` (a prefix of the binlog order: a day ends exactly at midnight, also inside a file)."""
    from pyspark.sql import functions as F

    rows = engine.read(spark, bronze_path).filter((F.col("source") == source) & (F.col(SEQ_COL) > after_seq))
    for name, kind in (("raw", "binary"), ("layout", "string")):
        if name not in rows.columns:  # bronze written before undecodable bytes were kept / layouts stated once
            rows = rows.withColumn(name, F.lit(None).cast(kind))
    if cutoff_us is None:
        return rows
    late = (
        rows.filter((F.col("commit_ts") >= cutoff_us) & F.col("op").isin(*CHANGE_OPS, "ddl"))
        .agg(F.min(SEQ_COL))
        .first()[0]
    )
    return rows if late is None else rows.filter(F.col(SEQ_COL) < late)
