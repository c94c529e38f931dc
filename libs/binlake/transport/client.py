"""A replica connection: PyMySQL does the handshake and authentication, then raw replication packets on its socket.

The sign-on follows what a real replica's I/O thread does (mysql-server ``sql/rpl_replica.cc``
``get_master_version_and_clock`` / ``register_slave_on_master`` / ``request_dump``; MariaDB ``sql/slave.cc``):

1. read ``@@version``, ``@@server_id``, ``@@global.binlog_format``, ``@@global.log_bin``, ``@@global.binlog_checksum``;
2. ``SET @master_binlog_checksum = @@global.binlog_checksum`` (and MySQL 8's ``@source_binlog_checksum``) so that
   events arrive exactly as written, CRC32 included; MariaDB also ``SET @mariadb_slave_capability = 4`` so that
   its own event types are not rewritten for an "old" replica;
3. ``SET @master_heartbeat_period`` (nanoseconds) so an idle stream still proves the connection alive;
4. COM_REGISTER_SLAVE, then COM_BINLOG_DUMP (file + position) or COM_BINLOG_DUMP_GTID / MariaDB's
   ``@slave_connect_state`` GTID mode.

PyMySQL's private ``_execute_command`` / ``_read_packet`` / ``_read_bytes`` / ``_write_bytes`` / ``_sock`` carry the
raw packets; the pinned PyMySQL version in requirements.txt is the one tested.
"""

from __future__ import annotations

import logging
import struct
from dataclasses import dataclass
from typing import Any, Callable

import pymysql
import pymysql.err

from binlake.transport import protocol
from binlake.transport.auth import auth_plugin_map
from binlake.transport.errors import (
    AuthenticationError,
    BinlogPurgedError,
    ConnectionLostError,
    PrivilegeError,
    ProtocolError,
    ServerConfigError,
    ServerTimeoutError,
    TransportError,
)
from binlake.transport.gtid import encode_gtid_set, validate_mariadb_gtid_pos
from binlake.transport.protocol import ServerError, StreamEnd, StreamEvent
from binlake.transport.uri import MySQLSource

log = logging.getLogger(__name__)

# server error codes (include/mysqld_error.h, errmsg.h)
ER_DBACCESS_DENIED_ERROR = 1044
ER_ACCESS_DENIED_ERROR = 1045
ER_SPECIFIC_ACCESS_DENIED_ERROR = 1227
ER_MASTER_FATAL_ERROR_READING_BINLOG = 1236
ER_UNKNOWN_SYSTEM_VARIABLE = 1193
CR_CONNECTION_ERROR = 2002
CR_CONN_HOST_ERROR = 2003
CR_SERVER_GONE_ERROR = 2006
CR_SERVER_LOST = 2013
CR_SSL_CONNECTION_ERROR = 2026
ER_SERVER_SHUTDOWN = 1053
ER_QUERY_INTERRUPTED = 1317
ER_CONNECTION_KILLED = 1927  # MariaDB
LOST_CODES = frozenset(
    {
        CR_CONNECTION_ERROR,
        CR_CONN_HOST_ERROR,
        CR_SERVER_GONE_ERROR,
        CR_SERVER_LOST,
        2055,
        ER_SERVER_SHUTDOWN,
        ER_QUERY_INTERRUPTED,
        ER_CONNECTION_KILLED,
    }
)
GRANT_HINT = "GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO {user}"


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """What the sign-on learnt about the server."""

    version: str
    is_mariadb: bool
    server_id: int
    binlog_format: str
    log_bin: bool
    binlog_checksum: str


@dataclass(frozen=True, slots=True)
class BinlogFile:
    """One row of SHOW BINARY LOGS."""

    name: str
    size: int


Connector = Callable[..., Any]


class ReplicationClient:
    """One replica session against one server. Not thread-safe; one dump per connection."""

    def __init__(self, source: MySQLSource, *, connector: Connector = pymysql.connect) -> None:
        self.source = source
        self._connector = connector
        self._conn: Any = None
        self.info: ServerInfo | None = None
        self.semi_sync = False  # the stream carries semi-sync headers (known after its first packet)
        self._streaming = False  # the dump has started: read timeouts are missed heartbeats
        self._stream_timeout: float | None = None
        self._detect_semi_sync = False

    # -- sign-on ---------------------------------------------------------------------------------------------
    def connect(self) -> ServerInfo:
        """Connect, authenticate and read the server's replication settings."""
        src = self.source
        self._streaming = False
        try:
            self._conn = self._connector(
                host=src.host,
                port=src.port,
                user=src.user,
                password=src.password() or "",
                connect_timeout=src.connect_timeout_s,
                autocommit=True,
                charset="utf8mb4",
                ssl=src.pymysql_ssl(),
                read_timeout=src.read_timeout_s,
                auth_plugin_map=auth_plugin_map(src),
            )
        except pymysql.err.MySQLError as exc:
            raise self._translate(exc, "connecting") from None
        except (struct.error, IndexError, KeyError, ValueError, TypeError, UnicodeDecodeError) as exc:
            # PyMySQL parses the greeting (HandshakeV10) and the auth exchange without checking lengths
            raise ProtocolError(
                f"{src.display()}: connecting: expected a MySQL greeting (HandshakeV10) and "
                f"authentication exchange, found packets PyMySQL can not parse ({exc}); is this a "
                "MySQL or MariaDB server?"
            ) from None
        row = self._query_one("SELECT @@version, @@server_id, @@global.binlog_format, @@global.log_bin")
        version = _text(row[0])
        is_mariadb = "mariadb" in version.lower()
        checksum = self._variable("binlog_checksum") or "NONE"
        self.info = ServerInfo(
            version=version,
            is_mariadb=is_mariadb,
            server_id=int(row[1]),
            binlog_format=_text(row[2]).upper(),
            log_bin=str(_text(row[3])) in ("1", "ON"),
            binlog_checksum=checksum.upper(),
        )
        return self.info

    def check_server(self, *, require_row_format: bool = True) -> None:
        """Refuse servers binlake can not fetch from or decode, with what to change on the server."""
        info = self._info()
        where = self.source.display()
        if not info.log_bin:
            raise ServerConfigError(
                f"{where}: the binary log is off (log_bin=0); start the server with"
                " --log-bin --binlog-format=ROW --server-id=N"
            )
        if require_row_format and info.binlog_format != "ROW":
            raise ServerConfigError(
                f"{where}: binlog_format is {info.binlog_format}, binlake decodes row events only; run"
                " SET PERSIST binlog_format='ROW' (MariaDB: SET GLOBAL binlog_format='ROW' and add it to my.cnf),"
                " or pass --allow-statement-format to fetch the files anyway"
            )
        if info.server_id == 0:
            raise ServerConfigError(f"{where}: the server's server_id is 0, which refuses replicas; set server_id")
        if info.server_id == self.source.server_id:
            raise ServerConfigError(
                f"{where}: server_id={self.source.server_id} in the URI is the server's own id;"
                " choose an id no server or replica of this topology uses"
            )

    def list_binlogs(self) -> list[BinlogFile]:
        """SHOW BINARY LOGS (needs REPLICATION CLIENT; MariaDB: BINLOG MONITOR)."""
        try:
            with self._conn.cursor() as cur:
                cur.execute("SHOW BINARY LOGS")
                rows = cur.fetchall()
        except pymysql.err.MySQLError as exc:
            raise self._translate(exc, "SHOW BINARY LOGS", privilege="REPLICATION CLIENT") from None
        out = []
        for r in rows:
            name = _text(r[0]) if r and r[0] is not None else ""
            reason = protocol.binlog_name_problem(name)
            try:
                size = int(r[1])
            except (IndexError, TypeError, ValueError):
                size = -1
            if reason is not None or size < 0:
                raise ProtocolError(
                    f"{self.source.display()}: SHOW BINARY LOGS lists an unusable file "
                    f"({reason or f'expected a size, found {r[1:2]!r}'}); refusing to write it"
                )
            out.append(BinlogFile(name, size))
        return out

    # -- the dump --------------------------------------------------------------------------------------------
    def start_dump(self, file: str, position: int, *, non_block: bool = False) -> None:
        """Register as a replica and ask for the stream from ``file`` at ``position`` (COM_BINLOG_DUMP)."""
        flags = protocol.BINLOG_DUMP_NON_BLOCK if non_block else 0
        if self._info().is_mariadb:
            flags |= protocol.BINLOG_SEND_ANNOTATE_ROWS_EVENT
        self._prepare_session(non_block=non_block)
        self._command(
            protocol.encode_binlog_dump(file, position, self.source.server_id, flags),
            reply=False,
            doing=f"COM_BINLOG_DUMP {file}:{position}",
        )

    def start_dump_gtid(self, gtid_set: str, *, non_block: bool = False) -> None:
        """Stream everything the server has that is not in ``gtid_set`` (the replica's executed GTIDs).

        MySQL: COM_BINLOG_DUMP_GTID with BINLOG_THROUGH_GTID (needs gtid_mode=ON on the server).
        MariaDB: ``SET @slave_connect_state = '<gtid position>'`` then COM_BINLOG_DUMP with an empty file name.
        """
        info = self._info()
        flags = protocol.BINLOG_DUMP_NON_BLOCK if non_block else 0
        if info.is_mariadb:
            state = validate_mariadb_gtid_pos(gtid_set)
            self._prepare_session(
                [
                    f"SET @slave_connect_state = '{state}'",
                    "SET @slave_gtid_strict_mode = 1",
                    "SET @slave_gtid_ignore_duplicates = 0",
                ],
                non_block=non_block,
            )
            packet = protocol.encode_binlog_dump(
                "", 4, self.source.server_id, flags | protocol.BINLOG_SEND_ANNOTATE_ROWS_EVENT
            )
        else:
            self._prepare_session(non_block=non_block)
            packet = protocol.encode_binlog_dump_gtid(
                self.source.server_id, encode_gtid_set(gtid_set), flags=flags | protocol.BINLOG_THROUGH_GTID
            )
        self._command(packet, reply=False, doing="GTID dump")

    def _prepare_session(self, extra: list[str] | None = None, non_block: bool = False) -> None:
        info = self._info()
        checksum = info.binlog_checksum if info.binlog_checksum.isalnum() else "NONE"
        period_ns = int(self.source.heartbeat_s * 1_000_000_000)
        statements = [f"SET @master_binlog_checksum = '{checksum}'", f"SET @master_heartbeat_period = {period_ns}"]
        if info.is_mariadb:
            statements.append(f"SET @mariadb_slave_capability = {protocol.MARIA_SLAVE_CAPABILITY_MINE}")
        else:  # MySQL 8.0.26+ names them source_*; older servers read the master_* ones
            statements += [f"SET @source_binlog_checksum = '{checksum}'", f"SET @source_heartbeat_period = {period_ns}"]
        self.semi_sync = False
        self._detect_semi_sync = self.source.semi_sync
        if self.source.semi_sync:
            statements.append("SET @rpl_semi_sync_slave = 1")
            if not info.is_mariadb:
                statements.append("SET @rpl_semi_sync_replica = 1")
        for sql in statements + (extra or []):
            self._execute(sql)
        self._command(
            protocol.encode_register_slave(self.source.server_id),
            reply=True,
            doing="COM_REGISTER_SLAVE",
            privilege="REPLICATION SLAVE",
        )
        # three missed heartbeats mean the connection is dead even if TCP has not noticed yet; without heartbeats
        # a dump that ends at the end of the binlog (non-blocking) is still bounded by read_timeout
        timeout = (
            self.source.heartbeat_s * 3 + 5
            if self.source.heartbeat_s > 0
            else (self.source.read_timeout_s if non_block else None)
        )
        self._conn._sock.settimeout(timeout)
        self._conn._read_timeout = self._conn._current_timeout = timeout
        self._streaming = True
        self._stream_timeout = timeout

    def read(self) -> StreamEvent | StreamEnd:
        """The next event of the stream (heartbeats and fake events included), or the end in non-blocking mode."""
        try:
            payload = self._read_stream_packet()
        except pymysql.err.MySQLError as exc:
            raise self._translate(exc, "reading the binlog stream", privilege="REPLICATION SLAVE") from None
        if self._detect_semi_sync and payload[:1] == b"\x00":
            # The first packet is the fake ROTATE, whose timestamp is 0: 00 EF means the server adds semi-sync
            # headers (MySQL: the plugin is loaded; MariaDB: always when asked), 00 00 means it does not.
            self._detect_semi_sync = False
            self.semi_sync = payload[1:2] == bytes([protocol.K_PACKET_MAGIC_NUM])
            if not self.semi_sync:
                log.warning(
                    "%s: semi_sync=1 asked but the server sends no semi-sync headers (no semi-sync"
                    " plugin?); streaming without ACKs",
                    self.source.display(),
                )
        item = protocol.parse_stream_packet(payload, self.semi_sync)
        if isinstance(item, ServerError):
            raise self._server_error(item.code, item.message, "reading the binlog stream", "REPLICATION SLAVE")
        return item

    def _read_stream_packet(self) -> bytes:
        """One logical packet (16 MiB pieces joined). Sequence ids are not checked here: MariaDB restarts them
        after each semi-sync ACK (its ACK reader shares the dump thread's NET), MySQL does not."""
        conn = self._conn
        if self._streaming and conn._current_timeout != self._stream_timeout:
            # PyMySQL's writes (the dump command, semi-sync ACKs) leave the socket at its write timeout
            conn._sock.settimeout(self._stream_timeout)
            conn._current_timeout = self._stream_timeout
        read = conn._read_bytes
        limit = self.source.max_packet
        pieces: list[bytes] = []
        total = 0
        expected = limit  # after the first piece: what the event header declares (never more)
        while True:
            header = read(4)
            if len(header) < 4:
                raise ConnectionLostError(f"{self.source.display()}: the connection ended inside a packet header")
            length = int.from_bytes(header[:3], "little")
            total += length
            if total > min(limit, expected):
                bound = (
                    f"the {expected} bytes its event header declares"
                    if expected < limit
                    else f"max_packet={limit} (the largest event a replica accepts, like max_allowed_packet)"
                )
                raise ProtocolError(
                    f"{self.source.display()}: the server sends a packet of more than "
                    f"{min(limit, expected)} bytes ({len(pieces) + 1} pieces of up to 16 MiB so far),"
                    f" above {bound}"
                )
            pieces.append(read(length))
            if length < protocol.MAX_PACKET_LEN:
                return pieces[0] if len(pieces) == 1 else b"".join(pieces)
            if len(pieces) == 1:
                semi = self.semi_sync or (self._detect_semi_sync and pieces[0][1:2] == b"\xef")
                try:
                    expected = protocol.continued_packet_size(pieces[0], 3 if semi else 1, limit)
                except ProtocolError as exc:
                    raise ProtocolError(f"{self.source.display()}: {exc}") from None

    def ack(self, file: str, position: int) -> None:
        """Semi-sync ACK: tell the server ``file`` is safely stored up to ``position``."""
        payload = protocol.encode_semi_sync_ack(file, position)
        try:
            self._conn._write_bytes(len(payload).to_bytes(3, "little") + b"\x00" + payload)
        except pymysql.err.MySQLError as exc:
            raise self._translate(exc, "sending a semi-sync ACK") from None

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except (pymysql.err.MySQLError, OSError):
                conn._force_close()  # a dump connection can not send COM_QUIT cleanly mid-stream

    def __enter__(self) -> "ReplicationClient":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- helpers ---------------------------------------------------------------------------------------------
    def _info(self) -> ServerInfo:
        if self.info is None or self._conn is None:
            raise TransportError("not connected: call connect() first")
        return self.info

    def _execute(self, sql: str) -> None:
        try:
            with self._conn.cursor() as cur:
                cur.execute(sql)
        except pymysql.err.MySQLError as exc:
            raise self._translate(exc, sql) from None

    def _query_one(self, sql: str) -> tuple[Any, ...]:
        try:
            with self._conn.cursor() as cur:
                cur.execute(sql)
                row = cur.fetchone()
        except pymysql.err.MySQLError as exc:
            raise self._translate(exc, sql) from None
        if row is None:
            raise ProtocolError(f"{self.source.display()}: {sql} returned no row")
        return tuple(row)

    def _variable(self, name: str) -> str | None:
        """A global variable's value, or None when the server does not have it."""
        try:
            with self._conn.cursor() as cur:
                cur.execute(f"SELECT @@global.{name}")
                row = cur.fetchone()
        except pymysql.err.OperationalError as exc:
            if exc.args and exc.args[0] == ER_UNKNOWN_SYSTEM_VARIABLE:
                return None
            raise self._translate(exc, f"SELECT @@global.{name}") from None
        except pymysql.err.MySQLError as exc:
            raise self._translate(exc, f"SELECT @@global.{name}") from None
        return None if row is None or row[0] is None else _text(row[0])

    def _command(self, packet: bytes, *, reply: bool, doing: str, privilege: str = "REPLICATION SLAVE") -> None:
        try:
            self._conn._execute_command(packet[0], packet[1:])
            if reply:
                self._conn._read_packet()
        except pymysql.err.MySQLError as exc:
            raise self._translate(exc, doing, privilege=privilege) from None

    def _translate(self, exc: pymysql.err.MySQLError, doing: str, privilege: str = "") -> TransportError:
        code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else 0
        message = str(exc.args[1]) if len(exc.args) > 1 else str(exc)
        if isinstance(exc, pymysql.err.InternalError) and not code:
            return ConnectionLostError(f"{self.source.display()}: {doing}: {message}; reconnect")
        return self._server_error(code, message, doing, privilege)

    def _server_error(self, code: int, message: str, doing: str, privilege: str) -> TransportError:
        where = f"{self.source.display()}: {doing}"
        user = f"'{self.source.user}'@'<your host>'"
        if code == CR_SSL_CONNECTION_ERROR:
            return ServerConfigError(
                f"{where}: TLS failed ({message}); enable TLS on the server, fix ssl_ca, or drop ssl=1 from the URI"
            )
        if code == CR_SERVER_LOST and "timed out" in message:
            if self._streaming:
                return ConnectionLostError(
                    f"{where}: no event or heartbeat for {self._stream_timeout:g} s (three "
                    "heartbeat periods plus 5 s, or read_timeout); the connection is dead"
                )
            return ServerTimeoutError(
                f"{where}: the server sent nothing for {self.source.read_timeout_s:g} s "
                "(read_timeout); is this a MySQL or MariaDB server, and is it overloaded?"
            )
        if code in LOST_CODES or code == 0:
            return ConnectionLostError(f"{where}: connection lost or refused ({message})")
        if code == ER_ACCESS_DENIED_ERROR and self.info is not None and privilege:
            # signed on already: MariaDB answers COM_REGISTER_SLAVE without the privilege with 1045
            return PrivilegeError(
                f"{where}: the user lacks {privilege} ({code}: {message}); run {GRANT_HINT.format(user=user)}"
            )
        if code == ER_ACCESS_DENIED_ERROR:
            pw = (
                f"the file {self.source.password_file}"
                if self.source.password_file
                else f"the environment variable {self.source.password_env}"
            )
            return AuthenticationError(
                f"{where}: the server refused the login ({code}: {message}); check the user"
                f" in the URI and the password in {pw}"
            )
        if code in (ER_SPECIFIC_ACCESS_DENIED_ERROR, ER_DBACCESS_DENIED_ERROR):
            return PrivilegeError(
                f"{where}: the user lacks {privilege or 'a privilege'} ({code}: {message});"
                f" run {GRANT_HINT.format(user=user)}"
            )
        if code == ER_MASTER_FATAL_ERROR_READING_BINLOG:
            lowered = message.lower()
            if "could not find first log file" in lowered or "purged" in lowered:
                return BinlogPurgedError(f"{where}: the server no longer has the requested binlog ({message})")
            if "checksum" in lowered:
                return ProtocolError(f"{where}: checksum negotiation failed ({message})")
            return TransportError(f"{where}: the server stopped the dump ({code}: {message})")
        return TransportError(f"{where}: server error {code}: {message}")


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, (bytes, bytearray)) else str(value)
