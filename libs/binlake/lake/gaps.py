"""Gap detection: a source's binlogs must continue from what the lake already holds.

MySQL numbers a server's binlog files one after the other (``binlog.000041`` rotates to ``binlog.000042``,
``MYSQL_BIN_LOG::open_binlog`` / ``find_next_log``), so the files a source has ingested and landed must form one
unbroken run of sequence numbers, and a file already ingested up to a position may only grow past it. Anything
else (a file purged from the server before it was fetched, a server reset that started the numbering again, a
file replaced by another) means changes binlake can never see: the source stops with a one-line
:class:`BinlogGapError` that names what is missing and says how to go on (fetch the file, or take a snapshot).
The same holds for a file that lands after later changes were applied (out of order, or grown after them), and
for one sequence number under two names (a file landed twice, or renamed).

A file that lands cut short (a copy still in progress) is not a gap but not whole either: :func:`unfinished` tells
the ingest to take its complete transactions and wait there (``binlake.lake.ingest``), so nothing after it is
loaded before the rest of it is.
"""

from __future__ import annotations

import hashlib
import os
from itertools import pairwise
from typing import Iterable, Optional

from binlake.binlog import constants as C
from binlake.binlog.errors import BinlogError
from binlake.binlog.scan import ScanStats, scan_events
from binlake.lake.errors import BinlogGapError
from binlake.pipeline.identity import HASH_CHUNK, file_sequence

NEXT_STEP = (
    "fetch it if the server still has it (binlake fetch), otherwise take a snapshot of the source's "
    "tables (binlake snapshot) and load from there"
)


def check_sequence(source: str, names: Iterable[str], seam_file: Optional[str] = None) -> None:
    """Raise when the sequence numbers of ``names`` (files ingested or landed) skip one. A gap that ends at or
    before ``seam_file`` (the binlog position of the newest snapshot) is no gap: the snapshot holds it."""
    seqs: dict[int, str] = {}
    for name in sorted(set(names)):
        other = seqs.setdefault(file_sequence(name), name)
        if other != name:
            raise BinlogGapError(
                f"source {source}: {other} and {name} have the same sequence number (a file landed "
                f"twice under two names, renamed, or binlogs of two servers in one folder), so "
                f"their order is unknown; keep the server's own name and move the other one out "
                f"of the landing folder"
            )
    by_seq = sorted(seqs.items())
    seam = file_sequence(seam_file) if seam_file else None
    for (a, first), (b, second) in pairwise(by_seq):
        if b == a + 1 or (seam is not None and b <= seam):
            continue
        stem = first.rsplit(".", 1)[0]
        width = len(first.rsplit(".", 1)[1])
        missing = f"{stem}.{a + 1:0{width}d}" + (f" to {stem}.{b - 1:0{width}d}" if b - a > 2 else "")
        raise BinlogGapError(
            f"source {source}: binlog {missing} is missing between {first} and {second} (purged "
            f"from the server or never fetched), so changes there can not be applied; {NEXT_STEP}"
        )
    if seam is not None and by_seq and by_seq[0][0] > seam:
        raise BinlogGapError(
            f"source {source}: the snapshot's position is in {seam_file}, but the binlogs start at "
            f"{by_seq[0][1]}: the changes between them are missing; {NEXT_STEP}"
        )


def check_grown(source: str, path: str, identities: Iterable[tuple[int, str]], end_pos: int) -> None:
    """A landed file with the name of an ingested one must hold the ingested bytes unchanged (binlogs only grow):
    its size reaches ``end_pos`` and its prefix hashes like the largest ingested version."""
    name = os.path.basename(path)
    size = os.path.getsize(path)
    if size < end_pos:
        raise BinlogGapError(
            f"source {source}: {name} is {size} bytes but was ingested up to position {end_pos}: "
            f"the file was replaced (a server reset?), so position {end_pos} does not exist in it; "
            f"{NEXT_STEP}"
        )
    known, sha = max(identities)
    h = hashlib.sha256()
    with open(path, "rb") as f:
        left = known
        while left and (chunk := f.read(min(HASH_CHUNK, left))):
            h.update(chunk)
            left -= len(chunk)
    if h.hexdigest() != sha and _hash_in_use(path, known) != sha:
        raise BinlogGapError(
            f"source {source}: the first {known} bytes of {name} differ from the version already "
            f"ingested: the file was replaced (a server reset?); {NEXT_STEP}"
        )


FDE_FLAGS_AT = C.BIN_LOG_HEADER_SIZE + 17  # the FORMAT_DESCRIPTION event's header flags (2 bytes)
_END_MARKERS = (C.ROTATE_EVENT, C.STOP_EVENT)
_TAIL = C.LOG_EVENT_HEADER_LEN + 8 + 512 + C.BINLOG_CHECKSUM_LEN  # the largest ROTATE event (FN_REFLEN name)


def _hash_in_use(path: str, known: int) -> str:
    """SHA-256 of the first ``known`` bytes of ``path`` as they were while the server still wrote the file: the
    server clears LOG_EVENT_BINLOG_IN_USE_F in the FORMAT_DESCRIPTION header when it closes a binlog
    (``MYSQL_BIN_LOG::close``), the only byte of a binlog ever rewritten, so a file copied while written and again
    once closed has grown, not been replaced."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        head = bytearray(f.read(min(known, FDE_FLAGS_AT + 1)))
        if len(head) > FDE_FLAGS_AT:
            head[FDE_FLAGS_AT] |= C.LOG_EVENT_BINLOG_IN_USE_F
        h.update(head)
        left = known - len(head)
        while left and (chunk := f.read(min(HASH_CHUNK, left))):
            h.update(chunk)
            left -= len(chunk)
    return h.hexdigest()


def _ends_with_marker(path: str, size: int) -> bool:
    """Whether the file's last event is a ROTATE or STOP event: an event header at ``p`` of that type whose size
    reaches exactly the end of the file and whose ``log_pos`` (the next event's offset) is the file's size."""
    with open(path, "rb") as f:
        f.seek(max(C.BIN_LOG_HEADER_SIZE, size - _TAIL))
        tail = f.read()
    base = size - len(tail)
    for i in range(len(tail) - C.LOG_EVENT_HEADER_LEN, -1, -1):
        if tail[i + 4] in _END_MARKERS:
            event_size = int.from_bytes(tail[i + 9 : i + 13], "little")
            log_pos = int.from_bytes(tail[i + 13 : i + 17], "little")
            if event_size == size - (base + i) and log_pos == size:
                return True
    return False


def _in_use(path: str) -> bool:
    """LOG_EVENT_BINLOG_IN_USE_F of the file's FORMAT_DESCRIPTION event: set while the server writes the file,
    cleared when it closes it; still set in the last file of a server that crashed."""
    with open(path, "rb") as f:
        f.seek(FDE_FLAGS_AT)
        flags = f.read(1)
    return not flags or bool(flags[0] & C.LOG_EVENT_BINLOG_IN_USE_F)


def unfinished(path: str, start: int = C.BIN_LOG_HEADER_SIZE) -> Optional[str]:
    """Why the binlog at ``path``, with a later file of its source beside it, is not whole yet (``"ends mid-event
    at offset N"``), or None when it is. ``start``: an event offset from which the file is read (what is before
    it is known to frame).

    A binlog the server has finished ends with its ROTATE or STOP event (``MYSQL_BIN_LOG::new_file_impl``,
    ``MYSQL_BIN_LOG::close``), or, when the server stopped without closing it (a crash: its FORMAT_DESCRIPTION
    still says in use), with its last whole event. A file that ends inside an event, or a closed file that ends
    without its end marker, was cut short: a copy still in progress, a shipper that died. Bytes that do not frame
    as events are no cut: the decoder reports them where they are (an ``error`` row, or the source stops)."""
    size = os.path.getsize(path)
    if _ends_with_marker(path, size):
        return None
    stats = ScanStats()
    try:
        for _ in scan_events(path, start=start, commit_timestamps=False, stats=stats):
            pass
    except BinlogError:
        return None
    if stats.incomplete is not None:
        return f"ends mid-event at offset {stats.incomplete.offset}"
    if not _in_use(path):
        return f"ends at offset {size} without the ROTATE or STOP event a closed binlog ends with"
    return None


def check_in_order(
    source: str, path: str, end_pos: Optional[int], applied_file: Optional[str], seam_file: Optional[str]
) -> None:
    """Raise when ``path`` (new: ``end_pos`` None; grown: ingested up to ``end_pos``) brings changes that come
    before what the source has applied (its checkpoint is in ``applied_file``, a later file): they could never be
    applied in order. Changes before the newest snapshot's ``seam_file`` are held by the snapshot; a grown tail
    of only ROTATE/STOP events brings no change."""
    name = os.path.basename(path)
    if applied_file is None or file_sequence(applied_file) <= file_sequence(name):
        return
    if seam_file is not None and file_sequence(name) < file_sequence(seam_file):
        return
    if end_pos is not None:
        try:
            if all(e.type_code in _END_MARKERS for e in scan_events(path, start=end_pos, commit_timestamps=False)):
                return
        except BinlogError:
            pass
        what = f"{name} grew (from offset {end_pos})"
    else:
        what = f"{name} landed"
    raise BinlogGapError(
        f"source {source}: {what} after changes of the later {applied_file} were applied: its "
        f"changes come before them and can not be applied in order; take a snapshot of the "
        f"source's tables (binlake snapshot) and load from there"
    )


def check_newest_ingested(
    source: str, done: Iterable[str], landed: Iterable[str], closed: frozenset[str], seam_file: Optional[str] = None
) -> None:
    """Raise when the newest file the source ingested is gone from the landing folder while a later file not
    ingested yet is there: it may have been ingested while it was still being written (a tail the ingest never
    saw), and with the file gone :func:`unfinished` can not tell. A file ``binlake fetch`` closed (``closed``) or
    one the newest snapshot's position is past (``seam_file``) is whole as far as the source is concerned."""
    newest = max(done, key=file_sequence, default=None)
    names = set(landed)
    if newest is None or newest in names or newest in closed:
        return
    if seam_file is not None and file_sequence(seam_file) > file_sequence(newest):
        return
    # (a later name is never an ingested one: check_sequence has refused two names of one sequence number)
    later = sorted((n for n in names if file_sequence(n) > file_sequence(newest)), key=file_sequence)
    if later:
        raise BinlogGapError(
            f"source {source}: {newest}, the newest binlog it ingested, is no longer in the landing folder and "
            f"{later[0]} follows it: whether {newest} was whole when it was ingested (it may have been still "
            f"written to) can not be checked, so the changes after it are not loaded; land {newest} again "
            f"(binlake fetch, or copy it from the server): what it has beyond the ingested position is loaded "
            f"and the source goes on; if the server no longer has it, take a snapshot (binlake snapshot)"
        )


def fetched_closed(folder: str) -> frozenset[str]:
    """The files ``binlake fetch`` saw the server move past (its manifest's ``closed`` list): whole as the server
    had them, end marker or not (after a crash the server starts a new file without one). An unreadable manifest
    vouches for nothing."""
    from binlake.errors import BinlakeError
    from binlake.transport.landing import MANIFEST_NAME, Manifest

    path = os.path.join(folder, MANIFEST_NAME)
    try:
        with open(path, encoding="utf-8") as f:
            return frozenset(Manifest.from_json(f.read(), path).closed)  # type: ignore[arg-type]
    except (OSError, UnicodeDecodeError, BinlakeError):
        return frozenset()
