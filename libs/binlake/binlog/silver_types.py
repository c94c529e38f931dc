"""Silver column types from TABLE_MAP column types, and value conversion between the ``binlake rows`` JSON
encoding (what bronze stores) and silver's typed values: types a reader can compute with.

| MySQL | silver (Spark SQL / Delta) |
|---|---|
| TINYINT, SMALLINT, MEDIUMINT, INT, BIGINT | the smallest integer type that holds the range: ``tinyint``/``smallint``/``int``/``bigint`` (unsigned: the next wider; BIGINT UNSIGNED: ``decimal(20,0)``) |
| YEAR | ``smallint`` |
| BIT(n) | ``bigint`` (n <= 63), ``binary`` (BIT(64), 8 bytes big-endian) |
| FLOAT, DOUBLE | ``float``, ``double`` |
| DECIMAL(p,s) | ``decimal(p,s)``; p > 38: ``string`` with the exact digits |
| DATE | ``date`` |
| DATETIME(n) | ``timestamp_ntz`` (no time zone) |
| TIMESTAMP(n) | ``timestamp`` (UTC) |
| TIME(n) | ``string``: MySQL's text (signed, up to 838:59:59; no Spark type holds it exactly) |
| CHAR, VARCHAR, TEXT, ENUM, SET | ``string`` (binary charsets: ``binary``) |
| JSON | ``string``: MySQL's JSON text |
| BINARY, VARBINARY, BLOB, GEOMETRY | ``binary`` (GEOMETRY: MySQL's SRID + WKB) |
| VECTOR | ``array<float>`` |

Zero and invalid dates MySQL can store (``0000-00-00``, ``2024-02-30`` under a relaxed ``sql_mode``) have no
value in a typed column: they become NULL there (bronze keeps the raw text; :func:`invalid_temporal` tells the
pipeline which values were nulled so it counts them). ``temporal_text=True`` keeps DATE/DATETIME/TIMESTAMP as
MySQL's text instead.
"""

from __future__ import annotations

import datetime as _dt
import json
import struct
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from binlake.binlog import constants as C
from binlake.binlog.columns import shortest_float32
from binlake.binlog.values import collation_codec

if TYPE_CHECKING:
    import pyarrow as pa

_BINARY_TYPES = frozenset({C.MYSQL_TYPE_GEOMETRY})
_CHAR_TYPES = frozenset(
    {
        C.MYSQL_TYPE_STRING,
        C.MYSQL_TYPE_VAR_STRING,
        C.MYSQL_TYPE_VARCHAR,
        C.MYSQL_TYPE_BLOB,
        C.MYSQL_TYPE_TINY_BLOB,
        C.MYSQL_TYPE_MEDIUM_BLOB,
        C.MYSQL_TYPE_LONG_BLOB,
    }
)

ColumnMeta = Sequence[Any]
"""``[name, type_code, real_type, metadata, unsigned, collation_id]``, one per column, as bronze stores them."""


def column_meta(col: Any) -> list:
    """The bronze description of a ``binlake.binlog.table.Column``."""
    return [col.name, col.type_code, col.real_type, col.metadata, bool(col.unsigned), col.collation_id]


_TEMPORAL_KINDS = frozenset({"date", "timestamp", "timestamp_ntz"})
_DATES = frozenset({C.MYSQL_TYPE_DATE, C.MYSQL_TYPE_NEWDATE})
_DATETIMES = frozenset({C.MYSQL_TYPE_DATETIME, C.MYSQL_TYPE_DATETIME2})
_TIMESTAMPS = frozenset({C.MYSQL_TYPE_TIMESTAMP, C.MYSQL_TYPE_TIMESTAMP2})
_SIGNED_INTS = {
    C.MYSQL_TYPE_TINY: ("tinyint", "smallint"),
    C.MYSQL_TYPE_SHORT: ("smallint", "int"),
    C.MYSQL_TYPE_INT24: ("int", "int"),
    C.MYSQL_TYPE_LONG: ("int", "bigint"),
    C.MYSQL_TYPE_LONGLONG: ("bigint", "decimal(20,0)"),
}


def bit_width(meta: ColumnMeta) -> int:
    md = meta[3] or 0
    return (md >> 8) * 8 + (md & 0xFF)


def silver_type(meta: ColumnMeta, temporal_text: bool = False) -> str:
    """The Spark SQL type of a column in silver (see the module's table)."""
    _, t, real, md, unsigned, collation = meta[:6]
    if t in _SIGNED_INTS:
        return _SIGNED_INTS[t][1 if unsigned else 0]
    if t == C.MYSQL_TYPE_YEAR:
        return "smallint"
    if t == C.MYSQL_TYPE_BIT:
        return "bigint" if bit_width(meta) <= 63 else "binary"
    if t == C.MYSQL_TYPE_FLOAT:
        return "float"
    if t == C.MYSQL_TYPE_DOUBLE:
        return "double"
    if t == C.MYSQL_TYPE_NEWDECIMAL:
        precision, scale = md >> 8, md & 0xFF
        return f"decimal({precision},{scale})" if precision <= 38 else "string"
    if not temporal_text:
        if t in _DATES:
            return "date"
        if t in _DATETIMES:
            return "timestamp_ntz"
        if t in _TIMESTAMPS:
            return "timestamp"
    if t == C.MYSQL_TYPE_VECTOR:
        return "array<float>"
    if t in _BINARY_TYPES:
        return "binary"
    if real in _CHAR_TYPES:
        return "string" if collation is not None and collation_codec(collation) is not None else "binary"
    return "string"


def fractional_digits(meta: ColumnMeta) -> int:
    """The fsp of DATETIME2/TIMESTAMP2/TIME2 columns (their TABLE_MAP metadata); 0 for the others."""
    return (meta[3] or 0) if meta[1] in (C.MYSQL_TYPE_DATETIME2, C.MYSQL_TYPE_TIMESTAMP2) else 0


def _hex(v: Any) -> bytes:
    return bytes.fromhex(v["hex"]) if isinstance(v, dict) else v


def _date(v: Any) -> Optional[_dt.date]:
    try:
        return _dt.date(int(v[0:4]), int(v[5:7]), int(v[8:10]))
    except (ValueError, TypeError):
        return None  # 0000-00-00, 2024-02-30, ...


def _datetime(v: Any) -> Optional[_dt.datetime]:
    try:
        frac = v[20:26] if len(v) > 19 else ""
        return _dt.datetime(
            int(v[0:4]),
            int(v[5:7]),
            int(v[8:10]),
            int(v[11:13]),
            int(v[14:16]),
            int(v[17:19]),
            int(frac.ljust(6, "0")) if frac else 0,
        )
    except (ValueError, TypeError, IndexError):
        return None


def invalid_temporal(kind: str, value: Any) -> bool:
    """Whether a non-NULL bronze value of a ``kind`` column has no typed value (a zero or invalid date)."""
    if value is None or kind not in _TEMPORAL_KINDS:
        return False
    return (_date(value) if kind == "date" else _datetime(value)) is None


def to_silver(kind: str) -> Callable[[Any], Any]:
    """Converter from the JSON encoding to silver's Python value for a column of Spark type ``kind``."""
    if kind in ("tinyint", "smallint", "int", "bigint"):
        return lambda v: v
    if kind.startswith("decimal"):
        return lambda v: None if v is None else Decimal(v) if isinstance(v, str) else Decimal(int(v))
    if kind in ("double", "float"):
        return lambda v: None if v is None else float(v)
    if kind == "binary":
        return lambda v: None if v is None else v.to_bytes(8, "big") if isinstance(v, int) else _hex(v)
    if kind == "date":
        return lambda v: None if v is None else _date(v)
    if kind == "timestamp_ntz":
        return lambda v: None if v is None else _datetime(v)
    if kind == "timestamp":
        return lambda v: None if v is None or (d := _datetime(v)) is None else d.replace(tzinfo=_dt.timezone.utc)
    if kind.startswith("array"):
        return lambda v: None if v is None else [float(x) for x in (json.loads(v) if isinstance(v, str) else v)]
    return lambda v: v if v is None or isinstance(v, str) else _text(v)


def _text(v: Any) -> str:
    return json.dumps(v, separators=(",", ":")) if isinstance(v, list) else str(v)


def from_silver(kind: str, meta: Optional[ColumnMeta] = None) -> Callable[[Any], Any]:
    """Converter from silver's value (as Spark or delta-rs returns it) back to the JSON encoding bronze holds
    (``meta``, the column's bronze description, gives the fractional digits of DATETIME/TIMESTAMP and the
    width of BIT)."""
    fsp = fractional_digits(meta) if meta is not None else 0
    if kind.startswith("decimal"):
        return lambda v: None if v is None else (format(v, "f") if kind != "decimal(20,0)" else int(v))
    if kind == "binary":
        if meta is not None and meta[1] == C.MYSQL_TYPE_BIT:
            return lambda v: None if v is None else int.from_bytes(bytes(v), "big")
        return lambda v: None if v is None else {"hex": bytes(v).hex()}
    if kind == "float":
        return lambda v: None if v is None else shortest_float32(struct.pack("<f", v))
    if kind == "date":
        return lambda v: None if v is None else v.isoformat()
    if kind in ("timestamp", "timestamp_ntz"):

        def text(v: Any) -> Optional[str]:
            if v is None:
                return None
            if v.tzinfo is not None:
                v = v.astimezone(_dt.timezone.utc)
            return v.strftime("%Y-%m-%d %H:%M:%S") + ("." + f"{v.microsecond:06d}"[:fsp] if fsp else "")

        return text
    if kind.startswith("array"):
        return lambda v: None if v is None else [shortest_float32(struct.pack("<f", x)) for x in v]
    return lambda v: v


# --- silver types as Arrow types (Delta tables' Arrow form), small Arrow tables from rows ---

_ARROW = {
    "bigint": "int64",
    "long": "int64",
    "int": "int32",
    "integer": "int32",
    "smallint": "int16",
    "tinyint": "int8",
    "string": "string",
    "binary": "binary",
    "double": "float64",
    "float": "float32",
    "boolean": "bool_",
    "date": "date32",
}


def arrow_type(kind: str) -> "pa.DataType":
    """The Arrow type of a Spark SQL type name (as silver and meta tables use them)."""
    import pyarrow as pa

    if kind.startswith("decimal("):
        p, s = kind[8:-1].split(",")
        return pa.decimal128(int(p), int(s))
    if kind == "timestamp":
        return pa.timestamp("us", tz="UTC")
    if kind == "timestamp_ntz":
        return pa.timestamp("us")
    if kind.startswith("array<") and kind.endswith(">"):
        return pa.list_(arrow_type(kind[6:-1]))
    return getattr(pa, _ARROW[kind])()


def arrow_schema(columns: Sequence[tuple[str, str]]) -> "pa.Schema":
    import pyarrow as pa

    return pa.schema([pa.field(n, arrow_type(k)) for n, k in columns])


def to_arrow(columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[Any]]) -> "pa.Table":
    """A small Arrow table from row tuples in ``columns`` order."""
    import pyarrow as pa

    schema = arrow_schema(columns)
    cols: list[Sequence[Any]] = list(zip(*rows)) if rows else [[] for _ in columns]
    return pa.Table.from_arrays([pa.array(list(c), type=f.type) for c, f in zip(cols, schema)], schema=schema)
