"""Step 3 of apply, the fold's input from bronze: one fold record per change (two per independent key-changing
update: a tombstone at the old key, the row at the new key, so keys fold independently), grouped by the row
key it touches; the keys that key-changing updates needing the old row link fold together as one group
(:meth:`binlake.lake.apply.scan.TableInfo.key_groups`). Silver's side of the fold is
:mod:`binlake.lake.apply.silver_keys`."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Optional

from binlake.binlog.silver_types import invalid_temporal
from binlake.lake.apply.batch import TableId
from binlake.lake.apply.scan import BatchInfo
from binlake.lake.fold_sql import TEMPORAL_KINDS
from binlake.lake.silver import column_metas, data_columns
from binlake.lake.table_names import in_tables
from binlake.vocabulary import CHANGE_OPS, SEQ_COL

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

# What the fold reads: one row per change half and per silver row of a touched key.
RECORD_COLUMNS: tuple[tuple[str, str], ...] = (
    ("db", "string"),
    ("table_name", "string"),
    ("fold_key", "string"),
    ("base", "boolean"),
    ("file_seq", "int"),
    ("pos", "bigint"),
    ("row", "int"),
    (SEQ_COL, "bigint"),
    ("op", "string"),
    ("split", "string"),
    ("before", "string"),
    ("after", "string"),
    ("diffs", "string"),
    ("commit_ts", "bigint"),
    ("binlog_file", "string"),
    ("gtid", "string"),
    ("row_key", "string"),
    ("values", "string"),
    ("count", "bigint"),
)


def normalizer(columns: list[tuple[str, str]]) -> Any:
    """image -> the image with the zero or invalid dates of typed temporal columns as None: how silver holds
    them, so a row's identity (tables without a primary key) is the same in bronze and in silver."""

    def normalize(image: Optional[dict[str, Any]]) -> Optional[dict[str, Any]]:
        if not image:
            return image
        bad = [name for name, kind in columns if invalid_temporal(kind, image.get(name))]
        return {**image, **dict.fromkeys(bad)} if bad else image

    return normalize


def _rekey(columns: dict[TableId, list[tuple[str, str]]]) -> Any:
    """mapInArrow function: bronze change rows -> the same rows with ``key_before``/``key_after`` of the
    normalized images (tables without a primary key whose identity holds typed temporal columns)."""
    from binlake.pipeline.bronze import change_keys

    def run(batches: Any) -> Any:
        import pyarrow as pa

        for batch in batches:
            rows = batch.to_pylist()
            for r in rows:
                norm = normalizer(columns[r["db"], r["table_name"]])
                before = norm(json.loads(r["before"])) if r["before"] else None
                after = norm(json.loads(r["after"])) if r["after"] else None
                r["key_before"], r["key_after"] = change_keys(before, after, None)
            yield pa.RecordBatch.from_pylist(rows, schema=batch.schema)

    return run


def identity_temporals(info: BatchInfo, temporal_text: bool) -> dict[TableId, list[tuple[str, str]]]:
    """The typed temporal columns of the batch's tables without a primary key (their identity includes them)."""
    if temporal_text:
        return {}
    out = {}
    for t, ti in info.tables.items():
        cols = [(n, k) for n, k in data_columns(column_metas(ti.metas)) if k in TEMPORAL_KINDS]
        if not ti.pk and cols:
            out[t] = cols
    return out


def change_records(batch: "DataFrame", info: BatchInfo, temporal_text: bool = False) -> "DataFrame":
    """The fold records of the batch's changes: one per change, two per independent key-changing update."""
    from pyspark.sql import functions as F

    rekey = identity_temporals(info, temporal_text)
    if rekey:
        tagged = in_tables(rekey) & F.col("op").isin(*CHANGE_OPS)
        batch = batch.filter(~tagged).unionByName(batch.filter(tagged).mapInArrow(_rekey(rekey), batch.schema))

    dep = tables_where(info, lambda ti: ti.dependent)
    kc = (F.col("op") == "update") & F.col("key_after").isNotNull() & (F.col("key_after") != F.col("key_before"))
    changes = batch.filter(F.col("op").isin(*CHANGE_OPS)).withColumn(
        "split", F.explode(F.when(kc & ~dep, F.array(F.lit("old"), F.lit("new"))).otherwise(F.array(F.lit(""))))
    )
    key = (
        F.when(tables_where(info, lambda ti: ti.one_group), F.lit(""))
        .when(F.col("split") == "new", F.col("key_after"))
        .when(F.col("op") == "insert", F.col("key_after"))
        .otherwise(F.col("key_before"))
    )
    return changes.select(
        "db",
        "table_name",
        F.coalesce(key, F.lit("")).alias("fold_key"),
        F.lit(False).alias("base"),
        "file_seq",
        "pos",
        "row",
        SEQ_COL,
        "op",
        "split",
        "before",
        "after",
        "diffs",
        "commit_ts",
        "binlog_file",
        "gtid",
        F.lit(None).cast("string").alias("row_key"),
        F.lit(None).cast("string").alias("values"),
        F.lit(None).cast("bigint").alias("count"),
    )


def tables_where(info: BatchInfo, test: Any) -> "Column":
    """Column: whether a row's table is one of the batch's tables whose TableInfo passes ``test``."""
    return in_tables(t for t, ti in info.tables.items() if test(ti))


def linked_keys_grouped(spark: "SparkSession", records: "DataFrame", info: BatchInfo) -> "DataFrame":
    """``records`` with the fold key of every key a dependent table's key-changing updates link (and of the
    keys those link on) replaced by its group's (:meth:`~binlake.lake.apply.scan.TableInfo.key_groups`): the
    linked keys fold together, in order, and the table's other keys on their own."""
    from pyspark.sql import functions as F

    groups = [
        (db, table, key, group) for (db, table), ti in info.tables.items() for key, group in ti.key_groups().items()
    ]
    if not groups:
        return records
    frame = spark.createDataFrame(groups, "db string, table_name string, fold_key string, fold_group string")
    return (
        records.join(F.broadcast(frame), ["db", "table_name", "fold_key"], "left")
        .withColumn("fold_key", F.coalesce("fold_group", "fold_key"))
        .drop("fold_group")
        .select(*(name for name, _ in RECORD_COLUMNS))
    )


def by_position(frame: "DataFrame") -> tuple["DataFrame", list[str]]:
    """``frame`` with its columns named by position (``_c0``, ``_c1``, ...), and its own names: PySpark's
    ``mapInArrow`` resolves each input column by its name, which fails for a name holding a backtick (a MySQL
    column ``b`c``); the function gives the batches their names back (:func:`named`)."""
    names = frame.columns
    return frame.toDF(*[f"_c{i}" for i in range(len(names))]), names


def named(batch: Any, names: Optional[list[str]]) -> Any:
    """A record batch of a :func:`by_position` frame with the frame's own column names."""
    import pyarrow as pa

    return batch if names is None else pa.RecordBatch.from_arrays(batch.columns, names=names)
