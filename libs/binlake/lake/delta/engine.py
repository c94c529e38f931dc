"""The Delta engine interface, the write flows both engines share, and the engine chooser.

An engine implements a handful of primitives (``_data``, ``_write``, ``_execute_merge``, ...); the flows that
give writes their meaning (create on first write, widen the table before writing new columns, refuse a MERGE
source with two changes for one key) live once, here, so the two engines can not drift apart.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Literal, Mapping, Sequence, get_args

from binlake.lake.crash import COMMIT_POINT, crash_point
from binlake.lake.delta.plan import MergeResult, MergeSpec, schema_changes
from binlake.lake.errors import DeltaEngineUnavailableError, LakeError
from binlake.vocabulary import DELETE_OP, OP_COL, SEQ_COL

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructField, StructType

    from binlake.lake.bronze_files import DataFile

DELTA_TABLE_CLASS = "io.delta.tables.DeltaTable"
DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
EngineName = Literal["auto", "rust", "spark"]
ENGINE_NAMES: tuple[str, ...] = get_args(EngineName)  # the --engine choices of every command and job


class DeltaEngine(ABC):
    """Writes and reads Delta tables by path. Every write returns the table version it committed.

    ``append``/``overwrite``/``merge`` take a Spark DataFrame (the rust engine also takes an Arrow table);
    ``read`` returns a Spark DataFrame with the table's exact types.
    """

    name: str
    staging_root: str = ""  # where the embedded engine stages Spark output (LakeLayout.staging)

    # --- the interface -------------------------------------------------------------------------------------
    @abstractmethod
    def exists(self, table_path: str) -> bool: ...

    @abstractmethod
    def version(self, table_path: str) -> int:
        """The table's latest version; DeltaTableNotFoundError when there is no table."""

    @abstractmethod
    def read(self, spark: SparkSession, table_path: str, version: int | None = None) -> DataFrame: ...

    def scan(self, spark: SparkSession, table_path: str, above: Mapping[str, int] | None = None) -> DataFrame:
        """The table's latest rows, as :meth:`read` gives them, read the quickest way: the spark engine lists a
        plain table's files with delta-rs. ``above`` (integer column -> bound) may leave out files whose
        statistics put every value of the column at or below the bound: the caller filters the rows."""
        return self.read(spark, table_path)

    @abstractmethod
    def read_rows(
        self, spark: SparkSession | None, table_path: str, columns: Sequence[str], equal: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """Selected columns of the rows whose columns equal ``equal`` (a tuple value: equal one of its items), on
        the driver: for small or well filtered tables only (checkpoints, the registry, a source's file_end rows).
        No table: no rows."""

    @abstractmethod
    def delete(
        self, table_path: str, equal: dict[str, Any] | None = None, at_most: tuple[str, int] | None = None
    ) -> int:
        """Delete the rows whose columns equal ``equal`` and (``at_most=(column, n)``) whose column is at most
        ``n`` (all rows without either); returns how many."""

    @abstractmethod
    def count(
        self, table_path: str, equal: dict[str, Any] | None = None, at_most: tuple[str, int] | None = None
    ) -> int:
        """How many rows :meth:`delete` with the same arguments would delete (no table: 0)."""

    def frame(self, spark: SparkSession | None, table: Any) -> Any:
        """A small Arrow table as this engine's write input (a DataFrame for spark; the table itself here)."""
        return table

    def append(
        self, table_path: str, df: Any, *, partition_by: Sequence[str] = (), properties: Mapping[str, str] | None = None
    ) -> int:
        """Append rows; creates the table (partitioned by ``partition_by``, with the table ``properties``) if
        absent; adds new columns, and the ``properties`` a table created without them lacks (one commit, once)."""
        data = self._data(df)
        try:
            if self.exists(table_path):
                self._widen(table_path, data)
                self._add_properties(table_path, properties or {})
                self._write(table_path, data, "append")
            else:
                self._write(table_path, data, "append", partition_by=tuple(partition_by), properties=properties)
            crash_point(COMMIT_POINT)
        finally:
            self._release(data)
        return self.version(table_path)

    def append_files(
        self, table_path: str, files: Sequence[DataFile], schema: dict, *, properties: Mapping[str, str] | None = None
    ) -> int:
        """Commit Parquet files already written in the table's folder (by the executors:
        :mod:`binlake.lake.bronze_files`) as one append. Creates the table (``schema``, a Delta/Spark JSON struct,
        and ``properties``) when absent; else adds the columns of ``schema`` and the ``properties`` it lacks first.
        The files hold ``schema``'s columns by name, so a table with column mapping is refused."""
        if self.exists(table_path):
            _check_unmapped(table_path)  # before any commit: a refused append changes nothing
            self._widen_to(table_path, schema["fields"])
            self._add_properties(table_path, properties or {})
            self._commit_files(table_path, files, None, None)
        else:
            self._commit_files(table_path, files, schema, dict(properties or {}))
        crash_point(COMMIT_POINT)
        return self.version(table_path)

    def overwrite(self, table_path: str, df: Any, *, where: str | None = None, partition_by: Sequence[str] = ()) -> int:
        """Replace the table's rows (and schema) with ``df``; with ``where``, only the rows matching that
        predicate (the data must match it too), keeping and widening the schema."""
        data = self._data(df)
        try:
            if where is not None and self.exists(table_path):
                self._widen(table_path, data)
            self._write(table_path, data, "overwrite", where=where, partition_by=tuple(partition_by))
            crash_point(COMMIT_POINT)
        finally:
            self._release(data)
        return self.version(table_path)

    def merge(
        self,
        table_path: str,
        source_df: Any,
        keys: Sequence[str],
        seq_col: str = SEQ_COL,
        *,
        op_col: str | None = OP_COL,
        delete_op: str = DELETE_OP,
        keep_tombstones: bool = False,
        null_safe_keys: bool = False,
        effective: bool = False,
    ) -> MergeResult:
        """The CDC MERGE of one batch (one change per key) into the table; see MergeSpec for the clauses.

        Creates the table from the batch's non-delete rows when absent; adds the batch's new columns first.
        ``effective`` skips the key-uniqueness check and the no-op check (see MergeSpec).
        """
        spec = MergeSpec(tuple(keys), seq_col, op_col, delete_op, keep_tombstones, null_safe_keys, effective)
        data = self._data(source_df)
        try:
            spec.check_columns(self._columns(data))
            if not effective:
                self._check_unique(table_path, data, spec.keys)
            if not self.exists(table_path):
                live = data if keep_tombstones or op_col is None else self._without_deletes(data, spec)
                self._write(table_path, live, "append")
                crash_point(COMMIT_POINT)
                return MergeResult(*self._written(table_path, live), 0, 0)
            self._widen(table_path, data)
            inserted, updated, deleted = self._execute_merge(table_path, data, spec)
            crash_point(COMMIT_POINT)
        finally:
            self._release(data)
        return MergeResult(self.version(table_path), inserted, updated, deleted)

    def column_names(self, table_path: str) -> list[str]:
        """The table's column names, from its schema (no data read)."""
        return [f["name"] for f in self._schema_json(table_path)["fields"]]

    def add_columns(self, table_path: str, fields: StructType | Sequence[StructField]) -> int:
        """Widen the table by the fields it lacks (added as nullable); existing fields must keep their type."""
        wanted = [f.jsonValue() for f in fields]
        added = schema_changes(table_path, self._schema_json(table_path), wanted)
        if added:
            self._add_fields(table_path, added)
            crash_point(COMMIT_POINT)
        return self.version(table_path)

    # --- shared steps ---------------------------------------------------------------------------------------
    def _widen(self, table_path: str, data: Any) -> None:
        self._widen_to(table_path, self._data_schema_json(data)["fields"])

    def _widen_to(self, table_path: str, fields: list[dict]) -> None:
        added = schema_changes(table_path, self._schema_json(table_path), fields)
        if added:
            self._add_fields(table_path, added)
            crash_point(COMMIT_POINT)

    def _written(self, table_path: str, data: Any) -> tuple[int, int]:
        """(the table's version, rows written) after ``data`` was written to it as its first version."""
        return self.version(table_path), self._count(data)

    # --- primitives each engine implements ----------------------------------------------------------------
    @abstractmethod
    def _data(self, df: Any) -> Any:
        """The engine's working form of a DataFrame."""

    def _release(self, data: Any) -> None:  # noqa: B027  (a hook: most engines stage nothing)
        """Free what ``_data`` made for one write (staged files)."""

    @abstractmethod
    def _columns(self, data: Any) -> list[str]: ...

    @abstractmethod
    def _count(self, data: Any) -> int: ...

    @abstractmethod
    def _check_unique(self, table_path: str, data: Any, keys: Sequence[str]) -> None:
        """Raise plan.duplicate_key_error for a key that occurs more than once."""

    @abstractmethod
    def _without_deletes(self, data: Any, spec: MergeSpec) -> Any: ...

    @abstractmethod
    def _schema_json(self, table_path: str) -> dict:
        """The table's schema as Delta/Spark JSON."""

    @abstractmethod
    def _data_schema_json(self, data: Any) -> dict: ...

    @abstractmethod
    def _add_fields(self, table_path: str, fields: list[dict]) -> None:
        """Add nullable columns (Delta JSON fields) in one commit."""

    @abstractmethod
    def _write(
        self,
        table_path: str,
        data: Any,
        mode: Literal["append", "overwrite"],
        *,
        where: str | None = None,
        partition_by: tuple[str, ...] = (),
        properties: Mapping[str, str] | None = None,
    ) -> None:
        """Write ``data``; ``properties``: the table properties of a table this write creates."""

    def _add_properties(self, table_path: str, properties: Mapping[str, str]) -> None:
        """Set the ``properties`` the table does not hold with these values (its configuration read with
        delta-rs; a table delta-rs can not read is left as it is)."""
        from binlake.lake import driver_read

        if not properties:
            return
        try:
            table = driver_read.open_table(str(table_path))
            held = table.metadata().configuration if table is not None else properties
        except Exception:  # noqa: BLE001 - e.g. a table feature delta-rs lacks: the table keeps its properties
            return
        missing = {k: v for k, v in properties.items() if held.get(k) != v}
        if missing:
            self._set_properties(table_path, missing)
            crash_point(COMMIT_POINT)

    @abstractmethod
    def _commit_files(
        self, table_path: str, files: Sequence[DataFile], schema: dict | None, properties: dict | None
    ) -> None:
        """Commit ``files`` (in the table's folder) as one append; ``schema`` and ``properties``: create the
        table with them in the same commit (None: the table exists)."""

    @abstractmethod
    def _set_properties(self, table_path: str, properties: Mapping[str, str]) -> None:
        """Set table properties (one commit)."""

    @abstractmethod
    def _execute_merge(self, table_path: str, data: Any, spec: MergeSpec) -> tuple[int, int, int]:
        """Run the MERGE; return rows (inserted, updated, deleted)."""

    # --- maintenance (binlake.lake.maintain) ----------------------------------------------------------------
    def data_files(self, table_path: str) -> list[str]:
        """The data files the table's latest version references (read from the Delta log with delta-rs, the
        same for both engines)."""
        from deltalake import DeltaTable

        return list(DeltaTable(str(table_path)).file_uris())

    @abstractmethod
    def compact(self, table_path: str) -> tuple[int, int]:
        """Rewrite the table's small files into fewer large ones (no data change); returns (files removed,
        files added)."""

    @abstractmethod
    def vacuum(self, table_path: str, retention_hours: float, *, dry_run: bool = False) -> list[str]:
        """Delete the files no table version younger than ``retention_hours`` references; returns them (with
        ``dry_run``, only lists them). The engine's own retention check is off: callers check the retention."""

    @abstractmethod
    def checkpoint(self, table_path: str) -> int:
        """Write a Delta log checkpoint of the latest version; returns that version."""

    # --- DDL at its binlog position (binlake.lake.ddl_apply) -----------------------------------------------
    def table_schema(self, table_path: str) -> dict:
        """The table's schema as Delta/Spark JSON (``{"type": "struct", "fields": [...]}``)."""
        return self._schema_json(table_path)

    def rewrite(self, table_path: str, columns: Sequence[RewriteColumn]) -> int:
        """Rewrite every row into ``columns`` (each a kept, renamed or cast column, or a constant) in ONE
        overwrite commit that also replaces the schema; readers see the old table or the new one. Returns the
        version. The table's partitioning is kept."""
        self._rewrite(table_path, list(columns))
        crash_point(COMMIT_POINT)
        return self.version(table_path)

    @contextmanager
    def warming(self, folder: Path) -> Iterator[None]:
        """While the body runs, the engine readies its first commit, working under ``folder`` (removed after):
        nothing by default."""
        yield

    def forget(self, table_path: str) -> None:  # noqa: B027  (a hook: most engines cache nothing)
        """Drop what the engine caches about the table at ``table_path`` (its folder was moved or removed)."""

    def enable_type_features(self, table_path: str, delta_types: Sequence[Any]) -> int:
        """Turn on the table features that columns of these Delta types need before they are added (delta-spark:
        ``timestampNtz`` must be enabled by hand on an existing table); returns the commits made (0 or 1)."""
        return 0

    def _rewrite(self, table_path: str, columns: list[RewriteColumn]) -> None:
        raise NotImplementedError(f"the {self.name} Delta engine can not rewrite a table")


def _check_unmapped(table_path: str) -> None:
    """Refuse files to commit into a table with Delta column mapping (they name columns as the schema does)."""
    from binlake.lake import driver_read

    table = driver_read.open_table(str(table_path))
    mode = table.metadata().configuration.get("delta.columnMapping.mode", "none") if table is not None else "none"
    if mode != "none":
        raise LakeError(
            f"{table_path} uses Delta column mapping ({mode}), which binlake never turns on for this table: "
            f"its files can not be added as written; restore the table's mapping mode 'none' or move it aside"
        )


def delta_spark_artifact() -> str:
    """The Maven coordinates of the delta-spark jar matching the installed pyspark and delta-spark (jars/pom.xml).

    pip's delta-spark 4.4.1 has no jar release on Maven Central; its Python code is 4.4.0's, so it runs 4.4.0's jars.
    """
    from importlib.metadata import version

    spark_minor = ".".join(version("pyspark").split(".")[:2])
    delta = {"4.4.1": "4.4.0"}.get(version("delta-spark"), version("delta-spark"))
    return f"io.delta:delta-spark_{spark_minor}_2.13:{delta}"


def spark_engine_unavailable_reason(spark: SparkSession) -> str | None:
    """Why the spark engine can not run in this session, or None when it can."""
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        return "the spark Delta engine needs a classic (py4j) Spark session, not Spark Connect"
    from py4j.protocol import Py4JJavaError

    try:
        jvm.java.lang.Class.forName(
            DELTA_TABLE_CLASS, False, jvm.java.lang.Thread.currentThread().getContextClassLoader()
        )
    except Py4JJavaError:
        return (
            f"delta-spark's jars are absent from the Spark classpath ({DELTA_TABLE_CLASS} is not loadable): "
            f"run 'bash scripts/setup.sh' (it fetches {delta_spark_artifact()} and the jars it needs into .jars), "
            "or list the jars in BINLAKE_DELTA_JARS"
        )
    if DELTA_EXTENSION not in (spark.conf.get("spark.sql.extensions", "") or ""):
        return f"delta-spark's jars are loaded but spark.sql.extensions lacks {DELTA_EXTENSION}"
    return None


def engine_for(spark: SparkSession | None, name: EngineName | str = "auto", *, staging_root: str = "") -> DeltaEngine:
    """The Delta engine to use: ``spark`` when delta-spark can run in ``spark``'s JVM, else ``rust``.

    ``name`` (default from $BINLAKE_DELTA_ENGINE, else "auto") forces one; asking for ``spark`` where it can not
    run raises DeltaEngineUnavailableError with the reason. ``staging_root``: where the embedded engine stages
    Spark output (``LakeLayout.staging``; empty: the system's temporary folder).
    """
    engine = _choose(spark, name)
    engine.staging_root = staging_root
    return engine


def _choose(spark: SparkSession | None, name: EngineName | str) -> DeltaEngine:
    if name == "auto":
        name = os.environ.get("BINLAKE_DELTA_ENGINE", "auto")
    if name not in ENGINE_NAMES:
        raise LakeError(f"unknown Delta engine {name!r}: choose {', '.join(ENGINE_NAMES[:-1])} or {ENGINE_NAMES[-1]}")
    if name == "rust":
        from binlake.lake.delta.rust import RustEngine

        return RustEngine()
    reason = "no Spark session" if spark is None else spark_engine_unavailable_reason(spark)
    if reason is None:
        from binlake.lake.delta.spark import SparkEngine

        return SparkEngine(spark)
    if name == "spark":
        raise DeltaEngineUnavailableError(f"Delta engine 'spark' can not run: {reason}; choose the rust engine")
    from binlake.lake.delta.rust import RustEngine

    return RustEngine()


@dataclass(frozen=True)
class RewriteColumn:
    """One column of ``DeltaEngine.rewrite``'s output: the table's column ``source`` under ``name`` (cast to
    ``cast`` when given), or, with ``source`` None, the constant ``value`` of type ``cast`` in every row.
    ``cast`` is a Delta schema type (Delta/Spark JSON: ``"long"``, ``"decimal(12,2)"``, a dict for nested types)."""

    name: str
    source: str | None
    cast: Any = None
    value: Any = None
