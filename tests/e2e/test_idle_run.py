"""A ``binlake run`` with nothing new to load (every landed file ingested, every change applied) reports so without
starting Spark (binlake.lake.idle), changes no table; new binlogs, or a gap in them, still go through the jobs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from deltalake import DeltaTable

from binlake.cli import main
from tests.e2e.runner import binlake_run, delta_versions
from tests.mariadb_server import BinlogSettings, MariaDBServer, require_mariadb

pytestmark = [pytest.mark.mariadb, pytest.mark.spark, pytest.mark.slow]


def _land(server: MariaDBServer, folder: Path, skip: tuple[str, ...] = ()) -> list[str]:
    server.flush_logs()
    folder.mkdir(parents=True, exist_ok=True)
    for f in server.binlog_files():
        if f.name not in skip:
            shutil.copy2(f, folder / f.name)
    return sorted(p.name for p in folder.iterdir())


def _no_spark(*args: object, **kwargs: object) -> None:
    raise AssertionError("binlake run started Spark for a run with nothing to load")


def test_a_run_with_nothing_new_does_not_start_spark(spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_mariadb()
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    with MariaDBServer(tmp_path / "server", BinlogSettings()) as server:
        server.execute("CREATE DATABASE shop; CREATE TABLE shop.t (id INT PRIMARY KEY, v VARCHAR(20))")
        server.execute(
            "INSERT INTO shop.t VALUES (1, 'a'), (2, 'b'), (3, 'c'); UPDATE t SET v = 'z' WHERE id = 1", "shop"
        )
        files = _land(server, landing / "src")
        [first] = binlake_run(landing, lake)
        assert first["files"] == len(files) and first["changes_applied"] == 4
        versions = delta_versions(lake)

        monkeypatch.setattr("binlake.lake.session.build_session", _no_spark)
        [again] = binlake_run(landing, lake)
        assert (again["files"], again["files_skipped"], again["changes_applied"]) == (0, len(files), 0)
        assert again["engine"] == first["engine"] and again["source"] == "src"
        assert delta_versions(lake) == versions  # nothing written, no run recorded

        # new binlogs: the jobs run (Spark starts) and apply them
        server.execute("DELETE FROM t WHERE id = 2", "shop")
        _land(server, landing / "src")
        with pytest.raises(AssertionError, match="started Spark"):
            binlake_run(landing, lake)
        monkeypatch.undo()
        [third] = binlake_run(landing, lake)
        assert third["changes_applied"] == 1
        rows = DeltaTable(str(lake / "silver" / "shop__t")).to_pyarrow_table(columns=["id", "v"]).to_pylist()
        assert sorted((r["id"], r["v"]) for r in rows) == [(1, "z"), (3, "c")]

        # a gap (a whole file missing between the ingested ones and newer ones): not idle, the jobs stop the
        # source and record why in meta.run_metrics
        known = {p.name for p in (landing / "src").iterdir()}
        for i in (4, 5, 6):
            server.execute(f"INSERT INTO t VALUES ({i}, 'n')", "shop")
            server.flush_logs()
        missing = next(f.name for f in server.binlog_files() if f.name not in known)
        _land(server, landing / "src", skip=(missing,))
        code = main(["run", "--landing", str(landing), "--lake", str(lake), "--json"])
        assert code != 0
    metrics = DeltaTable(str(lake / "meta" / "run_metrics")).to_pyarrow_table(columns=["result"]).to_pylist()
    assert {"result": "gap"} in metrics


def test_the_idle_check_does_not_plan_chunks(spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Deciding whether a run has anything to load does not scan a new file's event headers for chunk cuts (the
    run's background thread does, for the ingest's plan): a 3 MB binlog, 1 MB chunks, Spark kept from starting. The
    look-ahead's new bytes make the run short (a JVM compiling with C1 only) up to SHORT_RUN_BYTES, not beyond."""
    import threading

    import binlake.lake.idle as idle
    import binlake.pipeline.split as split

    require_mariadb()
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    scans: list[str] = []
    real = split.transaction_starts
    monkeypatch.setattr(
        split, "transaction_starts", lambda path, *a: scans.append(threading.current_thread().name) or real(path, *a)
    )
    short_runs: list[bool] = []

    def no_spark(*args: object, short_run: bool = False, **kwargs: object) -> None:
        short_runs.append(short_run)
        _no_spark()

    monkeypatch.setattr("binlake.lake.session.build_session", no_spark)
    with MariaDBServer(tmp_path / "server", BinlogSettings()) as server:
        server.execute("CREATE DATABASE shop; CREATE TABLE shop.t (id INT PRIMARY KEY, v MEDIUMTEXT)")
        for i in range(30):
            server.execute(f"INSERT INTO shop.t VALUES ({i}, REPEAT('x', 100000))", "shop")
        _land(server, landing / "src")
    assert max(p.stat().st_size for p in (landing / "src").iterdir()) > 3_000_000
    with pytest.raises(AssertionError, match="started Spark"):
        binlake_run(landing, lake, "--chunk-mb", "1")
    assert "MainThread" not in scans  # (the run scans ahead in its own thread: hash_ahead)
    assert len(real(str(max((landing / "src").iterdir(), key=lambda p: p.stat().st_size)))) >= 30  # what it skipped
    landed = sum(p.stat().st_size for p in (landing / "src").iterdir())
    monkeypatch.setattr(idle, "SHORT_RUN_BYTES", landed - 1)
    with pytest.raises(AssertionError, match="started Spark"):
        binlake_run(landing, lake)
    assert short_runs == [True, False]


def test_changes_waiting_in_bronze_count_toward_a_short_run(spark, tmp_path: Path, monkeypatch) -> None:
    """Changes an earlier run ingested but did not apply (after its cutoff: a file spanning midnight) are work the
    look-ahead counts (PENDING_ROW_BYTES per bronze row after the checkpoint): a small number makes the run short,
    more than SHORT_RUN_BYTES does not; either way the run applies them."""
    import datetime as dt

    import binlake.lake.idle as idle
    from binlake.lake import session

    require_mariadb()
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    with MariaDBServer(tmp_path / "server", BinlogSettings()) as server:
        server.execute("CREATE DATABASE shop; CREATE TABLE shop.t (id INT PRIMARY KEY, v VARCHAR(20))")
        server.execute("INSERT INTO shop.t VALUES (1, 'a'), (2, 'b'), (3, 'c'); DELETE FROM t WHERE id = 2", "shop")
        _land(server, landing / "src")
    yesterday = (dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=1)).date().isoformat()
    [first] = binlake_run(landing, lake, "--end", yesterday)  # ingests every file, applies nothing
    assert first["changes_applied"] == 0
    bronze = DeltaTable(str(lake / "bronze" / "binlog_events")).to_pyarrow_table(columns=["op"]).to_pylist()
    waiting = len(bronze)  # the checkpoint is still before every row
    assert sum(r["op"] in ("insert", "update", "delete") for r in bronze) == 4

    seen, short_runs = [], []
    real_look_ahead, real_session = idle.look_ahead, session.build_session
    monkeypatch.setattr(idle, "look_ahead", lambda *a: seen.append(real_look_ahead(*a)) or seen[-1])

    def spy(*args, short_run: bool = False, **kwargs):
        short_runs.append(short_run)
        return real_session(*args, short_run=short_run, **kwargs)

    monkeypatch.setattr(session, "build_session", spy)
    shutil.copytree(lake, tmp_path / "lake-before")
    [second] = binlake_run(landing, lake)
    assert second["changes_applied"] == 4
    assert [(a.report, a.new_bytes) for a in seen] == [(None, waiting * idle.PENDING_ROW_BYTES)]
    assert short_runs == [True]

    monkeypatch.setattr(idle, "SHORT_RUN_BYTES", waiting * idle.PENDING_ROW_BYTES - 1)
    [third] = binlake_run(landing, tmp_path / "lake-before")
    assert third["changes_applied"] == 4 and short_runs == [True, False]


def test_new_files_are_hashed_and_scanned_once_while_the_jvm_starts(spark, tmp_path: Path, monkeypatch) -> None:
    """The look-ahead plans new files by their size; the run hashes each once and scans its event headers for
    chunk cuts once, in the background thread it starts before its JVM (hash_ahead), and the ingest finds both
    done rather than reading the files again: 1 MB chunks of 3 MB binlogs, every change applied."""
    import hashlib
    import threading

    import binlake.lake.idle as idle
    import binlake.pipeline.split as split
    from binlake.pipeline import identity

    require_mariadb()
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    with MariaDBServer(tmp_path / "server", BinlogSettings()) as server:
        server.execute("CREATE DATABASE shop; CREATE TABLE shop.t (id INT PRIMARY KEY, v MEDIUMTEXT)")
        for i in range(30):
            server.execute(f"INSERT INTO shop.t VALUES ({i}, REPEAT('x', 100000))", "shop")
        server.execute("DELETE FROM t WHERE id < 5", "shop")
        files = _land(server, landing / "src")
    big = [p.name for p in (landing / "src").iterdir() if p.stat().st_size > 1 << 20]
    assert big
    hashed, scanned, sha256, seen = [], [], hashlib.sha256, []

    def thread() -> str:
        return threading.current_thread().name

    monkeypatch.setattr(identity.hashlib, "sha256", lambda: hashed.append(thread()) or sha256())
    real_scan = split.scan_events
    monkeypatch.setattr(
        split, "scan_events", lambda path, **kw: scanned.append((thread(), path)) or real_scan(path, **kw)
    )
    real_look_ahead = idle.look_ahead
    monkeypatch.setattr(idle, "look_ahead", lambda *a: seen.append(real_look_ahead(*a)) or seen[-1])
    [run] = binlake_run(landing, lake, "--chunk-mb", "1")
    assert run["files"] == len(files) and run["changes_applied"] == 35
    assert sorted(Path(p).name for p in seen[0].unhashed) == files
    assert hashed == ["binlake-hash-ahead"] * len(files)
    assert sorted(Path(p).name for name, p in scanned) == files and {name for name, _ in scanned} == {
        "binlake-hash-ahead"
    }
    bronze = DeltaTable(str(lake / "bronze" / "binlog_events")).to_pyarrow_table(
        columns=["binlog_file", "op", "file_sha256"]
    )
    ends = {r["binlog_file"]: r["file_sha256"] for r in bronze.to_pylist() if r["op"] == "file_end"}
    assert ends == {f: sha256((landing / "src" / f).read_bytes()).hexdigest() for f in files}
    rows = DeltaTable(str(lake / "silver" / "shop__t")).to_pyarrow_table(columns=["id"]).to_pylist()
    assert sorted(r["id"] for r in rows) == list(range(5, 30))
