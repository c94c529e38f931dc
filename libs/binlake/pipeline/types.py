"""Silver column types from TABLE_MAP column types, and value conversion between the ``binlake rows`` JSON
encoding (what bronze stores) and silver's typed values.

Silver types, chosen so that every MySQL value is kept exactly:
integers, YEAR and BIT -> ``bigint`` (BIGINT UNSIGNED and BIT(64) -> ``decimal(20,0)``); FLOAT/DOUBLE -> ``double``;
DECIMAL(p,s) -> ``decimal(p,s)`` (p <= 38, else ``string``); DATE/TIME/DATETIME/TIMESTAMP -> ``string`` in
MySQL's text form (zero dates and TIME beyond 24 h have no Spark type); character, ENUM, SET and JSON (MySQL's
JSON text) -> ``string``; binary strings, BLOB, GEOMETRY -> ``binary``; VECTOR -> ``string`` (JSON array).
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any, Callable, Sequence

from binlake.binlog import constants as C
from binlake.binlog.values import collation_codec

_INTEGER_TYPES = frozenset({C.MYSQL_TYPE_TINY, C.MYSQL_TYPE_SHORT, C.MYSQL_TYPE_INT24, C.MYSQL_TYPE_LONG,
                            C.MYSQL_TYPE_LONGLONG, C.MYSQL_TYPE_YEAR, C.MYSQL_TYPE_BIT})
_BINARY_TYPES = frozenset({C.MYSQL_TYPE_GEOMETRY})
_CHAR_TYPES = frozenset({C.MYSQL_TYPE_STRING, C.MYSQL_TYPE_VAR_STRING, C.MYSQL_TYPE_VARCHAR, C.MYSQL_TYPE_BLOB,
                         C.MYSQL_TYPE_TINY_BLOB, C.MYSQL_TYPE_MEDIUM_BLOB, C.MYSQL_TYPE_LONG_BLOB})

ColumnMeta = Sequence[Any]
"""``[name, type_code, real_type, metadata, unsigned, collation_id]``, one per column, as bronze stores them."""


def column_meta(col: Any) -> list:
    """The bronze description of a ``binlake.binlog.table.Column``."""
    return [col.name, col.type_code, col.real_type, col.metadata, bool(col.unsigned), col.collation_id]


def silver_type(meta: ColumnMeta) -> str:
    """The Spark SQL type of a column in silver."""
    _, t, real, md, unsigned, collation = meta[:6]
    if t == C.MYSQL_TYPE_BIT and (md >> 8) * 8 + (md & 0xFF) == 64:
        return "decimal(20,0)"                  # BIT(64) holds 2^64 - 1
    if t in _INTEGER_TYPES:
        return "decimal(20,0)" if t == C.MYSQL_TYPE_LONGLONG and unsigned else "bigint"
    if t in (C.MYSQL_TYPE_FLOAT, C.MYSQL_TYPE_DOUBLE):
        return "double"
    if t == C.MYSQL_TYPE_NEWDECIMAL:
        precision, scale = md >> 8, md & 0xFF
        return f"decimal({precision},{scale})" if precision <= 38 else "string"
    if t in _BINARY_TYPES:
        return "binary"
    if real in _CHAR_TYPES:
        return "string" if collation is not None and collation_codec(collation) is not None else "binary"
    return "string"


def _hex(v: Any) -> bytes:
    return bytes.fromhex(v["hex"]) if isinstance(v, dict) else v


def to_silver(kind: str) -> Callable[[Any], Any]:
    """Converter from the JSON encoding to silver's Python value for a column of Spark type ``kind``."""
    if kind == "bigint":
        return lambda v: v
    if kind.startswith("decimal"):
        return lambda v: None if v is None else Decimal(v) if isinstance(v, str) else Decimal(int(v))
    if kind == "double":
        return lambda v: None if v is None else float(v)
    if kind == "binary":
        return lambda v: None if v is None else _hex(v)
    return lambda v: v if v is None or isinstance(v, str) else _text(v)


def _text(v: Any) -> str:
    return json.dumps(v, separators=(",", ":")) if isinstance(v, list) else str(v)


def from_silver(kind: str) -> Callable[[Any], Any]:
    """Converter from silver's value (as Spark returns it) back to the JSON encoding."""
    if kind.startswith("decimal"):
        return lambda v: None if v is None else (format(v, "f") if kind != "decimal(20,0)" else int(v))
    if kind == "binary":
        return lambda v: None if v is None else {"hex": bytes(v).hex()}
    return lambda v: v
