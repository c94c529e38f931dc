"""The embedded Delta engine: the ``deltalake`` package (delta-rs); no JVM jars, nothing to download.

Spark DataFrames cross to Arrow on the driver (``toArrow()``), cast to the Arrow form of their own Delta schema
so types stay exact (decimal, timestamp in UTC, timestamp_ntz, binary, string, long); delta-rs writes and merges
them. Spark reads a table back from the Parquet files of the version asked for (``DeltaTable.file_uris()``)
under the table's Delta schema, so no Delta classes are needed in the JVM. The data of one write passes through
the driver's memory: this is the engine for one machine; clusters use the spark engine.

Also takes Arrow tables directly (``append``/``overwrite``/``merge``) and returns them (``read_arrow``), for
callers and tests without Spark.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Literal, Sequence

from binlake.lake.delta.engine import DeltaEngine
from binlake.lake.delta.plan import (SOURCE, TARGET, MergeSpec, Txn, duplicate_key_error, merge_clauses, quote_ansi,
                                    quote_spark)
from binlake.lake.errors import DeltaTableNotFoundError, UnsupportedTableFeatureError

if TYPE_CHECKING:
    import pyarrow as pa
    from deltalake import CommitProperties, DeltaTable
    from pyspark.sql import DataFrame, SparkSession


class RustEngine(DeltaEngine):
    name = "rust"

    def exists(self, table_path: str) -> bool:
        from deltalake import DeltaTable

        return DeltaTable.is_deltatable(str(table_path))

    def version(self, table_path: str) -> int:
        return self._table(table_path).version()

    def read(self, spark: SparkSession, table_path: str, version: int | None = None) -> DataFrame:
        from pyspark.sql.types import StructType

        dt = self._table(table_path, version)
        _check_readable(dt, table_path)
        schema = StructType.fromJson(json.loads(dt.schema().to_json()))
        files = dt.file_uris()
        if not files:
            return spark.createDataFrame([], schema)
        reader = spark.read.schema(schema)
        if dt.metadata().partition_columns:      # partition values live in the hive-style directory names
            reader = reader.option("basePath", dt.table_uri)
        return reader.parquet(*files).select(*[quote_spark(n) for n in schema.fieldNames()])

    def read_arrow(self, table_path: str, version: int | None = None) -> pa.Table:
        return self._table(table_path, version).to_pyarrow_table()

    # --- primitives -----------------------------------------------------------------------------------------
    def _table(self, table_path: str, version: int | None = None) -> DeltaTable:
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        try:
            return DeltaTable(str(table_path), version=version)
        except TableNotFoundError:
            raise DeltaTableNotFoundError(f"no Delta table at {table_path} (no _delta_log there)") from None

    def _data(self, df: Any) -> pa.Table:
        import pyarrow as pa

        if isinstance(df, pa.Table):
            return df
        if hasattr(df, "toArrow"):
            return spark_to_arrow(df)
        return pa.table(df)                      # any Arrow stream (Arrow PyCapsule interface)

    def _columns(self, data: pa.Table) -> list[str]:
        return data.column_names

    def _count(self, data: pa.Table) -> int:
        return data.num_rows

    def _check_unique(self, table_path: str, data: pa.Table, keys: Sequence[str]) -> None:
        import pyarrow.compute as pc

        counts = data.select(list(keys)).group_by(list(keys), use_threads=False).aggregate([([], "count_all")])
        repeated = counts.filter(pc.greater(counts["count_all"], 1))
        if repeated.num_rows:
            row = repeated.slice(0, 1).to_pylist()[0]
            raise duplicate_key_error(table_path, keys, [row[k] for k in keys], row["count_all"])

    def _without_deletes(self, data: pa.Table, spec: MergeSpec) -> pa.Table:
        import pyarrow.compute as pc

        is_delete = pc.fill_null(pc.equal(data[spec.op_col], spec.delete_op), False)
        return data.filter(pc.invert(is_delete))

    def _schema_json(self, table_path: str) -> dict:
        return json.loads(self._table(table_path).schema().to_json())

    def _data_schema_json(self, data: pa.Table) -> dict:
        from deltalake import Schema

        return json.loads(Schema.from_arrow(data.schema).to_json())

    def _add_fields(self, table_path: str, fields: list[dict]) -> None:
        from deltalake import Field

        self._table(table_path).alter.add_columns([Field.from_json(json.dumps(f)) for f in fields])

    def _write(self, table_path: str, data: pa.Table, mode: Literal["append", "overwrite"], *,
               where: str | None = None, partition_by: tuple[str, ...] = (), txn: Txn | None = None) -> None:
        from deltalake import write_deltalake

        commit = _commit_properties(txn)
        if not self.exists(table_path):
            write_deltalake(str(table_path), data, mode="append", partition_by=list(partition_by) or None,
                            commit_properties=commit)
        elif mode == "append" or where is not None:
            dt = self._table(table_path)
            write_deltalake(dt, _align(data, _arrow_schema(dt), fill_missing=True), mode=mode, predicate=where,
                            commit_properties=commit)
        else:
            write_deltalake(str(table_path), data, mode="overwrite", schema_mode="overwrite",
                            partition_by=list(partition_by) or None, commit_properties=commit)

    def _execute_merge(self, table_path: str, data: pa.Table, spec: MergeSpec,
                       txn: Txn | None) -> tuple[int, int, int]:
        dt = self._table(table_path)
        source = _align(data, _arrow_schema(dt), fill_missing=False)
        clauses = merge_clauses(spec, source.column_names, quote_ansi)
        assignments = dict(clauses.assignments)
        # The source is in memory already: streamed_exec=False lets delta-rs prune target files by its key stats.
        merger = dt.merge(source, clauses.on, source_alias=SOURCE, target_alias=TARGET, streamed_exec=False,
                          commit_properties=_commit_properties(txn))
        if clauses.delete_when is not None:
            merger = merger.when_matched_delete(predicate=clauses.delete_when)
        merger = merger.when_matched_update(assignments, predicate=clauses.update_when)
        merger = merger.when_not_matched_insert(assignments, predicate=clauses.insert_when)
        metrics = merger.execute()
        return (metrics["num_target_rows_inserted"], metrics["num_target_rows_updated"],
                metrics["num_target_rows_deleted"])


def spark_to_arrow(df: DataFrame) -> pa.Table:
    """Collect a Spark DataFrame as Arrow, cast to the Arrow form of its Delta schema (exact types, UTC)."""
    import pyarrow as pa
    from deltalake import Schema

    return df.toArrow().cast(pa.schema(Schema.from_json(df.schema.json()).to_arrow()))


def _commit_properties(txn: Txn | None) -> CommitProperties | None:
    if txn is None:
        return None
    from deltalake import CommitProperties, Transaction

    return CommitProperties(app_transactions=[Transaction(app_id=txn.app_id, version=txn.version)])


def _arrow_schema(dt: DeltaTable) -> pa.Schema:
    import pyarrow as pa

    return pa.schema(dt.schema().to_arrow())


def _align(data: pa.Table, target: pa.Schema, *, fill_missing: bool) -> pa.Table:
    """``data`` in the target's column order and types; target columns it lacks become NULL (fill_missing) or
    are left out. Callers have widened the target and checked the types first (plan.schema_changes)."""
    import pyarrow as pa

    present = set(data.column_names)
    fields = [f for f in target if fill_missing or f.name in present]
    columns = [data[f.name].cast(f.type) if f.name in present else pa.nulls(data.num_rows, f.type) for f in fields]
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


def _check_readable(dt: DeltaTable, table_path: str) -> None:
    """Refuse tables whose Parquet files alone do not give the rows: column mapping, deletion vectors."""
    import pyarrow as pa

    mode = dt.metadata().configuration.get("delta.columnMapping.mode") or "none"
    if mode != "none":
        raise UnsupportedTableFeatureError(
            f"{table_path} uses Delta column mapping ({mode}); read it with the spark engine")
    if "deletionVectors" in (dt.protocol().reader_features or []) and pa.table(dt.deletion_vectors()).num_rows:
        raise UnsupportedTableFeatureError(
            f"{table_path} has deletion vectors; read it with the spark engine or purge them (REORG ... APPLY (PURGE))")
