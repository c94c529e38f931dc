"""Which binlog files hold the transactions of a data interval, by commit timestamps.

The rule (what a daily run means):

* A transaction belongs to the interval ``[start, end)`` that holds its **commit timestamp**: the
  ``immediate_commit_timestamp`` of its GTID event (MySQL 8, microseconds; ``Gtid_event``), else the header
  timestamp of its last event (MariaDB, older MySQL: seconds). This is the same commit time the pipeline stores
  in ``bronze.binlog_events.commit_ts`` and cuts at.
* The interval's files are those with at least one transaction committed in ``[start, end)``. A file spanning
  midnight belongs to both days: each day's run reads it and keeps only its own transactions (the apply step
  stops at the first change committed at or after ``end``; the rest is applied by the next day's run).
* A run for ``[start, end)`` leaves silver as of every transaction committed before ``end``: it applies its own
  transactions and any earlier ones not applied yet (changes apply in binlog order, never out of it).

The time range of a file comes from a cheap scan: only the 19-byte event headers are read, and the bodies of GTID
events (a few dozen bytes) are decoded with :mod:`binlake.binlog`'s decoder; row events and compressed payloads
are seeked over. Ranges are cached per file (name, size, mtime), so a file is scanned once unless it grows.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import struct
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import BinaryIO, Iterable, Optional

from binlake.binlog import constants as C
from binlake.binlog.cursor import Cursor
from binlake.binlog.decoders import DecodeContext, decode_body
from binlake.binlog.errors import BinlogError
from binlake.binlog.events import EventHeader
from binlake.orchestration.errors import LandingScanError

_EVENT_HEADER = struct.Struct("<IBIIIH")      # timestamp, type_code, server_id, event_size, log_pos, flags
_GTID_TYPES = frozenset({C.GTID_LOG_EVENT, C.ANONYMOUS_GTID_LOG_EVENT, C.GTID_TAGGED_LOG_EVENT, C.GTID_EVENT})
_COMMITS = frozenset({C.XID_EVENT, C.QUERY_EVENT})
_FILE_EVENTS = frozenset({C.ROTATE_EVENT, C.STOP_EVENT, C.PREVIOUS_GTIDS_LOG_EVENT, C.GTID_LIST_EVENT})
CACHE_VERSION = 1


@dataclass(frozen=True, slots=True)
class FileRange:
    """Commit-time range of one binlog file: first and last commit (microseconds since the epoch, UTC)."""

    name: str
    size: int
    mtime_ns: int
    transactions: int
    first_commit_us: Optional[int]      # None: the file holds no transaction
    last_commit_us: Optional[int]

    def overlaps(self, start_us: int, end_us: int) -> bool:
        """Whether a transaction of the file may be committed in ``[start_us, end_us)``."""
        if self.first_commit_us is None or self.last_commit_us is None:
            return False
        return self.first_commit_us < end_us and self.last_commit_us >= start_us


def epoch_us(when: dt.datetime) -> int:
    """Microseconds since the epoch of an aware datetime (naive ones are taken as UTC)."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    delta = when - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def scan_commit_times(stream: BinaryIO, *, file: str = "") -> Iterable[int]:
    """Commit timestamps (microseconds) of the transactions of a binlog stream, in file order, from the event
    headers and GTID event bodies only. Stops quietly at a cut-short final event (a file being written). A file
    without GTID events (binlog_format before GTIDs) gives one timestamp per XID/QUERY event, in seconds."""
    magic = stream.read(C.BIN_LOG_HEADER_SIZE)
    if magic != C.BINLOG_MAGIC:
        raise LandingScanError(f"{file}: not a binlog (offset 0: expected magic {C.BINLOG_MAGIC.hex()}, "
                               f"found {magic.hex()}); move the file out of the landing folder")
    ctx = DecodeContext(decode_rows=False)
    crc_len = 0
    pos = C.BIN_LOG_HEADER_SIZE
    open_gtid_us: Optional[int] = None      # commit time from the open transaction's GTID event
    last_header_s: Optional[int] = None     # header timestamp of the open transaction's latest event
    in_trx = False
    while True:
        head = stream.read(C.LOG_EVENT_HEADER_LEN)
        if len(head) < C.LOG_EVENT_HEADER_LEN:
            break
        header = EventHeader(*_EVENT_HEADER.unpack(head))
        size = header.event_size
        if size < C.LOG_EVENT_HEADER_LEN:
            raise LandingScanError(f"{file}: offset {pos}: impossible event length {size} (at least "
                                   f"{C.LOG_EVENT_HEADER_LEN} expected); the file is corrupt")
        code = header.type_code
        if code == C.FORMAT_DESCRIPTION_EVENT or code in _GTID_TYPES:
            raw = head + stream.read(size - C.LOG_EVENT_HEADER_LEN)
            if len(raw) < size:
                break
            try:
                if code == C.FORMAT_DESCRIPTION_EVENT:
                    ctx.fde = decode_body(Cursor(raw, C.LOG_EVENT_HEADER_LEN, size, pos), header, ctx)
                    crc_len = C.BINLOG_CHECKSUM_LEN if ctx.fde.checksum_alg == C.BINLOG_CHECKSUM_ALG_CRC32 else 0
                else:
                    if in_trx:
                        yield open_gtid_us or (last_header_s or 0) * 1_000_000
                    body = decode_body(Cursor(raw, C.LOG_EVENT_HEADER_LEN, size - crc_len, pos), header, ctx)
                    open_gtid_us = getattr(body, "immediate_commit_timestamp", None) or None
                    last_header_s = header.timestamp
                    in_trx = True
            except BinlogError as exc:
                raise LandingScanError(f"{file}: offset {pos}: {header.type_name} does not decode: {exc}") from None
        else:
            if code in _FILE_EVENTS:
                pass
            elif in_trx:
                last_header_s = header.timestamp
            elif code in _COMMITS:          # no GTID events at all: each XID/QUERY is one unit
                yield header.timestamp * 1_000_000
            stream.seek(size - C.LOG_EVENT_HEADER_LEN, os.SEEK_CUR)
        pos += size
    if in_trx:
        yield open_gtid_us or (last_header_s or 0) * 1_000_000


def scan_file(path: str) -> FileRange:
    """The commit-time range of one binlog file (a full header scan)."""
    st = os.stat(path)
    first = last = None
    count = 0
    with open(path, "rb") as f:
        for ts in scan_commit_times(f, file=path):
            count += 1
            first = ts if first is None else min(first, ts)
            last = ts if last is None else max(last, ts)
    return FileRange(os.path.basename(path), st.st_size, st.st_mtime_ns, count, first, last)


class RangeCache:
    """Per-file commit-time ranges of one source's landing folder, kept in a JSON file between runs."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self._ranges: dict[str, FileRange] = {}
        if self.path.is_file():
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if data.get("version") == CACHE_VERSION:
                self._ranges = {r["name"]: FileRange(**r) for r in data["files"]}
        self.scanned: list[str] = []

    def range_of(self, path: str) -> FileRange:
        st = os.stat(path)
        cached = self._ranges.get(os.path.basename(path))
        if cached is not None and cached.size == st.st_size and cached.mtime_ns == st.st_mtime_ns:
            return cached
        fresh = scan_file(path)
        self._ranges[fresh.name] = fresh
        self.scanned.append(fresh.name)
        return fresh

    def save(self) -> None:
        if not self.scanned:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        data = {"version": CACHE_VERSION, "files": [asdict(r) for r in sorted(self._ranges.values(),
                                                                               key=lambda r: r.name)]}
        tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
        os.replace(tmp, self.path)


@dataclass(frozen=True, slots=True)
class IntervalFiles:
    """The files of one source holding transactions committed in ``[start, end)``."""

    source: str
    start: dt.datetime
    end: dt.datetime
    files: tuple[FileRange, ...]
    spanning: tuple[str, ...]       # files with transactions on both sides of ``start`` or of ``end``
    landing_files: int              # binlog files in the source's landing folder
    last_commit_us: Optional[int]   # newest commit in the landing folder: below ``end`` while data is still due

    def as_dict(self) -> dict:
        return {"source": self.source, "start": self.start.isoformat(), "end": self.end.isoformat(),
                "files": [r.name for r in self.files], "spanning": list(self.spanning),
                "landing_files": self.landing_files, "last_commit_us": self.last_commit_us}


def binlog_files(folder: str) -> list[str]:
    """The binlog files of a landing folder in sequence order (``name.NNNNNN``; index and state files skipped)."""
    from binlake.pipeline.identity import landing_files

    return landing_files(folder) if os.path.isdir(folder) else []


def select_files(source: str, folder: str, start: dt.datetime, end: dt.datetime,
                 cache: RangeCache) -> IntervalFiles:
    """The files of ``folder`` with a transaction committed in ``[start, end)`` (see the module docstring)."""
    start_us, end_us = epoch_us(start), epoch_us(end)
    paths = binlog_files(folder)
    ranges = [cache.range_of(p) for p in paths]
    chosen = tuple(r for r in ranges if r.overlaps(start_us, end_us))
    spanning = tuple(r.name for r in chosen
                     if r.first_commit_us < start_us or r.last_commit_us >= end_us)   # type: ignore[operator]
    last = max((r.last_commit_us for r in ranges if r.last_commit_us is not None), default=None)
    return IntervalFiles(source, start, end, chosen, spanning, len(paths), last)
