"""``binlake snapshot`` against a real MariaDB 10.11: every column type, keys of every shape, a writer changing
rows while the snapshot runs, table selection and the errors of bad input.

The oracle (tests/snapshot/support.py): each table rebuilt from the server's binlog by binlake's decoder up to
the snapshot's position must equal the snapshot; the snapshot plus the binlog changes after its position must
equal a later snapshot taken once the writes stopped.
"""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path

import pytest

from binlake.binlog import open_binlog
from binlake.cli import main
from binlake.pipeline.filters import TableFilter
from binlake.snapshot import Snapshot, SnapshotOptions, read_snapshots, take_snapshot
from binlake.transport import parse_mysql_uri
from tests.binlog.mariadb.workload import ALTER_T_INT, statements_after_alter, statements_before_alter
from tests.mariadb_server import MariaDBServer, free_loopback_port
from tests.snapshot.conftest import source_uri
from tests.snapshot.support import Replay, binlog_changes, differences, snapshot_rows

pytestmark = [pytest.mark.mariadb, pytest.mark.slow]

PASSWORD = {"BINLAKE_MYSQL_PASSWORD": "snap-pw"}

KEYS_DDL = """
CREATE DATABASE keys_db;
CREATE TABLE keys_db.composite (region VARCHAR(12) CHARACTER SET latin1 NOT NULL, n INT NOT NULL,
    label VARCHAR(20), PRIMARY KEY (region, n)) ENGINE=InnoDB;
CREATE TABLE keys_db.keyless (a INT, b VARCHAR(10), c DATETIME(3)) ENGINE=InnoDB;
CREATE TABLE keys_db.unique_nn (code CHAR(4) NOT NULL, v INT, UNIQUE KEY (code)) ENGINE=InnoDB;
CREATE TABLE keys_db.binary_key (k VARBINARY(8) NOT NULL PRIMARY KEY, d DATE) ENGINE=InnoDB;
CREATE TABLE keys_db.float_key (f FLOAT NOT NULL PRIMARY KEY, note TEXT) ENGINE=InnoDB;
CREATE TABLE keys_db.empty_t (id BIGINT UNSIGNED PRIMARY KEY) ENGINE=InnoDB;
CREATE TABLE keys_db.`odd %s na``me` (`k%s` INT NOT NULL, `back``tick` VARCHAR(5) NOT NULL, PRIMARY KEY (`k%s`,
    `back``tick`)) ENGINE=InnoDB;
INSERT INTO keys_db.`odd %s na``me` VALUES (1, 'a'), (1, 'b'), (2, '%'), (3, '%s');
INSERT INTO keys_db.composite VALUES ('Zürich', 2, 'b'), ('zürich', 1, NULL), ('ägypten', 1, 'c'), ('A', 7, 'd'),
    ('a ', 8, 'trailing key space'), ('B', -3, 'e'), ('Ärger', 0, 'f'), ('b', 4, NULL), ('é', 5, 'g');
INSERT INTO keys_db.keyless VALUES (1, 'x', '2024-01-01 00:00:00.5'), (1, 'x', '2024-01-01 00:00:00.5'),
    (NULL, NULL, NULL), (NULL, NULL, NULL), (2, 'y', '0000-00-00 00:00:00');
INSERT INTO keys_db.unique_nn VALUES ('b', 1), ('a', 2), ('ab', NULL);
INSERT INTO keys_db.binary_key VALUES (X'00', '2024-02-29'), (X'FF00', NULL), (X'0001', '1000-01-01'), ('', NULL);
INSERT INTO keys_db.float_key VALUES (1.5, 'x'), (-0.25, NULL), (3.4e38, 'big');
UPDATE keys_db.composite SET region = 'Y', label = 'moved' WHERE region = 'B' AND n = -3;
DELETE FROM keys_db.keyless WHERE a = 1 LIMIT 1;
UPDATE keys_db.keyless SET b = 'z' WHERE a IS NULL LIMIT 1;
"""


def _snapshot(
    server: MariaDBServer, landing: Path, *include: str, exclude: tuple[str, ...] = (), chunk_rows: int = 100_000
) -> Snapshot:
    source = parse_mysql_uri(source_uri(server), password_env="SNAP_PW")
    options = SnapshotOptions(TableFilter(tuple(include), exclude), chunk_rows=chunk_rows)
    take_snapshot(source, landing, options)
    return read_snapshots(landing / "src")[-1]


def _workload(server: MariaDBServer) -> None:
    """The MariaDB oracle's workload (tests/binlog/mariadb/workload.py) but the rows of t_old_time, whose
    MariaDB 5.3 temporal formats the binlog decoder reads only with a schema."""
    conn = server.connect()
    try:
        cur = conn.cursor()
        cur.execute("SET SESSION sql_mode = 'STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION'")
        for stmt in statements_before_alter() + [ALTER_T_INT] + statements_after_alter():
            cur.execute(stmt)
    finally:
        conn.close()


def _table_map_keys(server: MariaDBServer) -> dict[tuple[str, str], tuple[str, ...]]:
    keys = {}
    for path in server.binlog_files():
        for ev in open_binlog(path, decode_rows=False):
            body = ev.body
            if type(body).__name__ == "TableMapEvent":
                names = body.column_names
                idx = body.simple_primary_key or tuple(i for i, _ in body.primary_key_with_prefix or ())
                keys[(body.db, body.table)] = tuple(names[i] for i in idx)
    return keys


def test_every_column_type_and_key_shape_equals_the_binlog_replay(
    server: MariaDBServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _workload(server)  # database `lake`: every column type, updates, deletes, an ALTER
    server.execute(KEYS_DDL)
    server.execute("GRANT SELECT ON lake.* TO 'snap'@'127.0.0.1'; GRANT SELECT ON keys_db.* TO 'snap'@'127.0.0.1'")
    monkeypatch.setenv("SNAP_PW", "snap-pw")
    # chunks of 2 rows: every keyed table is read in several keyset chunks, composite and binary keys included;
    # t_old_time (MariaDB 5.3 temporal formats, no rows here) is left out
    snap = _snapshot(server, tmp_path, "lake.*", "keys_db.*", exclude=("lake.t_old_time",), chunk_rows=2)

    names = sorted(f"{t.db}.{t.table}" for t in snap.tables)
    assert names == [
        "keys_db.binary_key",
        "keys_db.composite",
        "keys_db.empty_t",
        "keys_db.float_key",
        "keys_db.keyless",
        "keys_db.odd %s na`me",
        "keys_db.unique_nn",
        "lake.t_bit",
        "lake.t_geo",
        "lake.t_int",
        "lake.t_lob",
        "lake.t_num",
        "lake.t_str",
        "lake.t_time",
    ]
    replay = Replay(snap.tables, defaults={("lake", "t_int", "added"): "dflt"})  # ALTER ... ADD ... DEFAULT 'dflt'
    replay.apply(binlog_changes(server.binlog_files(), end=snap.position))
    for t in snap.tables:
        expected, actual = replay.rows(t.db, t.table), snapshot_rows(t)
        assert actual == expected, f"{t.db}.{t.table}: {differences(expected, actual)}"

    binlog_keys = _table_map_keys(server)
    for t in snap.tables:
        if (t.db, t.table) in binlog_keys:  # the key silver uses is the binlog's primary key
            assert t.primary_key == binlog_keys[(t.db, t.table)], (t.db, t.table)
    assert snap.table("keys_db", "unique_nn").primary_key == ("code",)
    assert snap.table("keys_db", "keyless").primary_key == ()
    assert len(snap.table("lake", "t_num").files) == 4  # 7 rows in chunks of 2
    manifest = {(t["db"], t["table"]): t for t in json.loads((snap.path / "manifest.json").read_text())["tables"]}
    assert not manifest[("keys_db", "float_key")]["chunked"]  # a FLOAT key: one streamed scan,
    assert len(snap.table("keys_db", "float_key").files) == 2  # in files of at most 2 rows
    assert manifest[("keys_db", "composite")]["chunked"] and len(manifest[("keys_db", "composite")]["chunks"]) == 5
    assert snap.table("keys_db", "empty_t").rows == 0 and len(snap.table("keys_db", "empty_t").files) == 1
    assert snap.table("keys_db", "keyless").invalid_temporals == {"c": 1}  # the zero datetime became NULL
    time_t = snap.table("lake", "t_time")
    assert {c.name: c.silver_type for c in time_t.columns}["ts6"] == "timestamp"
    assert "CREATE TABLE `t_time`" in time_t.create_table
    assert snap.flavor == "mariadb" and snap.server_version.startswith("10.")
    _native_reader_agrees(server, snap, tmp_path, monkeypatch)


def _native_reader_agrees(server: MariaDBServer, snap: Snapshot, tmp_path: Path, monkeypatch) -> None:
    """The snapshot above was read by the native reader: the Python reader gives the same Arrow tables, and the
    fingerprints the native reader computed as it read are the ones the server computes for the same ranges."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from binlake.binlog.native import available
    from binlake.snapshot.manifest import load_manifests
    from binlake.snapshot.server import ServerSession

    if not available():
        pytest.skip("the native core is not built (scripts/setup.sh builds it)")
    monkeypatch.setenv("BINLAKE_NATIVE", "0")
    python = _snapshot(server, tmp_path / "python", "lake.*", "keys_db.*", exclude=("lake.t_old_time",), chunk_rows=2)
    for t in snap.tables:
        ours, theirs = (pa.concat_tables(pq.read_table(f) for f in x.files) for x in (t, python.table(t.db, t.table)))
        assert ours.equals(theirs), f"{t.db}.{t.table}"
    [(_, manifest)] = load_manifests(tmp_path / "src")
    session = ServerSession(parse_mysql_uri(source_uri(server), password_env="SNAP_PW"))
    session.connect()
    session.open_view()
    checked = 0
    for t in manifest.tables:
        d = session.describe(t.db, t.table)
        for c in t.chunks:
            if c.hi is not None:
                assert c.fingerprint == session.fingerprint(d, c.lo, c.hi, manifest.fingerprint_key), (t.table, c.lo)
                checked += 1
    session.close()
    assert checked > 20


# -- a writer changing rows while the snapshot runs ------------------------------------------------------------

WRITER_DDL = """
CREATE DATABASE w;
USE w;
CREATE TABLE w.big (id INT NOT NULL PRIMARY KEY, grp INT, v VARCHAR(30), n DECIMAL(12,3)) ENGINE=InnoDB;
CREATE TABLE w.comp (k1 VARCHAR(10) NOT NULL, k2 INT NOT NULL, val DOUBLE, PRIMARY KEY (k1, k2)) ENGINE=InnoDB;
CREATE TABLE w.nokey (a INT, b VARCHAR(10)) ENGINE=InnoDB;
INSERT INTO w.big SELECT seq * 2, seq % 7, CONCAT('row ', seq), seq / 8 FROM seq_1_to_3000;
INSERT INTO w.comp SELECT CHAR(65 + seq % 26), seq, seq / 3 FROM seq_1_to_600;
INSERT INTO w.nokey SELECT seq % 50, CHAR(97 + seq % 5) FROM seq_1_to_400;
GRANT SELECT ON w.* TO 'snap'@'127.0.0.1';
"""


class Writer(threading.Thread):
    """Random inserts, updates (key changes too), deletes and multi-table transactions until stopped."""

    def __init__(self, server: MariaDBServer) -> None:
        super().__init__(daemon=True)
        self.server, self.stop, self.done, self.error = server, threading.Event(), 0, None

    def run(self) -> None:
        rng = random.Random(7)
        conn = self.server.connect(raw=False)
        cur = conn.cursor()
        try:
            while not self.stop.is_set():
                x, y = rng.randrange(1, 6000), rng.randrange(1, 26)
                op = rng.randrange(8)
                if op == 0:
                    cur.execute("INSERT IGNORE INTO w.big VALUES (%s, %s, 'ins', 1.5)", (2 * x + 1, y))
                elif op == 1:
                    cur.execute("UPDATE w.big SET v = CONCAT(v, '+'), n = n + 1 WHERE id = %s", (2 * x,))
                elif op == 2:
                    cur.execute("DELETE FROM w.big WHERE id = %s", (2 * x,))
                elif op == 3:
                    cur.execute("UPDATE IGNORE w.big SET id = id + 100000 WHERE id = %s", (2 * x,))
                elif op == 4:
                    cur.execute(
                        "UPDATE w.comp SET val = val * 2, k2 = k2 + 1000 WHERE k1 = %s AND k2 < 50", (chr(65 + y),)
                    )
                elif op == 5:
                    cur.execute("INSERT INTO w.nokey VALUES (%s, 'new')", (x % 50,))
                elif op == 6:
                    cur.execute("DELETE FROM w.nokey WHERE a = %s LIMIT 1", (x % 50,))
                else:
                    cur.execute("BEGIN")
                    cur.execute("UPDATE w.big SET grp = grp + 1 WHERE id BETWEEN %s AND %s", (2 * x, 2 * x + 40))
                    cur.execute("UPDATE w.nokey SET b = 'txn' WHERE a = %s LIMIT 2", (x % 50,))
                    cur.execute("COMMIT")
                self.done += 1
                time.sleep(0.001)
        except BaseException as exc:  # noqa: BLE001 -- reported by the test
            self.error = exc
        finally:
            conn.close()


def test_snapshot_under_writes_is_exact_at_its_position(
    server: MariaDBServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.execute(WRITER_DDL)
    monkeypatch.setenv("SNAP_PW", "snap-pw")
    writer = Writer(server)
    writer.start()
    while writer.done < 30 and writer.is_alive():
        time.sleep(0.01)
    started = writer.done
    first = _snapshot(server, tmp_path, "w.*", chunk_rows=150)
    during = writer.done
    time.sleep(0.3)
    writer.stop.set()
    writer.join(30)
    assert writer.error is None, writer.error
    assert writer.done > during > started >= 30  # writes before, during and after the snapshot's reads
    assert len(first.table("w", "big").files) >= 20

    files = server.binlog_files()
    # the snapshot equals every table rebuilt from the binlog up to its position ...
    upto = Replay(first.tables).apply(binlog_changes(files, end=first.position))
    for t in first.tables:
        assert snapshot_rows(t) == upto.rows(t.db, t.table), f"{t.table}: " + differences(
            upto.rows(t.db, t.table), snapshot_rows(t)
        )
    # ... and, continued by the changes after its position, the tables once the writes stopped
    last = _snapshot(server, tmp_path, "w.*", chunk_rows=1000)
    assert last.id != first.id and [s.id for s in read_snapshots(tmp_path / "src")] == [first.id, last.id]
    after = binlog_changes(files, start=first.position, end=last.position)
    assert sum(ch.db == "w" for ch in after) > 0
    replay = Replay(first.tables)
    for t in first.tables:
        replay.start_from(t, snapshot_rows(t))
    replay.apply(after)
    for t in last.tables:
        assert snapshot_rows(t) == replay.rows(t.db, t.table), f"{t.table}: " + differences(
            replay.rows(t.db, t.table), snapshot_rows(t)
        )


# -- selection and bad input -----------------------------------------------------------------------------------


def test_include_and_exclude_select_tables(
    server: MariaDBServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.execute(
        "CREATE DATABASE sel; CREATE TABLE sel.a1 (id INT PRIMARY KEY); CREATE TABLE sel.a2 (id INT "
        "PRIMARY KEY); CREATE TABLE sel.b1 (id INT PRIMARY KEY); CREATE VIEW sel.v AS SELECT * FROM sel.a1;"
        " GRANT SELECT ON sel.* TO 'snap'@'127.0.0.1'"
    )
    monkeypatch.setenv("SNAP_PW", "snap-pw")
    snap = _snapshot(server, tmp_path, "sel.a*", "sel.b1", exclude=("sel.a2",))
    assert [t.table for t in snap.tables] == ["a1", "b1"]
    landing = tmp_path / "two"
    assert (
        main(
            [
                "snapshot",
                "--source",
                source_uri(server),
                "--landing",
                str(landing),
                "--password-env",
                "SNAP_PW",
                "--exclude",
                "*.*2",
                "--include",
                "sel.*",
            ]
        )
        == 0
    )
    [snap] = read_snapshots(landing / "src")
    assert [t.table for t in snap.tables] == ["a1", "b1"]  # views are not base tables


@pytest.fixture
def bad_input_setup(server: MariaDBServer) -> None:
    server.execute(
        "CREATE DATABASE IF NOT EXISTS bad; CREATE TABLE IF NOT EXISTS bad.t (id INT PRIMARY KEY); "
        "CREATE TABLE IF NOT EXISTS bad.m (id INT PRIMARY KEY) ENGINE=MyISAM; "
        "CREATE USER IF NOT EXISTS 'nogrant'@'127.0.0.1' IDENTIFIED BY 'snap-pw'; "
        "GRANT SELECT ON bad.* TO 'snap'@'127.0.0.1'"
    )


@pytest.mark.parametrize(
    "case, args, expected",
    [
        ("unreachable", ["--source", "mysql://snap@127.0.0.1:{closed}/?server_id=4201"], "connecting: the connection"),
        ("wrong password", ["--password-env", "WRONG_PW"], "access denied for user 'snap'"),
        (
            "missing grants",
            ["--source", "mysql://nogrant@127.0.0.1:{port}/?server_id=4201", "--include", "bad.t"],
            "GRANT SELECT ON <db>.* TO 'nogrant'",
        ),
        ("unknown table", ["--include", "bad.nosuch"], "table bad.nosuch (--include) does not exist"),
        ("no match", ["--include", "nothere.*"], "no table matches --include nothere.*"),
        ("no consistent read", ["--include", "bad.m"], "engine is MyISAM, which has no consistent read"),
        ("no server_id", ["--source", "mysql://snap@127.0.0.1:{port}/"], "has no server_id"),
    ],
)
def test_bad_input_is_one_line_and_a_nonzero_exit(
    server: MariaDBServer,
    tmp_path: Path,
    bad_input_setup: None,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    case: str,
    args: list[str],
    expected: str,
) -> None:
    monkeypatch.setenv("SNAP_PW", "snap-pw")
    monkeypatch.setenv("WRONG_PW", "nope")
    argv = ["snapshot", "--source", source_uri(server), "--landing", str(tmp_path), "--password-env", "SNAP_PW"]
    for i in range(0, len(args), 2):
        value = args[i + 1].format(port=server.port, closed=free_loopback_port())
        if args[i] in argv:
            argv[argv.index(args[i]) + 1] = value
        else:
            argv += [args[i], value]
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2, case
    assert len(err) == 1 and err[0].startswith("binlake: error: ") and expected in err[0], err
    assert not list(tmp_path.glob("*/_snapshots/*/manifest.json"))  # nothing half-made left behind
