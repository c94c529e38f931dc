"""``bronze.binlog_events`` as plain Python: its columns, and the rows one binlog (or one chunk of it) gives.

One row per row change, one ``layout`` row per table layout and chunk (placed before the layout's first change
in the chunk: its ``columns`` and ``primary_key``, which change rows name by their ``layout`` id instead of
repeating them), one per DDL statement, one ``error`` row per undecodable stretch (the rest of the chunk
after it; ``raw`` holds its first :data:`RAW_CAP` bytes, the apply step quarantines it with the reason and those
bytes), one ``chunk_end`` row per chunk but the last, and one ``file_end`` row per file, whose presence in bronze
means the file (with that identity) is completely ingested: the Delta append that adds it is atomic. Their
``statement`` holds the chunk's counters as JSON. (Whether an ``error`` row is kept or stops the source is the
ingest's policy, :data:`DECODE_ERROR_POLICIES`, see ``binlake.lake.ingest``.)

Decoding follows WL#6827: ``reader | filter | applier``: the reader groups events into transactions, the filter
drops rolled back, incomplete, already applied (GTID) transactions and excluded tables, the applier here turns a
transaction into bronze rows, carrying its GTID, start position and commit time.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Optional

from binlake.binlog import BinlogError, Transaction, iter_transactions, open_binlog, row_changes_of
from binlake.binlog.constants import LOG_EVENT_HEADER_LEN, event_type_name
from binlake.binlog.errors import CorruptEventError, SchemaMismatchError
from binlake.binlog.events import BinlogEvent, GtidEvent, QueryEvent, RowsEvent
from binlake.binlog.query_status import client_collation
from binlake.binlog.render import json_diffs, json_image
from binlake.binlog.schema import SchemaProvider
from binlake.binlog.silver_types import column_meta
from binlake.errors import BinlakeError
from binlake.mysqljson import JsonError
from binlake.pipeline.filters import TransactionFilter
from binlake.pipeline.fold import compact_json, row_key
from binlake.pipeline.handlers import Continuation, EventHandler, FilterHandler
from binlake.pipeline.identity import FileIdentity, landing_uri, open_landing, ordering_key
from binlake.sdi.charsets import charset_of
from binlake.vocabulary import CHUNK_END_OP, FILE_END_OP, LAYOUT_OP, SEQ_COL

# (column, Spark SQL type, nullable): the schema of bronze.binlog_events
BRONZE_SCHEMA: tuple[tuple[str, str, bool], ...] = (
    ("source", "string", False),
    ("binlog_file", "string", False),
    ("file_seq", "int", False),
    ("file_size", "bigint", False),
    ("file_sha256", "string", False),
    ("pos", "bigint", False),  # the rows event's offset (a TRANSACTION_PAYLOAD's for inner events)
    ("row", "int", False),  # row index within the event (counting on across a payload)
    (SEQ_COL, "bigint", False),  # ordering_key(file_seq, pos, row)
    ("gtid", "string", True),
    ("trx_pos", "bigint", False),  # the transaction's first event: the transaction id within the source
    ("commit_ts", "bigint", False),  # commit time, microseconds since the epoch (UTC)
    ("db", "string", True),
    ("table_name", "string", True),
    ("op", "string", False),  # insert|update|delete, layout, ddl, error, chunk_end, file_end
    ("before", "string", True),  # images: JSON objects in the `binlake rows` value encoding
    ("after", "string", True),
    ("diffs", "string", True),  # partial JSON: {column: [{"op", "path", "value"}]}
    ("columns", "string", True),  # layout: [[name, type_code, real_type, metadata, unsigned, collation]]
    ("primary_key", "string", True),  # layout: ["col", ...]; null: the table has no primary key
    ("key_before", "string", True),  # fold.row_key of the before image / of the row after the change
    ("key_after", "string", True),  # (null when a MINIMAL after image lacks the key: key unchanged)
    ("event_type", "int", False),
    ("statement", "string", True),  # ddl: the query; error: the reason; file_end: stats JSON
    ("ingest_run", "string", False),
    ("raw", "binary", True),  # error: the stretch's first RAW_CAP bytes, from ``pos``
    ("layout", "string", True),  # change and layout rows: layout_id(columns, primary_key)
)
BRONZE_COLUMNS = tuple(c for c, _, _ in BRONZE_SCHEMA)
OP_INDEX = BRONZE_COLUMNS.index("op")
DECODE_ERROR_POLICIES = ("quarantine", "fail")
RAW_CAP = LOG_EVENT_HEADER_LEN + (64 << 10)  # bytes of an undecodable stretch kept: an event header and 64 KiB


@dataclass(frozen=True, slots=True)
class ChunkTask:
    """One Spark task of the ingest: a file, or a stretch of it that starts at a transaction boundary."""

    path: str
    identity: FileIdentity
    start: int  # 4: the file's start
    end: Optional[int]  # None: to the end of the file (this chunk writes the file_end row)


def _dumps(value: Any) -> Optional[str]:
    return None if value is None else compact_json(value)


def layout_id(columns: Optional[str], primary_key: Optional[str]) -> str:
    """The id of a table layout (the TABLE_MAP's columns and the primary key, as bronze holds them as JSON)."""
    return hashlib.sha256(f"{columns}\n{primary_key}".encode("utf-8", "surrogatepass")).hexdigest()[:16]


def utf8_name(kind: str, name: str) -> str:
    """``name`` (an identifier from a binlog event); :class:`CorruptEventError` when its bytes are not UTF-8:
    MySQL writes identifiers in utf8mb3, and bronze holds text (the caller locates the error)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise CorruptEventError(
            f"{kind} name {name.encode('utf-8', 'surrogateescape')!r} is not UTF-8",
            expected="an identifier in UTF-8",
            found="bytes that are not UTF-8",
        ) from None
    return name


def layout_meta(
    layout: Any, schema_provider: Optional[SchemaProvider]
) -> tuple[str, Optional[str], Optional[str], tuple[int, ...]]:
    """A reader's TableLayout as bronze states it: (layout id, columns JSON, primary key JSON, primary key
    column indexes). A name that is not UTF-8 raises :func:`utf8_name`'s error."""
    tm = layout.table_map
    names = layout.column_names
    for kind, name in (("database", layout.db), ("table", layout.table), *(("column", n) for n in names)):
        utf8_name(kind, name)
    pk_idx = tm.simple_primary_key or tuple(i for i, _ in tm.primary_key_with_prefix or ())
    # full row metadata names the columns: no primary-key field then means the table has none. Without it, the
    # schema registry may know the key; a registry without this layout's version is no error here.
    if not pk_idx and not tm.column_names and schema_provider is not None:
        try:
            schema = schema_provider(tm.db, tm.table, tm.column_types)
        except SchemaMismatchError:
            schema = None
        pk_idx = tuple(i for i, _ in schema.primary_key) if schema is not None else ()
    cols = _dumps([column_meta(c) for c in layout.columns])
    pk_json = _dumps([names[i] for i in pk_idx] if pk_idx else None)
    return layout_id(cols, pk_json), cols, pk_json, tuple(pk_idx)


class BronzeApplier(EventHandler):
    """The applier at the end of the ingest chain: a transaction -> bronze rows (appended to ``rows``; a
    transaction whose rows do not render adds none, and raises the value's error located at its row)."""

    def __init__(
        self,
        task: ChunkTask,
        tf: TransactionFilter,
        run_id: str,
        schema_provider: Optional[SchemaProvider],
        layouts: dict,
    ) -> None:
        self.task, self.tf, self.run_id = task, tf, run_id
        self.schema_provider = schema_provider
        self.layouts = layouts  # id(rows event) -> (event, its TableLayout): layouts_of
        self.rows: list[tuple] = []
        self._meta: dict[int, tuple[str, Optional[str], Optional[str], Optional[list[str]]]] = {}  # id(layout) ->
        self._stated: set[str] = set()  # layout ids with a layout row in this chunk
        ident = task.identity
        self._head = (ident.source, ident.name, ident.sequence, ident.size, ident.sha256)

    def _layout_meta(self, layout: Any) -> tuple[str, Optional[str], Optional[str], Optional[list[str]]]:
        """(layout id, columns JSON, primary key JSON, primary key) of a reader's TableLayout."""
        got = self._meta.get(id(layout))
        if got is None:
            lid, cols, pk_json, pk_idx = layout_meta(layout, self.schema_provider)
            got = (lid, cols, pk_json, [layout.column_names[i] for i in pk_idx] or None)
            self._meta[id(layout)] = got
        return got

    def handle(self, trx: Transaction, cont: Any) -> None:
        out, stated = self.render(trx, self.tf.keeps_table)
        self.rows.extend(out)
        self._stated |= stated
        self.next(trx, cont)

    def first_error(self, unfinished: Transaction) -> Optional[BinlakeError]:
        """The error of a rows event of ``unfinished`` (a transaction the reader failed inside, its events before
        the failure) that comes before the reader's in file order: a name that is not UTF-8, a value that does
        not render. As the native writer meets them, rows events are rendered as they are read; the first error
        in file order wins, in both writers."""
        try:
            self.render(unfinished, lambda db, table, rows: self.tf.tables.keeps(db, table))
        except (BinlogError, JsonError) as exc:
            return exc
        return None

    def render(self, trx: Transaction, keeps_table: Any) -> tuple[list[tuple], set[str]]:
        """A transaction's bronze rows and the layout ids it states (``keeps_table(db, table, rows)``: whether
        a table's rows are kept); raises a rows event's error located at it."""
        gtid = trx.gtid
        trx_pos = trx.start_pos
        commit_us = trx.events[-1].header.timestamp * 1_000_000
        head, run, seq_of = self._head, self.run_id, ordering_key
        out: list[tuple] = []
        stated: set[str] = set()
        file_seq = head[2]
        last_pos, next_row = -1, 0
        for ev in trx.events:
            b = ev.body
            if isinstance(b, GtidEvent) and b.immediate_commit_timestamp:
                commit_us = b.immediate_commit_timestamp
            elif isinstance(b, RowsEvent) and b.rows:
                layout = self.layouts[id(ev)][1]
                if not keeps_table(layout.db, layout.table, len(b.rows)):
                    continue
                pos = ev.payload_pos if ev.payload_pos is not None else ev.pos
                if pos != last_pos:
                    last_pos, next_row = pos, 0
                try:
                    lid, cols, pk_json, pk = self._layout_meta(layout)
                except BinlogError as exc:
                    raise event_error(exc, self.task.path, ev.pos, ev.payload_pos, ev.header.type_code) from None
                if lid not in self._stated and lid not in stated:
                    stated.add(lid)
                    out.append(
                        (
                            *head,
                            pos,
                            next_row,
                            seq_of(file_seq, pos, next_row),
                            gtid,
                            trx_pos,
                            commit_us,
                            layout.db,
                            layout.table,
                            LAYOUT_OP,
                            None,
                            None,
                            None,
                            cols,
                            pk_json,
                            None,
                            None,
                            ev.header.type_code,
                            None,
                            run,
                            None,
                            lid,
                        )
                    )
                for c in row_changes_of(ev, layout, gtid=gtid, first_row=next_row):
                    try:
                        before, after, diffs = json_image(c.before), json_image(c.after), json_diffs(c.diffs)
                    except BinlogError as exc:  # located as ``binlake rows`` locates it
                        exc.message += f" (row {c.row} of `{c.db}`.`{c.table}`)"
                        raise exc.located(
                            file=self.task.path, offset=c.pos, event_type=event_type_name(c.event_type)
                        ) from None
                    key_before, key_after = change_keys(before, after, pk)
                    out.append(
                        (
                            *head,
                            c.pos,
                            c.row,
                            seq_of(file_seq, c.pos, c.row),
                            gtid,
                            trx_pos,
                            commit_us,
                            c.db,
                            c.table,
                            c.op,
                            _dumps(before),
                            _dumps(after),
                            _dumps(diffs),
                            None,
                            None,
                            key_before,
                            key_after,
                            c.event_type,
                            None,
                            run,
                            None,
                            lid,
                        )
                    )
                next_row += len(b.rows)
        if trx.kind == "ddl":
            q = trx.events[-1]
            body = q.body
            assert isinstance(body, QueryEvent)
            try:
                db = utf8_name("database", body.db) or None
            except BinlogError as exc:
                raise event_error(exc, self.task.path, q.pos, q.payload_pos, q.header.type_code) from None
            q_pos = q.payload_pos if q.payload_pos is not None else q.pos
            out.append(
                (
                    *head,
                    q_pos,
                    0,
                    seq_of(file_seq, q_pos, 0),
                    gtid,
                    trx_pos,
                    commit_us,
                    db,
                    None,
                    "ddl",
                    None,
                    None,
                    None,
                    None,
                    None,
                    None,
                    None,
                    q.header.type_code,
                    statement_text(body),
                    run,
                    None,
                    None,
                )
            )
        return out, stated


def event_error(exc: BinlogError, file: str, pos: int, payload_pos: Optional[int], type_code: int) -> BinlogError:
    """``exc`` located at its event: the event's file offset, or for an event inside a TRANSACTION_PAYLOAD the
    payload's, with the inner offset in the message (as the reader locates the errors of inner events)."""
    if payload_pos is None:
        return exc.located(file=file, offset=pos, event_type=event_type_name(type_code))
    exc.message += f" (inside TRANSACTION_PAYLOAD_EVENT at {payload_pos}, inner offset {pos})"
    return exc.located(file=file, offset=payload_pos, event_type=event_type_name(type_code))


def layouts_of(
    events: Iterable[BinlogEvent], tables: dict, out: dict, seen: Optional[list] = None
) -> Iterator[BinlogEvent]:
    """The events, noting in ``out`` the layout each rows event was decoded with (``id(event) -> (event,
    layout)``): a later TABLE_MAP of the same table id in its transaction replaces the reader's map (MySQL's
    rule: the latest TABLE_MAP of a table id wins, as the server's applier overwrites its map), never for the rows
    read before it. Each event is also appended to ``seen`` when given (the caller trims it)."""
    for ev in events:
        b = ev.body
        if isinstance(b, RowsEvent) and b.rows:
            out[id(ev)] = (ev, tables[b.table_id])
        if seen is not None:
            seen.append(ev)
        yield ev


def statement_text(query: QueryEvent) -> str:
    """A QUERY event's statement as bronze holds it: its bytes in the client character set it was written in
    (``Q_CHARSET_CODE``; a latin1 client's ``COMMENT 'café'`` is not UTF-8), as the server read them, else
    UTF-8 (the decoder's text). Bytes that character set does not map become U+FFFD: bronze always gets text."""
    text = query.query
    collation = client_collation(query.status_vars)
    charset = charset_of(collation) if collation is not None else None
    codec = charset.codec if charset is not None else "utf-8"
    if codec == "utf-8":
        try:
            text.encode("utf-8")
            return text
        except UnicodeEncodeError:
            pass
    return text.encode("utf-8", "surrogateescape").decode(codec, "replace")


def change_keys(
    before: Optional[dict], after: Optional[dict], pk: Optional[list[str]]
) -> tuple[Optional[str], Optional[str]]:
    """The row keys (:func:`binlake.pipeline.fold.row_key`) a change touches: its before image's, and the
    row's after it (before image overlaid with the after image), when that holds the whole key."""
    key_before = row_key(before, pk) if before is not None else None
    key_after = None
    if after is not None:
        merged = {**before, **after} if before else after
        if not pk or all(c in merged for c in pk):
            key_after = row_key(merged, pk)
    return key_before, key_after


BATCH_ROWS = 8192  # bronze rows handed on at a time by iter_chunk_rows


def decode_chunk(
    task: ChunkTask, tf: TransactionFilter, run_id: str, schema_provider: Optional[SchemaProvider] = None
) -> list[tuple]:
    """All bronze rows of one chunk as one list (tests and small inputs; the pipeline streams
    :func:`iter_chunk_rows`)."""
    return [row for rows in iter_chunk_rows(task, tf, run_id, schema_provider) for row in rows]


def iter_chunk_rows(
    task: ChunkTask,
    tf: TransactionFilter,
    run_id: str,
    schema_provider: Optional[SchemaProvider] = None,
    batch_rows: int = BATCH_ROWS,
) -> Iterator[list[tuple]]:
    """Bronze rows (tuples in :data:`BRONZE_COLUMNS` order) of one chunk, in lists of about ``batch_rows``
    (whole transactions: memory stays bounded by a batch plus the largest transaction). Never raises for bad
    input: a decode error ends the chunk with an ``error`` row holding the reason, naming the file and offset,
    and the stretch's first :data:`RAW_CAP` bytes (rows of the transactions before it are kept). The chunk's
    last row (``chunk_end``/``file_end``) carries its counters, bronze rows per op included."""
    binlog = open_binlog(
        landing_uri(task.path),
        start_position=task.start if task.start > 4 else None,
        schema_provider=schema_provider,
        stop_at_incomplete=True,
    )
    layouts: dict[int, tuple] = {}
    applier = BronzeApplier(task, tf, run_id, schema_provider, layouts)
    chain = FilterHandler(tf)
    chain.plug(applier)
    end_pos = task.start
    transactions = 0
    open_at_end = False
    ops: dict[str, int] = {}

    def handed(rows: list[tuple]) -> list[tuple]:
        for r in rows:
            op = r[OP_INDEX]
            ops[op] = ops.get(op, 0) + 1
        return rows

    error: Optional[BinlakeError] = None
    cont = Continuation()
    unread: list[BinlogEvent] = []  # events read since the last handled transaction's end
    reading = True
    try:
        for trx in iter_transactions(layouts_of(binlog, binlog.context.tables, layouts, unread)):
            if task.end is not None and trx.start_pos >= task.end:
                break
            cont.signal()
            reading = False
            try:
                chain.handle(trx, cont)
            except (BinlogError, JsonError):
                tf.stats.kept -= 1  # it is in the error stretch, not in bronze
                raise
            reading = True
            layouts.clear()  # the reader is at this transaction's end (or the next GTID)
            last = trx.events[-1]
            del unread[: next(i for i in range(len(unread) - 1, -1, -1) if unread[i] is last) + 1]
            open_at_end = trx.kind == "open"
            if not open_at_end:
                end_pos = trx.end_pos
                transactions += 1
            if len(applier.rows) >= batch_rows:
                yield handed(applier.rows)
                applier.rows = []
    except (BinlogError, JsonError) as exc:  # bad bytes: the stretch from here on is quarantined
        error = exc
        if reading:  # the reader failed inside a transaction: an error of its rows read before comes first
            for trx in iter_transactions(unread):
                if task.end is None or trx.start_pos < task.end:
                    error = applier.first_error(trx) or error
    rows = handed(applier.rows)
    counts = ChunkCounts(
        transactions,
        end_pos,
        open_at_end,
        sum(binlog.stats.events.values()),
        binlog.stats.unknown_total,
        binlog.stats.incomplete is not None,
        ops,
    )
    rows.extend(chunk_end_rows(task, tf, run_id, error, counts))
    yield rows


@dataclass
class ChunkCounts:
    """What the decode of a chunk counted, for its end row."""

    transactions: int
    end_pos: int  # just past the last complete transaction
    open_at_end: bool  # the input ended inside a transaction
    events: int
    unknown_events: int
    incomplete: bool  # the input ended inside an event
    ops: dict[str, int]  # bronze rows handed on, per op, in first-seen order


def chunk_end_rows(
    task: ChunkTask, tf: TransactionFilter, run_id: str, error: Optional[BinlakeError], counts: ChunkCounts
) -> list[tuple]:
    """The last rows of a chunk: its ``error`` row (``error``: the decode error that ended it) and its
    ``chunk_end``/``file_end`` row with the counters as JSON."""
    ident = task.identity
    head = (ident.source, ident.name, ident.sequence, ident.size, ident.sha256)
    end_pos = counts.end_pos
    if task.end is not None:
        end_pos = task.end
    elif error is None and not counts.open_at_end and not counts.incomplete:
        # the whole file (events after the last group too); a file that grew while it was read was decoded past
        # its identity's size: the next ingest resumes after what was decoded, never inside it
        end_pos = max(ident.size, counts.end_pos)
    rows = []
    ops = dict(counts.ops)
    if error is not None:
        at = error.offset if isinstance(error, BinlogError) and error.offset is not None else end_pos
        located = isinstance(error, BinlogError) and error.file is not None and error.offset is not None
        reason = str(error) if located else f"{task.path}, offset {at}: {error}"
        with open_landing(task.path) as f:
            f.seek(at)
            raw = f.read(max(0, min(RAW_CAP, (task.end or max(ident.size, os.fstat(f.fileno()).st_size)) - at)))
        rows.append(
            (
                *head,
                at,
                0,
                ordering_key(ident.sequence, at, 0),
                None,
                at,
                0,
                None,
                None,
                "error",
                None,
                None,
                None,
                None,
                None,
                None,
                None,
                0,
                reason,
                run_id,
                raw,
                None,
            )
        )
        ops["error"] = ops.get("error", 0) + 1
    s = tf.stats
    stats = {
        "transactions": counts.transactions,
        "kept": s.kept,
        "skipped_gtid": s.skipped_gtid,
        "rolled_back": s.rolled_back,
        "incomplete": s.incomplete,
        "rows_filtered": s.rows_filtered,
        "events": counts.events,
        "unknown_events": counts.unknown_events,
        "end_pos": end_pos,
        "error": error is not None,
        "rows": ops,
    }
    rows.append(
        (
            *head,
            end_pos,
            0,
            ordering_key(ident.sequence, end_pos, 0),
            None,
            end_pos,
            0,
            None,
            None,
            FILE_END_OP if task.end is None else CHUNK_END_OP,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            0,
            _dumps(stats),
            run_id,
            None,
            None,
        )
    )
    return rows
