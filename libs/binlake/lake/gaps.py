"""Gap detection: a source's binlogs must continue from what the lake already holds.

MySQL numbers a server's binlog files one after the other (``binlog.000041`` rotates to ``binlog.000042``,
``MYSQL_BIN_LOG::open_binlog`` / ``find_next_log``), so the files a source has ingested and landed must form one
unbroken run of sequence numbers, and a file already ingested up to a position may only grow past it. Anything
else (a file purged from the server before it was fetched, a server reset that started the numbering again, a
file replaced by another) means changes binlake can never see: the source stops with a one-line
:class:`BinlogGapError` that names what is missing and says how to go on (fetch the file, or take a snapshot).
"""

from __future__ import annotations

import hashlib
import os
from typing import Iterable, Optional

from binlake.lake.errors import BinlogGapError
from binlake.pipeline.identity import HASH_CHUNK, file_sequence

NEXT_STEP = ("fetch it if the server still has it (binlake fetch), otherwise take a snapshot of the source's "
             "tables (binlake snapshot) and load from there")


def check_sequence(source: str, names: Iterable[str], seam_file: Optional[str] = None) -> None:
    """Raise when the sequence numbers of ``names`` (files ingested or landed) skip one. A gap that ends at or
    before ``seam_file`` (the binlog position of the newest snapshot) is no gap: the snapshot holds it."""
    by_seq = sorted({file_sequence(n): n for n in names}.items())
    seam = file_sequence(seam_file) if seam_file else None
    for (a, first), (b, second) in zip(by_seq, by_seq[1:]):
        if b == a + 1 or (seam is not None and b <= seam):
            continue
        stem = first.rsplit(".", 1)[0]
        width = len(first.rsplit(".", 1)[1])
        missing = f"{stem}.{a + 1:0{width}d}" + (f" to {stem}.{b - 1:0{width}d}" if b - a > 2 else "")
        raise BinlogGapError(f"source {source}: binlog {missing} is missing between {first} and {second} (purged "
                             f"from the server or never fetched), so changes there can not be applied; {NEXT_STEP}")
    if seam is not None and by_seq and by_seq[0][0] > seam:
        raise BinlogGapError(f"source {source}: the snapshot's position is in {seam_file}, but the binlogs start at "
                             f"{by_seq[0][1]}: the changes between them are missing; {NEXT_STEP}")


def check_grown(source: str, path: str, identities: Iterable[tuple[int, str]], end_pos: int) -> None:
    """A landed file with the name of an ingested one must hold the ingested bytes unchanged (binlogs only grow):
    its size reaches ``end_pos`` and its prefix hashes like the largest ingested version."""
    name = os.path.basename(path)
    size = os.path.getsize(path)
    if size < end_pos:
        raise BinlogGapError(f"source {source}: {name} is {size} bytes but was ingested up to position {end_pos}: "
                             f"the file was replaced (a server reset?), so position {end_pos} does not exist in it; "
                             f"{NEXT_STEP}")
    known, sha = max(identities)
    h = hashlib.sha256()
    with open(path, "rb") as f:
        left = known
        while left and (chunk := f.read(min(HASH_CHUNK, left))):
            h.update(chunk)
            left -= len(chunk)
    if h.hexdigest() != sha:
        raise BinlogGapError(f"source {source}: the first {known} bytes of {name} differ from the version already "
                             f"ingested: the file was replaced (a server reset?); {NEXT_STEP}")
