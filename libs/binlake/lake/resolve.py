"""Resolve a batch of bronze changes to one new state per key and table, on Spark.

The unapplied prefix of a source's bronze rows is taken (ordering key above the checkpoint, and stopping at the
first transaction committed at or after the cutoff, so that a day ends exactly at midnight even inside a file).
One pass over it (:func:`scan_batch`) finds the tables, their primary keys and column layouts, the keys touched,
the GTIDs and the last position. The silver rows of the touched keys are then grouped with the changes by table,
and each table is folded in one Spark task by :func:`binlake.pipeline.fold.fold_table` (tables fold in
parallel; one table's changes fold in order, which key-changing updates and partial JSON need). Each task
returns its silver MERGE source as Arrow IPC bytes, so only compact columnar data reaches the driver.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator, Optional

from binlake.lake.silver import (base_state, data_columns, silver_converters, state_rows, table_columns,
                                 to_arrow)
from binlake.pipeline.bronze import CHANGE_OPS
from binlake.pipeline.fold import FoldResult, change_from_bronze, fold_table, row_key

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

TableId = tuple[str, str]


def first_late_seq(engine: Any, spark: Any, bronze_path: str, source: str, after_seq: int,
                   cutoff_us: Optional[int]) -> Optional[int]:
    """The ordering key of the source's first unapplied change (or DDL) committed at or after the cutoff."""
    if cutoff_us is None:
        return None
    if engine.name == "rust":
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.dataset as ds
        from deltalake import DeltaTable

        f = ds.field
        expr = ((f("source").cast(pa.string()) == source) & (f("_binlake_seq") > after_seq)
                & (f("commit_ts") >= cutoff_us) & f("op").cast(pa.string()).isin([*CHANGE_OPS, "ddl"]))
        table = DeltaTable(bronze_path).to_pyarrow_dataset().to_table(columns=["_binlake_seq"], filter=expr)
        return pc.min(table.column(0)).as_py() if table.num_rows else None
    from pyspark.sql import functions as F

    rows = engine.read(spark, bronze_path).filter(
        (F.col("source") == source) & (F.col("_binlake_seq") > after_seq) & (F.col("commit_ts") >= cutoff_us)
        & F.col("op").isin(*CHANGE_OPS, "ddl"))
    return rows.agg(F.min("_binlake_seq")).collect()[0][0]


def unapplied(bronze: "DataFrame", source: str, after_seq: int, before_seq: Optional[int]) -> "DataFrame":
    """Bronze rows of ``source`` with ``after_seq < _binlake_seq < before_seq``: the batch to apply. Stopping
    before the first transaction committed at/after the cutoff makes a day end exactly at midnight, also
    inside a file."""
    from pyspark.sql import functions as F

    rows = bronze.filter((F.col("source") == source) & (F.col("_binlake_seq") > after_seq))
    return rows if before_seq is None else rows.filter(F.col("_binlake_seq") < before_seq)


@dataclass
class BatchInfo:
    """What one pass over the batch tells: see the module docstring."""

    touched: dict[TableId, set[str]] = field(default_factory=dict)
    pks: dict[TableId, Optional[list[str]]] = field(default_factory=dict)
    metas: dict[TableId, set[str]] = field(default_factory=dict)
    gtids: set[str] = field(default_factory=set)
    last: Optional[tuple[int, str, int]] = None            # (seq, file, pos) of the batch's last row
    others: list[dict[str, Any]] = field(default_factory=list)   # ddl, error, file_end, chunk_end rows
    changes: int = 0

    def add(self, other: "BatchInfo") -> "BatchInfo":
        for t, keys in other.touched.items():
            self.touched.setdefault(t, set()).update(keys)
        for t, pk in other.pks.items():
            self.pks[t] = pk or self.pks.get(t)
        for t, m in other.metas.items():
            self.metas.setdefault(t, set()).update(m)
        self.gtids |= other.gtids
        if other.last is not None and (self.last is None or other.last > self.last):
            self.last = other.last
        self.others += other.others
        self.changes += other.changes
        return self


SCAN_COLUMNS = ("_binlake_seq", "binlog_file", "pos", "row", "gtid", "op", "db", "table_name", "columns",
                "primary_key", "key_before", "key_after", "statement")


def _scan(rows: Iterator[Any]) -> Iterator[BatchInfo]:
    info = BatchInfo()
    loads = json.loads
    for r in rows:
        seq = r["_binlake_seq"]
        if info.last is None or seq > info.last[0]:
            info.last = (seq, r["binlog_file"], r["pos"])
        if r["gtid"]:
            info.gtids.add(r["gtid"])
        if r["op"] not in CHANGE_OPS:
            info.others.append(r.asDict())
            continue
        info.changes += 1
        t = (r["db"], r["table_name"])
        if t not in info.pks or r["primary_key"]:
            info.pks[t] = loads(r["primary_key"]) if r["primary_key"] else None
        if r["columns"]:
            info.metas.setdefault(t, set()).add(r["columns"])
        keys = info.touched.setdefault(t, set())
        for k in (r["key_before"], r["key_after"]):
            if k is not None:
                keys.add(k)
    yield info


def scan_batch(batch: "DataFrame") -> BatchInfo:
    out = BatchInfo()
    for part in batch.select(*SCAN_COLUMNS).rdd.mapPartitions(_scan).collect():
        out.add(part)
    return out


@dataclass
class TableBatch:
    """One table's fold: the MERGE source (Arrow IPC bytes), quarantine and history records, counters."""

    table: TableId
    pk: Optional[list[str]]
    columns: list[tuple[str, str]]
    silver_ipc: Optional[bytes] = None
    quarantine: list[dict[str, Any]] = field(default_factory=list)
    history: list[tuple[str, Any, int]] = field(default_factory=list)
    stats: Counter = field(default_factory=Counter)
    changes: int = 0
    last_seq: int = 0


def to_ipc(table: Any) -> bytes:
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def from_ipc(data: bytes) -> Any:
    import pyarrow as pa

    return pa.ipc.open_stream(data).read_all()


# --- the silver rows a batch needs ------------------------------------------------------------------------------

def _kind(arrow_type: Any) -> str:
    """Spark's simpleString of an Arrow type, as far as silver uses them."""
    import pyarrow as pa
    import pyarrow.types as at

    if at.is_decimal(arrow_type):
        return f"decimal({arrow_type.precision},{arrow_type.scale})"
    if at.is_integer(arrow_type):
        return "bigint"
    if at.is_floating(arrow_type):
        return "double"
    if at.is_binary(arrow_type) or at.is_large_binary(arrow_type) or arrow_type == pa.binary_view():
        return "binary"
    return "string"


def silver_bases(engine: Any, spark: Any, path: str, pk: Optional[list[str]],
                 keys: set[str]) -> dict[str, Any]:
    """key -> RowState of the silver rows whose key is in ``keys``, read on the driver (filtered on the first
    primary key column where there is one: Delta file statistics prune the files)."""
    from binlake.pipeline.types import to_silver

    if not engine.exists(path):
        return {}
    firsts = sorted({json.loads(k)[0] for k in keys}, key=repr) if pk else []
    if engine.name == "rust":
        import pyarrow as pa
        import pyarrow.dataset as ds
        from deltalake import DeltaTable

        dataset = DeltaTable(path).to_pyarrow_dataset()
        kinds = [(f.name, _kind(f.type)) for f in dataset.schema]
        expr = None
        if pk:
            kind = dict(kinds)[pk[0]]
            plain = {"string": pa.string(), "binary": pa.binary()}.get(kind)
            column = ds.field(pk[0]) if plain is None else ds.field(pk[0]).cast(plain)
            values = pa.array([to_silver(kind)(v) for v in firsts],
                              type=plain or dataset.schema.field(pk[0]).type)
            expr = column.isin(values)
        rows = dataset.to_table(filter=expr).to_pylist()
    else:
        from pyspark.sql import functions as F

        df = engine.read(spark, path)
        kinds = [(f.name, f.dataType.simpleString()) for f in df.schema.fields]
        if pk:
            conv = to_silver(dict(kinds)[pk[0]])
            df = df.filter(F.col(pk[0]).isin([conv(v) for v in firsts]))
        rows = [r.asDict() for r in df.collect()]
    converters = silver_converters(kinds)
    out = {}
    for r in rows:
        st = base_state(r, converters, bool(pk))
        k = row_key(st.values, pk)
        if k in keys:
            out[k] = st
    return out


# --- the fold, one group (table) per call -------------------------------------------------------------------------

OUT_SCHEMA = "db string, table_name string, kind string, payload binary"


def _fold_arrow(table: Any, pks: dict, metas: dict, bases: Any, history: bool) -> Any:
    import pickle

    import pyarrow as pa

    rows = table.to_pylist()
    t = (rows[0]["db"], rows[0]["table_name"])
    pk = pks.get(t)
    res: FoldResult = fold_table([change_from_bronze(r) for r in rows], bases.value.get(t, {}), pk,
                                 history=history)
    cols = data_columns(metas.get(t, ()))
    tb = TableBatch(t, pk, cols, None, res.quarantine, res.history, res.stats, len(rows),
                    max(r["_binlake_seq"] for r in rows))
    if res.rows:
        tb.silver_ipc = to_ipc(to_arrow(table_columns(cols, bool(pk)), state_rows(cols, res.rows.values(),
                                                                                  bool(pk))))
    return pa.table({"db": [t[0]], "table_name": [t[1]], "kind": ["batch"], "payload": [pickle.dumps(tb)]})


def resolve(spark: Any, engine: Any, batch: "DataFrame", info: BatchInfo, silver_path: Any, *,
            history: bool = False) -> list[TableBatch]:
    """Fold every table of ``batch`` onto the silver rows of the keys it touches (``silver_path(db, table)``)."""
    import pickle

    sc = spark.sparkContext
    bases = {t: silver_bases(engine, spark, silver_path(*t), info.pks.get(t), keys)
             for t, keys in info.touched.items()}
    bases_b = sc.broadcast(bases)
    pks = dict(info.pks)
    metas = {t: sorted(m) for t, m in info.metas.items()}
    changes = batch.filter(batch["op"].isin(*CHANGE_OPS))
    out = (changes.groupBy("db", "table_name")
           .applyInArrow(lambda tbl: _fold_arrow(tbl, pks, metas, bases_b, history), OUT_SCHEMA).collect())
    bases_b.unpersist()
    return sorted((pickle.loads(r["payload"]) for r in out), key=lambda tb: tb.table)
