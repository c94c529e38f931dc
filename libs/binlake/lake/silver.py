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
from typing import Any, Iterable, Optional, Sequence

from binlake.lake.delta.plan import OP_COL, SEQ_COL
from binlake.pipeline.types import from_silver, silver_type

COUNT_COL = "_binlake_count"
COMMIT_TS_COL = "_binlake_commit_ts"
KEY_COL = "_binlake_key"


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


def live_row_count(columns: Iterable[str]) -> Any:
    """The Spark aggregate counting a silver table's live rows (``columns``: the table's column names):
    tombstones count 0, a row of a table without a primary key counts ``_binlake_count``. The one definition
    of "live rows" for status and metrics (``agg(live_row_count(df.columns))``)."""
    from pyspark.sql import functions as F

    weight = F.coalesce(F.col(COUNT_COL), F.lit(1)) if COUNT_COL in set(columns) else F.lit(1)
    live = ~F.col(OP_COL).eqNullSafe(F.lit("delete"))
    return F.coalesce(F.sum(F.when(live, weight).otherwise(F.lit(0))), F.lit(0)).cast("bigint")
