"""Writing MySQL 8.0 binlog files: the inverse of the reader.

Two layers, mirroring how mysql-server's ``MYSQL_BIN_LOG`` sits on ``Log_event::write``:

- :class:`EventWriter` turns event bodies (the dataclasses of :mod:`binlake.binlog.events`) into framed events
  of one byte stream: common header, body, CRC32 footer when the stream's FORMAT_DESCRIPTION asks for it, and
  ``log_pos`` = the position after the event (0 inside a TRANSACTION_PAYLOAD). It keeps the FORMAT_DESCRIPTION
  context and one :class:`~binlake.binlog.encode_rows.RowEncoder` per table id, like the reader.
- :class:`BinlogWriter` writes a rotated series of files ``<basename>.000001, ...`` and an index file:
  magic, FORMAT_DESCRIPTION (CRC32), PREVIOUS_GTIDS, then whole transactions (GTID with its
  ``transaction_length`` and commit timestamps, optionally zstd-compressed into one TRANSACTION_PAYLOAD), and a
  ROTATE to the next file once a file reaches ``max_size`` (checked between transactions, as
  ``max_binlog_size`` is).
"""

from __future__ import annotations

import os
import uuid as _uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Optional, Sequence

from binlake.binlog import constants as C
from binlake.binlog import events as ev
from binlake.binlog.encode_base import BinlogWriteError, event_size, frame_event, packed_length_size
from binlake.binlog.encode_events import BODY_ENCODERS, Context, payload_fields
from binlake.binlog.encode_rows import RowEncoder, encode_rows, encode_table_map
from binlake.binlog.gtid import GtidSet, Sid

# Post-header lengths of MySQL 8.0.32+ (Format_description_event::post_header_len, event types 1..41).
MYSQL_80_POST_HEADER_LENGTHS = bytes(
    (
        0,
        13,
        0,
        8,
        0,
        0,
        0,
        0,
        4,
        0,
        4,
        0,
        0,
        0,
        98,
        0,
        4,
        26,
        8,
        0,
        0,
        0,
        8,
        8,
        8,
        2,
        0,
        0,
        0,
        10,
        10,
        10,
        42,
        42,
        0,
        18,
        52,
        0,
        10,
        40,
        0,
    )
)
DEFAULT_SERVER_VERSION = "8.0.36"
ZSTD_LEVEL = 3  # binlog_transaction_compression_level_zstd default

# body class -> the type code it is written with when the caller does not say (rows events: v2)
_DEFAULT_TYPE_CODES: dict[type, int] = {
    ev.StartEventV3: C.START_EVENT_V3,
    ev.FormatDescriptionEvent: C.FORMAT_DESCRIPTION_EVENT,
    ev.QueryEvent: C.QUERY_EVENT,
    ev.RotateEvent: C.ROTATE_EVENT,
    ev.StopEvent: C.STOP_EVENT,
    ev.XidEvent: C.XID_EVENT,
    ev.IntvarEvent: C.INTVAR_EVENT,
    ev.RandEvent: C.RAND_EVENT,
    ev.UserVarEvent: C.USER_VAR_EVENT,
    ev.IncidentEvent: C.INCIDENT_EVENT,
    ev.RowsQueryEvent: C.ROWS_QUERY_LOG_EVENT,
    ev.XaPrepareEvent: C.XA_PREPARE_LOG_EVENT,
    ev.GtidEvent: C.GTID_LOG_EVENT,
    ev.AnonymousGtidEvent: C.ANONYMOUS_GTID_LOG_EVENT,
    ev.PreviousGtidsEvent: C.PREVIOUS_GTIDS_LOG_EVENT,
    ev.TransactionPayloadEvent: C.TRANSACTION_PAYLOAD_EVENT,
    ev.TableMapEvent: C.TABLE_MAP_EVENT,
    ev.WriteRowsEvent: C.WRITE_ROWS_EVENT,
    ev.UpdateRowsEvent: C.UPDATE_ROWS_EVENT,
    ev.PartialUpdateRowsEvent: C.PARTIAL_UPDATE_ROWS_EVENT,
    ev.DeleteRowsEvent: C.DELETE_ROWS_EVENT,
}


@dataclass(frozen=True, slots=True)
class Event:
    """An event to write: its body, and the header fields a writer does not compute (size, log_pos)."""

    body: Any
    timestamp: int = 0
    type_code: int = 0  # 0: the usual type of the body's class
    server_id: Optional[int] = None  # None: the writer's server id
    flags: int = 0
    log_pos: Optional[int] = None  # None: computed (end of the event; 0 inside a payload); else kept as given


class EventWriter:
    """Frames events into one stream (a file after its magic, or the inside of a TRANSACTION_PAYLOAD).

    ``pos`` is the stream position of the next event. ``checksum`` starts as given and follows every
    FORMAT_DESCRIPTION written (``checksum_alg == CRC32``); ``in_payload`` writes ``log_pos = 0``, no checksums.
    """

    def __init__(
        self,
        *,
        pos: int = C.BIN_LOG_HEADER_SIZE,
        server_id: int = 1,
        checksum: bool = True,
        in_payload: bool = False,
        post_header_lengths: bytes = MYSQL_80_POST_HEADER_LENGTHS,
        row_encoders: Optional[dict[int, RowEncoder]] = None,
    ) -> None:
        self.pos = pos
        self.server_id = server_id
        self.checksum = checksum and not in_payload
        self.in_payload = in_payload
        self.ctx = Context(post_header_lengths)
        self.row_encoders: dict[int, RowEncoder] = {} if row_encoders is None else row_encoders
        self.null_padding = 0
        self._table_maps: dict[int, tuple[ev.TableMapEvent, bytes]] = {}  # table id -> (last TABLE_MAP, bytes)

    def body_bytes(self, body: Any, type_code: int) -> bytes:
        """The encoded body of an event (no header, no checksum); registers TABLE_MAPs for later rows."""
        if isinstance(body, ev.RowsEvent):
            rows = self.row_encoders.get(body.table_id)
            if rows is None:
                raise BinlogWriteError("rows event for a table id no TABLE_MAP_EVENT defined", found=body.table_id)
            return encode_rows(body, type_code, rows)
        if isinstance(body, ev.TableMapEvent):
            last = self._table_maps.get(body.table_id)
            if last is not None and last[0] is body:  # the same TABLE_MAP again: one encoding
                return last[1]
            known = self.row_encoders.get(body.table_id)
            if known is None or known.null_padding != self.null_padding or known.layout.table_map != body:
                self.row_encoders[body.table_id] = RowEncoder.for_table_map(body, self.null_padding)
            data = encode_table_map(body)
            self._table_maps[body.table_id] = (body, data)
            return data
        encoder = BODY_ENCODERS.get(type(body))
        if encoder is None:
            raise BinlogWriteError(f"no encoder for {type(body).__name__}")
        if isinstance(body, ev.FormatDescriptionEvent):
            self.ctx = Context(body.post_header_lengths)
            self.null_padding = _null_padding(body)
        return encoder(body, self.ctx)

    def frame(
        self,
        body: bytes,
        type_code: int,
        timestamp: int,
        server_id: Optional[int] = None,
        flags: int = 0,
        checksum: Optional[bool] = None,
        log_pos: Optional[int] = None,
    ) -> bytes:
        """Frame an encoded body at ``self.pos`` and advance ``pos``."""
        use_crc = self.checksum if checksum is None else checksum
        size = event_size(len(body), use_crc)
        if log_pos is None:
            log_pos = 0 if self.in_payload else self.pos + size
        data = frame_event(
            timestamp, type_code, self.server_id if server_id is None else server_id, log_pos, flags, body, use_crc
        )
        self.pos += size
        return data

    def encode(self, event: Event) -> bytes:
        body = event.body
        type_code = event.type_code or _DEFAULT_TYPE_CODES.get(type(body), 0)
        if not type_code:
            raise BinlogWriteError(f"type code needed for {type(body).__name__}")
        data = self.body_bytes(body, type_code)
        checksum = None
        if isinstance(body, ev.FormatDescriptionEvent) and not self.in_payload:
            # a FORMAT_DESCRIPTION always carries a CRC32 when it has the checksum-algorithm byte
            self.checksum = body.checksum_alg == C.BINLOG_CHECKSUM_ALG_CRC32
            checksum = body.checksum_alg is not None
        return self.frame(data, type_code, event.timestamp, event.server_id, event.flags, checksum, event.log_pos)


def payload_event_body(inner: bytes, compress: bool, level: int = ZSTD_LEVEL) -> ev.TransactionPayloadEvent:
    """A TRANSACTION_PAYLOAD holding ``inner`` (framed events without checksums), zstd-compressed as MySQL does
    (one streaming frame without a content size)."""
    if compress:
        import zstandard

        cobj = zstandard.ZstdCompressor(level=level).compressobj()
        payload = cobj.compress(inner) + cobj.flush()
        ctype = C.ZSTD
    else:
        payload, ctype = inner, C.NONE
    return ev.TransactionPayloadEvent(
        ctype, len(payload), len(inner), payload, payload_fields(ctype, len(payload), len(inner))
    )


@dataclass(frozen=True, slots=True)
class WrittenTransaction:
    """Where a transaction landed: file name, start position, end position."""

    file: str
    start: int
    end: int


class BinlogWriter:
    """A rotated series of MySQL 8.0 binlog files in one directory, written transaction by transaction."""

    def __init__(
        self,
        directory: str | os.PathLike,
        *,
        basename: str = "mysql-bin",
        server_id: int = 1,
        server_uuid: str = "3e11fa47-71ca-11e1-9e33-c80aa9429562",
        server_version: str = DEFAULT_SERVER_VERSION,
        max_size: int = 1 << 30,
        first_index: int = 1,
        create_timestamp: int = 0,
        compression_level: int = ZSTD_LEVEL,
    ) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.basename = basename
        self.server_id = server_id
        self.sid = _uuid.UUID(server_uuid).bytes
        self.server_version = server_version
        self.version_id = _version_id(server_version)
        self.max_size = max_size
        self.index = first_index
        self.compression_level = compression_level
        self.files: list[Path] = []
        self.gtids = GtidSet()  # executed GTIDs (of this server uuid)
        self.sequence_number = 0
        self.row_encoders: dict[int, RowEncoder] = {}
        self._out: Optional[BinaryIO] = None
        self._w: Optional[EventWriter] = None
        self._open(create_timestamp, create_timestamp)

    # -- files ---------------------------------------------------------------------------------------------------
    @property
    def current_file(self) -> Path:
        return self.files[-1]

    @property
    def position(self) -> int:
        assert self._w is not None
        return self._w.pos

    def _open(self, timestamp: int, create_timestamp: int) -> None:
        path = self.directory / f"{self.basename}.{self.index:06d}"
        self.files.append(path)
        self._out = open(path, "wb")
        self._out.write(C.BINLOG_MAGIC)
        self._w = EventWriter(server_id=self.server_id, row_encoders=self.row_encoders)
        self.sequence_number = 0
        fde = ev.FormatDescriptionEvent(
            4,
            self.server_version,
            create_timestamp,
            C.LOG_EVENT_HEADER_LEN,
            MYSQL_80_POST_HEADER_LENGTHS,
            C.BINLOG_CHECKSUM_ALG_CRC32,
        )
        prev = ev.PreviousGtidsEvent(self.previous_gtids())
        self._out.write(
            self._w.encode(Event(fde, timestamp))
            + self._w.encode(Event(prev, timestamp, flags=C.LOG_EVENT_IGNORABLE_F))
        )
        with open(self.directory / f"{self.basename}.index", "a", encoding="utf-8") as index:
            index.write(f"./{path.name}\n")

    def previous_gtids(self) -> tuple[ev.GtidSetEntry, ...]:
        return self.gtids.entries()

    def rotate(self, timestamp: int) -> None:
        """ROTATE to the next file (``FLUSH BINARY LOGS``)."""
        assert self._w is not None and self._out is not None
        self.index += 1
        rotate = ev.RotateEvent(C.BIN_LOG_HEADER_SIZE, f"{self.basename}.{self.index:06d}")
        self._out.write(self._w.encode(Event(rotate, timestamp)))
        self._out.close()
        self._open(timestamp, 0)

    def close(self, timestamp: int = 0, stop: bool = False) -> None:
        """Close the current file (with a STOP_EVENT when ``stop``, as a server shutdown writes)."""
        if self._out is None:
            return
        if stop:
            assert self._w is not None
            self._out.write(self._w.encode(Event(ev.StopEvent(), timestamp)))
        self._out.close()
        self._out = None

    def __enter__(self) -> "BinlogWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transactions --------------------------------------------------------------------------------------------
    def _add_gtid(self, gno: int) -> None:
        self.gtids.add_interval(Sid(self.sid), gno, gno)

    def write_transaction(
        self, events: Sequence[Event], *, gno: int, commit_time_us: int, compress: bool = False
    ) -> WrittenTransaction:
        """Write GTID + ``events`` (BEGIN ... XID, or one DDL QUERY) as one transaction.

        With ``compress`` the events go into one zstd TRANSACTION_PAYLOAD after the GTID (MySQL 8.0.20+
        ``binlog_transaction_compression``). The GTID's ``transaction_length`` is the byte size of the whole
        transaction including the GTID event itself.
        """
        w, out = self._w, self._out
        if w is None or out is None:
            raise BinlogWriteError("the binlog writer is closed")
        timestamp = commit_time_us // 1_000_000
        if compress:
            inner = EventWriter(pos=0, server_id=self.server_id, in_payload=True, row_encoders=self.row_encoders)
            raw = b"".join(inner.encode(e) for e in events)
            payload = payload_event_body(raw, True, self.compression_level)
            bodies = [(w.body_bytes(payload, C.TRANSACTION_PAYLOAD_EVENT), C.TRANSACTION_PAYLOAD_EVENT, timestamp, 0)]
        else:
            bodies = []
            for e in events:
                type_code = e.type_code or _DEFAULT_TYPE_CODES[type(e.body)]
                bodies.append((w.body_bytes(e.body, type_code), type_code, e.timestamp or timestamp, e.flags))
        rest = sum(event_size(len(b), w.checksum) for b, _, _, _ in bodies)
        self.sequence_number += 1
        statement_only = not any(isinstance(e.body, ev.RowsEvent) for e in events)  # DDL: logged as a statement
        gtid = ev.GtidEvent(
            flags=C.FLAG_MAY_HAVE_SBR if statement_only else 0,
            sid=self.sid,
            gno=gno,
            lt_type=C.LOGICAL_TIMESTAMP_TYPECODE,
            last_committed=self.sequence_number - 1,
            sequence_number=self.sequence_number,
            immediate_commit_timestamp=commit_time_us,
            transaction_length=transaction_length(rest, _GTID_BODY_SIZE_WITHOUT_LENGTH, w.checksum),
            immediate_server_version=self.version_id,
        )
        start = w.pos
        chunks = [w.frame(w.body_bytes(gtid, C.GTID_LOG_EVENT), C.GTID_LOG_EVENT, timestamp)]
        chunks.extend(w.frame(b, t, ts, None, f) for b, t, ts, f in bodies)
        out.write(b"".join(chunks))
        self._add_gtid(gno)
        written = WrittenTransaction(self.current_file.name, start, w.pos)
        if w.pos >= self.max_size:
            self.rotate(timestamp)
        return written


# GTID_LOG_EVENT body of MySQL 8.0 without its packed transaction_length: flags, SID, GNO, logical clock,
# immediate commit timestamp (7 bytes, no original), immediate server version
_GTID_BODY_SIZE_WITHOUT_LENGTH = 1 + 16 + 8 + 1 + 8 + 8 + 7 + 4


def transaction_length(rest: int, gtid_body_without_length: int, checksum: bool) -> int:
    """``Gtid_event::transaction_length``: all bytes of the transaction including the GTID event, whose own
    size depends on the packed size of this very length (a fix point, reached in at most two steps)."""
    length = rest + event_size(gtid_body_without_length + 1, checksum)
    while True:
        again = rest + event_size(gtid_body_without_length + packed_length_size(length), checksum)
        if again == length:
            return length
        length = again


def _null_padding(fde: ev.FormatDescriptionEvent) -> int:
    """Unused null-bitmap bits are 0 from MySQL 8.0 (``Bit_writer``) and 1 before it and in MariaDB."""
    if fde.is_mariadb:
        return 1
    return 0 if _version_id(fde.server_version) >= 80000 else 1


def _version_id(version: str) -> int:
    """``8.0.36`` -> 80036 (``Gtid_event::immediate_server_version``)."""
    parts = [int("".join(ch for ch in p if ch.isdigit()) or 0) for p in version.split("-")[0].split(".")[:3]]
    parts += [0] * (3 - len(parts))
    return parts[0] * 10000 + parts[1] * 100 + parts[2]
