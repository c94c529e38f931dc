"""Reading a binlog byte stream into events: magic, FORMAT_DESCRIPTION, checksums, fenced bodies, payloads.

:func:`read_events` is the one loop: it takes a binary stream (a file, or ``io.BytesIO`` over bytes), reads one
event at a time (memory bounded by the largest event, and by the largest inner event for compressed
transactions, which are decompressed as a stream), verifies CRC32 when the FORMAT_DESCRIPTION says the file has
checksums, decodes each body through :mod:`binlake.binlog.decoders`, and yields :class:`BinlogEvent` values.
Events inside a TRANSACTION_PAYLOAD follow it, with ``payload_pos`` set. Mirrors ``Binlog_file_reader`` and
``Binlog_event_data_istream`` (sql/binlog_reader.h) and ``Payload_event_buffer_istream``.
"""

from __future__ import annotations

import io
import struct
import zlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Iterator, Optional

from binlake.binlog import constants as C
from binlake.binlog.cursor import Cursor
from binlake.binlog.decoders import DecodeContext, decode_body
from binlake.binlog.errors import (
    BinlogError,
    ChecksumMismatchError,
    CorruptEventError,
    EncryptedBinlogError,
    EventTooLargeError,
    IncompleteEventError,
    NotABinlogError,
    StartPositionError,
    UnsupportedError,
)
from binlake.binlog.events import (
    BinlogEvent,
    EventHeader,
    FormatDescriptionEvent,
    StartEncryptionEvent,
    TransactionPayloadEvent,
    UnknownEvent,
)
from binlake.binlog.rows import DECODE_FAILURES, decode_failure

EVENT_HEADER = struct.Struct("<IBIIIH")  # timestamp, type_code, server_id, event_size, log_pos, flags
_CRC = struct.Struct("<I")
FLAGS_OFFSET = 17
MAX_EVENT_SIZE = (1 << 30) + (1 << 20)  # max_allowed_packet (1 GiB) plus headers
READ_STEP = 1 << 20  # decompress and copy in steps of at most this many bytes
_FIRST_EVENT_TYPES = frozenset({C.FORMAT_DESCRIPTION_EVENT, C.START_EVENT_V3, C.ROTATE_EVENT})
# the largest body of event types whose layout is fixed or small (``Xid_event``: 8 bytes; ``Intvar_event``: 9;
# ``Rand_event``: 16; a GTID event, MySQL's or MariaDB's: well under 1 KiB): a larger declared size is corrupt and
# is rejected at the header, before its body is read (a compressed payload can hold a gigabyte of zeros behind a
# 33 KB file)
LARGEST_BODY = {
    C.XID_EVENT: 8,
    C.INTVAR_EVENT: 9,
    C.RAND_EVENT: 16,
    C.GTID_LOG_EVENT: 1024,
    C.ANONYMOUS_GTID_LOG_EVENT: 1024,
    C.GTID_TAGGED_LOG_EVENT: 1024,
    C.GTID_EVENT: 1024,
}


def largest_event(type_code: int, checksum: bool) -> Optional[int]:
    """The largest event size of a type with a bounded layout (None: only ``max_event_size`` bounds it)."""
    body = LARGEST_BODY.get(type_code)
    return None if body is None else C.LOG_EVENT_HEADER_LEN + body + (C.BINLOG_CHECKSUM_LEN if checksum else 0)


def check_event_size(
    header: EventHeader,
    *,
    file: Optional[str],
    offset: int,
    max_event_size: int,
    largest: Optional[int] = None,
    room: Optional[int] = None,
    inner: Optional[int] = None,
) -> None:
    """The size checks of ``Binlog_event_data_istream::read_event_header``, before any body byte is read: at least
    a header, at most ``room`` (what a payload has left), ``max_event_size`` and ``largest`` (its type's bound).
    ``inner``: the event's offset inside a TRANSACTION_PAYLOAD (``offset`` is then the payload's)."""
    size = header.event_size
    what, where = ("inner event", f" (inner offset {inner})") if inner is not None else ("event", "")
    place: dict[str, Any] = dict(file=file, offset=offset, event_type=header.type_name, found=size)
    if size < C.LOG_EVENT_HEADER_LEN or (room is not None and size > room):
        top = room if room is not None else max_event_size
        raise CorruptEventError(
            f"impossible {what} length{where}", expected=f"{C.LOG_EVENT_HEADER_LEN}..{top} bytes", **place
        )
    if size > max_event_size:
        raise EventTooLargeError(
            f"{what} larger than the maximum event size{where}", expected=f"at most {max_event_size} bytes", **place
        )
    if largest is not None and size > largest:
        raise CorruptEventError(
            f"{what} larger than any event of its type{where}", expected=f"at most {largest} bytes", **place
        )


@dataclass
class ReadStats:
    """What a read saw: events per type code (inner payload events included), unknown types, incomplete tail."""

    events: Counter = field(default_factory=Counter)
    unknown: Counter = field(default_factory=Counter)
    incomplete: Optional[IncompleteEventError] = None

    @property
    def unknown_total(self) -> int:
        return sum(self.unknown.values())


def _read_exact(stream: BinaryIO, n: int) -> bytes:
    data = stream.read(n)
    if data is None:
        data = b""
    while len(data) < n:
        more = stream.read(n - len(data))
        if not more:
            break
        data += more
    return data


def _decode_one(
    pos: int, header: EventHeader, raw: bytes, body_end: int, ctx: DecodeContext, file: Optional[str]
) -> object:
    """Decode the body ``raw[19:body_end]`` with typed errors located at ``pos``."""
    try:
        return decode_body(Cursor(raw, C.LOG_EVENT_HEADER_LEN, body_end, pos), header, ctx)
    except BinlogError as exc:
        raise exc.located(file=file, offset=pos, event_type=header.type_name) from None
    except DECODE_FAILURES as exc:
        raise decode_failure(exc, "event body", body_end - C.LOG_EVENT_HEADER_LEN).located(
            file=file, offset=pos, event_type=header.type_name
        ) from None


def read_events(
    stream: BinaryIO,
    *,
    file: Optional[str] = None,
    verify_checksum: bool = True,
    start_position: Optional[int] = None,
    ctx: Optional[DecodeContext] = None,
    stats: Optional[ReadStats] = None,
    stop_at_incomplete: bool = False,
    decode_payloads: bool = True,
    max_event_size: int = MAX_EVENT_SIZE,
) -> Iterator[BinlogEvent]:
    """Yield every event of a binlog stream (see module docstring).

    ``max_event_size`` caps every event, those inside a TRANSACTION_PAYLOAD included (the role of
    ``max_allowed_packet`` in ``Binlog_event_data_istream``): a larger one is an EventTooLargeError.

    ``start_position``: after the FORMAT_DESCRIPTION, jump to this offset (which must be an event start; a
    seekable stream is seeked, others are read through). ``stop_at_incomplete``: a cut-short final event ends the
    iteration quietly (``stats.incomplete`` says where) instead of raising IncompleteEventError.
    """
    ctx = ctx if ctx is not None else DecodeContext()
    stats = stats if stats is not None else ReadStats()
    if start_position is not None and not C.BIN_LOG_HEADER_SIZE <= start_position < 1 << 63:
        raise StartPositionError(
            "start position is not an offset in a binlog",
            file=file,
            expected=f"{C.BIN_LOG_HEADER_SIZE}..{(1 << 63) - 1}",
            found=start_position,
        )
    magic = _read_exact(stream, C.BIN_LOG_HEADER_SIZE)
    if magic != C.BINLOG_MAGIC:
        if C.BINLOG_MAGIC.startswith(magic):
            err = IncompleteEventError(
                "file ends inside the 4-byte binlog magic",
                file=file,
                offset=0,
                expected=f"{C.BIN_LOG_HEADER_SIZE} bytes",
                found=f"{len(magic)} bytes",
            )
            stats.incomplete = err
            if stop_at_incomplete:
                return
            raise err
        raise NotABinlogError(
            "not a binlog: bad magic number", file=file, offset=0, expected=C.BINLOG_MAGIC.hex(), found=magic.hex()
        )
    pos = C.BIN_LOG_HEADER_SIZE
    crc32 = zlib.crc32
    header_unpack = EVENT_HEADER.unpack
    encrypted: Optional[StartEncryptionEvent] = None
    first = True
    skip_to: Optional[int] = None
    read = stream.read
    while True:
        head = read(C.LOG_EVENT_HEADER_LEN)
        if len(head) < C.LOG_EVENT_HEADER_LEN:
            head += _read_exact(stream, C.LOG_EVENT_HEADER_LEN - len(head)) if head else b""
        if not head:
            return
        if encrypted is not None:
            raise EncryptedBinlogError(
                "events after MariaDB START_ENCRYPTION_EVENT are encrypted",
                file=file,
                offset=pos,
                expected="plain events",
                found=f"encryption scheme {encrypted.scheme}, key version {encrypted.key_version}",
            )
        if len(head) < C.LOG_EVENT_HEADER_LEN:
            err = IncompleteEventError(
                "incomplete final event: file ends inside an event header",
                file=file,
                offset=pos,
                expected=f"{C.LOG_EVENT_HEADER_LEN} header bytes",
                found=f"{len(head)} bytes",
            )
            stats.incomplete = err
            if stop_at_incomplete:
                return
            raise err
        header = EventHeader(*header_unpack(head))
        size = header.event_size
        check_event_size(
            header,
            file=file,
            offset=pos,
            max_event_size=max_event_size,
            largest=largest_event(
                header.type_code, ctx.fde is None or ctx.fde.checksum_alg == C.BINLOG_CHECKSUM_ALG_CRC32
            ),
        )
        if first and header.type_code not in _FIRST_EVENT_TYPES:
            raise NotABinlogError(
                "first event is not a FORMAT_DESCRIPTION_EVENT",
                file=file,
                offset=pos,
                event_type=header.type_name,
                expected="FORMAT_DESCRIPTION_EVENT (15)",
                found=header.type_code,
            )
        rest = read(size - C.LOG_EVENT_HEADER_LEN)
        if len(rest) < size - C.LOG_EVENT_HEADER_LEN:
            rest += _read_exact(stream, size - C.LOG_EVENT_HEADER_LEN - len(rest))
        if len(rest) < size - C.LOG_EVENT_HEADER_LEN:
            err = IncompleteEventError(
                "incomplete final event: file ends inside the event",
                file=file,
                offset=pos,
                event_type=header.type_name,
                expected=f"{size} bytes",
                found=f"{C.LOG_EVENT_HEADER_LEN + len(rest)} bytes",
            )
            stats.incomplete = err
            if stop_at_incomplete:
                return
            raise err
        raw = head + rest
        checksum: Optional[int] = None
        if header.type_code == C.FORMAT_DESCRIPTION_EVENT:
            body = _decode_one(pos, header, raw, size, ctx, file)
            assert isinstance(body, FormatDescriptionEvent)
            ctx.fde = body
            ctx.tables.clear()
            body_end = size
            if body.checksum_alg is not None:
                checksum = _CRC.unpack_from(raw, size - 4)[0]
                if body.checksum_alg == C.BINLOG_CHECKSUM_ALG_CRC32 and verify_checksum:
                    # the server clears LOG_EVENT_BINLOG_IN_USE_F at close without updating the checksum
                    # (Log_event_footer::event_checksum_test)
                    signed = (
                        raw[:FLAGS_OFFSET]
                        + bytes((raw[FLAGS_OFFSET] & ~C.LOG_EVENT_BINLOG_IN_USE_F,))
                        + raw[FLAGS_OFFSET + 1 : size - 4]
                    )
                    actual = crc32(signed)
                    if actual != checksum:
                        raise ChecksumMismatchError(
                            "CRC32 mismatch",
                            file=file,
                            offset=pos,
                            event_type=header.type_name,
                            expected=f"0x{actual:08x}",
                            found=f"0x{checksum:08x}",
                        )
        else:
            body_end = size
            if ctx.fde is not None and ctx.fde.checksum_alg == C.BINLOG_CHECKSUM_ALG_CRC32:
                if size < C.LOG_EVENT_HEADER_LEN + C.BINLOG_CHECKSUM_LEN:
                    raise CorruptEventError(
                        "event too short for its checksum",
                        file=file,
                        offset=pos,
                        event_type=header.type_name,
                        expected=">= 23 bytes",
                        found=size,
                    )
                body_end = size - C.BINLOG_CHECKSUM_LEN
                checksum = _CRC.unpack_from(raw, body_end)[0]
                if verify_checksum:
                    actual = crc32(raw[:body_end])
                    if actual != checksum:
                        raise ChecksumMismatchError(
                            "CRC32 mismatch",
                            file=file,
                            offset=pos,
                            event_type=header.type_name,
                            expected=f"0x{actual:08x}",
                            found=f"0x{checksum:08x}",
                        )
            body = _decode_one(pos, header, raw, body_end, ctx, file)
        stats.events[header.type_code] += 1
        if isinstance(body, UnknownEvent):
            stats.unknown[header.type_code] += 1
        elif isinstance(body, StartEncryptionEvent):
            encrypted = body
        if first and start_position is not None and start_position != C.BIN_LOG_HEADER_SIZE:
            # checked (and skipped to) before the first event is yielded, so a bad position prints nothing
            if start_position < pos + size:
                raise StartPositionError(
                    "start position is inside the first event",
                    file=file,
                    offset=start_position,
                    event_type=header.type_name,
                    expected=f"{C.BIN_LOG_HEADER_SIZE} or an offset from {pos + size}",
                    found=start_position,
                )
            _skip_to(stream, pos + size, start_position, file)
            skip_to = start_position
        yield BinlogEvent(pos, header, body, checksum)
        if isinstance(body, TransactionPayloadEvent) and decode_payloads:
            yield from iter_payload_events(body, pos, ctx, file=file, stats=stats, max_event_size=max_event_size)
        pos += size
        if skip_to is not None:
            pos, skip_to = skip_to, None
        first = False


def _skip_to(stream: BinaryIO, pos: int, target: int, file: Optional[str]) -> None:
    try:
        seekable = stream.seekable()
    except (OSError, ValueError):
        seekable = False
    if seekable:
        here = stream.tell()
        end = stream.seek(0, io.SEEK_END)
        if target - pos > end - here:
            raise StartPositionError(
                "start position is past the end of the file",
                file=file,
                offset=target,
                expected=f"at most {end - here + pos} (the file size)",
                found=target,
            )
        stream.seek(here + target - pos)
        return
    while pos < target:
        chunk = stream.read(min(1 << 20, target - pos))
        if not chunk:
            raise StartPositionError(
                "start position is past the end of the file",
                file=file,
                offset=target,
                expected=f"at most {pos} (the file size)",
                found=target,
            )
        pos += len(chunk)


class _PayloadStream:
    """The uncompressed bytes of a TRANSACTION_PAYLOAD, read incrementally: at most ``limit`` bytes (the declared
    uncompressed size), decompressed in steps of READ_STEP bytes (``Payload_event_buffer_istream``)."""

    def __init__(self, event: TransactionPayloadEvent) -> None:
        if event.compression_type == C.ZSTD:
            import zstandard

            self._reader: BinaryIO = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(event.payload))
        elif event.compression_type == C.NONE:
            self._reader = io.BytesIO(event.payload)
        else:
            raise UnsupportedError(
                "unknown TRANSACTION_PAYLOAD compression type",
                expected="0 (ZSTD) or 255 (NONE)",
                found=event.compression_type,
            )
        self.limit = event.uncompressed_size if event.compression_type == C.ZSTD else event.payload_size

    def read_into(self, out: io.BytesIO, n: int) -> int:
        """Append up to ``n`` more bytes to ``out`` in bounded steps; returns how many were appended."""
        import zstandard

        done = 0
        try:
            while done < n:
                chunk = self._reader.read(min(READ_STEP, n - done))
                if not chunk:
                    break
                out.write(chunk)
                done += len(chunk)
        except zstandard.ZstdError as exc:
            raise CorruptEventError(f"compressed payload does not decompress: {exc}") from None
        return done

    def read(self, n: int) -> bytes:
        out = io.BytesIO()
        self.read_into(out, n)
        return out.getvalue()


def iter_payload_events(
    event: TransactionPayloadEvent,
    payload_pos: int,
    ctx: DecodeContext,
    *,
    file: Optional[str] = None,
    stats: Optional[ReadStats] = None,
    max_event_size: int = MAX_EVENT_SIZE,
) -> Iterator[BinlogEvent]:
    """The events inside a TRANSACTION_PAYLOAD_EVENT (which carry no checksums), decompressed as a stream.

    Each inner event's ``pos`` is its offset in the uncompressed payload; ``payload_pos`` the enclosing event's.
    Errors name the enclosing event's file offset and the inner offset. Memory is bounded by the largest inner
    event, itself at most ``max_event_size`` and what the declared uncompressed size leaves; the payload must
    decompress to exactly its declared uncompressed size.
    """
    try:
        stream = _PayloadStream(event)
    except BinlogError as exc:
        raise exc.located(file=file, offset=payload_pos, event_type="TRANSACTION_PAYLOAD_EVENT") from None
    inner = 0
    where = f"inside TRANSACTION_PAYLOAD_EVENT at {payload_pos}"
    while True:
        try:
            head = stream.read(C.LOG_EVENT_HEADER_LEN)
        except BinlogError as exc:
            raise exc.located(file=file, offset=payload_pos, event_type="TRANSACTION_PAYLOAD_EVENT") from None
        if not head:
            if inner != stream.limit:
                raise CorruptEventError(
                    "payload shorter than its declared uncompressed size",
                    file=file,
                    offset=payload_pos,
                    event_type="TRANSACTION_PAYLOAD_EVENT",
                    expected=f"{stream.limit} bytes",
                    found=f"{inner} bytes",
                )
            break
        if len(head) < C.LOG_EVENT_HEADER_LEN:
            raise CorruptEventError(
                f"payload ends inside an event header (inner offset {inner})",
                file=file,
                offset=payload_pos,
                event_type="TRANSACTION_PAYLOAD_EVENT",
                expected=f"{C.LOG_EVENT_HEADER_LEN} bytes",
                found=f"{len(head)} bytes",
            )
        header = EventHeader(*EVENT_HEADER.unpack(head))
        size = header.event_size
        check_event_size(
            header,
            file=file,
            offset=payload_pos,
            max_event_size=max_event_size,
            largest=largest_event(header.type_code, False),
            room=stream.limit - inner,
            inner=inner,
        )
        if header.type_code in (C.FORMAT_DESCRIPTION_EVENT, C.TRANSACTION_PAYLOAD_EVENT):
            raise CorruptEventError(
                f"{header.type_name} can not be nested in a payload (inner offset {inner})",
                file=file,
                offset=payload_pos,
                event_type="TRANSACTION_PAYLOAD_EVENT",
            )
        buf = io.BytesIO()
        buf.write(head)
        try:
            got = stream.read_into(buf, size - C.LOG_EVENT_HEADER_LEN)
        except BinlogError as exc:
            raise exc.located(file=file, offset=payload_pos, event_type="TRANSACTION_PAYLOAD_EVENT") from None
        if got < size - C.LOG_EVENT_HEADER_LEN:
            raise CorruptEventError(
                f"payload ends inside an event (inner offset {inner})",
                file=file,
                offset=payload_pos,
                event_type=header.type_name,
                expected=f"{size} bytes",
                found=f"{C.LOG_EVENT_HEADER_LEN + got}",
            )
        raw = buf.getvalue()  # the buffer's own bytes, not a copy
        del buf
        try:
            body = decode_body(Cursor(raw, C.LOG_EVENT_HEADER_LEN, size, 0), header, ctx)
        except BinlogError as exc:
            exc.message += f" ({where}, inner offset {inner})"
            exc.offset = None
            raise exc.located(file=file, offset=payload_pos, event_type=header.type_name) from None
        except DECODE_FAILURES as exc:
            raise decode_failure(
                exc, f"event body ({where}, inner offset {inner})", size - C.LOG_EVENT_HEADER_LEN
            ).located(file=file, offset=payload_pos, event_type=header.type_name) from None
        if stats is not None:
            stats.events[header.type_code] += 1
            if isinstance(body, UnknownEvent):
                stats.unknown[header.type_code] += 1
        yield BinlogEvent(inner, header, body, None, payload_pos)
        inner += size
