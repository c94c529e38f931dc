"""The cluster Delta engine: delta-spark (``DeltaTable.merge``, ``format("delta")``), used when Delta's classes
are on the Spark classpath and its SQL extension is configured (see engine.spark_engine_unavailable_reason).

Only the primitives live here; the write flows are engine.DeltaEngine's, shared with the rust engine.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Literal, Mapping, Sequence

from binlake.lake.crash import COMMIT_POINT, crash_point
from binlake.lake.delta.engine import DeltaEngine, RewriteColumn
from binlake.lake.delta.plan import (
    SOURCE,
    TARGET,
    MergeClauses,
    MergeSpec,
    duplicate_key_error,
    merge_clauses,
    quote_spark,
)
from binlake.lake.driver_read import table_rows
from binlake.lake.errors import DeltaTableNotFoundError
from binlake.lake.key_ranges import KEY_RANGE_MIN_ROWS, key_ranges

COLUMN_MAPPING = "delta.columnMapping.mode"
RETENTION_CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"
LISTING_PARALLELISM = "spark.sql.sources.parallelPartitionDiscovery.parallelism"
VACUUM_LISTING_TASKS = 16
NEEDS_MAPPING = frozenset(" ,;{}()\n\t=")  # characters delta-spark refuses in column names without column mapping

if TYPE_CHECKING:
    from delta.tables import DeltaTable
    from pyspark.sql import DataFrame, SparkSession

    from binlake.lake.bronze_files import DataFile


def _condition(equal: dict[str, Any] | None, at_most: tuple[str, int] | None) -> Any:
    """The Column condition of :meth:`DeltaEngine.delete`'s arguments; None for no condition."""
    from pyspark.sql import functions as F

    terms = [F.col(quote_spark(name)) == F.lit(value) for name, value in (equal or {}).items()]
    if at_most is not None:
        terms.append(F.col(quote_spark(at_most[0])) <= F.lit(at_most[1]))
    cond = None
    for term in terms:
        cond = term if cond is None else cond & term
    return cond


class SparkEngine(DeltaEngine):
    name = "spark"

    def __init__(self, spark: SparkSession) -> None:
        self._spark = spark
        self._warmed = False

    @contextmanager
    def warming(self, folder: Path) -> Iterator[None]:
        """While the body runs (the executors' work: the driver waits), a driver thread commits a new empty table
        under ``folder``, once per engine. The first delta-spark commit of a JVM loads and compiles its code: a
        small day's bronze commit took 1.1 s, 0.25 s after this (the small day 0.2-0.5 s quicker, alternated)."""
        if self._warmed:
            yield
            return
        self._warmed = True

        def commit() -> None:
            field = {"name": "id", "type": "long", "nullable": True, "metadata": {}}
            try:
                self._commit_files(str(folder / "table"), [], {"type": "struct", "fields": [field]}, None)
            except Exception:  # noqa: BLE001 - only a warm-up: the real commit reports its own errors
                pass

        thread = threading.Thread(target=commit, name="binlake-delta-warming", daemon=True)
        thread.start()
        try:
            yield
        finally:
            thread.join()
            shutil.rmtree(folder, ignore_errors=True)

    def exists(self, table_path: str) -> bool:
        from deltalake import DeltaTable as RustTable

        if RustTable.is_deltatable(str(table_path)):  # no JVM call (a log delta-rs can not read: delta-spark says)
            return True
        from delta.tables import DeltaTable

        return DeltaTable.isDeltaTable(self._spark, str(table_path))

    def version(self, table_path: str) -> int:
        try:  # the log's latest version through delta-rs: no Spark job
            from deltalake import DeltaTable as RustTable

            return RustTable(str(table_path)).version()
        except Exception:  # noqa: BLE001 - absent, or a log delta-rs can not read: delta-spark says
            return self._table(table_path).history(1).first()["version"]

    def scan(self, spark: SparkSession, table_path: str, above: Mapping[str, int] | None = None) -> DataFrame:
        """A plain table (no column mapping, no deletion vectors in use) as Spark reads its Parquet files,
        listed by delta-rs on the driver: delta-spark would replay its log with Spark jobs first, seconds a
        table on a fresh JVM. Any other table, or a log delta-rs can not read, through :meth:`read`."""
        from deltalake import DeltaTable as RustTable
        from deltalake.exceptions import DeltaError

        from binlake.lake.delta.rust import files_frame
        from binlake.lake.errors import UnsupportedTableFeatureError

        try:
            return files_frame(spark, RustTable(str(table_path)), str(table_path), above)
        except (DeltaError, UnsupportedTableFeatureError):
            return self.read(spark, table_path)

    def read(self, spark: SparkSession, table_path: str, version: int | None = None) -> DataFrame:
        reader = spark.read.format("delta")
        if version is not None:
            reader = reader.option("versionAsOf", version)
        return reader.load(str(table_path))

    def read_rows(
        self, spark: SparkSession | None, table_path: str, columns: Sequence[str], equal: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        rows = _driver_rows(table_path, columns, equal)
        if rows is not None:
            return rows
        if not self.exists(table_path):
            return []
        from pyspark.sql import functions as F

        df = self.read(self._spark, table_path)
        for name, value in (equal or {}).items():
            col = F.col(quote_spark(name))
            df = df.filter(col.isin(*value) if isinstance(value, tuple) else col == F.lit(value))
        return [r.asDict() for r in df.select(*[quote_spark(c) for c in columns]).collect()]

    def delete(
        self, table_path: str, equal: dict[str, Any] | None = None, at_most: tuple[str, int] | None = None
    ) -> int:
        if not self.exists(table_path):
            return 0
        cond = _condition(equal, at_most)
        table = self._table(table_path)
        before = self.version(table_path)
        table.delete(cond)
        if self.version(table_path) == before:
            return 0
        crash_point(COMMIT_POINT)
        metrics = table.history(1).first()["operationMetrics"] or {}
        return int(metrics.get("numDeletedRows", 0))

    def count(
        self, table_path: str, equal: dict[str, Any] | None = None, at_most: tuple[str, int] | None = None
    ) -> int:
        if not self.exists(table_path):
            return 0
        cond = _condition(equal, at_most)
        rows = self.read(self._spark, table_path)
        return (rows if cond is None else rows.where(cond)).count()

    def frame(self, spark: SparkSession | None, table: Any) -> DataFrame:
        return self._spark.createDataFrame(table)

    # --- primitives -----------------------------------------------------------------------------------------
    def _table(self, table_path: str) -> DeltaTable:
        from delta.tables import DeltaTable

        if not self.exists(table_path):
            raise DeltaTableNotFoundError(f"no Delta table at {table_path} (no _delta_log there)")
        return DeltaTable.forPath(self._spark, str(table_path))

    def _data(self, df: DataFrame) -> DataFrame:
        return df

    def _columns(self, data: DataFrame) -> list[str]:
        return data.columns

    def _count(self, data: DataFrame) -> int:
        return data.count()

    def _written(self, table_path: str, data: DataFrame) -> tuple[int, int]:
        """The version and the rows the write's commit recorded (its ``numOutputRows``): counting ``data`` again
        would compute it a second time (a first load of silver: the whole fold's output). Read from the log's
        last commit by delta-rs (delta-spark's history is a Spark job), else by delta-spark."""
        from deltalake import DeltaTable as RustTable
        from deltalake.exceptions import DeltaError

        try:
            commit = RustTable(str(table_path)).history(1)[0]
        except (DeltaError, IndexError):
            commit = self._table(table_path).history(1).first().asDict()
        rows = (commit.get("operationMetrics") or {}).get("numOutputRows")
        return commit["version"], int(rows) if rows is not None else self._count(data)

    def _check_unique(self, table_path: str, data: DataFrame, keys: Sequence[str]) -> None:
        row = data.groupBy(*[quote_spark(k) for k in keys]).count().where("count > 1").limit(1).collect()
        if row:
            raise duplicate_key_error(table_path, keys, list(row[0])[:-1], row[0]["count"])

    def _without_deletes(self, data: DataFrame, spec: MergeSpec) -> DataFrame:
        from pyspark.sql import functions as F

        return data.where(~F.col(quote_spark(spec.op_col)).eqNullSafe(spec.delete_op))

    def _schema_json(self, table_path: str) -> dict:
        return self._table(table_path).toDF().schema.jsonValue()

    def _data_schema_json(self, data: DataFrame) -> dict:
        return data.schema.jsonValue()

    def _set_properties(self, table_path: str, properties: Mapping[str, str]) -> None:
        pairs = ", ".join(f"'{k}' = '{v}'" for k, v in properties.items())  # (binlake's own keys and values)
        self._spark.sql(f"ALTER TABLE delta.{quote_spark(str(table_path))} SET TBLPROPERTIES ({pairs})")

    def _add_fields(self, table_path: str, fields: list[dict]) -> None:
        from pyspark.sql.types import StructType

        if _needs_column_mapping([f["name"] for f in fields]):
            self._map_columns_by_name(table_path)
        self.enable_type_features(table_path, [f["type"] for f in fields])
        widened = StructType.fromJson({"type": "struct", "fields": self._schema_json(table_path)["fields"] + fields})
        (
            self._spark.createDataFrame([], widened)
            .write.format("delta")
            .mode("append")
            .option("mergeSchema", "true")
            .save(str(table_path))
        )

    def _write(
        self,
        table_path: str,
        data: DataFrame,
        mode: Literal["append", "overwrite"],
        *,
        where: str | None = None,
        partition_by: tuple[str, ...] = (),
        properties: Mapping[str, str] | None = None,
    ) -> None:
        writer = data.write.format("delta").mode(mode)
        if where is not None:
            writer = writer.option("replaceWhere", where)
        elif mode == "overwrite":
            writer = writer.option("overwriteSchema", "true")
        creates = not self.exists(table_path) or (mode == "overwrite" and where is None)
        if partition_by and creates:
            writer = writer.partitionBy(*partition_by)
        if creates:  # delta-spark makes a creating write's delta.* options the table's properties
            writer = writer.options(**(properties or {}))
        if _needs_column_mapping(data.columns):
            if self.exists(table_path):
                self._map_columns_by_name(table_path)
            else:
                writer = writer.option(COLUMN_MAPPING, "name")
        writer.save(str(table_path))

    def _commit_files(
        self, table_path: str, files: Sequence[DataFile], schema: dict | None, properties: dict | None
    ) -> None:
        """One delta-spark transaction (``DeltaLog.startTransaction``, ``commit``: its conflict checks and
        protocol rules) whose actions are the files' ``add``s, and for a new table its ``metaData``."""
        jvm = self._spark._jvm
        delta = jvm.org.apache.spark.sql.delta
        scala = jvm.scala.jdk.javaapi.CollectionConverters
        txn = delta.DeltaLog.forTable(self._spark._jsparkSession, str(table_path)).startTransaction()
        if schema is not None:
            metadata = {
                "id": str(uuid.uuid4()),
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(schema),
                "partitionColumns": [],
                "configuration": properties or {},
                "createdTime": int(time.time() * 1000),
            }
            txn.updateMetadataForNewTable(delta.actions.Action.fromJson(json.dumps({"metaData": metadata})))
        actions = jvm.java.util.ArrayList()
        for f in files:
            actions.add(delta.actions.Action.fromJson(json.dumps({"add": f.add_action()})))
        none = getattr(jvm.scala, "None$").__getattr__("MODULE$")
        no_partitions = jvm.scala.Some(scala.asScala(jvm.java.util.ArrayList()).toSeq())
        append = getattr(delta, "DeltaOperations$Write")(
            jvm.org.apache.spark.sql.SaveMode.Append, no_partitions, *[none] * 7
        )
        txn.commit(scala.asScala(actions).toSeq(), append)

    def _map_columns_by_name(self, table_path: str) -> None:
        """Turn on Delta column mapping (name mode) unless the table has it: delta-spark accepts column names
        with spaces or ``,;{}()=`` only then (delta-rs writes them without it)."""
        if self._table(table_path).detail().first()["properties"].get(COLUMN_MAPPING, "none") == "none":
            self._spark.sql(
                f"ALTER TABLE delta.{quote_spark(str(table_path))} SET TBLPROPERTIES ('{COLUMN_MAPPING}' = 'name')"
            )

    def _execute_merge(self, table_path: str, data: DataFrame, spec: MergeSpec) -> tuple[int, int, int]:
        clauses = merge_clauses(spec, data.columns, quote_spark)
        assignments = dict(clauses.assignments)
        table = self._table(table_path)
        if not spec.effective and not _changes_anything(table.toDF(), data, clauses):
            return 0, 0, 0  # like delta-rs: no commit (delta-spark would commit an empty version)
        large = (table_rows(table_path) or 0) >= KEY_RANGE_MIN_ROWS
        on = _with_key_ranges(clauses.on, data, spec) if large else clauses.on
        merger = table.alias(TARGET).merge(data.alias(SOURCE), on)
        if clauses.delete_when is not None:
            merger = merger.whenMatchedDelete(condition=clauses.delete_when)
        merger = merger.whenMatchedUpdate(condition=clauses.update_when, set=assignments)
        merger = merger.whenNotMatchedInsert(condition=clauses.insert_when, values=assignments)
        metrics = merger.execute().first()
        return metrics["num_inserted_rows"], metrics["num_updated_rows"], metrics["num_deleted_rows"]

    def compact(self, table_path: str) -> tuple[int, int]:
        metrics = self._table(table_path).optimize().executeCompaction().first()["metrics"]
        return int(metrics["numFilesRemoved"]), int(metrics["numFilesAdded"])

    def vacuum(self, table_path: str, retention_hours: float, *, dry_run: bool = False) -> list[str]:
        self._table(table_path)  # DeltaTableNotFoundError when absent
        target = f"delta.{quote_spark(str(table_path))} RETAIN {float(retention_hours)} HOURS"
        conf = self._spark.conf
        listing = conf.get(LISTING_PARALLELISM, None)
        conf.set(RETENTION_CHECK, "false")  # maintain.check_retention decides what is safe
        conf.set(LISTING_PARALLELISM, str(VACUUM_LISTING_TASKS))  # Spark's default is 10000 listing tasks
        try:
            files = [r[0] for r in self._spark.sql(f"VACUUM {target} DRY RUN").collect()]
            if files and not dry_run:
                self._spark.sql(f"VACUUM {target}").collect()
        finally:
            conf.unset(RETENTION_CHECK)
            if listing is None:
                conf.unset(LISTING_PARALLELISM)
            else:
                conf.set(LISTING_PARALLELISM, listing)
        return files

    def checkpoint(self, table_path: str) -> int:
        self._table(table_path)
        jvm = self._spark._jvm
        log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(self._spark._jsparkSession, str(table_path))
        log.checkpoint()
        return self.version(table_path)

    def _rewrite(self, table_path: str, columns: list[RewriteColumn]) -> None:
        """One ``overwrite`` with ``overwriteSchema`` of the table's own snapshot, transformed (delta-spark
        reads the version it replaces; column-mapped tables stay mapped)."""
        from pyspark.sql import functions as F

        current = self.read(self._spark, table_path)
        partitions = self._table(table_path).detail().first()["partitionColumns"] or []
        out = []
        for col in columns:
            if col.source is None:
                expr = F.lit(col.value).cast(_spark_type(col.cast))
            else:
                expr = F.col(quote_spark(col.source))
                if col.cast is not None:
                    expr = expr.cast(_spark_type(col.cast))
            out.append(expr.alias(col.name))
        self._write(table_path, current.select(*out), "overwrite", partition_by=tuple(partitions))

    def forget(self, table_path: str) -> None:
        """delta-spark caches a DeltaLog per path: clear the cache so a table created again at the path is read
        from its own log."""
        self._spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()

    def enable_type_features(self, table_path: str, delta_types: Sequence[Any]) -> int:
        if "timestamp_ntz" not in [t for t in delta_types if isinstance(t, str)] or not self.exists(table_path):
            return 0
        detail = self._table(table_path).detail().first().asDict()
        if "timestampNtz" in (detail.get("tableFeatures") or ()) or any(
            k.lower() == "delta.feature.timestampntz" for k in detail.get("properties") or {}
        ):
            return 0
        self._spark.sql(
            f"ALTER TABLE delta.{quote_spark(str(table_path))} "
            "SET TBLPROPERTIES ('delta.feature.timestampNtz' = 'supported')"
        )
        crash_point(COMMIT_POINT)
        return 1


_PRESENT = "__binlake_target_row"
DRIVER_TYPES = frozenset({"string", "long", "integer", "short", "byte", "boolean", "double", "float", "timestamp"})


def _with_key_ranges(on: str, data: DataFrame, spec: MergeSpec) -> Any:
    """The MERGE condition with each integer key of the target bounded by the source's lowest and highest value of
    it (:func:`key_ranges`): the same rows match, but delta-spark skips the target files whose key statistics lie
    outside, so a day touching a corner of a large table does not read all of it."""
    from pyspark.sql import functions as F

    if spec.null_safe_keys:
        return on
    condition = F.expr(on)
    for k, (lo, hi) in key_ranges(data, spec.keys).items():
        condition = condition & F.expr(f"{TARGET}.{quote_spark(k)}").between(F.lit(lo), F.lit(hi))
    return condition


def _driver_rows(table_path: str, columns: Sequence[str], equal: dict[str, Any] | None) -> list[dict[str, Any]] | None:
    """``read_rows`` on the driver with delta-rs (:mod:`binlake.lake.driver_read`, column mapping and deletion
    vectors included): the few rows the jobs read from the meta tables and bronze without a Spark job and its
    Delta log replay. Strings, numbers, booleans and timestamps (naive UTC datetimes, as Spark's ``collect`` gives
    them under :func:`~binlake.lake.session.utc_python`) only: dates and binary come back as other Python types
    than Spark's; None: read with Spark (those types, other filter values, a table delta-rs can not read)."""
    from binlake.lake import driver_read

    try:
        table = driver_read.open_table(str(table_path))
        if table is None:
            return []
        types = {f.name: getattr(f.type, "type", None) for f in table.schema().fields}
        if any(not _driver_type(types.get(c)) for c in [*columns, *(equal or {})]):
            return None
        where = None
        for name, value in (equal or {}).items():
            values = list(value) if isinstance(value, tuple) else [value]
            if all(isinstance(v, str) for v in values):
                field = driver_read.text(name)
            elif all(isinstance(v, int) for v in values):
                field = driver_read.field(name)
            else:
                return None
            term = field.isin(values) if isinstance(value, tuple) else field == value
            where = term if where is None else where & term
        return [row for batch in driver_read.batches(table, columns, where) for row in _naive_utc(batch).to_pylist()]
    except Exception:  # noqa: BLE001 - delta-rs can not read it: Spark does
        return None


def _naive_utc(batch: Any) -> Any:
    """The record batch with its UTC timestamp columns as timestamps without a zone (the same instants)."""
    import pyarrow as pa

    columns = [
        c.cast(pa.timestamp(c.type.unit)) if pa.types.is_timestamp(c.type) and c.type.tz else c for c in batch.columns
    ]
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)


def _driver_type(name: Any) -> bool:
    return isinstance(name, str) and (name in DRIVER_TYPES or name.startswith("decimal"))


def _needs_column_mapping(names: Sequence[str]) -> bool:
    return any(NEEDS_MAPPING.intersection(name) for name in names)


def _changes_anything(target: DataFrame, data: DataFrame, clauses: MergeClauses) -> bool:
    """Whether the MERGE would delete, update or insert a row: the clauses evaluated over the source joined to
    the target (the first matching clause wins, as in the MERGE itself)."""
    from pyspark.sql import functions as F

    joined = data.alias(SOURCE).join(target.withColumn(_PRESENT, F.lit(True)).alias(TARGET), F.expr(clauses.on), "left")
    matched_changes = F.expr(clauses.update_when)
    if clauses.delete_when is not None:
        matched_changes = F.expr(clauses.delete_when) | matched_changes
    inserts = F.lit(True) if clauses.insert_when is None else F.expr(clauses.insert_when)
    acts = F.when(F.col(f"{TARGET}.{_PRESENT}").isNull(), inserts).otherwise(matched_changes)
    return not joined.where(F.coalesce(acts, F.lit(False))).isEmpty()


def _spark_type(delta_type: Any) -> Any:
    """A Spark DataType from a Delta schema type (JSON string or dict)."""
    from pyspark.sql.types import StructType

    field = {"name": "c", "type": delta_type, "nullable": True, "metadata": {}}
    return StructType.fromJson({"type": "struct", "fields": [field]}).fields[0].dataType
