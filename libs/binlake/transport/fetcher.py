"""Fetch a server's binlogs into the landing folder, resumably (what ``mysqlbinlog -R --raw --stop-never`` does,
plus fsync, a manifest, checks and reconnects).

The stream from COM_BINLOG_DUMP is the files' events in order, with a few events that are not in any file
(``Binlog_sender::run`` / MariaDB ``mysql_binlog_send``):

* a fake ROTATE (log_pos 0, ARTIFICIAL flag) before each file: names the file the next events belong to;
* the file's FORMAT_DESCRIPTION_EVENT: the file's own bytes when the dump starts at offset 4 (with
  LOG_EVENT_BINLOG_IN_USE_F cleared, as the server leaves it when it closes the file), but a copy with
  ``log_pos`` = 0 when the dump starts later in the file: that copy is not written again;
* heartbeats while the binlog is idle; other artificial events with ``log_pos`` 0.

Everything else is appended only if its ``log_pos`` equals the file size after it and (CRC32 files) its checksum
is right, so a stream that is out of step with the landing file stops before writing anything wrong.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from binlake.binlog.constants import (
    BIN_LOG_HEADER_SIZE,
    BINLOG_CHECKSUM_ALG_CRC32,
    FORMAT_DESCRIPTION_EVENT,
    ROTATE_EVENT,
    START_ENCRYPTION_EVENT,
    STOP_EVENT,
)
from binlake.transport.client import BinlogFile, ReplicationClient
from binlake.transport.errors import (
    BinlogPurgedError,
    ConnectionLostError,
    LandingError,
    ProtocolError,
    ServerConfigError,
)
from binlake.transport.landing import LandingFolder
from binlake.transport.protocol import (
    StreamEnd,
    StreamEvent,
    checksum_alg_of_fde,
    event_crc_ok,
    is_fake_rotate,
    is_heartbeat,
    parse_rotate,
)
from binlake.transport.uri import MySQLSource

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class FetchOptions:
    """How a fetch runs. ``until_now``: stop at the end of the binlog as it is when reached (non-blocking dump);
    otherwise run until stopped."""

    until_now: bool = True
    start_file: str | None = None  # first file for an empty landing folder (default: the server's oldest)
    require_row_format: bool = True
    sync_interval_s: float = 1.0  # fsync + manifest at most this long after an event
    sync_bytes: int = 8 << 20  # ... or after this many bytes
    max_retries: int | None = 5  # consecutive failed (re)connects before giving up; None = forever
    backoff_initial_s: float = 0.5
    backoff_max_s: float = 30.0


@dataclass(slots=True)
class FetchResult:
    """What one ``fetch`` call did."""

    landing: Path
    events: int = 0
    bytes: int = 0
    closed_files: list[str] = field(default_factory=list)
    current_file: str | None = None
    position: int = 0
    reconnects: int = 0
    cut_bytes: int = 0


class StopFetch(Exception):
    """Raised (e.g. from a SIGTERM handler) to make a running fetch sync and return."""


def fetch(
    source: MySQLSource,
    landing_root: str | Path,
    options: FetchOptions = FetchOptions(),
    *,
    client_factory: Callable[[MySQLSource], ReplicationClient] = ReplicationClient,
    sleep: Callable[[float], None] = time.sleep,
) -> FetchResult:
    """Copy the source's binlogs into ``landing_root/<source.name>/``; see the module docstring."""
    with LandingFolder(landing_root, source.name, source.display()) as landing:
        check = landing.open()
        result = FetchResult(landing.path)
        if check is not None and check.cut:
            log.warning("%s: cut %d bytes after the last whole event (%s)", landing.file_path, check.cut, check.reason)
            result.cut_bytes = check.cut
        failures = 0
        try:
            while True:
                events_before = result.events
                try:
                    if _session(source, landing, options, result, client_factory):
                        break
                except ConnectionLostError as exc:
                    landing.sync()
                    failures = 1 if result.events > events_before else failures + 1
                    if options.max_retries is not None and failures > options.max_retries:
                        raise ConnectionLostError(f"{exc} (gave up after {failures} attempts)") from None
                    delay = min(options.backoff_max_s, options.backoff_initial_s * 2 ** (failures - 1))
                    delay *= random.uniform(0.8, 1.2)
                    log.warning("%s; reconnecting in %.1f s (attempt %d)", exc, delay, failures)
                    result.reconnects += 1
                    sleep(delay)
        except StopFetch:
            log.info("%s: stopped", source.display())
        finally:
            landing.sync()
            result.current_file = landing.current_file
            result.position = landing.manifest.position
        return result


def _session(
    source: MySQLSource,
    landing: LandingFolder,
    options: FetchOptions,
    result: FetchResult,
    client_factory: Callable[[MySQLSource], ReplicationClient],
) -> bool:
    """One connection: sign on, dump from where the landing folder ends, write; True when the stream ended."""
    with client_factory(source) as client:
        info = client.connect()
        client.check_server(require_row_format=options.require_row_format)
        landing.set_server_id(info.server_id)
        files = client.list_binlogs()
        start_file, start_pos = _resume_point(landing, files, options, source)
        if landing.current_file != start_file:
            landing.start_file(start_file)
        log.info("%s: dumping from %s:%d", source.display(), start_file, start_pos)
        client.start_dump(start_file, start_pos, non_block=options.until_now)
        writer = _StreamWriter(landing, result, options)
        while True:
            item = client.read()
            if isinstance(item, StreamEnd):
                if options.until_now:
                    return True
                # a blocking dump only ends when the server ends it (shutdown, KILL): come back when it is up
                raise ConnectionLostError(f"{source.display()}: the server ended the binlog dump (shutdown or KILL)")
            written_to = writer.handle(item)
            if item.needs_ack:  # ACK only what is durable: that is the point of semi-sync
                writer.sync()
                if written_to is not None:
                    client.ack(written_to, item.header.log_pos)
                else:  # never asked for a made-up event by a real server; answer so it does not wait
                    client.ack(landing.current_file or "", max(landing.size, 4))
            writer.maybe_sync()


def _resume_point(
    landing: LandingFolder, files: list[BinlogFile], options: FetchOptions, source: MySQLSource
) -> tuple[str, int]:
    """Where the dump starts: after the last whole event of the current landing file, or at a first file."""
    names = [f.name for f in files]
    if not files:
        raise ServerConfigError(f"{source.display()}: SHOW BINARY LOGS lists no files; is log_bin on?")
    current = landing.current_file
    if current is None:
        first = options.start_file or names[0]
        if first not in names:
            raise BinlogPurgedError(
                f"{source.display()}: --start-file {first} is not on the server; it has {names[0]} .. {names[-1]}"
            )
        return first, BIN_LOG_HEADER_SIZE
    if current not in names:
        raise BinlogPurgedError(
            f"{source.display()}: the landing folder {landing.path} continues at {current}:{max(landing.size, 4)},"
            f" but the server no longer has {current} (it has {names[0]} .. {names[-1]}); the events in between are"
            " lost to this copy. Keep binlogs longer on the server (binlog_expire_logs_seconds / expire_logs_days),"
            " and to start a new copy move this landing folder away"
        )
    server_size = files[names.index(current)].size
    position = max(landing.size, BIN_LOG_HEADER_SIZE)
    if position > server_size:
        raise LandingError(
            f"{landing.file_path} has {position} bytes but the server's {current} has only"
            f" {server_size}: the landing folder belongs to another server or the server's binlogs"
            " were reset (RESET MASTER); use a new landing folder"
        )
    return current, position


class _StreamWriter:
    """Applies stream items to the landing folder (the rules of the module docstring)."""

    def __init__(self, landing: LandingFolder, result: FetchResult, options: FetchOptions) -> None:
        self.landing = landing
        self.result = result
        self.options = options
        self.unsynced = 0
        self.last_sync = time.monotonic()

    def handle(self, item: StreamEvent) -> str | None:
        """Write the event if it belongs to the file; returns the file it went to (None: not written)."""
        header = item.header
        landing = self.landing
        if is_heartbeat(header):  # the binlog is idle: a good moment to make everything durable
            if self.unsynced:
                self.sync()
            return None
        if is_fake_rotate(header):
            rotate = parse_rotate(item.raw, self._stream_has_crc(item.raw))
            if rotate.next_file != landing.current_file:
                if landing.current_file is not None and landing.size > 0:
                    self._close_current()
                landing.start_file(rotate.next_file)
            expected = max(landing.size, BIN_LOG_HEADER_SIZE)
            if rotate.position != expected:
                raise ProtocolError(
                    f"the server resumes {rotate.next_file} at {rotate.position}, but the landing"
                    f" file continues at {expected}"
                )
            return None
        if header.log_pos == 0:  # the FORMAT_DESCRIPTION copy of a resumed dump, other artificial events
            return None
        if header.type_code == START_ENCRYPTION_EVENT:
            raise ServerConfigError(
                "the server encrypts its binlogs (encrypt_binlog=ON): the stream is decrypted,"
                " so it can not be stored as the server's files; fetch is not possible"
            )
        size_before = max(landing.size, BIN_LOG_HEADER_SIZE)
        expected_end = size_before + header.event_length
        if header.log_pos != expected_end:
            raise ProtocolError(
                f"{landing.file_path}: event type {header.type_code} ends at log_pos {header.log_pos}, but the"
                f" landing file is at {size_before} (expected {expected_end}); stream and file are out of step"
            )
        if header.type_code == FORMAT_DESCRIPTION_EVENT and size_before != BIN_LOG_HEADER_SIZE:
            raise ProtocolError(f"{landing.file_path}: FORMAT_DESCRIPTION_EVENT at {size_before}, expected at 4")
        if header.type_code == FORMAT_DESCRIPTION_EVENT:  # it says how the rest of its file is checksummed
            landing.checksum_alg = checksum_alg_of_fde(item.raw)
        alg = landing.checksum_alg
        if alg == BINLOG_CHECKSUM_ALG_CRC32 and not event_crc_ok(item.raw):
            raise ProtocolError(
                f"{landing.file_path}: event at {size_before} (type {header.type_code}) failed"
                " its CRC32 check; nothing written"
            )
        written_to = landing.current_file
        landing.append(item.raw, expected_end)
        self.result.events += 1
        self.result.bytes += len(item.raw)
        self.unsynced += len(item.raw)
        if header.type_code == ROTATE_EVENT:
            rotate = parse_rotate(item.raw, alg == BINLOG_CHECKSUM_ALG_CRC32)
            self._close_current()
            landing.start_file(rotate.next_file)
        elif header.type_code == STOP_EVENT:
            self.sync()
        return written_to

    @staticmethod
    def _stream_has_crc(raw: bytes) -> bool:
        """Whether a made-up event carries a CRC32: the server adds one with the algorithm of the file it is
        sending (or the negotiated one before any file); a valid CRC32 in the last 4 bytes says which."""
        return len(raw) >= 23 and event_crc_ok(raw)

    def _close_current(self) -> None:
        self.landing.mark_closed()
        if self.landing.current_file is not None:
            self.result.closed_files.append(self.landing.current_file)
        self.unsynced = 0
        self.last_sync = time.monotonic()

    def sync(self) -> None:
        self.landing.sync()
        self.unsynced = 0
        self.last_sync = time.monotonic()

    def maybe_sync(self) -> None:
        if self.unsynced and (
            self.unsynced >= self.options.sync_bytes
            or time.monotonic() - self.last_sync >= self.options.sync_interval_s
        ):
            self.sync()
