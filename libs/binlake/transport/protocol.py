"""The replication part of the MySQL client/server protocol as pure functions of bytes (no sockets here).

Commands a replica sends (``COM_REGISTER_SLAVE``, ``COM_BINLOG_DUMP``, ``COM_BINLOG_DUMP_GTID``, the semi-sync
ACK) are built by ``encode_*``; the packets of a binlog stream are classified by :func:`parse_stream_packet`
(mysql-server ``sql/rpl_binlog_sender.cc`` writes them: ``0x00`` + [semi-sync header] + event, an ERR packet, or
an EOF packet in non-blocking mode). Header fields and event checks mirror ``Log_event_header`` and
``Binlog_sender::fake_rotate_event`` / ``send_heartbeat_event``.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from binlake.binlog.constants import (
    BINLOG_CHECKSUM_ALG_OFF,
    BINLOG_CHECKSUM_LEN,
    CHECKSUM_VERSION_MARIADB,
    CHECKSUM_VERSION_MYSQL,
    FORMAT_DESCRIPTION_EVENT,
    HEARTBEAT_LOG_EVENT,
    HEARTBEAT_LOG_EVENT_V2,
    LOG_EVENT_ARTIFICIAL_F,
    LOG_EVENT_HEADER_LEN,
    ROTATE_EVENT,
    ROTATE_HEADER_LEN,
    ST_SERVER_VER_LEN,
)
from binlake.transport.errors import ProtocolError

# --- command bytes (include/my_command.h enum_server_command) -------------------------------------------------
COM_BINLOG_DUMP = 0x12
COM_REGISTER_SLAVE = 0x15
COM_BINLOG_DUMP_GTID = 0x1E

# COM_BINLOG_DUMP / COM_BINLOG_DUMP_GTID flags (mysql-server sql/rpl_constants.h, MariaDB sql/sql_repl.h)
BINLOG_DUMP_NON_BLOCK = 0x01  # reply with EOF at the end of the binlog instead of waiting
BINLOG_THROUGH_POSITION = 0x02  # MySQL COM_BINLOG_DUMP_GTID: start at file + position
BINLOG_THROUGH_GTID = 0x04  # MySQL COM_BINLOG_DUMP_GTID: skip transactions in the GTID set
BINLOG_SEND_ANNOTATE_ROWS_EVENT = 0x02  # MariaDB COM_BINLOG_DUMP: send ANNOTATE_ROWS (else they are skipped)

# MariaDB's @mariadb_slave_capability (sql/log_event.h MARIA_SLAVE_CAPABILITY_*): 4 = GTID, the newest level; a
# replica that declares less gets MariaDB-only events rewritten as dummy events, so the stream would not be the file.
MARIA_SLAVE_CAPABILITY_MINE = 4

# semi-sync (plugin/semisync/semisync.h): a stream packet 0x00 0xEF <flag> <event>; the ACK the replica sends
K_PACKET_MAGIC_NUM = 0xEF
K_PACKET_FLAG_SYNC = 0x01

MAX_PACKET_LEN = 0xFFFFFF  # a payload this long continues in the next packet

# stream packet first bytes (include/mysql_com.h)
PACKET_OK = 0x00
PACKET_EOF = 0xFE
PACKET_ERR = 0xFF

# --- event header (Log_event_header, binlog_event.h) -----------------------------------------------------------
EVENT_HEADER = struct.Struct("<IBIIIH")  # timestamp, type_code, server_id, event_length, log_pos, flags
FLAGS_OFFSET = 17
ROTATE_POSITION = struct.Struct("<Q")
FDE_BINLOG_VERSION = struct.Struct("<H")
REGISTER_SLAVE_TAIL = struct.Struct("<HII")  # port, replication_rank, master_id
BINLOG_DUMP_HEAD = struct.Struct("<IHI")  # binlog_pos (4 bytes), flags, server_id
BINLOG_DUMP_GTID_HEAD = struct.Struct("<HII")  # flags, server_id, binlog_name_info_size
U32 = struct.Struct("<I")
U64 = struct.Struct("<Q")
ERR_HEAD = struct.Struct("<BH")  # 0xFF, error_code


@dataclass(frozen=True, slots=True)
class EventHeader:
    """The 19-byte v4 event header (``Log_event_header``)."""

    timestamp: int
    type_code: int
    server_id: int
    event_length: int
    log_pos: int
    flags: int


def parse_event_header(event: bytes | memoryview, where: str = "event") -> EventHeader:
    if len(event) < LOG_EVENT_HEADER_LEN:
        raise ProtocolError(f"{where}: {len(event)} bytes, shorter than the {LOG_EVENT_HEADER_LEN}-byte event header")
    return EventHeader(*EVENT_HEADER.unpack_from(event, 0))


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """One binlog event from the stream: the event's own bytes plus whether a semi-sync ACK was requested."""

    raw: bytes
    header: EventHeader
    needs_ack: bool = False


@dataclass(frozen=True, slots=True)
class StreamEnd:
    """The EOF packet a server sends in non-blocking mode once the replica has everything (``--until-now``)."""


@dataclass(frozen=True, slots=True)
class ServerError:
    """An ERR packet: the server's error code, SQL state and message."""

    code: int
    sql_state: str
    message: str


def parse_stream_packet(payload: bytes, semi_sync: bool) -> StreamEvent | StreamEnd | ServerError:
    """Classify one (reassembled) packet of a binlog dump stream.

    ``semi_sync`` must say whether this replica asked for semi-sync (``@rpl_semi_sync_slave``): only then does
    every event packet carry the 2-byte header; an event's first byte may itself be 0xEF, so it is never guessed.
    """
    if not payload:
        raise ProtocolError("empty packet in the binlog stream")
    first = payload[0]
    if first == PACKET_ERR:
        return parse_err_packet(payload)
    if first == PACKET_EOF and len(payload) < 9:
        return StreamEnd()
    if first != PACKET_OK:
        raise ProtocolError(f"binlog stream packet starts with 0x{first:02x} (expected 0x00, 0xfe or 0xff)")
    start, needs_ack = 1, False
    if semi_sync:
        if len(payload) < 3 or payload[1] != K_PACKET_MAGIC_NUM:
            raise ProtocolError(
                "semi-sync was requested but the packet has no 0xEF semi-sync header"
                f" (found {payload[1:3].hex() or 'nothing'})"
            )
        needs_ack = bool(payload[2] & K_PACKET_FLAG_SYNC)
        start = 3
    raw = payload[start:]
    header = parse_event_header(raw, "binlog stream event")
    if header.event_length != len(raw):
        raise ProtocolError(f"event header says {header.event_length} bytes but the packet holds {len(raw)}")
    return StreamEvent(raw, header, needs_ack)


def continued_packet_size(first_piece: bytes, event_at: int, limit: int) -> int:
    """The whole payload size of a stream packet that continues past its first 16 MiB piece (``my_net_read``
    joins the pieces): only an event is that long, so it is the OK byte (and the semi-sync header: ``event_at``)
    plus the ``event_length`` its header declares. Checked before a second piece is read, so a server can not make
    the replica hold more than the first piece for a packet its own event header does not account for."""
    if first_piece[:1] != bytes([PACKET_OK]) or len(first_piece) < event_at + LOG_EVENT_HEADER_LEN:
        raise ProtocolError(
            f"a stream packet of more than one 16 MiB piece starts with {first_piece[:4].hex()}, "
            "not an event (0x00 and an event header)"
        )
    declared = event_at + EVENT_HEADER.unpack_from(first_piece, event_at)[3]
    if declared <= len(first_piece):
        raise ProtocolError(
            f"the server sends more than one 16 MiB packet piece for an event whose header says "
            f"{declared - event_at} bytes"
        )
    if declared > limit:
        raise ProtocolError(
            f"the server sends an event of {declared - event_at} bytes, above max_packet={limit} "
            "(the largest event a replica accepts, like max_allowed_packet); raise max_packet in "
            "the source URI if the server's events are that large"
        )
    return declared


def parse_err_packet(payload: bytes) -> ServerError:
    """ERR_Packet: 0xFF, error_code(2), ['#' sql_state(5)], message."""
    if len(payload) < ERR_HEAD.size:
        raise ProtocolError(f"ERR packet of {len(payload)} bytes is too short")
    _, code = ERR_HEAD.unpack_from(payload, 0)
    rest = payload[ERR_HEAD.size :]
    state = ""
    if rest[:1] == b"#":
        state, rest = rest[1:6].decode("ascii", "replace"), rest[6:]
    return ServerError(code, state, rest.decode("utf-8", "replace"))


# --- events that are not in the file -----------------------------------------------------------------------------
def is_heartbeat(header: EventHeader) -> bool:
    """HEARTBEAT_LOG_EVENT (and MySQL 8's V2): sent when the binlog is idle; never part of a file."""
    return header.type_code in (HEARTBEAT_LOG_EVENT, HEARTBEAT_LOG_EVENT_V2)


def is_fake_rotate(header: EventHeader) -> bool:
    """A ROTATE the dump thread makes up (``fake_rotate_event``): ARTIFICIAL flag, log_pos 0; not in any file."""
    return header.type_code == ROTATE_EVENT and (header.log_pos == 0 or bool(header.flags & LOG_EVENT_ARTIFICIAL_F))


@dataclass(frozen=True, slots=True)
class Rotate:
    """ROTATE_EVENT body: where the next events come from."""

    next_file: str
    position: int


def parse_rotate(event: bytes, checksum: bool) -> Rotate:
    """ROTATE body: position(8) + file name to the end (minus the CRC32 when the stream carries checksums)."""
    end = len(event) - (BINLOG_CHECKSUM_LEN if checksum else 0)
    body = LOG_EVENT_HEADER_LEN + ROTATE_HEADER_LEN
    if end < body:
        raise ProtocolError(f"ROTATE event of {len(event)} bytes is too short")
    (position,) = ROTATE_POSITION.unpack_from(event, LOG_EVENT_HEADER_LEN)
    raw = event[body:end]
    try:
        name = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ProtocolError(
            f"ROTATE event names no usable file: expected a UTF-8 file name, found {raw[:80]!r}"
        ) from None
    reason = binlog_name_problem(name)
    if reason is not None:
        raise ProtocolError(f"ROTATE event names no usable file: {reason}")
    return Rotate(name, position)


def binlog_name_problem(name: str) -> str | None:
    """Why ``name`` (from a ROTATE, SHOW BINARY LOGS or a URI) can not be a file in a landing folder, or None.

    A server's binlog names are ``<log_bin basename>.<6+ digits>`` (``MYSQL_BIN_LOG::generate_new_name``) in its
    own folder: one path component, not hidden, no separators or control characters, at most 255 bytes, ending in
    its sequence number (the landing folder's own entries, ``_snapshots`` and the fetch manifest, never do)."""
    if not name:
        return "expected a file name, found an empty one"
    if len(name.encode("utf-8", "surrogateescape")) > 255:
        return f"expected a file name of at most 255 bytes, found {len(name.encode('utf-8', 'surrogateescape'))}"
    bad = sorted({ch for ch in name if ch in "/\\" or ord(ch) < 32 or ord(ch) == 127})
    if bad:
        return f"expected one path component, found {name[:80]!r} (it holds {''.join(bad)!r})"
    if name.startswith("."):
        return f"expected a plain file name, found {name[:80]!r} (a hidden file or a reference to a folder)"
    if not name.rpartition(".")[2].isdigit() or not name.rpartition(".")[2].isascii():
        return f"expected a binlog file name ending in its sequence number (e.g. binlog.000042), found {name[:80]!r}"
    return None


def checksum_alg_of_fde(event: bytes) -> int:
    """The checksum algorithm a FORMAT_DESCRIPTION_EVENT declares for its file (``get_checksum_alg``).

    Servers older than the checksum split (MySQL 5.6.1, MariaDB 5.3) write no algorithm byte: OFF.
    """
    header = parse_event_header(event, "FORMAT_DESCRIPTION_EVENT")
    if header.type_code != FORMAT_DESCRIPTION_EVENT:
        raise ProtocolError(f"expected FORMAT_DESCRIPTION_EVENT (15), found event type {header.type_code}")
    start = LOG_EVENT_HEADER_LEN + FDE_BINLOG_VERSION.size
    if len(event) < start + ST_SERVER_VER_LEN + 5:
        raise ProtocolError(f"FORMAT_DESCRIPTION_EVENT of {len(event)} bytes is too short")
    version_text = bytes(event[start : start + ST_SERVER_VER_LEN]).split(b"\x00", 1)[0].decode("ascii", "replace")
    split = CHECKSUM_VERSION_MARIADB if "mariadb" in version_text.lower() else CHECKSUM_VERSION_MYSQL
    if server_version_tuple(version_text) < split:
        return BINLOG_CHECKSUM_ALG_OFF
    return event[len(event) - BINLOG_CHECKSUM_LEN - 1]


def server_version_tuple(text: str) -> tuple[int, int, int]:
    """(major, minor, patch) of a version string such as ``10.11.19-MariaDB-log`` or ``8.4.0``."""
    parts: list[int] = []
    for piece in text.split("-", 1)[0].split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    while len(parts) < 3:
        parts.append(0)
    return parts[0], parts[1], parts[2]


def event_crc_ok(event: bytes | memoryview) -> bool:
    """Whether an event's trailing CRC32 matches its other bytes (``my_checksum``, zlib's CRC-32).

    The server computes a FORMAT_DESCRIPTION_EVENT's checksum with LOG_EVENT_BINLOG_IN_USE_F cleared (it clears
    that flag in place when it closes the file), so the flag is masked here the same way.
    """
    if len(event) < LOG_EVENT_HEADER_LEN + BINLOG_CHECKSUM_LEN:
        return False
    body = bytes(event[:-BINLOG_CHECKSUM_LEN])
    if event[4] == FORMAT_DESCRIPTION_EVENT and body[FLAGS_OFFSET] & 0x01:
        body = body[:FLAGS_OFFSET] + bytes([body[FLAGS_OFFSET] & 0xFE]) + body[FLAGS_OFFSET + 1 :]
    (stored,) = U32.unpack_from(event, len(event) - BINLOG_CHECKSUM_LEN)
    return zlib.crc32(body) & 0xFFFFFFFF == stored


# --- commands ---------------------------------------------------------------------------------------------------
def _short_string(value: bytes, what: str) -> bytes:
    if len(value) > 255:
        raise ValueError(f"{what} is {len(value)} bytes; COM_REGISTER_SLAVE allows at most 255")
    return bytes([len(value)]) + value


def encode_register_slave(
    server_id: int, hostname: str = "", user: str = "", password: str = "", port: int = 0
) -> bytes:
    """COM_REGISTER_SLAVE: server_id(4), hostname, user, password (1-byte length each), port(2), rank(4),
    master_id(4). binlake reports no host/user/password (they would show in SHOW SLAVE HOSTS)."""
    return (
        bytes([COM_REGISTER_SLAVE])
        + U32.pack(server_id)
        + _short_string(hostname.encode(), "hostname")
        + _short_string(user.encode(), "user")
        + _short_string(password.encode(), "password")
        + REGISTER_SLAVE_TAIL.pack(port, 0, 0)
    )


def encode_binlog_dump(file: str, position: int, server_id: int, flags: int = 0) -> bytes:
    """COM_BINLOG_DUMP: binlog_pos(4), flags(2), server_id(4), file name (rest of packet)."""
    if not 0 <= position <= 0xFFFFFFFF:
        raise ValueError(
            f"COM_BINLOG_DUMP carries a 4-byte position; {position} does not fit"
            " (use COM_BINLOG_DUMP_GTID, which has 8 bytes)"
        )
    return bytes([COM_BINLOG_DUMP]) + BINLOG_DUMP_HEAD.pack(position, flags, server_id) + file.encode()


def encode_binlog_dump_gtid(
    server_id: int, gtid_set: bytes, file: str = "", position: int = 4, flags: int = 0
) -> bytes:
    """COM_BINLOG_DUMP_GTID (``com_binlog_dump_gtid``): flags(2), server_id(4), name_size(4), name, pos(8),
    data_size(4), the encoded GTID set (:func:`binlake.transport.gtid.encode_gtid_set`).

    With BINLOG_THROUGH_GTID in ``flags`` the server skips the transactions in the set.
    """
    name = file.encode()
    return (
        bytes([COM_BINLOG_DUMP_GTID])
        + BINLOG_DUMP_GTID_HEAD.pack(flags, server_id, len(name))
        + name
        + U64.pack(position)
        + U32.pack(len(gtid_set))
        + gtid_set
    )


def encode_semi_sync_ack(file: str, position: int) -> bytes:
    """The semi-sync ACK (``ReplSemiSyncSlave::slaveReply``): 0xEF, binlog_pos(8), file name."""
    return bytes([K_PACKET_MAGIC_NUM]) + U64.pack(position) + file.encode()
