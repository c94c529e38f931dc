"""Hostile or damaged servers (issue #25, cases 8 and 9): every answer a snapshot statement can not return stops the
snapshot with a typed one-line error, and no snapshot is marked complete (so no run ever seeds from it).

The scripted server (fake_server.py) answers as MariaDB or MySQL would for one table; each case replaces one answer.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from binlake.binlog.native import available as native_available
from binlake.snapshot import take_snapshot
from binlake.snapshot.errors import ServerUnreachableError, SnapshotAnswerError, SnapshotError
from binlake.snapshot.take import SnapshotOptions
from binlake.transport.uri import parse_mysql_uri
from tests.snapshot.fake_server import Answers, column, serve, uri
from tests.transport.fake_mysql import RowsEnd

MYSQL = {"flavor": "mysql", "version": (["v", "id"], [["8.4.0", "1"]])}


def _status(file: str, pos: str) -> tuple:
    return (["Variable_name", "Value"], [["Binlog_snapshot_file", file], ["Binlog_snapshot_position", pos]])


def _master(**row) -> tuple:
    base = {"File": "binlog.000007", "Position": "157", "Executed_Gtid_Set": ""}
    base.update(row)
    return list(base), [list(base.values())]


def _columns(*cols) -> tuple:
    return list(cols[0]), [list(c.values()) for c in cols]


CASES = {
    # the server's identity
    "server_id not a number": dict(version=(["v", "id"], [["10.11.9-MariaDB", "x1"]])),
    "version NULL": dict(version=(["v", "id"], [[None, "1"]])),
    "version row of one column": dict(version=(["v"], [["10.11.9-MariaDB"]])),
    "log_bin row of two columns": dict(log_bin=(["a", "b"], [["1", "1"]])),
    # the position (MariaDB's status variables, MySQL's SHOW BINARY LOG STATUS)
    "position not a number": dict(status=_status("mysql-bin.000003", "12x")),
    "position negative": dict(status=_status("mysql-bin.000003", "-5")),
    "position 2^70": dict(status=_status("mysql-bin.000003", str(1 << 70))),
    "position inside the magic": dict(status=_status("mysql-bin.000003", "2")),
    "file without a number": dict(status=_status("mysql-bin", "1234")),
    "file outside the folder": dict(status=_status("../x.000003", "1234")),
    "status rows of one column": dict(status=(["Variable_name"], [["Binlog_snapshot_file"]])),
    "gtid of two rows": dict(gtid=(["g"], [["0-1-5"], ["0-1-6"]])),
    "mysql: no status row": dict(**MYSQL, master_status=(["File", "Position"], [])),
    "mysql: no Position column": dict(**MYSQL, master_status=(["File"], [["binlog.000007"]])),
    "mysql: Position not a number": dict(**MYSQL, master_status=_master(Position="abc")),
    "mysql: File NULL": dict(**MYSQL, master_status=_master(File=None)),
    "mysql: position 2^70": dict(**MYSQL, master_status=_master(Position=str(1 << 70))),
    # the tables and their definitions
    "table list row of one column": dict(tables=(["TABLE_SCHEMA"], [["d"]])),
    "table rows not a number": dict(engine=(["ENGINE", "TABLE_ROWS"], [["InnoDB", "many"]])),
    "duplicate columns": dict(columns=_columns(column("id"), column("id"))),
    "duplicate columns in two cases": dict(columns=_columns(column("id"), column("ID", "int"))),
    "column name NULL": dict(columns=_columns(column("id"), column(None))),
    "no columns": dict(columns=(["COLUMN_NAME"], [])),
    "decimal without precision": dict(columns=_columns(column("id"), column("d", "decimal", precision=None))),
    "key of no column": dict(
        index=(["Non_unique", "Key_name", "Seq_in_index", "Column_name"], [["0", "PRIMARY", "1", "nope"]])
    ),
    "key order not a number": dict(
        index=(["Non_unique", "Key_name", "Seq_in_index", "Column_name"], [["0", "PRIMARY", "first", "id"]])
    ),
    "index rows without Key_name": dict(index=(["Column_name"], [["id"]])),
    "create table of one column": dict(create=(["Table"], [["t"]])),
    # the rows
    "row of one value": dict(rows=(["id"], [["1"]])),
    "row of three values": dict(rows=(["id", "v", "w"], [["1", b"a", b"b"]])),
    "int column not a number": dict(rows=(["id", "v"], [["one", b"a"]])),
    "text where bytes are expected": dict(rows=(["id", "v"], [["1", "a"]])),
    "key NULL at a chunk's end": dict(rows=(["id", "v"], [[None, b"a"]])),
    "fingerprint not a number": dict(
        fingerprint=(["c", "a", "b"], [["lots", "1", "2"]]), rows=(["id", "v"], [["1", b"a"]])
    ),
    "fingerprint row of one column": dict(fingerprint=(["c"], [["1"]]), rows=(["id", "v"], [["1", b"a"]])),
    "more rows than LIMIT": dict(honest=False),
    "an error after the first row": dict(
        honest=False, rows=(["id", "v"], [["1", b"a"], RowsEnd(1317, "Query execution was interrupted")])
    ),
    "the connection closed after the first row": dict(honest=False, rows=(["id", "v"], [["1", b"a"], RowsEnd()])),
    "the same key range again (was an endless snapshot)": dict(honest=False, rows=(["id", "v"], [["1", b"a"]])),
}


def _manifests(landing: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in landing.glob("src/_snapshots/*/manifest.json")]


def test_the_scripted_server_gives_a_complete_snapshot(tmp_path) -> None:
    """The answers unchanged are a usable server (both flavors): what the hostile cases change is all that fails."""
    for flavor in ({}, MYSQL):
        with serve(Answers(**flavor)) as server:
            result = take_snapshot(
                parse_mysql_uri(uri(server)), tmp_path / str(bool(flavor)), SnapshotOptions(chunk_rows=1)
            )
        assert result.rows == 2 and [m["status"] for m in _manifests(tmp_path / str(bool(flavor)))] == ["complete"]


# the server's fingerprint of a chunk is asked at read time by the Python reader only (the native reader hashes
# the rows it reads), and by both on resume
SERVER_FINGERPRINT = {"fingerprint not a number", "fingerprint row of one column"}
READERS = ["python"] + (["native"] if native_available() else [])


@pytest.mark.parametrize(
    "case, reader", [(c, r) for c in sorted(CASES) for r in READERS if r == "python" or c not in SERVER_FINGERPRINT]
)
def test_a_hostile_answer_is_a_typed_error_and_no_complete_snapshot(tmp_path, case, reader, monkeypatch) -> None:
    monkeypatch.setenv("BINLAKE_NATIVE", "1" if reader == "native" else "0")
    answers = dataclasses.replace(Answers(), **CASES[case])
    with serve(answers) as server:
        with pytest.raises(SnapshotError) as caught:
            take_snapshot(parse_mysql_uri(uri(server)), tmp_path, SnapshotOptions(chunk_rows=1))
    message = str(caught.value)
    assert "\n" not in message and "127.0.0.1" in message, message
    assert all(m["status"] != "complete" for m in _manifests(tmp_path))


@pytest.mark.skipif(not native_available(), reason="the native core is not built (scripts/setup.sh builds it)")
@pytest.mark.parametrize(
    "case, error, words",
    [
        ("an error after the first row", SnapshotError, "server error 1317: Query execution was interrupted"),
        ("the connection closed after the first row", ServerUnreachableError, "rerun (a snapshot resumes)"),
    ],
)
def test_a_result_broken_in_its_rows_is_the_same_error_with_either_reader(tmp_path, case, error, words, monkeypatch):
    for reader in ("0", "1"):
        monkeypatch.setenv("BINLAKE_NATIVE", reader)
        with serve(dataclasses.replace(Answers(), **CASES[case])) as server:
            with pytest.raises(SnapshotError) as caught:
                take_snapshot(parse_mysql_uri(uri(server)), tmp_path / reader, SnapshotOptions(chunk_rows=1))
        assert type(caught.value) is error and words in str(caught.value), (reader, str(caught.value))


def test_the_cli_prints_one_line_for_a_hostile_position(tmp_path, capsys) -> None:
    from binlake.cli import main

    with serve(dataclasses.replace(Answers(), **CASES["position 2^70"])) as server:
        code = main(["snapshot", "--source", uri(server), "--landing", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1].startswith("binlake: error:") and "expected an integer" in err[-1]
    assert isinstance(SnapshotAnswerError("x"), SnapshotError)


# --- a hostile manifest read for seeding ------------------------------------------------------------------------


def _tamper(manifest: dict, case: str) -> None:
    view, table = manifest["views"][0]["position"], manifest["tables"][0]
    if case.startswith("pos="):
        view["pos"] = int(case[4:])
    elif case.startswith("file="):
        view["file"] = case[5:]
    elif case == "duplicate columns":
        table["columns"].append(dict(table["columns"][0]))
    elif case == "key of no column":
        table["primary_key"] = ["nope"]
    elif case == "view of no view":
        table["view"] = 7


MANIFEST_CASES = [
    "pos=-1",
    f"pos={1 << 70}",
    "pos=0",
    "file=mysql-bin",
    "file=../x.000003",
    "duplicate columns",
    "key of no column",
    "view of no view",
]


@pytest.mark.parametrize("case", MANIFEST_CASES)
def test_a_complete_snapshot_that_can_not_seed_is_a_typed_error_naming_it(tmp_path, case) -> None:
    from binlake.snapshot import read_snapshots
    from binlake.snapshot.errors import InvalidSnapshotError

    with serve(Answers()) as server:
        take_snapshot(parse_mysql_uri(uri(server)), tmp_path)
    [good] = read_snapshots(tmp_path / "src")
    assert good.position.pos == 1234 and [c.name for c in good.tables[0].columns] == ["id", "v"]
    [path] = tmp_path.glob("src/_snapshots/*/manifest.json")
    manifest = json.loads(path.read_text())
    _tamper(manifest, case)
    path.write_text(json.dumps(manifest))
    with pytest.raises(InvalidSnapshotError, match=f"{path}: snapshot .* can not seed silver: .*remove the folder"):
        read_snapshots(tmp_path / "src")


def test_a_column_named_twice_is_found_whatever_the_objects() -> None:
    """Found by the snapshot fuzzer: the same name object twice passed an identity check."""
    from binlake.snapshot.validate import columns_problem

    name = "id"
    assert columns_problem([name, name]) == "the column 'id' appears twice"
    assert columns_problem(["id", "ID"]) == "the column 'ID' appears twice (as 'id')"
    assert columns_problem(["id", "v"]) is None
