"""A scripted MySQL 8 source on a loopback port, for the protocol variants no real server here can show.

No MySQL 8 server package exists on these machines (apt, PyPI, npm), so this plays one from the protocol
specification: the HandshakeV10 / OK / result-set packets PyMySQL needs to sign on, and a binlog dump that
replays real MySQL 8 binlog files (fixtures) the way mysql-server's ``Binlog_sender`` sends them
(``sql/rpl_binlog_sender.cc``): a fake ROTATE (timestamp 0, log_pos 0, LOG_EVENT_ARTIFICIAL_F, CRC32) before
each file, the FORMAT_DESCRIPTION_EVENT with LOG_EVENT_BINLOG_IN_USE_F cleared (and log_pos/created zeroed, CRC
recomputed, when the dump starts past offset 4), the file's events unchanged, optional semi-sync headers
(0x00 0xEF flag), a heartbeat, and in non-blocking mode an EOF packet. It refuses a dump when the replica did not
announce ``@source_binlog_checksum`` / ``@master_binlog_checksum`` for a CRC32 binlog, as the real server does.

Everything the client sends (queries, COM_REGISTER_SLAVE, dump commands, semi-sync ACKs) is recorded.
"""

from __future__ import annotations

import socket
import struct
import threading
import zlib
from dataclasses import dataclass, field
from typing import Callable, Union

ARTIFICIAL_F = 0x20
IN_USE_F = 0x01
CAPABILITIES = 0x00000001 | 0x00000200 | 0x00002000 | 0x00008000 | 0x00080000  # LONG_PASSWORD, PROTOCOL_41,
# TRANSACTIONS, SECURE_CONNECTION, PLUGIN_AUTH
SERVER_STATUS_AUTOCOMMIT = 0x0002


def _lenenc(n: int) -> bytes:
    """A length-encoded integer (``net_store_length``)."""
    if n < 251:
        return bytes([n])
    if n < 1 << 16:
        return b"\xfc" + n.to_bytes(2, "little")
    if n < 1 << 24:
        return b"\xfd" + n.to_bytes(3, "little")
    return b"\xfe" + n.to_bytes(8, "little")


def crc_fix(event: bytearray) -> bytearray:
    """Recompute an event's trailing CRC32 (``Binlog_sender::calc_event_checksum``)."""
    struct.pack_into("<I", event, len(event) - 4, zlib.crc32(bytes(event[:-4])) & 0xFFFFFFFF)
    return event


def fake_rotate(name: str, position: int, server_id: int = 1, checksum: bool = True) -> bytes:
    body = struct.pack("<Q", position) + name.encode()
    length = 19 + len(body) + (4 if checksum else 0)
    event = bytearray(struct.pack("<IBIIIH", 0, 4, server_id, length, 0, ARTIFICIAL_F) + body + b"\0" * 4)
    if not checksum:
        return bytes(event[:-4])
    return bytes(crc_fix(event))


def heartbeat_v2(position: int, name: str) -> bytes:
    """A HEARTBEAT_LOG_EVENT_V2 (type 41) as MySQL 8 sends while idle; its body is never stored."""
    body = b"\x00" + bytes([len(name)]) + name.encode() + b"\x01\x08" + struct.pack("<Q", position)
    event = bytearray(struct.pack("<IBIIIH", 0, 41, 1, 19 + len(body) + 4, 0, 0) + body + b"\0" * 4)
    return bytes(crc_fix(event))


def split_events(data: bytes) -> list[tuple[int, bytes]]:
    """(offset, bytes) of each event after the magic, by the header's event_length."""
    out, pos = [], 4
    while pos < len(data):
        (length,) = struct.unpack_from("<I", data, pos + 9)
        out.append((pos, data[pos : pos + length]))
        pos += length
    return out


@dataclass(frozen=True)
class RowsEnd:
    """In a result's rows: end them there with an ERR packet (``code``, ``message``), or, with ``code`` None, by
    closing the connection."""

    code: int | None = None
    message: str = ""


@dataclass
class Script:
    """What the fake server holds and how it behaves."""

    files: list[tuple[str, bytes]]
    version: str = "8.4.0"
    server_id: int = 1
    binlog_format: str = "ROW"
    semi_sync: bool = False  # the source has semi-sync enabled
    drop_after_bytes: int | None = None  # first dump only: close the socket after this many stream bytes
    heartbeat_before_end: bool = True
    # hostile behaviours (issue #16)
    handshake_cut: int | None = None  # send only this many bytes of the HandshakeV10 payload
    silent: bool = False  # accept the connection and never send anything
    silent_stream: bool = False  # answer the sign-on, then send nothing after the dump command
    binlog_names: list[str] | None = None  # names SHOW BINARY LOGS lists instead of the files' own
    auth_plugin: str = "mysql_native_password"  # the plugin the greeting announces
    auth_switch: bytes | None = None  # AuthSwitchRequest body after 0xFE (plugin NUL data) to send
    received: list[bytes] = field(default_factory=list)  # every packet payload the client sent, in order
    # answers queries before the built-in ones: (column names, rows) a result set, "ok", (code, message) an error,
    # None: not scripted
    answer: Callable[[str], Union[tuple, str, None]] | None = None
    flood: bytes | None = None  # the dump sends this, then 16 MiB packet pieces of zeros forever
    log: list[tuple[str, bytes]] = field(default_factory=list)
    acks: list[tuple[str, int]] = field(default_factory=list)
    dumps: list[bytes] = field(default_factory=list)


class FakeMySQL8:
    """Serve ``script`` on 127.0.0.1:<port> (one thread per connection) until ``close()``."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self._stop = False
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop = True
        self.sock.close()

    def __enter__(self) -> "FakeMySQL8":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=_Session(self.script, conn).run, daemon=True).start()


class _Session:
    def __init__(self, script: Script, conn: socket.socket) -> None:
        self.s = script
        self.conn = conn
        self.seq = 0
        self.user_vars: dict[str, str] = {}

    # -- framing -----------------------------------------------------------------------------------------------
    def send(self, payload: bytes) -> None:
        """One logical packet: 16 MiB - 1 pieces while it is that long, then the rest (maybe empty)."""
        view = memoryview(payload)
        while True:
            piece, view = view[:0xFFFFFF], view[0xFFFFFF:]
            self.conn.sendall(len(piece).to_bytes(3, "little") + bytes([self.seq]))
            self.conn.sendall(piece)
            self.seq = (self.seq + 1) % 256
            if len(piece) < 0xFFFFFF:
                return

    def recv(self) -> bytes | None:
        head = self._exact(4)
        if head is None:
            return None
        self.seq = (head[3] + 1) % 256
        payload = self._exact(int.from_bytes(head[:3], "little"))
        if payload is not None:
            self.s.received.append(payload)
        return payload

    def _exact(self, n: int) -> bytes | None:
        buf = b""
        while len(buf) < n:
            chunk = self.conn.recv(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return buf

    def ok(self) -> None:
        self.send(b"\x00\x00\x00" + struct.pack("<HH", SERVER_STATUS_AUTOCOMMIT, 0))

    def err(self, code: int, message: str, state: str = "HY000") -> None:
        self.send(b"\xff" + struct.pack("<H", code) + b"#" + state.encode() + message.encode())

    def eof(self) -> None:
        self.send(b"\xfe" + struct.pack("<HH", 0, SERVER_STATUS_AUTOCOMMIT))

    def result(self, names: list[str], rows: list[list[str | bytes | None] | RowsEnd]) -> None:
        """A text result set; a column holding bytes is sent as binary (charset 63), the others as utf8 text."""
        self.send(_lenenc(len(names)))
        for i, name in enumerate(names):
            n = name.encode()
            charset = 63 if any(isinstance(r[i], bytes) for r in rows if isinstance(r, list) and i < len(r)) else 33
            self.send(
                b"\x03def"
                + b"\x00\x00\x00"
                + _lenenc(len(n))
                + n
                + _lenenc(len(n))
                + n
                + b"\x0c"
                + struct.pack("<HIBHB", charset, 255, 253, 0, 0)
                + b"\x00\x00"
            )
        self.eof()
        for row in rows:
            if isinstance(row, RowsEnd):
                if row.code is None:
                    self.conn.shutdown(socket.SHUT_RDWR)
                else:
                    self.err(row.code, row.message)
                return
            values = [v if isinstance(v, bytes) else None if v is None else str(v).encode() for v in row]
            self.send(b"".join(b"\xfb" if v is None else _lenenc(len(v)) + v for v in values))
        self.eof()

    # -- conversation ------------------------------------------------------------------------------------------
    def run(self) -> None:
        try:
            if self.s.silent:
                self._exact(1)  # wait for the client to give up
                return
            self._handshake()
            while True:
                packet = self.recv()
                if packet is None:
                    return
                self.seq = 1
                command = packet[0]
                if command == 0x03:
                    self._query(packet[1:].decode())
                elif command == 0x15:
                    self.s.log.append(("register", packet))
                    self.ok()
                elif command in (0x12, 0x1E):
                    self.s.dumps.append(packet)
                    self._dump(packet)
                    return
                elif command == 0x01:
                    return
                else:
                    self.err(1047, "Unknown command")
        except OSError:
            return
        finally:
            self.conn.close()

    def _handshake(self) -> None:
        salt = b"abcdefgh" + b"ijklmnopqrst"
        caps = CAPABILITIES
        payload = (
            b"\x0a"
            + self.s.version.encode()
            + b"\x00"
            + struct.pack("<I", 7)
            + salt[:8]
            + b"\x00"
            + struct.pack("<HBHH", caps & 0xFFFF, 255, SERVER_STATUS_AUTOCOMMIT, caps >> 16)
            + bytes([21])
            + b"\x00" * 10
            + salt[8:]
            + b"\x00"
            + self.s.auth_plugin.encode()
            + b"\x00"
        )
        if self.s.handshake_cut is not None:
            self.send(payload[: self.s.handshake_cut])
            self._exact(1)
            raise OSError("handshake cut")
        self.send(payload)
        self.recv()  # HandshakeResponse41: accepted whatever the password
        if self.s.auth_switch is not None:
            self.send(b"\xfe" + self.s.auth_switch)
            if self.recv() is None:  # the client's answer (recorded in ``received``), or it hung up
                raise OSError("client left during the auth switch")
        self.ok()

    def _query(self, sql: str) -> None:
        self.s.log.append(("query", sql.encode()))
        upper = sql.strip().upper()
        scripted = self.s.answer(sql) if self.s.answer is not None else None
        if scripted == "ok":
            self.ok()
        elif isinstance(scripted, tuple) and isinstance(scripted[0], int):
            self.err(scripted[0], scripted[1])
        elif scripted is not None:
            self.result(*scripted)
        elif upper.startswith("SET "):
            name, _, value = sql.strip()[4:].partition("=")
            self.user_vars[name.strip().lstrip("@").lower()] = value.strip().strip("'")
            self.ok()
        elif upper.startswith("SELECT @@VERSION"):
            self.result(["v", "id", "f", "l"], [[self.s.version, str(self.s.server_id), self.s.binlog_format, "1"]])
        elif upper == "SELECT @@GLOBAL.BINLOG_CHECKSUM":
            self.result(["c"], [["CRC32"]])
        elif upper == "SHOW BINARY LOGS":
            names = self.s.binlog_names or [n for n, _ in self.s.files]
            self.result(
                ["Log_name", "File_size", "Encrypted"],
                [[n, str(len(d)), "No"] for n, (_, d) in zip(names, self.s.files)],
            )
        else:
            self.err(1064, f"fake server does not know {sql!r}")

    def _dump(self, packet: bytes) -> None:
        if self.s.flood is not None:
            piece = bytes(0xFFFFFF)
            self.conn.sendall(b"\xff\xff\xff" + bytes([self.seq]) + self.s.flood + piece[len(self.s.flood) :])
            while True:  # until the client hangs up (OSError ends the session)
                self.seq = (self.seq + 1) % 256
                self.conn.sendall(b"\xff\xff\xff" + bytes([self.seq]) + piece)
        if self.s.silent_stream:
            self._exact(1)
            return
        if packet[0] == 0x12:
            pos, flags, _server_id = struct.unpack_from("<IHI", packet, 1)
            name = packet[11:].decode()
        else:
            flags, _server_id, name_len = struct.unpack_from("<HII", packet, 1)
            name = packet[11 : 11 + name_len].decode()
            (pos,) = struct.unpack_from("<Q", packet, 11 + name_len)
            if not name:
                name, pos = self.s.files[0][0], 4
        if not any(self.user_vars.get(v) == "CRC32" for v in ("source_binlog_checksum", "master_binlog_checksum")):
            self.err(
                1236,
                "Replica can not handle replication events with the checksum that source is configured"
                " to log; the first event '' at 4, the last event read from '' at 0",
            )
            return
        names = [n for n, _ in self.s.files]
        if name not in names:
            self.err(1236, "Could not find first log file name in binary log index file")
            return
        semi = self.s.semi_sync and (
            self.user_vars.get("rpl_semi_sync_replica") == "1" or self.user_vars.get("rpl_semi_sync_slave") == "1"
        )
        sent = 0
        budget = self.s.drop_after_bytes if len(self.s.dumps) == 1 else None
        for index in range(names.index(name), len(names)):
            file_name, data = self.s.files[index]
            start = pos if index == names.index(name) else 4
            stream = [fake_rotate(file_name, start)]
            fde = bytearray(split_events(data)[0][1])
            fde[17] &= ~IN_USE_F
            if start > 4:
                struct.pack_into("<I", fde, 13, 0)
                struct.pack_into("<I", fde, 19 + 2 + 50, 0)
                crc_fix(fde)
            stream.append(bytes(fde))
            stream += [ev for off, ev in split_events(data) if off >= start and off > 4]
            for event in stream:
                ack = semi and event[4] in (16, 4) and event[13:17] != bytes(4)  # real XID / ROTATE end a group
                header = (b"\x00\xef" + bytes([1 if ack else 0])) if semi else b"\x00"
                frame = len(header + event).to_bytes(3, "little") + bytes([self.seq]) + header + event
                if budget is not None and sent + len(frame) > budget:
                    self.conn.sendall(frame[: budget - sent])
                    self.conn.shutdown(socket.SHUT_RDWR)
                    return
                self.conn.sendall(frame)
                self.seq = (self.seq + 1) % 256
                sent += len(frame)
                if ack:
                    reply = self._ack()
                    if reply is None:
                        return
        last_name, last_data = self.s.files[-1]
        if self.s.heartbeat_before_end:
            self.send((b"\x00\xef\x00" if semi else b"\x00") + heartbeat_v2(len(last_data), last_name))
        if flags & 0x01:
            self.eof()

    def _ack(self) -> tuple[str, int] | None:
        head = self._exact(4)
        if head is None:
            return None
        body = self._exact(int.from_bytes(head[:3], "little"))
        if body is None or body[0] != 0xEF:
            return None
        ack = (body[9:].decode(), struct.unpack_from("<Q", body, 1)[0])
        self.s.acks.append(ack)
        return ack
