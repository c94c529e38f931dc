"""Reading the lake's Delta tables on the driver with delta-rs (``deltalake``) and pyarrow: no Spark, no JVM.

A plain table (no column mapping, no deletion vectors: what both engines write by default) is read as delta-rs's
pyarrow dataset of its files (column pruning, predicate pushdown). A table the spark engine wrote with column
mapping (name mode: Parquet columns carry physical names) or with deletion vectors is read through delta-rs's
own query engine (``QueryBuilder``, DataFusion), which maps the names and drops the deleted rows: the pyarrow
dataset would give NULL columns or rows that are gone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Optional, Sequence

if TYPE_CHECKING:
    import pyarrow as pa
    from deltalake import DeltaTable


def open_table(path: str) -> Optional["DeltaTable"]:
    """The Delta table at ``path``; None when there is none."""
    from deltalake import DeltaTable

    return DeltaTable(path) if DeltaTable.is_deltatable(path) else None


def table_rows(path: str) -> Optional[int]:
    """A Delta table's rows by its log's file statistics (no data read; rows hidden by deletion vectors count too);
    None when a file has no statistics or delta-rs can not read the log (a table feature it lacks)."""
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaError

    try:
        counts = DeltaTable(path).get_add_actions(flatten=True).column("num_records").to_pylist()
    except DeltaError:
        return None
    return None if any(c is None for c in counts) else sum(counts)


def columns_of(table: "DeltaTable") -> list[str]:
    return [f.name for f in table.schema().fields]


def is_plain(table: "DeltaTable") -> bool:
    """Whether the table's Parquet files alone give its rows under its column names."""
    mode = table.metadata().configuration.get("delta.columnMapping.mode") or "none"
    features = set(table.protocol().reader_features or ()) | set(table.protocol().writer_features or ())
    return mode == "none" and not {"columnMapping", "deletionVectors"} & features


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def batches(table: "DeltaTable", columns: Sequence[str], where: Any = None) -> Iterator["pa.RecordBatch"]:
    """The table's rows as record batches of ``columns``, filtered by the pyarrow expression ``where``; string
    columns as plain strings (delta-rs may hand them over as string views)."""
    import pyarrow as pa

    if is_plain(table):
        for batch in table.to_pyarrow_dataset().to_batches(columns=list(columns), filter=where):
            yield _plain_strings(batch)
        return
    from deltalake import QueryBuilder

    sql = f"SELECT {', '.join(_quote(c) for c in columns)} FROM t"
    result = pa.table(QueryBuilder().register("t", table).execute(sql).read_all())
    result = result.cast(pa.schema([f.with_type(_plain_type(f.type)) for f in result.schema]))
    yield from (result.filter(where) if where is not None else result).to_batches()


def _plain_type(t: "pa.DataType") -> "pa.DataType":
    import pyarrow as pa

    return pa.string() if pa.types.is_string_view(t) or pa.types.is_large_string(t) else t


def _plain_strings(batch: "pa.RecordBatch") -> "pa.RecordBatch":
    import pyarrow as pa

    arrays = [a.cast(_plain_type(a.type)) for a in batch.columns]
    return pa.RecordBatch.from_arrays(arrays, names=list(batch.schema.names))


def read(path: str, columns: Sequence[str], where: Any = None) -> list[dict[str, Any]]:
    """Rows (as dicts) of the table at ``path`` ([] when there is none); ``where`` a pyarrow expression, or a
    function that makes one (called only when the table is there: pyarrow's dataset module takes a third of a
    second to import, before a new lake's first Spark start)."""
    table = open_table(path)
    if table is None:
        return []
    where = where() if callable(where) else where
    return [row for b in batches(table, columns, where) for row in b.to_pylist()]


def field(name: str) -> Any:
    """A pyarrow dataset field."""
    import pyarrow.dataset as ds

    return ds.field(name)


def text(name: str) -> Any:
    """A pyarrow dataset field compared as a plain string (see :func:`batches`)."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    return ds.field(name).cast(pa.string())


class DriverRows:
    """``read_rows`` of a Delta engine (text columns equal to a value, or in a tuple of values), through this
    module: what ``ingested_files``, ``read_checkpoint`` and ``seams`` read, without Spark."""

    def read_rows(self, spark: Any, table_path: str, columns: Any, equal: Optional[dict] = None) -> list[dict]:
        def where() -> Any:
            out = None
            for name, value in (equal or {}).items():
                term = text(name).isin(list(value)) if isinstance(value, tuple) else text(name) == value
                out = term if out is None else out & term
            return out

        return read(table_path, columns, where)
