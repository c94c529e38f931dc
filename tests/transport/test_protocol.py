"""Replication packets against bytes written out by hand from the protocol description (sql_repl / rpl_source)."""

from __future__ import annotations

import struct

import pytest

from binlake.transport import protocol as p
from binlake.transport.errors import ProtocolError
from tests.support import fixture_path


def test_register_slave_bytes() -> None:
    # 0x15, server_id=5 LE, three empty length-prefixed strings, port 0, rank 0, master_id 0
    assert p.encode_register_slave(5) == bytes.fromhex("15 05000000 00 00 00 0000 00000000 00000000")


def test_binlog_dump_bytes() -> None:
    # pos 1234 (d2 04 00 00), flags NON_BLOCK|ANNOTATE (03 00), server_id 77 (4d 00 00 00), then the name
    expected = bytes.fromhex("12 d2040000 0300 4d000000") + b"binlog.000002"
    assert p.encode_binlog_dump("binlog.000002", 1234, 77, flags=3) == expected


def test_binlog_dump_rejects_positions_over_4_gib() -> None:
    with pytest.raises(ValueError, match="COM_BINLOG_DUMP_GTID"):
        p.encode_binlog_dump("binlog.000002", 1 << 32, 77)


def test_binlog_dump_gtid_bytes() -> None:
    # flags THROUGH_POSITION (02 00), server_id 9, name size 3, "b.1", pos 4 as 8 bytes, data size 8, empty set
    expected = (
        bytes.fromhex("1e 0200 09000000 03000000")
        + b"b.1"
        + bytes.fromhex("0400000000000000 08000000 0000000000000000")
    )
    assert p.encode_binlog_dump_gtid(9, bytes(8), "b.1", 4, flags=p.BINLOG_THROUGH_POSITION) == expected


def test_semi_sync_ack_bytes() -> None:
    assert p.encode_semi_sync_ack("b.7", 0x0102) == bytes.fromhex("ef 0201000000000000") + b"b.7"


def _event(type_code: int, log_pos: int, body: bytes = b"", flags: int = 0) -> bytes:
    return struct.pack("<IBIIIH", 1700000000, type_code, 3, 19 + len(body), log_pos, flags) + body


def test_stream_packet_kinds() -> None:
    event = _event(2, 500, b"xyz")
    item = p.parse_stream_packet(b"\x00" + event, semi_sync=False)
    assert isinstance(item, p.StreamEvent) and item.raw == event and item.header.log_pos == 500
    assert not item.needs_ack
    assert isinstance(p.parse_stream_packet(b"\xfe\x00\x00\x02\x00", semi_sync=False), p.StreamEnd)
    err = p.parse_stream_packet(b"\xff\xd4\x04#HY000Could not find first log", semi_sync=False)
    assert err == p.ServerError(1236, "HY000", "Could not find first log")


def test_semi_sync_header_only_when_requested() -> None:
    event = _event(16, 900, b"\x01" * 8)
    item = p.parse_stream_packet(b"\x00\xef\x01" + event, semi_sync=True)
    assert isinstance(item, p.StreamEvent) and item.needs_ack and item.raw == event
    # an event whose first timestamp byte is 0xEF is not a semi-sync header when semi-sync was not asked for
    looks_like_header = b"\xef" + event[1:]
    plain = p.parse_stream_packet(b"\x00" + looks_like_header, semi_sync=False)
    assert isinstance(plain, p.StreamEvent) and plain.raw == looks_like_header
    with pytest.raises(ProtocolError, match="semi-sync"):
        p.parse_stream_packet(b"\x00" + event, semi_sync=True)


def test_event_length_must_match_packet() -> None:
    event = _event(2, 500, b"xyz")
    with pytest.raises(ProtocolError, match="event header says 22 bytes but the packet holds 21"):
        p.parse_stream_packet(b"\x00" + event[:-1], semi_sync=False)
    with pytest.raises(ProtocolError, match="0x07"):
        p.parse_stream_packet(b"\x07abc", semi_sync=False)


def test_fake_rotate_and_heartbeat_recognised() -> None:
    fake = _event(4, 0, struct.pack("<Q", 4) + b"binlog.000001", flags=0x20)
    real = _event(4, 600, struct.pack("<Q", 4) + b"binlog.000002")
    assert p.is_fake_rotate(p.parse_event_header(fake))
    assert not p.is_fake_rotate(p.parse_event_header(real))
    assert p.parse_rotate(real, checksum=False) == p.Rotate("binlog.000002", 4)
    assert p.is_heartbeat(p.parse_event_header(_event(27, 100)))
    assert p.is_heartbeat(p.parse_event_header(_event(41, 0)))


def test_crc_and_checksum_alg_on_real_files(fixtures_dir) -> None:
    """Every event of a real MySQL 8.0.28 file passes the CRC check; one flipped byte fails it. The file's FDE
    has LOG_EVENT_BINLOG_IN_USE_F set (it was copied while active) and still passes: the server computes the
    FDE checksum with that flag cleared."""
    data = fixture_path("binlog", "rust_mysql_common", "mysql-enum-string-set.000001").read_bytes()
    pos, count = 4, 0
    while pos < len(data):
        (length,) = struct.unpack_from("<I", data, pos + 9)
        event = data[pos : pos + length]
        assert p.event_crc_ok(event), pos
        count += 1
        pos += length
    assert count == 21  # manifest.json: crc32_ok 21 for this file
    assert data[4 + 17] & 0x01
    assert p.checksum_alg_of_fde(data[4 : 4 + struct.unpack_from("<I", data, 13)[0]]) == 1
    bad = bytearray(data[4:130])
    bad[40] ^= 0x10
    assert not p.event_crc_ok(bytes(bad))
    old = fixture_path("binlog", "rust_mysql_common", "bug16266.000001").read_bytes()  # 5.0.16: no alg byte
    assert p.checksum_alg_of_fde(old[4 : 4 + struct.unpack_from("<I", old, 13)[0]]) == 0
