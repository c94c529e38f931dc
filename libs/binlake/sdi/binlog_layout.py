"""From a table definition (SDI) to the column layout of its binlog rows, for the row decoder.

MySQL writes one TABLE_MAP column per ``TABLE_SHARE`` field (``Table_map_log_event``: ``m_colcnt =
s->fields``), in ``ordinal_position`` order: every column of the data dictionary except those the storage engine
adds (``HT_HIDDEN_SE``: DB_TRX_ID, DB_ROLL_PTR, DB_ROW_ID, FTS_DOC_ID). INVISIBLE columns (``HT_HIDDEN_USER``),
the hidden generated columns of functional indexes (``HT_HIDDEN_SQL``) and virtual generated columns are logged.
The column type is ``Field::binlog_type()``: ENUM and SET are logged as MYSQL_TYPE_STRING, DATE as
MYSQL_TYPE_DATE, all BLOB/TEXT sizes as MYSQL_TYPE_BLOB.
"""

from __future__ import annotations

from typing import Iterable, Optional, Sequence

from binlake.binlog import constants as C
from binlake.binlog.errors import SchemaMismatchError
from binlake.binlog.schema import ColumnInfo, TableSchema
from binlake.sdi import dd_types as T
from binlake.sdi.charsets import BINARY_COLLATION_ID, charset_of
from binlake.sdi.model import Column, Table

# dd::enum_column_types -> enum_field_types as written in TABLE_MAP (Field::binlog_type())
DD_TO_BINLOG_TYPE: dict[int, int] = {
    T.DECIMAL: C.MYSQL_TYPE_DECIMAL,
    T.TINY: C.MYSQL_TYPE_TINY,
    T.SHORT: C.MYSQL_TYPE_SHORT,
    T.LONG: C.MYSQL_TYPE_LONG,
    T.FLOAT: C.MYSQL_TYPE_FLOAT,
    T.DOUBLE: C.MYSQL_TYPE_DOUBLE,
    T.TYPE_NULL: C.MYSQL_TYPE_NULL,
    T.TIMESTAMP: C.MYSQL_TYPE_TIMESTAMP,
    T.LONGLONG: C.MYSQL_TYPE_LONGLONG,
    T.INT24: C.MYSQL_TYPE_INT24,
    T.DATE: C.MYSQL_TYPE_DATE,
    T.TIME: C.MYSQL_TYPE_TIME,
    T.DATETIME: C.MYSQL_TYPE_DATETIME,
    T.YEAR: C.MYSQL_TYPE_YEAR,
    T.NEWDATE: C.MYSQL_TYPE_DATE,
    T.VARCHAR: C.MYSQL_TYPE_VARCHAR,
    T.BIT: C.MYSQL_TYPE_BIT,
    T.TIMESTAMP2: C.MYSQL_TYPE_TIMESTAMP2,
    T.DATETIME2: C.MYSQL_TYPE_DATETIME2,
    T.TIME2: C.MYSQL_TYPE_TIME2,
    T.NEWDECIMAL: C.MYSQL_TYPE_NEWDECIMAL,
    T.ENUM: C.MYSQL_TYPE_STRING,
    T.SET: C.MYSQL_TYPE_STRING,
    T.TINY_BLOB: C.MYSQL_TYPE_BLOB,
    T.MEDIUM_BLOB: C.MYSQL_TYPE_BLOB,
    T.LONG_BLOB: C.MYSQL_TYPE_BLOB,
    T.BLOB: C.MYSQL_TYPE_BLOB,
    T.VAR_STRING: C.MYSQL_TYPE_VAR_STRING,
    T.STRING: C.MYSQL_TYPE_STRING,
    T.GEOMETRY: C.MYSQL_TYPE_GEOMETRY,
    T.JSON: C.MYSQL_TYPE_JSON,
    T.VECTOR: C.MYSQL_TYPE_VECTOR,
}
_PREFIX_ALWAYS = T.BLOB_TYPES | {T.GEOMETRY, T.JSON}  # Field_blob::key_length() is 0: any key part is a prefix


def _binlog_order(table: Table) -> list[int]:
    """Positions in ``table.columns`` of the TABLE_MAP columns, in TABLE_MAP order."""
    keep = (i for i, c in enumerate(table.columns) if c.hidden != T.HT_HIDDEN_SE)
    return sorted(keep, key=lambda i: table.columns[i].ordinal_position)


def binlog_columns(table: Table) -> list[Column]:
    """The table's columns in TABLE_MAP order."""
    return [table.columns[i] for i in _binlog_order(table)]


def binlog_type(col: Column) -> int:
    """The MYSQL_TYPE_* code TABLE_MAP carries for this column."""
    try:
        return DD_TO_BINLOG_TYPE[col.type]
    except KeyError:
        raise SchemaMismatchError(
            f"column `{col.name}` has data-dictionary type {col.type}, which binlake can not "
            f"map to a binlog column type"
        ) from None


def _column_info(col: Column) -> ColumnInfo:
    collation: Optional[int] = None
    if col.type in T.CHARACTER_TYPES and col.collation_id != BINARY_COLLATION_ID:
        collation = col.collation_id
    geometry = None
    if col.type == T.GEOMETRY:
        geometry = int(col.options_map().get("geom_type", "0"))
    return ColumnInfo(
        name=col.name,
        type_code=binlog_type(col),
        unsigned=col.is_unsigned and col.type in T.NUMERIC_TYPES,
        collation_id=collation,
        enum_values=col.element_names if col.type == T.ENUM else None,
        set_values=col.element_names if col.type == T.SET else None,
        geometry_type=geometry,
        visible=col.hidden != T.HT_HIDDEN_USER,
        vector_dimensions=col.char_length // 4 if col.type == T.VECTOR else None,
    )


def _prefix(col: Column, length: int) -> int:
    """Key-part prefix in characters, 0 for a whole column (``init_primary_key_field``: length / mbmaxlen)."""
    if col.type in _PREFIX_ALWAYS or (col.type in T.STRING_TYPES and length < col.char_length):
        cs = charset_of(col.collation_id)
        return length // (cs.mbmaxlen if cs is not None else 1)
    return 0


def _primary_key(table: Table, positions: dict[int, int]) -> tuple[tuple[int, int], ...]:
    """TABLE_SHARE::primary_key: the PRIMARY index, else the first UNIQUE index whose parts are all NOT NULL and
    whole columns (``open_table_def`` promotes it)."""
    indexes = sorted((i for i in table.indexes if not i.hidden), key=lambda i: i.ordinal_position)
    candidates = [i for i in indexes if i.type == T.IT_PRIMARY] or [i for i in indexes if i.type == T.IT_UNIQUE]
    for idx in candidates:
        parts = [e for e in sorted(idx.elements, key=lambda e: e.ordinal_position) if not e.hidden]
        if not parts or any(e.column_opx not in positions or not 0 <= e.column_opx < len(table.columns) for e in parts):
            continue
        key = tuple((positions[e.column_opx], _prefix(table.columns[e.column_opx], e.length)) for e in parts)
        if idx.type == T.IT_PRIMARY:
            return key
        if all(p == 0 and not table.columns[e.column_opx].is_nullable for (_, p), e in zip(key, parts)):
            return key
    return ()


def table_schema(table: Table, source: str = "") -> TableSchema:
    """The binlog row layout of ``table`` (``binlake.binlog.schema.TableSchema``)."""
    order = _binlog_order(table)
    positions = {opx: k for k, opx in enumerate(order)}
    cols = [table.columns[i] for i in order]
    return TableSchema(
        db=table.schema_ref,
        table=table.name,
        columns=tuple(_column_info(c) for c in cols),
        primary_key=_primary_key(table, positions),
        source=source,
    )


def check_table_map(schema: TableSchema, column_types: Sequence[int]) -> None:
    """Raise :class:`SchemaMismatchError` unless a TABLE_MAP with ``column_types`` fits ``schema``."""
    expected = tuple(c.type_code for c in schema.columns)
    found = tuple(column_types)
    if expected == found:
        return
    where = f"`{schema.db}`.`{schema.table}`" + (f" from {schema.source}" if schema.source else "")
    if len(expected) != len(found):
        raise SchemaMismatchError(
            f"table definition {where} does not fit the TABLE_MAP",
            expected=f"{len(expected)} columns",
            found=f"{len(found)} columns",
        )
    i = next(i for i, (a, b) in enumerate(zip(expected, found)) if a != b)
    raise SchemaMismatchError(
        f"table definition {where} does not fit the TABLE_MAP at column {i + 1} (`{schema.columns[i].name}`)",
        expected=C.FIELD_TYPE_NAMES.get(expected[i], expected[i]),
        found=C.FIELD_TYPE_NAMES.get(found[i], found[i]),
    )


class SdiSchemaProvider:
    """A :data:`binlake.binlog.schema.SchemaProvider` over known table versions.

    ``provider(db, table, column_types)`` returns the newest version (last added) whose column types match the
    TABLE_MAP; None when the table is unknown; raises :class:`SchemaMismatchError` when versions exist but none fits.
    """

    def __init__(self, versions: Iterable[TableSchema] = ()) -> None:
        self._versions: dict[tuple[str, str], list[TableSchema]] = {}
        for schema in versions:
            self.add(schema)

    @classmethod
    def from_tables(cls, tables: Iterable[Table]) -> "SdiSchemaProvider":
        return cls(table_schema(t) for t in tables)

    def add(self, schema: TableSchema) -> None:
        self._versions.setdefault((schema.db, schema.table), []).append(schema)

    def versions(self, db: str, table: str) -> list[TableSchema]:
        found = self._versions.get((db, table))
        if found is None:  # identifiers may differ in letter case (lower_case_table_names)
            key = (db.lower(), table.lower())
            found = next((v for (d, t), v in self._versions.items() if (d.lower(), t.lower()) == key), [])
        return list(found)

    def __call__(self, db: str, table: str, column_types: Sequence[int]) -> Optional[TableSchema]:
        versions = self.versions(db, table)
        if not versions:
            return None
        errors = []
        for schema in reversed(versions):
            try:
                check_table_map(schema, column_types)
            except SchemaMismatchError as exc:
                errors.append(exc)
                continue
            return schema
        if len(errors) == 1:
            raise errors[0]
        raise SchemaMismatchError(
            f"none of the {len(versions)} known definitions of `{db}`.`{table}` fits the TABLE_MAP",
            expected=" | ".join(
                ",".join(
                    C.FIELD_TYPE_NAMES.get(c.type_code, "?") if c.type_code is not None else "?" for c in v.columns
                )
                for v in versions
            ),
            found=",".join(C.FIELD_TYPE_NAMES.get(t, str(t)) for t in column_types),
        )
