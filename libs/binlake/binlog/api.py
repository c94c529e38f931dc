"""The reader API in the spirit of WL#3283: transports by URI, a binlog object, content handlers, transactions,
row sets with typed values, and :func:`iter_row_changes`, the fast path from a file to row changes.

    binlog = open_binlog("/var/lib/mysql/binlog.000042", schema_provider=registry.provider)
    binlog.creation_timestamp                      # R1: from the FORMAT_DESCRIPTION_EVENT header
    for event in binlog: ...                       # every event, through binlog.content_handlers
    for trx in binlog.transactions(): ...          # GTID/BEGIN ... XID/COMMIT/ROLLBACK, DDL alone
    for change in binlog.row_changes(): ...        # RowChange(file, pos, row, gtid, db, table, op, ...)
"""

from __future__ import annotations

import importlib
import os
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Callable, ClassVar, Iterable, Iterator, NamedTuple, Optional, Union

from binlake.binlog import constants as C
from binlake.binlog.decoders import DecodeContext
from binlake.binlog.errors import BinlogError
from binlake.binlog.events import (
    ABSENT,
    AnonymousGtidEvent,
    BinlogEvent,
    DeleteRowsEvent,
    FormatDescriptionEvent,
    GtidEvent,
    JsonPartial,
    MariadbGtidEvent,
    PartialUpdateRowsEvent,
    QueryEvent,
    RowsEvent,
    StartEventV3,
    UpdateRowsEvent,
    WriteRowsEvent,
    XaPrepareEvent,
    XidEvent,
)
from binlake.binlog.reader import MAX_EVENT_SIZE, ReadStats, read_events
from binlake.binlog.schema import SchemaProvider
from binlake.binlog.table import TableLayout

# --- transports ------------------------------------------------------------------------------------------------

Opener = Callable[[str], tuple[str, BinaryIO]]
"""``opener(uri) -> (display name, binary stream)``; the stream is closed by the reader."""

_TRANSPORTS: dict[str, Opener] = {}


def register_transport(scheme: str, opener: Opener) -> None:
    """Make ``scheme://...`` URIs readable by :func:`open_binlog` (WL#3283 ``create_transport``)."""
    _TRANSPORTS[scheme.lower()] = opener


def _file_path(uri: str) -> str:
    return urllib.parse.unquote(urllib.parse.urlparse(uri).path) if uri.startswith("file:") else uri


def _open_file(uri: str) -> tuple[str, BinaryIO]:
    path = _file_path(uri)
    try:
        return path, open(path, "rb")
    except OSError as exc:
        raise BinlogError(f"can not open: {exc.strerror}", file=path) from None


register_transport("file", _open_file)

# Transports in other packages, imported on first use (they import this module to register themselves).
_TRANSPORT_MODULES = {"mysql": "binlake.transport"}


def open_stream(source: Union[str, os.PathLike]) -> tuple[str, BinaryIO]:
    """Open a path or URI through the transport registry."""
    text = os.fspath(source)
    scheme = urllib.parse.urlparse(text).scheme.lower() if "://" in text else ""
    if not scheme or len(scheme) == 1:  # plain path (or a Windows drive letter)
        return _open_file(text)
    opener = _TRANSPORTS.get(scheme)
    if opener is None and scheme in _TRANSPORT_MODULES:  # registers itself on import
        importlib.import_module(_TRANSPORT_MODULES[scheme])
        opener = _TRANSPORTS.get(scheme)
    if opener is None:
        raise BinlogError(
            f"no transport for URI scheme {scheme!r}", file=text, expected=f"one of {sorted(_TRANSPORTS)}", found=scheme
        )
    return opener(text)


# --- content handlers ------------------------------------------------------------------------------------------


class ContentHandler:
    """WL#3283 ``Content_handler``: gets each event and returns it (maybe changed), another event, or None to
    consume it. ``process`` dispatches on the body type to ``on_<kind>`` (on_query, on_rows, on_table_map,
    on_xid, on_gtid, on_rotate, on_format_description...); the default passes the event on unchanged."""

    _METHODS: ClassVar[dict[type, str]] = {}

    def process(self, event: BinlogEvent) -> Optional[BinlogEvent]:
        method = getattr(self, _method_name(type(event.body)), None)
        return method(event) if method is not None else event


def _method_name(body_type: type) -> str:
    name = ContentHandler._METHODS.get(body_type)
    if name is None:
        base = (
            "rows"
            if issubclass(body_type, RowsEvent)
            else "gtid"
            if issubclass(body_type, GtidEvent)
            else "".join("_" + ch.lower() if ch.isupper() else ch for ch in body_type.__name__.removesuffix("Event"))
        )
        name = "on_" + base.lstrip("_")
        ContentHandler._METHODS[body_type] = name
    return name


HandlerLike = Union[ContentHandler, Callable[[BinlogEvent], Optional[BinlogEvent]]]


def apply_handlers(events: Iterable[BinlogEvent], handlers: Iterable[HandlerLike]) -> Iterator[BinlogEvent]:
    """Pass each event through the chain in order; a handler returning None consumes it."""
    chain = [h.process if isinstance(h, ContentHandler) else h for h in handlers]
    if not chain:
        yield from events
        return
    for event in events:
        out: Optional[BinlogEvent] = event
        for handle in chain:
            out = handle(out)
            if out is None:
                break
        if out is not None:
            yield out


# --- transactions ----------------------------------------------------------------------------------------------


@dataclass
class Transaction:
    """One event group: ``kind`` is 'commit', 'rollback', 'ddl' (a statement alone), 'xa_prepare', or 'open'
    (the input ended inside it)."""

    events: list[BinlogEvent] = field(default_factory=list)
    gtid: Optional[str] = None
    kind: str = "open"

    @property
    def start_pos(self) -> int:
        return self.events[0].payload_pos if self.events[0].payload_pos is not None else self.events[0].pos

    @property
    def end_pos(self) -> int:
        """File offset just past the group's last event in the file (a payload's inner events count as it)."""
        for ev in reversed(self.events):
            if ev.payload_pos is None:
                return ev.pos + ev.header.event_size
        return self.start_pos


def event_gtid(body: object) -> Optional[str]:
    if isinstance(body, AnonymousGtidEvent):
        return None
    if isinstance(body, (GtidEvent, MariadbGtidEvent)):
        return body.gtid
    return None


def _statement(query: str) -> str:
    return query.lstrip(" \t\r\n(").upper()


def iter_transactions(events: Iterable[BinlogEvent]) -> Iterator[Transaction]:
    """Group events into transactions the way ``Transaction_boundary_parser`` does (simplified): a GTID (MySQL
    or MariaDB) or ``BEGIN`` opens a group; XID, ``COMMIT``, ``ROLLBACK`` or XA_PREPARE closes it; any other
    statement outside ``BEGIN`` is a group alone (DDL). Events outside groups (FORMAT_DESCRIPTION, ROTATE,
    PREVIOUS_GTIDS, ...) belong to none."""
    cur: Optional[Transaction] = None
    began = False
    for ev in events:
        b = ev.body
        if isinstance(b, (GtidEvent, MariadbGtidEvent)):
            if cur is not None:
                yield cur
            cur = Transaction([ev], event_gtid(b))
            began = isinstance(b, MariadbGtidEvent) and not b.flags & C.FL_STANDALONE
            continue
        if isinstance(b, QueryEvent):
            stmt = _statement(b.query)
            if stmt.startswith("BEGIN") or stmt.startswith("XA START"):
                cur = cur or Transaction()
                cur.events.append(ev)
                began = True
                continue
            if cur is None:
                cur = Transaction()
            cur.events.append(ev)
            if stmt.startswith("COMMIT") or stmt.startswith("XA COMMIT"):
                cur.kind = "commit"
            elif stmt.startswith("ROLLBACK") and not stmt.startswith("ROLLBACK TO"):
                cur.kind = "rollback"
            elif stmt.startswith("XA ROLLBACK"):
                cur.kind = "rollback"
            elif not began:
                cur.kind = "ddl"
            else:
                continue
            yield cur
            cur, began = None, False
            continue
        if isinstance(b, (XidEvent, XaPrepareEvent)):
            cur = cur or Transaction()
            cur.events.append(ev)
            cur.kind = "commit" if isinstance(b, XidEvent) else "xa_prepare"
            yield cur
            cur, began = None, False
            continue
        if cur is not None:
            cur.events.append(ev)
    if cur is not None:
        yield cur


# --- row changes -----------------------------------------------------------------------------------------------


class RowChange(NamedTuple):
    """One changed row. ``pos`` is the rows event's file offset (for events inside a TRANSACTION_PAYLOAD, the
    payload event's offset, with ``row`` counting on across its inner rows events), so (file, pos, row) orders
    all changes of a binlog. ``before``/``after`` map column names to typed values (columns absent from a
    MINIMAL/NOBLOB image are left out; partial JSON columns are in ``diffs`` instead of ``after``).

    A NamedTuple (immutable, typed fields, keyword construction) rather than a frozen dataclass: one is made per
    row, and ``tuple.__new__`` costs a fraction of a frozen dataclass ``__init__``."""

    file: str
    pos: int
    row: int
    gtid: Optional[str]
    db: str
    table: str
    op: str
    before: Optional[dict[str, Any]]
    after: Optional[dict[str, Any]]
    diffs: Optional[dict[str, Any]] = None
    timestamp: int = 0
    event_type: int = 0


_TN = tuple.__new__


def row_changes_of(
    event: BinlogEvent, layout: TableLayout, *, file: str = "", gtid: Optional[str] = None, first_row: int = 0
) -> list[RowChange]:
    """The row set of one rows event (WL#3283 ``Row_event_set``) as RowChange values (a list: built by
    comprehensions, it is cheaper per row than a generator)."""
    b = event.body
    pos = event.payload_pos if event.payload_pos is not None else event.pos
    ts = event.header.timestamp
    t = event.header.type_code
    db, table = layout.db, layout.table
    as_dict = layout.plan(b.columns_present).as_dict
    if isinstance(b, WriteRowsEvent):
        return [
            _TN(RowChange, (file, pos, i, gtid, db, table, "insert", None, as_dict(img), None, ts, t))
            for i, img in enumerate(b.rows, first_row)
        ]
    if isinstance(b, DeleteRowsEvent):
        return [
            _TN(RowChange, (file, pos, i, gtid, db, table, "delete", as_dict(img), None, None, ts, t))
            for i, img in enumerate(b.rows, first_row)
        ]
    if not isinstance(b, UpdateRowsEvent):
        return []
    after_dict = layout.plan(b.columns_present_after).as_dict
    if not isinstance(b, PartialUpdateRowsEvent):
        return [
            _TN(RowChange, (file, pos, i, gtid, db, table, "update", as_dict(before), after_dict(after), None, ts, t))
            for i, (before, after) in enumerate(b.rows, first_row)
        ]
    out = []
    names = layout.column_names
    for i, r in enumerate(b.rows, first_row):
        if r.partial_columns:
            after = {}
            diffs = {}
            for n, v in zip(names, r.after):
                if isinstance(v, JsonPartial):
                    diffs[n] = v.diffs
                elif v is not ABSENT:
                    after[n] = v
            out.append(
                _TN(RowChange, (file, pos, i, gtid, db, table, "update", as_dict(r.before), after, diffs, ts, t))
            )
        else:
            out.append(
                _TN(
                    RowChange,
                    (file, pos, i, gtid, db, table, "update", as_dict(r.before), after_dict(r.after), None, ts, t),
                )
            )
    return out


def _dict_row_changes(
    event: BinlogEvent, layout: TableLayout, *, file: str, gtid: Optional[str], first_row: int
) -> list[RowChange]:
    """:func:`row_changes_of` for a WRITE/UPDATE/DELETE event decoded with dict images (``row_dicts``)."""
    b = event.body
    pos = event.payload_pos if event.payload_pos is not None else event.pos
    ts = event.header.timestamp
    t = event.header.type_code
    db, table = layout.db, layout.table
    if isinstance(b, WriteRowsEvent):
        return [
            _TN(RowChange, (file, pos, i, gtid, db, table, "insert", None, img, None, ts, t))
            for i, img in enumerate(b.rows, first_row)
        ]
    if isinstance(b, DeleteRowsEvent):
        return [
            _TN(RowChange, (file, pos, i, gtid, db, table, "delete", img, None, None, ts, t))
            for i, img in enumerate(b.rows, first_row)
        ]
    return [
        _TN(RowChange, (file, pos, i, gtid, db, table, "update", before, after, None, ts, t))
        for i, (before, after) in enumerate(b.rows, first_row)
    ]


def _row_changes(
    events: Iterable[BinlogEvent], ctx: DecodeContext, file: str, dict_rows: bool = False
) -> Iterator[RowChange]:
    gtid: Optional[str] = None
    last_pos = -1
    next_row = 0
    tables = ctx.tables
    for ev in events:
        b = ev.body
        if isinstance(b, RowsEvent):
            if not b.rows:
                continue
            pos = ev.payload_pos if ev.payload_pos is not None else ev.pos
            if pos != last_pos:
                last_pos, next_row = pos, 0
            layout = tables[b.table_id]
            yield from (
                _dict_row_changes if dict_rows and not isinstance(b, PartialUpdateRowsEvent) else row_changes_of
            )(ev, layout, file=file, gtid=gtid, first_row=next_row)
            next_row += len(b.rows)
        elif isinstance(b, (GtidEvent, MariadbGtidEvent)):
            gtid = event_gtid(b)
        elif isinstance(b, XidEvent):
            gtid = None
        elif isinstance(b, QueryEvent) and _statement(b.query).startswith(("COMMIT", "ROLLBACK")):
            gtid = None


# --- the binlog object -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """How to read: one frozen options object instead of flags copied through layers."""

    verify_checksum: bool = True
    start_position: Optional[int] = None
    schema_provider: Optional[SchemaProvider] = None
    stop_at_incomplete: bool = False
    decode_rows: bool = True
    max_event_size: int = MAX_EVENT_SIZE


class Binlog:
    """One binlog source (WL#3283 ``Binary_log``). Iterating it reads the source from the start (or
    ``start_position``) each time; ``stats`` describes the last complete or partial read."""

    def __init__(self, source: Union[str, os.PathLike], options: ReadOptions = ReadOptions()) -> None:
        self.source = os.fspath(source)
        self.options = options
        self.content_handlers: list[HandlerLike] = []
        self.stats = ReadStats()
        self.context = DecodeContext(schema_provider=options.schema_provider, decode_rows=options.decode_rows)
        self.name = _file_path(self.source)
        self._fde: Optional[object] = None

    def insert_content_handler(self, handler: HandlerLike) -> None:
        self.content_handlers.append(handler)

    def raw_events(self, *, row_dicts: bool = False) -> Iterator[BinlogEvent]:
        """Every event, without content handlers. ``row_dicts``: rows events hold their images as dicts of the
        present columns (internal to :meth:`row_changes`)."""
        name, stream = open_stream(self.source)
        self.name = name
        self.stats = ReadStats()
        self.context.fde = None
        self.context.tables.clear()
        self.context.assumptions.clear()
        self.context.row_dicts = row_dicts
        o = self.options
        try:
            with stream:
                for ev in read_events(
                    stream,
                    file=name,
                    verify_checksum=o.verify_checksum,
                    start_position=o.start_position,
                    ctx=self.context,
                    stats=self.stats,
                    stop_at_incomplete=o.stop_at_incomplete,
                    max_event_size=o.max_event_size,
                ):
                    if self._fde is None and isinstance(ev.body, (FormatDescriptionEvent, StartEventV3)):
                        self._fde = ev
                    yield ev
        finally:
            self.context.row_dicts = False

    def __iter__(self) -> Iterator[BinlogEvent]:
        return apply_handlers(self.raw_events(), self.content_handlers)

    def transactions(self) -> Iterator[Transaction]:
        return iter_transactions(self)

    def row_changes(self) -> Iterator[RowChange]:
        """Every row change; without content handlers (which must see events as documented), the images are
        decoded straight into the dicts RowChange holds."""
        if self.content_handlers:
            return _row_changes(self, self.context, self.name)
        return _row_changes(self.raw_events(row_dicts=True), self.context, self.name, dict_rows=True)

    @property
    def format_description(self) -> BinlogEvent:
        """The FORMAT_DESCRIPTION_EVENT (or START_EVENT_V3) that starts the binlog."""
        if self._fde is None:
            name, stream = open_stream(self.source)
            with stream:
                for ev in read_events(
                    stream,
                    file=name,
                    verify_checksum=self.options.verify_checksum,
                    ctx=DecodeContext(decode_rows=False),
                    decode_payloads=False,
                    max_event_size=self.options.max_event_size,
                ):
                    if isinstance(ev.body, (FormatDescriptionEvent, StartEventV3)):
                        self._fde = ev
                    break
            if self._fde is None:
                raise BinlogError("binlog has no FORMAT_DESCRIPTION_EVENT", file=name)
        return self._fde  # type: ignore[return-value]

    @property
    def creation_timestamp(self) -> int:
        """R1: the binlog's creation time (seconds since the epoch) from the FORMAT_DESCRIPTION_EVENT: its
        ``create_timestamp`` when set, else its header timestamp (servers set only one of them)."""
        ev = self.format_description
        return ev.body.create_timestamp or ev.header.timestamp


def open_binlog(
    path_or_uri: Union[str, os.PathLike],
    *,
    verify_checksum: bool = True,
    start_position: Optional[int] = None,
    schema_provider: Optional[SchemaProvider] = None,
    stop_at_incomplete: bool = False,
    decode_rows: bool = True,
    max_event_size: int = MAX_EVENT_SIZE,
) -> Binlog:
    """Open a binlog file or URI (``file://``; more transports via :func:`register_transport`).

    ``decode_rows=False`` leaves rows events' ``rows`` empty (listing events needs no TABLE_MAP or schema).
    ``max_event_size`` caps every event, inner events of compressed transactions included."""
    return Binlog(
        path_or_uri,
        ReadOptions(verify_checksum, start_position, schema_provider, stop_at_incomplete, decode_rows, max_event_size),
    )


def iter_row_changes(path: Union[str, os.PathLike], **options: Any) -> Iterator[RowChange]:
    """Every row change of a binlog, in order (the fast path; options as :func:`open_binlog`)."""
    return open_binlog(path, **options).row_changes()


__all__ = [
    "Binlog",
    "ContentHandler",
    "ReadOptions",
    "RowChange",
    "Transaction",
    "apply_handlers",
    "event_gtid",
    "iter_row_changes",
    "iter_transactions",
    "open_binlog",
    "open_stream",
    "register_transport",
    "row_changes_of",
]
