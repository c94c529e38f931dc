"""Hostile servers and source URIs (issue #16): bounded packets, typed errors for every malformed input."""

from __future__ import annotations

import pytest

from binlake.transport.client import ReplicationClient
from binlake.transport.errors import ProtocolError, SourceUriError
from binlake.transport.uri import MAX_PACKET, parse_mysql_uri

URI = "mysql://repl@db1:3306/?server_id=42"


class EndlessPieces:
    """A connection whose server sends 16 MiB packet pieces forever (each announcing another one)."""

    def __init__(self) -> None:
        self.bytes_served = 0
        self.reads = 0

    def _read_bytes(self, n: int) -> bytes:
        self.reads += 1
        if n == 4:
            return b"\xff\xff\xff\x00"
        self.bytes_served += n
        return bytes(n)


def test_multi_packet_event_is_bounded_by_max_packet() -> None:
    client = ReplicationClient(parse_mysql_uri(URI + "&max_packet=40000000"))
    conn = EndlessPieces()
    client._conn = conn
    with pytest.raises(ProtocolError, match="more than 40000000 bytes"):
        client._read_stream_packet()
    assert conn.bytes_served <= 40000000


def test_default_max_packet_is_max_allowed_packet_maximum() -> None:
    assert parse_mysql_uri(URI).max_packet == MAX_PACKET == (1 << 30) + 1024
    with pytest.raises(SourceUriError, match="max_packet"):
        parse_mysql_uri(URI + "&max_packet=99999999999")
