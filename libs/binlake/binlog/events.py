"""The binlog event model: one frozen, slotted dataclass per event type, the header kept apart from the body.

Every field needed to re-encode an event byte for byte is kept (raw status variables, raw extra row data,
optional-metadata fields in file order, post-header lengths, the stored checksum). Strings read from the binlog
(database, table and column names, query text) are decoded as UTF-8 with ``surrogateescape``, so
``s.encode("utf-8", "surrogateescape")`` gives back the original bytes.

Mirrors the event classes of mysql-server ``libs/mysql/binlog/event/`` (``control_events.h``,
``statement_events.h``, ``rows_event.h``) and MariaDB's ``sql/log_event.h``.
"""

from __future__ import annotations

import uuid as _uuid
from dataclasses import dataclass
from typing import Any, NamedTuple, Optional, Union

from binlake.binlog.constants import event_type_name


@dataclass(frozen=True, slots=True)
class EventHeader:
    """The common event header (``Log_event_header``): 19 bytes in binlog v3/v4 (13 in v1)."""

    timestamp: int
    type_code: int
    server_id: int
    event_size: int
    log_pos: int  # end position of the event in the source binlog (0 inside payloads / v1)
    flags: int

    @property
    def type_name(self) -> str:
        return event_type_name(self.type_code)


# --- control and statement events ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StartEventV3:
    """START_EVENT_V3 (1): the first event of binlog v1/v3 files (MySQL 3.23 - 4.x)."""

    binlog_version: int
    server_version: str
    create_timestamp: int
    server_version_raw: bytes = b""


@dataclass(frozen=True, slots=True)
class FormatDescriptionEvent:
    """FORMAT_DESCRIPTION_EVENT (15): ``Format_description_event``.

    ``create_timestamp`` is the binlog's creation time (WL#3283 R1; 0 when the server rotated into this file).
    ``post_header_lengths[t - 1]`` is the post-header length of event type ``t``. ``checksum_alg`` is None for
    servers that predate checksums (no algorithm byte), else BINLOG_CHECKSUM_ALG_OFF/CRC32.
    """

    binlog_version: int
    server_version: str
    create_timestamp: int
    header_length: int
    post_header_lengths: bytes
    checksum_alg: Optional[int]
    server_version_raw: bytes = b""  # the 50-byte, NUL-padded field as stored

    @property
    def is_mariadb(self) -> bool:
        return "mariadb" in self.server_version.lower()


@dataclass(frozen=True, slots=True)
class QueryEvent:
    """QUERY_EVENT (2) and MariaDB QUERY_COMPRESSED_EVENT (165): ``Query_event``."""

    thread_id: int
    exec_time: int
    error_code: int
    status_vars: bytes
    db: str
    query: str


@dataclass(frozen=True, slots=True)
class RotateEvent:
    """ROTATE_EVENT (4): the next binlog file and the position to start at."""

    position: int
    next_file: str


@dataclass(frozen=True, slots=True)
class StopEvent:
    """STOP_EVENT (3): the server stopped."""


@dataclass(frozen=True, slots=True)
class XidEvent:
    """XID_EVENT (16): commit of an XA-capable (InnoDB) transaction."""

    xid: int


@dataclass(frozen=True, slots=True)
class IntvarEvent:
    """INTVAR_EVENT (5): LAST_INSERT_ID (1) or INSERT_ID (2) for the next statement."""

    type: int
    value: int


@dataclass(frozen=True, slots=True)
class RandEvent:
    """RAND_EVENT (13): the RAND() seeds of the next statement."""

    seed1: int
    seed2: int


@dataclass(frozen=True, slots=True)
class UserVarEvent:
    """USER_VAR_EVENT (14): ``User_var_event``. ``value`` is the raw bytes; ``flags`` None when absent."""

    name: str
    is_null: bool
    value_type: int = 0
    charset: int = 0
    value: bytes = b""
    flags: Optional[int] = None


@dataclass(frozen=True, slots=True)
class IncidentEvent:
    """INCIDENT_EVENT (26): something happened on the source that may make the binlog incomplete."""

    incident: int
    message: str


@dataclass(frozen=True, slots=True)
class HeartbeatEvent:
    """HEARTBEAT_LOG_EVENT (27): replication stream keep-alive naming the current file."""

    log_ident: str


@dataclass(frozen=True, slots=True)
class HeartbeatEventV2:
    """HEARTBEAT_LOG_EVENT_V2 (41): type-length-value fields (filename, position)."""

    log_filename: str
    log_position: int


@dataclass(frozen=True, slots=True)
class RowsQueryEvent:
    """ROWS_QUERY_LOG_EVENT (29): the statement text that produced the following rows events."""

    query: str
    length_byte: int = 0  # the 1-byte length field MySQL writes (the text's length mod 256; ignored on read)


@dataclass(frozen=True, slots=True)
class XaPrepareEvent:
    """XA_PREPARE_LOG_EVENT (38): ``XA_prepare_event``."""

    one_phase: bool
    format_id: int
    gtrid: bytes
    bqual: bytes


@dataclass(frozen=True, slots=True)
class GtidEvent:
    """GTID_LOG_EVENT (33): ``Gtid_event``. Optional trailing fields are None when the event lacks them."""

    flags: int
    sid: bytes  # 16-byte source UUID
    gno: int
    lt_type: Optional[int] = None
    last_committed: Optional[int] = None
    sequence_number: Optional[int] = None
    immediate_commit_timestamp: Optional[int] = None  # microseconds since the epoch
    original_commit_timestamp: Optional[int] = None  # None when equal to immediate (not stored)
    transaction_length: Optional[int] = None
    immediate_server_version: Optional[int] = None
    original_server_version: Optional[int] = None  # None when equal to immediate (not stored)
    commit_group_ticket: Optional[int] = None
    tag: str = ""

    @property
    def uuid(self) -> str:
        return str(_uuid.UUID(bytes=self.sid))

    @property
    def gtid(self) -> str:
        """``uuid[:tag]:gno``, as MySQL prints a GTID."""
        return f"{self.uuid}:{self.tag}:{self.gno}" if self.tag else f"{self.uuid}:{self.gno}"


@dataclass(frozen=True, slots=True)
class AnonymousGtidEvent(GtidEvent):
    """ANONYMOUS_GTID_LOG_EVENT (34): a transaction boundary without a GTID (gtid_mode=OFF)."""


@dataclass(frozen=True, slots=True)
class GtidTaggedEvent(GtidEvent):
    """GTID_TAGGED_LOG_EVENT (42, MySQL 8.3+): a GTID with a tag, in mysql::serialization format.

    ``raw`` keeps the serialized body (the field encoding is versioned and extensible).
    """

    raw: bytes = b""


@dataclass(frozen=True, slots=True)
class GtidInterval:
    start: int
    end: int  # exclusive, as stored


@dataclass(frozen=True, slots=True)
class GtidSetEntry:
    sid: bytes
    tag: str
    intervals: tuple[GtidInterval, ...]

    @property
    def uuid(self) -> str:
        return str(_uuid.UUID(bytes=self.sid))


@dataclass(frozen=True, slots=True)
class PreviousGtidsEvent:
    """PREVIOUS_GTIDS_LOG_EVENT (35): the GTID set of all earlier binlogs (tagged format from MySQL 8.3)."""

    entries: tuple[GtidSetEntry, ...]
    tagged: bool = False

    def gtid_set(self) -> str:
        """MySQL's text form, e.g. ``uuid:1-5:8,uuid2:tag:1-3`` (:class:`binlake.binlog.gtid.GtidSet`)."""
        from binlake.binlog.gtid import GtidSet

        return GtidSet.from_entries(self.entries).to_text()


@dataclass(frozen=True, slots=True)
class TransactionPayloadEvent:
    """TRANSACTION_PAYLOAD_EVENT (40): a (usually zstd-compressed) run of whole events of one transaction.

    ``payload`` is the stored (compressed) bytes; the reader decodes the inner events lazily, streaming, and
    yields them right after this event (see :func:`binlake.binlog.payload.iter_payload_events`).
    ``fields`` keeps the header's (type, value) pairs in stored order.
    """

    compression_type: int
    payload_size: int
    uncompressed_size: int
    payload: bytes
    fields: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class LoadDataBlockEvent:
    """BEGIN_LOAD_QUERY_EVENT (17) and APPEND_BLOCK_EVENT (9): a block of a LOAD DATA file."""

    file_id: int
    data: bytes


@dataclass(frozen=True, slots=True)
class ExecuteLoadQueryEvent:
    """EXECUTE_LOAD_QUERY_EVENT (18): the LOAD DATA statement, with where the file name sits in it."""

    thread_id: int
    exec_time: int
    error_code: int
    status_vars: bytes
    db: str
    query: str
    file_id: int
    start_pos: int
    end_pos: int
    dup_handling: int


# --- MariaDB ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AnnotateRowsEvent:
    """MariaDB ANNOTATE_ROWS_EVENT (160): the statement behind the following rows events."""

    query: str


@dataclass(frozen=True, slots=True)
class BinlogCheckpointEvent:
    """MariaDB BINLOG_CHECKPOINT_EVENT (161): the oldest binlog still needed for crash recovery."""

    binlog_file: str


@dataclass(frozen=True, slots=True)
class MariadbGtidEvent:
    """MariaDB GTID_EVENT (162): starts an event group ``domain-server-seq_no``.

    ``commit_id`` is set when FL_GROUP_COMMIT_ID; ``xid`` (format_id, gtrid, bqual) for FL_PREPARED_XA or
    FL_COMPLETED_XA; ``extra`` keeps any bytes after the known fields (flags_extra and later additions).
    """

    seq_no: int
    domain_id: int
    flags: int
    commit_id: Optional[int] = None
    xid: Optional[tuple[int, bytes, bytes]] = None
    extra: bytes = b""
    server_id: int = 0

    @property
    def gtid(self) -> str:
        return f"{self.domain_id}-{self.server_id}-{self.seq_no}"


@dataclass(frozen=True, slots=True)
class MariadbGtid:
    domain_id: int
    server_id: int
    seq_no: int


@dataclass(frozen=True, slots=True)
class GtidListEvent:
    """MariaDB GTID_LIST_EVENT (163): the last GTID of each replication domain in earlier binlogs."""

    gtids: tuple[MariadbGtid, ...]
    flags: int = 0  # the high 4 bits of the count field


@dataclass(frozen=True, slots=True)
class StartEncryptionEvent:
    """MariaDB START_ENCRYPTION_EVENT (164): every later event is encrypted (the reader stops with an error)."""

    scheme: int
    key_version: int
    nonce: bytes


@dataclass(frozen=True, slots=True)
class UnknownEvent:
    """An event binlake does not model: kept whole (the body after the header, without checksum), counted."""

    type_code: int
    raw: bytes


# --- TABLE_MAP ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DefaultCharset:
    """DEFAULT_CHARSET / ENUM_AND_SET_DEFAULT_CHARSET: a default collation and (index, collation) exceptions.

    The index counts only the columns the field covers (character columns, or ENUM/SET columns).
    """

    default_collation: int
    overrides: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class TableMapEvent:
    """TABLE_MAP_EVENT (19): ``Table_map_event`` with every optional-metadata field parsed.

    ``column_metadata[i]`` is the type metadata as MySQL's ``m_field_metadata`` holds it (e.g. for STRING
    ``real_type << 8 | length byte``; for NEWDECIMAL ``precision << 8 | scale``; for BIT ``bytes << 8 | bits``).
    Optional-metadata fields are None when absent. ``signedness`` and the charset lists are per covered
    column (numeric, character, ENUM/SET), as stored; :mod:`binlake.binlog.table` maps them to columns.
    ``optional_metadata`` keeps every field as (type, raw value bytes) in stored order.
    """

    table_id: int
    flags: int
    db: str
    table: str
    column_types: tuple[int, ...]
    column_metadata: tuple[int, ...]
    null_bits: bytes
    signedness: Optional[tuple[bool, ...]] = None
    default_charset: Optional[DefaultCharset] = None
    column_charsets: Optional[tuple[int, ...]] = None
    column_names: Optional[tuple[str, ...]] = None
    set_str_values: Optional[tuple[tuple[str, ...], ...]] = None
    enum_str_values: Optional[tuple[tuple[str, ...], ...]] = None
    geometry_types: Optional[tuple[int, ...]] = None
    simple_primary_key: Optional[tuple[int, ...]] = None
    primary_key_with_prefix: Optional[tuple[tuple[int, int], ...]] = None
    enum_and_set_default_charset: Optional[DefaultCharset] = None
    enum_and_set_column_charsets: Optional[tuple[int, ...]] = None
    column_visibility: Optional[tuple[bool, ...]] = None
    vector_dimensionality: Optional[tuple[int, ...]] = None
    optional_metadata: tuple[tuple[int, bytes], ...] = ()
    table_id_size: int = 6  # 4 in pre-5.1.x post headers of length 6

    @property
    def column_count(self) -> int:
        return len(self.column_types)

    def nullable(self, index: int) -> bool:
        return bool(self.null_bits[index >> 3] & (1 << (index & 7)))


# --- rows events --------------------------------------------------------------------------------------------


class _Absent:
    """The value of a column that is not in a row image (MINIMAL/NOBLOB images); a singleton, falsy."""

    __slots__ = ()
    _instance: "_Absent | None" = None

    def __new__(cls) -> "_Absent":
        if cls._instance is None:
            cls._instance = object.__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()
"""Marks a column absent from a row image (its bit is clear in the columns-present bitmap)."""

RowImage = tuple  # one value per table column; ABSENT for columns not in the image


@dataclass(frozen=True, slots=True)
class JsonPartial:
    """A JSON column stored in partial format in a PARTIAL_UPDATE_ROWS after-image (WL#2955 F3).

    ``diffs`` is what ``binlake.mysqljson.read_diffs(raw)`` returns (None if that is unavailable); ``raw`` is
    the cell without its length prefix.
    """

    raw: bytes
    diffs: Any = None


class UpdateRow(NamedTuple):
    """One row of an UPDATE_ROWS_EVENT. A NamedTuple (immutable, typed) rather than a frozen dataclass: one is
    made per updated row, and ``tuple.__new__`` is much cheaper; equality also compares the type."""

    before: RowImage
    after: RowImage

    def __eq__(self, other: object) -> bool:
        return type(other) is UpdateRow and tuple.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(("UpdateRow", tuple(self)))


@dataclass(frozen=True, slots=True)
class PartialUpdateRow:
    """One row of a PARTIAL_UPDATE_ROWS_EVENT: images plus the shared-image (value_options, partial_columns).

    ``partial_columns`` lists the table column indexes whose after-image value is a :class:`JsonPartial`;
    ``partial_bits`` is the stored bitmap (one bit per JSON column of the before image), None when
    value_options has no PARTIAL_JSON_UPDATES bit.
    """

    before: RowImage
    after: RowImage
    value_options: int
    partial_columns: tuple[int, ...] = ()
    partial_bits: Optional[bytes] = None


@dataclass(frozen=True, slots=True)
class RowsEvent:
    """Common fields of WRITE/UPDATE/DELETE rows events v0/v1/v2 (and MariaDB's compressed variants).

    ``extra_data`` is the v2 extra row info after its 2-byte length (None for v0/v1 events, which have none).
    ``columns_present`` (and ``columns_present_after`` for updates) are the stored bitmaps (bit i of byte
    i // 8 is column i). ``rows`` holds the decoded row images (see subclasses).
    """

    table_id: int
    flags: int
    extra_data: Optional[bytes]
    column_count: int
    columns_present: bytes
    rows: tuple
    table_id_size: int = 6

    def present(self, index: int) -> bool:
        return bool(self.columns_present[index >> 3] & (1 << (index & 7)))


@dataclass(frozen=True, slots=True)
class WriteRowsEvent(RowsEvent):
    """WRITE_ROWS_EVENT (30; v1 23; v0 20; MariaDB compressed 166/169): ``rows`` are after images."""


@dataclass(frozen=True, slots=True)
class DeleteRowsEvent(RowsEvent):
    """DELETE_ROWS_EVENT (32; v1 25; v0 22; MariaDB compressed 168/171): ``rows`` are before images."""


@dataclass(frozen=True, slots=True)
class UpdateRowsEvent(RowsEvent):
    """UPDATE_ROWS_EVENT (31; v1 24; v0 21; MariaDB compressed 167/170): ``rows`` are :class:`UpdateRow`."""

    columns_present_after: bytes = b""

    def present_after(self, index: int) -> bool:
        return bool(self.columns_present_after[index >> 3] & (1 << (index & 7)))


@dataclass(frozen=True, slots=True)
class PartialUpdateRowsEvent(UpdateRowsEvent):
    """PARTIAL_UPDATE_ROWS_EVENT (39, WL#2955): ``rows`` are :class:`PartialUpdateRow`."""


EventBody = Union[
    StartEventV3,
    FormatDescriptionEvent,
    QueryEvent,
    RotateEvent,
    StopEvent,
    XidEvent,
    IntvarEvent,
    RandEvent,
    UserVarEvent,
    IncidentEvent,
    HeartbeatEvent,
    HeartbeatEventV2,
    RowsQueryEvent,
    XaPrepareEvent,
    GtidEvent,
    PreviousGtidsEvent,
    TransactionPayloadEvent,
    LoadDataBlockEvent,
    ExecuteLoadQueryEvent,
    AnnotateRowsEvent,
    BinlogCheckpointEvent,
    MariadbGtidEvent,
    GtidListEvent,
    StartEncryptionEvent,
    UnknownEvent,
    TableMapEvent,
    RowsEvent,
]


@dataclass(frozen=True, slots=True)
class BinlogEvent:
    """One event: where it is, its header, its typed body and its stored checksum.

    ``pos`` is the event's offset in its file; for an event inside a TRANSACTION_PAYLOAD it is the offset in the
    uncompressed payload and ``payload_pos`` is the enclosing event's ``pos``.
    """

    pos: int
    header: EventHeader
    body: Any
    checksum: Optional[int] = None
    payload_pos: Optional[int] = None

    @property
    def type_code(self) -> int:
        return self.header.type_code

    @property
    def type_name(self) -> str:
        return event_type_name(self.header.type_code)
