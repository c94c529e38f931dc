"""MySQL 8 protocol variants against a scripted source replaying real MySQL 8 binlog files (no MySQL 8 server
exists on these machines; see fake_mysql.py). The expected bytes are the fixture files themselves."""

from __future__ import annotations

import json
import struct
import uuid

import pytest

from binlake.transport import (
    BinlogPurgedError,
    FetchOptions,
    LandingError,
    ReplicationClient,
    ServerConfigError,
    StreamEnd,
    StreamEvent,
    fetch,
    parse_mysql_uri,
)
from binlake.transport.landing import MANIFEST_NAME
from tests.support import fixture_path
from tests.transport.fake_mysql import FakeMySQL8, Script, split_events

# transaction_compression.000001 (8.0.32) ends with a ROTATE to binlog.000043; mysql-enum-string-set.000001
# (8.0.28) was copied while active (LOG_EVENT_BINLOG_IN_USE_F set in its FORMAT_DESCRIPTION_EVENT).
FIRST, SECOND = "binlog.000042", "binlog.000043"
NO_WAIT = FetchOptions(until_now=True, backoff_initial_s=0.0)


@pytest.fixture
def files() -> list[tuple[str, bytes]]:
    first = fixture_path("binlog", "rust_mysql_common", "transaction_compression.000001").read_bytes()
    second = fixture_path("binlog", "rust_mysql_common", "mysql-enum-string-set.000001").read_bytes()
    return [(FIRST, first), (SECOND, second)]


def closed_form(data: bytes) -> bytes:
    """The file as the server leaves it once closed: LOG_EVENT_BINLOG_IN_USE_F cleared in the FDE at offset 4."""
    out = bytearray(data)
    out[4 + 17] &= ~0x01
    return bytes(out)


def source(port: int, extra: str = ""):
    return parse_mysql_uri(f"mysql://repl@127.0.0.1:{port}/?server_id=4242&name=m8&heartbeat=1{extra}")


def test_fetch_writes_the_server_files_byte_for_byte(tmp_path, files) -> None:
    with FakeMySQL8(Script(files)) as server:
        result = fetch(source(server.port), tmp_path, NO_WAIT, sleep=lambda s: None)
    folder = tmp_path / "m8"
    assert (folder / FIRST).read_bytes() == files[0][1]
    assert (folder / SECOND).read_bytes() == closed_form(files[1][1])
    assert files[1][1][21] & 0x01  # the input really had the flag: the comparison above is not vacuous
    manifest = json.loads((folder / MANIFEST_NAME).read_text())
    assert manifest["closed"] == [FIRST]
    assert (manifest["current_file"], manifest["position"]) == (SECOND, len(files[1][1]))
    assert result.events == 5 + 21  # manifest.json histograms of the two files (fake ROTATE/FDE/heartbeat not)
    queries = [text.decode() for kind, text in server.script.log if kind == "query"]
    assert "SET @source_binlog_checksum = 'CRC32'" in queries


def test_refetch_is_a_no_op_and_appends_nothing(tmp_path, files) -> None:
    with FakeMySQL8(Script(files)) as server:
        fetch(source(server.port), tmp_path, NO_WAIT, sleep=lambda s: None)
        again = fetch(source(server.port), tmp_path, NO_WAIT, sleep=lambda s: None)
        dump = server.script.dumps[-1]
    assert again.events == 0
    assert struct.unpack_from("<I", dump, 1)[0] == len(files[1][1])  # resumed at the end of binlog.000043
    assert dump[11:].decode() == SECOND
    assert (tmp_path / "m8" / SECOND).read_bytes() == closed_form(files[1][1])


@pytest.mark.parametrize("cut_into_event", [3, 30])
def test_connection_drop_mid_event_leaves_no_partial_event(tmp_path, files, cut_into_event) -> None:
    # the stream of the first dump: fake ROTATE + FDE + events of FIRST, then fake ROTATE + FDE of SECOND ...;
    # drop the socket `cut_into_event` bytes into the frame of SECOND's 6th event
    events = split_events(files[1][1])
    stream_before = sum(4 + 1 + len(e) for _, e in split_events(files[0][1]))
    stream_before += 4 + 1 + 19 + 8 + len(FIRST) + 4  # fake rotate of FIRST
    stream_before += 4 + 1 + 19 + 8 + len(SECOND) + 4  # fake rotate of SECOND
    stream_before += sum(4 + 1 + len(e) for _, e in events[:5])
    script = Script(files, drop_after_bytes=stream_before + cut_into_event)
    with FakeMySQL8(script) as server:
        result = fetch(source(server.port), tmp_path, NO_WAIT, sleep=lambda s: None)
    assert result.reconnects == 1
    second_dump = script.dumps[1]
    assert second_dump[11:].decode() == SECOND
    assert struct.unpack_from("<I", second_dump, 1)[0] == events[5][0]  # resumed exactly at the cut event
    assert (tmp_path / "m8" / SECOND).read_bytes() == closed_form(files[1][1])
    assert (tmp_path / "m8" / FIRST).read_bytes() == files[0][1]


def test_semi_sync_acks_each_group_after_it_is_stored(tmp_path, files) -> None:
    script = Script(files, semi_sync=True)
    with FakeMySQL8(script) as server:
        fetch(source(server.port, "&semi_sync=1"), tmp_path, NO_WAIT, sleep=lambda s: None)
    expected = [(name, off + len(ev)) for name, data in files for off, ev in split_events(data) if ev[4] in (16, 4)]
    assert script.acks == expected and len(expected) == 1 + 3  # FIRST: ROTATE (its XID is in the payload); 3 XIDs
    assert (tmp_path / "m8" / SECOND).read_bytes() == closed_form(files[1][1])


def test_semi_sync_asked_but_not_offered_streams_without_acks(tmp_path, files) -> None:
    script = Script(files, semi_sync=False)  # e.g. a MySQL source without the semi-sync plugin
    with FakeMySQL8(script) as server:
        fetch(source(server.port, "&semi_sync=1"), tmp_path, NO_WAIT, sleep=lambda s: None)
    assert script.acks == []
    assert (tmp_path / "m8" / SECOND).read_bytes() == closed_form(files[1][1])


def test_gtid_dump_command_and_stream(files) -> None:
    u = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
    script = Script(files)
    with FakeMySQL8(script) as server, ReplicationClient(source(server.port)) as client:
        assert not client.connect().is_mariadb
        client.start_dump_gtid(f"{u}:1-5", non_block=True)
        items = []
        while not isinstance(item := client.read(), StreamEnd):
            items.append(item)
    gtid_set = (
        (1).to_bytes(8, "little")
        + uuid.UUID(u).bytes
        + (1).to_bytes(8, "little")
        + (1).to_bytes(8, "little")
        + (6).to_bytes(8, "little")
    )
    # flags NON_BLOCK|THROUGH_GTID = 5, server_id 4242, no file name, position 4, set size 48
    expected = (
        bytes.fromhex("1e 0500")
        + (4242).to_bytes(4, "little")
        + bytes(4)
        + (4).to_bytes(8, "little")
        + len(gtid_set).to_bytes(4, "little")
        + gtid_set
    )
    assert script.dumps == [expected]
    assert all(isinstance(i, StreamEvent) for i in items)
    assert [i.header.type_code for i in items][:2] == [4, 15]  # fake ROTATE, then the FDE
    assert items[-1].header.type_code == 41  # the heartbeat before EOF


def test_purged_binlog_is_reported_with_what_to_do(tmp_path, files) -> None:
    folder = tmp_path / "m8"
    folder.mkdir()
    (folder / MANIFEST_NAME).write_text(
        json.dumps(
            {"version": 1, "source": "x", "server_id": 1, "current_file": "binlog.000041", "position": 0, "closed": []}
        )
    )
    with FakeMySQL8(Script(files)) as server, pytest.raises(BinlogPurgedError) as info:
        fetch(source(server.port), tmp_path, NO_WAIT, sleep=lambda s: None)
    assert "no longer has binlog.000041" in str(info.value) and "binlog_expire_logs_seconds" in str(info.value)


def test_statement_format_server_is_refused(tmp_path, files) -> None:
    with FakeMySQL8(Script(files, binlog_format="MIXED")) as server, pytest.raises(ServerConfigError) as info:
        fetch(source(server.port), tmp_path, NO_WAIT, sleep=lambda s: None)
    assert "binlog_format is MIXED" in str(info.value) and "ROW" in str(info.value)
    assert not (tmp_path / "m8" / FIRST).exists()


def test_start_file_skips_older_files(tmp_path, files) -> None:
    with FakeMySQL8(Script(files)) as server:
        fetch(source(server.port), tmp_path, FetchOptions(until_now=True, start_file=SECOND), sleep=lambda s: None)
    assert sorted(p.name for p in (tmp_path / "m8").glob("binlog.*")) == [SECOND]
    assert (tmp_path / "m8" / SECOND).read_bytes() == closed_form(files[1][1])


def test_landing_of_another_server_is_refused(tmp_path, files) -> None:
    with FakeMySQL8(Script(files, server_id=1)) as server:
        fetch(source(server.port), tmp_path, NO_WAIT, sleep=lambda s: None)
    with FakeMySQL8(Script(files, server_id=2)) as other, pytest.raises(LandingError, match="server_id=1"):
        fetch(source(other.port), tmp_path, NO_WAIT, sleep=lambda s: None)


def test_reset_binlog_on_the_server_is_refused(tmp_path, files) -> None:
    with FakeMySQL8(Script(files)) as server:
        fetch(source(server.port), tmp_path, NO_WAIT, sleep=lambda s: None)
    shorter = [(FIRST, files[0][1]), (SECOND, files[1][1][:400])]  # as after RESET MASTER and new writes
    with FakeMySQL8(Script(shorter)) as server, pytest.raises(LandingError, match="RESET MASTER"):
        fetch(source(server.port), tmp_path, NO_WAIT, sleep=lambda s: None)
