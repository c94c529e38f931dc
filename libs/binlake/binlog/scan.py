"""The one event-header scanner: what every walk over a binlog file needs without decoding bodies.

:func:`scan_events` reads the binlog magic, then each event's 19-byte common header (``Log_event_header``:
timestamp, type, server id, event size, log_pos, flags) and skips its body (seeks when it can, reads through in
bounded steps otherwise); GTID events (GTID, ANONYMOUS_GTID, GTID_TAGGED) are decoded for their
``immediate_commit_timestamp``. Memory is bounded by one header (one event with ``with_bytes``). A cut-short final
event (a file still being written) ends the scan quietly: ``stats.incomplete`` says where, ``stats.end`` is the
offset just after the last whole event. Mirrors the framing loop of ``Binlog_event_data_istream``.
"""

from __future__ import annotations

import io
import os
import struct
from dataclasses import dataclass
from typing import BinaryIO, Iterator, NamedTuple, Optional, Union

from binlake.binlog import constants as C
from binlake.binlog.cursor import Cursor
from binlake.binlog.errors import (
    BinlogError,
    IncompleteEventError,
    NotABinlogError,
)
from binlake.binlog.events import EventHeader
from binlake.binlog.reader import MAX_EVENT_SIZE, _read_exact, check_event_size

_HEADER = struct.Struct("<IBIIIH")
_STEP = 1 << 20
_GTID_TYPES = frozenset({C.GTID_LOG_EVENT, C.ANONYMOUS_GTID_LOG_EVENT, C.GTID_TAGGED_LOG_EVENT})
_READ_TYPES = _GTID_TYPES | {C.FORMAT_DESCRIPTION_EVENT}


class ScannedEvent(NamedTuple):
    """One event's place and header. ``commit_timestamp``: a GTID event's immediate_commit_timestamp (microseconds
    since the epoch; None for other events or old servers). ``raw``: the whole event with ``with_bytes``."""

    pos: int
    type_code: int
    event_size: int
    timestamp: int
    log_pos: int
    flags: int
    server_id: int
    commit_timestamp: Optional[int] = None
    raw: Optional[bytes] = None


@dataclass
class ScanStats:
    """What a scan saw: whole events, the offset after the last whole one, the cut-short tail if any."""

    events: int = 0
    end: int = 0
    incomplete: Optional[IncompleteEventError] = None


def _skip(stream: BinaryIO, n: int, seekable: bool) -> int:
    """Skip ``n`` bytes; returns how many were there."""
    if seekable:
        here = stream.tell()
        end = stream.seek(0, io.SEEK_END)
        stream.seek(min(here + n, end))
        return min(n, end - here)
    done = 0
    while done < n:
        chunk = stream.read(min(_STEP, n - done))
        if not chunk:
            break
        done += len(chunk)
    return done


def _decode(header: EventHeader, raw: bytes, end: int, pos: int, file: Optional[str]) -> object:
    """The typed body of a GTID or FORMAT_DESCRIPTION event (``raw[19:end]``), errors located at ``pos``."""
    from binlake.binlog.decoders import DecodeContext, decode_body
    from binlake.binlog.rows import DECODE_FAILURES, decode_failure

    try:
        return decode_body(Cursor(raw, C.LOG_EVENT_HEADER_LEN, end, pos), header, DecodeContext())
    except BinlogError as exc:
        raise exc.located(file=file, offset=pos, event_type=header.type_name) from None
    except DECODE_FAILURES as exc:
        raise decode_failure(exc, "event body", end - C.LOG_EVENT_HEADER_LEN).located(
            file=file, offset=pos, event_type=header.type_name
        ) from None


def scan_events(
    source: Union[str, os.PathLike, BinaryIO],
    *,
    start: Optional[int] = None,
    file: Optional[str] = None,
    max_event_size: int = MAX_EVENT_SIZE,
    with_bytes: bool = False,
    commit_timestamps: bool = True,
    stats: Optional[ScanStats] = None,
) -> Iterator[ScannedEvent]:
    """Every whole event of a binlog path or binary stream, in file order (see the module docstring).

    ``start``: an event offset to begin at (after checking the magic); ``with_bytes``: each event's bytes in
    ``raw``; ``commit_timestamps=False``: GTID bodies are not decoded (``commit_timestamp`` stays None). Raises
    NotABinlogError (bad magic), CorruptEventError (an event size under 19 bytes),
    EventTooLargeError (above ``max_event_size``); a cut-short tail is not an error (``stats.incomplete``)."""
    stats = stats if stats is not None else ScanStats()
    if isinstance(source, (str, os.PathLike)):
        name = file if file is not None else os.fspath(source)
        try:
            stream: BinaryIO = open(source, "rb")
        except OSError as exc:
            raise BinlogError(f"can not open: {exc.strerror}", file=name) from None
        with stream:
            yield from _scan(stream, name, start, max_event_size, with_bytes, commit_timestamps, stats)
    else:
        yield from _scan(source, file, start, max_event_size, with_bytes, commit_timestamps, stats)


def _scan(
    stream: BinaryIO,
    file: Optional[str],
    start: Optional[int],
    max_event_size: int,
    with_bytes: bool,
    commit_timestamps: bool,
    stats: ScanStats,
) -> Iterator[ScannedEvent]:
    read_types = _READ_TYPES if commit_timestamps else frozenset()
    try:
        seekable = stream.seekable()
    except (OSError, ValueError):
        seekable = False
    magic = _read_exact(stream, C.BIN_LOG_HEADER_SIZE)
    stats.end = 0
    if magic != C.BINLOG_MAGIC:
        if C.BINLOG_MAGIC.startswith(magic):
            stats.incomplete = IncompleteEventError(
                "file ends inside the 4-byte binlog magic",
                file=file,
                offset=0,
                expected=f"{C.BIN_LOG_HEADER_SIZE} bytes",
                found=f"{len(magic)} bytes",
            )
            return
        raise NotABinlogError(
            "not a binlog: bad magic number", file=file, offset=0, expected=C.BINLOG_MAGIC.hex(), found=magic.hex()
        )
    pos = C.BIN_LOG_HEADER_SIZE
    stats.end = pos
    if start is not None and start > pos:
        got = _skip(stream, start - pos, seekable)
        if got < start - pos:
            stats.incomplete = IncompleteEventError(
                "start offset is past the end of the file",
                file=file,
                offset=start,
                expected=f"an event at {start}",
                found=f"{pos + got} bytes",
            )
            return
        pos = stats.end = start
    crc = False  # the FORMAT_DESCRIPTION_EVENT says whether events end with a CRC32
    while True:
        head = _read_exact(stream, C.LOG_EVENT_HEADER_LEN)
        if not head:
            return
        if len(head) < C.LOG_EVENT_HEADER_LEN:
            stats.incomplete = IncompleteEventError(
                "incomplete final event: file ends inside an event header",
                file=file,
                offset=pos,
                expected=f"{C.LOG_EVENT_HEADER_LEN} header bytes",
                found=f"{len(head)} bytes",
            )
            return
        header = EventHeader(*_HEADER.unpack(head))
        size = header.event_size
        check_event_size(header, file=file, offset=pos, max_event_size=max_event_size)
        rest_len = size - C.LOG_EVENT_HEADER_LEN
        raw: Optional[bytes] = None
        if with_bytes or header.type_code in read_types:
            if seekable and rest_len > _STEP:  # a cut-short tail is not read into memory
                here = stream.tell()
                left = stream.seek(0, io.SEEK_END) - here
                stream.seek(here)
                if left < rest_len:
                    stream.seek(here + left)
                    stats.incomplete = IncompleteEventError(
                        "incomplete final event: file ends inside the event",
                        file=file,
                        offset=pos,
                        event_type=header.type_name,
                        expected=f"{size} bytes",
                        found=f"{C.LOG_EVENT_HEADER_LEN + left} bytes",
                    )
                    return
            rest = _read_exact(stream, rest_len)
            got = len(rest)
            raw = head + rest
        else:
            got = _skip(stream, rest_len, seekable)
        if got < rest_len:
            stats.incomplete = IncompleteEventError(
                "incomplete final event: file ends inside the event",
                file=file,
                offset=pos,
                event_type=header.type_name,
                expected=f"{size} bytes",
                found=f"{C.LOG_EVENT_HEADER_LEN + got} bytes",
            )
            return
        commit = None
        if not commit_timestamps:
            pass
        elif header.type_code == C.FORMAT_DESCRIPTION_EVENT and raw is not None:
            fde = _decode(header, raw, size, pos, file)
            crc = getattr(fde, "checksum_alg", None) == C.BINLOG_CHECKSUM_ALG_CRC32
        elif header.type_code in _GTID_TYPES and raw is not None:
            end = (
                size - C.BINLOG_CHECKSUM_LEN if crc and size >= C.LOG_EVENT_HEADER_LEN + C.BINLOG_CHECKSUM_LEN else size
            )
            commit = getattr(_decode(header, raw, end, pos, file), "immediate_commit_timestamp", None)
        stats.events += 1
        stats.end = pos + size
        yield ScannedEvent(
            pos,
            header.type_code,
            size,
            header.timestamp,
            header.log_pos,
            header.flags,
            header.server_id,
            commit,
            raw if with_bytes else None,
        )
        pos += size


__all__ = ["MAX_EVENT_SIZE", "ScanStats", "ScannedEvent", "scan_events"]
