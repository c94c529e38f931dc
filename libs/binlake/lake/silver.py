"""``silver.<db>__<table>``: the current state of each source table, written by the CDC MERGE.

Columns: the table's columns (types from :mod:`binlake.pipeline.types`), then ``_binlake_seq`` (ordering key of
the last change applied), ``_binlake_op`` (insert/update/delete) and, for tables without a primary key,
``_binlake_count`` (how many identical rows the source holds). Deleted rows stay as tombstones
(``_binlake_op = 'delete'``) so that a late, older change can not resurrect them: read the live rows with
``WHERE _binlake_op <> 'delete'`` (see :func:`live_rows`). New columns (ALTER TABLE ... ADD COLUMN, seen in
TABLE_MAP) widen the table; rows written before have NULL there.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Iterable, Optional, Sequence

from binlake.lake.delta.plan import OP_COL, SEQ_COL
from binlake.pipeline.fold import RowState
from binlake.pipeline.types import from_silver, silver_type, to_silver

if TYPE_CHECKING:
    import pyarrow as pa

COUNT_COL = "_binlake_count"
COMMIT_TS_COL = "_binlake_commit_ts"
KEY_COL = "_binlake_key"


def silver_name(db: str, table: str) -> str:
    return f"{db}__{table}"


def data_columns(column_metas: Iterable[str]) -> list[tuple[str, str]]:
    """(name, Spark type) of a table's columns from the ``columns`` JSON of its bronze rows (every version in
    the batch): the newest layout's order, then columns only older layouts had."""
    out: dict[str, str] = {}
    versions = [json.loads(m) for m in column_metas if m]
    for metas in sorted(versions, key=len, reverse=True):
        for meta in metas:
            out.setdefault(meta[0], silver_type(meta))
    return list(out.items())


def table_columns(columns: Sequence[tuple[str, str]], has_pk: bool) -> list[tuple[str, str]]:
    return [*columns, (SEQ_COL, "bigint"), (OP_COL, "string")] + ([] if has_pk else [(COUNT_COL, "bigint")])


_ARROW = {"bigint": "int64", "long": "int64", "int": "int32", "string": "string", "binary": "binary",
          "double": "float64", "boolean": "bool"}


def arrow_type(kind: str) -> "pa.DataType":
    import pyarrow as pa

    if kind.startswith("decimal("):
        p, s = kind[8:-1].split(",")
        return pa.decimal128(int(p), int(s))
    if kind == "timestamp":
        return pa.timestamp("us", tz="UTC")
    return getattr(pa, _ARROW[kind])()


def to_arrow(columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[Any]]) -> "pa.Table":
    import pyarrow as pa

    schema = pa.schema([pa.field(n, arrow_type(k)) for n, k in columns])
    cols = list(zip(*rows)) if rows else [[] for _ in columns]
    return pa.Table.from_arrays([pa.array(list(c), type=f.type) for c, f in zip(cols, schema)], schema=schema)


def engine_input(engine: Any, table: "pa.Table") -> Any:
    """What ``engine`` takes as a write source: the Arrow table for the rust engine, a DataFrame for spark."""
    if engine.name == "rust":
        return table
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    assert session is not None, "the spark Delta engine runs inside a Spark session"
    return session.createDataFrame(table)


def read_rows(engine: Any, spark: Any, path: str, columns: Sequence[str],
              equal: Optional[dict[str, Any]] = None) -> list[dict[str, Any]]:
    """Selected columns of the rows of a (small, or well filtered) table whose columns equal ``equal``.

    With the rust engine this reads through delta-rs's Arrow dataset on the driver (column pruning and
    predicate pushdown, no Spark job: each Spark job costs about a second on a small local session); otherwise
    through the engine's Spark read."""
    if not engine.exists(path):
        return []
    if engine.name == "rust":
        from deltalake import DeltaTable

        expr = None
        for name, value in (equal or {}).items():
            term = _field(name, value) == value
            expr = term if expr is None else expr & term
        return DeltaTable(path).to_pyarrow_dataset().to_table(columns=list(columns), filter=expr).to_pylist()
    from pyspark.sql import functions as F

    df = engine.read(spark, path)
    for name, value in (equal or {}).items():
        df = df.filter(F.col(name) == value)
    return [r.asDict() for r in df.select(*columns).collect()]


def _field(name: str, value: Any) -> Any:
    """A dataset field, cast to plain strings for string comparisons (delta-rs may give ``string_view``)."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    return ds.field(name).cast(pa.string()) if isinstance(value, str) else ds.field(name)


def state_rows(columns: Sequence[tuple[str, str]], states: Iterable[RowState], has_pk: bool) -> list[tuple]:
    """Silver rows (tuples in ``table_columns`` order) of folded row states."""
    convert = [(name, to_silver(kind)) for name, kind in columns]
    out = []
    for st in states:
        v = st.values
        row = [conv(v.get(name)) for name, conv in convert]
        row += [st.seq, st.op] + ([] if has_pk else [st.count])
        out.append(tuple(row))
    return out


def base_state(row: dict[str, Any], converters: Sequence[tuple[str, Any]], has_pk: bool) -> RowState:
    """A silver row (as Spark returns it) back as a fold state in the JSON encoding."""
    values = {name: conv(row[name]) for name, conv in converters}
    return RowState(values, row[SEQ_COL] or 0, row[OP_COL] or "insert", 1 if has_pk else (row[COUNT_COL] or 0))


def silver_converters(schema_fields: Iterable[tuple[str, str]]) -> list[tuple[str, Any]]:
    return [(n, from_silver(k)) for n, k in schema_fields if not n.startswith("_binlake_")]


def live_rows(rows: Iterable[dict[str, Any]], *, expand_counts: bool = True) -> list[dict[str, Any]]:
    """The rows the source holds: tombstones dropped, rows of tables without a primary key repeated
    ``_binlake_count`` times, bookkeeping columns removed."""
    out = []
    for r in rows:
        if r.get(OP_COL) == "delete":
            continue
        n = r.get(COUNT_COL) or 1 if expand_counts and COUNT_COL in r else 1
        clean = {k: v for k, v in r.items() if not k.startswith("_binlake_")}
        out.extend(dict(clean) for _ in range(n))
    return out


def merge_keys(pk: Optional[Sequence[str]], columns: Sequence[tuple[str, str]]) -> tuple[list[str], bool]:
    """MERGE keys and whether they match NULL-safely (tables without a primary key: every column)."""
    if pk:
        return list(pk), False
    return [n for n, _ in columns], True
