"""The landing folder of one source: the server's binlog files, byte for byte, and a small manifest.

Layout of ``<landing>/<source name>/``::

    mysql-bin.000001          exact copies of the server's files (same names), only ever appended to
    mysql-bin.000002          ... the last one may still be growing
    _binlake_fetch.json       the manifest: current file, fsynced position, closed files, server identity
    .binlake-fetch.lock       held (flock) by the one fetcher allowed to write here

A file is *closed* when the server moved past it (it ends with the server's ROTATE or the server restarted); the
manifest's ``closed`` list names closed files, so a pipeline can read those without caring about the growing one.

Crash safety: events are appended whole (one ``write`` each) and fsynced before the manifest's position moves
(the manifest is replaced atomically: temp file, fsync, rename, fsync of the folder). On start, the bytes after the
manifest's position are checked event by event (length, the header's ``log_pos`` = end offset, CRC32) and anything
after the last complete event is cut off, the one place anything but an append happens; a kill in the middle of a
write therefore never leaves a partial event behind, and the stream resumes exactly after the last whole event.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from binlake.binlog.constants import (
    BIN_LOG_HEADER_SIZE,
    BINLOG_CHECKSUM_ALG_CRC32,
    BINLOG_CHECKSUM_ALG_OFF,
    BINLOG_MAGIC,
    FORMAT_DESCRIPTION_EVENT,
    LOG_EVENT_HEADER_LEN,
)
from binlake.binlog.errors import CorruptEventError, NotABinlogError
from binlake.binlog.scan import ScanStats, scan_events
from binlake.transport.errors import LandingError, TransportError
from binlake.transport.protocol import binlog_name_problem, checksum_alg_of_fde, event_crc_ok

MANIFEST_NAME = "_binlake_fetch.json"
LOCK_NAME = ".binlake-fetch.lock"
MANIFEST_VERSION = 1
EVENT_LENGTH = struct.Struct("<I")


@dataclass(slots=True)
class Manifest:
    """What ``_binlake_fetch.json`` holds (mutable; only :class:`LandingFolder` changes it)."""

    source: str
    server_id: int | None = None
    current_file: str | None = None
    position: int = 0  # fsynced end of current_file (0 = not created yet)
    closed: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        return (
            json.dumps(
                {
                    "version": MANIFEST_VERSION,
                    "source": self.source,
                    "server_id": self.server_id,
                    "current_file": self.current_file,
                    "position": self.position,
                    "closed": self.closed,
                },
                indent=1,
            )
            + "\n"
        )

    @classmethod
    def from_json(cls, text: str, path: Path) -> "Manifest":
        try:
            data = json.loads(text)
            if data.get("version") != MANIFEST_VERSION:
                raise LandingError(f"{path}: manifest version {data.get('version')!r}, expected {MANIFEST_VERSION}")
            current = data.get("current_file")
            if current is not None and (not isinstance(current, str) or binlog_name_problem(current) is not None):
                raise LandingError(
                    f"{path}: current_file {str(current)[:80]!r} is not a plain file name; fix or remove the manifest"
                )
            return cls(
                source=str(data["source"]),
                server_id=data.get("server_id"),
                current_file=data.get("current_file"),
                position=int(data.get("position", 0)),
                closed=[str(name) for name in data.get("closed", [])],
            )
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            what = (
                f"the member {exc} is missing"
                if isinstance(exc, KeyError)
                else "JSON nested too deeply"
                if isinstance(exc, RecursionError)
                else f"expected the manifest's JSON object, found {str(exc)[:120]}"
            )
            raise LandingError(
                f"{path}: unreadable manifest ({what}); fix or remove it (the binlog files next to"
                " it are kept, the next fetch re-checks them)"
            ) from None


@dataclass(frozen=True, slots=True)
class TailCheck:
    """Result of checking a file's unconfirmed tail after a restart."""

    end: int  # offset just after the last whole, valid event
    cut: int  # bytes removed after it
    checksum_alg: int  # the file's checksum algorithm (from its FORMAT_DESCRIPTION_EVENT)
    reason: str = ""


class LandingFolder:
    """The single writer of one source's landing folder."""

    def __init__(self, root: str | os.PathLike[str], name: str, source_display: str) -> None:
        self.path = Path(root) / name
        self.manifest_path = self.path / MANIFEST_NAME
        self._lock: IO[bytes] | None = None
        self._fd: int | None = None
        self.source_display = source_display
        self.manifest = Manifest(source=source_display)
        self.checksum_alg = BINLOG_CHECKSUM_ALG_OFF
        self._size = 0

    # -- lifecycle ---------------------------------------------------------------------------------------------
    def open(self) -> TailCheck | None:
        """Lock the folder, read the manifest and check the current file's tail; returns what the check did."""
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LandingError(f"cannot create the landing folder {self.path}: {exc.strerror}") from None
        lock = os.fdopen(_open_own(self.path / LOCK_NAME, os.O_WRONLY | os.O_CREAT | os.O_APPEND), "ab")
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            lock.close()
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                raise LandingError(
                    f"another binlake fetch is writing {self.path}; stop it first (only one fetcher per source)"
                ) from None
            raise
        self._lock = lock
        if self.manifest_path.exists() or self.manifest_path.is_symlink():
            with os.fdopen(_open_own(self.manifest_path, os.O_RDONLY), encoding="utf-8") as f:
                self.manifest = Manifest.from_json(f.read(), self.manifest_path)
        if self.manifest.current_file is None:
            return None
        return self._recover(self.manifest.current_file)

    def close(self) -> None:
        self._close_fd()
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def __enter__(self) -> "LandingFolder":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- appending -----------------------------------------------------------------------------------------------
    @property
    def current_file(self) -> str | None:
        return self.manifest.current_file

    @property
    def file_path(self) -> Path:
        if self.manifest.current_file is None:
            raise TransportError("no current file")
        return self.path / self.manifest.current_file

    def start_file(self, name: str) -> None:
        """Make ``name`` the current file; created (with the 4-byte magic) on the first event. ``name`` comes
        from the server (ROTATE, SHOW BINARY LOGS): it must be a plain file name inside the landing folder."""
        reason = binlog_name_problem(name)
        if reason is None and name in (MANIFEST_NAME, LOCK_NAME, MANIFEST_NAME + ".tmp"):
            reason = "the name of one of the landing folder's own files"
        if reason is None and (self.path / name).is_symlink():
            reason = "a symbolic link is there: binlake never writes through one"
        elif reason is None and (self.path / name).exists() and not (self.path / name).is_file():
            reason = "something that is not a file (a folder) is there"
        if reason is not None:
            raise LandingError(
                f"{self.path}: refusing the server's binlog name {name[:80]!r} as a landing file ({reason})"
            )
        self._close_fd()
        self.manifest.current_file = name
        self.manifest.position = 0
        self.checksum_alg = BINLOG_CHECKSUM_ALG_OFF
        self.sync()

    def append(self, event: bytes, position_after: int) -> None:
        """Append one whole event; ``position_after`` is the file size afterwards (checked by the caller)."""
        fd = self._fd if self._fd is not None else self._open_for_append()
        written = os.write(fd, event)
        if written != len(event):  # a regular file only writes short on a full disk or a quota
            raise LandingError(
                f"{self.file_path}: wrote {written} of {len(event)} bytes (disk full?); free space"
                " and restart: the partial event is cut off on restart"
            )
        self._size = position_after

    @property
    def size(self) -> int:
        """Bytes in the current file (magic + events), 0 before it exists."""
        return self._size if self._fd is not None else self.manifest.position

    def sync(self) -> None:
        """fsync the current file, then move the manifest's position to what is now durable."""
        if self._fd is not None:
            os.fsync(self._fd)
            self.manifest.position = self._size
        self._write_manifest()

    def mark_closed(self) -> None:
        """The server moved past the current file: fsync it and list it as closed."""
        name = self.manifest.current_file
        self.sync()
        self._close_fd()
        if name is not None and name not in self.manifest.closed:
            self.manifest.closed.append(name)
            self._write_manifest()

    def set_server_id(self, server_id: int) -> None:
        if self.manifest.server_id is not None and self.manifest.server_id != server_id:
            raise LandingError(
                f"{self.path} holds binlogs of the server with server_id={self.manifest.server_id},"
                f" but this source now answers with server_id={server_id}; use another --landing"
                " folder or source name for a different server"
            )
        if self.manifest.server_id is None:
            self.manifest.server_id = server_id
            self._write_manifest()

    # -- internals -------------------------------------------------------------------------------------------
    def _open_for_append(self) -> int:
        path = self.file_path
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o644)
        except OSError as exc:  # a link or a folder put there since start_file checked the name
            raise LandingError(
                f"{path}: can not append the server's events there ({exc.strerror}); move it away and fetch again"
            ) from None
        size = os.fstat(fd).st_size
        if size == 0:
            os.write(fd, BINLOG_MAGIC)
            size = BIN_LOG_HEADER_SIZE
        self._fd = fd
        self._size = size
        return fd

    def _close_fd(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _write_manifest(self) -> None:
        tmp = self.manifest_path.with_name(MANIFEST_NAME + ".tmp")
        with os.fdopen(_open_own(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "w", encoding="utf-8") as out:
            out.write(self.manifest.to_json())
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self.manifest_path)
        dir_fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def _recover(self, name: str) -> TailCheck:
        """Check the current file from the manifest's (durable) position to its end; cut a partial tail."""
        path = self.path / name
        if not path.exists():
            if self.manifest.position > BIN_LOG_HEADER_SIZE:
                raise LandingError(
                    f"{path} is missing although the manifest says {self.manifest.position} bytes"
                    " of it were stored; restore it or start a fresh landing folder"
                )
            self.manifest.position = 0
            return TailCheck(0, 0, BINLOG_CHECKSUM_ALG_OFF)
        size = path.stat().st_size
        if size < self.manifest.position:
            raise LandingError(
                f"{path}: {size} bytes but the manifest says {self.manifest.position} were stored and"
                " fsynced; the file was changed outside binlake: restore it or use a new landing folder"
            )
        check = check_tail(path, self.manifest.position)
        if check.cut:
            with os.fdopen(_open_own(path, os.O_RDWR), "r+b") as f:
                f.truncate(check.end)
                os.fsync(f.fileno())
        self.checksum_alg = check.checksum_alg
        self.manifest.position = check.end
        self._write_manifest()
        return check


def _open_own(path: Path, flags: int) -> int:
    """Open one of the landing folder's own files, never through a symbolic link planted in its place (the lock,
    the manifest and its temp file, the file being cut back to its last whole event)."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        why = (
            "a symbolic link is there: binlake never writes or reads through one"
            if exc.errno == errno.ELOOP
            else exc.strerror
        )
        raise LandingError(f"{path}: can not open this landing file ({why}); move it away and fetch again") from None


def check_tail(path: Path, trusted: int) -> TailCheck:
    """Walk the events of ``path`` from ``trusted`` (a known event boundary, or 0) to its end with the binlog
    event scanner (:func:`binlake.binlog.scan.scan_events`).

    Stops at the first event that is incomplete, has a length under 19 bytes, a ``log_pos`` other than its end
    offset, or a wrong CRC32; returns that boundary and how many bytes lie after it.
    """
    size = path.stat().st_size
    alg = BINLOG_CHECKSUM_ALG_OFF
    stats = ScanStats()
    reason = ""
    pos = max(trusted, BIN_LOG_HEADER_SIZE)  # the last whole-event boundary seen
    with open(path, "rb") as f:
        if trusted > BIN_LOG_HEADER_SIZE:  # the trusted part is not re-checked, but its FDE says the checksum
            fde = _read_event(f, BIN_LOG_HEADER_SIZE)
            try:
                alg = checksum_alg_of_fde(fde)
            except TransportError as exc:
                raise LandingError(f"{path}: the FORMAT_DESCRIPTION_EVENT at 4 is unreadable ({exc})") from None
            f.seek(0)
        try:
            for ev in scan_events(
                f,
                start=trusted if trusted > BIN_LOG_HEADER_SIZE else None,
                file=str(path),
                max_event_size=1 << 32,
                with_bytes=True,
                commit_timestamps=False,
                stats=stats,
            ):
                if ev.log_pos != ev.pos + ev.event_size:
                    reason = (
                        f"event at {ev.pos}: length {ev.event_size}, log_pos {ev.log_pos} (expected "
                        f"{ev.pos + ev.event_size})"
                    )
                    break
                assert ev.raw is not None
                if ev.type_code == FORMAT_DESCRIPTION_EVENT and ev.pos == BIN_LOG_HEADER_SIZE:
                    try:
                        alg = checksum_alg_of_fde(ev.raw)
                    except TransportError as exc:
                        reason = f"FORMAT_DESCRIPTION_EVENT at {ev.pos}: {exc}"
                        break
                if alg == BINLOG_CHECKSUM_ALG_CRC32 and not event_crc_ok(ev.raw):
                    reason = f"event at {ev.pos}: CRC32 mismatch"
                    break
                pos = ev.pos + ev.event_size
            else:
                pos = stats.end
                if stats.incomplete is not None:
                    reason = "partial magic" if stats.end == 0 else stats.incomplete.message
        except NotABinlogError:
            raise LandingError(
                f"{path} does not start with the binlog magic fe 62 69 6e; it is not a binlog file"
            ) from None
        except CorruptEventError as exc:  # an event length under 19 bytes
            pos = stats.end
            reason = exc.message if exc.offset is None else f"event at {exc.offset}: {exc.message} ({exc.found})"
    return TailCheck(pos, size - pos, alg, reason)


def _read_event(f: IO[bytes], pos: int) -> bytes:
    f.seek(pos)
    header = f.read(LOG_EVENT_HEADER_LEN)
    if len(header) < LOG_EVENT_HEADER_LEN:
        return header
    (length,) = EVENT_LENGTH.unpack_from(header, 9)
    return header + f.read(max(0, length - LOG_EVENT_HEADER_LEN))
