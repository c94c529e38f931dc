"""The apply job: a source's unapplied bronze changes -> ``silver.<db>__<table>`` (CDC MERGE), the SCD2 history,
``meta.quarantine`` and ``meta.checkpoints``. Every step is a DataFrame computed by Spark's executors; the driver
plans, commits and reports (it holds per-table metadata and counters, never the changes).

1. **The batch**: the source's bronze rows after its checkpoint, up to the first change or DDL committed at or
   after the cutoff. This one commit-time rule decides what a run (a day) applies, inside files too.
2. **Scan** (one pass, aggregated per partition): tables, primary keys, column layouts, GTIDs, last position,
   undecodable stretches, and the tables whose key-changing updates depend on the old row (below).
3. **Fold per key**: each change goes to the group of the row key it touches (a key-changing update whose
   after image holds the whole row becomes two halves: a tombstone at the old key, the row at the new key, so
   keys fold independently); silver's current row of every touched key joins its group. Groups are spread over
   partitions by (table, key) and sorted by the exact binlog order inside each, then folded one at a time by
   :mod:`binlake.pipeline.fold` (partial JSON diffs resolved against the key's current document). The keys that
   key-changing updates needing the old row (a MINIMAL after image, a partial JSON update) link fold together as
   one group, in order (a table without a primary key, or with more than :data:`MAX_KEY_LINKS` of them: the
   whole table).
4. **Write**: quarantine (insert-only MERGE), then per table the history and the silver MERGE guarded by
   ``_binlake_seq``, then the checkpoint. A crash between any two commits followed by a rerun converges: a
   change not newer than a row's ``_binlake_seq`` is already applied.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Optional

from binlake.binlog.silver_types import invalid_temporal, to_arrow
from binlake.lake.arrow import spark_ddl
from binlake.lake.checkpoints import read_checkpoint, write_checkpoints
from binlake.lake.crash import crash_point, reset_crash_counts
from binlake.lake.delta.plan import quote_spark
from binlake.lake.errors import LayoutMissingError
from binlake.lake.fold_sql import split_fold, sql_tables, sql_typable, stats_counts, typed_states
from binlake.lake.owned import scratch_folder
from binlake.lake.quarantine import QUARANTINE_COLUMNS, quarantine_row, write_quarantine
from binlake.lake.seed import after_seams, seams
from binlake.lake.silver import (
    column_metas,
    data_columns,
    merge_keys,
    reserved_names,
    reserved_reason,
    silver_converters,
    table_columns,
)
from binlake.lake.table_names import split_table_name, table_name
from binlake.pipeline.filters import GtidSet
from binlake.pipeline.fold import DELETE, Change, RowState, _Folder, compact_json, row_key
from binlake.vocabulary import CHANGE_OPS, COMMIT_TS_COL, COUNT_COL, KEY_COL, LAYOUT_OP, OP_COL, SEQ_COL, SOURCE_ROW

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from binlake.lake.delta import DeltaEngine
    from binlake.lake.layout import LakeLayout
    from binlake.lake.options import RunOptions

TableId = tuple[str, str]
OUT_BATCH_ROWS = 8192
MAX_KEY_LINKS = 100_000  # key-changing updates of a table the driver groups by key; beyond: one group

# What the fold reads: one row per change half and per silver row of a touched key.
RECORD_COLUMNS: tuple[tuple[str, str], ...] = (
    ("db", "string"),
    ("table_name", "string"),
    ("fold_key", "string"),
    ("base", "boolean"),
    ("file_seq", "int"),
    ("pos", "bigint"),
    ("row", "int"),
    (SEQ_COL, "bigint"),
    ("op", "string"),
    ("split", "string"),
    ("before", "string"),
    ("after", "string"),
    ("diffs", "string"),
    ("commit_ts", "bigint"),
    ("binlog_file", "string"),
    ("gtid", "string"),
    ("row_key", "string"),
    ("values", "string"),
    ("count", "bigint"),
)
# What it writes: final key states, history versions, quarantine records, counters.
OUT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("kind", "string"),
    ("db", "string"),
    ("table_name", "string"),
    ("row_key", "string"),
    ("values", "string"),
    ("seq", "bigint"),
    ("op", "string"),
    ("count", "bigint"),
    ("base_count", "bigint"),
    ("commit_ts", "bigint"),
    ("record", "string"),
)
TOMBSTONE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("source", "string"),
    ("db", "string"),
    ("table_name", "string"),
    ("row_key", "string"),
    (SEQ_COL, "bigint"),
)


# --- 1. the batch ------------------------------------------------------------------------------------------------


def unapplied(
    spark: "SparkSession",
    engine: "DeltaEngine",
    bronze_path: str,
    source: str,
    after_seq: int,
    cutoff_us: Optional[int],
) -> "DataFrame":
    """The source's bronze rows after ``after_seq`` and before the first change or DDL committed at or after
    ``cutoff_us`` (a prefix of the binlog order: a day ends exactly at midnight, also inside a file)."""
    from pyspark.sql import functions as F

    rows = engine.read(spark, bronze_path).filter((F.col("source") == source) & (F.col(SEQ_COL) > after_seq))
    for name, kind in (("raw", "binary"), ("layout", "string")):
        if name not in rows.columns:  # bronze written before undecodable bytes were kept / layouts stated once
            rows = rows.withColumn(name, F.lit(None).cast(kind))
    if cutoff_us is None:
        return rows
    late = (
        rows.filter((F.col("commit_ts") >= cutoff_us) & F.col("op").isin(*CHANGE_OPS, "ddl"))
        .agg(F.min(SEQ_COL))
        .first()[0]
    )
    return rows if late is None else rows.filter(F.col(SEQ_COL) < late)


# --- 2. the scan -------------------------------------------------------------------------------------------------


@dataclass
class TableInfo:
    pk: Optional[list[str]] = None
    metas: set[str] = field(default_factory=set)
    changes: int = 0
    last_seq: int = -1
    dependent: bool = False  # has a key-changing update that needs the old row (see key_groups)
    links: Optional[list[tuple[str, str]]] = field(default_factory=list)  # (old key, new key) of its
    # key-changing updates; None: more than MAX_KEY_LINKS
    layouts: set[str] = field(default_factory=set)  # layout ids of its change rows
    key_change_after: dict[str, int] = field(default_factory=dict)  # layout id -> fewest after-image columns
    # of its key-changing updates without diffs (fewer than the layout's columns: a MINIMAL image, dependent)
    legacy: bool = False  # has change rows that carry their own columns (bronze before layout rows)
    keys_exact: bool = False  # every layout has the same primary key: bronze's row keys are the fold's

    def add(self, other: "TableInfo") -> None:
        self.pk = other.pk or self.pk
        self.metas |= other.metas
        self.changes += other.changes
        self.last_seq = max(self.last_seq, other.last_seq)
        self.dependent |= other.dependent
        if self.links is None or other.links is None or len(self.links) + len(other.links) > MAX_KEY_LINKS:
            self.links = None
        else:
            self.links += other.links
        self.legacy |= other.legacy
        self.layouts |= other.layouts
        for lid, n in other.key_change_after.items():
            self.key_change_after[lid] = min(n, self.key_change_after.get(lid, n))

    def link(self, old: str, new: str) -> None:
        if self.links is not None:
            self.links.append((old, new))
            if len(self.links) > MAX_KEY_LINKS:
                self.links = None

    @property
    def one_group(self) -> bool:
        """Whether the table folds as one group, in order: dependent, with too many key changes to group."""
        return self.dependent and self.links is None

    def key_groups(self) -> dict[str, str]:
        """A dependent table's fold groups: every key a key-changing update links to another, mapped to the
        smallest key of its linked set (union-find over ``links``); other keys fold on their own."""
        if not self.dependent or not self.links:
            return {}
        parent: dict[str, str] = {}

        def root(k: str) -> str:
            while parent.setdefault(k, k) != k:
                parent[k] = parent[parent[k]]
                k = parent[k]
            return k

        for old, new in self.links:
            a, b = root(old), root(new)
            if a != b:
                parent[max(a, b)] = min(a, b)
        return {k: root(k) for k in parent}


@dataclass
class BatchInfo:
    tables: dict[TableId, TableInfo] = field(default_factory=dict)
    gtids: str = ""
    last: Optional[tuple[int, str, int]] = None  # (seq, file, pos) of the batch's last row
    errors: list[dict[str, Any]] = field(default_factory=list)  # undecodable stretches
    ddls: list[dict[str, Any]] = field(default_factory=list)  # DDL statements, applied at their position
    changes: int = 0
    layouts: dict[str, tuple[str, Optional[str]]] = field(default_factory=dict)  # id -> (columns, primary key)

    def add(self, other: "BatchInfo") -> "BatchInfo":
        for t, info in other.tables.items():
            self.tables.setdefault(t, TableInfo()).add(info)
        self.gtids = GtidSet.parse(",".join(g for g in (self.gtids, other.gtids) if g)).to_text()
        if other.last is not None and (self.last is None or other.last > self.last):
            self.last = other.last
        self.errors += other.errors
        self.ddls += other.ddls
        self.changes += other.changes
        self.layouts.update(other.layouts)
        return self

    def resolve_layouts(self, lookup: Any) -> "BatchInfo":
        """Give each table the columns and primary key of the layouts its change rows name (a layout row the
        batch does not hold, when it starts inside a chunk, comes from ``lookup(ids) -> {id: (columns, pk)}``)."""
        wanted = {lid for t in self.tables.values() for lid in t.layouts}
        missing = wanted - self.layouts.keys()
        if missing:
            self.layouts.update(lookup(sorted(missing)))
            absent = sorted(missing - self.layouts.keys())
            if absent:
                raise LayoutMissingError(
                    f"bronze names table layout(s) {absent} without their layout rows: "
                    f"bronze is damaged; re-ingest the source"
                )
        for t in self.tables.values():
            t.keys_exact = not t.legacy and len({self.layouts[lid][1] for lid in t.layouts}) == 1
            for lid in sorted(t.layouts):
                columns, pk = self.layouts[lid]
                t.metas.add(columns)
                if pk and t.pk is None:
                    t.pk = json.loads(pk)
                n = t.key_change_after.get(lid)
                if n is not None and pk and n < len(json.loads(columns)):
                    t.dependent = True
            t.layouts, t.key_change_after = set(), {}
            if not t.pk:  # identities of rows without a key change with every update: one group
                t.links = None
        return self


SCAN_COLUMNS = (
    SEQ_COL,
    "binlog_file",
    "pos",
    "gtid",
    "op",
    "db",
    "table_name",
    "columns",
    "primary_key",
    "key_before",
    "key_after",
    "after",
    "diffs",
    "statement",
    "commit_ts",
    "raw",
    "layout",
)


def key_change(op: str, key_before: Optional[str], key_after: Optional[str]) -> bool:
    return op == "update" and key_after is not None and key_after != key_before


def _scan(rows: Iterator[Any]) -> BatchInfo:
    info = BatchInfo()
    gtids = GtidSet()
    loads = json.loads
    for r in rows:
        seq = r[SEQ_COL]
        if info.last is None or seq > info.last[0]:
            info.last = (seq, r["binlog_file"], r["pos"])
        if r["gtid"]:
            gtids.add(r["gtid"])
        op = r["op"]
        if op == LAYOUT_OP:
            info.layouts[r["layout"]] = (r["columns"], r["primary_key"])
            continue
        if op not in CHANGE_OPS:
            if op in ("error", "ddl"):
                (info.errors if op == "error" else info.ddls).append(
                    {
                        SEQ_COL: seq,
                        "binlog_file": r["binlog_file"],
                        "pos": r["pos"],
                        "db": r["db"],
                        "statement": r["statement"],
                        "commit_ts": r["commit_ts"],
                        "gtid": r["gtid"],
                        "raw": r["raw"],
                    }
                )
            continue
        info.changes += 1
        t = info.tables.get((r["db"], r["table_name"]))
        if t is None:
            t = info.tables[r["db"], r["table_name"]] = TableInfo()
        lid = r["layout"]
        if lid:
            t.layouts.add(lid)
        else:  # bronze written before layouts were stated once per chunk
            t.legacy = True
            if r["primary_key"] and t.pk is None:
                t.pk = loads(r["primary_key"])
            if r["columns"]:
                t.metas.add(r["columns"])
        t.changes += 1
        t.last_seq = max(t.last_seq, seq)
        if key_change(op, r["key_before"], r["key_after"]):
            t.link(r["key_before"], r["key_after"])
            if t.dependent:
                continue
            if r["diffs"] is not None:
                t.dependent = True
            elif lid:  # whole unless fewer columns than the layout's (resolve_layouts)
                n = len(loads(r["after"] or "{}"))
                t.key_change_after[lid] = min(n, t.key_change_after.get(lid, n))
            elif r["primary_key"]:
                t.dependent = len(loads(r["after"] or "{}")) < len(loads(r["columns"] or "[]"))
    info.gtids = gtids.to_text()
    return info


def _scan_arrow(batches: Iterator[Any]) -> Iterator[Any]:
    """mapInArrow function: a partition's scan rows -> one row holding its pickled :class:`BatchInfo`."""
    import pickle

    import pyarrow as pa

    info = BatchInfo()
    for b in batches:
        info.add(_scan_columnar(b))
    yield pa.RecordBatch.from_pydict({"info": [pickle.dumps(info)]}, pa.schema([("info", pa.binary())]))


def _scan_columnar(batch: Any) -> BatchInfo:
    """:func:`_scan` of an Arrow batch of scan rows, the plain changes counted column-wise: a change row naming
    its layout that is no key-changing update adds only its table's count, last seq and layout, the batch's
    GTIDs and last position. Every other row (layouts, DDL, errors, key changes, bronze before layout rows)
    goes through :func:`_scan` as it is."""
    import pyarrow as pa
    import pyarrow.compute as pc

    op, lid = batch.column("op"), batch.column("layout")
    after, before = batch.column("key_after"), batch.column("key_before")
    kc = pc.and_(pc.equal(op, "update"), pc.and_(pc.is_valid(after), pc.fill_null(pc.not_equal(after, before), True)))
    plain = pc.fill_null(
        pc.and_(
            pc.and_(pc.is_in(op, pa.array(CHANGE_OPS)), pc.invert(kc)), pc.and_(pc.is_valid(lid), pc.not_equal(lid, ""))
        ),
        False,
    )
    info = _scan(iter(batch.filter(pc.invert(plain)).to_pylist()))
    rows = batch.filter(plain)
    if not rows.num_rows:
        return info
    info.changes += rows.num_rows
    table = pa.Table.from_batches([rows.select(["db", "table_name", "layout", SEQ_COL])])
    for g in (
        table.group_by(["db", "table_name", "layout"]).aggregate([(SEQ_COL, "max"), (SEQ_COL, "count")]).to_pylist()
    ):
        t = info.tables.setdefault((g["db"], g["table_name"]), TableInfo())
        t.layouts.add(g["layout"])
        t.changes += g[f"{SEQ_COL}_count"]
        t.last_seq = max(t.last_seq, g[f"{SEQ_COL}_max"])
    i = pc.index(rows.column(SEQ_COL), pc.max(rows.column(SEQ_COL))).as_py()
    last = (rows.column(SEQ_COL)[i].as_py(), rows.column("binlog_file")[i].as_py(), rows.column("pos")[i].as_py())
    if info.last is None or last[0] > info.last[0]:
        info.last = last
    gtids = [g for g in pc.unique(rows.column("gtid")).to_pylist() if g]
    if gtids:
        known = GtidSet.parse(info.gtids)
        for g in gtids:
            known.add(g)
        info.gtids = known.to_text()
    return info


def scan_batch(batch: "DataFrame", lookup: Any) -> BatchInfo:
    """The batch's :class:`BatchInfo`, scanned in the executors (Arrow in, one small record per partition out);
    an after image travels only for key-changing updates, raw bytes only for undecodable stretches. Layouts
    the batch names but does not hold come from ``lookup`` (:func:`bronze_layouts`)."""
    import pickle

    from pyspark.sql import functions as F

    after, before = F.col("key_after"), F.col("key_before")
    kc = (F.col("op") == "update") & after.isNotNull() & ~after.eqNullSafe(before)  # as key_change
    pruned = {"after": F.when(kc, F.col("after")), "raw": F.when(F.col("op") == "error", F.col("raw"))}
    rows = batch.select(*[pruned[c].alias(c) if c in pruned else c for c in SCAN_COLUMNS])
    out = BatchInfo()
    for r in rows.mapInArrow(_scan_arrow, "info binary").collect():
        out.add(pickle.loads(r["info"]))
    return out.resolve_layouts(lookup)


def bronze_layouts(spark: "SparkSession", engine: "DeltaEngine", bronze_path: str, source: str) -> Any:
    """``ids -> {id: (columns, primary key)}`` from the source's ``layout`` rows in bronze."""

    def lookup(ids: list[str]) -> dict[str, tuple[str, Optional[str]]]:
        rows = engine.read_rows(
            spark,
            bronze_path,
            ("layout", "columns", "primary_key"),
            {"source": source, "op": LAYOUT_OP, "layout": tuple(ids)},
        )
        return {r["layout"]: (r["columns"], r["primary_key"]) for r in rows}

    return lookup


# --- 3. the fold -------------------------------------------------------------------------------------------------


def _table_tag(db: str, table: str) -> str:
    return f"{db}\x00{table}"


def _normalizer(columns: list[tuple[str, str]]) -> Any:
    """image -> the image with the zero or invalid dates of typed temporal columns as None: how silver holds
    them, so a row's identity (tables without a primary key) is the same in bronze and in silver."""

    def normalize(image: Optional[dict[str, Any]]) -> Optional[dict[str, Any]]:
        if not image:
            return image
        bad = [name for name, kind in columns if invalid_temporal(kind, image.get(name))]
        return {**image, **dict.fromkeys(bad)} if bad else image

    return normalize


def _rekey(columns: dict[TableId, list[tuple[str, str]]]) -> Any:
    """mapInArrow function: bronze change rows -> the same rows with ``key_before``/``key_after`` of the
    normalized images (tables without a primary key whose identity holds typed temporal columns)."""
    from binlake.pipeline.bronze import change_keys

    def run(batches: Any) -> Any:
        import pyarrow as pa

        for batch in batches:
            rows = batch.to_pylist()
            for r in rows:
                norm = _normalizer(columns[r["db"], r["table_name"]])
                before = norm(json.loads(r["before"])) if r["before"] else None
                after = norm(json.loads(r["after"])) if r["after"] else None
                r["key_before"], r["key_after"] = change_keys(before, after, None)
            yield pa.RecordBatch.from_pylist(rows, schema=batch.schema)

    return run


def identity_temporals(info: BatchInfo, temporal_text: bool) -> dict[TableId, list[tuple[str, str]]]:
    """The typed temporal columns of the batch's tables without a primary key (their identity includes them)."""
    if temporal_text:
        return {}
    out = {}
    for t, ti in info.tables.items():
        cols = [(n, k) for n, k in data_columns(column_metas(ti.metas)) if k in ("date", "timestamp", "timestamp_ntz")]
        if not ti.pk and cols:
            out[t] = cols
    return out


def change_records(batch: "DataFrame", info: BatchInfo, temporal_text: bool = False) -> "DataFrame":
    """The fold records of the batch's changes: one per change, two per independent key-changing update."""
    from pyspark.sql import functions as F

    rekey = identity_temporals(info, temporal_text)
    if rekey:
        tags = [_table_tag(*t) for t in rekey]
        tagged = F.concat_ws("\x00", "db", "table_name").isin(tags) & F.col("op").isin(*CHANGE_OPS)
        batch = batch.filter(~tagged).unionByName(batch.filter(tagged).mapInArrow(_rekey(rekey), batch.schema))

    dep = _tables_where(info, lambda ti: ti.dependent)
    kc = (F.col("op") == "update") & F.col("key_after").isNotNull() & (F.col("key_after") != F.col("key_before"))
    changes = batch.filter(F.col("op").isin(*CHANGE_OPS)).withColumn(
        "split", F.explode(F.when(kc & ~dep, F.array(F.lit("old"), F.lit("new"))).otherwise(F.array(F.lit(""))))
    )
    key = (
        F.when(_tables_where(info, lambda ti: ti.one_group), F.lit(""))
        .when(F.col("split") == "new", F.col("key_after"))
        .when(F.col("op") == "insert", F.col("key_after"))
        .otherwise(F.col("key_before"))
    )
    return changes.select(
        "db",
        "table_name",
        F.coalesce(key, F.lit("")).alias("fold_key"),
        F.lit(False).alias("base"),
        "file_seq",
        "pos",
        "row",
        SEQ_COL,
        "op",
        "split",
        "before",
        "after",
        "diffs",
        "commit_ts",
        "binlog_file",
        "gtid",
        F.lit(None).cast("string").alias("row_key"),
        F.lit(None).cast("string").alias("values"),
        F.lit(None).cast("bigint").alias("count"),
    )


def _tables_where(info: BatchInfo, test: Any) -> Any:
    """Column: whether a row's table is one of the batch's tables whose TableInfo passes ``test``."""
    from pyspark.sql import functions as F

    tags = [_table_tag(*t) for t, ti in info.tables.items() if test(ti)]
    return F.concat_ws("\x00", "db", "table_name").isin(tags) if tags else F.lit(False)


def _linked_keys_grouped(spark: "SparkSession", records: "DataFrame", info: BatchInfo) -> "DataFrame":
    """``records`` with the fold key of every key a dependent table's key-changing updates link (and of the
    keys those link on) replaced by its group's (:meth:`TableInfo.key_groups`): the linked keys fold together,
    in order, and the table's other keys on their own."""
    from pyspark.sql import functions as F

    groups = [
        (db, table, key, group) for (db, table), ti in info.tables.items() for key, group in ti.key_groups().items()
    ]
    if not groups:
        return records
    frame = spark.createDataFrame(groups, "db string, table_name string, fold_key string, fold_group string")
    return (
        records.join(F.broadcast(frame), ["db", "table_name", "fold_key"], "left")
        .withColumn("fold_key", F.coalesce("fold_group", "fold_key"))
        .drop("fold_group")
        .select(*(name for name, _ in RECORD_COLUMNS))
    )


def _by_position(frame: "DataFrame") -> tuple["DataFrame", list[str]]:
    """``frame`` with its columns named by position (``_c0``, ``_c1``, ...), and its own names: PySpark's
    ``mapInArrow`` resolves each input column by its name, which fails for a name holding a backtick (a MySQL
    column ``b`c``); the function gives the batches their names back (:func:`_named`)."""
    names = frame.columns
    return frame.toDF(*[f"_c{i}" for i in range(len(names))]), names


def _named(batch: Any, names: Optional[list[str]]) -> Any:
    """A record batch of a :func:`_by_position` frame with the frame's own column names."""
    import pyarrow as pa

    return batch if names is None else pa.RecordBatch.from_arrays(batch.columns, names=names)


def _keyed_silver(
    kinds: list[tuple[str, str]],
    metas: dict[str, list],
    pk: Optional[list[str]],
    db: str,
    table: str,
    one_group: bool,
    names: Optional[list[str]] = None,
) -> Any:
    """mapInArrow function: silver rows (columns ``names`` by position, see :func:`_by_position`) -> base fold
    records (values in the bronze JSON encoding, row key; each physical row counts one)."""
    converters = silver_converters(kinds, metas)

    def run(batches: Any) -> Any:
        for batch in batches:
            batch = _named(batch, names)
            rows = []
            for r in batch.to_pylist():
                values = {name: conv(r[name]) for name, conv in converters}
                key = row_key(values, pk)
                rows.append(
                    (
                        db,
                        table,
                        "" if one_group else key,
                        True,
                        None,
                        None,
                        None,
                        r[SEQ_COL] or 0,
                        r[OP_COL] or "insert",
                        "",
                        None,
                        None,
                        None,
                        None,
                        None,
                        None,
                        key,
                        compact_json(values),
                        1,
                    )
                )
            if rows:
                yield from to_arrow(RECORD_COLUMNS, rows).to_batches()

    return run


def base_records(
    spark: "SparkSession",
    engine: "DeltaEngine",
    lake: "LakeLayout",
    batch: "DataFrame",
    info: BatchInfo,
    source: str,
    after_seq: int,
) -> Optional["DataFrame"]:
    """Silver's current rows of the keys the batch touches, as fold records (joined in the executors), and the
    source's tombstones newer than its checkpoint ``after_seq`` (written by an attempt that did not reach its
    checkpoint; older ones are of applied changes and change nothing: ``binlake maintain`` purges them)."""
    from pyspark.sql import functions as F

    touched = (
        batch.filter(F.col("op").isin(*CHANGE_OPS))
        .select("db", "table_name", F.explode(F.array("key_before", "key_after")).alias("row_key"))
        .where(F.col("row_key").isNotNull())
        .distinct()
    )
    keyed = None
    for (db, table), ti in info.tables.items():
        path = lake.silver(db, table)
        if not engine.exists(path):
            continue
        silver = engine.read(spark, path)
        kinds = [(f.name, f.dataType.simpleString()) for f in silver.schema.fields]
        metas = column_metas(ti.metas)
        silver = _key_prefilter(silver, dict(kinds), metas, ti.pk, touched, db, table, silver_size(path))
        plain, names = _by_position(silver)
        part = plain.mapInArrow(
            _keyed_silver(kinds, metas, ti.pk, db, table, ti.one_group, names), spark_ddl(RECORD_COLUMNS)
        )
        keyed = part if keyed is None else keyed.unionByName(part)
    if engine.exists(lake.tombstones):
        whole = _tables_where(info, lambda ti: ti.one_group)
        dead = (
            engine.read(spark, lake.tombstones)
            .filter((F.col("source") == source) & (F.col(SEQ_COL) > after_seq))
            .select(
                "db",
                "table_name",
                F.when(whole, F.lit("")).otherwise(F.col("row_key")).alias("fold_key"),
                F.lit(True).alias("base"),
                F.lit(None).cast("int").alias("file_seq"),
                F.lit(None).cast("bigint").alias("pos"),
                F.lit(None).cast("int").alias("row"),
                SEQ_COL,
                F.lit(DELETE).alias("op"),
                F.lit("").alias("split"),
                *[F.lit(None).cast("string").alias(c) for c in ("before", "after", "diffs")],
                F.lit(None).cast("bigint").alias("commit_ts"),
                F.lit(None).cast("string").alias("binlog_file"),
                F.lit(None).cast("string").alias("gtid"),
                "row_key",
                F.lit("{}").alias("values"),
                F.lit(0).cast("bigint").alias("count"),
            )
        )
        keyed = dead if keyed is None else keyed.unionByName(dead)
    if keyed is None:
        return None
    return keyed.join(touched, ["db", "table_name", "row_key"], "left_semi")


INTEGER_KINDS = ("tinyint", "smallint", "int", "bigint")
# silver rows from which cutting a non-integer key first is cheaper than converting every row (its extra Spark
# stages cost a few seconds; converting costs about 10 us a row: bench/silver_keys.py)
KEY_CUT_MIN_ROWS = 300_000


def silver_size(path: str) -> Optional[int]:
    """A Delta table's rows by its log's file statistics (delta-rs on the driver, no Spark job; rows hidden by
    deletion vectors count too); None when a file has no statistics or delta-rs can not read the log (a table
    feature it lacks): the cut is exact at any size, only its cost differs."""
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaError

    try:
        counts = DeltaTable(path).get_add_actions(flatten=True).column("num_records").to_pylist()
    except DeltaError:
        return None
    return None if any(c is None for c in counts) else sum(counts)


def _key_prefilter(
    silver: "DataFrame",
    kinds: dict[str, str],
    metas: dict[str, list],
    pk: Optional[list[str]],
    touched: "DataFrame",
    db: str,
    table: str,
    size: Optional[int] = None,
) -> "DataFrame":
    """``silver`` cut to the rows whose primary key the batch touches, so that only those rows are converted to
    fold records in Python, not the whole table. Every key column an integer: in SQL (the bronze key ``[1,2]``
    reads exactly as silver's values). Other keys (strings, UUIDs in BINARY(16), dates, decimals): each row's
    key is computed in Python from its key columns alone, with the converters the fold records use, so it is
    the bronze key exactly; silver is cut to the touched ones by a join on its typed key columns, when it holds
    at least :data:`KEY_CUT_MIN_ROWS` rows (``size``; None: unknown). No primary key: ``silver`` whole (a row's
    identity is all its values). The exact semi-join on the row key follows either way."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    if not pk:
        return silver
    mine = touched.filter((F.col("db") == db) & (F.col("table_name") == table))
    if all(kinds.get(c) in INTEGER_KINDS for c in pk):
        values = F.from_json("row_key", "array<bigint>")
        keys = mine.select(*[values.getItem(i).cast(kinds[c]).alias(c) for i, c in enumerate(pk)])
        return silver.join(keys.distinct(), pk, "left_semi")
    if size is not None and size < KEY_CUT_MIN_ROWS:
        return silver
    key_columns = silver.select(*[F.col(quote_spark(c)) for c in pk])
    columns, names = _by_position(key_columns)
    keyed = columns.mapInArrow(
        _row_keys(list(kinds.items()), metas, pk, names),
        StructType([*key_columns.schema.fields, StructField("row_key", StringType())]),
    )
    return silver.join(keyed.join(mine.select("row_key"), "row_key", "left_semi").drop("row_key"), pk, "left_semi")


def _row_keys(
    kinds: list[tuple[str, str]], metas: dict[str, list], pk: list[str], names: Optional[list[str]] = None
) -> Any:
    """mapInArrow function: silver's key columns (``names`` by position, see :func:`_by_position`) -> the same
    with each row's ``row_key``, as ``_keyed_silver`` computes it."""
    converters = [(name, conv) for name, conv in silver_converters(kinds, metas) if name in pk]

    def run(batches: Any) -> Any:
        import pyarrow as pa

        for batch in batches:
            batch = _named(batch, names)
            cols = [(name, conv, batch.column(name).to_pylist()) for name, conv in converters]
            keys = [row_key({name: conv(values[i]) for name, conv, values in cols}, pk) for i in range(batch.num_rows)]
            yield batch.append_column("row_key", pa.array(keys, pa.string()))

    return run


def _add_base(folder: _Folder, key: str, st: RowState) -> None:
    """Silver's state of a key from its base records: its physical rows (tables without a primary key: how
    many equal rows) and its tombstone (a key deleted by a MERGE whose checkpoint is not written yet)."""
    have = folder.base.get(key)
    if have is None:
        folder.base[key] = st
    elif not st.live:
        if not have.live and st.seq > have.seq:
            folder.base[key] = st
    elif not have.live:  # a live silver row wins: a tombstone is written before the MERGE that deletes
        folder.base[key] = st
    else:
        folder.base[key] = RowState(have.values, max(have.seq, st.seq), have.op, have.count + st.count)


def _fold_partition(
    pks: dict[TableId, Optional[list[str]]],
    temporals: dict[TableId, list[tuple[str, str]]],
    history: bool,
    normalize: dict[TableId, list[tuple[str, str]]],
    exact_keys: frozenset[TableId] = frozenset(),
) -> Any:
    """mapInArrow function: sorted fold records -> OUT_COLUMNS rows, one group (table, key) at a time. Counts
    the zero or invalid dates a state writes as NULL per column (``invalid_temporal`` counters). In the
    ``exact_keys`` tables (:attr:`TableInfo.keys_exact`, a primary key), a group's fold key is the row key
    its changes touch (bronze computed it as ``row_key``), so the fold does not encode keys again."""

    def run(batches: Any) -> Any:
        out: list[tuple] = []
        stats: Counter = Counter()
        group: Optional[tuple[str, str, str]] = None
        folder: Optional[_Folder] = None
        norm = None

        def flush() -> None:
            if folder is None or group is None:
                return
            db, table, _ = group
            res = folder.out
            dumps = compact_json
            checks = temporals.get((db, table), ())
            for key, st in folder.state.items():
                base = folder.base.get(key)
                out.append(
                    (
                        "state",
                        db,
                        table,
                        key,
                        st.encoded(),
                        st.seq,
                        st.op,
                        st.count if st.live else 0,
                        base.count if base is not None and base.live else 0,
                        None,
                        None,
                    )
                )
                if st.live:
                    for name, kind in checks:
                        if invalid_temporal(kind, st.values.get(name)):
                            stats[f"invalid_temporal\x00{db}\x00{table}\x00{name}"] += 1
            for rec in res.quarantine:
                out.append(
                    (
                        "quarantine",
                        db,
                        table,
                        None,
                        None,
                        rec[SEQ_COL],
                        None,
                        None,
                        None,
                        None,
                        json.dumps(rec, ensure_ascii=False, default=str),
                    )
                )
            if history:
                last = {(key, st.seq): (key, st, ts) for key, st, ts in res.history}
                for key, st, ts in last.values():
                    out.append(("history", db, table, key, dumps(st.values), st.seq, st.op, st.count, None, ts, None))
            stats.update(res.stats)

        loads = json.loads
        hint = False
        for batch in batches:
            for (
                db,
                table,
                fold_key,
                is_base,
                file_seq,
                pos,
                row,
                seq,
                op,
                split,
                before,
                after,
                diffs,
                commit_ts,
                binlog_file,
                gtid,
                key,
                values,
                count,
            ) in zip(*(batch.column(n).to_pylist() for n, _ in RECORD_COLUMNS)):
                if (db, table, fold_key) != group:
                    flush()
                    group = (db, table, fold_key)
                    folder = _Folder(pks.get((db, table)), {}, history)
                    cols = normalize.get((db, table))
                    norm = _normalizer(cols) if cols else None
                    hint = bool(fold_key) and (db, table) in exact_keys
                    if len(out) >= OUT_BATCH_ROWS:
                        yield from to_arrow(OUT_COLUMNS, out).to_batches()
                        out = []
                assert folder is not None
                if is_base:
                    _add_base(folder, key, RowState(loads(values), seq, op, count))
                    continue
                ch = Change(
                    seq,
                    (file_seq, pos, row),
                    op,
                    loads(before) if before else None,
                    loads(after) if after else None,
                    loads(diffs) if diffs else None,
                    commit_ts,
                    binlog_file,
                    gtid,
                    split or "",
                    fold_key if hint else None,
                    after,
                )
                if norm is not None:
                    ch = dataclasses.replace(ch, before=norm(ch.before), after=norm(ch.after), after_text=None)
                folder.step(ch)
        flush()
        out.append(("stats", None, None, None, None, None, None, None, None, None, json.dumps(stats)))
        yield from to_arrow(OUT_COLUMNS, out).to_batches()

    return run


def fold_batch(
    spark: "SparkSession",
    engine: "DeltaEngine",
    lake: "LakeLayout",
    batch: "DataFrame",
    info: BatchInfo,
    history: bool,
    temporal_text: bool,
    *,
    source: str,
    after_seq: int,
) -> "DataFrame":
    """The folded batch (OUT_COLUMNS): key states, history versions, quarantine records, counters."""
    from pyspark.sql import functions as F

    records = change_records(batch, info, temporal_text)
    bases = base_records(spark, engine, lake, batch, info, source, after_seq)
    if bases is not None:
        records = records.unionByName(bases)
    records = _linked_keys_grouped(spark, records, info)
    records, in_sql = split_fold(records, sql_tables(info, history, temporal_text))  # most keys fold in SQL
    pks = {t: ti.pk for t, ti in info.tables.items()}
    temporals = {
        t: [
            (n, k)
            for n, k in data_columns(column_metas(ti.metas), temporal_text)
            if k in ("date", "timestamp", "timestamp_ntz")
        ]
        for t, ti in info.tables.items()
    }
    n = int(spark.conf.get("spark.sql.shuffle.partitions"))
    folded = (
        records.repartition(n, "db", "table_name", "fold_key")
        .sortWithinPartitions("db", "table_name", "fold_key", F.col("base").desc(), "file_seq", "pos", "row")
        .mapInArrow(
            _fold_partition(
                pks,
                temporals,
                history,
                identity_temporals(info, temporal_text),
                frozenset(t for t, ti in info.tables.items() if ti.pk and ti.keys_exact and not ti.dependent),
            ),
            spark_ddl(OUT_COLUMNS),
        )
    )
    return folded if in_sql is None else folded.unionByName(in_sql)


def _staged(spark: "SparkSession", folded: "DataFrame", folder: Path) -> "DataFrame":
    """The folded batch, computed once: executors write it as Parquet under the lake's staging folder and every
    later step reads those files. Caching would not do: delta-spark recomputes each cached plan that reads a
    table it writes, and the fold reads silver and ``meta/tombstones``, which the steps after it change (the
    recomputed fold took the batch's own tombstones for applied changes and lost their history versions)."""
    folded.write.mode("overwrite").parquet(str(folder))
    return spark.read.schema(folded.schema).parquet(str(folder))


# --- 4. typed frames to write --------------------------------------------------------------------------------------


def _silver_rows(r: dict[str, Any], row: list, has_pk: bool) -> list[tuple]:
    """The MERGE source rows of one folded key: a primary-key row (``_binlake_op = 'delete'`` removes it); for a
    table without one, the equal rows that change: ordinals ``[count, base)`` are deleted, ``[base, count)``
    inserted, and when rows were deleted the remaining ones take the change's ``_binlake_seq`` (so a rerun
    knows the deletion is applied)."""
    seq = r["seq"]
    if has_pk:
        return [tuple(row + [seq, r["op"]])]
    count, base = r["count"] or 0, r["base_count"] or 0
    out = [tuple(row + [seq, DELETE, i]) for i in range(count, base)]
    out += [tuple(row + [seq, "insert", i]) for i in range(base, count)]
    if count < base:
        out += [tuple(row + [seq, "update", i]) for i in range(count)]
    return out


def _typed(columns: list[tuple[str, str]], kind: str, has_pk: bool) -> Any:
    """mapInArrow function: OUT_COLUMNS rows of one table -> its silver MERGE source (``state``) or its SCD2
    history rows (``history``)."""
    from binlake.binlog.silver_types import to_silver

    convert = [(name, to_silver(k)) for name, k in columns]
    history = kind == "history"
    target = (
        table_columns(columns, has_pk)
        if not history
        else [
            *columns,
            (KEY_COL, "string"),
            (SEQ_COL, "bigint"),
            (OP_COL, "string"),
            (COMMIT_TS_COL, "bigint"),
            *([] if has_pk else [(COUNT_COL, "bigint")]),
        ]
    )

    def run(batches: Any) -> Any:
        for batch in batches:
            rows: list[tuple] = []
            for r in batch.to_pylist():
                v = json.loads(r["values"])
                row = [conv(v.get(name)) for name, conv in convert]
                if history:
                    rows.append(
                        tuple(
                            row + [r["row_key"], r["seq"], r["op"], r["commit_ts"]] + ([] if has_pk else [r["count"]])
                        )
                    )
                else:
                    rows += _silver_rows(r, row, has_pk)
            if rows:
                yield from to_arrow(target, rows).to_batches()

    return run, target


def table_frame(
    folded: "DataFrame",
    kind: str,
    table: TableId,
    columns: list[tuple[str, str]],
    has_pk: bool,
    metas: Optional[dict[str, list]] = None,
) -> "DataFrame":
    """One table's silver MERGE source (``kind="state"``) or SCD2 history rows (``kind="history"``). A primary-key
    table's states whose every column converts in SQL (``metas``: the columns' bronze descriptions;
    :func:`binlake.lake.fold_sql.sql_typable`) are converted there, not in Python."""
    from pyspark.sql import functions as F

    fn, target = _typed(columns, kind, has_pk)
    rows = folded.filter((F.col("kind") == kind) & (F.col("db") == table[0]) & (F.col("table_name") == table[1]))
    if kind == "state" and has_pk and metas is not None and sql_typable(columns, metas):
        return typed_states(rows, columns, lambda odd: odd.mapInArrow(fn, spark_ddl(target)))
    return rows.mapInArrow(fn, spark_ddl(target))


def _state_no_op(info: BatchInfo) -> "Any":
    """Column: a key state that leaves silver as it is (deleted, and silver did not hold it; a table without a
    primary key whose number of equal rows did not change). The rest of the states each change silver, so
    the MERGE runs without its uniqueness and no-op checks (``effective``)."""
    from pyspark.sql import functions as F

    no_pk = [_table_tag(*t) for t, ti in info.tables.items() if not ti.pk]
    unkeyed = F.concat_ws("\x00", "db", "table_name").isin(no_pk) if no_pk else F.lit(False)
    dead = (F.col("op") == DELETE) | (F.col("count") == 0)
    return (F.col("kind") == "state") & (
        (dead & (F.coalesce(F.col("base_count"), F.lit(0)) == 0)) | (unkeyed & (F.col("count") == F.col("base_count")))
    )


def tombstone_frame(folded: "DataFrame", source: str) -> "DataFrame":
    """The keys the batch deleted (a primary key, or the last of equal rows), for ``meta/tombstones``."""
    from pyspark.sql import functions as F

    dead = (F.col("kind") == "state") & ((F.col("op") == DELETE) | (F.col("count") == 0))
    return folded.filter(dead).select(
        F.lit(source).alias("source"), "db", "table_name", "row_key", F.col("seq").alias(SEQ_COL)
    )


def quarantine_frame(folded: "DataFrame", source: str, run_id: str) -> "DataFrame":
    from pyspark.sql import functions as F

    def run(batches: Any) -> Any:
        for batch in batches:
            rows = []
            for r in batch.to_pylist():
                rec = json.loads(r["record"])
                kind = "missing_row" if rec["status"] == "MISSING_ROW" else "json_diff"
                rows.append(
                    quarantine_row(rec, source=source, db=r["db"], table=r["table_name"], kind=kind, run_id=run_id)
                )
            if rows:
                yield from to_arrow(QUARANTINE_COLUMNS, rows).to_batches()

    return folded.filter(F.col("kind") == "quarantine").mapInArrow(run, spark_ddl(QUARANTINE_COLUMNS))


# --- the job -------------------------------------------------------------------------------------------------------


@dataclass
class ApplyReport:
    changes: int = 0
    tables: int = 0
    ops: Counter = field(default_factory=Counter)  # fold counters: insert, update, delete, key_change, ...
    quarantined: int = 0
    invalid_temporals: int = 0  # zero or invalid dates stored as NULL
    checkpoint_seq: Optional[int] = None
    table_names: list[str] = field(default_factory=list)
    ddl: list[str] = field(default_factory=list)  # DDL actions applied at their position
    blocked: dict[str, str] = field(default_factory=dict)  # table -> why its changes go to quarantine
    ddl_tables: set[TableId] = field(default_factory=set)  # tables a DDL of the batch changed (new names)
    schema_mismatches: dict[str, str] = field(default_factory=dict)  # table -> how silver differs from its SDI
    seconds: float = 0.0
    stage_seconds: dict[str, float] = field(default_factory=dict)


def apply_job(
    spark: "SparkSession", engine: "DeltaEngine", lake: "LakeLayout", opts: "RunOptions", run_id: str
) -> ApplyReport:
    """Apply the source's unapplied bronze changes (up to the cutoff) to silver, then move the checkpoint.

    DDL splits the batch: the changes before a DDL statement are applied (and checkpointed), then the DDL
    (``binlake.lake.ddl_apply``: TRUNCATE, DROP, RENAME, ADD/DROP/RENAME/MODIFY COLUMN), then its own checkpoint,
    so a rerun never applies a DDL twice. A DDL binlake can not follow blocks that table: its later changes go
    to quarantine (kind ``schema``) while every other table keeps loading."""
    from pyspark.sql import functions as F

    from binlake.pipeline.ddl import parse_ddl

    reset_crash_counts()
    started = time.perf_counter()
    report = ApplyReport()
    if not engine.exists(lake.bronze):
        return report
    ckpt = read_checkpoint(spark, engine, lake.checkpoints, opts.source)
    t0 = time.perf_counter()
    batch = unapplied(spark, engine, lake.bronze, opts.source, ckpt.seq, opts.cutoff_us)
    table_seams = seams(engine, lake, opts.source)
    batch = after_seams(batch, table_seams)
    layouts = bronze_layouts(spark, engine, lake.bronze, opts.source)
    info = scan_batch(batch, layouts)
    report.stage_seconds["scan"] = time.perf_counter() - t0
    if info.last is None:
        return report
    blocked = read_blocked(spark, engine, lake, opts.source)
    gtids = ckpt.gtid_executed
    ddls = [(d, parse_ddl(d["statement"] or "", d["db"])) for d in sorted(info.ddls, key=lambda d: d[SEQ_COL])]
    ddls = [
        (d, [c for a in actions if not _no_op(engine, lake, a) and (c := _after_seams(a, d, table_seams))])
        for d, actions in ddls
    ]
    ddls = [(d, actions) for d, actions in ddls if actions]
    lo = ckpt.seq
    for ddl, actions in ddls:
        part = batch.filter(F.col(SEQ_COL) < ddl[SEQ_COL]).filter(F.col(SEQ_COL) > lo)
        gtids = _apply_segment(
            spark, engine, lake, opts, run_id, part, scan_batch(part, layouts), blocked, gtids, report, lo
        )
        _apply_ddl(spark, engine, lake, opts, ddl, actions, blocked, report)
        gtids = ",".join(g for g in (gtids, ddl["gtid"]) if g)
        write_checkpoints(
            spark,
            engine,
            lake.checkpoints,
            [_source_row(opts, run_id, ddl[SEQ_COL], ddl["binlog_file"], ddl["pos"], gtids, report)],
        )
        lo = ddl[SEQ_COL]
    if ddls:
        batch = batch.filter(F.col(SEQ_COL) > lo)
        info = scan_batch(batch, layouts)
    if info.last is not None:
        _apply_segment(spark, engine, lake, opts, run_id, batch, info, blocked, gtids, report, lo)
    report.schema_mismatches = check_against_registry(spark, engine, lake, report.ddl_tables, opts.cutoff_us)
    report.seconds = time.perf_counter() - started
    return report


def check_against_registry(
    spark: "SparkSession", engine: "DeltaEngine", lake: "LakeLayout", tables: set[TableId], cutoff_us: Optional[int]
) -> dict[str, str]:
    """After DDL: "db.table" -> how the silver table's columns differ from the table's definition in the SDI
    registry at the run's cutoff (where the registry has one), compared as names, case-insensitively (MySQL's
    column names are). An empty dict: every checked table agrees."""
    import datetime as dt

    from binlake.lake.registry import registry_rows
    from binlake.sdi.dd_types import HT_VISIBLE
    from binlake.sdi.registry import SchemaRegistry

    if not tables:
        return {}
    rows = registry_rows(spark, engine, lake)
    if not rows:
        return {}
    registry = SchemaRegistry.from_rows(rows)
    at = (
        dt.datetime.fromtimestamp(cutoff_us / 1e6, dt.timezone.utc)
        if cutoff_us is not None
        else dt.datetime.now(dt.timezone.utc)
    ).replace(tzinfo=None)
    out = {}
    for db, table in sorted(t for t in tables if t[0] and t[1]):
        version = registry.definition_at(db, table, at)
        path = lake.silver(db, table)
        if version is None or not engine.exists(path):
            continue
        sdi = {c.name.lower(): c.name for c in version.table.columns if c.hidden == HT_VISIBLE}
        silver = {n.lower(): n for n in engine.column_names(path) if not n.startswith("_binlake_")}
        if sdi.keys() != silver.keys():
            only_silver = sorted(silver[k] for k in silver.keys() - sdi.keys())
            only_sdi = sorted(sdi[k] for k in sdi.keys() - silver.keys())
            out[f"{db}.{table}"] = (
                f"silver {db}.{table} differs from its SDI definition (version {version.version}) "
                f"after DDL: only in silver {only_silver}, only in the SDI {only_sdi}"
            )
    return out


def _no_op(engine: "DeltaEngine", lake: "LakeLayout", action: Any) -> bool:
    """A CREATE TABLE of a table silver does not hold changes nothing: the batch needs no split there."""
    from binlake.pipeline.ddl import CreateTable

    return (
        isinstance(action, CreateTable)
        and bool(action.db)
        and bool(action.table)
        and not engine.exists(lake.silver(action.db, action.table))
    )


def _before_seam(table: tuple[Any, Any], ddl: dict[str, Any], table_seams: dict[TableId, int]) -> bool:
    """Whether ``table`` was seeded from a snapshot taken after ``ddl``: the snapshot holds the DDL's effect."""
    seam = table_seams.get(table)
    return seam is not None and ddl[SEQ_COL] < seam


def _after_seams(action: Any, ddl: dict[str, Any], table_seams: dict[TableId, int]) -> Any:
    """What of a DDL action applies to tables seeded from snapshots (a statement before a table's seam never
    applies to it): None when it touches only such a table; a DROP DATABASE spares them (``keep``); a RENAME onto
    one only retires the old name (the snapshot holds the table under its new name)."""
    from binlake.pipeline.ddl import DropDatabase, DropTable, RenameTable

    if isinstance(action, DropDatabase):
        keep = frozenset(t for (db, t) in table_seams if db == action.db and _before_seam((db, t), ddl, table_seams))
        return dataclasses.replace(action, keep=keep) if keep else action
    if _before_seam((getattr(action, "db", None), getattr(action, "table", None)), ddl, table_seams):
        return None
    if isinstance(action, RenameTable) and _before_seam(
        (action.new_db or action.db, action.new_table), ddl, table_seams
    ):
        return DropTable(action.db, action.table)
    return action


def read_blocked(spark: "SparkSession", engine: "DeltaEngine", lake: "LakeLayout", source: str) -> dict[TableId, str]:
    """(db, table) -> why the source's changes to it go to quarantine: a DDL binlake can not follow blocked it,
    or another source owns it. Two sources, one table: the table belongs to the first source that applied
    changes to it (its ``meta.checkpoints`` table row); the other sources' changes to it are quarantined (kind
    ``schema``) with the owner named, never merged in an order nobody defined."""
    out = {}
    for r in engine.read_rows(spark, lake.checkpoints, ("source", "table_name", "blocked")):
        if r["table_name"] == SOURCE_ROW or "." not in (r["table_name"] or ""):
            continue
        db, table = split_table_name(r["table_name"])
        if r["source"] == source and r.get("blocked"):
            out[db, table] = r["blocked"]
        elif r["source"] != source and (db, table) not in out:
            out[db, table] = (
                f"{db}.{table} belongs to source {r['source']!r} (the first to load it); changes of "
                f"source {source!r} to it are quarantined: load each table from one source"
            )
    return out


def _source_row(
    opts: "RunOptions", run_id: str, seq: int, binlog_file: str, pos: int, gtids: str, report: ApplyReport
) -> dict[str, Any]:
    return {
        "source": opts.source,
        "table_name": SOURCE_ROW,
        SEQ_COL: seq,
        "binlog_file": binlog_file,
        "pos": pos,
        "gtid_executed": GtidSet.parse(gtids).to_text(),
        "changes": report.changes,
        "quarantined": report.quarantined,
        "run_id": run_id,
    }


def _apply_ddl(
    spark: "SparkSession",
    engine: "DeltaEngine",
    lake: "LakeLayout",
    opts: "RunOptions",
    ddl: dict[str, Any],
    actions: list,
    blocked: dict[TableId, str],
    report: ApplyReport,
) -> None:
    """The actions of one DDL statement, at its position; a table binlake can not follow is blocked."""
    import datetime as dt

    from binlake.lake.ddl_apply import Quarantine, apply_action

    when = dt.datetime.fromtimestamp(ddl["commit_ts"] / 1e6, dt.timezone.utc) if ddl["commit_ts"] else None
    rows = []
    for action in actions:
        table = (getattr(action, "db", None), getattr(action, "table", None))
        if table in blocked or (table[1] is not None and not opts.tables.keeps(*table)):  # or --exclude'd
            continue
        outcome = apply_action(
            spark,
            engine,
            lake,
            action,
            now=when,
            seq=ddl[SEQ_COL],
            commit_ts=ddl["commit_ts"],
            type_options={"temporal_text": opts.temporal_text},
            statement=ddl["statement"],
        )
        report.ddl.append(f"{type(action).__name__} {table[0]}.{table[1]}")
        renamed = (getattr(action, "new_db", None) or table[0], getattr(action, "new_table", None))
        report.ddl_tables.add(renamed if renamed[1] else table)
        if isinstance(outcome, Quarantine):
            blocked[outcome.db, outcome.table] = outcome.message
            report.blocked[f"{outcome.db}.{outcome.table}"] = outcome.message
            rows.append(
                {
                    "source": opts.source,
                    "table_name": table_name(outcome.db, outcome.table),
                    SEQ_COL: ddl[SEQ_COL],
                    "blocked": outcome.message,
                }
            )
    if rows:
        write_checkpoints(spark, engine, lake.checkpoints, rows)


def _apply_segment(
    spark: "SparkSession",
    engine: "DeltaEngine",
    lake: "LakeLayout",
    opts: "RunOptions",
    run_id: str,
    batch: "DataFrame",
    info: BatchInfo,
    blocked: dict[TableId, str],
    gtids: str,
    report: ApplyReport,
    after_seq: int,
) -> str:
    """Fold and write one stretch of the batch without DDL inside (its rows after the checkpoint ``after_seq``),
    then its checkpoint; returns the GTID set."""
    from pyspark.sql import functions as F

    if info.last is None:
        return gtids
    excluded = [t for t in info.tables if not opts.tables.keeps(*t)]  # --exclude: rows ingested before it
    if excluded:
        batch = batch.filter(~F.concat_ws("\x00", "db", "table_name").isin([_table_tag(*t) for t in excluded]))
        for t in excluded:
            info.changes -= info.tables.pop(t).changes
    held = {t: why for t, why in blocked.items() if t in info.tables}
    held.update(
        {
            t: reserved_reason(*t, names)
            for t, ti in info.tables.items()  # a column named _binlake_*
            if t not in held and (names := reserved_names(ti.metas))
        }
    )
    if held:  # a blocked table's changes: quarantined with the reason, not folded
        tags = [_table_tag(*t) for t in held]
        in_held = F.concat_ws("\x00", "db", "table_name").isin(tags)
        changes = batch.filter(in_held & F.col("op").isin(*CHANGE_OPS))
        report.blocked.update({f"{db}.{t}": why for (db, t), why in held.items()})
        report.quarantined += _write_blocked(spark, engine, lake, changes, held, opts.source, run_id)
        batch = batch.filter(~in_held)
        for t in held:
            info.changes -= info.tables.pop(t).changes
    t0 = time.perf_counter()
    staged = scratch_folder(lake.staging, f"fold-{run_id}-{info.last[0]}")  # not through a link
    folded = _staged(
        spark,
        fold_batch(
            spark, engine, lake, batch, info, opts.history, opts.temporal_text, source=opts.source, after_seq=after_seq
        ),
        staged,
    )
    ops: Counter = Counter()
    try:
        dead = (F.col("kind") == "state") & ((F.col("op") == DELETE) | (F.col("count") == 0))
        counts: Counter = Counter()
        for r in (
            folded.groupBy("kind", "db", "table_name", dead.alias("dead"), _state_no_op(info).alias("no_op"))
            .agg(
                F.count(F.lit(1)).alias("count"),
                F.collect_list(F.when(F.col("kind") == "stats", F.col("record"))).alias("stats"),
            )
            .collect()
        ):
            for stats in r["stats"]:
                ops.update(stats_counts(stats))
            counts[r["kind"], r["db"], r["table_name"]] += r["count"]
            counts["dead"] += r["count"] if r["dead"] and not r["no_op"] else 0
            if r["kind"] == "state" and not r["no_op"]:
                counts["effective", r["db"], r["table_name"]] += r["count"]
        _add_seconds(report, "fold", t0)
        t0 = time.perf_counter()
        quarantined = _write_quarantine(
            spark, engine, lake, folded, info, opts.source, run_id, {t: counts["quarantine", *t] for t in info.tables}
        )
        report.quarantined += sum(quarantined.values())
        crash_point("after_quarantine")
        if counts["dead"]:  # before the MERGEs that delete them: a rerun knows what a deleted key had (a
            # key silver did not hold needs none: its MERGE source is empty, a rerun folds it to the same no-op)
            # tombstones and history versions are one row per key by the fold's construction, and new unless
            # a crash came between their MERGE and the checkpoint (then the rerun's MERGE matches and only
            # commits an empty version): ``effective`` skips the checks that cost a Spark job each
            engine.merge(
                lake.tombstones,
                tombstone_frame(folded.filter(~_state_no_op(info)), opts.source),
                ["db", "table_name", "row_key"],
                SEQ_COL,
                op_col=None,
                effective=True,
            )
            crash_point("after_tombstones")
        table_rows = []
        for table in sorted(info.tables):
            ti = info.tables[table]
            cols = data_columns(column_metas(ti.metas), opts.temporal_text)
            has_pk = bool(ti.pk)
            if opts.history and counts.get(("history", *table)):
                engine.merge(
                    lake.history(*table),
                    table_frame(folded, "history", table, cols, has_pk),
                    [KEY_COL, SEQ_COL],
                    SEQ_COL,
                    op_col=None,
                    effective=True,
                )
                crash_point("after_history")
            if counts.get(("effective", *table)):
                keys, null_safe = merge_keys(ti.pk, cols)
                states = table_frame(
                    folded.filter(~_state_no_op(info)), "state", table, cols, has_pk, column_metas(ti.metas)
                )
                engine.merge(
                    lake.silver(*table), states, keys, SEQ_COL, op_col=OP_COL, null_safe_keys=null_safe, effective=True
                )
                lake.record_name(*table)
                crash_point("after_silver")
            prefix = f"invalid_temporal\x00{table[0]}\x00{table[1]}\x00"
            invalid = {k[len(prefix) :]: v for k, v in ops.items() if k.startswith(prefix)}
            table_rows.append(
                {
                    "source": opts.source,
                    "table_name": table_name(*table),
                    SEQ_COL: ti.last_seq,
                    "changes": ti.changes,
                    "quarantined": quarantined.get(table, 0),
                    "run_id": run_id,
                    "invalid_temporals": json.dumps(invalid, sort_keys=True) if invalid else None,
                }
            )
        _add_seconds(report, "merge", t0)
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    report.changes += info.changes
    report.table_names = sorted(set(report.table_names) | {f"{db}.{t}" for db, t in info.tables})
    report.tables = len(report.table_names)
    report.invalid_temporals += sum(v for k, v in ops.items() if k.startswith("invalid_temporal\x00"))
    report.ops.update({k: v for k, v in ops.items() if not k.startswith("invalid_temporal\x00")})
    gtids = ",".join(g for g in (gtids, info.gtids) if g)
    last, last_file, last_pos = info.last
    crash_point("before_checkpoint")
    write_checkpoints(
        spark,
        engine,
        lake.checkpoints,
        [_source_row(opts, run_id, last, last_file, last_pos, gtids, report), *table_rows],
    )
    report.checkpoint_seq = last
    return gtids


def _add_seconds(report: ApplyReport, stage_name: str, since: float) -> None:
    report.stage_seconds[stage_name] = report.stage_seconds.get(stage_name, 0.0) + time.perf_counter() - since


def _write_blocked(
    spark: "SparkSession",
    engine: "DeltaEngine",
    lake: "LakeLayout",
    changes: "DataFrame",
    held: dict[TableId, str],
    source: str,
    run_id: str,
) -> int:
    """Quarantine the changes of blocked tables (kind ``schema``, with why the table is blocked)."""
    reasons = {_table_tag(*t): why for t, why in held.items()}

    def run(batches: Any) -> Any:
        for batch in batches:
            rows = [
                quarantine_row(
                    {
                        SEQ_COL: r[SEQ_COL],
                        "binlog_file": r["binlog_file"],
                        "pos": r["pos"],
                        "row": r["row"],
                        "column_name": "",
                        "status": "BLOCKED",
                        "reason": reasons[_table_tag(r["db"], r["table_name"])],
                        "document": r["after"] or r["before"],
                        "gtid": r["gtid"],
                    },
                    source=source,
                    db=r["db"],
                    table=r["table_name"],
                    kind="schema",
                    run_id=run_id,
                )
                for r in batch.to_pylist()
            ]
            if rows:
                yield from to_arrow(QUARANTINE_COLUMNS, rows).to_batches()

    frame = changes.mapInArrow(run, spark_ddl(QUARANTINE_COLUMNS))
    count = frame.count()
    if count:
        write_quarantine(engine, lake.quarantine, frame)
    return count


def _write_quarantine(
    spark: "SparkSession",
    engine: "DeltaEngine",
    lake: "LakeLayout",
    folded: "DataFrame",
    info: BatchInfo,
    source: str,
    run_id: str,
    records: dict[TableId, int],
) -> dict[tuple, int]:
    """The fold's quarantine records (``records``: how many per table) and the batch's undecodable stretches,
    in one insert-only MERGE; returns how many the batch quarantined per (db, table) (rows already there from
    an interrupted earlier run included; (None, None) for undecodable stretches)."""
    errors = [
        quarantine_row(
            {
                SEQ_COL: e[SEQ_COL],
                "binlog_file": e["binlog_file"],
                "pos": e["pos"],
                "row": 0,
                "column_name": "",
                "status": "ERROR",
                "reason": e["statement"],
                "raw": e["raw"],
            },
            source=source,
            db=None,
            table=None,
            kind="decode",
            run_id=run_id,
        )
        for e in info.errors
    ]
    per_table: dict[tuple, int] = {t: n for t, n in records.items() if n}
    if errors:
        per_table[None, None] = len(errors)
    if per_table:
        frame = quarantine_frame(folded, source, run_id)
        if errors:
            frame = frame.unionByName(spark.createDataFrame(to_arrow(QUARANTINE_COLUMNS, errors)))
        write_quarantine(engine, lake.quarantine, frame)
    return per_table
