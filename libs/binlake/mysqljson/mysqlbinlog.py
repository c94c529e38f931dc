"""The ``mysqlbinlog -v`` pseudo-SQL of a partial JSON update (WL#2955 section 6; log_event.cc ``print_json_diff``).

Consecutive diffs with the same operation share one function call; calls nest in reverse order, so the first
diffs sit innermost next to ``@column``:

    JSON_INSERT(
    JSON_REMOVE(
    JSON_REPLACE(@2, '$.a', 7,
    '$.b[1]', 'bb'),
    '$.c'),
    '$.e', 'ee')

with the continuation ``NEWLINE -> ',\\n###      '`` between parts. INSERT prints as JSON_ARRAY_INSERT when the
path's last leg is an array cell. Values print as ``json_wrapper_to_string`` does: numbers and literals bare,
strings as quoted SQL strings, objects/arrays/opaque values as ``CAST('<json text>' AS JSON)``.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Sequence

from binlake.mysqljson.diff import DiffOp, JsonDiff
from binlake.mysqljson.path import LegType
from binlake.mysqljson.text import format_decimal, format_double, to_text

NEWLINE = ",\n###      "
_SQL_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\0": "\\0", "\x1a": "\\Z"}


def function_name(diff: JsonDiff) -> str:
    if diff.op == DiffOp.REPLACE:
        return "JSON_REPLACE"
    if diff.op == DiffOp.REMOVE:
        return "JSON_REMOVE"
    legs = diff.path.legs
    return "JSON_ARRAY_INSERT" if legs and legs[-1].type == LegType.ARRAY_CELL else "JSON_INSERT"


def sql_quote(text: str) -> str:
    """A single-quoted SQL string literal (``my_b_write_quoted`` with readable escapes)."""
    return "'" + "".join(_SQL_ESCAPES.get(char, char) for char in text) + "'"


def sql_value(value: object) -> str:
    """``json_wrapper_to_string`` of log_event.cc: a JSON value as an SQL expression of the same JSON type."""
    if value is None:
        return "NULL"  # JSON_SET(..., NULL) stores the JSON null literal
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return format_double(value)
    if isinstance(value, Decimal):
        return format_decimal(value)
    if isinstance(value, str):
        return sql_quote(value)
    return f"CAST({sql_quote(to_text(value))} AS JSON)"


def render_mysqlbinlog(column: str, diffs: Sequence[JsonDiff]) -> str:
    """The text after ``###   @COL=`` for a partial JSON column, e.g. ``render_mysqlbinlog("@2", diffs)``."""
    if not diffs:
        return column
    groups: list[list[JsonDiff]] = []
    for diff in diffs:
        if groups and function_name(groups[-1][0]) == function_name(diff):
            groups[-1].append(diff)
        else:
            groups.append([diff])
    opening = "".join(function_name(group[0]) + "(" + NEWLINE.lstrip(",") for group in reversed(groups[1:]))
    parts = [opening + function_name(groups[0][0]) + "(" + column]
    for number, group in enumerate(groups):
        args = []
        for diff in group:
            arg = sql_quote(str(diff.path))
            if diff.op != DiffOp.REMOVE:
                arg += ", " + sql_value(diff.value)
            args.append(arg)
        text = NEWLINE.join(args) + ")"
        parts.append((", " if number == 0 else NEWLINE) + text)
    return "".join(parts)
