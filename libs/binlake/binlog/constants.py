"""Binlog format constants under MySQL's and MariaDB's own names.

Event type codes mirror ``enum Log_event_type`` (mysql-server ``libs/mysql/binlog/event/binlog_event.h``) and
MariaDB's additions (``sql/log_event.h``); column types mirror ``enum_field_types`` (``include/field_types.h``);
optional-metadata codes mirror ``Table_map_event::Optional_metadata_field_type``.
"""

from __future__ import annotations

# --- file and header layout (binlog_event.h) ---------------------------------------------------------------
BINLOG_MAGIC = b"\xfebin"
BIN_LOG_HEADER_SIZE = 4
LOG_EVENT_HEADER_LEN = 19  # v3/v4 common header
OLD_HEADER_LEN = 13  # v1 (MySQL 3.23) header: no log_pos, no flags
BINLOG_CHECKSUM_LEN = 4
BINLOG_CHECKSUM_ALG_DESC_LEN = 1
ST_SERVER_VER_LEN = 50

# enum_binlog_checksum_alg
BINLOG_CHECKSUM_ALG_OFF = 0
BINLOG_CHECKSUM_ALG_CRC32 = 1
BINLOG_CHECKSUM_ALG_UNDEF = 255

# first server versions that write the checksum-algorithm byte in FORMAT_DESCRIPTION (checksum_version_split)
CHECKSUM_VERSION_MYSQL = (5, 6, 1)
CHECKSUM_VERSION_MARIADB = (5, 3, 0)

# event header flags (LOG_EVENT_*_F)
LOG_EVENT_BINLOG_IN_USE_F = 0x1
LOG_EVENT_THREAD_SPECIFIC_F = 0x4
LOG_EVENT_SUPPRESS_USE_F = 0x8
LOG_EVENT_ARTIFICIAL_F = 0x20
LOG_EVENT_RELAY_LOG_F = 0x40
LOG_EVENT_IGNORABLE_F = 0x80

# --- Log_event_type ------------------------------------------------------------------------------------------
UNKNOWN_EVENT = 0
START_EVENT_V3 = 1
QUERY_EVENT = 2
STOP_EVENT = 3
ROTATE_EVENT = 4
INTVAR_EVENT = 5
LOAD_EVENT = 6
SLAVE_EVENT = 7
CREATE_FILE_EVENT = 8
APPEND_BLOCK_EVENT = 9
EXEC_LOAD_EVENT = 10
DELETE_FILE_EVENT = 11
NEW_LOAD_EVENT = 12
RAND_EVENT = 13
USER_VAR_EVENT = 14
FORMAT_DESCRIPTION_EVENT = 15
XID_EVENT = 16
BEGIN_LOAD_QUERY_EVENT = 17
EXECUTE_LOAD_QUERY_EVENT = 18
TABLE_MAP_EVENT = 19
PRE_GA_WRITE_ROWS_EVENT = 20  # v0 rows events (5.1.0 - 5.1.15)
PRE_GA_UPDATE_ROWS_EVENT = 21
PRE_GA_DELETE_ROWS_EVENT = 22
WRITE_ROWS_EVENT_V1 = 23
UPDATE_ROWS_EVENT_V1 = 24
DELETE_ROWS_EVENT_V1 = 25
INCIDENT_EVENT = 26
HEARTBEAT_LOG_EVENT = 27
IGNORABLE_LOG_EVENT = 28
ROWS_QUERY_LOG_EVENT = 29
WRITE_ROWS_EVENT = 30
UPDATE_ROWS_EVENT = 31
DELETE_ROWS_EVENT = 32
GTID_LOG_EVENT = 33
ANONYMOUS_GTID_LOG_EVENT = 34
PREVIOUS_GTIDS_LOG_EVENT = 35
TRANSACTION_CONTEXT_EVENT = 36
VIEW_CHANGE_EVENT = 37
XA_PREPARE_LOG_EVENT = 38
PARTIAL_UPDATE_ROWS_EVENT = 39
TRANSACTION_PAYLOAD_EVENT = 40
HEARTBEAT_LOG_EVENT_V2 = 41
GTID_TAGGED_LOG_EVENT = 42
# MariaDB (sql/log_event.h)
ANNOTATE_ROWS_EVENT = 160
BINLOG_CHECKPOINT_EVENT = 161
GTID_EVENT = 162  # MariaDB GTID (MySQL's is GTID_LOG_EVENT)
GTID_LIST_EVENT = 163
START_ENCRYPTION_EVENT = 164
QUERY_COMPRESSED_EVENT = 165
WRITE_ROWS_COMPRESSED_EVENT_V1 = 166
UPDATE_ROWS_COMPRESSED_EVENT_V1 = 167
DELETE_ROWS_COMPRESSED_EVENT_V1 = 168
WRITE_ROWS_COMPRESSED_EVENT = 169
UPDATE_ROWS_COMPRESSED_EVENT = 170
DELETE_ROWS_COMPRESSED_EVENT = 171

EVENT_TYPE_NAMES: dict[int, str] = {
    code: name
    for name, code in list(globals().items())
    if isinstance(code, int)
    and (
        name.endswith("_EVENT")
        or name.endswith("_EVENT_V1")
        or name.endswith("_EVENT_V2")
        or name.endswith("_EVENT_V3")
    )
    and not name.startswith(("LOG_EVENT_", "BINLOG_CHECKSUM"))
}


def event_type_name(type_code: int) -> str:
    """MySQL's name of an event type code (``Log_event::get_type_str`` spelling of the enum), or UNKNOWN_<n>."""
    return EVENT_TYPE_NAMES.get(type_code, f"UNKNOWN_EVENT_{type_code}")


WRITE_ROWS_TYPES = frozenset(
    {
        PRE_GA_WRITE_ROWS_EVENT,
        WRITE_ROWS_EVENT_V1,
        WRITE_ROWS_EVENT,
        WRITE_ROWS_COMPRESSED_EVENT_V1,
        WRITE_ROWS_COMPRESSED_EVENT,
    }
)
UPDATE_ROWS_TYPES = frozenset(
    {
        PRE_GA_UPDATE_ROWS_EVENT,
        UPDATE_ROWS_EVENT_V1,
        UPDATE_ROWS_EVENT,
        PARTIAL_UPDATE_ROWS_EVENT,
        UPDATE_ROWS_COMPRESSED_EVENT_V1,
        UPDATE_ROWS_COMPRESSED_EVENT,
    }
)
DELETE_ROWS_TYPES = frozenset(
    {
        PRE_GA_DELETE_ROWS_EVENT,
        DELETE_ROWS_EVENT_V1,
        DELETE_ROWS_EVENT,
        DELETE_ROWS_COMPRESSED_EVENT_V1,
        DELETE_ROWS_COMPRESSED_EVENT,
    }
)
ROWS_EVENT_TYPES = WRITE_ROWS_TYPES | UPDATE_ROWS_TYPES | DELETE_ROWS_TYPES
ROWS_V2_TYPES = frozenset({WRITE_ROWS_EVENT, UPDATE_ROWS_EVENT, DELETE_ROWS_EVENT, PARTIAL_UPDATE_ROWS_EVENT})
MARIADB_COMPRESSED_ROWS_TYPES = frozenset(
    {
        WRITE_ROWS_COMPRESSED_EVENT_V1,
        UPDATE_ROWS_COMPRESSED_EVENT_V1,
        DELETE_ROWS_COMPRESSED_EVENT_V1,
        WRITE_ROWS_COMPRESSED_EVENT,
        UPDATE_ROWS_COMPRESSED_EVENT,
        DELETE_ROWS_COMPRESSED_EVENT,
    }
)

# post-header lengths used when a FORMAT_DESCRIPTION does not say (binlog_event.h *_HEADER_LEN)
QUERY_HEADER_MINIMAL_LEN = 11  # v3: no status_vars_len
QUERY_HEADER_LEN = 13
ROTATE_HEADER_LEN = 8
TABLE_MAP_HEADER_LEN = 8
ROWS_HEADER_LEN_V1 = 8
ROWS_HEADER_LEN_V2 = 10
INCIDENT_HEADER_LEN = 2

# Rows_event flags (enum_flag)
STMT_END_F = 0x1
NO_FOREIGN_KEY_CHECKS_F = 0x2
RELAXED_UNIQUE_CHECKS_F = 0x4
COMPLETE_ROWS_F = 0x8

# Rows_event extra row info (enum_extra_row_info_typecode)
ROWS_EXTRA_NDB = 0
ROWS_EXTRA_PART = 1

# value_options bits (enum_row_image_value_options, WL#2955)
PARTIAL_JSON_UPDATES = 1

# enum_json_diff_operation
JSON_DIFF_REPLACE = 0
JSON_DIFF_INSERT = 1
JSON_DIFF_REMOVE = 2

# Intvar_event types
INVALID_INT_EVENT = 0
LAST_INSERT_ID_EVENT = 1
INSERT_ID_EVENT = 2

# Gtid_event
LOGICAL_TIMESTAMP_TYPECODE = 2
FLAG_MAY_HAVE_SBR = 1

# Transaction_payload_event on-the-wire fields (Transaction_payload_event::fields)
OTW_PAYLOAD_HEADER_END_MARK = 0
OTW_PAYLOAD_SIZE_FIELD = 1
OTW_PAYLOAD_COMPRESSION_TYPE_FIELD = 2
OTW_PAYLOAD_UNCOMPRESSED_SIZE_FIELD = 3
# mysql::binlog::event::compression::type
ZSTD = 0
NONE = 255

# MariaDB Gtid_log_event flags
FL_STANDALONE = 1
FL_GROUP_COMMIT_ID = 2
FL_TRANSACTIONAL = 4
FL_ALLOW_PARALLEL = 8
FL_WAITED = 16
FL_DDL = 32
FL_PREPARED_XA = 64
FL_COMPLETED_XA = 128

# --- enum_field_types (include/field_types.h) ----------------------------------------------------------------
MYSQL_TYPE_DECIMAL = 0
MYSQL_TYPE_TINY = 1
MYSQL_TYPE_SHORT = 2
MYSQL_TYPE_LONG = 3
MYSQL_TYPE_FLOAT = 4
MYSQL_TYPE_DOUBLE = 5
MYSQL_TYPE_NULL = 6
MYSQL_TYPE_TIMESTAMP = 7
MYSQL_TYPE_LONGLONG = 8
MYSQL_TYPE_INT24 = 9
MYSQL_TYPE_DATE = 10
MYSQL_TYPE_TIME = 11
MYSQL_TYPE_DATETIME = 12
MYSQL_TYPE_YEAR = 13
MYSQL_TYPE_NEWDATE = 14
MYSQL_TYPE_VARCHAR = 15
MYSQL_TYPE_BIT = 16
MYSQL_TYPE_TIMESTAMP2 = 17
MYSQL_TYPE_DATETIME2 = 18
MYSQL_TYPE_TIME2 = 19
MYSQL_TYPE_TYPED_ARRAY = 20
MYSQL_TYPE_VECTOR = 242
MYSQL_TYPE_INVALID = 243
MYSQL_TYPE_BOOL = 244
MYSQL_TYPE_JSON = 245
MYSQL_TYPE_NEWDECIMAL = 246
MYSQL_TYPE_ENUM = 247
MYSQL_TYPE_SET = 248
MYSQL_TYPE_TINY_BLOB = 249
MYSQL_TYPE_MEDIUM_BLOB = 250
MYSQL_TYPE_LONG_BLOB = 251
MYSQL_TYPE_BLOB = 252
MYSQL_TYPE_VAR_STRING = 253
MYSQL_TYPE_STRING = 254
MYSQL_TYPE_GEOMETRY = 255

FIELD_TYPE_NAMES: dict[int, str] = {
    code: name[len("MYSQL_TYPE_") :]
    for name, code in list(globals().items())
    if name.startswith("MYSQL_TYPE_") and isinstance(code, int)
}

# Table_map_event::is_numeric_type: the columns the SIGNEDNESS bitmap has a bit for
NUMERIC_TYPES = frozenset(
    {
        MYSQL_TYPE_TINY,
        MYSQL_TYPE_SHORT,
        MYSQL_TYPE_INT24,
        MYSQL_TYPE_LONG,
        MYSQL_TYPE_LONGLONG,
        MYSQL_TYPE_NEWDECIMAL,
        MYSQL_TYPE_FLOAT,
        MYSQL_TYPE_DOUBLE,
        MYSQL_TYPE_DECIMAL,
    }
)
# real types (after the STRING metadata trick) that Table_map_event::is_character_type counts
CHARACTER_TYPES = frozenset(
    {
        MYSQL_TYPE_STRING,
        MYSQL_TYPE_VAR_STRING,
        MYSQL_TYPE_VARCHAR,
        MYSQL_TYPE_BLOB,
        MYSQL_TYPE_TINY_BLOB,
        MYSQL_TYPE_MEDIUM_BLOB,
        MYSQL_TYPE_LONG_BLOB,
    }
)
ENUM_SET_TYPES = frozenset({MYSQL_TYPE_ENUM, MYSQL_TYPE_SET})
# the columns DEFAULT_CHARSET/COLUMN_CHARSET number (is_character_type in init_charset_field): MySQL 9 counts VECTOR
# too, MariaDB counts GEOMETRY (both binary), so a character column after one of them has the next index
CHARSET_NUMBERED_TYPES = CHARACTER_TYPES | {MYSQL_TYPE_VECTOR}
MARIADB_CHARSET_NUMBERED_TYPES = CHARACTER_TYPES | {MYSQL_TYPE_GEOMETRY}
# column types whose TABLE_MAP metadata takes 1, or 2 bytes (Table_map_event: get_field_metadata_size)
METADATA_1_BYTE_TYPES = frozenset(
    {
        MYSQL_TYPE_FLOAT,
        MYSQL_TYPE_DOUBLE,
        MYSQL_TYPE_BLOB,
        MYSQL_TYPE_TINY_BLOB,
        MYSQL_TYPE_MEDIUM_BLOB,
        MYSQL_TYPE_LONG_BLOB,
        MYSQL_TYPE_GEOMETRY,
        MYSQL_TYPE_JSON,
        MYSQL_TYPE_TIME2,
        MYSQL_TYPE_DATETIME2,
        MYSQL_TYPE_TIMESTAMP2,
        MYSQL_TYPE_VECTOR,
    }
)
METADATA_2_BYTE_TYPES = frozenset(
    {
        MYSQL_TYPE_VARCHAR,
        MYSQL_TYPE_VAR_STRING,
        MYSQL_TYPE_STRING,
        MYSQL_TYPE_BIT,
        MYSQL_TYPE_NEWDECIMAL,
        MYSQL_TYPE_ENUM,
        MYSQL_TYPE_SET,
    }
)
BINARY_COLLATION_ID = 63

# --- Table_map_event::Optional_metadata_field_type -----------------------------------------------------------
SIGNEDNESS = 1
DEFAULT_CHARSET = 2
COLUMN_CHARSET = 3
COLUMN_NAME = 4
SET_STR_VALUE = 5
ENUM_STR_VALUE = 6
GEOMETRY_TYPE = 7
SIMPLE_PRIMARY_KEY = 8
PRIMARY_KEY_WITH_PREFIX = 9
ENUM_AND_SET_DEFAULT_CHARSET = 10
ENUM_AND_SET_COLUMN_CHARSET = 11
COLUMN_VISIBILITY = 12
VECTOR_DIMENSIONALITY = 13

# MariaDB START_ENCRYPTION_EVENT / compressed events
BINLOG_NONCE_LENGTH = 12
