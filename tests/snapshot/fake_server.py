"""A scripted server answering ``binlake snapshot``'s statements (tests/transport/fake_mysql.py underneath).

:class:`Answers` holds what a MariaDB (or MySQL) server would answer for one table ``d.t`` (``id INT`` primary
key, ``v VARCHAR`` utf8mb4); a test replaces one answer with a hostile one and checks that the snapshot stops
with a typed error and is not marked complete.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional

from tests.transport.fake_mysql import FakeMySQL8, Script

Result = tuple[list[str], list[list[Any]]]


def _dicts(rows: list[dict[str, Any]]) -> Result:
    names = list(rows[0]) if rows else ["x"]
    return names, [[r.get(n) for n in names] for r in rows]


def column(
    name: str,
    data_type: str = "int",
    column_type: Optional[str] = None,
    nullable: str = "NO",
    charset: Optional[str] = None,
    precision: Any = None,
    scale: Any = None,
) -> dict[str, Any]:
    return {
        "COLUMN_NAME": name,
        "DATA_TYPE": data_type,
        "COLUMN_TYPE": column_type or data_type,
        "IS_NULLABLE": nullable,
        "CHARACTER_SET_NAME": charset,
        "COLLATION_NAME": f"{charset}_general_ci" if charset else None,
        "NUMERIC_PRECISION": precision,
        "NUMERIC_SCALE": scale,
        "DATETIME_PRECISION": None,
    }


@dataclass
class Answers:
    """What the server answers; each field is one statement's result (names, rows)."""

    flavor: str = "mariadb"
    version: Result = (["v", "id"], [["10.11.9-MariaDB-log", "1"]])
    log_bin: Result = (["l"], [["1"]])
    status: Result = (
        ["Variable_name", "Value"],
        [["Binlog_snapshot_file", "mysql-bin.000003"], ["Binlog_snapshot_position", "1234"]],
    )
    gtid: Result = (["g"], [["0-1-5"]])
    master_status: Result = field(
        default_factory=lambda: _dicts(
            [
                {
                    "File": "binlog.000007",
                    "Position": "157",
                    "Binlog_Do_DB": "",
                    "Binlog_Ignore_DB": "",
                    "Executed_Gtid_Set": "",
                }
            ]
        )
    )
    tables: Result = (["TABLE_SCHEMA", "TABLE_NAME"], [["d", "t"]])
    engine: Result = (["ENGINE", "TABLE_ROWS"], [["InnoDB", "2"]])
    columns: Result = field(
        default_factory=lambda: _dicts(
            [column("id", "int", "int(11)"), column("v", "varchar", "varchar(20)", "YES", "utf8mb4")]
        )
    )
    index: Result = field(
        default_factory=lambda: _dicts(
            [
                {
                    "Table": "t",
                    "Non_unique": "0",
                    "Key_name": "PRIMARY",
                    "Seq_in_index": "1",
                    "Column_name": "id",
                    "Null": "",
                    "Sub_part": None,
                }
            ]
        )
    )
    create: Result = (
        ["Table", "Create Table"],
        [["t", "CREATE TABLE `t` (`id` int NOT NULL, `v` varchar(20), PRIMARY KEY (`id`)) ENGINE=InnoDB"]],
    )
    rows: Result = (["id", "v"], [["1", b"a"], ["2", None]])
    fingerprint: Result = (["c", "a", "b"], [["2", "1", "2"]])
    honest: bool = True  # the rows answer honours the read's key range and LIMIT

    def script(self) -> Script:
        greeting = "10.11.9-MariaDB-log" if self.flavor == "mariadb" else "8.4.0"
        return Script([("binlog.000001", b"")], version=greeting, answer=self.answer)

    def read(self, sql: str) -> Result:
        """The rows answer as a server runs the read: keys after the range's lower bound, at most LIMIT rows."""
        names, rows = self.rows
        if not self.honest:
            return names, rows
        lo = re.search(r"`id` > (\d+)", sql)
        limit = re.search(r"LIMIT (\d+)$", sql)
        rows = [r for r in rows if not isinstance(r, list) or _after(r, int(lo.group(1)) if lo else None)]
        return names, rows[: int(limit.group(1))] if limit else rows

    def answer(self, sql: str) -> Any:
        s = " ".join(sql.split())
        u = s.upper()
        table = {
            "SELECT VERSION(), @@SERVER_ID": self.version,
            "SELECT @@LOG_BIN": self.log_bin,
            "SHOW STATUS LIKE 'BINLOG_SNAPSHOT%'": self.status,
            "SELECT BINLOG_GTID_POS(": self.gtid,
            "SHOW BINARY LOG STATUS": self.master_status if self.flavor == "mysql" else None,
            "SELECT TABLE_SCHEMA, TABLE_NAME FROM": self.tables,
            "SELECT ENGINE, TABLE_ROWS": self.engine,
            "SELECT COLUMN_NAME,": self.columns,
            "SHOW INDEX FROM": self.index,
            "SHOW CREATE TABLE": self.create,
            "SELECT COUNT(*), BIT_XOR(": self.fingerprint,
        }
        for prefix, result in table.items():
            if u.startswith(prefix):
                return result if result is not None else (1064, "You have an error in your SQL syntax")
        if re.match(r"SELECT .* FROM `", s):
            return self.read(s)
        if u.startswith(("START TRANSACTION", "COMMIT", "FLUSH TABLES", "UNLOCK TABLES", "SET ")):
            return "ok"
        return None


def _after(row: list[Any], lo: Optional[int]) -> bool:
    """Whether a row's key (its first value) is after ``lo``; a key that is no integer is kept (hostile rows)."""
    try:
        return lo is None or int(row[0]) > lo
    except (TypeError, ValueError, IndexError):
        return True


def serve(answers: Answers) -> FakeMySQL8:
    return FakeMySQL8(answers.script())


def uri(server: FakeMySQL8) -> str:
    return f"mysql://snap@127.0.0.1:{server.port}/?server_id=4201&name=src"
