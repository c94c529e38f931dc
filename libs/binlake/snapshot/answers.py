"""The server's answers to the snapshot's statements, checked before they are used: every value as the statement
returns it (a number, a text, NULL only where the statement allows it), or :class:`SnapshotAnswerError` naming
the server, the statement and what was found. A hostile or damaged server stops the snapshot with one line,
never a traceback and never a snapshot marked complete with values no run can use."""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from binlake.snapshot.errors import SnapshotAnswerError
from binlake.snapshot.manifest import Position
from binlake.snapshot.validate import columns_problem, position_problem

MAX_INT = (1 << 64) - 1


def _shown(value: Any) -> str:
    return repr(value)[:80]


def row(values: Sequence[Any], width: int, where: str, what: str) -> tuple:
    """One result row of exactly ``width`` values."""
    if not isinstance(values, (tuple, list)) or len(values) != width:
        raise SnapshotAnswerError(
            f"{where}: {what}: expected a row of {width} value(s), the server returned "
            f"{_shown(values)}; is this a MySQL 8 / MariaDB 10.5+ server?"
        )
    return tuple(values)


def text(value: Any, where: str, what: str, *, null: bool = False) -> Optional[str]:
    """A text value (bytes decoded as UTF-8); None only when ``null``."""
    if value is None and null:
        return None
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            pass
    elif isinstance(value, str):
        return value
    raise SnapshotAnswerError(f"{where}: {what}: expected text, the server returned {_shown(value)}")


def integer(value: Any, where: str, what: str, *, low: int = 0, high: int = MAX_INT, null: Optional[int] = None) -> int:
    """An integer in ``low..high`` from the server's text; NULL is ``null`` when given."""
    if value is None and null is not None:
        return null
    try:
        number = int(value.decode("ascii") if isinstance(value, (bytes, bytearray)) else value)
    except (TypeError, ValueError, UnicodeDecodeError):
        number = None
    if number is None or isinstance(value, (bool, float)) or not low <= number <= high:
        raise SnapshotAnswerError(
            f"{where}: {what}: expected an integer in {low}..{high}, the server returned {_shown(value)}"
        )
    return number


def member(mapping: Mapping[str, Any], key: str, where: str, what: str) -> Any:
    if key not in mapping:
        raise SnapshotAnswerError(
            f"{where}: {what}: the server's answer has no {key} column (found {', '.join(map(str, mapping))[:160]})"
        )
    return mapping[key]


def position(file: Any, pos: Any, gtid: Any, where: str, what: str) -> Position:
    """The snapshot's binlog position, checked as :func:`binlake.snapshot.validate.position_problem` does."""
    file = text(file, where, what)
    pos = integer(pos, where, what, high=MAX_INT)
    gtid = text(gtid, where, what, null=True) or None
    reason = position_problem(file, pos, gtid)
    if reason is not None:
        raise SnapshotAnswerError(
            f"{where}: {what}: the server gives the position {str(file)[:80]!r}:{pos}, which "
            f"is no binlog position ({reason})"
        )
    return Position(file, pos, gtid)


def column_names(names: list[Any], where: str) -> None:
    reason = columns_problem(names)
    if reason is not None:
        raise SnapshotAnswerError(
            f"{where}: information_schema.COLUMNS: {reason}; the table can not be a silver "
            "table as the server describes it (exclude it with --exclude, or check the server)"
        )
