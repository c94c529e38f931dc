"""Column names and attributes for a table's binlog row layout, when TABLE_MAP carries no optional metadata.

With ``binlog_row_metadata=MINIMAL`` (MySQL's default) a TABLE_MAP_EVENT has column types and type metadata
only: no names, no signedness, no charsets. A :data:`SchemaProvider` fills that gap from somewhere else (the
SDI schema registry, see ``binlake.sdi``); the row decoder never queries a live database.

This module is the contract between the binlog decoder and its schema sources; it holds no decoding logic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence


@dataclass(frozen=True, slots=True)
class ColumnInfo:
    """What a binlog row needs to know about one column, beyond TABLE_MAP's type and metadata.

    Mirrors the fields of TABLE_MAP optional metadata (``Table_map_log_event::Optional_metadata_field_type``):
    SIGNEDNESS, DEFAULT_CHARSET/COLUMN_CHARSET (collation ids), COLUMN_NAME, SET/ENUM_STR_VALUE, GEOMETRY_TYPE,
    SIMPLE/PRIMARY_KEY(_WITH_PREFIX), COLUMN_VISIBILITY, VECTOR_DIMENSIONALITY.
    """

    name: str
    type_code: int | None = None  # MySQL field type (MYSQL_TYPE_*), to check against TABLE_MAP
    unsigned: bool = False
    collation_id: int | None = None  # None: binary or not a character column
    enum_values: tuple[str, ...] | None = None
    set_values: tuple[str, ...] | None = None
    geometry_type: int | None = None
    visible: bool = True
    vector_dimensions: int | None = None
    fsp: int | None = None  # fractional second digits of TIME/DATETIME/TIMESTAMP: TABLE_MAP lacks
    # them for MariaDB's 5.3 temporal format (mysql56_temporal_format=OFF)


@dataclass(frozen=True, slots=True)
class TableSchema:
    """The binlog row layout of one table version: its columns in TABLE_MAP order and its primary key.

    ``primary_key`` holds column indexes into ``columns`` with an optional prefix length (0 = whole column),
    as TABLE_MAP's PRIMARY_KEY_WITH_PREFIX does.
    """

    db: str
    table: str
    columns: tuple[ColumnInfo, ...]
    primary_key: tuple[tuple[int, int], ...] = ()
    source: str = ""  # where this definition came from (e.g. an SDI file and its version)


# Called as provider(db, table, column_types) with the TABLE_MAP's column type codes; returns the schema whose
# layout matches, or None when it knows no such table (the decoder then names columns @1..@n). A provider that
# knows the table but finds the layout incompatible raises binlake.binlog.errors.SchemaMismatchError.
SchemaProvider = Callable[[str, str, Sequence[int]], Optional[TableSchema]]
