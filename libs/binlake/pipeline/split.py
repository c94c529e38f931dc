"""Splitting a large binlog into Spark tasks at transaction boundaries, by a cheap scan of event headers.

Only the 19-byte common headers are read (``binlake.binlog.scan``, seeking over the bodies): every GTID event (MySQL
GTID,
ANONYMOUS_GTID, GTID_TAGGED; MariaDB GTID) starts a transaction, so chunks start there. A file without GTID
events is one chunk.
"""

from __future__ import annotations

from array import array
from typing import Optional, Sequence

from binlake.binlog import constants as C
from binlake.binlog.errors import BinlogError
from binlake.binlog.scan import scan_events
from binlake.pipeline.bronze import ChunkTask
from binlake.pipeline.identity import FileIdentity, unchanged_since

TRANSACTION_START_TYPES = frozenset(
    {C.GTID_LOG_EVENT, C.ANONYMOUS_GTID_LOG_EVENT, C.GTID_EVENT, C.GTID_TAGGED_LOG_EVENT}
)
DEFAULT_CHUNK_BYTES = 64 << 20
WHOLE_FILES = 1 << 62  # chunk_bytes of a plan only looked at, never decoded (idle check, status): no header scan


_SCANNED: dict[tuple, Sequence[int]] = {}  # (path, start, the file's unchanged_since) -> its transaction starts


def transaction_starts(path: str, start: int = C.BIN_LOG_HEADER_SIZE) -> Sequence[int]:
    """Offsets of the GTID events of a binlog, from the one event-header scanner (``binlake.binlog.scan``); stops
    quietly at a cut-short or corrupt event: the decoder reports those properly, with their place. A file this
    process scanned from ``start`` and that is unchanged since (``unchanged_since``) is not read again."""
    before = (path, start, unchanged_since(path))
    known = _SCANNED.get(before)
    if known is not None:
        return known
    out = array("q")  # 8 bytes a transaction (a 1 GiB binlog of one-row transactions holds millions)
    try:
        for ev in scan_events(path, start=start, commit_timestamps=False):
            if ev.type_code in TRANSACTION_START_TYPES:
                out.append(ev.pos)
    except BinlogError:
        pass
    if (path, start, unchanged_since(path)) == before:
        _SCANNED[before] = out
    return out


def plan_chunks(
    path: str, identity: FileIdentity, start: int = C.BIN_LOG_HEADER_SIZE, chunk_bytes: int = DEFAULT_CHUNK_BYTES
) -> list[ChunkTask]:
    """Chunks of about ``chunk_bytes``, each starting at a transaction boundary (the first at ``start``)."""
    if identity.size - start <= chunk_bytes:
        return [ChunkTask(path, identity, start, None)]
    cuts: list[int] = []
    nxt = start + chunk_bytes
    for pos in transaction_starts(path, start):
        if pos >= nxt:
            cuts.append(pos)
            nxt = pos + chunk_bytes
    bounds: list[Optional[int]] = [start, *cuts, None]
    return [ChunkTask(path, identity, bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]  # type: ignore
