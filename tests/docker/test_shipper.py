"""docker/shipper/ship_binlogs.py: only closed binlog files reach the landing folder, whole and byte-identical to the
server's; SDI snapshots equal the records stored in the tablespace."""

from __future__ import annotations

import errno
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from binlake.transport.landing import MANIFEST_NAME, Manifest
from tests.docker.tools import DOCKER
from tests.mariadb_server import mariadb_server  # noqa: F401 - fixture
from tests.support import fixture_path

SCRIPT = DOCKER / "shipper" / "ship_binlogs.py"


def load_shipper():
    spec = importlib.util.spec_from_file_location("ship_binlogs", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ship = load_shipper()


def test_closed_files_come_from_the_fetchers_manifest(tmp_path: Path) -> None:
    assert ship.closed_files(tmp_path) == []  # before the fetcher's first manifest
    manifest = Manifest(
        source="mysql://repl@db:3306",
        server_id=1,
        current_file="binlog.000003",
        position=900,
        closed=["binlog.000001", "binlog.000002"],
    )
    (tmp_path / MANIFEST_NAME).write_text(manifest.to_json())
    assert ship.closed_files(tmp_path) == ["binlog.000001", "binlog.000002"]
    (tmp_path / MANIFEST_NAME).write_text("{not json")
    assert ship.closed_files(tmp_path) == []


def test_publish_links_a_closed_file_once(tmp_path: Path) -> None:
    staging, landing = tmp_path / "staging", tmp_path / "landing"
    staging.mkdir()
    landing.mkdir()
    src = staging / "binlog.000001"
    src.write_bytes(b"\xfebin" + bytes(range(256)))
    assert ship.publish(src, landing) is True
    assert (landing / src.name).read_bytes() == src.read_bytes()
    assert os.stat(landing / src.name).st_ino == os.stat(src).st_ino  # a hard link: no copy, no torn file
    assert ship.publish(src, landing) is False


def test_publish_copies_then_renames_across_filesystems(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    staging, landing = tmp_path / "staging", tmp_path / "landing"
    staging.mkdir()
    landing.mkdir()
    src = staging / "binlog.000007"
    src.write_bytes(b"\xfebin" * 1000)

    def cross_device(a, b):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(ship.os, "link", cross_device)
    assert ship.publish(src, landing) is True
    assert sorted(p.name for p in landing.iterdir()) == ["binlog.000007"]  # no temporary file left
    assert (landing / "binlog.000007").read_bytes() == src.read_bytes()


@pytest.mark.slow  # two `binlake sdi` processes
def test_sdi_snapshot_holds_the_tablespaces_records(tmp_path: Path) -> None:
    ibd = fixture_path("sdi", "ibd", "innodb_ruby", "8.0_sakila_actor.ibd")
    datadir = tmp_path / "datadir"
    (datadir / "sakila").mkdir(parents=True)
    (datadir / "sakila" / "actor.ibd").symlink_to(ibd)
    out = tmp_path / "sdi"
    assert ship.snapshot_sdi(datadir, ["sakila"], out) == 1
    records = json.loads((out / "sakila" / "actor.json").read_text())
    assert records[0] == "ibd2sdi"
    extracted = fixture_path("sdi", "extracted")
    for record in records[1:]:
        truth = extracted / f"innodb_ruby__8.0_sakila_actor.type{record['type']}.id{record['id']}.json"
        assert record["object"] == json.loads(truth.read_text())
    assert {(r["type"], r["id"]) for r in records[1:]} == {(1, 364), (2, 7)}
    assert ship.snapshot_sdi(datadir, ["sakila"], out) == 0  # unchanged: not rewritten


def test_the_source_uri_needs_a_replica_server_id() -> None:
    with pytest.raises(SystemExit):
        ship.parse_args(["--source", "mysql://repl@db:3306/", "--name", "s", "--staging", "a", "--landing", "b"])


@pytest.mark.slow
@pytest.mark.mariadb
def test_ships_closed_files_byte_identical_from_a_real_server(mariadb_server, tmp_path: Path) -> None:  # noqa: F811
    server = mariadb_server
    server.execute(
        "CREATE USER 'repl'@'127.0.0.1' IDENTIFIED BY 'pw';"
        " GRANT REPLICATION SLAVE, BINLOG MONITOR, RELOAD ON *.* TO 'repl'@'127.0.0.1';"
        " CREATE DATABASE shop; CREATE TABLE shop.t (id INT PRIMARY KEY, doc LONGTEXT)"
    )
    staging, landing = tmp_path / "volume" / "staging", tmp_path / "volume" / "binlogs"
    argv = [
        sys.executable,
        str(SCRIPT),
        "--source",
        f"mysql://repl@127.0.0.1:{server.port}/?server_id=4242",
        "--name",
        "src",
        "--staging",
        str(staging),
        "--landing",
        str(landing),
        "--poll",
        "0.2",
        "--rotate",
        "1",
    ]
    shipper = subprocess.Popen(
        argv,
        env={**os.environ, "BINLAKE_MYSQL_PASSWORD": "pw"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60  # a guard against hanging, not a speed assertion
        n = 0
        while time.monotonic() < deadline and len(list((landing / "src").glob("binlog.*"))) < 3:
            n += 1
            server.execute(f"INSERT INTO shop.t VALUES ({n}, REPEAT('x', {n}))")
            time.sleep(0.2)
    finally:
        shipper.send_signal(signal.SIGTERM)
        output = shipper.communicate(timeout=60)[0]
    shipped = sorted((landing / "src").iterdir())
    assert len(shipped) >= 3, output
    current = server.current_binlog().name
    server_files = {p.name: p for p in server.binlog_files()}
    for path in shipped:
        assert path.name != current, "the growing file must not reach the landing folder"
        assert path.read_bytes() == server_files[path.name].read_bytes(), path.name
    assert all(p.name.startswith("binlog.") for p in shipped)  # nothing but closed binlogs
