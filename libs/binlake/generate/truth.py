"""Ground truth: the state of each table at the end of a day, rendered as JSON lines.

One line per row, members in column order, rows ordered by primary key (tables without one: by the line).
Values: integers and doubles as JSON numbers, DECIMAL as its exact text, temporals as MySQL's text (``str`` of
the ``binlake.binlog.values`` types), character columns as strings, binary columns as base64, JSON columns as
MySQL's text of the document (``binlake.mysqljson.to_text`` with members in MySQL's key order), NULL as null.
:func:`render_row` is also what a consumer uses to compare its own replay against these files.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any, Iterable

from binlake.generate.tables import MYSQL_TYPE_JSON, TableDef
from binlake.mysqljson import to_text


def mysql_key_order(doc: Any) -> Any:
    """The document with object members in MySQL's order (shorter keys first, then by UTF-8 bytes)."""
    if isinstance(doc, dict):
        keys = sorted(doc, key=lambda k: (len(k.encode("utf-8")), k.encode("utf-8")))
        return {k: mysql_key_order(doc[k]) for k in keys}
    if isinstance(doc, list):
        return [mysql_key_order(v) for v in doc]
    return doc


def render_value(v: Any, is_json: bool = False) -> Any:
    if v is None:
        return None
    if is_json:
        return to_text(mysql_key_order(getattr(v, "value", v)))
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, (int, float, str)):
        return v
    if isinstance(v, Decimal):
        return format(v, "f")
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(v).decode("ascii")
    return str(v)


def render_row(table: TableDef, row: tuple) -> dict[str, Any]:
    return {c.name: render_value(v, c.type_code == MYSQL_TYPE_JSON) for c, v in zip(table.columns, row)}


def row_line(table: TableDef, row: tuple) -> str:
    return json.dumps(render_row(table, row), ensure_ascii=False)


def truth_lines(table: TableDef, rows: Iterable[tuple], line=None) -> list[str]:
    """The JSON lines of a table's rows, in the file's order (``line(table, row)`` renders one row)."""
    line = line or row_line
    pk = table.pk_indexes
    if pk:
        ordered = sorted(rows, key=lambda r: tuple(r[i] for i in pk))
        return [line(table, r) for r in ordered]
    return sorted(line(table, r) for r in rows)


class TruthWriter:
    """Writes ``<root>/<db>.<table>/day=<date>.jsonl``, rendering each row version once: rows are immutable
    tuples, so a row unchanged since the previous day reuses its line (while the table's columns are the same:
    a renamed column changes the lines of rows that did not change)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        # table -> (its columns, id(row) -> (row, line))
        self._lines: dict[str, tuple[tuple, dict[int, tuple[tuple, str]]]] = {}

    def write(self, table: TableDef, date: dt.date, rows: Iterable[tuple]) -> Path:
        columns, before = self._lines.get(table.qualified, (table.columns, {}))
        if columns != table.columns:
            before = {}
        now: dict[int, tuple[tuple, str]] = {}

        def line(t: TableDef, row: tuple) -> str:
            got = before.get(id(row))
            text = got[1] if got is not None and got[0] is row else row_line(t, row)
            now[id(row)] = (row, text)
            return text

        lines = truth_lines(table, rows, line)
        self._lines[table.qualified] = (table.columns, now)
        folder = self.root / table.qualified
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"day={date.isoformat()}.jsonl"
        path.write_text("".join(text + "\n" for text in lines), encoding="utf-8")
        return path
