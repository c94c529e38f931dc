"""``binlake snapshot`` killed (SIGKILL) half-way through a large table, rows changed, then run again: it resumes,
keeps the chunks whose key ranges did not change (their files untouched), reads the changed ranges and the
rest again, and the result is exact at the new position (the binlog replay oracle of tests/snapshot/support.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from binlake.snapshot import read_snapshots
from tests.mariadb_server import MariaDBServer
from tests.snapshot.conftest import source_uri
from tests.snapshot.support import Replay, binlog_changes, differences, snapshot_rows

pytestmark = [pytest.mark.mariadb, pytest.mark.slow]

CHUNK = 400
DDL = """
CREATE DATABASE r;
USE r;
CREATE TABLE r.a_big (id INT NOT NULL PRIMARY KEY, pad VARCHAR(40), n DOUBLE) ENGINE=InnoDB;
CREATE TABLE r.b_keyless (a INT, b TEXT) ENGINE=InnoDB;
INSERT INTO r.a_big SELECT seq * 2, REPEAT(CHAR(97 + seq % 26), 30), seq / 3 FROM seq_1_to_20000;
INSERT INTO r.b_keyless SELECT seq % 10, 'x' FROM seq_1_to_300;
GRANT SELECT ON r.* TO 'snap'@'127.0.0.1';
"""


def _command(server: MariaDBServer, landing: Path) -> list[str]:
    return [
        str(Path(sys.executable).with_name("binlake")),
        "snapshot",
        "--source",
        source_uri(server),
        "--landing",
        str(landing),
        "--chunk-rows",
        str(CHUNK),
        "--password-env",
        "SNAP_PW",
        "--include",
        "r.*",
    ]


def _manifest(landing: Path) -> dict | None:
    found = sorted(landing.glob("src/_snapshots/*/manifest.json"))
    try:
        return json.loads(found[-1].read_text()) if found else None
    except (ValueError, FileNotFoundError):  # replaced while read: ask again
        return None


def _chunks(manifest: dict | None, table: str) -> list[dict]:
    for t in (manifest or {}).get("tables", []):
        if t["table"] == table:
            return t["chunks"]
    return []


def test_sigkill_then_rerun_resumes_and_is_exact(server: MariaDBServer, tmp_path: Path) -> None:
    server.execute(DDL)
    env = {**os.environ, "SNAP_PW": "snap-pw"}
    landing = tmp_path / "landing"
    proc = subprocess.Popen(_command(server, landing), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while len(_chunks(_manifest(landing), "a_big")) < 8:
        assert proc.poll() is None, f"finished before it could be killed: {proc.communicate()}"
        assert time.monotonic() < deadline
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    killed = _manifest(landing)
    done = _chunks(killed, "a_big")
    assert killed["status"] == "running" and len(done) >= 8 and done[-1]["hi"] is not None
    [folder] = [p for p in landing.glob("src/_snapshots/*") if p.is_dir()]
    table_dir = folder / "tables" / "r__a_big"
    stat = {f: (table_dir / f).stat() for c in done for f in c["files"]}

    # after the kill: change rows in the ranges of chunks 0 (insert), 2 (update) and 4 (delete)
    hi = [c["hi"][0] for c in done]
    server.execute(
        f"INSERT INTO r.a_big VALUES ({hi[0] - 1}, 'new', 0); "
        f"UPDATE r.a_big SET pad = 'changed' WHERE id = {hi[2]}; DELETE FROM r.a_big WHERE id = {hi[4]}; "
        "INSERT INTO r.b_keyless VALUES (1, 'y')"
    )
    rerun = subprocess.run(_command(server, landing), env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    changed = {0, 2, 4}
    assert f"resumed: {len(done) - len(changed)} chunk(s) kept, {len(changed)} read again" in rerun.stdout
    assert "resuming" in rerun.stderr

    [snap] = read_snapshots(landing / "src")  # everything now belongs to the new view
    assert snap.path == folder and snap.view == 1
    final = {c["lo"] and c["lo"][0]: c for c in _chunks(_manifest(landing), "a_big")}
    for i, c in enumerate(done):
        now = final[c["lo"] and c["lo"][0]]
        if i in changed:
            assert not set(now["files"]) & set(c["files"]), i
        else:  # kept: the same files, not written again
            assert now["files"] == c["files"] and now["fingerprint"] == c["fingerprint"]
            for f in c["files"]:
                assert (table_dir / f).stat().st_mtime_ns == stat[f].st_mtime_ns
                assert (table_dir / f).stat().st_ino == stat[f].st_ino
    assert sorted(p.name for p in table_dir.iterdir()) == sorted(p.name for p in snap.table("r", "a_big").files)

    replay = Replay(snap.tables).apply(binlog_changes(server.binlog_files(), end=snap.position))
    for t in snap.tables:
        expected, actual = replay.rows(t.db, t.table), snapshot_rows(t)
        assert actual == expected, f"{t.table}: {differences(expected, actual)}"
    assert snap.table("r", "a_big").rows == 20_000
