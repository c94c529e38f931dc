"""What both Delta engines share, as plain data: the CDC MERGE's spec and clauses, schema widening, results.

Schemas are handled in Delta's JSON schema form (``{"type": "struct", "fields": [...]}``), which is also
Spark's ``StructType.jsonValue()``: one comparison serves a Spark DataFrame, an Arrow table (through
``deltalake.Schema``) and a table's ``_delta_log`` alike. Nothing here imports pyspark or deltalake.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

from binlake.lake.errors import MergeSourceError, SchemaConflictError
from binlake.vocabulary import DELETE_OP, OP_COL, SEQ_COL

TARGET = "t"  # MERGE aliases, used in every clause below
SOURCE = "s"

Quote = Callable[[str], str]


def quote_ansi(name: str) -> str:
    """An identifier for DataFusion SQL (delta-rs predicates): double quotes, case kept."""
    return '"' + name.replace('"', '""') + '"'


def quote_spark(name: str) -> str:
    """An identifier for Spark SQL (delta-spark conditions and assignments): backticks."""
    return "`" + name.replace("`", "``") + "`"


def sql_string(value: str) -> str:
    """A SQL string literal (both dialects)."""
    return "'" + value.replace("'", "''") + "'"


def sql_literal(value: Any) -> str:
    """A SQL literal of a string, integer or boolean (both dialects)."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return sql_string(value)
    raise TypeError(f"no SQL literal for {type(value).__name__}")


@dataclass(frozen=True, slots=True)
class MergeSpec:
    """How a batch of changes (already reduced to the last change per key) merges into a table.

    The clauses, in this order (the first matching clause wins in both engines):
    1. matched, ``op = delete_op`` and source seq newer than the target's: delete the row (or, with
       ``keep_tombstones``, keep it as a tombstone row carrying ``op = delete_op``);
    2. matched and source seq newer: update the source's columns (target-only columns keep their values);
    3. not matched and not a delete (tombstones: any op): insert.
    A target row whose seq is NULL counts as older than any change. Equal seq means "already applied", so
    merging the same batch again changes nothing. ``null_safe_keys`` matches NULL keys to NULL keys (tables
    without a primary key, keyed on all columns). ``effective``: the caller guarantees one source row per key,
    each of which changes the table (the apply job's folded batch), so the engines skip their checks.
    """

    keys: tuple[str, ...]
    seq_col: str = SEQ_COL
    op_col: str | None = OP_COL
    delete_op: str = DELETE_OP
    keep_tombstones: bool = False
    null_safe_keys: bool = False
    effective: bool = False

    def __post_init__(self) -> None:
        if not self.keys:
            raise MergeSourceError("MERGE needs at least one key column")
        if len(set(self.keys)) != len(self.keys):
            raise MergeSourceError(f"MERGE key columns repeat: {list(self.keys)}")

    def check_columns(self, columns: Sequence[str]) -> None:
        needed = [*self.keys, self.seq_col] + ([self.op_col] if self.op_col else [])
        missing = [c for c in needed if c not in columns]
        if missing:
            raise MergeSourceError(f"MERGE source lacks column(s) {missing}; it has {list(columns)}")


@dataclass(frozen=True, slots=True)
class MergeClauses:
    """The MERGE's SQL text for one engine's dialect (aliases TARGET and SOURCE)."""

    on: str
    delete_when: str | None  # None: no delete clause
    update_when: str
    insert_when: str | None  # None: insert every unmatched row
    assignments: tuple[tuple[str, str], ...]  # (target column, source expression), for update and insert


def merge_clauses(spec: MergeSpec, columns: Sequence[str], quote: Quote) -> MergeClauses:
    """Build the clauses of ``spec`` for a source with ``columns``, quoting identifiers with ``quote``."""

    def col(alias: str, name: str) -> str:
        return f"{alias}.{quote(name)}"

    equal = "IS NOT DISTINCT FROM" if spec.null_safe_keys else "="
    on = " AND ".join(f"({col(TARGET, k)} {equal} {col(SOURCE, k)})" for k in spec.keys)
    t_seq, s_seq = col(TARGET, spec.seq_col), col(SOURCE, spec.seq_col)
    newer = f"({t_seq} IS NULL OR {s_seq} > {t_seq})"
    delete_when = insert_when = None
    if spec.op_col and not spec.keep_tombstones:
        s_op = col(SOURCE, spec.op_col)
        delete_when = f"{s_op} = {sql_string(spec.delete_op)} AND {newer}"
        insert_when = f"{s_op} IS DISTINCT FROM {sql_string(spec.delete_op)}"
    assignments = tuple((quote(c), col(SOURCE, c)) for c in columns)
    return MergeClauses(on, delete_when, newer, insert_when, assignments)


@dataclass(frozen=True, slots=True)
class MergeResult:
    """What a MERGE did: the table version after it and the rows it inserted, updated and deleted."""

    version: int
    inserted: int
    updated: int
    deleted: int


def duplicate_key_error(
    table_path: str, keys: Sequence[str], key_values: Sequence[Any], count: int
) -> MergeSourceError:
    shown = ", ".join(f"{k}={v!r}" for k, v in zip(keys, key_values))
    return MergeSourceError(
        f"MERGE into {table_path}: the source holds {count} changes for key ({shown}); reduce the batch to the "
        "last change per key (by the binlog ordering key) before merging"
    )


def _type_shape(dtype: Any) -> Any:
    """A Delta/Spark JSON type without nullability and metadata, for comparing types."""
    if not isinstance(dtype, dict):
        return dtype
    kind = dtype.get("type")
    if kind == "struct":
        return ("struct", tuple((f["name"], _type_shape(f["type"])) for f in dtype["fields"]))
    if kind == "array":
        return ("array", _type_shape(dtype["elementType"]))
    if kind == "map":
        return ("map", _type_shape(dtype["keyType"]), _type_shape(dtype["valueType"]))
    return tuple(sorted((k, repr(v)) for k, v in dtype.items()))


def schema_changes(table_path: str, target: dict, source_fields: Iterable[dict]) -> list[dict]:
    """The source fields the target lacks (as nullable fields to add), after checking the shared ones agree.

    Raises SchemaConflictError when a column has another type in the source, or when a source column differs
    from a target column only in letter case (MySQL column names are case-insensitive; Delta's are not).
    """
    by_name = {f["name"]: f for f in target["fields"]}
    by_folded = {name.casefold(): name for name in by_name}
    added: list[dict] = []
    conflicts: list[str] = []
    for field in source_fields:
        name = field["name"]
        have = by_name.get(name)
        if have is None:
            other = by_folded.get(name.casefold())
            if other is not None:
                conflicts.append(f"{name!r} differs only in case from the table's {other!r}")
            else:
                added.append({**field, "nullable": True})
        elif _type_shape(have["type"]) != _type_shape(field["type"]):
            conflicts.append(
                f"{name!r} is {_type_text(have['type'])} in the table, {_type_text(field['type'])} in the data"
            )
    if conflicts:
        raise SchemaConflictError(
            f"schema conflict writing {table_path}: "
            + "; ".join(conflicts)
            + " (cast the data to the table's types, or rewrite the table with overwrite)"
        )
    return added


def _type_text(dtype: Any) -> str:
    return dtype if isinstance(dtype, str) else str(dtype.get("type", dtype))
