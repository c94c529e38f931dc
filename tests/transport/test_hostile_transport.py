"""Hostile servers and source URIs (issue #16): bounded packets, typed errors for every malformed input."""

from __future__ import annotations

import struct

import pytest

from binlake.transport.client import ReplicationClient
from binlake.transport.errors import ProtocolError, SourceUriError
from binlake.transport.uri import MAX_PACKET, parse_mysql_uri

URI = "mysql://repl@db1:3306/?server_id=42"


class EndlessPieces:
    """A connection whose server sends 16 MiB packet pieces forever (each announcing another one); the first one
    starts with the OK byte and an event header declaring ``declared`` bytes."""

    def __init__(self, declared: int | None = None) -> None:
        self.bytes_served = 0
        self.reads = 0
        self.declared = declared

    def _read_bytes(self, n: int) -> bytes:
        self.reads += 1
        if n == 4:
            return b"\xff\xff\xff\x00"
        first = self.bytes_served == 0 and self.declared is not None
        self.bytes_served += n
        if first:
            return b"\x00" + struct.pack("<IBIIIH", 0, 30, 1, self.declared, 0, 0) + bytes(n - 20)
        return bytes(n)


def test_multi_packet_event_is_bounded_by_max_packet() -> None:
    client = ReplicationClient(parse_mysql_uri(URI + "&max_packet=40000000"))
    conn = EndlessPieces(declared=39_000_000)
    client._conn = conn
    with pytest.raises(ProtocolError, match=r"more than 39000001 bytes .* above the 39000001 bytes its event header"):
        client._read_stream_packet()
    assert conn.bytes_served <= 40000000
    with pytest.raises(ProtocolError, match="an event of 50000000 bytes, above max_packet=40000000"):
        client._conn = conn = EndlessPieces(declared=50_000_000)
        client._read_stream_packet()
    assert conn.bytes_served == 0xFFFFFF


def test_pieces_an_event_header_does_not_account_for_stop_at_the_first_piece() -> None:
    """Issue #25 case 10: 16 MiB pieces of zeros (an event header declaring 0 bytes) with the default max_packet
    (1 GiB) stop after the first piece, not after 1 GiB held in memory."""
    client = ReplicationClient(parse_mysql_uri(URI))
    conn = EndlessPieces()
    client._conn = conn
    with pytest.raises(ProtocolError, match="more than one 16 MiB packet piece for an event whose header says 0"):
        client._read_stream_packet()
    assert conn.bytes_served == 0xFFFFFF


def test_default_max_packet_is_max_allowed_packet_maximum() -> None:
    assert parse_mysql_uri(URI).max_packet == MAX_PACKET == (1 << 30) + 1024
    with pytest.raises(SourceUriError, match="max_packet"):
        parse_mysql_uri(URI + "&max_packet=99999999999")


@pytest.mark.parametrize(
    "uri,message",
    [
        ("mysql://repl@[::1:3306/?server_id=1", "Invalid IPv6 URL"),
        ("mysql://repl@db1:99999/?server_id=1", "Port out of range"),
        ("mysql://repl@db1:3306/binlog@evil:3306?server_id=1", "holds '@'"),
        ("mysql://repl@db1:3306/..?server_id=1", "a hidden file or a reference to a folder"),
    ],
)
def test_malformed_source_uris_are_typed_errors(uri, message) -> None:
    with pytest.raises(SourceUriError, match=message):
        parse_mysql_uri(uri)


def test_ipv6_source_gets_a_usable_default_landing_name() -> None:
    src = parse_mysql_uri("mysql://repl@[2001:db8::1]:3307/?server_id=1")
    assert (src.host, src.port, src.name) == ("2001:db8::1", 3307, "2001-db8--1-3307")


def test_malformed_uri_in_the_cli_is_one_line(tmp_path, capsys) -> None:
    from binlake.cli import main

    assert main(["fetch", "--source", "mysql://repl@[::1:3306/?server_id=1", "--landing", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Invalid IPv6 URL" in err[0]


# --- hostile servers (the scripted server of fake_mysql.py) ------------------------------------------------------

from tests.transport.fake_mysql import FakeMySQL8, Script, fake_rotate  # noqa: E402


def _files() -> list[tuple[str, bytes]]:
    from tests.binlog import build

    return [("binlog.000001", build.binlog((230, b"x" * 10)))]


def _fetch(port: int, landing, extra: str = "", retries: int = 3):
    from binlake.transport import FetchOptions, fetch

    src = parse_mysql_uri(f"mysql://repl@127.0.0.1:{port}/?server_id=4242&name=h&heartbeat=1{extra}")
    sleeps: list[float] = []
    try:
        return fetch(
            src, landing, FetchOptions(until_now=True, backoff_initial_s=0.0, max_retries=retries), sleep=sleeps.append
        )
    finally:
        _fetch.sleeps = sleeps  # type: ignore[attr-defined]


def test_truncated_handshake_is_a_protocol_error(tmp_path) -> None:
    with FakeMySQL8(Script(_files(), handshake_cut=9)) as server:
        with pytest.raises(ProtocolError, match="expected a MySQL greeting"):
            _fetch(server.port, tmp_path)


def test_silent_server_fails_once_with_a_clear_timeout_instead_of_retrying(tmp_path) -> None:
    from binlake.transport import ServerTimeoutError

    with FakeMySQL8(Script(_files(), silent=True)) as server:
        with pytest.raises(ServerTimeoutError, match=r"sent nothing for 0.3 s \(read_timeout\)"):
            _fetch(server.port, tmp_path, "&read_timeout=0.3")
    assert _fetch.sleeps == []  # type: ignore[attr-defined]


def test_silent_stream_without_heartbeats_ends_by_read_timeout(tmp_path) -> None:
    from binlake.transport import ConnectionLostError

    with FakeMySQL8(Script(_files(), silent_stream=True)) as server:
        with pytest.raises(ConnectionLostError, match=r"no event or heartbeat for 0.3 s"):
            _fetch(server.port, tmp_path, "&read_timeout=0.3&heartbeat=0", retries=0)


@pytest.mark.parametrize("name", ["../escaped.000001", "..", ".binlake-fetch.lock", "a\\b.000001", "x\n.000001"])
def test_show_binary_logs_names_outside_the_landing_folder_are_refused(tmp_path, name) -> None:
    landing = tmp_path / "landing"
    with FakeMySQL8(Script(_files(), binlog_names=[name])) as server:
        with pytest.raises(ProtocolError, match="SHOW BINARY LOGS lists an unusable file"):
            _fetch(server.port, landing)
    written = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()}
    assert written <= {"landing/h/.binlake-fetch.lock", "landing/h/_binlake_fetch.json"}
    assert (landing / "h" / ".binlake-fetch.lock").read_bytes() == b""


@pytest.mark.parametrize("name", ["..", "_binlake_fetch.json"])
def test_rotate_or_landing_names_that_are_not_plain_files_are_refused(tmp_path, name) -> None:
    from binlake.transport import LandingError
    from binlake.transport.landing import LandingFolder
    from binlake.transport.protocol import parse_rotate

    if name == "..":
        with pytest.raises(ProtocolError, match="a hidden file or a reference to a folder"):
            parse_rotate(fake_rotate(name, 4), checksum=True)
    with LandingFolder(tmp_path, "h", "src") as landing:
        landing.open()
        with pytest.raises(LandingError, match="refusing the server's binlog name"):
            landing.start_file(name)


def test_landing_tail_check_walks_the_file_with_the_binlog_scanner(tmp_path, monkeypatch) -> None:
    from binlake.binlog import scan
    from binlake.transport import landing
    from tests.binlog import build

    calls = []

    def counting(*args, **kwargs):
        calls.append(kwargs)
        return scan.scan_events(*args, **kwargs)

    monkeypatch.setattr(landing, "scan_events", counting)
    whole = build.binlog((230, b"x" * 10))
    path = tmp_path / "binlog.000001"
    path.write_bytes(whole + build.event(230, b"y" * 10)[:12] + (1 << 30).to_bytes(4, "little"))
    check = landing.check_tail(path, 0)
    assert calls and calls[0]["with_bytes"] is True
    assert (check.end, check.cut) == (len(whole), 16) and "incomplete final event" in check.reason


@pytest.mark.parametrize(
    "text,what",
    [
        ('{"version": 1}', "the member 'source' is missing"),
        ("[" * 100000 + "]" * 100000, "JSON nested too deeply"),
        ('{"version": 1, "source": "s", "current_file": "../../etc/passwd"}', "not a plain file name"),
    ],
)
def test_hostile_manifest_is_a_landing_error_saying_what_is_wrong(tmp_path, text, what) -> None:
    from binlake.transport import LandingError
    from binlake.transport.landing import Manifest

    with pytest.raises(LandingError, match=what):
        Manifest.from_json(text, tmp_path / "_binlake_fetch.json")
