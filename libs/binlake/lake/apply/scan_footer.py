"""Each bronze file's scan, recorded in its Parquet footer by the ingest task that writes it, so that the apply's
scan of a batch made of whole files reads footers instead of rows.

The task runs :func:`binlake.lake.apply.scan.scan_columnar` (what the apply scan runs in its executors) over
the Arrow batches it writes, as :func:`scan_rows` prunes them, and stores the :class:`BatchInfo` as JSON under
:data:`FOOTER_KEY` with the file's source and its lowest and highest ``_binlake_seq``. The apply adds up the
footers of the files that lie wholly inside its batch and scans rows only for the files that lie partly inside
it (a checkpoint or a cutoff inside the file). Any file of the batch whose source the footers do not tell (bronze
written before this, or rewritten by Spark), seq ranges that overlap, a table with deletion vectors or column
mapping, or a lake not on this machine's file system: the whole batch is scanned as before.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from functools import reduce
from itertools import pairwise
from operator import or_
from typing import TYPE_CHECKING, Any, Optional

from binlake.lake.apply.scan import (
    SCAN_COLUMNS,
    BatchInfo,
    TableInfo,
    key_changes,
    local_file,
    scan_columnar,
    scan_frame,
)
from binlake.vocabulary import SEQ_COL

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

    from binlake.pipeline.bronze_native import ImageFacts

FOOTER_KEY = "binlake.scan"
SCAN_ROWS = 1 << 17  # rows the footer scan gathers before it scans them
FOOTER_VERSION = 1  # bump when BatchInfo, _scan or the scan rows change: older footers are then not used


def scan_rows(batch: "pa.RecordBatch") -> "pa.RecordBatch":
    """A bronze Arrow batch as :func:`binlake.lake.apply.scan.scan_frame` selects it: the scan columns, an after
    image only for a key-changing update, raw bytes only for an undecodable stretch."""
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = {c: batch.column(c) for c in SCAN_COLUMNS}
    kc = pc.fill_null(key_changes(batch), False)
    error = pc.fill_null(pc.equal(columns["op"], "error"), False)
    columns["after"] = _where(kc, columns["after"])
    columns["raw"] = _where(error, columns["raw"])
    return pa.RecordBatch.from_pydict(columns)


def _where(mask: "pa.Array", values: "pa.Array") -> "pa.Array":
    """``values`` where ``mask``, else NULL; all NULL without a data buffer when ``mask`` holds no true (pyarrow's
    ``if_else`` keeps a buffer as large as the input's, which the scan's ``concat_batches`` then copied: most
    of the footer scan's time)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pc.any(mask).as_py():
        return pa.nulls(len(values), values.type)
    return pc.if_else(mask, values, pa.scalar(None, values.type))


class FooterScan:
    """The scan of the batches one ingest task writes to one file (:meth:`add` each, then :meth:`metadata`)."""

    def __init__(self) -> None:
        self.info = BatchInfo()
        self.sources: set[str] = set()
        self.low: Optional[int] = None
        self.high: Optional[int] = None
        self.pending: list[pa.RecordBatch] = []  # scan rows not scanned yet
        self.pending_rows = 0

    def add(self, batch: "pa.RecordBatch") -> None:
        import pyarrow.compute as pc

        if not batch.num_rows:
            return
        self.sources.update(pc.unique(batch.column("source")).to_pylist())
        span = pc.min_max(batch.column(SEQ_COL)).as_py()
        self.low = span["min"] if self.low is None else min(self.low, span["min"])
        self.high = span["max"] if self.high is None else max(self.high, span["max"])
        self.pending.append(scan_rows(batch))
        self.pending_rows += batch.num_rows
        if self.pending_rows >= SCAN_ROWS:
            self._scan_pending()

    def _scan_pending(self) -> None:
        """Scan the rows added since the last scan, in one batch: pyarrow's grouping costs about 2 ms a call,
        which per native batch (about 9,000 rows) was most of the footer scan."""
        import pyarrow as pa

        if self.pending:
            self.info.add(scan_columnar(pa.concat_batches(self.pending)))
        self.pending, self.pending_rows = [], 0

    def metadata(self, facts: Optional["ImageFacts"] = None) -> dict[str, str]:
        """The footer's key-value metadata: none for a file of no rows or of rows of several sources. With
        ``facts`` checked, its tables' :attr:`~binlake.lake.apply.scan.TableInfo.maybe_minimal` and
        ``maybe_invalid_temporal`` are what the writer saw of their layouts."""
        if self.low is None or len(self.sources) != 1 or None in self.sources:
            return {}
        (source,) = self.sources
        self._scan_pending()
        if facts is not None and facts.checked:
            for t in self.info.tables.values():
                if not t.legacy:
                    t.maybe_minimal = bool(t.layouts & facts.minimal)
                    t.maybe_invalid_temporal = bool(t.layouts & facts.invalid_temporal)
        doc = {"version": FOOTER_VERSION, "source": source, "low": self.low, "high": self.high, "info": dump(self.info)}
        return {FOOTER_KEY: json.dumps(doc, separators=(",", ":"))}


@dataclass(frozen=True)
class FileScan:
    """A bronze file's footer scan: its rows' source, lowest and highest ``_binlake_seq``, and scan."""

    source: str
    low: int
    high: int
    info: BatchInfo


def dump(info: BatchInfo) -> dict:
    """``info`` (not resolved: :meth:`BatchInfo.resolve_layouts` runs on the sum) as JSON values."""

    def table(t: TableInfo) -> dict:
        return {
            "pk": t.pk,
            "metas": sorted(t.metas),
            "last_seq": t.last_seq,
            "dependent": t.dependent,
            "links": t.links,
            "layouts": sorted(t.layouts),
            "key_change_after": t.key_change_after,
            "legacy": t.legacy,
            "ops": t.ops,
            "last_commit_ts": t.last_commit_ts,
            "maybe_minimal": t.maybe_minimal,
            "maybe_invalid_temporal": t.maybe_invalid_temporal,
        }

    def stretch(row: dict) -> dict:
        raw = row.get("raw")
        return {**row, "raw": None if raw is None else base64.b64encode(bytes(raw)).decode()}

    return {
        "tables": [[db, name, table(t)] for (db, name), t in info.tables.items()],
        "gtids": info.gtids,
        "last": info.last,
        "errors": [stretch(r) for r in info.errors],
        "ddls": [stretch(r) for r in info.ddls],
        "changes": info.changes,
        "layouts": info.layouts,
    }


def load(doc: dict) -> BatchInfo:
    """The :class:`BatchInfo` :func:`dump` wrote."""

    def table(t: dict) -> TableInfo:
        links = t["links"]
        return TableInfo(
            pk=t["pk"],
            metas=set(t["metas"]),
            last_seq=t["last_seq"],
            dependent=t["dependent"],
            links=None if links is None else [(old, new) for old, new in links],
            layouts=set(t["layouts"]),
            key_change_after=dict(t["key_change_after"]),
            legacy=t["legacy"],
            ops=dict(t["ops"]),
            last_commit_ts=t["last_commit_ts"],
            maybe_minimal=t.get("maybe_minimal", True),  # (footers written before the writer looked)
            maybe_invalid_temporal=t.get("maybe_invalid_temporal", True),
        )

    def stretch(row: dict) -> dict:
        raw = row.get("raw")
        return {**row, "raw": None if raw is None else base64.b64decode(raw)}

    last = doc["last"]
    return BatchInfo(
        tables={(db, name): table(t) for db, name, t in doc["tables"]},
        gtids=doc["gtids"],
        last=None if last is None else (last[0], last[1], last[2]),
        errors=[stretch(r) for r in doc["errors"]],
        ddls=[stretch(r) for r in doc["ddls"]],
        changes=doc["changes"],
        layouts={lid: (columns, pk) for lid, (columns, pk) in doc["layouts"].items()},
    )


def read_footers(batch: "DataFrame", bronze_path: str, source: str) -> Optional[list[FileScan]]:
    """The footer scans of the ``source`` files ``batch`` reads, in seq order; None when a file's source is not
    told by its footer (no footer scan, and its Parquet statistics do not show a single other source), when the
    source's files overlap in seq, or when the files alone do not give bronze's rows (see the module)."""
    import pyarrow.parquet as pq

    if not _plain_table(bronze_path):
        return None
    scans = []
    for uri in batch.inputFiles():
        path = local_file(uri)
        if path is None:
            return None
        try:
            meta = pq.read_metadata(path)
        except OSError:  # (gone, or not Parquet: the row scan reports it)
            return None
        scan = _footer_scan(meta.metadata or {})
        if scan is None:
            if _other_source(meta, source):
                continue
            return None
        if scan.source == source:
            scans.append(scan)
    scans.sort(key=lambda s: s.low)
    if any(b.low <= a.high for a, b in pairwise(scans)):
        return None
    return scans


def _footer_scan(metadata: dict) -> Optional[FileScan]:
    text = metadata.get(FOOTER_KEY.encode())
    if text is None:
        return None
    doc = json.loads(text)
    if doc.get("version") != FOOTER_VERSION:
        return None
    return FileScan(doc["source"], doc["low"], doc["high"], load(doc["info"]))


def _other_source(meta: Any, source: str) -> bool:
    """Whether every row group's statistics of ``source`` hold one value, not ``source``."""
    schema = meta.schema.to_arrow_schema()
    if "source" not in schema.names:
        return False
    index = schema.names.index("source")
    for g in range(meta.num_row_groups):
        stats = meta.row_group(g).column(index).statistics
        if stats is None or not stats.has_min_max or stats.min != stats.max or stats.min == source:
            return False
    return True


def _plain_table(bronze_path: str) -> bool:
    """Whether bronze's Parquet files alone give its rows (delta-rs reads its log; no deletion vectors, no
    column mapping)."""
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaError

    from binlake.lake.delta.rust import check_readable
    from binlake.lake.errors import UnsupportedTableFeatureError

    try:
        check_readable(DeltaTable(bronze_path), bronze_path)
    except (DeltaError, UnsupportedTableFeatureError, OSError):
        return False
    return True


def scan_from_footers(batch: "DataFrame", scans: list[FileScan], after: int, before: Optional[int]) -> BatchInfo:
    """The scan of ``batch``, the rows with ``after`` < seq < ``before`` (None: no upper bound) of the files
    :func:`read_footers` gave ``scans``: the footers of the files wholly inside the range, and
    :func:`binlake.lake.apply.scan.scan_frame` of the rows of those partly inside it (not resolved)."""
    from pyspark.sql import functions as F

    info = BatchInfo()
    parts = []
    for s in scans:
        if s.high <= after or (before is not None and s.low >= before):
            continue
        if s.low > after and (before is None or s.high < before):
            info.add(s.info)
        else:
            parts.append(F.col(SEQ_COL).between(s.low, s.high))
    if parts:
        info.add(scan_frame(batch.filter(reduce(or_, parts))))
    return info
