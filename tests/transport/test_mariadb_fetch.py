"""``binlake fetch`` against a real private MariaDB server: byte-identical files while a workload runs, SIGKILL
and resume, dropped connections, and the error cases a user meets (credentials, privileges, purge, format).

The independent truth is the server's own binlog files. The one byte that may differ is in the growing file:
the server keeps LOG_EVENT_BINLOG_IN_USE_F set in its FORMAT_DESCRIPTION_EVENT until it closes the file, while
the stream (and so the copy) has it cleared, as the server's file will once closed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from binlake.transport import (
    AuthenticationError,
    BinlogPurgedError,
    FetchOptions,
    PrivilegeError,
    ServerConfigError,
    fetch,
    parse_mysql_uri,
)
from binlake.transport.landing import MANIFEST_NAME
from tests.mariadb_server import BinlogSettings, MariaDBServer, mariadb_server  # noqa: F401 (fixture)

pytestmark = [pytest.mark.mariadb, pytest.mark.slow]

BINLAKE = str(Path(sys.executable).with_name("binlake"))
PASSWORD = "repl-pw-1"
SMALL_FILES = BinlogSettings(max_binlog_size=16384)
WAIT_S = 60.0
ONCE = FetchOptions(until_now=True, sync_interval_s=0.0, max_retries=0)


def add_user(server: MariaDBServer, name: str, grants: str) -> None:
    server.execute(
        f"CREATE USER '{name}'@'127.0.0.1' IDENTIFIED BY '{PASSWORD}';"
        + (f" GRANT {grants} ON *.* TO '{name}'@'127.0.0.1';" if grants else "")
    )


def uri(server: MariaDBServer, user: str = "repl") -> str:
    return f"mysql://{user}@127.0.0.1:{server.port}/?server_id=4242&name=src&heartbeat=1"


def workload(server: MariaDBServer, rounds: int, start: int = 0, stop: threading.Event | None = None) -> None:
    conn = server.connect(raw=False)
    try:
        with conn.cursor() as cur:
            cur.execute("CREATE DATABASE IF NOT EXISTS w")
            cur.execute("CREATE TABLE IF NOT EXISTS w.t (id INT PRIMARY KEY, v VARCHAR(200), n BIGINT)")
            for i in range(start, start + rounds):
                if stop is not None and stop.is_set():
                    break
                cur.execute("BEGIN")
                cur.execute("INSERT INTO w.t VALUES (%s, %s, %s)", (i, "x" * (i % 150), i * 7))
                cur.execute("UPDATE w.t SET n = n + 1 WHERE id = %s", (i // 2,))
                if i % 5 == 0:
                    cur.execute("DELETE FROM w.t WHERE id = %s", (i // 3,))
                cur.execute("COMMIT")
                if i % 97 == 0:
                    cur.execute("FLUSH BINARY LOGS")
    finally:
        conn.close()


def assert_identical(server: MariaDBServer, folder: Path) -> None:
    """Every closed server file has a copy with the same bytes; the growing one a copy of a prefix of it, up to
    the in-use flag. (A prefix: MariaDB writes BINLOG_CHECKPOINT events asynchronously after a commit, so a fetch
    that stopped, or a --until-now that ended, after catching up can miss the last one.)"""
    files = server.binlog_files()
    manifest = json.loads((folder / MANIFEST_NAME).read_text())
    assert manifest["closed"] == [f.name for f in files[:-1]]
    for path in files:
        theirs = path.read_bytes()
        ours = (folder / path.name).read_bytes()
        if path != files[-1]:
            assert ours == theirs, path.name
        else:
            assert len(ours) <= len(theirs) and manifest["position"] == len(ours)
            theirs = theirs[: len(ours)]
            assert len(ours) == len(theirs) and ours[21] == theirs[21] & ~0x01
            assert ours[:21] + ours[22:] == theirs[:21] + theirs[22:], path.name
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith((".", "_"))) == [f.name for f in files]


def caught_up(server: MariaDBServer, folder: Path) -> bool:
    try:
        manifest = json.loads((folder / MANIFEST_NAME).read_text())
    except (OSError, ValueError):
        return False
    last = server.current_binlog()
    return manifest["current_file"] == last.name and manifest["position"] == last.stat().st_size


def landed_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.glob("binlog.*")) if folder.is_dir() else 0


def wait_for(
    condition, what: str, fetcher: subprocess.Popen[bytes] | None = None, writer: threading.Thread | None = None
) -> None:
    """Wait for ``condition``; fail at once, saying why, when the fetcher exits or the workload's thread ends."""
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if fetcher is not None and fetcher.poll() is not None:
            _, err = fetcher.communicate()
            pytest.fail(
                f"the fetcher exited ({fetcher.returncode}) while waiting for {what}: "
                f"{err.decode(errors='replace')[-2000:]}"
            )
        if time.monotonic() > deadline:
            state = "" if writer is None else f" (workload thread {'running' if writer.is_alive() else 'ended'})"
            pytest.fail(f"gave up waiting for {what} after {WAIT_S:.0f} s{state}")
        time.sleep(0.05)


def start_fetcher(server: MariaDBServer, landing: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, BINLAKE_MYSQL_PASSWORD=PASSWORD)
    return subprocess.Popen(
        [BINLAKE, "fetch", "--source", uri(server), "--landing", str(landing), "--stop-never"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@pytest.mark.parametrize("mariadb_server", [SMALL_FILES], indirect=True)
def test_follow_a_running_workload_byte_for_byte(mariadb_server: MariaDBServer, tmp_path: Path) -> None:
    server = mariadb_server
    add_user(server, "repl", "REPLICATION SLAVE, REPLICATION CLIENT")
    fetcher = start_fetcher(server, tmp_path)
    try:
        writer = threading.Thread(target=workload, args=(server, 400))
        writer.start()
        # drop the replica's connection twice while the workload runs: it must reconnect and carry on
        for _ in range(2):
            wait_for(
                lambda: bool(
                    server.execute(
                        "SELECT id FROM information_schema.processlist WHERE command LIKE 'Binlog Dump%'"
                    ).split()
                ),
                "a dump thread",
            )
            time.sleep(0.3)
            for thread_id in server.execute(
                "SELECT id FROM information_schema.processlist WHERE command LIKE 'Binlog Dump%'"
            ).split():
                server.execute(f"KILL {thread_id}")
        writer.join()
        wait_for(lambda: caught_up(server, tmp_path / "src"), "the fetcher to catch up")
    finally:
        fetcher.send_signal(signal.SIGTERM)
        out, err = fetcher.communicate(timeout=WAIT_S)
    assert fetcher.returncode == 0, err.decode()
    assert b"reconnect" in out + err
    assert len(server.binlog_files()) > 5
    assert_identical(server, tmp_path / "src")
    assert PASSWORD.encode() not in out + err


@pytest.mark.parametrize("mariadb_server", [SMALL_FILES], indirect=True)
def test_sigkill_mid_stream_then_resume(mariadb_server: MariaDBServer, tmp_path: Path) -> None:
    server = mariadb_server
    add_user(server, "repl", "REPLICATION SLAVE, REPLICATION CLIENT")
    folder = tmp_path / "src"
    stop = threading.Event()
    writer = threading.Thread(target=workload, args=(server, 100_000), kwargs={"stop": stop})
    writer.start()
    stored, torn = 0, False
    try:
        for kill in range(3):
            fetcher = start_fetcher(server, tmp_path)
            wait_for(lambda: landed_bytes(folder) > stored + 20000, "the fetcher to store more events", fetcher, writer)
            fetcher.send_signal(signal.SIGKILL)
            _, err = fetcher.communicate(timeout=WAIT_S)
            assert fetcher.returncode == -signal.SIGKILL
            if torn:
                assert b"cut 36 bytes after the last whole event" in err, err
            stored = landed_bytes(folder)
            if kill == 1:  # a torn write: a partial event after the last whole one must be cut, never kept
                current = folder / json.loads((folder / MANIFEST_NAME).read_text())["current_file"]
                if current.exists():  # (not yet when killed right after a rotation)
                    with open(current, "ab") as f:
                        f.write(server.current_binlog().read_bytes()[4:40])
                    torn = True
    finally:
        stop.set()
        writer.join()
    fetcher = start_fetcher(server, tmp_path)
    try:
        wait_for(lambda: caught_up(server, folder), "the restarted fetcher to catch up")
    finally:
        fetcher.send_signal(signal.SIGTERM)
        fetcher.communicate(timeout=WAIT_S)
    assert_identical(server, folder)


@pytest.mark.parametrize(
    "mariadb_server", [BinlogSettings(), BinlogSettings(checksum="NONE")], indirect=True, ids=["crc32", "no-checksum"]
)
def test_until_now_then_resume_appends_only_new_events(
    mariadb_server: MariaDBServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = mariadb_server
    add_user(server, "repl", "REPLICATION SLAVE, REPLICATION CLIENT")
    monkeypatch.setenv("BINLAKE_TEST_PW", PASSWORD)
    src = parse_mysql_uri(uri(server), password_env="BINLAKE_TEST_PW")
    workload(server, 30)
    first = fetch(src, tmp_path, ONCE)
    assert_identical(server, tmp_path / "src")
    before = {p.name: p.read_bytes() for p in (tmp_path / "src").iterdir() if p.name.startswith("binlog.")}
    workload(server, 30, start=30)
    second = fetch(src, tmp_path, ONCE)
    assert_identical(server, tmp_path / "src")
    for name, data in before.items():  # earlier bytes never rewritten (except the in-use flag at 21)
        now = (tmp_path / "src" / name).read_bytes()
        assert now[:21] + now[22 : len(data)] == data[:21] + data[22:]
    assert first.events > 0 and second.events > 0


def test_wrong_password_says_what_to_check(mariadb_server: MariaDBServer, tmp_path: Path) -> None:
    add_user(mariadb_server, "repl", "REPLICATION SLAVE, REPLICATION CLIENT")
    env = dict(os.environ, BINLAKE_MYSQL_PASSWORD="not-the-password")
    run = subprocess.run(
        [BINLAKE, "fetch", "--source", uri(mariadb_server), "--landing", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == AuthenticationError.exit_code
    assert "refused the login" in run.stderr and "BINLAKE_MYSQL_PASSWORD" in run.stderr
    assert "not-the-password" not in run.stderr + run.stdout


@pytest.mark.parametrize(
    "grants, missing",
    [
        ("REPLICATION CLIENT", "REPLICATION SLAVE"),
        ("REPLICATION SLAVE", "REPLICATION CLIENT"),
        ("", "REPLICATION CLIENT"),
    ],
)
def test_missing_privileges_are_named(
    mariadb_server: MariaDBServer, tmp_path: Path, grants: str, missing: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_user(mariadb_server, "weak", grants)
    monkeypatch.setenv("BINLAKE_TEST_PW", PASSWORD)
    src = parse_mysql_uri(uri(mariadb_server, "weak"), password_env="BINLAKE_TEST_PW")
    with pytest.raises(PrivilegeError) as info:
        fetch(src, tmp_path, ONCE)
    assert f"lacks {missing}" in str(info.value) and "GRANT REPLICATION SLAVE, REPLICATION CLIENT" in str(info.value)


def test_purged_binlogs_stop_the_fetch(
    mariadb_server: MariaDBServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = mariadb_server
    add_user(server, "repl", "REPLICATION SLAVE, REPLICATION CLIENT")
    monkeypatch.setenv("BINLAKE_TEST_PW", PASSWORD)
    src = parse_mysql_uri(uri(server), password_env="BINLAKE_TEST_PW")
    workload(server, 5)
    fetch(src, tmp_path, ONCE)
    server.execute("FLUSH BINARY LOGS; INSERT INTO w.t VALUES (1000, 'a', 1); FLUSH BINARY LOGS")
    first = json.loads((tmp_path / "src" / MANIFEST_NAME).read_text())["current_file"]  # where the copy goes on

    def purged() -> bool:  # MariaDB keeps a file until its binlog checkpoint is written: retry the PURGE
        server.execute(f"PURGE BINARY LOGS TO '{server.current_binlog().name}'")
        return first not in [f.name for f in server.binlog_files()]

    wait_for(purged, "PURGE BINARY LOGS")
    with pytest.raises(BinlogPurgedError) as info:
        fetch(src, tmp_path, ONCE)
    assert "no longer has" in str(info.value) and "move this landing folder away" in str(info.value)


def test_statement_format_is_refused(
    mariadb_server: MariaDBServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_user(mariadb_server, "repl", "REPLICATION SLAVE, REPLICATION CLIENT")
    mariadb_server.execute("SET GLOBAL binlog_format = 'MIXED'")
    monkeypatch.setenv("BINLAKE_TEST_PW", PASSWORD)
    src = parse_mysql_uri(uri(mariadb_server), password_env="BINLAKE_TEST_PW")
    with pytest.raises(ServerConfigError, match="binlog_format is MIXED"):
        fetch(src, tmp_path, ONCE)
    assert fetch(src, tmp_path, FetchOptions(until_now=True, require_row_format=False, max_retries=0)).events > 0


def test_semi_sync_replica_acks_real_server(mariadb_server: MariaDBServer, tmp_path: Path) -> None:
    server = mariadb_server
    add_user(server, "repl", "REPLICATION SLAVE, REPLICATION CLIENT")
    server.execute("SET GLOBAL rpl_semi_sync_master_enabled = 1; SET GLOBAL rpl_semi_sync_master_timeout = 60000")
    env = dict(os.environ, BINLAKE_MYSQL_PASSWORD=PASSWORD)
    fetcher = subprocess.Popen(
        [BINLAKE, "fetch", "--source", uri(server) + "&semi_sync=1", "--landing", str(tmp_path), "--stop-never"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(
            lambda: "1" in server.execute("SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_master_clients'"),
            "the semi-sync replica to register",
        )
        workload(server, 50)
        wait_for(lambda: caught_up(server, tmp_path / "src"), "the fetcher to catch up")
        status = dict(
            line.split("\t")
            for line in server.execute("SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_master_%_tx'").splitlines()
        )
    finally:
        fetcher.send_signal(signal.SIGTERM)
        _, err = fetcher.communicate(timeout=WAIT_S)
    # every commit was acknowledged by binlake (none fell back to asynchronous after a timeout)
    assert int(status["Rpl_semi_sync_master_yes_tx"]) >= 50 and status["Rpl_semi_sync_master_no_tx"] == "0"
    assert b"reconnect" not in err, err.decode()
    assert_identical(server, tmp_path / "src")


def test_mariadb_gtid_mode_starts_after_the_given_position(
    mariadb_server: MariaDBServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from binlake.transport import ReplicationClient, StreamEnd

    server = mariadb_server
    add_user(server, "repl", "REPLICATION SLAVE, REPLICATION CLIENT")
    workload(server, 10)
    position = server.execute("SELECT @@gtid_binlog_pos").strip()  # e.g. 0-1-12
    domain, server_id, seq = (int(x) for x in position.split("-"))
    workload(server, 5, start=10)
    end = int(server.execute("SELECT @@gtid_binlog_pos").strip().split("-")[2])
    monkeypatch.setenv("BINLAKE_TEST_PW", PASSWORD)
    with ReplicationClient(parse_mysql_uri(uri(server), password_env="BINLAKE_TEST_PW")) as client:
        assert client.connect().is_mariadb
        client.start_dump_gtid(position, non_block=True)
        gtid_seqs = []
        while not isinstance(item := client.read(), StreamEnd):
            if item.header.type_code == 162:  # MariaDB GTID_EVENT: seq_no(8), domain_id(4), flags
                gtid_seqs.append(int.from_bytes(item.raw[19:27], "little"))
    assert gtid_seqs == list(range(seq + 1, end + 1)) and len(gtid_seqs) >= 5 and domain == 0 and server_id == 1


def test_open_binlog_over_mysql_uri_reads_the_server_file(
    mariadb_server: MariaDBServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from binlake.binlog import open_binlog
    from binlake.transport import open_mysql_binlog

    server = mariadb_server
    add_user(server, "repl", "REPLICATION SLAVE, REPLICATION CLIENT")
    workload(server, 20)
    server.flush_logs()
    closed = server.binlog_files()[-2]
    monkeypatch.setenv("BINLAKE_MYSQL_PASSWORD", PASSWORD)
    live = f"mysql://repl@127.0.0.1:{server.port}/{closed.name}?server_id=4243"
    name, stream = open_mysql_binlog(live)
    with stream:
        assert stream.read() == closed.read_bytes() and name.endswith(closed.name)
    from_server = [(e.header.type_code, e.header.log_pos) for e in open_binlog(live)]
    from_file = [(e.header.type_code, e.header.log_pos) for e in open_binlog(closed)]
    assert from_server == from_file and len(from_file) > 20


def test_server_restart_closes_the_file_and_the_fetcher_follows(mariadb_server: MariaDBServer, tmp_path: Path) -> None:
    """A clean server restart ends the file with STOP_EVENT (no ROTATE) and starts a new one; the fetcher keeps
    reconnecting with backoff while the server is down, then marks the old file closed and follows."""
    server = mariadb_server
    add_user(server, "repl", "REPLICATION SLAVE, REPLICATION CLIENT")
    fetcher = start_fetcher(server, tmp_path)
    try:
        workload(server, 20)
        wait_for(lambda: caught_up(server, tmp_path / "src"), "the fetcher to catch up")
        before_restart = server.current_binlog().name
        port = server.port
        server.stop()
        # start the same datadir again on the same port (the harness would pick a new port)
        server.port = port
        server.process = subprocess.Popen(
            server._server_args(["--user=root"] if os.geteuid() == 0 else []),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        assert server._wait_ready(), server._log_tail()
        workload(server, 20, start=20)
        wait_for(lambda: caught_up(server, tmp_path / "src"), "the fetcher to catch up after the restart")
    finally:
        fetcher.send_signal(signal.SIGTERM)
        _, err = fetcher.communicate(timeout=WAIT_S)
    assert b"reconnecting" in err
    assert before_restart in json.loads((tmp_path / "src" / MANIFEST_NAME).read_text())["closed"]
    last_event = (tmp_path / "src" / before_restart).read_bytes()[-23:]  # STOP_EVENT: header + CRC32
    assert last_event[4] == 3 and int.from_bytes(last_event[9:13], "little") == 23
    assert_identical(server, tmp_path / "src")


def test_required_tls_on_a_server_without_it_is_a_clear_error(
    mariadb_server: MariaDBServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_user(mariadb_server, "repl", "REPLICATION SLAVE, REPLICATION CLIENT")
    monkeypatch.setenv("BINLAKE_TEST_PW", PASSWORD)
    src = parse_mysql_uri(uri(mariadb_server) + "&ssl=1", password_env="BINLAKE_TEST_PW")
    with pytest.raises(ServerConfigError, match="TLS failed"):
        fetch(src, tmp_path, ONCE)
