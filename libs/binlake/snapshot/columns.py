"""Server columns to silver values: what a SELECT must ask for so that each value is exactly the one a binlog
change of that row gives in silver.

A column's definition (``information_schema.COLUMNS``) becomes the bronze column description TABLE_MAP would
give it (``[name, type_code, real_type, metadata, unsigned, collation_id]``), so its silver type is
:func:`binlake.binlog.silver_types.silver_type` of that description: one mapping for both paths. Values take the
binlog path's last two steps too: the server's text is brought to the ``binlake rows`` JSON encoding
(:func:`binlake.binlog.render.json_value`), then :func:`binlake.binlog.silver_types.to_silver` types it.

What the SELECT asks for, per kind (the server's own text is exact for the others):

- FLOAT: ``CAST(c AS DOUBLE)``: the server prints FLOAT with 6 significant digits, the DOUBLE of the same value
  exactly (shortest round trip); packed back to 4 bytes it is the stored float.
- character columns (CHAR, VARCHAR, TEXT, ENUM, SET, MariaDB's JSON): ``CAST(c AS BINARY)``, the stored bytes
  in the column's character set, decoded with the same codec as the binlog decoder
  (:func:`binlake.binlog.values.decode_text`); no conversion by the server.
- MariaDB INET6/INET4/UUID: ``CAST(c AS BINARY(n))``, the bytes the binlog carries.
- BIT: the big-endian bytes, as an integer.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

from binlake.binlog import constants as C
from binlake.binlog.columns import shortest_float32
from binlake.binlog.render import json_value
from binlake.binlog.silver_types import silver_type, to_silver
from binlake.binlog.values import charset_collation_id, collation_codec, decode_text
from binlake.snapshot.errors import SnapshotServerError
from binlake.snapshot.manifest import Column

_INTS = {
    "tinyint": C.MYSQL_TYPE_TINY,
    "smallint": C.MYSQL_TYPE_SHORT,
    "mediumint": C.MYSQL_TYPE_INT24,
    "int": C.MYSQL_TYPE_LONG,
    "integer": C.MYSQL_TYPE_LONG,
    "bigint": C.MYSQL_TYPE_LONGLONG,
}
_TEMPORALS = {
    "date": C.MYSQL_TYPE_DATE,
    "time": C.MYSQL_TYPE_TIME2,
    "datetime": C.MYSQL_TYPE_DATETIME2,
    "timestamp": C.MYSQL_TYPE_TIMESTAMP2,
}
_CHARS = {
    "char": C.MYSQL_TYPE_STRING,
    "varchar": C.MYSQL_TYPE_VARCHAR,
    "tinytext": C.MYSQL_TYPE_BLOB,
    "text": C.MYSQL_TYPE_BLOB,
    "mediumtext": C.MYSQL_TYPE_BLOB,
    "longtext": C.MYSQL_TYPE_BLOB,
    "enum": C.MYSQL_TYPE_STRING,
    "set": C.MYSQL_TYPE_STRING,
}
_BINARIES = {
    "binary": C.MYSQL_TYPE_STRING,
    "varbinary": C.MYSQL_TYPE_VARCHAR,
    "tinyblob": C.MYSQL_TYPE_BLOB,
    "blob": C.MYSQL_TYPE_BLOB,
    "mediumblob": C.MYSQL_TYPE_BLOB,
    "longblob": C.MYSQL_TYPE_BLOB,
}
_FIXED_BINARY = {"inet6": 16, "uuid": 16, "inet4": 4}  # MariaDB's types, stored (and logged) as BINARY(n)
_SPATIAL = frozenset(
    {
        "geometry",
        "point",
        "linestring",
        "polygon",
        "multipoint",
        "multilinestring",
        "multipolygon",
        "geometrycollection",
        "geomcollection",
    }
)
_BINARY_COLLATION = 63
# primary-key types whose order and comparison the keyset pagination can rely on
_KEYSET_TYPES = frozenset(
    set(_INTS) | set(_TEMPORALS) | {"decimal", "numeric", "year", "char", "varchar", "binary", "varbinary"}
)

Convert = Callable[[Any], Any]


@dataclass(frozen=True, slots=True)
class ColumnReader:
    """How one column is read: the SELECT expression, the converter from what PyMySQL returns to the silver
    value, and the key parameter form (what the server takes back in a keyset condition)."""

    column: Column
    expression: str
    to_value: Convert  # PyMySQL value (str/bytes, never None) -> JSON encoding of ``binlake rows``
    to_key: Convert  # PyMySQL value -> query parameter
    keyset: bool  # usable as (part of) a keyset pagination key
    native: tuple[str, bool] = ("raw", False)  # the native reader's kind, and whether it is read as bytes

    @property
    def name(self) -> str:
        return self.column.name

    @property
    def kind(self) -> str:
        return self.column.silver_type

    def converter(self) -> Callable[[Any], Any]:
        """PyMySQL value (or None) -> silver value."""
        silver, enc = to_silver(self.kind), self.to_value
        return lambda v: None if v is None else silver(enc(v))

    def counts_invalid(self) -> bool:
        return self.kind in ("date", "timestamp", "timestamp_ntz")


def quote_name(name: str) -> str:
    """A quoted identifier for statements that go through PyMySQL's ``%`` formatting (``%`` doubled)."""
    return "`" + name.replace("`", "``").replace("%", "%%") + "`"


def _float(raw: Any) -> float:
    return shortest_float32(struct.pack("<f", float(raw)))


def _vector(raw: bytes) -> list[float]:
    return [shortest_float32(raw[i : i + 4]) for i in range(0, len(raw) - len(raw) % 4, 4)]


def _identity(raw: Any) -> Any:
    return raw


def column_reader(info: Mapping[str, Any], *, where: str) -> ColumnReader:
    """The reader of one ``information_schema.COLUMNS`` row (keys: COLUMN_NAME, DATA_TYPE, COLUMN_TYPE,
    IS_NULLABLE, CHARACTER_SET_NAME, COLLATION_NAME, NUMERIC_PRECISION, NUMERIC_SCALE, DATETIME_PRECISION)."""
    name = str(info["COLUMN_NAME"])
    data_type = str(info["DATA_TYPE"]).lower()
    column_type = str(info["COLUMN_TYPE"])
    unsigned = "unsigned" in column_type.lower()
    charset = info.get("CHARACTER_SET_NAME")
    q = quote_name(name)
    expr, to_value, to_key = q, _identity, _identity
    collation: Optional[int] = None
    if data_type in _INTS:
        code, md = _INTS[data_type], 0
        to_value = to_key = int
    elif data_type in ("decimal", "numeric"):
        code, md = C.MYSQL_TYPE_NEWDECIMAL, int(info["NUMERIC_PRECISION"]) << 8 | int(info["NUMERIC_SCALE"] or 0)
    elif data_type == "float":
        code, md, expr, to_value = C.MYSQL_TYPE_FLOAT, 4, f"CAST({q} AS DOUBLE)", _float
    elif data_type in ("double", "real", "double precision"):
        code, md, to_value = C.MYSQL_TYPE_DOUBLE, 8, float
    elif data_type == "bit":
        bits = int(info["NUMERIC_PRECISION"])
        code, md = C.MYSQL_TYPE_BIT, (bits // 8) << 8 | bits % 8
        to_value = lambda raw: int.from_bytes(raw, "big")  # noqa: E731
    elif data_type == "year":
        code, md, to_value = C.MYSQL_TYPE_YEAR, 0, int
    elif data_type in _TEMPORALS:
        code, md = _TEMPORALS[data_type], int(info.get("DATETIME_PRECISION") or 0)
    elif data_type == "json":  # MySQL's JSON type: the server's JSON text
        code, md, collation = C.MYSQL_TYPE_JSON, 4, _BINARY_COLLATION
    elif data_type in _CHARS and charset and charset.lower() != "binary":
        code, md = _CHARS[data_type], 0
        collation = charset_collation_id(charset)
        codec = collation_codec(collation)
        if codec is None:
            raise SnapshotServerError(
                f"{where}: column {name} has the character set {charset}, which binlake does "
                "not know; exclude the table"
            )
        expr = f"CAST({q} AS BINARY)"
        to_key = lambda raw, codec=codec: decode_text(raw, codec)  # noqa: E731
        to_value = lambda raw, codec=codec: json_value(decode_text(raw, codec))  # noqa: E731
    elif data_type in _CHARS or data_type in _BINARIES:
        code, md, collation = (_CHARS.get(data_type) or _BINARIES[data_type]), 0, _BINARY_COLLATION
    elif data_type in _FIXED_BINARY:
        code, md, collation = C.MYSQL_TYPE_STRING, 0, _BINARY_COLLATION
        expr = f"CAST({q} AS BINARY({_FIXED_BINARY[data_type]}))"
    elif data_type in _SPATIAL:
        code, md, collation = C.MYSQL_TYPE_GEOMETRY, 4, _BINARY_COLLATION
    elif data_type == "vector":
        code, md, collation, to_value = C.MYSQL_TYPE_VECTOR, 4, _BINARY_COLLATION, _vector
    else:
        raise SnapshotServerError(
            f"{where}: column {name} has the type {column_type}, which binlake can not "
            "map to a silver type; exclude the table (--exclude)"
        )
    real = {"enum": C.MYSQL_TYPE_ENUM, "set": C.MYSQL_TYPE_SET}.get(data_type, code)
    meta = (name, code, real, md, unsigned, collation)
    column = Column(
        name,
        column_type,
        data_type,
        str(info["IS_NULLABLE"]).upper() == "YES",
        charset,
        info.get("COLLATION_NAME"),
        silver_type(meta),
        meta,
    )
    native = _native_kind(data_type, column.silver_type, collation_codec(collation) if charset else None)
    return ColumnReader(column, expr, to_value, to_key, data_type in _KEYSET_TYPES, native)


_NATIVE_INTS = {"tinyint": "int8", "smallint": "int16", "int": "int32", "bigint": "int64"}


def _native_kind(data_type: str, kind: str, codec: Optional[str]) -> tuple[str, bool]:
    """What ``binlake_native.TextRows`` types a column's text as (``raw``: the values' bytes, typed by
    :meth:`ColumnReader.converter`), and whether the server sends it as bytes (binary charset) or as text:
    the kinds whose converter the native parse mirrors exactly."""
    if data_type in _INTS or data_type == "year":
        return (_NATIVE_INTS[kind] if kind in _NATIVE_INTS else f"decimal:{kind[8:-1]}", False)
    if data_type in ("decimal", "numeric"):
        return (f"decimal:{kind[8:-1]}", False) if kind.startswith("decimal(") else ("ascii", False)
    if data_type in ("float", "double", "real", "double precision"):
        return (kind, False)
    if data_type in _TEMPORALS:
        return ({"date": "date", "timestamp_ntz": "timestamp", "timestamp": "timestamp_utc"}.get(kind, "ascii"), False)
    if data_type == "json":
        return ("utf8", False)
    if codec is not None:
        return ({"utf-8": "utf8", "ascii": "ascii"}.get(codec, "raw"), True)
    if kind == "binary" and data_type != "bit":
        return ("bytes", True)
    return ("raw", True)  # BIT, VECTOR: bytes
