"""Resolve a batch of bronze changes to one new state per key and table, on Spark.

The unapplied prefix of a source's bronze rows is taken (ordering key above the checkpoint, and stopping at the
first transaction committed at or after the cutoff, so that a day ends exactly at midnight even inside a file);
the silver rows of the keys it touches are read; both are grouped by table and each table is folded in one
Spark task by :func:`binlake.pipeline.fold.fold_table` (tables fold in parallel; a table's changes fold in
order, which key-changing updates and partial JSON against earlier changes need).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator, Optional

from binlake.lake.silver import base_state, silver_converters
from binlake.pipeline.bronze import CHANGE_OPS
from binlake.pipeline.fold import FoldResult, change_from_bronze, fold_table, row_key

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

TableId = tuple[str, str]


def unapplied(bronze: "DataFrame", source: str, after_seq: int, cutoff_us: Optional[int]) -> "DataFrame":
    """Bronze rows of ``source`` after ``after_seq`` and before the first change committed at/after the cutoff."""
    from pyspark.sql import functions as F

    rows = bronze.filter((F.col("source") == source) & (F.col("_binlake_seq") > after_seq))
    if cutoff_us is not None:
        late = (rows.filter(F.col("op").isin(*CHANGE_OPS, "ddl") & (F.col("commit_ts") >= cutoff_us))
                .agg(F.min("_binlake_seq").alias("s")).collect()[0]["s"])
        if late is not None:
            rows = rows.filter(F.col("_binlake_seq") < late)
    return rows


def _touched_keys(row: Any) -> list[tuple[TableId, str]]:
    pk = json.loads(row["primary_key"]) if row["primary_key"] else None
    t = (row["db"], row["table_name"])
    before = json.loads(row["before"]) if row["before"] else None
    after = json.loads(row["after"]) if row["after"] else None
    out = []
    if before is not None:
        out.append((t, row_key(before, pk)))
    if after is not None:
        merged = {**(before or {}), **after}
        if not pk or all(c in merged for c in pk):
            out.append((t, row_key(merged, pk)))
    return out


@dataclass
class TableBatch:
    """What one table's fold produced, and what the MERGE needs to know about the table."""

    table: TableId
    pk: Optional[list[str]]
    column_metas: list[str]
    result: FoldResult
    changes: int
    last_seq: int


@dataclass
class Resolved:
    tables: list[TableBatch] = field(default_factory=list)
    stats: Counter = field(default_factory=Counter)


def _fold_group(item: tuple[TableId, Any], history: bool) -> Iterator[TableBatch]:
    table, values = item
    changes, base, metas = [], {}, set()
    pk: Optional[list[str]] = None
    last = 0
    for kind, payload in values:
        if kind == "c":
            changes.append(change_from_bronze(payload))
            metas.add(payload["columns"])
            if payload["primary_key"]:
                pk = json.loads(payload["primary_key"])
            last = max(last, payload["_binlake_seq"])
        else:
            base[payload[0]] = payload[1]
    yield TableBatch(table, pk, sorted(m for m in metas if m), fold_table(changes, base, pk, history=history),
                     len(changes), last)


def resolve(spark: Any, batch: "DataFrame", silver_frames: dict[TableId, "DataFrame"], *,
            history: bool = False) -> Resolved:
    """Fold every table of ``batch`` (bronze rows, change ops only) onto its silver rows."""
    changes = batch.filter(batch["op"].isin(*CHANGE_OPS))
    change_rdd = changes.rdd.map(lambda r: ((r["db"], r["table_name"]), ("c", r.asDict())))
    touched: dict[TableId, set[str]] = {}
    for t, k in changes.rdd.flatMap(_touched_keys).distinct().collect():
        touched.setdefault(t, set()).add(k)
    pks: dict[TableId, Optional[list[str]]] = {}
    for r in changes.select("db", "table_name", "primary_key").distinct().collect():
        t = (r["db"], r["table_name"])
        pks[t] = json.loads(r["primary_key"]) if r["primary_key"] else pks.get(t)
    parts = [change_rdd]
    keys_b = spark.sparkContext.broadcast(touched)
    for t, frame in silver_frames.items():
        if t not in touched:
            continue
        fields = [(f.name, f.dataType.simpleString()) for f in frame.schema.fields]
        parts.append(frame.rdd.mapPartitions(
            lambda rows, t=t, fields=fields, pk=pks.get(t): _base_rows(rows, t, fields, pk, keys_b)))
    n_tables = max(1, len(touched))
    grouped = spark.sparkContext.union(parts).groupByKey(numPartitions=n_tables)
    out = Resolved()
    for tb in grouped.flatMap(lambda item: _fold_group(item, history)).collect():
        out.tables.append(tb)
        out.stats.update(tb.result.stats)
    keys_b.unpersist()
    return out


def _base_rows(rows: Iterator[Any], t: TableId, fields: list[tuple[str, str]], pk: Optional[list[str]],
               keys: Any) -> Iterator[tuple[TableId, Any]]:
    """Silver rows whose key the batch touches, as ("b", (key, RowState)) keyed by table."""
    conv = silver_converters(fields)
    wanted = keys.value[t]
    for r in rows:
        st = base_state(r.asDict(), conv, bool(pk))
        k = row_key(st.values, pk)
        if k in wanted:
            yield t, ("b", (k, st))
