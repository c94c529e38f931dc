"""The narrow bridge between row decoding and ``binlake.mysqljson`` (MySQL binary JSON, diff vectors).

A JSON column's value is a ``binlake.mysqljson.BinaryJson`` (the raw cell, decoded on demand: most consumers only
pass it on). Partial-update cells go through ``binlake.mysqljson.read_diffs``. JSON errors become
:class:`~binlake.binlog.errors.CorruptEventError` here, so the binlog layer raises only its own errors.
"""

from __future__ import annotations

from typing import Any

from binlake.binlog.errors import CorruptEventError
from binlake.mysqljson import BinaryJson, JsonError, to_text
from binlake.mysqljson import read_diffs as _read_diffs

make_json_value = BinaryJson


def json_text(value: Any) -> str:
    """MySQL's JSON text of a JSON column value (BinaryJson) or of a decoded JSON value (e.g. a diff's)."""
    try:
        return value.text if isinstance(value, BinaryJson) else to_text(value)
    except JsonError as exc:
        raise CorruptEventError(f"invalid binary JSON value: {exc}") from None


def read_diffs(cell: bytes) -> Any:
    """The JSON diffs of a partial JSON cell (the bytes after its length)."""
    try:
        return _read_diffs(cell)
    except JsonError as exc:
        raise CorruptEventError(f"invalid partial JSON diff vector: {exc}") from None
