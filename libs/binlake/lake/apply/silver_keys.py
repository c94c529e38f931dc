"""Step 3 of apply, silver's side of the fold's input: the current rows of the keys the batch touches, as fold
records (joined in the executors, silver cut to the touched keys first where that is cheaper), and the source's
tombstones of an attempt that did not reach its checkpoint."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from binlake.binlog.silver_types import to_arrow
from binlake.lake.apply.records import RECORD_COLUMNS, by_position, named, tables_where
from binlake.lake.apply.scan import BatchInfo
from binlake.lake.arrow import spark_ddl
from binlake.lake.delta.plan import quote_spark
from binlake.lake.driver_read import table_rows
from binlake.lake.fold_sql import INTEGER_KINDS
from binlake.lake.key_ranges import KEY_RANGE_MIN_ROWS, key_ranges
from binlake.lake.silver import column_metas, silver_converters
from binlake.pipeline.fold import DELETE, compact_json, row_key
from binlake.vocabulary import CHANGE_OPS, OP_COL, SEQ_COL

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from binlake.lake.delta import DeltaEngine
    from binlake.lake.layout import LakeLayout


def _keyed_silver(
    kinds: list[tuple[str, str]],
    metas: dict[str, list],
    pk: Optional[list[str]],
    db: str,
    table: str,
    one_group: bool,
    names: Optional[list[str]] = None,
) -> Any:
    """mapInArrow function: silver rows (columns ``names`` by position, see :func:`by_position`) -> base fold
    records (values in the bronze JSON encoding, row key; each physical row counts one)."""
    converters = silver_converters(kinds, metas)

    def run(batches: Any) -> Any:
        for batch in batches:
            batch = named(batch, names)
            rows = []
            for r in batch.to_pylist():
                values = {name: conv(r[name]) for name, conv in converters}
                key = row_key(values, pk)
                rows.append(
                    (
                        db,
                        table,
                        "" if one_group else key,
                        True,
                        None,
                        None,
                        None,
                        r[SEQ_COL] or 0,
                        r[OP_COL] or "insert",
                        "",
                        None,
                        None,
                        None,
                        None,
                        None,
                        None,
                        key,
                        compact_json(values),
                        1,
                    )
                )
            if rows:
                yield from to_arrow(RECORD_COLUMNS, rows).to_batches()

    return run


def base_records(
    spark: "SparkSession",
    engine: "DeltaEngine",
    lake: "LakeLayout",
    batch: "DataFrame",
    info: BatchInfo,
    source: str,
    after_seq: int,
) -> Optional["DataFrame"]:
    """Silver's current rows of the keys the batch touches, as fold records (joined in the executors), and the
    source's tombstones newer than its checkpoint ``after_seq`` (written by an attempt that did not reach its
    checkpoint; older ones are of applied changes and change nothing: ``binlake maintain`` purges them)."""
    from pyspark.sql import functions as F

    touched = (
        batch.filter(F.col("op").isin(*CHANGE_OPS))
        .select("db", "table_name", F.explode(F.array("key_before", "key_after")).alias("row_key"))
        .where(F.col("row_key").isNotNull())
        .distinct()
    )
    keyed = None
    for (db, table), ti in info.tables.items():
        path = lake.silver(db, table)
        if not engine.exists(path):
            continue
        size = table_rows(path)
        # a large table through delta-spark, whose data skipping the key range of _key_prefilter drives
        silver = engine.scan(spark, path) if (size or 0) < KEY_RANGE_MIN_ROWS else engine.read(spark, path)
        kinds = [(f.name, f.dataType.simpleString()) for f in silver.schema.fields]
        metas = column_metas(ti.metas)
        silver = _key_prefilter(silver, dict(kinds), metas, ti.pk, touched, db, table, size)
        plain, names = by_position(silver)
        part = plain.mapInArrow(
            _keyed_silver(kinds, metas, ti.pk, db, table, ti.one_group, names), spark_ddl(RECORD_COLUMNS)
        )
        keyed = part if keyed is None else keyed.unionByName(part)
    if engine.exists(lake.tombstones):
        whole = tables_where(info, lambda ti: ti.one_group)
        dead = (
            engine.scan(spark, lake.tombstones, above={SEQ_COL: after_seq})
            .filter((F.col("source") == source) & (F.col(SEQ_COL) > after_seq))
            .select(
                "db",
                "table_name",
                F.when(whole, F.lit("")).otherwise(F.col("row_key")).alias("fold_key"),
                F.lit(True).alias("base"),
                F.lit(None).cast("int").alias("file_seq"),
                F.lit(None).cast("bigint").alias("pos"),
                F.lit(None).cast("int").alias("row"),
                SEQ_COL,
                F.lit(DELETE).alias("op"),
                F.lit("").alias("split"),
                *[F.lit(None).cast("string").alias(c) for c in ("before", "after", "diffs")],
                F.lit(None).cast("bigint").alias("commit_ts"),
                F.lit(None).cast("string").alias("binlog_file"),
                F.lit(None).cast("string").alias("gtid"),
                "row_key",
                F.lit("{}").alias("values"),
                F.lit(0).cast("bigint").alias("count"),
            )
        )
        keyed = dead if keyed is None else keyed.unionByName(dead)
    if keyed is None:
        return None
    return keyed.join(touched, ["db", "table_name", "row_key"], "left_semi")


# silver rows from which cutting a non-integer key first is cheaper than converting every row (its extra Spark
# stages cost a few seconds; converting costs about 10 us a row: bench/silver_keys.py)
KEY_CUT_MIN_ROWS = 300_000


def _key_prefilter(
    silver: "DataFrame",
    kinds: dict[str, str],
    metas: dict[str, list],
    pk: Optional[list[str]],
    touched: "DataFrame",
    db: str,
    table: str,
    size: Optional[int] = None,
) -> "DataFrame":
    """``silver`` cut to the rows whose primary key the batch touches, so that only those rows are converted to
    fold records in Python, not the whole table. Every key column an integer: in SQL (the bronze key ``[1,2]``
    reads exactly as silver's values). Other keys (strings, UUIDs in BINARY(16), dates, decimals): each row's
    key is computed in Python from its key columns alone, with the converters the fold records use, so it is
    the bronze key exactly; silver is cut to the touched ones by a join on its typed key columns, when it holds
    at least :data:`KEY_CUT_MIN_ROWS` rows (``size``; None: unknown). No primary key: ``silver`` whole (a row's
    identity is all its values). The exact semi-join on the row key follows either way."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    if not pk:
        return silver
    mine = touched.filter((F.col("db") == db) & (F.col("table_name") == table))
    if all(kinds.get(c) in INTEGER_KINDS for c in pk):
        values = F.from_json("row_key", "array<bigint>")
        # try_*: Spark may compute the projection before the table filter, on other tables' keys
        part = [F.try_element_at(values, F.lit(i + 1)).try_cast(kinds[c]).alias(c) for i, c in enumerate(pk)]
        keys = mine.select(*part)
        if (size or 0) >= KEY_RANGE_MIN_ROWS:  # files outside the touched keys' range are skipped by their stats
            for c, (lo, hi) in key_ranges(keys, pk).items():
                silver = silver.where(F.col(quote_spark(c)).between(F.lit(lo), F.lit(hi)))
        return silver.join(keys.distinct(), pk, "left_semi")
    if size is not None and size < KEY_CUT_MIN_ROWS:
        return silver
    key_columns = silver.select(*[F.col(quote_spark(c)) for c in pk])
    columns, names = by_position(key_columns)
    keyed = columns.mapInArrow(
        _row_keys(list(kinds.items()), metas, pk, names),
        StructType([*key_columns.schema.fields, StructField("row_key", StringType())]),
    )
    return silver.join(keyed.join(mine.select("row_key"), "row_key", "left_semi").drop("row_key"), pk, "left_semi")


def _row_keys(
    kinds: list[tuple[str, str]], metas: dict[str, list], pk: list[str], names: Optional[list[str]] = None
) -> Any:
    """mapInArrow function: silver's key columns (``names`` by position, see :func:`by_position`) -> the same
    with each row's ``row_key``, as ``_keyed_silver`` computes it."""
    converters = [(name, conv) for name, conv in silver_converters(kinds, metas) if name in pk]

    def run(batches: Any) -> Any:
        import pyarrow as pa

        for batch in batches:
            batch = named(batch, names)
            cols = [(name, conv, batch.column(name).to_pylist()) for name, conv in converters]
            keys = [row_key({name: conv(values[i]) for name, conv, values in cols}, pk) for i in range(batch.num_rows)]
            yield batch.append_column("row_key", pa.array(keys, pa.string()))

    return run
