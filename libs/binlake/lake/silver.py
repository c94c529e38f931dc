"""``silver.<db>__<table>``: the source table as it is, written by the CDC MERGE.

Columns: the table's columns (types from :mod:`binlake.binlog.silver_types`), then ``_binlake_seq`` (ordering key of
the last change applied to the row) and ``_binlake_op`` (``insert``/``update``: the last change). Silver holds
only live rows: a deleted row is removed (``meta/tombstones`` remembers deleted keys out of readers' sight; a rerun
after a crash reads those newer than its checkpoint, so it can not replay a change the MERGE already applied). A table
without a primary key holds one physical row per source row; equal rows are told apart by ``_binlake_dup``
(0, 1, ... among equal rows), so deleting one of several equal rows removes exactly one. New columns (ALTER
TABLE ... ADD COLUMN, seen in TABLE_MAP) widen the table.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Optional, Sequence

from binlake.binlog.silver_types import from_silver, silver_type
from binlake.vocabulary import COUNT_COL, DUP_COL, OP_COL, RESERVED_PREFIX, SEQ_COL


def reserved_names(column_metas: Iterable[str]) -> list[str]:
    """The source columns (of a table's bronze ``columns`` JSON, any layout) whose names binlake keeps for its
    own silver columns (``_binlake_*``, in any case: Spark and Delta resolve names case-insensitively)."""
    found = {
        m[0]
        for metas in column_metas
        if metas
        for m in json.loads(metas)
        if str(m[0]).lower().startswith(RESERVED_PREFIX)
    }
    return sorted(found)


def reserved_reason(db: str, table: str, names: Sequence[str]) -> str:
    """Why a table with columns of reserved names is blocked, and what to do."""
    cols = ", ".join(f"`{n}`" for n in names)
    return (
        f"`{db}`.`{table}` has column(s) {cols}: names beginning with {RESERVED_PREFIX} are binlake's own "
        f"silver columns, so the table is not loaded (its changes are quarantined); rename the column(s) at the "
        f"source, or leave the table out with --exclude {db}.{table}"
    )


def column_metas(column_metas: Iterable[str]) -> dict[str, list]:
    """name -> bronze column description, from the ``columns`` JSON of a table's bronze rows (every layout in the
    batch): the newest (widest) layout's order, then columns only older layouts had."""
    out: dict[str, list] = {}
    versions = [json.loads(m) for m in column_metas if m]
    for metas in sorted(versions, key=len, reverse=True):
        for meta in metas:
            out.setdefault(meta[0], meta)
    return out


def data_columns(metas: dict[str, list], temporal_text: bool = False) -> list[tuple[str, str]]:
    """(name, Spark type) of a table's silver columns."""
    return [(name, silver_type(meta, temporal_text)) for name, meta in metas.items()]


def table_columns(columns: Sequence[tuple[str, str]], has_pk: bool) -> list[tuple[str, str]]:
    return [*columns, (SEQ_COL, "bigint"), (OP_COL, "string")] + ([] if has_pk else [(DUP_COL, "bigint")])


def silver_converters(schema_fields: Iterable[tuple[str, str]], metas: dict[str, list]) -> list[tuple[str, Any]]:
    """(name, silver value -> bronze JSON encoding) of a silver table's data columns."""
    return [(n, from_silver(k, metas.get(n))) for n, k in schema_fields if not n.startswith("_binlake_")]


def live_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows the source holds, as a reader sees them: silver's rows without the bookkeeping columns."""
    return [{k: v for k, v in r.items() if not k.startswith("_binlake_")} for r in rows]


def merge_keys(pk: Optional[Sequence[str]], columns: Sequence[tuple[str, str]]) -> tuple[list[str], bool]:
    """MERGE keys and whether they match NULL-safely (tables without a primary key: every column and
    ``_binlake_dup``)."""
    if pk:
        return list(pk), False
    return [*(n for n, _ in columns), DUP_COL], True


def live_row_count(columns: Iterable[str]) -> Any:
    """The Spark aggregate counting a silver table's live rows (``columns``: the table's column names), the one
    definition for status and metrics (``agg(live_row_count(df.columns))``): rows whose ``_binlake_op`` is not
    ``delete`` (silver now holds live rows only; tables written with tombstones still count right), each
    ``_binlake_count`` times where a table has that column (tables written before ``_binlake_dup``)."""
    from pyspark.sql import functions as F

    weight = F.coalesce(F.col(COUNT_COL), F.lit(1)) if COUNT_COL in set(columns) else F.lit(1)
    live = ~F.col(OP_COL).eqNullSafe(F.lit("delete"))
    return F.coalesce(F.sum(F.when(live, weight).otherwise(F.lit(0))), F.lit(0)).cast("bigint")
