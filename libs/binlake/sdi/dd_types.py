"""Data-dictionary enumerations as they appear (as numbers) in SDI JSON.

Mirrors ``sql/dd/types/column.h`` (``enum_column_types``, ``enum_hidden_type``), ``index.h``
(``enum_index_type``, ``enum_index_algorithm``, ``enum_index_element_order``), ``foreign_key.h`` and
``table.h`` (``enum_row_format``, ``enum_partition_type``).
"""

from __future__ import annotations

# dd::enum_column_types
DECIMAL = 1
TINY = 2
SHORT = 3
LONG = 4
FLOAT = 5
DOUBLE = 6
TYPE_NULL = 7
TIMESTAMP = 8
LONGLONG = 9
INT24 = 10
DATE = 11
TIME = 12
DATETIME = 13
YEAR = 14
NEWDATE = 15
VARCHAR = 16
BIT = 17
TIMESTAMP2 = 18
DATETIME2 = 19
TIME2 = 20
NEWDECIMAL = 21
ENUM = 22
SET = 23
TINY_BLOB = 24
MEDIUM_BLOB = 25
LONG_BLOB = 26
BLOB = 27
VAR_STRING = 28
STRING = 29
GEOMETRY = 30
JSON = 31
VECTOR = 32

COLUMN_TYPE_NAMES: dict[int, str] = {
    v: k for k, v in list(globals().items()) if k.isupper() and isinstance(v, int) and 1 <= v <= 32
}

# dd::Column::enum_hidden_type
HT_VISIBLE = 1
HT_HIDDEN_SE = 2  # added by the storage engine (DB_TRX_ID, DB_ROLL_PTR, DB_ROW_ID, FTS_DOC_ID)
HT_HIDDEN_SQL = 3  # added by the SQL layer (functional index parts)
HT_HIDDEN_USER = 4  # INVISIBLE columns

# dd::Index::enum_index_type
IT_PRIMARY = 1
IT_UNIQUE = 2
IT_MULTIPLE = 3
IT_FULLTEXT = 4
IT_SPATIAL = 5

# dd::Foreign_key::enum_rule
FK_RULE_NAMES = {1: "NO ACTION", 2: "RESTRICT", 3: "CASCADE", 4: "SET NULL", 5: "SET DEFAULT"}

# SDI record types in the tablespace SDI index (dict0sdi: SDI_TYPE_TABLE / SDI_TYPE_TABLESPACE)
SDI_TYPE_TABLE = 1
SDI_TYPE_TABLESPACE = 2

INTEGER_TYPES = frozenset({TINY, SHORT, INT24, LONG, LONGLONG})
NUMERIC_TYPES = INTEGER_TYPES | {DECIMAL, NEWDECIMAL, FLOAT, DOUBLE}
BLOB_TYPES = frozenset({TINY_BLOB, MEDIUM_BLOB, LONG_BLOB, BLOB})
STRING_TYPES = frozenset({VARCHAR, STRING, VAR_STRING}) | BLOB_TYPES
CHARACTER_TYPES = STRING_TYPES | {ENUM, SET}
