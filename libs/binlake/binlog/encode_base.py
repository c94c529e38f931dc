"""Building blocks of the binlog encoder: the common header, CRC32 footer, packed integers, the write error.

Mirrors ``Log_event_header`` / ``Log_event_footer`` writing in mysql-server ``libs/mysql/binlog/event`` and
``net_store_length`` (mysys/pack.cc).
"""

from __future__ import annotations

import struct
import zlib

from binlake.binlog.constants import FORMAT_DESCRIPTION_EVENT, LOG_EVENT_BINLOG_IN_USE_F, LOG_EVENT_HEADER_LEN
from binlake.binlog.errors import BinlogError

EVENT_HEADER = struct.Struct("<IBIIIH")  # timestamp, type_code, server_id, event_size, log_pos, flags
U8 = struct.Struct("<B")
U16 = struct.Struct("<H")
U32 = struct.Struct("<I")
U64 = struct.Struct("<Q")
CRC = U32

_crc32 = zlib.crc32


class BinlogWriteError(BinlogError):
    """An event can not be encoded: a value does not fit its column or field, or the structure is unsupported."""

    hint = "check the event's values against its TABLE_MAP (types, metadata) before writing"


def packed_length(value: int) -> bytes:
    """``net_store_length``: 1, 3, 4 or 9 bytes (0xfc/0xfd/0xfe prefixes)."""
    if value < 0:
        raise BinlogWriteError("a packed integer must not be negative", found=value)
    if value < 251:
        return bytes((value,))
    if value < 1 << 16:
        return b"\xfc" + value.to_bytes(2, "little")
    if value < 1 << 24:
        return b"\xfd" + value.to_bytes(3, "little")
    if value < 1 << 64:
        return b"\xfe" + value.to_bytes(8, "little")
    raise BinlogWriteError("a packed integer must fit in 64 bits", found=value)


def packed_length_size(value: int) -> int:
    return 1 if value < 251 else 3 if value < 1 << 16 else 4 if value < 1 << 24 else 9


def frame_event(
    timestamp: int, type_code: int, server_id: int, log_pos: int, flags: int, body: bytes, checksum: bool
) -> bytes:
    """Header + body (+ CRC32 of both when ``checksum``); ``log_pos`` is the position after this event.

    A FORMAT_DESCRIPTION's CRC32 is computed with LOG_EVENT_BINLOG_IN_USE_F cleared, as MySQL does, so that
    clearing the flag when the file is closed leaves the checksum valid.
    """
    size = LOG_EVENT_HEADER_LEN + len(body) + (4 if checksum else 0)
    data = EVENT_HEADER.pack(timestamp, type_code, server_id, size, log_pos, flags) + body
    if checksum:
        if type_code == FORMAT_DESCRIPTION_EVENT and flags & LOG_EVENT_BINLOG_IN_USE_F:
            crc = _crc32(
                EVENT_HEADER.pack(timestamp, type_code, server_id, size, log_pos, flags & ~LOG_EVENT_BINLOG_IN_USE_F)
                + body
            )
        else:
            crc = _crc32(data)
        data += CRC.pack(crc)
    return data


def event_size(body_len: int, checksum: bool) -> int:
    return LOG_EVENT_HEADER_LEN + body_len + (4 if checksum else 0)
