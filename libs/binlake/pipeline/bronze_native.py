"""Bronze rows of one chunk from the native decoder core (``native/src/bronze.rs``): the rows
:func:`binlake.pipeline.bronze.iter_chunk_rows` gives, byte for byte, as Arrow record batches, with no Python
object per row or value.

The core reads, groups transactions, decodes and renders images, diffs and row keys. It asks Python
(:class:`BronzeDelegate`) once per transaction whether the :class:`~binlake.pipeline.filters.TransactionFilter`
keeps it (the filter counts, as in the Python chain), once per table layout for its bronze layout
(:func:`binlake.pipeline.bronze.layout_meta` on the Python decoder's TABLE_MAP) and whether the table filter keeps
it, and for a DDL's statement. A decode error comes as the Python decoder's typed error after the rows of the
transactions before it; the chunk's error and end rows are :func:`binlake.pipeline.bronze.chunk_end_rows`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, Optional

from binlake.binlog import BinlogError, native
from binlake.binlog.columnar import ArrowCapsules
from binlake.binlog.events import QueryEvent
from binlake.binlog.schema import SchemaProvider
from binlake.mysqljson import JsonError
from binlake.pipeline.bronze import (
    BATCH_ROWS,
    BRONZE_SCHEMA,
    ChunkCounts,
    ChunkTask,
    chunk_end_rows,
    event_error,
    iter_chunk_rows,
    layout_meta,
    statement_text,
    utf8_name,
)
from binlake.pipeline.filters import TransactionFilter
from binlake.pipeline.identity import POS_BITS, open_landing, ordering_key

if TYPE_CHECKING:
    import pyarrow as pa

COLUMNS = tuple((n, t) for n, t, _ in BRONZE_SCHEMA)


@dataclass
class ImageFacts:
    """What the native core saw of a chunk's row images (``BronzeRows.image_facts``), for its file's footer scan
    (:class:`binlake.lake.apply.scan_footer.FooterScan`): the layout ids with an UPDATE (no partial JSON) whose
    after image lacks columns (a MINIMAL image), and those with an after image holding a zero or invalid date.
    ``checked`` only once the native core has written the whole chunk (the Python writer does not look)."""

    checked: bool = False
    minimal: frozenset[str] = frozenset()
    invalid_temporal: frozenset[str] = frozenset()


def iter_chunk_batches(
    task: ChunkTask,
    tf: TransactionFilter,
    run_id: str,
    schema_provider: Optional[SchemaProvider] = None,
    batch_rows: int = BATCH_ROWS,
    facts: Optional[ImageFacts] = None,
) -> Iterator["pa.RecordBatch"]:
    """The bronze rows of one chunk as Arrow record batches: written by the native core where it is built
    (:func:`usable`; it fills ``facts``), else the Python writer's rows (``BINLAKE_NATIVE=0``, no Rust compiler at
    setup)."""
    if usable(task):
        yield from iter_native_batches(task, tf, run_id, schema_provider, batch_rows, facts)
        return
    from binlake.binlog.silver_types import to_arrow

    for rows in iter_chunk_rows(task, tf, run_id, schema_provider, batch_rows):
        yield from to_arrow(COLUMNS, rows).to_batches()


class BronzeDelegate(native.Delegate):
    """The Python side of one native bronze read: the Python decoder's, plus the transaction filter and the
    bronze layouts."""

    def __init__(self, file: str, schema_provider: Optional[SchemaProvider], tf: TransactionFilter) -> None:
        super().__init__(file, schema_provider)
        self.tf = tf

    def layout(self, raw: bytes, body_end: int, pos: int, payload_pos: Optional[int], event_type: int) -> tuple:
        """(table kept, layout id, columns JSON, primary key JSON, primary key indexes or None, db, table) of
        the layout a TABLE_MAP event sets, asked at the first rows event that uses it (at ``pos``, inside the
        payload at ``payload_pos``: where a name that is not UTF-8 is located, as the Python writer locates it)."""
        layout = self.ctx.tables[self.table_map(raw, body_end).table_id]  # type: ignore[attr-defined]
        if not self.tf.tables.keeps(layout.db, layout.table):
            return False, "", "", None, None, "", ""
        try:
            lid, cols, pk_json, pk_idx = layout_meta(layout, self.provider)
        except BinlogError as exc:
            raise event_error(exc, self.file, pos, payload_pos, event_type) from None
        return True, lid, cols, pk_json, list(pk_idx) or None, layout.db, layout.table

    def transaction(self, gtid: Optional[str], kind: str, rows_filtered: int) -> bool:
        """Whether a transaction is kept (counted by the filter, with the rows of excluded tables it held)."""
        if self.tf.keeps_transaction(gtid, kind):
            self.tf.stats.rows_filtered += rows_filtered
            return True
        return False

    def failed(self) -> None:
        """A kept transaction's rows did not render: it is in the error stretch, not in bronze (as in Python)."""
        self.tf.stats.kept -= 1

    def statement_of(self, raw: bytes, body_end: int, pos: int, payload_pos: Optional[int]) -> tuple:
        """(db or None, statement) of the QUERY event that makes a transaction a DDL."""
        body = self.body(raw, body_end, pos, payload_pos)
        assert isinstance(body, QueryEvent)
        try:
            db = utf8_name("database", body.db) or None
        except BinlogError as exc:
            self.tf.stats.kept -= 1  # kept by transaction(), but in the error stretch (as in Python)
            raise event_error(exc, self.file, pos, payload_pos, raw[4]) from None  # the header's type
        return db, statement_text(body)


def usable(task: ChunkTask) -> bool:
    """Whether the native core writes this chunk's bronze rows (built, and positions within the ordering key)."""
    return native.available() and task.identity.size < (1 << POS_BITS)


def iter_native_batches(
    task: ChunkTask,
    tf: TransactionFilter,
    run_id: str,
    schema_provider: Optional[SchemaProvider] = None,
    batch_rows: int = BATCH_ROWS,
    facts: Optional[ImageFacts] = None,
) -> Iterator["pa.RecordBatch"]:
    """The bronze rows of one chunk as record batches of whole transactions (at most about ``batch_rows``
    rows each); the last batch holds the chunk's error and end rows; ``facts`` filled before it. Needs
    :func:`usable`."""
    import pyarrow as pa

    from binlake.binlog.silver_types import arrow_schema, to_arrow

    schema = arrow_schema(COLUMNS)
    ident = task.identity
    ordering_key(ident.sequence, 0, 0)  # a file sequence out of range fails here, as in Python
    delegate = BronzeDelegate(task.path, schema_provider, tf)
    opts = native.options(
        start_position=task.start if task.start > 4 else None, stop_at_incomplete=True, schema_provider=schema_provider
    )
    with open_landing(task.path) as f:
        src = os.dup(f.fileno())
    core = native.load()
    if core is None:
        os.close(src)
        raise RuntimeError("the native core is not available (check bronze_native.usable first)")
    reader = core.BronzeRows(
        src,
        opts,
        delegate,
        (ident.source, ident.name, ident.sequence, ident.size, ident.sha256, run_id),
        task.end,
        batch_rows,
    )
    error: Optional[BinlogError | JsonError] = None
    try:
        try:
            while (capsules := reader.next_batch()) is not None:
                batch = pa.record_batch(ArrowCapsules(capsules))
                yield batch if batch.schema == schema else pa.RecordBatch.from_arrays(batch.columns, schema=schema)
        except (BinlogError, JsonError) as exc:  # bad bytes: the stretch from here on is quarantined
            error = exc
        if facts is not None:
            minimal, invalid_temporal = reader.image_facts()
            facts.minimal, facts.invalid_temporal, facts.checked = frozenset(minimal), frozenset(invalid_temporal), True
        transactions, end_pos, open_at_end, events, unknown, ops, incomplete = reader.counters()
    finally:
        # freed here, on the thread that made it (a BronzeRows is bound to it): an error's traceback keeps this
        # frame, and a cyclic collection on another thread could not free the reader there
        del reader
    counts = ChunkCounts(
        transactions,
        end_pos if transactions else task.start,
        open_at_end,
        events,
        unknown,
        incomplete is not None,
        dict(ops),
    )
    yield from to_arrow(COLUMNS, chunk_end_rows(task, tf, run_id, error, counts)).to_batches()
