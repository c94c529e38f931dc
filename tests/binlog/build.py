"""Hand-built binlog bytes for tests, written from the format description (not from binlake's code): the v4
event header, FORMAT_DESCRIPTION with post-header lengths, CRC32 footers, TABLE_MAP and rows events."""

from __future__ import annotations

import struct
import zlib

MAGIC = b"\xfebin"
# post-header lengths of a MySQL 8.0 FORMAT_DESCRIPTION_EVENT for types 1..42 (QUERY 13, ROTATE 8,
# TABLE_MAP 8, v1 rows 8, INCIDENT 2, v2 rows 10, GTID 42, ...)
POST_HEADER_LENGTHS = bytes(
    [
        0,
        13,
        0,
        8,
        0,
        0,
        0,
        0,
        4,
        0,
        4,
        0,
        0,
        0,
        98,
        0,
        4,
        26,
        8,
        0,
        0,
        0,
        8,
        8,
        8,
        2,
        0,
        0,
        0,
        10,
        10,
        10,
        42,
        42,
        0,
        18,
        52,
        0,
        10,
        40,
        0,
        0,
    ]
)


def packed(n: int) -> bytes:
    if n < 251:
        return bytes([n])
    if n < 1 << 16:
        return b"\xfc" + n.to_bytes(2, "little")
    if n < 1 << 24:
        return b"\xfd" + n.to_bytes(3, "little")
    return b"\xfe" + n.to_bytes(8, "little")


def event(
    type_code: int,
    body: bytes,
    *,
    log_pos: int = 0,
    crc: bool = True,
    timestamp: int = 1700000000,
    server_id: int = 1,
    flags: int = 0,
) -> bytes:
    size = 19 + len(body) + (4 if crc else 0)
    raw = struct.pack("<IBIIIH", timestamp, type_code, server_id, size, log_pos, flags) + body
    return raw + struct.pack("<I", zlib.crc32(raw)) if crc else raw


def fde_body(server_version: str = "8.0.40", crc: bool = True, created: int = 1700000000) -> bytes:
    return (
        struct.pack("<H", 4)
        + server_version.encode().ljust(50, b"\0")
        + struct.pack("<I", created)
        + bytes([19])
        + POST_HEADER_LENGTHS
        + bytes([1 if crc else 0])
    )


def binlog(*events: tuple[int, bytes], crc: bool = True, server_version: str = "8.0.40") -> bytes:
    """MAGIC, a FORMAT_DESCRIPTION, then the given (type_code, body) events with correct log_pos."""
    out = bytearray(MAGIC)
    first = event(
        15,
        fde_body(server_version, crc),
        log_pos=4 + 19 + len(fde_body(server_version, crc)) + 4,
        crc=True if crc else False,
    )
    if not crc:  # a checksum-aware server with binlog_checksum=NONE still writes 4 checksum bytes in the FDE
        first = event(15, fde_body(server_version, crc) + b"\0\0\0\0", crc=False)
    out += first
    for type_code, body in events:
        size = 19 + len(body) + (4 if crc else 0)
        out += event(type_code, body, log_pos=len(out) + size, crc=crc)
    return bytes(out)


def table_map(
    table_id: int, db: str, table: str, types: list[int], meta: bytes, nullable: list[bool], optional: bytes = b""
) -> tuple[int, bytes]:
    null_bits = bytearray((len(types) + 7) // 8)
    for i, n in enumerate(nullable):
        if n:
            null_bits[i // 8] |= 1 << (i % 8)
    body = (
        table_id.to_bytes(6, "little")
        + b"\x01\x00"
        + bytes([len(db)])
        + db.encode()
        + b"\0"
        + bytes([len(table)])
        + table.encode()
        + b"\0"
        + packed(len(types))
        + bytes(types)
        + packed(len(meta))
        + meta
        + bytes(null_bits)
        + optional
    )
    return 19, body


def bitmap(bits: list[bool]) -> bytes:
    out = bytearray((len(bits) + 7) // 8)
    for i, b in enumerate(bits):
        if b:
            out[i // 8] |= 1 << (i % 8)
    return bytes(out)


def rows_event(
    type_code: int,
    table_id: int,
    ncols: int,
    rows: bytes,
    *,
    present: bytes | None = None,
    present_after: bytes | None = None,
    extra: bytes = b"",
) -> tuple[int, bytes]:
    """v2 rows event (30/31/32/39): table_id, flags STMT_END_F, extra data length (including itself)."""
    full = bitmap([True] * ncols)
    body = (
        table_id.to_bytes(6, "little")
        + b"\x01\x00"
        + struct.pack("<H", 2 + len(extra))
        + extra
        + packed(ncols)
        + (present or full)
    )
    if type_code in (31, 39):
        body += present_after or full
    return type_code, body + rows


def image(null_bits: list[bool], *values: bytes) -> bytes:
    """A row image: the NULL bitmap over the present columns, then the non-NULL values."""
    return bitmap(null_bits) + b"".join(values)


def optional_field(field_type: int, value: bytes) -> bytes:
    return bytes([field_type]) + packed(len(value)) + value


def names(*column_names: str) -> bytes:
    return optional_field(4, b"".join(packed(len(n.encode())) + n.encode() for n in column_names))
