"""How the ``meta`` tables name a source table in one string column (the ``table_name`` of ``meta.checkpoints``,
``meta.seeds`` and ``meta.run_metrics``): ``db.table`` as MySQL writes it while neither name holds a ``.`` nor
starts with a backquote, otherwise both names backquoted as MySQL quotes identifiers (a backquote inside doubled):
```a.b`.`t```. :func:`split_table_name` reverses :func:`table_name` exactly, so a database or table name with a
dot never splits at the wrong place (MySQL allows both: ``CREATE DATABASE `a.b```).

In Spark the jobs name a row's table by one tag, ``db`` NUL ``table_name`` (:func:`row_tag`, :func:`in_tables`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    from pyspark.sql import Column


def table_tag(db: str, table: str) -> str:
    """A table as one string, as :func:`row_tag` makes it of a row (MySQL names hold no NUL byte)."""
    return f"{db}\x00{table}"


def row_tag() -> "Column":
    """Column: a row's (``db``, ``table_name``) as :func:`table_tag`."""
    from pyspark.sql import functions as F

    return F.concat_ws("\x00", "db", "table_name")


def in_tables(tables: Iterable[tuple[str, str]]) -> "Column":
    """Column: whether a row's (``db``, ``table_name``) is one of ``tables`` (False for none)."""
    from pyspark.sql import functions as F

    tags = [table_tag(*t) for t in tables]
    return row_tag().isin(tags) if tags else F.lit(False)


def _plain(name: str) -> bool:
    return "." not in name and not name.startswith("`")


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def table_name(db: str, table: str) -> str:
    """The one-string name of (db, table): ``db.table``, or ```db`.`table``` when a name needs quoting."""
    return f"{db}.{table}" if _plain(db) and _plain(table) else f"{_quote(db)}.{_quote(table)}"


def _unquote(text: str, at: int) -> tuple[str, int]:
    """The backquoted name starting at ``text[at]`` and the index after its closing backquote."""
    out, i = [], at + 1
    while i < len(text):
        if text[i] == "`":
            if text.startswith("``", i):
                out.append("`")
                i += 2
                continue
            return "".join(out), i + 1
        out.append(text[i])
        i += 1
    raise ValueError(f"unterminated quoted name in {text!r}")


def split_table_name(name: str) -> tuple[str, str]:
    """(db, table) of a :func:`table_name` (a plain name splits at its first dot, as binlake wrote it before)."""
    if name.startswith("`"):
        try:
            db, i = _unquote(name, 0)
            if name.startswith(".`", i):
                table, j = _unquote(name, i + 1)
                if j == len(name):
                    return db, table
        except ValueError:
            pass
    db, _, table = name.partition(".")
    return db, table
