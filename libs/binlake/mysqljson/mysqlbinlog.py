"""The ``mysqlbinlog -v`` pseudo-SQL of a partial JSON update (WL#2955 section 6; log_event.cc ``print_json_diff``).

Function names print first, in reverse order of the diffs, one per run of consecutive diffs with the same name,
separated by ``"\\n###      "``; then the column, and then every diff in order (quoted path, and the value
unless REMOVE), with ``)`` closing a run and ``",\\n###      "`` between diffs:

    JSON_INSERT(
    ###      JSON_REMOVE(
    ###      JSON_REPLACE(@2, '$.a', 7,
    ###      '$.b[1]', 'bb'),
    ###      '$.c'),
    ###      '$.e', 'ee')

INSERT prints as JSON_ARRAY_INSERT when the path ends with ``]``. Values print as log_event.cc's
``json_wrapper_to_string``: null, numbers and booleans bare; strings, temporals and opaque values quoted;
objects and arrays as ``CAST('<json text>' AS JSON)``. Quoting is ``my_b_write_quoted``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from binlake.mysqljson.diff import DiffOp, JsonDiff
from binlake.mysqljson.text import format_decimal, format_double, to_text
from binlake.mysqljson.values import JsonDate, JsonDatetime, JsonOpaque, JsonTime

LINE_SEPARATOR = "\n###      "


def _quote_table() -> dict[int, str]:
    """``get_quote_table``: C escapes for a few controls, ``\\xNN`` for the other control characters."""
    table = {code: f"\\x{code:02x}" for code in range(32)}
    table.update({ord("\b"): "\\b", ord("\f"): "\\f", ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"})
    table.update({ord("\\"): "\\\\", ord("'"): "\\'"})
    return table


_QUOTE_TABLE = _quote_table()


def write_quoted(text: str) -> str:
    """``my_b_write_quoted``: a single-quoted string."""
    return "'" + text.translate(_QUOTE_TABLE) + "'"


def function_name(diff: JsonDiff) -> str:
    """``json_diff_operation_name``."""
    if diff.op == DiffOp.REPLACE:
        return "JSON_REPLACE"
    if diff.op == DiffOp.REMOVE:
        return "JSON_REMOVE"
    return "JSON_ARRAY_INSERT" if str(diff.path).endswith("]") else "JSON_INSERT"


def value_sql(value: object) -> str:
    """``json_wrapper_to_string`` (log_event.cc): the value as an SQL expression of the same JSON type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return format_double(value)
    if isinstance(value, Decimal):
        return format_decimal(value)
    if isinstance(value, str):
        return write_quoted(value)
    if isinstance(value, (JsonDate, JsonDatetime, JsonTime, JsonOpaque)):
        return write_quoted(value.to_text())
    return f"CAST({write_quoted(to_text(value))} AS JSON)"


def render_mysqlbinlog(column: str, diffs: Sequence[JsonDiff]) -> str:
    """``print_json_diff``: the text after ``###   @N=`` for a partial JSON column (``column`` like ``@2``)."""
    names = [function_name(diff) for diff in diffs]
    out: list[str] = []
    for i in range(len(names) - 1, -1, -1):
        if i == 0 or names[i - 1] != names[i]:
            if out:
                out.append(LINE_SEPARATOR)
            out.append(names[i] + "(")
    out.append(column)
    if not diffs:
        return "".join(out)
    out.append(", ")
    for i, diff in enumerate(diffs):
        out.append(write_quoted(str(diff.path)))
        if diff.op != DiffOp.REMOVE:
            out.append(", ")
            out.append(value_sql(diff.value))
        last = i == len(diffs) - 1
        if last or names[i + 1] != names[i]:
            out.append(")")
        if not last:
            out.append("," + LINE_SEPARATOR)
    return "".join(out)
