"""Step 2 of apply, the scan: one pass over the batch, aggregated per partition in the executors: its tables,
their primary keys and column layouts, the GTIDs, the last position, the undecodable stretches and DDL
statements, and the tables whose key-changing updates depend on the old row (:meth:`TableInfo.key_groups`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator, Optional

from binlake.lake.apply.batch import TableId
from binlake.lake.errors import LayoutMissingError
from binlake.pipeline.filters import GtidSet
from binlake.vocabulary import CHANGE_OPS, LAYOUT_OP, SEQ_COL

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from binlake.lake.delta import DeltaEngine

MAX_KEY_LINKS = 100_000  # key-changing updates of a table the driver groups by key; beyond: one group


@dataclass
class TableInfo:
    pk: Optional[list[str]] = None
    metas: set[str] = field(default_factory=set)
    last_seq: int = -1
    dependent: bool = False  # has a key-changing update that needs the old row (see key_groups)
    links: Optional[list[tuple[str, str]]] = field(default_factory=list)  # (old key, new key) of its
    # key-changing updates; None: more than MAX_KEY_LINKS
    layouts: set[str] = field(default_factory=set)  # layout ids of its change rows
    key_change_after: dict[str, int] = field(default_factory=dict)  # layout id -> fewest after-image columns
    # of its key-changing updates without diffs (fewer than the layout's columns: a MINIMAL image, dependent)
    legacy: bool = False  # has change rows that carry their own columns (bronze before layout rows)
    keys_exact: bool = False  # every layout has the same primary key: bronze's row keys are the fold's
    ops: dict[str, int] = field(default_factory=dict)  # change rows by op (insert, update, delete)
    last_commit_ts: Optional[int] = None  # newest commit time of its change rows
    # what its change rows may hold, True unless the bronze writer checked every row (a footer scan, with
    # binlake.pipeline.bronze_native.ImageFacts): an UPDATE without JSON diffs whose after image lacks columns of
    # its layout (a MINIMAL image), an after image with a zero or invalid date
    maybe_minimal: bool = False
    maybe_invalid_temporal: bool = False

    def add(self, other: "TableInfo") -> None:
        self.pk = other.pk or self.pk
        self.metas |= other.metas
        self.last_seq = max(self.last_seq, other.last_seq)
        self.dependent |= other.dependent
        if self.links is None or other.links is None or len(self.links) + len(other.links) > MAX_KEY_LINKS:
            self.links = None
        else:
            self.links += other.links
        self.legacy |= other.legacy
        self.maybe_minimal |= other.maybe_minimal
        self.maybe_invalid_temporal |= other.maybe_invalid_temporal
        self.layouts |= other.layouts
        for lid, n in other.key_change_after.items():
            self.key_change_after[lid] = min(n, self.key_change_after.get(lid, n))
        for op, n in other.ops.items():
            self.count(op, n, other.last_commit_ts)

    @property
    def changes(self) -> int:
        """Its change rows."""
        return sum(self.ops.values())

    def count(self, op: str, n: int, commit_ts: Optional[int]) -> None:
        """Add ``n`` change rows of ``op``, the newest committed at ``commit_ts``."""
        self.ops[op] = self.ops.get(op, 0) + n
        if commit_ts is not None and (self.last_commit_ts is None or commit_ts > self.last_commit_ts):
            self.last_commit_ts = commit_ts

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
        t.last_seq = max(t.last_seq, seq)
        t.count(op, 1, r["commit_ts"])
        t.maybe_minimal = t.maybe_invalid_temporal = True  # (a scan of rows does not look at their images)
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
        info.add(scan_columnar(b))
    yield pa.RecordBatch.from_pydict({"info": [pickle.dumps(info)]}, pa.schema([("info", pa.binary())]))


def key_changes(batch: Any) -> Any:
    """:func:`key_change` of each row of an Arrow batch of bronze or scan rows (a boolean array, null where
    ``op`` is)."""
    import pyarrow.compute as pc

    op, after, before = batch.column("op"), batch.column("key_after"), batch.column("key_before")
    return pc.and_(pc.equal(op, "update"), pc.and_(pc.is_valid(after), pc.fill_null(pc.not_equal(after, before), True)))


def scan_columnar(batch: Any) -> BatchInfo:
    """:func:`_scan` of an Arrow batch of scan rows, the plain changes counted column-wise: a change row naming
    its layout that is no key-changing update adds only its table's count, last seq and layout, the batch's
    GTIDs and last position. Every other row (layouts, DDL, errors, key changes, bronze before layout rows)
    goes through :func:`_scan` as it is."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    op, lid = batch.column("op"), batch.column("layout")
    kc = key_changes(batch)
    plain = pc.fill_null(
        pc.and_(
            pc.and_(pc.is_in(op, pa.array(CHANGE_OPS)), pc.invert(kc)), pc.and_(pc.is_valid(lid), pc.not_equal(lid, ""))
        ),
        False,
    )
    info = _scan(iter(batch.filter(pc.invert(plain)).to_pylist()))
    rows = batch.filter(plain)
    if rows.num_rows:
        ones = pa.array(np.ones(rows.num_rows, dtype=np.int64))
        _add_plain(
            info,
            pa.Table.from_batches([rows.select(PLAIN_GROUP + [SEQ_COL, "commit_ts", "pos"])]).append_column("n", ones),
        )
    return info


PLAIN_GROUP = ["db", "table_name", "layout", "op", "gtid", "binlog_file"]  # what plain change rows group by


def _add_plain(info: BatchInfo, rows: Any) -> None:
    """Add plain change rows to ``info``: an Arrow table of groups of them (``PLAIN_GROUP``, ``n`` rows, the
    newest ``_binlake_seq`` and ``commit_ts``, the ``pos`` of that newest row). Each adds its table's count by
    op, last seq and layout, the batch's GTIDs and last position."""
    import pyarrow.compute as pc

    info.changes += pc.sum(rows.column("n")).as_py()
    for g in (
        rows.group_by(["db", "table_name", "layout", "op"])
        .aggregate([(SEQ_COL, "max"), ("n", "sum"), ("commit_ts", "max")])
        .to_pylist()
    ):
        t = info.tables.setdefault((g["db"], g["table_name"]), TableInfo())
        t.layouts.add(g["layout"])
        t.last_seq = max(t.last_seq, g[f"{SEQ_COL}_max"])
        t.count(g["op"], g["n_sum"], g["commit_ts_max"])
        t.maybe_minimal = t.maybe_invalid_temporal = True
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


def _scan_groups_arrow(batches: Iterator[Any]) -> Iterator[Any]:
    """mapInArrow function: a partition's groups of plain change rows (:func:`_add_plain`) -> one row holding
    its pickled :class:`BatchInfo`."""
    import pickle

    import pyarrow as pa

    info = BatchInfo()
    for b in batches:
        if b.num_rows:
            _add_plain(info, pa.Table.from_batches([b]))
    yield pa.RecordBatch.from_pydict({"info": [pickle.dumps(info)]}, pa.schema([("info", pa.binary())]))


GROUP_IN_JVM_BYTES = 32 << 20  # a batch whose bronze files hold more groups its plain changes in the JVM first


def scan_batch(batch: "DataFrame", lookup: Any) -> BatchInfo:
    """The batch's :class:`BatchInfo` (:func:`scan_frame`), its layouts resolved through ``lookup``."""
    return scan_frame(batch).resolve_layouts(lookup)


def scan_frame(batch: "DataFrame") -> BatchInfo:
    """The batch's :class:`BatchInfo`, scanned in the executors, one small record per partition out. In a batch
    over ``GROUP_IN_JVM_BYTES`` of bronze, plain changes (a change row naming its layout that is no key-changing
    update: nearly all of them) are grouped in the JVM first (:data:`PLAIN_GROUP`: a transaction's rows of one
    table and op become one row) and only the groups cross to Python (:func:`_add_plain`), about half the scan
    of a production-size day; a smaller batch crosses in one pass, which saves the grouping's shuffle stage.
    Other rows cross as they are (:func:`_scan`), an after image only for key-changing updates, raw bytes only
    for undecodable stretches. Not resolved: layouts the batch names but does not hold come from
    :func:`bronze_layouts` in :meth:`BatchInfo.resolve_layouts`."""
    import pickle

    from pyspark.sql import functions as F

    after, before, op, lid = F.col("key_after"), F.col("key_before"), F.col("op"), F.col("layout")
    kc = (op == "update") & after.isNotNull() & ~after.eqNullSafe(before)  # as key_change
    pruned = {"after": F.when(kc, F.col("after")), "raw": F.when(op == "error", F.col("raw"))}
    if _bytes_over(batch, GROUP_IN_JVM_BYTES):
        plain = F.coalesce(op.isin(*CHANGE_OPS) & ~kc & lid.isNotNull() & (lid != ""), F.lit(False))
        groups = (
            batch.filter(plain)
            .groupBy(*PLAIN_GROUP)
            .agg(
                F.count(F.lit(1)).alias("n"),
                F.max(SEQ_COL).alias(SEQ_COL),
                F.max("commit_ts").alias("commit_ts"),
                F.max_by("pos", SEQ_COL).alias("pos"),
            )
            .mapInArrow(_scan_groups_arrow, "info binary")
        )
        batch = batch.filter(~plain)
    else:
        groups = None
    parts = batch.select(*[pruned[c].alias(c) if c in pruned else c for c in SCAN_COLUMNS]).mapInArrow(
        _scan_arrow, "info binary"
    )
    out = BatchInfo()
    for r in (parts if groups is None else parts.union(groups)).collect():
        out.add(pickle.loads(r["info"]))
    return out


def local_file(uri: str) -> Optional[str]:
    """The path of a file URI (or plain path) on this machine's file system; None for another scheme."""
    from urllib.parse import unquote, urlparse

    url = urlparse(uri)
    return unquote(url.path) if url.scheme in ("", "file") else None


def _bytes_over(frame: "DataFrame", limit: int) -> bool:
    """Whether the files ``frame`` reads hold more than ``limit`` bytes (a file not on this machine's file
    system counts as more)."""
    import os

    total = 0
    for name in frame.inputFiles():
        path = local_file(name)
        if path is None:
            return True
        try:
            total += os.path.getsize(path)
        except OSError:
            return True
        if total > limit:
            return True
    return total > limit


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
