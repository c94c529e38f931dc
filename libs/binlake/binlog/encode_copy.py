"""Re-encoding a binlog through the reader and the writer (``binlake copy``), optionally keeping some tables.

Events are grouped into transactions (GTID ... XID/COMMIT, or a lone DDL), filtered by table, and written
again with :class:`~binlake.binlog.writer.EventWriter`. A source ``log_pos`` that is an event's end (or start,
binlog v3) is recomputed; others (relay logs carry the source server's positions, artificial events 0) are
kept, so an unfiltered copy gives back the input byte for byte.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any, Callable, Optional

from binlake.binlog import constants as C
from binlake.binlog import events as ev
from binlake.binlog.encode_base import event_size, packed_length_size
from binlake.binlog.reader import read_events
from binlake.binlog.writer import Event, EventWriter, payload_event_body, transaction_length


@dataclass
class CopyStats:
    """What a copy read and wrote (inner events of compressed transactions count when they were decoded)."""

    events_in: int = 0
    events_out: int = 0
    transactions_in: int = 0
    transactions_out: int = 0
    bytes_out: int = 0


TableFilter = Callable[[str, str], bool]  # (db, table) -> keep?

_TRANSACTION_STARTS = (ev.GtidEvent, ev.MariadbGtidEvent)
# events that belong to the file, never to a transaction
_FILE_EVENTS = (
    ev.FormatDescriptionEvent,
    ev.StartEventV3,
    ev.PreviousGtidsEvent,
    ev.RotateEvent,
    ev.StopEvent,
    ev.IncidentEvent,
    ev.HeartbeatEvent,
    ev.GtidListEvent,
    ev.BinlogCheckpointEvent,
    ev.StartEncryptionEvent,
)
_COMMIT_QUERIES = ("COMMIT", "ROLLBACK", "XA COMMIT", "XA ROLLBACK")


def _is_begin(body: Any) -> bool:
    return isinstance(body, ev.QueryEvent) and body.query.strip().upper() in ("BEGIN", "XA START")


def _ends_transaction(body: Any, in_begin: bool) -> bool:
    if isinstance(body, (ev.XidEvent, ev.XaPrepareEvent)):
        return True
    if isinstance(body, ev.QueryEvent):
        q = body.query.strip().upper()
        return q.startswith(_COMMIT_QUERIES) or (not in_begin and not _is_begin(body))
    return False


def _keep_pos(e: ev.BinlogEvent, new_pos: int) -> Optional[int]:
    """The ``log_pos`` to write: None (recompute) for an event's end, the new start for binlog v3, else as is."""
    h = e.header
    if h.log_pos == e.pos + h.event_size:
        return None
    if h.log_pos == e.pos and e.pos:
        return new_pos
    return h.log_pos


class _Copier:
    """Writes transactions (filtered when ``keep`` is given) into ``chunks`` through one EventWriter."""

    def __init__(self, keep: Optional[TableFilter], stats: CopyStats) -> None:
        self.keep = keep
        self.stats = stats
        self.w = EventWriter(checksum=False)
        self.chunks: list[bytes] = []

    def emit(self, e: ev.BinlogEvent, body: Any = None) -> None:
        """Write ``e`` (with ``body`` instead of its own when given) with its header fields."""
        h = e.header
        out = self.w.encode(
            Event(
                e.body if body is None else body,
                h.timestamp,
                h.type_code,
                h.server_id,
                h.flags,
                _keep_pos(e, self.w.pos),
            )
        )
        self.chunks.append(out)
        self.stats.events_out += 1

    def transaction(self, group: list[tuple[ev.BinlogEvent, list[ev.BinlogEvent]]]) -> None:
        """One transaction: (event, its payload's inner events) pairs; filtered, then written."""
        self.stats.transactions_in += 1
        if self.keep is None:
            self._write_group(group, changed=False)
            return
        kept: list[tuple[ev.BinlogEvent, list[ev.BinlogEvent]]] = []
        changed = False
        has_rows = kept_rows = False
        tables: dict[int, tuple[str, str]] = {}
        for outer, inner in group:
            if inner:
                new_inner, rows, kept_r = self._filter(inner, tables)
                has_rows |= rows
                kept_rows |= kept_r
                if len(new_inner) != len(inner) or any(a is not b for a, b in zip(new_inner, inner)):
                    changed = True
                kept.append((outer, new_inner))
            else:
                new, rows, kept_r = self._filter([outer], tables)
                has_rows |= rows
                kept_rows |= kept_r
                if new:
                    kept.append((new[0], []))
                else:
                    changed = True
        if has_rows and not kept_rows:
            return
        if not has_rows and not self._keep_statement(group):
            return
        self._write_group(kept, changed)

    def _keep_statement(self, group: list[tuple[ev.BinlogEvent, list[ev.BinlogEvent]]]) -> bool:
        """A transaction without row events (DDL, statement-based DML) is kept when its default database (""
        when none) matches some pattern of the filter (``keep(db, '*')``)."""
        assert self.keep is not None
        for outer, inner in group:
            for e in [outer, *inner]:
                if isinstance(e.body, ev.QueryEvent) and not _is_begin(e.body):
                    return self.keep(e.body.db, "*")
        return True

    def _filter(
        self, events: list[ev.BinlogEvent], tables: dict[int, tuple[str, str]]
    ) -> tuple[list[ev.BinlogEvent], bool, bool]:
        assert self.keep is not None
        out: list[ev.BinlogEvent] = []
        has_rows = kept_rows = False
        for e in events:
            body = e.body
            if isinstance(body, ev.TableMapEvent):
                tables[body.table_id] = (body.db, body.table)
                if self.keep(body.db, body.table):
                    out.append(e)
                continue
            if isinstance(body, ev.RowsEvent):
                has_rows = True
                db, table = tables.get(body.table_id, ("", ""))
                if self.keep(db, table):
                    kept_rows = True
                    out.append(e)
                elif (
                    body.flags & C.STMT_END_F
                    and out
                    and isinstance(out[-1].body, ev.RowsEvent)
                    and not out[-1].body.flags & C.STMT_END_F
                ):
                    prev = out[-1]
                    out[-1] = replace(prev, body=replace(prev.body, flags=prev.body.flags | C.STMT_END_F))
                continue
            out.append(e)
        return out, has_rows, kept_rows

    def _write_group(self, group: list[tuple[ev.BinlogEvent, list[ev.BinlogEvent]]], changed: bool) -> None:
        self.stats.transactions_out += 1
        if not changed:
            for outer, _ in group:
                self.emit(outer)
            return
        # re-encode payloads whose inner events changed, then fix the GTID's transaction_length
        bodies: list[tuple[ev.BinlogEvent, Any]] = []
        for outer, inner in group:
            body = outer.body
            if isinstance(body, ev.TransactionPayloadEvent):
                iw = EventWriter(pos=0, in_payload=True, row_encoders=self.w.row_encoders)
                iw.ctx = self.w.ctx
                iw.null_padding = self.w.null_padding
                raw = b"".join(
                    iw.encode(
                        Event(
                            e.body,
                            e.header.timestamp,
                            e.header.type_code,
                            e.header.server_id,
                            e.header.flags,
                            e.header.log_pos,
                        )
                    )
                    for e in inner
                )
                body = payload_event_body(raw, body.compression_type == C.ZSTD)
            bodies.append((outer, body))
        first = bodies[0][1]
        if isinstance(first, ev.GtidEvent) and first.transaction_length is not None:
            rest = sum(
                event_size(len(self.w.body_bytes(b, o.header.type_code)), self.w.checksum) for o, b in bodies[1:]
            )
            without = len(self.w.body_bytes(first, bodies[0][0].header.type_code)) - packed_length_size(
                first.transaction_length
            )
            bodies[0] = (
                bodies[0][0],
                replace(first, transaction_length=transaction_length(rest, without, self.w.checksum)),
            )
        for outer, body in bodies:
            self.emit(outer, body)


def copy_binlog(
    src: str | os.PathLike, dst: str | os.PathLike, *, keep: Optional[TableFilter] = None, verify_checksum: bool = True
) -> CopyStats:
    """Decode ``src`` with the reader and write it again with the writer.

    Without ``keep`` every event is re-encoded from its decoded form, which gives back the input byte for byte
    for every event type the writer supports. With ``keep(db, table)``, rows events (and TABLE_MAPs) of other
    tables are dropped, transactions left without rows are dropped whole, and positions, ``transaction_length``
    and checksums are recomputed; compressed transactions are recompressed when they changed.
    """
    stats = CopyStats()
    copier = _Copier(keep, stats)
    src_name = os.fspath(src)
    group: list[tuple[ev.BinlogEvent, list[ev.BinlogEvent]]] = []
    in_begin = False
    with open(src, "rb") as stream, open(dst, "wb") as out:
        out.write(C.BINLOG_MAGIC)

        def flush() -> None:
            nonlocal group, in_begin
            if group:
                copier.transaction(group)
            group, in_begin = [], False

        for e in read_events(stream, file=src_name, verify_checksum=verify_checksum, decode_payloads=keep is not None):
            stats.events_in += 1
            if e.payload_pos is not None:
                group[-1][1].append(e)
                continue
            body = e.body
            if group and isinstance(group[-1][0].body, ev.TransactionPayloadEvent):
                flush()  # a payload holds its whole transaction
            if isinstance(body, _FILE_EVENTS):
                flush()
                copier.emit(e)
            elif isinstance(body, _TRANSACTION_STARTS) or (_is_begin(body) and not group):
                flush()
                group.append((e, []))
                in_begin = _is_begin(body)
            elif group:
                group.append((e, []))
                if _is_begin(body):
                    in_begin = True
                elif _ends_transaction(body, in_begin):
                    flush()
            else:
                copier.emit(e)
            if len(copier.chunks) > 256:
                out.write(b"".join(copier.chunks))
                copier.chunks.clear()
        flush()
        out.write(b"".join(copier.chunks))
    stats.bytes_out = copier.w.pos
    return stats
