"""Starting from a snapshot, exact at the seam, against a real MariaDB server: tables loaded, ``RESET MASTER`` (the
binlogs lose that history), a writer changing rows throughout ``binlake snapshot``, more changes, ``binlake
fetch``, ``binlake run``: silver equals the server's final ``SELECT *`` as a bag of rows, for a table with a
primary key and one without. The first snapshot is killed (SIGKILL) half-way and rerun: it resumes. A re-snapshot
later replaces the tables and moves their seam; the load after it still equals ``SELECT *``."""

from __future__ import annotations

import contextlib
import io
import json
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from binlake.cli import main
from tests.e2e.lake_compare import silver_rows
from tests.mariadb_server import MariaDBServer, require_mariadb

pytestmark = [pytest.mark.mariadb, pytest.mark.spark, pytest.mark.slow]

SETUP = """
CREATE DATABASE shop;
CREATE TABLE shop.items (id INT PRIMARY KEY, name VARCHAR(20), price DECIMAL(8,2), made DATE, seen DATETIME(3));
CREATE TABLE shop.log (who VARCHAR(10), n INT);
CREATE USER 'snap'@'127.0.0.1' IDENTIFIED BY 'pw';
GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'snap'@'127.0.0.1';
"""
TABLES = ("items", "log")
IDS = 60_000  # ids of items rows: every third one exists at first


def kill_half_way(command: list[str], landing: Path) -> None:
    """Run ``binlake snapshot`` as a process and SIGKILL it once its manifest records 3 chunks of items."""
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while True:
        assert proc.poll() is None, f"the snapshot finished before it could be killed: {proc.stderr.read()}"
        assert time.monotonic() < deadline, "the snapshot made no progress"
        try:
            [manifest] = [json.loads(p.read_text()) for p in landing.glob("src/_snapshots/*/manifest.json")]
        except ValueError:  # not written yet, or replaced while read
            manifest = {}
        if any(t["table"] == "items" and len(t["chunks"]) >= 3 for t in manifest.get("tables", [])):
            break
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def change(cur, rng: random.Random, n: int) -> None:
    """One random statement: insert, update or delete on either table (equal rows in `log` on purpose)."""
    kind = rng.choice(("insert", "update", "delete", "log", "log_delete"))
    if kind == "insert":
        cur.execute(
            "INSERT IGNORE INTO shop.items VALUES (%s, %s, %s, %s, %s)",
            (rng.randrange(IDS), f"i{n}", f"{rng.randrange(10**6) / 100:.2f}", "2024-02-29", "2024-03-01 10:00:00.123"),
        )
    elif kind == "update":
        cur.execute("UPDATE shop.items SET name = %s, price = price + 1 WHERE id = %s", (f"u{n}", rng.randrange(IDS)))
    elif kind == "delete":
        cur.execute("DELETE FROM shop.items WHERE id = %s", (rng.randrange(IDS),))
    elif kind == "log":
        cur.execute("INSERT INTO shop.log VALUES (%s, %s)", (rng.choice(("ann", "bo")), rng.randrange(3)))
    else:
        cur.execute(
            "DELETE FROM shop.log WHERE who = %s AND n = %s LIMIT 1", (rng.choice(("ann", "bo")), rng.randrange(3))
        )


def select_all(server: MariaDBServer, table: str) -> Counter:
    conn = server.connect("shop", raw=False)
    try:
        with conn.cursor() as cur:
            cur.execute(f"SELECT * FROM {table}")
            names = [d[0] for d in cur.description]
            return Counter(json.dumps(dict(zip(names, r)), default=str, sort_keys=True) for r in cur.fetchall())
    finally:
        conn.close()


def silver(lake: Path, table: str) -> Counter:
    return Counter(json.dumps(r, default=str, sort_keys=True) for r in silver_rows(lake, "shop", table))


def fetch_and_run(uri: str, landing: Path, lake: Path) -> dict:
    """``binlake fetch`` of the server's binlogs, then ``binlake run`` of the landing folder: the run's summary."""
    code, _, err = cli("fetch", "--source", uri, "--landing", str(landing))
    assert code == 0, err
    code, out, err = cli("run", "--landing", str(landing), "--lake", str(lake), "--engine", "rust", "--json")
    assert code == 0, err
    [summary] = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return summary


def test_snapshot_then_binlogs_equal_select_across_the_seam(tmp_path: Path, monkeypatch) -> None:
    require_mariadb()
    monkeypatch.setenv("BINLAKE_MYSQL_PASSWORD", "pw")
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    with MariaDBServer(tmp_path / "server") as server:
        server.execute(SETUP)
        rng = random.Random(7)
        conn = server.connect(raw=False)
        conn.autocommit(True)
        cur = conn.cursor()
        cur.execute(
            f"INSERT INTO shop.items SELECT seq * 3, CONCAT('n', seq), seq % 1000 + 0.25, '2023-12-31', "
            f"'2024-01-01 00:00:00.5' FROM shop.seq_0_to_{IDS // 3 - 1}"
        )
        cur.executemany("INSERT INTO shop.log VALUES (%s, %s)", [("ann", i % 3) for i in range(60)])
        server.execute("RESET MASTER")  # the binlogs hold nothing of what is in the tables now

        stop = threading.Event()

        def writer() -> None:
            wconn = server.connect(raw=False)
            wconn.autocommit(True)
            wcur = wconn.cursor()
            wrng, n = random.Random(11), 0
            while not stop.is_set():
                change(wcur, wrng, n)
                n += 1
            wconn.close()

        uri = f"mysql://snap@127.0.0.1:{server.port}/?server_id=4301&name=src"
        thread = threading.Thread(target=writer)
        thread.start()
        snapshot = [
            "snapshot",
            "--source",
            uri,
            "--landing",
            str(landing),
            "--include",
            "shop.*",
            "--chunk-rows",
            "500",
        ]
        try:
            kill_half_way([str(Path(sys.executable).with_name("binlake")), *snapshot], landing)
            code, out, err = cli(*snapshot)  # resumes the killed snapshot
            assert "resumed:" in out + err, out + err
        finally:
            stop.set()
            thread.join()
        assert code == 0, err
        for n in range(200):
            change(cur, rng, n)
        summary = fetch_and_run(uri, landing, lake)
        assert sorted(summary["seeded_tables"]) == ["shop.items", "shop.log"]
        assert summary["changes_applied"] > 0 and summary["quarantined"] == 0
        for table in TABLES:
            assert silver(lake, table) == select_all(server, table), table

        # a re-snapshot (no writer) replaces both tables at a later seam; changes after it apply on top
        for n in range(200, 300):
            change(cur, rng, n)
        code, _, err = cli("snapshot", "--source", uri, "--landing", str(landing), "--include", "shop.*")
        assert code == 0, err
        for n in range(300, 400):
            change(cur, rng, n)
        summary = fetch_and_run(uri, landing, lake)
        assert sorted(summary["seeded_tables"]) == ["shop.items", "shop.log"] and summary["quarantined"] == 0
        for table in TABLES:
            assert silver(lake, table) == select_all(server, table), table
        conn.close()
