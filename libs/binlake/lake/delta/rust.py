"""The embedded Delta engine: the ``deltalake`` package (delta-rs); no JVM jars, nothing to download.

A Spark DataFrame to write is staged by Spark's executors as Parquet (``lake/arrow.ArrowSource``) and streamed
into delta-rs batch by batch, cast to the Arrow form of its own Delta schema so types stay exact (decimal,
timestamp in UTC, timestamp_ntz, binary, string, long); MERGE runs in bounded batches. Driver memory stays
bounded by a batch, but every byte passes through the driver's process: this is the engine for one machine;
clusters use the spark engine. Spark reads a table back from the Parquet files of the version asked for
(``DeltaTable.file_uris()``) under the table's Delta schema, so no Delta classes are needed in the JVM.

Also takes Arrow tables directly (``append``/``overwrite``/``merge``) and returns them (``read_arrow``), for
callers and tests without Spark.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Literal, Mapping, Sequence

from binlake.lake.arrow import ArrowSource
from binlake.lake.crash import COMMIT_POINT, crash_point
from binlake.lake.delta.engine import DeltaEngine, RewriteColumn
from binlake.lake.delta.plan import (
    SOURCE,
    TARGET,
    MergeSpec,
    duplicate_key_error,
    merge_clauses,
    quote_ansi,
    quote_spark,
    sql_literal,
)
from binlake.lake.errors import DeltaTableNotFoundError, UnsupportedTableFeatureError

if TYPE_CHECKING:
    import pyarrow as pa
    from deltalake import DeltaTable
    from pyspark.sql import DataFrame, SparkSession

    from binlake.lake.bronze_files import DataFile


MERGE_BATCH_ROWS = 250_000  # source rows per delta-rs MERGE (bounded driver memory)


def _expression(equal: dict[str, Any] | None, at_most: tuple[str, int] | None = None) -> Any:
    """A pyarrow dataset filter: the columns equal ``equal`` (a tuple: one of its items), ``at_most``'s column
    is at most its value; None for no condition."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    terms = []
    for name, value in (equal or {}).items():
        text = isinstance(value, str) or (isinstance(value, tuple) and all(isinstance(v, str) for v in value))
        field = ds.field(name).cast(pa.string()) if text else ds.field(name)
        terms.append(field.isin(list(value)) if isinstance(value, tuple) else field == value)
    if at_most is not None:
        terms.append(ds.field(at_most[0]) <= at_most[1])
    expr = None
    for term in terms:
        expr = term if expr is None else expr & term
    return expr


class RustEngine(DeltaEngine):
    name = "rust"

    def exists(self, table_path: str) -> bool:
        from deltalake import DeltaTable

        return DeltaTable.is_deltatable(str(table_path))

    def version(self, table_path: str) -> int:
        return self._table(table_path).version()

    def read(self, spark: SparkSession, table_path: str, version: int | None = None) -> DataFrame:
        return files_frame(spark, self._table(table_path, version), table_path)

    def scan(self, spark: SparkSession, table_path: str, above: Mapping[str, int] | None = None) -> DataFrame:
        return files_frame(spark, self._table(table_path), table_path, above)

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

    def _data(self, df: Any) -> ArrowSource:
        import pyarrow as pa

        if isinstance(df, ArrowSource):
            return df
        if isinstance(df, pa.Table):
            return ArrowSource.of_table(df)
        if hasattr(df, "toArrow"):  # a Spark DataFrame: executors stage it, the driver streams it
            return ArrowSource.stage(df, self.staging_root)
        return ArrowSource.of_table(pa.table(df))  # any Arrow stream (Arrow PyCapsule interface)

    def _release(self, data: ArrowSource) -> None:
        data.release()

    def _columns(self, data: ArrowSource) -> list[str]:
        return data.names

    def _count(self, data: ArrowSource) -> int:
        return data.count()

    def _check_unique(self, table_path: str, data: ArrowSource, keys: Sequence[str]) -> None:
        import pyarrow.compute as pc

        counts = data.column(keys).group_by(list(keys), use_threads=False).aggregate([([], "count_all")])
        repeated = counts.filter(pc.greater(counts["count_all"], 1))
        if repeated.num_rows:
            row = repeated.slice(0, 1).to_pylist()[0]
            raise duplicate_key_error(table_path, keys, [row[k] for k in keys], row["count_all"])

    def _without_deletes(self, data: ArrowSource, spec: MergeSpec) -> ArrowSource:
        import pyarrow.dataset as ds

        op = ds.field(spec.op_col).cast("string")
        return data.where((op != spec.delete_op) | op.is_null())

    def _schema_json(self, table_path: str) -> dict:
        return json.loads(self._table(table_path).schema().to_json())

    def _data_schema_json(self, data: ArrowSource) -> dict:
        from deltalake import Schema

        return json.loads(Schema.from_arrow(data.schema).to_json())

    def _set_properties(self, table_path: str, properties: Mapping[str, str]) -> None:
        self._table(table_path).alter.set_table_properties(dict(properties))

    def _add_fields(self, table_path: str, fields: list[dict]) -> None:
        from deltalake import Field

        self._table(table_path).alter.add_columns([Field.from_json(json.dumps(f)) for f in fields])

    def _write(
        self,
        table_path: str,
        data: ArrowSource,
        mode: Literal["append", "overwrite"],
        *,
        where: str | None = None,
        partition_by: tuple[str, ...] = (),
        properties: Mapping[str, str] | None = None,
    ) -> None:
        from deltalake import write_deltalake

        if not self.exists(table_path):
            write_deltalake(
                str(table_path),
                data.reader(),
                mode="append",
                partition_by=list(partition_by) or None,
                configuration=dict(properties or {}) or None,
            )
        elif mode == "append" or where is not None:
            dt = self._table(table_path)
            target = _arrow_schema(dt)
            reader = pa_reader(target, (_align(b, target, fill_missing=True) for b in data.batches()))
            write_deltalake(dt, reader, mode=mode, predicate=where)
        else:
            write_deltalake(
                str(table_path),
                data.reader(),
                mode="overwrite",
                schema_mode="overwrite",
                partition_by=list(partition_by) or None,
            )

    def _commit_files(
        self, table_path: str, files: Sequence[DataFile], schema: dict | None, properties: dict | None
    ) -> None:
        from deltalake import Schema
        from deltalake.transaction import AddAction, create_table_with_add_actions

        adds = [AddAction(f.path, f.size, {}, f.modification_time, True, f.stats) for f in files]
        if schema is None:
            table = self._table(table_path)
            table.create_write_transaction(adds, mode="append", schema=table.schema())
        else:
            create_table_with_add_actions(
                str(table_path), Schema.from_json(json.dumps(schema)), adds, configuration=properties or None
            )

    def _execute_merge(self, table_path: str, data: ArrowSource, spec: MergeSpec) -> tuple[int, int, int]:
        """One delta-rs MERGE per batch of at most MERGE_BATCH_ROWS source rows (memory stays bounded; each
        batch commits on its own, and a rerun after a crash between two is a no-op for the merged ones because
        the clauses compare ``_binlake_seq``)."""
        inserted = updated = deleted = 0
        for chunk in data.tables(MERGE_BATCH_ROWS):
            dt = self._table(table_path)
            source = _align(chunk, _arrow_schema(dt), fill_missing=False)
            clauses = merge_clauses(spec, source.column_names, quote_ansi)
            assignments = dict(clauses.assignments)
            # The batch is in memory: streamed_exec=False lets delta-rs prune target files by its key stats.
            merger = dt.merge(source, clauses.on, source_alias=SOURCE, target_alias=TARGET, streamed_exec=False)
            if clauses.delete_when is not None:
                merger = merger.when_matched_delete(predicate=clauses.delete_when)
            merger = merger.when_matched_update(assignments, predicate=clauses.update_when)
            merger = merger.when_not_matched_insert(assignments, predicate=clauses.insert_when)
            metrics = merger.execute()
            inserted += metrics["num_target_rows_inserted"]
            updated += metrics["num_target_rows_updated"]
            deleted += metrics["num_target_rows_deleted"]
        return inserted, updated, deleted

    def read_rows(
        self, spark: SparkSession | None, table_path: str, columns: Sequence[str], equal: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """Through delta-rs's Arrow dataset on the driver (column pruning, predicate pushdown, no Spark job)."""
        if not self.exists(table_path):
            return []
        dataset = self._table(table_path).to_pyarrow_dataset()
        return dataset.to_table(columns=list(columns), filter=_expression(equal)).to_pylist()

    def count(
        self, table_path: str, equal: dict[str, Any] | None = None, at_most: tuple[str, int] | None = None
    ) -> int:
        if not self.exists(table_path):
            return 0
        return self._table(table_path).to_pyarrow_dataset().count_rows(filter=_expression(equal, at_most))

    def delete(
        self, table_path: str, equal: dict[str, Any] | None = None, at_most: tuple[str, int] | None = None
    ) -> int:
        if not self.exists(table_path):
            return 0
        terms = [f"{quote_ansi(k)} = {sql_literal(v)}" for k, v in (equal or {}).items()]
        if at_most is not None:
            terms.append(f"{quote_ansi(at_most[0])} <= {sql_literal(at_most[1])}")
        where = " AND ".join(terms) or None
        deleted = self._table(table_path).delete(where).get("num_deleted_rows", 0)
        crash_point(COMMIT_POINT)
        return deleted

    def compact(self, table_path: str) -> tuple[int, int]:
        metrics = self._table(table_path).optimize.compact()
        return int(metrics.get("numFilesRemoved", 0)), int(metrics.get("numFilesAdded", 0))

    def vacuum(self, table_path: str, retention_hours: float, *, dry_run: bool = False) -> list[str]:
        return list(
            self._table(table_path).vacuum(
                retention_hours=int(retention_hours), dry_run=dry_run, enforce_retention_duration=False
            )
        )

    def checkpoint(self, table_path: str) -> int:
        dt = self._table(table_path)
        dt.create_checkpoint()
        return dt.version()

    def _rewrite(self, table_path: str, columns: list[RewriteColumn]) -> None:
        """Stream the current version's batches through the column changes into one ``overwrite`` commit with
        ``schema_mode="overwrite"`` (the old files stay readable until VACUUM, so reading while writing is safe)."""
        import pyarrow as pa
        from deltalake import write_deltalake

        dt = self._table(table_path)
        check_readable(dt, table_path)
        source = _arrow_schema(dt)
        fields = []
        for col in columns:
            if col.cast is None:
                fields.append(source.field(col.source).with_name(col.name))
            else:
                fields.append(pa.field(col.name, _arrow_type(col.cast), nullable=True))
        target = pa.schema(fields)
        dataset = dt.to_pyarrow_dataset()  # outside the writer: delta-rs can not block inside its own runtime

        def batches() -> Any:
            for batch in dataset.to_batches():
                arrays = [
                    pa.array([col.value] * batch.num_rows, f.type)
                    if col.source is None
                    else batch.column(col.source).cast(f.type)
                    for col, f in zip(columns, target)
                ]
                yield pa.RecordBatch.from_arrays(arrays, schema=target)

        write_deltalake(
            str(table_path),
            pa_reader(target, batches()),
            mode="overwrite",
            schema_mode="overwrite",
            partition_by=list(dt.metadata().partition_columns) or None,
        )


def pa_reader(schema: pa.Schema, batches: Any) -> pa.RecordBatchReader:
    import pyarrow as pa

    return pa.RecordBatchReader.from_batches(schema, batches)


def spark_to_arrow(df: DataFrame) -> pa.Table:
    """Collect a Spark DataFrame as Arrow, cast to the Arrow form of its Delta schema (exact types, UTC)."""
    import pyarrow as pa
    from deltalake import Schema

    return df.toArrow().cast(pa.schema(Schema.from_json(df.schema.json()).to_arrow()))


def _arrow_schema(dt: DeltaTable) -> pa.Schema:
    import pyarrow as pa

    return pa.schema(dt.schema().to_arrow())


def _align(data: Any, target: pa.Schema, *, fill_missing: bool) -> Any:
    """``data`` in the target's column order and types; target columns it lacks become NULL (fill_missing) or
    are left out. Callers have widened the target and checked the types first (plan.schema_changes)."""
    import pyarrow as pa

    present = set(data.schema.names)
    fields = [f for f in target if fill_missing or f.name in present]
    columns = [
        data.column(f.name).cast(f.type) if f.name in present else pa.nulls(data.num_rows, f.type) for f in fields
    ]
    maker = pa.RecordBatch if isinstance(data, pa.RecordBatch) else pa.Table
    return maker.from_arrays(columns, schema=pa.schema(fields))


def files_frame(
    spark: SparkSession, dt: DeltaTable, table_path: str, above: Mapping[str, int] | None = None
) -> DataFrame:
    """The Delta table ``dt`` as Spark reads its Parquet files, listed by delta-rs from the log on the driver
    (no Spark job replays the log), under its Delta schema; :class:`UnsupportedTableFeatureError` when those files
    alone do not give its rows. ``above``: integer column -> bound; files whose statistics say every value of
    the column is at most the bound are left out (the caller filters the rows; this only skips files)."""
    from pyspark.sql.types import StructType

    check_readable(dt, table_path)
    schema = StructType.fromJson(json.loads(dt.schema().to_json()))
    files = _files_above(dt, above) if above else dt.file_uris()
    if not files:
        return spark.createDataFrame([], schema)
    reader = spark.read.schema(schema)
    if dt.metadata().partition_columns:  # partition values live in the hive-style directory names
        reader = reader.option("basePath", dt.table_uri)
    return reader.parquet(*files).select(*[quote_spark(n) for n in schema.fieldNames()])


def _files_above(dt: DeltaTable, above: Mapping[str, int]) -> list[str]:
    """``dt.file_uris()`` without the files whose add action's max statistic of a column of ``above`` is at
    most its bound (a file without that statistic stays), as delta-spark's data skipping would leave them out."""
    import pyarrow as pa
    import pyarrow.compute as pc

    files = dt.file_uris()
    actions = pa.table(dt.get_add_actions(flatten=True))
    keep = pa.array([True] * actions.num_rows, pa.bool_())
    for column, bound in above.items():
        if f"max.{column}" in actions.column_names:
            keep = pc.and_(keep, pc.fill_null(pc.greater(actions.column(f"max.{column}"), bound), True))
    kept = set(actions.filter(keep).column("path").to_pylist())
    if len(kept) == actions.num_rows:
        return files
    chosen = [f for f in files if f.rsplit("/", 1)[-1] in kept or f[len(dt.table_uri) :].lstrip("/") in kept]
    # a path the log spells otherwise (percent-encoded partition values): every file, which is only slower
    return chosen if len(chosen) == len(kept) else files


def check_readable(dt: DeltaTable, table_path: str) -> None:
    """Refuse tables whose Parquet files alone do not give the rows: column mapping, deletion vectors."""
    import pyarrow as pa

    mode = dt.metadata().configuration.get("delta.columnMapping.mode") or "none"
    if mode != "none":
        raise UnsupportedTableFeatureError(
            f"{table_path} uses Delta column mapping ({mode}); read it with the spark engine"
        )
    if "deletionVectors" in (dt.protocol().reader_features or []) and pa.table(dt.deletion_vectors()).num_rows:
        raise UnsupportedTableFeatureError(
            f"{table_path} has deletion vectors; read it with the spark engine or purge them (REORG ... APPLY (PURGE))"
        )


def _arrow_type(delta_type: Any) -> pa.DataType:
    """The Arrow type delta-rs writes for a Delta schema type (JSON string or dict)."""
    import pyarrow as pa
    from deltalake import Schema

    field = {"name": "c", "type": delta_type, "nullable": True, "metadata": {}}
    return pa.schema(Schema.from_json(json.dumps({"type": "struct", "fields": [field]})).to_arrow()).field(0).type
