"""File identity and the total order of changes of one source.

A landing file is identified by (source, name, size, SHA-256 of its bytes): ingesting the same identity twice is
a no-op; a file that grew (the server was still writing it) has a new identity and is ingested from where the
previous ingest of that name stopped. Changes are ordered by (file sequence, position, row index), packed into
one 63-bit integer, ``_binlake_seq``, so Delta MERGE predicates compare one column.

Only regular files are landing files: a symbolic link is never followed (it may point at any file of the
machine, whose bytes would land in bronze and in ``meta/quarantine``), wherever it points, dangling or not; it is
refused with its reason (:func:`landing_listing`), and so is anything else that is not a regular file.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import urllib.parse
from concurrent.futures import Future
from dataclasses import dataclass
from typing import BinaryIO, Callable

from binlake.binlog.api import register_transport
from binlake.pipeline.errors import LandingFileError, OrderingKeyError

_SEQUENCE = re.compile(r"\.(\d+)$")

# _binlake_seq = file_sequence << FILE_SHIFT | position << ROW_BITS | row
ROW_BITS = 12  # rows 0..4095 of one event keep their own slot; more share the last one
POS_BITS = 32  # positions below 4 GiB (max_binlog_size is at most 1 GiB)
FILE_SHIFT = POS_BITS + ROW_BITS
MAX_FILE_SEQUENCE = (1 << (63 - FILE_SHIFT)) - 1
HASH_CHUNK = 1 << 20


def file_sequence(name: str) -> int:
    """The numeric suffix of a binlog file name (``binlog.000042`` -> 42), as MySQL's index orders files."""
    m = _SEQUENCE.search(os.path.basename(name))
    if m is None:
        raise OrderingKeyError(
            f"{name}: a binlog file name ends with a numeric suffix (e.g. binlog.000042); "
            "rename the file or move it out of the landing folder"
        )
    return int(m.group(1))


def ordering_key(file_seq: int, pos: int, row: int) -> int:
    """``_binlake_seq`` of a change. The row index saturates at 4095: rows of one event (or of one compressed
    transaction, whose inner rows share its position) beyond it share a slot. That is safe because batches never
    split an event, and inside a batch the fold orders by the exact (file, pos, row) and compares seqs only
    against silver's state from earlier batches."""
    if not 0 <= file_seq <= MAX_FILE_SEQUENCE or not 0 <= pos < (1 << POS_BITS):
        raise OrderingKeyError(
            f"ordering key out of range: file sequence {file_seq} (max {MAX_FILE_SEQUENCE}), "
            f"position {pos} (max {(1 << POS_BITS) - 1})"
        )
    return file_seq << FILE_SHIFT | pos << ROW_BITS | min(row, (1 << ROW_BITS) - 1)


def split_ordering_key(seq: int) -> tuple[int, int, int]:
    return seq >> FILE_SHIFT, (seq >> ROW_BITS) & ((1 << POS_BITS) - 1), seq & ((1 << ROW_BITS) - 1)


@dataclass(frozen=True, slots=True)
class FileIdentity:
    source: str
    name: str  # base name, e.g. binlog.000042 (``member/binlog.000042`` in a cluster)
    size: int
    sha256: str
    stream_seq: int | None = None  # a cluster member's file: its place in the source's stream (lake.members)

    @property
    def sequence(self) -> int:
        return file_sequence(self.name) if self.stream_seq is None else self.stream_seq


LANDING_SCHEME = "landing"  # open_binlog(landing_uri(path)): a landing file read as open_landing opens it


def open_landing(path: str | os.PathLike) -> BinaryIO:
    """A landing file opened for reading, never through a symbolic link (``O_NOFOLLOW``): the executors read what
    the plan identified, or stop with :class:`LandingFileError` (a file swapped for a link to a secret since the
    plan is not read, nor quarantined)."""
    try:
        return open(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb")
    except OSError as exc:
        raise LandingFileError(
            f"{os.fspath(path)}: can not be read as the regular file the ingest planned ({exc.strerror}); it was "
            f"replaced, removed or linked since: nothing of this ingest is written; {LINK_REFUSED} and run again"
        ) from None


def landing_uri(path: str | os.PathLike) -> str:
    """``landing://<path>``: :func:`binlake.binlog.open_binlog` reads it through :func:`open_landing`."""
    return f"{LANDING_SCHEME}://" + urllib.parse.quote(os.fspath(path))


def _open_landing_uri(uri: str) -> tuple[str, BinaryIO]:
    path = urllib.parse.unquote(uri[len(LANDING_SCHEME) + 3 :])
    return path, open_landing(path)


register_transport(LANDING_SCHEME, _open_landing_uri)


_IDENTIFIED: dict[tuple, FileIdentity] = {}  # stat of an unchanged file -> its identity, for this process
_AHEAD: dict[tuple[str, str], "Future[FileIdentity]"] = {}  # (source, name) -> its hashing started by hash_ahead


def _unchanged_key(st: os.stat_result) -> tuple:
    """What tells a file's bytes have not changed: the same inode, size, modification and change times (the
    change time moves on every write and can not be set back)."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def identify(source: str, path: str | os.PathLike) -> FileIdentity:
    """Hash a landing file (streamed; memory bounded); a symbolic link is not opened (ELOOP). A file hashed
    before by this process and unchanged since (its inode, size and times) is not read again (a run hashes its
    new files ahead, :func:`hash_ahead`, then its ingest identifies them)."""
    ahead = _AHEAD.pop((source, os.path.basename(os.fspath(path))), None)
    if ahead is not None:
        ahead.exception()  # wait for it; a failure is met again below, in this caller's words
    return _identify(source, path)


def _identify(source: str, path: str | os.PathLike) -> FileIdentity:
    name = os.path.basename(os.fspath(path))
    with open_landing(path) as f:
        before = _unchanged_key(os.fstat(f.fileno()))
        known = _IDENTIFIED.get((source, name, before))
        if known is not None:
            return known
        h = hashlib.sha256()
        size = 0
        while chunk := f.read(HASH_CHUNK):
            h.update(chunk)
            size += len(chunk)
        ident = FileIdentity(source, name, size, h.hexdigest())
        if _unchanged_key(os.fstat(f.fileno())) == before and size == before[2]:
            _IDENTIFIED[(source, name, before)] = ident
    return ident


def hash_ahead(source: str, paths: list[str], then: Callable[[str], object] = lambda path: None) -> None:
    """Start hashing ``paths`` in a background thread, each followed by ``then(path)`` (the ingest's header scan,
    which keeps its result): a run reads its new files while its JVM starts. :func:`identify` waits for a file's
    turn, then finds its hash."""
    pending = []
    for path in paths:
        key = (source, os.path.basename(path))
        if key not in _AHEAD:
            _AHEAD[key] = future = Future[FileIdentity]()
            pending.append((path, future))

    def run() -> None:
        for path, future in pending:
            try:
                ident = _identify(source, path)
                then(path)
                future.set_result(ident)
            except Exception as exc:  # noqa: BLE001 - the waiting identify() meets it again itself
                future.set_exception(exc)

    threading.Thread(target=run, name="binlake-hash-ahead", daemon=True).start()


def unchanged_since(path: str | os.PathLike) -> tuple:
    """:func:`_unchanged_key` of the file at ``path`` (not through a link)."""
    return _unchanged_key(os.stat(path, follow_symlinks=False))


LINK_REFUSED = (
    "binlake reads only regular files in a landing folder and never follows a symbolic link; copy "
    "the binlog in (or hard-link it) instead"
)


def landing_listing(folder: str | os.PathLike) -> tuple[list[str], list[str]]:
    """The binlog files of one source's landing folder, in sequence order (index and partial files skipped), and
    the entries with a binlog's name that are refused, as ``"<name>: <reason>"`` (symbolic links, dangling or
    not, folders, pipes), sorted."""
    files, refused = [], []
    for entry in os.scandir(folder):
        if not _SEQUENCE.search(entry.name):
            continue
        if entry.is_symlink():
            target = os.readlink(entry.path)
            what = "" if os.path.exists(entry.path) else " (dangling: nothing is there)"
            refused.append(f"{entry.name}: a symbolic link to {target}{what}; {LINK_REFUSED}")
        elif entry.is_file(follow_symlinks=False):
            files.append(entry.path)
        else:
            refused.append(
                f"{entry.name}: not a regular file (a folder, a pipe or a device); move it out of the landing folder"
            )
    return sorted(files, key=file_sequence), sorted(refused)


def landing_files(folder: str | os.PathLike) -> list[str]:
    """Binlog files of one source's landing folder, in sequence order (see :func:`landing_listing`)."""
    return landing_listing(folder)[0]
