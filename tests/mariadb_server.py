"""A private, throw-away MariaDB server for tests: its own datadir, socket and loopback port, binary log on.

The server is Debian's ``mariadbd`` (installed by ``scripts/install_mariadb.sh``), started with
``--no-defaults`` so nothing on the machine (``/etc/mysql``) leaks in, and stopped by its own PID.

    with MariaDBServer(tmp_path, BinlogSettings(row_image="MINIMAL")) as server:
        server.execute("CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY)")
        files = server.binlog_files()

Tests use the ``mariadb_server`` fixture (a fresh server per test; import it into the test module with
``from tests.mariadb_server import mariadb_server``, and choose options with
``@pytest.mark.parametrize("mariadb_server", [BinlogSettings(row_image="MINIMAL")], indirect=True)``) or build
servers themselves after :func:`require_mariadb`. When the server binaries are missing, tests skip with the
reason, except in CI (``CI=true``), where a missing server is a failure.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import pytest

SERVER_BINARIES = ("mariadbd", "mariadb-install-db", "mariadb", "mariadb-binlog")
SBIN_DIRS = ("/usr/sbin", "/usr/local/sbin", "/sbin")
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0
BINLOG_BASENAME = "binlog"


@dataclass(frozen=True, slots=True)
class BinlogSettings:
    """The server's binary log options (``--binlog-row-image``, ``--binlog-row-metadata``, ...)."""

    row_image: str = "FULL"  # FULL | MINIMAL | NOBLOB
    row_metadata: str = "FULL"  # FULL | MINIMAL | NO_LOG
    server_id: int = 1
    checksum: str = "CRC32"  # CRC32 | NONE
    max_binlog_size: int = 1 << 30  # bytes; small values make the server rotate files
    extra_args: tuple[str, ...] = ()
    log_slave_updates: bool = False  # a replica that logs what it replicates (a member that can be promoted)


def find_binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for folder in SBIN_DIRS:
        candidate = Path(folder, name)
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def missing_binaries() -> list[str]:
    return [name for name in SERVER_BINARIES if find_binary(name) is None]


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def require_mariadb() -> None:
    """Skip (outside CI) or fail (in CI) the calling test when the MariaDB server binaries are absent."""
    missing = missing_binaries()
    if not missing:
        return
    reason = f"MariaDB not installed (missing {', '.join(missing)}); run: bash scripts/install_mariadb.sh"
    if in_ci():
        pytest.fail(f"CI=true and {reason}", pytrace=False)
    pytest.skip(reason)


def free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class MariaDBServerError(RuntimeError):
    """The private server did not install, start, answer or stop as expected (the message has its log tail)."""


class MariaDBServer:
    """One private ``mariadbd`` under ``basedir`` (datadir, socket, binlogs, error log all live there)."""

    def __init__(self, basedir: Path, settings: BinlogSettings = BinlogSettings()) -> None:
        self.basedir = Path(basedir)
        self.settings = settings
        self.datadir = self.basedir / "data"
        self.binlog_dir = self.basedir / "binlog"
        self.socket = self.basedir / "mysqld.sock"
        self.error_log = self.basedir / "mysqld.err"
        self.tmpdir = self.basedir / "tmp"  # its own: never shares temp files with other servers in /tmp
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    # -- lifecycle ---------------------------------------------------------------------------------------------
    def start(self) -> "MariaDBServer":
        if self.process is not None:
            raise MariaDBServerError("server already started")
        self.basedir.mkdir(parents=True, exist_ok=True)
        self.binlog_dir.mkdir(exist_ok=True)
        self.tmpdir.mkdir(exist_ok=True)
        user_args = ["--user=root"] if os.geteuid() == 0 else []
        install = subprocess.run(
            [
                find_binary("mariadb-install-db") or "mariadb-install-db",
                "--no-defaults",
                f"--datadir={self.datadir}",
                f"--tmpdir={self.tmpdir}",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
                *user_args,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if install.returncode != 0:
            raise MariaDBServerError(f"mariadb-install-db failed ({install.returncode}): {install.stderr[-2000:]}")
        for _attempt in range(5):
            self.port = free_loopback_port()
            self.process = subprocess.Popen(
                self._server_args(user_args),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            if self._wait_ready():
                return self
            if "Address already in use" not in self._log_tail():
                break
            self.stop()  # a race for the port with another process: try another one
        tail = self._log_tail()
        self.stop()
        raise MariaDBServerError(f"mariadbd did not become ready in {START_TIMEOUT_S:.0f} s; log tail:\n{tail}")

    def _server_args(self, user_args: Sequence[str]) -> list[str]:
        s = self.settings
        return [
            find_binary("mariadbd") or "mariadbd",
            "--no-defaults",
            *user_args,
            f"--datadir={self.datadir}",
            f"--tmpdir={self.tmpdir}",
            f"--socket={self.socket}",
            f"--pid-file={self.basedir / 'mysqld.pid'}",
            f"--log-error={self.error_log}",
            "--bind-address=127.0.0.1",
            f"--port={self.port}",
            f"--server-id={s.server_id}",
            f"--log-bin={self.binlog_dir / BINLOG_BASENAME}",
            "--binlog-format=ROW",
            f"--binlog-row-image={s.row_image}",
            f"--binlog-row-metadata={s.row_metadata}",
            f"--binlog-checksum={s.checksum}",
            f"--max-binlog-size={s.max_binlog_size}",
            "--character-set-server=utf8mb4",
            "--collation-server=utf8mb4_general_ci",
            "--default-time-zone=+00:00",
            "--skip-name-resolve",
            "--innodb-buffer-pool-size=64M",
            "--innodb-log-file-size=48M",
            "--innodb-flush-log-at-trx-commit=0",
            "--sync-binlog=0",
            "--log-slave-updates" if s.log_slave_updates else "--skip-log-slave-updates",
            *s.extra_args,
        ]

    def _wait_ready(self) -> bool:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                return False
            probe = subprocess.run(self._client_args() + ["-e", "SELECT 1"], capture_output=True, check=False)
            if probe.returncode == 0:
                return True
            time.sleep(0.1)
        return False

    def stop(self) -> None:
        """Shut the server down by its own PID (SIGTERM, then SIGKILL after a timeout)."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=STOP_TIMEOUT_S)

    def __enter__(self) -> "MariaDBServer":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.error_log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no error log)"

    # -- clients -----------------------------------------------------------------------------------------------
    def _client_args(self) -> list[str]:
        return [
            find_binary("mariadb") or "mariadb",
            "--no-defaults",
            f"--socket={self.socket}",
            "--user=root",
            "--default-character-set=utf8mb4",
            "--batch",
            "--skip-column-names",
        ]

    def execute(self, sql: str, database: str | None = None) -> str:
        """Run SQL statements (separated by ``;``) with the ``mariadb`` client; returns its stdout."""
        args = self._client_args() + ([database] if database else [])
        result = subprocess.run(args, input=sql.encode("utf-8"), capture_output=True, check=False)
        if result.returncode != 0:
            raise MariaDBServerError(f"mariadb client failed: {result.stderr.decode(errors='replace').strip()}")
        return result.stdout.decode("utf-8", errors="replace")

    def connect(self, database: str | None = None, raw: bool = True):  # -> pymysql.connections.Connection
        """A PyMySQL connection over the socket (session time zone UTC).

        ``raw`` (default) turns PyMySQL's converters off: numbers and temporal values come back as the server's
        own text, character columns as str, binary columns as bytes, NULL as None.
        """
        import pymysql  # imported here so that the harness itself has no hard dependency

        kwargs = {"conv": {}} if raw else {}
        return pymysql.connect(
            unix_socket=str(self.socket),
            user="root",
            database=database,
            charset="utf8mb4",
            autocommit=True,
            init_command="SET time_zone='+00:00'",
            **kwargs,
        )

    # -- replication -------------------------------------------------------------------------------------------
    def replicate_from(self, primary: "MariaDBServer", user: str = "repl", password: str = "repl-pw") -> None:
        """Make this server a GTID replica of ``primary`` over 127.0.0.1 (the user is created on the primary)."""
        primary.execute(
            f"CREATE USER IF NOT EXISTS '{user}'@'127.0.0.1' IDENTIFIED BY '{password}';"
            f" GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '{user}'@'127.0.0.1'"
        )
        self.execute(
            f"CHANGE MASTER TO master_host='127.0.0.1', master_port={primary.port}, master_user='{user}',"
            f" master_password='{password}', master_use_gtid=slave_pos; START SLAVE"
        )

    def gtid_binlog_pos(self) -> str:
        return self.execute("SELECT @@gtid_binlog_pos").strip()

    def wait_for_gtid(self, position: str, timeout_s: int = 60) -> None:
        """Block until this replica has applied ``position`` (MASTER_GTID_WAIT), or raise."""
        got = self.execute(f"SELECT MASTER_GTID_WAIT('{position}', {timeout_s})").strip()
        if got != "0":
            status = self.execute("SHOW SLAVE STATUS\\G")
            raise MariaDBServerError(f"replica did not reach {position} in {timeout_s} s:\n{status[-2000:]}")

    def promote(self) -> None:
        """Stop replicating and forget the primary (STOP SLAVE; RESET SLAVE ALL): this server is a primary now."""
        self.execute("STOP SLAVE; RESET SLAVE ALL")

    # -- binary logs -------------------------------------------------------------------------------------------
    def flush_logs(self) -> None:
        self.execute("FLUSH BINARY LOGS")

    def binlog_files(self) -> list[Path]:
        """The binary log files in order, as the server's index file lists them."""
        index = self.binlog_dir / f"{BINLOG_BASENAME}.index"
        names = [line.strip() for line in index.read_text().splitlines() if line.strip()]
        return [Path(name) if os.path.isabs(name) else self.datadir / name for name in names]

    def current_binlog(self) -> Path:
        return self.binlog_files()[-1]


@pytest.fixture
def mariadb_server(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[MariaDBServer]:
    """A fresh private server per test; parametrize indirectly with a :class:`BinlogSettings` to change options."""
    require_mariadb()
    settings = getattr(request, "param", None) or BinlogSettings()
    with MariaDBServer(tmp_path / "mariadb", settings) as server:
        yield server
