"""Issue 29: a source that is a replication cluster follows a failover by GTID. A real MariaDB primary and a GTID
replica (log_slave_updates, gtid_strict_mode): the source loads from the primary, the primary dies after the
replica received part of the latest changes, the replica is promoted and written to, the source reads it, and
silver equals the new primary's tables with every GTID in bronze once; a replica whose binlogs lack a GTID range
stops the source with the typed line and nothing of it applied."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest
from deltalake import DeltaTable

from binlake.cli import main
from tests.e2e.lake_compare import silver_rows
from tests.e2e.runner import binlake_run
from tests.mariadb_server import BinlogSettings, MariaDBServer, require_mariadb

pytestmark = [pytest.mark.mariadb, pytest.mark.spark, pytest.mark.slow]

SOURCE = "shop"
DB = "shop"
TABLES = ("orders", "items")
SETTINGS = dict(log_slave_updates=True, extra_args=("--gtid-strict-mode=ON",))


def _select(server: MariaDBServer, table: str) -> list[tuple]:
    out = server.execute(f"SELECT * FROM {DB}.{table} ORDER BY id")
    return sorted(tuple(line.split("\t")) for line in out.splitlines() if line)


def _silver(lake: Path, table: str) -> list[tuple]:
    rows = silver_rows(lake, DB, table)
    return sorted(tuple("NULL" if v is None else str(v) for v in r.values()) for r in rows)


def _batch(server: MariaDBServer, first: int, n: int, tag: str) -> None:
    """``n`` transactions: inserts into both tables, an update and a delete of older rows."""
    for i in range(first, first + n):
        server.execute(
            f"INSERT INTO {DB}.orders VALUES ({i}, '{tag}-{i}', {i * 10});"
            f" INSERT INTO {DB}.items VALUES ({i}, {i}, 'item {tag} {i}')"
        )
    server.execute(
        f"START TRANSACTION; UPDATE {DB}.orders SET total = total + 1, note = '{tag}-upd' WHERE id < {first};"
        f" DELETE FROM {DB}.items WHERE id = {first - 1}; COMMIT"
    )


def _land(server: MariaDBServer, folder: Path, since: str = "") -> None:
    """Copy the server's binlogs (those named ``since`` or later) into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for f in server.binlog_files():
        if f.name >= since:
            shutil.copyfile(f, folder / f.name)


def _run_failing(landing: Path, lake: Path, engine: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["run", "--landing", str(landing), "--lake", str(lake), "--json", "--engine", engine])
    return code, err.getvalue()


def _checkpoint_gtids(lake: Path) -> str:
    rows = DeltaTable(str(lake / "meta" / "checkpoints")).to_pyarrow_table().to_pylist()
    [row] = [r for r in rows if r["source"] == SOURCE and r["table_name"] == "*"]
    return row["gtid_executed"]


def _bronze_gtid_files(lake: Path) -> dict[str, set[str]]:
    rows = (
        DeltaTable(str(lake / "bronze" / "binlog_events"))
        .to_pyarrow_table(columns=["source", "gtid", "binlog_file", "op"])
        .to_pylist()
    )
    out: dict[str, set[str]] = {}
    for r in rows:
        if r["source"] == SOURCE and r["gtid"] and r["op"] in ("insert", "update", "delete"):
            out.setdefault(r["gtid"], set()).add(r["binlog_file"])
    return out


def _cluster(tmp_path: Path) -> tuple[MariaDBServer, MariaDBServer]:
    require_mariadb()
    primary = MariaDBServer(tmp_path / "primary", BinlogSettings(server_id=1, **SETTINGS)).start()
    replica = MariaDBServer(tmp_path / "replica", BinlogSettings(server_id=2, **SETTINGS)).start()
    replica.replicate_from(primary)
    primary.execute(
        f"CREATE DATABASE {DB}; CREATE TABLE {DB}.orders (id INT PRIMARY KEY, note VARCHAR(40),"
        f" total INT); CREATE TABLE {DB}.items (id INT PRIMARY KEY, order_id INT, name VARCHAR(40))"
    )
    return primary, replica


def _status(landing: Path, lake: Path) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["status", "--lake", str(lake), "--landing", str(landing), "--json"])
    [entry] = [s for s in json.loads(out.getvalue())["sources"] if s["source"] == SOURCE]
    return entry


@pytest.mark.parametrize("engine", ["spark", "rust"])
def test_failover_to_the_promoted_replica_applies_every_gtid_once(
    spark, tmp_path: Path, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from binlake.transport import FetchOptions, parse_mysql_uri
    from binlake.transport.cluster import fetch_cluster

    primary, replica = _cluster(tmp_path)
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    monkeypatch.setenv("BINLAKE_E2E_PW", "repl-pw")
    members = [
        parse_mysql_uri(f"mysql://repl@127.0.0.1:{s.port}/?server_id=4243&name={n}", password_env="BINLAKE_E2E_PW")
        for s, n in ((primary, "primary"), (replica, "replica"))
    ]

    def fetch() -> str:  # binlake fetch --source P --source R --name shop
        member, _ = fetch_cluster(members, landing, SOURCE, FetchOptions(sync_interval_s=0.0, max_retries=0))
        return member.name

    try:
        _batch(primary, 10, 5, "one")
        assert fetch() == "primary"
        [s1] = binlake_run(landing, lake, engine=engine)
        assert s1["member"] == "primary" and s1["changes_applied"] > 0
        _batch(primary, 20, 4, "two-a")  # the source reads these from the primary...
        assert fetch() == "primary"
        binlake_run(landing, lake, engine=engine)
        _batch(primary, 30, 4, "two-b")  # ... not these: only the replica received them
        replica.wait_for_gtid(primary.gtid_binlog_pos())
        replica.execute("STOP SLAVE")
        _batch(primary, 40, 3, "lost")  # on the primary only: lost with it
        primary.stop()
        replica.promote()
        _batch(replica, 50, 4, "three")  # the new primary's own writes
        replica.execute(f"UPDATE {DB}.orders SET note = 'after failover' WHERE id IN (11, 31)")
        assert fetch() == "replica"  # the primary does not answer: the next member
        assert _status(landing, lake)["pending_files"] >= 1
        [s3] = binlake_run(landing, lake, engine=engine)
        assert s3["member"] == "replica" and s3["member_switches"] == ["primary -> replica"]
        for table in TABLES:
            assert _silver(lake, table) == _select(replica, table), table
        files = _bronze_gtid_files(lake)
        assert all(len(f) == 1 for f in files.values()), {g: f for g, f in files.items() if len(f) > 1}
        assert _checkpoint_gtids(lake) == replica.gtid_binlog_pos()
        assert any(g.startswith("0-2-") for g in files) and any(f == {"replica/binlog.000001"} for f in files.values())
        # a rerun changes nothing; the replica's next writes follow
        [again] = binlake_run(landing, lake, engine=engine)
        assert again["files"] == 0 and again["changes_applied"] == 0
        _batch(replica, 60, 2, "four")
        assert fetch() == "replica"
        binlake_run(landing, lake, engine=engine)
        for table in TABLES:
            assert _silver(lake, table) == _select(replica, table), table
        assert _checkpoint_gtids(lake) == replica.gtid_binlog_pos()
        status = _status(landing, lake)
        assert (status["member"], status["applied_gtids"], status["pending_files"], status["gap"]) == (
            "replica",
            replica.gtid_binlog_pos(),
            0,
            None,
        )
    finally:
        primary.stop()
        replica.stop()


def _failover_past_a_gap(
    primary: MariaDBServer, replica: MariaDBServer, landing: Path, lake: Path
) -> tuple[str, dict, str, str]:
    """The source loads batch "one" from the primary; batch "two" reaches the replica only, in a file the
    landing never gets; the replica is promoted and writes "three", landed from its next file. Returns (the
    checkpoint's GTID set and silver after "one", the primary's last GTID, the replica's first landed file)."""
    _batch(primary, 10, 5, "one")
    _land(primary, landing / SOURCE / "primary")
    binlake_run(landing, lake, engine="rust")
    held, before = _checkpoint_gtids(lake), {t: _silver(lake, t) for t in TABLES}
    _batch(primary, 20, 4, "two")  # never fetched by the source
    replica.wait_for_gtid(primary.gtid_binlog_pos())
    received = primary.gtid_binlog_pos()
    primary.stop()
    replica.promote()
    replica.execute("FLUSH BINARY LOGS")  # "two" only in a file of the replica purged before
    newer = replica.current_binlog().name  # it was fetched: the landing starts after it
    _batch(replica, 50, 2, "three")
    _land(replica, landing / SOURCE / "replica", since=newer)
    return held, before, received, newer


def test_a_gtid_range_only_on_the_dead_primary_stops_the_source_until_a_snapshot_fills_it(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gap stops the source with nothing of the new primary applied; what the line recommends, a snapshot of
    the source's tables on the new primary, fills it: the switch skips the transactions the snapshot holds, the
    tables are seeded at its place in the stream, and the new primary's later writes follow."""
    primary, replica = _cluster(tmp_path)
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    try:
        primary.execute(SNAP_USER)
        held, before, received, newer = _failover_past_a_gap(primary, replica, landing, lake)
        code, err = _run_failing(landing, lake, "rust")
        assert code != 0, err
        line = next(li for li in err.splitlines() if "STOPPED" in li)
        top = int(held.rsplit("-", 1)[1])
        last = int(received.rsplit("-", 1)[1])
        assert (
            f"member replica: its first new transaction 0-2-{last + 1} (binlog." in line
            and f"GTIDs domain 0 sequence numbers {top + 1} to {last} are missing" in line
            and "fetch the missing transactions from a member that has them" in line
        ), line
        assert "Traceback" not in err
        assert _checkpoint_gtids(lake) == held  # nothing applied out of order
        assert {t: _silver(lake, t) for t in TABLES} == before
        assert not any(f.startswith("replica/") for fs in _bronze_gtid_files(lake).values() for f in fs)
        status = _status(landing, lake)
        assert f"sequence numbers {top + 1} to {last} are missing" in (status["gap"] or ""), status

        _unlogged_edit(replica)
        _snapshot(replica, landing, monkeypatch)
        assert _status(landing, lake)["gap"] is None  # the snapshot fills it
        [s] = binlake_run(landing, lake, engine="rust")
        assert s["member_switches"] == ["primary -> replica"], s
        assert sorted(s["seeded_tables"]) == [f"{DB}.{t}" for t in sorted(TABLES)], s
        for table in TABLES:
            assert _silver(lake, table) == _select(replica, table), table
        assert any("only in the snapshot" in r for r in _silver(lake, "items"))
        _batch(replica, 60, 3, "four")
        _land(replica, landing / SOURCE / "replica", since=newer)
        [s] = binlake_run(landing, lake, engine="rust")
        assert s["changes_applied"] > 0 and not s["seeded_tables"], s
        for table in TABLES:
            assert _silver(lake, table) == _select(replica, table), table
        assert _status(landing, lake)["gap"] is None
        # a snapshot after the switch reseeds from its place in the stream
        replica.execute(f"SET sql_log_bin = 0; UPDATE {DB}.items SET name = 'second snapshot' WHERE id = 12")
        _snapshot(replica, landing, monkeypatch)
        _batch(replica, 70, 2, "five")
        _land(replica, landing / SOURCE / "replica", since=newer)
        [s] = binlake_run(landing, lake, engine="rust")
        assert sorted(s["seeded_tables"]) == [f"{DB}.{t}" for t in sorted(TABLES)], s
        for table in TABLES:
            assert _silver(lake, table) == _select(replica, table), table
        assert any("second snapshot" in r for r in _silver(lake, "items"))
    finally:
        primary.stop()
        replica.stop()


def test_a_gap_filler_removed_before_its_seed_stops_the_source_until_a_new_snapshot_seeds(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run that fills a GTID gap with a snapshot stops right after the switch's bronze append, which skipped the
    transactions the snapshot holds, before the seed; then the snapshot is removed. The next run stops with the
    typed line naming it (and so does ``status``), nothing of the new primary applied; a new snapshot of the new
    primary seeds every table, and silver equals the server, the rows only the gap held included."""
    from binlake.lake.crash import CRASH_ENV, InjectedCrash

    primary, replica = _cluster(tmp_path)
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    try:
        primary.execute(SNAP_USER)
        _, before, _, newer = _failover_past_a_gap(primary, replica, landing, lake)
        _snapshot(replica, landing, monkeypatch)
        monkeypatch.setenv(CRASH_ENV, "after_bronze")
        with pytest.raises(InjectedCrash):
            main(["run", "--landing", str(landing), "--lake", str(lake), "--json", "--engine", "rust"])
        monkeypatch.delenv(CRASH_ENV)
        bronze = DeltaTable(str(lake / "bronze" / "binlog_events")).to_pyarrow_table(columns=["binlog_file"])
        assert f"replica/{newer}" in bronze.column("binlog_file").to_pylist()  # the switch is in bronze
        assert not any(f.startswith("replica/") for fs in _bronze_gtid_files(lake).values() for f in fs)  # skipped
        [snap] = [p for p in (landing / SOURCE / "_snapshots").iterdir() if p.is_dir()]
        shutil.move(snap, tmp_path / "removed")

        code, err = _run_failing(landing, lake, "rust")
        assert code != 0, err
        line = next(li for li in err.splitlines() if "STOPPED" in li)
        assert (
            f"snapshot {snap.name} filled the GTID gap at the switch to replica/{newer}" in line
            and "tables were not seeded from it" not in line
            and "2 table(s) were not seeded from it (shop.items, shop.orders)" in line
            and "Put that snapshot folder back, or take a new snapshot" in line
        ), line
        assert "Traceback" not in err
        assert {t: _silver(lake, t) for t in TABLES} == before  # nothing of the new primary applied
        assert f"snapshot {snap.name} filled the GTID gap" in (_status(landing, lake)["gap"] or "")

        _batch(replica, 60, 2, "four")
        _land(replica, landing / SOURCE / "replica", since=newer)
        _snapshot(replica, landing, monkeypatch)
        [s] = binlake_run(landing, lake, engine="rust")
        assert sorted(s["seeded_tables"]) == [f"{DB}.{t}" for t in sorted(TABLES)], s
        for table in TABLES:
            assert _silver(lake, table) == _select(replica, table), table
        assert any("item two" in v for r in _silver(lake, "items") for v in r)  # the gap's rows, from the snapshot
        assert _status(landing, lake)["gap"] is None
    finally:
        primary.stop()
        replica.stop()


def test_an_errant_transaction_on_the_replica_is_reported_not_applied(spark, tmp_path: Path) -> None:
    """A row written on the replica while it replicated (its own GTID domain, as gtid_strict_mode allows), then
    more of the primary's changes: the switch to the replica names the errant transaction and stops."""
    primary, replica = _cluster(tmp_path)
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    try:
        _batch(primary, 10, 3, "one")
        replica.wait_for_gtid(primary.gtid_binlog_pos())
        replica.execute(f"SET SESSION gtid_domain_id = 7; INSERT INTO {DB}.orders VALUES (999, 'errant', 0)")
        _batch(primary, 20, 3, "two")
        replica.wait_for_gtid(primary.gtid_binlog_pos())
        _land(primary, landing / SOURCE / "primary")
        binlake_run(landing, lake, engine="rust")
        held = _checkpoint_gtids(lake)
        primary.stop()
        replica.promote()
        _batch(replica, 50, 2, "three")
        _land(replica, landing / SOURCE / "replica")
        code, err = _run_failing(landing, lake, "rust")
        assert code != 0, err
        line = next(li for li in err.splitlines() if "STOPPED" in li)
        assert "member replica: 7-2-1 come before 0-1-" in line and "errant transactions" in line, line
        assert _checkpoint_gtids(lake) == held
        assert not any(r[0] == "999" for r in _silver(lake, "orders"))
    finally:
        primary.stop()
        replica.stop()


SNAP_USER = (
    "CREATE USER 'snap'@'127.0.0.1' IDENTIFIED BY 'snap-pw';"
    " GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'snap'@'127.0.0.1'"
)


def _snapshot(server: MariaDBServer, landing: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``binlake snapshot --source <server> --name shop`` (the user ``SNAP_USER`` made)."""
    from binlake.snapshot import take_snapshot
    from binlake.transport import parse_mysql_uri

    monkeypatch.setenv("BINLAKE_E2E_PW", "snap-pw")
    uri = f"mysql://snap@127.0.0.1:{server.port}/?server_id=9&name={SOURCE}"
    take_snapshot(parse_mysql_uri(uri, password_env="BINLAKE_E2E_PW"), landing)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _unlogged_edit(server: MariaDBServer) -> None:
    """A change on ``server`` alone (not binlogged): a snapshot of it holds it, no binlog does."""
    server.execute(f"SET sql_log_bin = 0; UPDATE {DB}.items SET name = 'only in the snapshot' WHERE id = 11")


def _spy_snapshots_of(monkeypatch: pytest.MonkeyPatch) -> list:
    """Each (snapshots to seed now, snapshots to place by GTID) the ingest gets from ``members.snapshots_of``
    (their ids)."""
    import binlake.lake.ingest as ingest

    calls, real = [], ingest.snapshots_of

    def spy(*args: object, **kwargs: object) -> tuple:
        now, by_gtid = real(*args, **kwargs)
        calls.append(([s.id for s in now], [s.id for s in by_gtid]))
        return now, by_gtid

    monkeypatch.setattr(ingest, "snapshots_of", spy)
    return calls


def test_a_snapshot_of_the_replica_is_placed_in_the_stream_by_its_gtid_set(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A snapshot taken on the replica while the source follows the primary: its position is the replica's file,
    not a place in the primary's binlogs, so it is placed by its GTID set (the first transaction it lacks). Silver
    is the snapshot (an edit made on the replica alone, not binlogged, shows it was seeded) with the later changes
    applied once each (a replayed ``total = total + 1`` would count twice). It is taken with ``binlake snapshot``
    given two members, the first of which does not answer."""
    primary, replica = _cluster(tmp_path)
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    try:
        primary.execute(SNAP_USER)
        _batch(primary, 10, 3, "one")
        _land(primary, landing / SOURCE / "primary")
        binlake_run(landing, lake, engine="rust")
        _batch(primary, 20, 2, "two")
        replica.wait_for_gtid(primary.gtid_binlog_pos())
        _unlogged_edit(replica)
        monkeypatch.setenv("BINLAKE_E2E_PW", "snap-pw")
        dead = f"mysql://snap@127.0.0.1:{_free_port()}/?server_id=9&name=old"  # a member that does not answer
        live = f"mysql://snap@127.0.0.1:{replica.port}/?server_id=9&name=replica"
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = main(
                [
                    "snapshot",
                    "--source",
                    f"{dead},{live}",
                    "--name",
                    SOURCE,
                    "--landing",
                    str(landing),
                    "--password-env",
                    "BINLAKE_E2E_PW",
                ]
            )
        assert code == 0 and "member old does not answer" in err.getvalue(), err.getvalue()
        _batch(primary, 30, 2, "three")
        replica.wait_for_gtid(primary.gtid_binlog_pos())
        _land(primary, landing / SOURCE / "primary")
        [s] = binlake_run(landing, lake, engine="rust")
        assert sorted(s["seeded_tables"]) == [f"{DB}.{t}" for t in sorted(TABLES)], s
        for table in TABLES:
            assert _silver(lake, table) == _select(replica, table), table
        assert any("only in the snapshot" in r for r in _silver(lake, "items"))
        _batch(primary, 40, 2, "four")  # the binlogs follow on from there
        replica.wait_for_gtid(primary.gtid_binlog_pos())
        _land(primary, landing / SOURCE / "primary")
        placing = _spy_snapshots_of(monkeypatch)
        [s] = binlake_run(landing, lake, engine="rust")
        for table in TABLES:
            assert _silver(lake, table) == _select(replica, table), table
        # the snapshot counts as seeded (by its id: its placed seam is not its position's): not placed again
        assert not s["seeded_tables"] and placing == [([], [])], (s, placing)
    finally:
        primary.stop()
        replica.stop()
