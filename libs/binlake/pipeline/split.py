"""Splitting a large binlog into Spark tasks at transaction boundaries, by a cheap scan of event headers.

Only the 19-byte common headers are read (``seek`` over the bodies): every GTID event (MySQL GTID,
ANONYMOUS_GTID, GTID_TAGGED; MariaDB GTID) starts a transaction, so chunks start there. A file without GTID
events is one chunk.
"""

from __future__ import annotations

import struct
from typing import Optional

from binlake.binlog import constants as C
from binlake.pipeline.bronze import ChunkTask
from binlake.pipeline.identity import FileIdentity

_TYPE_AND_SIZE = struct.Struct("<4xB4xI")          # type_code, event_size of the common event header
TRANSACTION_START_TYPES = frozenset({C.GTID_LOG_EVENT, C.ANONYMOUS_GTID_LOG_EVENT, C.GTID_EVENT,
                                     C.GTID_TAGGED_LOG_EVENT})
DEFAULT_CHUNK_BYTES = 64 << 20


def transaction_starts(path: str, start: int = C.BIN_LOG_HEADER_SIZE) -> list[int]:
    """Offsets of the GTID events of a binlog (stops quietly at a cut-short or corrupt header: the decoder
    reports those properly)."""
    out = []
    with open(path, "rb") as f:
        f.seek(0, 2)
        size = f.tell()
        pos = start
        unpack = _TYPE_AND_SIZE.unpack
        while pos + C.LOG_EVENT_HEADER_LEN <= size:
            f.seek(pos)
            head = f.read(C.LOG_EVENT_HEADER_LEN)
            type_code, event_size = unpack(head[:13])
            if event_size < C.LOG_EVENT_HEADER_LEN:
                break
            if type_code in TRANSACTION_START_TYPES:
                out.append(pos)
            pos += event_size
    return out


def plan_chunks(path: str, identity: FileIdentity, start: int = C.BIN_LOG_HEADER_SIZE,
                chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> list[ChunkTask]:
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
