"""The native decoder core (the ``binlake_native`` extension, built from ``native/`` by ``scripts/setup.sh``):
loading it, and what it asks of the pure-Python decoder.

The native core decodes the events every transaction holds (TABLE_MAP, rows events, GTIDs, statements, XID,
TRANSACTION_PAYLOAD) to the values the Python decoder gives; the few other events of a file (ROTATE,
PREVIOUS_GTIDS, ...) it hands to the Python decoder (:meth:`Delegate.event`). When an event's body does not
decode natively, the Python decoder decodes that one event again and raises its typed error (file, offset,
event type, expected and found), so both engines fail alike; a value that has no JSON form is named by
``binlake.binlog.render.json_value`` with the row's place, as ``binlake rows`` names it.

``available()`` says whether the extension loads; ``BINLAKE_NATIVE=0`` turns it off (the pure-Python decoder is
the reference and the fallback where no Rust compiler was found).
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any, Optional, Protocol

from binlake.binlog import constants as C
from binlake.binlog import errors
from binlake.binlog.cursor import Cursor, surrogate_str
from binlake.binlog.decoders import DECODERS, DecodeContext, decode_body
from binlake.binlog.errors import BinlogError
from binlake.binlog.events import (
    EventHeader,
    FormatDescriptionEvent,
    GtidEvent,
    MariadbGtidEvent,
    QueryEvent,
    StartEncryptionEvent,
    XaPrepareEvent,
    XidEvent,
)
from binlake.binlog.reader import EVENT_HEADER, MAX_EVENT_SIZE, _decode_one
from binlake.binlog.rows import DECODE_FAILURES, decode_failure
from binlake.binlog.schema import SchemaProvider

if TYPE_CHECKING:
    import binlake_native
    from binlake_native import Options, _Source, _Stats

API = 6  # the interface of native/src/lib.rs this module speaks


class NativeCore(Protocol):
    """What binlake uses of the ``binlake_native`` module (its types: ``native/binlake_native.pyi``)."""

    @property
    def API(self) -> int: ...
    @property
    def Batches(self) -> type[binlake_native.Batches]: ...
    @property
    def BronzeRows(self) -> type[binlake_native.BronzeRows]: ...
    @property
    def TextRows(self) -> type[binlake_native.TextRows]: ...
    @property
    def ServerError(self) -> type[binlake_native.ServerError]: ...
    @property
    def ProtocolError(self) -> type[binlake_native.ProtocolError]: ...
    def rows_jsonl(
        self,
        src: _Source,
        options: Options,
        delegate: Any,
        fd: int,
        file_utf8: bytes,
        file_ascii: bytes,
        file_needs_ascii: bool,
    ) -> _Stats: ...


_module: Optional[NativeCore] = None
_tried = False


def load() -> Optional[NativeCore]:
    """The ``binlake_native`` module, or None when it is not built, was built from other sources (run
    ``scripts/setup.sh``), or ``BINLAKE_NATIVE=0``."""
    global _module, _tried
    if os.environ.get("BINLAKE_NATIVE", "1") == "0":
        return None
    if not _tried:
        _tried = True
        try:
            import binlake_native
        except ImportError:
            return None
        if getattr(binlake_native, "API", None) == API:
            _module = binlake_native
    return _module


def available() -> bool:
    return load() is not None


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def statement_kind(query: str) -> str:
    """What a statement does to a transaction, from its start (``api._statement``)."""
    stmt = query.lstrip(" \t\r\n(").upper()
    if stmt.startswith("BEGIN") or stmt.startswith("XA START"):
        return "begin"
    if stmt.startswith("COMMIT"):
        return "commit"
    if stmt.startswith("XA COMMIT"):
        return "xa_commit"
    if stmt.startswith("ROLLBACK TO"):
        return "rollback_to"
    if stmt.startswith("ROLLBACK"):
        return "rollback"
    if stmt.startswith("XA ROLLBACK"):
        return "xa_rollback"
    return "other"


def summary(body: object) -> tuple:
    """What an event the Python decoder decoded means to the native core's state (GTID, statement, ...)."""
    if isinstance(body, (GtidEvent, MariadbGtidEvent)):
        from binlake.binlog.api import event_gtid

        commit_ts = (body.immediate_commit_timestamp or 0) if isinstance(body, GtidEvent) else 0
        began = isinstance(body, MariadbGtidEvent) and not body.flags & C.FL_STANDALONE
        return ("gtid", event_gtid(body), commit_ts, began)
    if isinstance(body, QueryEvent):
        return ("query", statement_kind(body.query))
    if isinstance(body, XidEvent):
        return ("xid",)
    if isinstance(body, XaPrepareEvent):
        return ("xa_prepare",)
    if isinstance(body, StartEncryptionEvent):
        return ("encryption", body.scheme, body.key_version)
    return ("other",)


class Delegate:
    """The Python decoder's side of one native read of ``file``: it decodes FORMAT_DESCRIPTION and rare events,
    and names every error exactly as the Python reader does."""

    def __init__(self, file: str, schema_provider: Optional[SchemaProvider] = None) -> None:
        self.file = file
        self.provider = schema_provider
        self.ctx = DecodeContext(schema_provider=schema_provider)

    # -- events
    def fde(self, raw: bytes, pos: int) -> tuple[bool, bytes, bool]:
        header = EventHeader(*EVENT_HEADER.unpack_from(raw))
        body = _decode_one(pos, header, raw, len(raw), self.ctx, self.file)
        assert isinstance(body, FormatDescriptionEvent)
        self.ctx.fde = body
        self.ctx.tables.clear()
        return (
            body.checksum_alg == C.BINLOG_CHECKSUM_ALG_CRC32,
            bytes(body.post_header_lengths),
            "mariadb" in body.server_version.lower(),
        )

    def event(
        self, raw: bytes, body_end: int, pos: int, payload_pos: Optional[int], table_map: Optional[tuple[bytes, int]]
    ) -> tuple:
        """Decode one event body as the Python reader does (raising its located error); its summary."""
        header = EventHeader(*EVENT_HEADER.unpack_from(raw))
        if header.type_code in C.ROWS_EVENT_TYPES:
            self.ctx.tables.clear()
            if table_map is not None:
                self.table_map(*table_map)
        return summary(self.body(raw, body_end, pos, payload_pos))

    def table_map(self, raw: bytes, body_end: int) -> object:
        """Decode a TABLE_MAP the native core read (``ctx.tables`` then holds its layout)."""
        return decode_body(
            Cursor(raw, C.LOG_EVENT_HEADER_LEN, body_end, 0), EventHeader(*EVENT_HEADER.unpack_from(raw)), self.ctx
        )

    def body(self, raw: bytes, body_end: int, pos: int, payload_pos: Optional[int]) -> object:
        """One event body as the Python reader decodes it, or its located error."""
        header = EventHeader(*EVENT_HEADER.unpack_from(raw))
        if payload_pos is None:
            return _decode_one(pos, header, raw, body_end, self.ctx, self.file)
        where = f"inside TRANSACTION_PAYLOAD_EVENT at {payload_pos}"
        try:
            body = decode_body(Cursor(raw, C.LOG_EVENT_HEADER_LEN, body_end, 0), header, self.ctx)
        except BinlogError as exc:
            exc.message += f" ({where}, inner offset {pos})"
            exc.offset = None
            raise exc.located(file=self.file, offset=payload_pos, event_type=header.type_name) from None
        except DECODE_FAILURES as exc:
            raise decode_failure(
                exc, f"event body ({where}, inner offset {pos})", body_end - C.LOG_EVENT_HEADER_LEN
            ).located(file=self.file, offset=payload_pos, event_type=header.type_name) from None
        return body

    def schema(self, db: bytes, table: bytes, types: bytes) -> Optional[list[tuple]]:
        """The schema provider's columns for a TABLE_MAP without metadata (``build_layout``), as plain values:
        (name, unsigned, collation id, ENUM values, SET values, fractional digits); None: it knows no such table."""
        assert self.provider is not None
        schema = self.provider(surrogate_str(db), surrogate_str(table), tuple(types))
        if schema is None:
            return None

        def raw(values: Optional[tuple[str, ...]]) -> Optional[list[bytes]]:
            return None if values is None else [_bytes(v) for v in values]

        return [
            (_bytes(c.name), bool(c.unsigned), c.collation_id, raw(c.enum_values), raw(c.set_values), c.fsp)
            for c in schema.columns
        ]

    def statement(self, query: bytes) -> str:
        return statement_kind(surrogate_str(query))

    def make_error(
        self, cls: str, message: str, offset: Optional[int], event_type: Optional[str], expected: object, found: object
    ) -> BinlogError:
        """A reader-level error the native core states (a ``binlake.binlog.errors`` class, in the reader's words)."""
        return getattr(errors, cls)(
            message, file=self.file, offset=offset, event_type=event_type, expected=expected, found=found
        )

    # -- values
    def decode_text(self, raw: bytes, codec: str) -> str:
        from binlake.binlog.values import decode_text

        return decode_text(raw, codec)

    def diffs(self, raw: bytes) -> object:
        from binlake.binlog.jsonvalue import read_diffs

        return read_diffs(raw)

    def _at_row(self, exc: BinlogError, row: int, db: bytes, table: bytes, pos: int, event_type: int) -> BinlogError:
        """Locate a value's error as ``binlake rows`` does (``cmd_rows``)."""
        exc.message += f" (row {row} of `{surrogate_str(db)}`.`{surrogate_str(table)}`)"
        return exc.located(file=self.file, offset=pos, event_type=C.event_type_name(event_type))

    def value_error(
        self, kind: str, value: object, column: bytes, row: int, db: bytes, table: bytes, pos: int, event_type: int
    ) -> Exception:
        """The error ``json_value`` raises for this value, with its column and row (``json_image``)."""
        from binlake.binlog.render import json_value
        from binlake.mysqljson import BinaryJson

        try:
            json_value(BinaryJson(value) if kind == "json" else value)  # type: ignore[arg-type]
        except BinlogError as exc:
            exc.message += f" (column `{surrogate_str(column)}`)"
            return self._at_row(exc.located(), row, db, table, pos, event_type)
        return RuntimeError(
            f"binlake's native decoder found no JSON form for a value of column "
            f"`{surrogate_str(column)}` that the Python decoder renders; use engine='python' and report it"
        )

    def diff_items(
        self, diffs: object, column: bytes, row: int, db: bytes, table: bytes, pos: int, event_type: int
    ) -> list[tuple[str, str, Optional[str]]]:
        """One partial JSON column's diffs as (op, path, value text) (``json_diffs``)."""
        from binlake.binlog.render import json_diffs

        name = surrogate_str(column)
        try:
            rendered = json_diffs({name: diffs})[name]  # type: ignore[index]
        except BinlogError as exc:
            raise self._at_row(exc, row, db, table, pos, event_type) from None
        return [(d["op"], d["path"], d["value"]) for d in rendered]

    def silver_error(
        self, arrow_format: str, found: str, column: bytes, row: int, db: bytes, table: bytes, pos: int, event_type: int
    ) -> BinlogError:
        from binlake.binlog.columnar import silver_range_error

        return silver_range_error(
            arrow_format,
            found,
            surrogate_str(column),
            row,
            surrogate_str(db),
            surrogate_str(table),
            self.file,
            pos,
            event_type,
        )


def options(
    *,
    verify_checksum: bool = True,
    start_position: Optional[int] = None,
    stop_at_incomplete: bool = False,
    max_event_size: int = MAX_EVENT_SIZE,
    schema_provider: Optional[SchemaProvider] = None,
    file: Optional[str] = None,
) -> Options:
    """The native reader's options (``binlake.binlog.api.ReadOptions`` plus the names it reports with).

    A start position that is no offset in a binlog is the Python reader's StartPositionError (naming ``file``);
    ``max_event_size`` is taken within the 64-bit range the core reads (below 0: every event is too large, as
    in the Python reader; past 2^64 - 1: no event is)."""
    if start_position is not None and not C.BIN_LOG_HEADER_SIZE <= start_position < 1 << 63:
        raise errors.StartPositionError(
            "start position is not an offset in a binlog",
            file=file,
            expected=f"{C.BIN_LOG_HEADER_SIZE}..{(1 << 63) - 1}",
            found=start_position,
        )
    max_event_size = min(max(max_event_size, 0), (1 << 64) - 1)
    return {
        "names": [C.event_type_name(t) for t in range(256)],
        "registered": sorted(DECODERS),
        "verify_checksum": verify_checksum,
        "max_event_size": max_event_size,
        "start_position": start_position,
        "stop_at_incomplete": stop_at_incomplete,
        "schema": schema_provider is not None,
    }


def native_source(stream: Any) -> Any:
    """What the native reader reads: a descriptor of its own for a real file, the bytes of an in-memory stream,
    or None (other transports stay with the Python decoder)."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        getvalue = getattr(stream, "getvalue", None)
        return getvalue() if getvalue is not None else None
    return os.dup(fd)


def cmd_rows(args: Any, provider: Optional[SchemaProvider] = None) -> Optional[int]:
    """``binlake rows FILE --format jsonl`` natively (``provider``: the ``--schema`` tables, loaded by the caller);
    None when this input needs the Python decoder (another transport, a stdout that is not a file, or no native
    core)."""
    mod = load()
    if mod is None:
        return None
    try:
        out = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return None  # not a real file (a test's captured stdout): the Python path writes it
    if (getattr(sys.stdout, "encoding", "") or "").lower().replace("-", "") != "utf8":
        return None
    from binlake.binlog.api import open_stream

    name, stream = open_stream(args.file)
    with stream:
        opts = options(
            verify_checksum=args.verify_checksum,
            start_position=args.start_position,
            stop_at_incomplete=args.allow_incomplete,
            max_event_size=args.max_event_size or MAX_EVENT_SIZE,
            schema_provider=provider,
            file=name,
        )
        src = native_source(stream)
    if src is None:
        return None
    try:
        name.encode("utf-8")
        needs_ascii = False
    except UnicodeEncodeError:
        needs_ascii = True
    ascii_form = json.dumps(name).encode()
    utf8_form = ascii_form if needs_ascii else json.dumps(name, ensure_ascii=False).encode()
    sys.stdout.flush()
    unknown, notes, incomplete = mod.rows_jsonl(
        src, opts, Delegate(name, provider), out, utf8_form, ascii_form, needs_ascii
    )
    if unknown:
        kinds = ", ".join(f"{code}: {n}" for code, n in sorted(unknown.items()))
        print(
            f"binlake: note: {sum(unknown.values())} event(s) of unknown type kept undecoded ({kinds})", file=sys.stderr
        )
    for db, table, text in sorted((surrogate_str(db), surrogate_str(table), text) for db, table, text in notes):
        print(f"binlake: note: `{db}`.`{table}`: " + "; ".join(text), file=sys.stderr)
    if incomplete is not None:
        print(f"binlake: note: {incomplete}", file=sys.stderr)
    return 0
