"""The snapshot's parts without a server: how the position is taken on MySQL (a scripted connection: no MySQL
server exists on these machines), column types and values, the key the binlog calls primary, keyset
conditions, the manifest and the reader API, and that the binlog ingest never takes a snapshot file."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pymysql
import pymysql.cursors
import pytest

from binlake.cli import main
from binlake.pipeline.ddl import silver_type_of
from binlake.pipeline.identity import landing_files, ordering_key
from binlake.snapshot import Position, SnapshotAccessError, SnapshotStateError, read_snapshots
from binlake.snapshot.columns import column_reader
from binlake.snapshot.manifest import Chunk, Column, Manifest, TableState, View
from binlake.snapshot.server import ServerSession, TableDef, _range_condition, primary_key
from binlake.transport import parse_mysql_uri

# -- MySQL: the brief global read lock around the position ------------------------------------------------------


class FakeConnection:
    """Answers statements from a script: {statement prefix: rows or an exception}; logs every statement."""

    def __init__(self, script: dict[str, Any]) -> None:
        self.script, self.log = script, []

    def cursor(self, cls: Any = None) -> "FakeCursor":
        return FakeCursor(self, cls is pymysql.cursors.DictCursor)

    def close(self) -> None:
        self.log.append("<close>")


class FakeCursor:
    def __init__(self, conn: FakeConnection, dicts: bool) -> None:
        self.conn, self.dicts, self.rows = conn, dicts, []

    def execute(self, sql: str, params: Any = None) -> None:
        self.conn.log.append(sql)
        for prefix, answer in self.conn.script.items():
            if sql.startswith(prefix):
                if isinstance(answer, BaseException):
                    raise answer
                self.rows = answer
                return
        self.rows = []

    def fetchall(self) -> list:
        return self.rows

    def close(self) -> None:
        pass


MYSQL = {
    "SELECT VERSION()": [("8.4.3", "7")],
    "SELECT @@log_bin": [("1",)],
    "SHOW BINARY LOG STATUS": [
        {
            "File": "binlog.000042",
            "Position": "1234",
            "Executed_Gtid_Set": "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5,\naaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa:1-9",
        }
    ],
}


def _session(script: dict[str, Any]) -> tuple[ServerSession, FakeConnection]:
    conn = FakeConnection(script)
    session = ServerSession(parse_mysql_uri("mysql://snap@db1/?server_id=9"), connector=lambda **kw: conn)
    session.connect()
    return session, conn


def test_mysql_position_is_read_under_a_brief_global_read_lock() -> None:
    session, conn = _session(MYSQL)
    position, method = session.open_view()
    assert position == Position(
        "binlog.000042", 1234, "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5,aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa:1-9"
    )
    assert "FLUSH TABLES WITH READ LOCK" in method
    steps = conn.log[conn.log.index("FLUSH TABLES WITH READ LOCK") :]
    assert steps == [
        "FLUSH TABLES WITH READ LOCK",
        "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ",
        "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY",
        "SHOW BINARY LOG STATUS",
        "UNLOCK TABLES",
    ]
    assert conn.log[conn.log.index("FLUSH TABLES WITH READ LOCK") - 1].startswith("SET SESSION lock_wait_timeout")


def test_mysql_before_8_2_asks_show_master_status_and_gtids_off_are_none() -> None:
    script = {
        **MYSQL,
        "SELECT VERSION()": [("8.0.36", "7")],
        "SHOW BINARY LOG STATUS": pymysql.err.ProgrammingError(1064, "You have an error in your SQL syntax"),
        "SHOW MASTER STATUS": [{"File": "binlog.000003", "Position": "157", "Executed_Gtid_Set": ""}],
    }
    session, conn = _session(script)
    assert session.open_view()[0] == Position("binlog.000003", 157, None)
    assert conn.log[-2:] == ["SHOW MASTER STATUS", "UNLOCK TABLES"]


def test_mysql_without_reload_says_which_grants_and_unlocks_after_a_failure() -> None:
    session, _ = _session(
        {
            **MYSQL,
            "FLUSH TABLES": pymysql.err.OperationalError(
                1227, "Access denied; you need (at least one of) the RELOAD privilege(s) for this operation"
            ),
        }
    )
    with pytest.raises(SnapshotAccessError, match=r"GRANT RELOAD, REPLICATION CLIENT ON \*\.\*"):
        session.open_view()
    session, conn = _session(
        {
            **MYSQL,
            "SHOW BINARY LOG STATUS": pymysql.err.OperationalError(
                1227, "Access denied; you need (at least one of) the REPLICATION CLIENT privilege(s)"
            ),
        }
    )
    with pytest.raises(SnapshotAccessError):
        session.open_view()
    assert conn.log[-1] == "UNLOCK TABLES"


def test_old_servers_and_binlog_off_are_refused() -> None:
    with pytest.raises(Exception, match="too old"):
        _session({**MYSQL, "SELECT VERSION()": [("5.7.44", "7")]})
    with pytest.raises(Exception, match="binary log is off"):
        _session({**MYSQL, "SELECT @@log_bin": [("0",)]})


# -- columns ----------------------------------------------------------------------------------------------------


def _info(column_type: str, data_type: str, charset: str | None = None, **kw: Any) -> dict[str, Any]:
    return {
        "COLUMN_NAME": "c",
        "DATA_TYPE": data_type,
        "COLUMN_TYPE": column_type,
        "IS_NULLABLE": "YES",
        "CHARACTER_SET_NAME": charset,
        "COLLATION_NAME": None,
        "NUMERIC_PRECISION": kw.get("p"),
        "NUMERIC_SCALE": kw.get("s"),
        "DATETIME_PRECISION": kw.get("fsp"),
    }


@pytest.mark.parametrize(
    "info",
    [
        _info("tinyint(4)", "tinyint"),
        _info("tinyint(3) unsigned", "tinyint"),
        _info("mediumint(8) unsigned", "mediumint"),
        _info("int(10) unsigned", "int"),
        _info("bigint(20) unsigned", "bigint"),
        _info("bigint(20)", "bigint"),
        _info("decimal(10,2)", "decimal", p=10, s=2),
        _info("decimal(65,30)", "decimal", p=65, s=30),
        _info("float", "float"),
        _info("double", "double"),
        _info("bit(64)", "bit", p=64),
        _info("bit(7)", "bit", p=7),
        _info("year(4)", "year"),
        _info("date", "date"),
        _info("datetime(3)", "datetime", fsp=3),
        _info("timestamp(6)", "timestamp", fsp=6),
        _info("time", "time", fsp=0),
        _info("json", "json"),
        _info("varchar(20)", "varchar", "utf8mb4"),
        _info("char(3)", "char", "latin1"),
        _info("text", "text", "utf8mb4"),
        _info("enum('a','b')", "enum", "utf8mb4"),
        _info("set('x')", "set", "utf8mb4"),
        _info("binary(4)", "binary"),
        _info("varbinary(9)", "varbinary"),
        _info("longblob", "longblob"),
        _info("point", "point"),
        _info("geometry", "geometry"),
    ],
)
def test_silver_types_agree_with_the_ddl_path(info: dict[str, Any]) -> None:
    reader = column_reader(info, where="t")
    assert reader.kind == silver_type_of(info["COLUMN_TYPE"]), info["COLUMN_TYPE"]


@pytest.mark.parametrize(
    "info, raw, expected",
    [
        (_info("float", "float"), "1.0000001192092896", 1.0000001),
        (_info("double", "double"), "0.30000000000000004", 0.30000000000000004),
        (_info("bigint(20) unsigned", "bigint"), "18446744073709551615", Decimal(18446744073709551615)),
        (_info("decimal(5,2)", "decimal", p=5, s=2), "-1.50", Decimal("-1.50")),
        (_info("bit(64)", "bit", p=64), b"\x80" + b"\0" * 6 + b"\x01", b"\x80" + b"\0" * 6 + b"\x01"),
        (_info("bit(9)", "bit", p=9), b"\x01\x00", 256),
        (_info("year(4)", "year"), "0000", 0),
        (_info("date", "date"), "0000-00-00", None),
        (
            _info("datetime(2)", "datetime", fsp=2),
            "2024-02-29 23:59:59.25",
            dt.datetime(2024, 2, 29, 23, 59, 59, 250000),
        ),
        (
            _info("timestamp", "timestamp", fsp=0),
            "2038-01-19 03:14:07",
            dt.datetime(2038, 1, 19, 3, 14, 7, tzinfo=dt.timezone.utc),
        ),
        (_info("time(1)", "time", fsp=1), "-838:59:59.0", "-838:59:59.0"),
        (_info("char(3)", "char", "latin1"), b"\xe9\x80", "é€"),
        (_info("varchar(3)", "varchar", "ucs2"), b"\x00a\x00\xe9", "aé"),
        (_info("inet6", "inet6"), b"\0" * 15 + b"\1", b"\0" * 15 + b"\1"),
    ],
)
def test_values_take_the_binlog_path_into_silver(info: dict[str, Any], raw: Any, expected: Any) -> None:
    assert column_reader(info, where="t").converter()(raw) == expected


def test_reads_ask_for_exact_values() -> None:
    assert column_reader(_info("float", "float"), where="t").expression == "CAST(`c` AS DOUBLE)"
    assert column_reader(_info("varchar(3)", "varchar", "latin1"), where="t").expression == "CAST(`c` AS BINARY)"
    assert column_reader(_info("uuid", "uuid"), where="t").expression == "CAST(`c` AS BINARY(16))"
    assert column_reader(_info("int(11)", "int"), where="t").expression == "`c`"
    with pytest.raises(Exception, match="can not map"):
        column_reader(_info("xml", "xmltype"), where="t")


# -- keys -------------------------------------------------------------------------------------------------------


def _index(key: str, seq: int, column: str, unique: bool = True, null: str = "", sub: Any = None) -> dict:
    return {
        "Key_name": key,
        "Seq_in_index": seq,
        "Column_name": column,
        "Non_unique": 0 if unique else 1,
        "Null": null,
        "Sub_part": sub,
    }


def test_the_binlogs_primary_key_from_show_index() -> None:
    assert primary_key([_index("PRIMARY", 2, "b"), _index("PRIMARY", 1, "a"), _index("u", 1, "c")]) == ("a", "b")
    assert primary_key([_index("x", 1, "n", unique=False), _index("u", 1, "c"), _index("u", 2, "d")]) == ("c", "d")
    assert primary_key([_index("u", 1, "c", null="YES"), _index("v", 1, "p", sub=4)]) == ()
    assert primary_key([]) == ()


def test_keyset_conditions_for_a_composite_key() -> None:
    readers = tuple(column_reader({**_info("int(11)", "int"), "COLUMN_NAME": n}, where="t") for n in ("a", "b"))
    t = TableDef("d", "t", "InnoDB", readers, ("a", "b"), "", 0)
    where, params = _range_condition(t, [1, 2], [3, 4])
    assert where == (
        " WHERE ((`a` > %s) OR (`a` = %s AND `b` > %s)) AND "
        "((`a` < %s) OR (`a` = %s AND `b` < %s) OR (`a` = %s AND `b` = %s))"
    )
    assert params == [1, 1, 2, 3, 3, 4, 3, 4]
    assert _range_condition(t, None, None) == ("", [])


# -- manifest and reader ----------------------------------------------------------------------------------------


def _table(name: str, view: int | None, complete: bool) -> TableState:
    col = Column("id", "int(11)", "int", False, None, None, "int", ("id", 3, 3, 0, False, None))
    return TableState(
        "d",
        name,
        f"d__{name}",
        "InnoDB",
        f"CREATE TABLE `{name}` (...)",
        (col,),
        ("id",),
        True,
        view,
        complete,
        [
            Chunk(None, [5], 5, ["part-00000.parquet"], "5:00"),
            Chunk([5], None, 2, ["part-00001.parquet"], None, {"x": 1}),
        ],
    )


def _write(root: Path, id_: str, status: str, tables: list[TableState]) -> Path:
    folder = root / "src" / "_snapshots" / id_
    folder.mkdir(parents=True)
    views = [
        View(0, Position("binlog.000007", 900, "0-1-5"), "2026-01-01T00:00:00Z", "test"),
        View(1, Position("binlog.000008", 120, "0-1-9"), "2026-01-01T00:05:00Z", "test"),
    ]
    Manifest(
        id_,
        "src",
        {"flavor": "mariadb", "version": "10.11.9-MariaDB", "server_id": 1, "uri": "mysql://x"},
        ("d.*",),
        (),
        5,
        "2026-01-01T00:00:00Z",
        "00" * 16,
        status,
        None,
        views,
        tables,
        2,
    ).write(folder)
    return folder


def test_read_snapshots_gives_one_snapshot_per_view_oldest_first(tmp_path: Path) -> None:
    folder = _write(tmp_path, "20260101T000000Z", "complete", [_table("late", 1, True), _table("early", 0, True)])
    _write(tmp_path, "20260102T000000Z", "running", [_table("x", None, False)])  # unfinished: left out
    snaps = read_snapshots(tmp_path / "src")
    assert [(s.id, s.view, [t.table for t in s.tables]) for s in snaps] == [
        ("20260101T000000Z", 0, ["early"]),
        ("20260101T000000Z", 1, ["late"]),
    ]
    first = snaps[0]
    assert first.position == Position("binlog.000007", 900, "0-1-5")
    assert first.seam_seq == ordering_key(7, 900, 0) < snaps[1].seam_seq
    table = first.table("d", "early")
    assert table.files == (
        folder / "tables" / "d__early" / "part-00000.parquet",
        folder / "tables" / "d__early" / "part-00001.parquet",
    )
    assert table.rows == 7 and table.primary_key == ("id",) and table.silver_columns == [("id", "int")]
    assert table.invalid_temporals == {"x": 1} and table.create_table.startswith("CREATE TABLE")
    data = json.loads((folder / "manifest.json").read_text())
    assert data["tables"][1]["files"] == ["part-00000.parquet", "part-00001.parquet"]
    assert data["views"][0]["position"] == {"file": "binlog.000007", "pos": 900, "gtid": "0-1-5"}
    assert (
        Manifest.from_json((folder / "manifest.json").read_text(), folder).to_json()
        == (folder / "manifest.json").read_text()
    )


def test_an_unreadable_manifest_is_a_typed_error(tmp_path: Path) -> None:
    folder = tmp_path / "src" / "_snapshots" / "20260101T000000Z"
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text('{"version": 1, "id": "x"}')
    with pytest.raises(SnapshotStateError, match="unreadable snapshot manifest"):
        read_snapshots(tmp_path / "src")
    assert read_snapshots(tmp_path / "nothing") == []


def test_the_binlog_ingest_never_takes_a_snapshot_file(tmp_path: Path) -> None:
    folder = _write(tmp_path, "20260101T000000Z", "complete", [_table("t", 0, True)])
    for f in ("part-00000.parquet", "part-00001.parquet"):
        (folder / "tables" / "d__t").mkdir(parents=True, exist_ok=True)
        (folder / "tables" / "d__t" / f).write_bytes(b"PAR1")
    (tmp_path / "src" / "_snapshots" / ".binlake-snapshot.lock").touch()
    (tmp_path / "src" / "binlog.000001").write_bytes(b"\xfebin")
    assert landing_files(tmp_path / "src") == [str(tmp_path / "src" / "binlog.000001")]


def test_the_command_is_registered_with_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["snapshot", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "--include DB.TABLE" in out and "--password-file" in out and "docs/SNAPSHOT.md" in out


def test_the_snapshot_task_takes_a_password_only_from_a_binlake_or_mysql_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A DAG run's conf is written by whoever triggers it: naming any worker variable would send it to a server."""
    from binlake.snapshot.tasks import snapshot_task
    from binlake.transport.errors import SourceUriError

    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-for-mysql")
    with pytest.raises(SourceUriError, match="BINLAKE_ or MYSQL_"):
        snapshot_task("mysql://snap@127.0.0.1:1/?server_id=7", str(tmp_path), password_env="AWS_SECRET_ACCESS_KEY")
    assert not any(tmp_path.iterdir())  # refused before any connection or landing folder
