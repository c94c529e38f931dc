"""One decoder per event type behind a registry: ``decoder(cursor, header, ctx) -> body``.

The cursor is fenced to the event body (after the common header, before the checksum). Layouts follow
mysql-server ``libs/mysql/binlog/event/{control,statement,rows}_events.cpp`` and MariaDB ``sql/log_event.cc``.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Callable, Optional

from binlake.binlog import constants as C
from binlake.binlog.cursor import Cursor, surrogate_str
from binlake.binlog.errors import BinlogError, CorruptEventError, UnknownTableError
from binlake.binlog.events import (
    AnnotateRowsEvent,
    AnonymousGtidEvent,
    BinlogCheckpointEvent,
    DefaultCharset,
    DeleteRowsEvent,
    EventHeader,
    ExecuteLoadQueryEvent,
    FormatDescriptionEvent,
    GtidEvent,
    GtidInterval,
    GtidListEvent,
    GtidSetEntry,
    GtidTaggedEvent,
    HeartbeatEvent,
    HeartbeatEventV2,
    IncidentEvent,
    IntvarEvent,
    LoadDataBlockEvent,
    MariadbGtid,
    MariadbGtidEvent,
    PartialUpdateRowsEvent,
    PreviousGtidsEvent,
    QueryEvent,
    RandEvent,
    RotateEvent,
    RowsQueryEvent,
    StartEncryptionEvent,
    StartEventV3,
    StopEvent,
    TableMapEvent,
    TransactionPayloadEvent,
    UnknownEvent,
    UpdateRowsEvent,
    UserVarEvent,
    WriteRowsEvent,
    XaPrepareEvent,
    XidEvent,
)
from binlake.binlog.rows import decode_rows
from binlake.binlog.schema import SchemaProvider
from binlake.binlog.table import TableLayout, build_layout

TABLE_MAP_CACHE_SIZE = 4096  # entries
TABLE_MAP_CACHE_COLUMNS = 1 << 17  # columns over all entries: bounds the memory of the layouts kept


class TableMapCache:
    """TABLE_MAP bodies seen before (every transaction, and every binlog of a server, repeats them) -> the decoded
    event and its row layout with its compiled row readers; keyed by the body, the post-header length, the
    schema provider and whether rows are decoded. An LRU bounded by entries and by total columns, owned by one
    :class:`DecodeContext` (values are immutable or caches of immutable values, so they are shared)."""

    def __init__(self, max_entries: int = TABLE_MAP_CACHE_SIZE, max_columns: int = TABLE_MAP_CACHE_COLUMNS) -> None:
        self.max_entries, self.max_columns = max_entries, max_columns
        self.columns = 0
        self._entries: dict[tuple, tuple[TableMapEvent, Optional[TableLayout], object]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: tuple) -> Optional[tuple[TableMapEvent, Optional[TableLayout], object]]:
        value = self._entries.pop(key, None)
        if value is not None:
            self._entries[key] = value  # most recently used last
        return value

    def put(self, key: tuple, value: tuple[TableMapEvent, Optional[TableLayout], object]) -> None:
        cols = value[0].column_count
        if cols > self.max_columns:
            return
        while self._entries and (len(self._entries) >= self.max_entries or self.columns + cols > self.max_columns):
            old = self._entries.pop(next(iter(self._entries)))
            self.columns -= old[0].column_count
        self._entries[key] = value
        self.columns += cols


TABLE_MAPS_COLUMNS = 1 << 18  # columns over all live table maps of a DecodeContext


class TableMaps(dict):
    """table_id -> TableLayout of the TABLE_MAPs seen (the replica's ``table_mapping``), bounded by total columns:
    a TABLE_MAP that would go past ``max_columns`` first drops the maps set longest ago (a server repeats a
    transaction's TABLE_MAPs before its rows events, so only maps of earlier transactions go)."""

    def __init__(self, max_columns: int = TABLE_MAPS_COLUMNS) -> None:
        super().__init__()
        self.max_columns = max_columns
        self.columns = 0

    def __setitem__(self, table_id: int, layout: TableLayout) -> None:
        self.pop(table_id, None)
        cols = len(layout.columns)
        while self and self.columns + cols > self.max_columns:
            self.pop(next(iter(self)))
        super().__setitem__(table_id, layout)
        self.columns += cols

    def __delitem__(self, table_id: int) -> None:
        self.pop(table_id)

    def pop(self, table_id, *default):
        layout = super().pop(table_id, *default)
        if layout is not None and not (default and layout is default[0]):
            self.columns -= len(layout.columns)
        return layout

    def clear(self) -> None:
        super().clear()
        self.columns = 0


@dataclass
class DecodeContext:
    """What decoding needs to know from earlier events: the FORMAT_DESCRIPTION and the table maps."""

    fde: Optional[FormatDescriptionEvent] = None
    tables: TableMaps = field(default_factory=TableMaps)
    schema_provider: Optional[SchemaProvider] = None
    decode_rows: bool = True
    row_dicts: bool = False  # rows events' images as dicts (the row-change fast path, see rows.decode_rows)
    assumptions: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)  # per (db, table)
    table_map_cache: TableMapCache = field(default_factory=TableMapCache)

    def post_header_len(self, type_code: int, default: int) -> int:
        fde = self.fde
        if fde is not None and 0 < type_code <= len(fde.post_header_lengths):
            return fde.post_header_lengths[type_code - 1]
        return default


Decoder = Callable[[Cursor, EventHeader, DecodeContext], object]
DECODERS: dict[int, Decoder] = {}


def register(*type_codes: int) -> Callable[[Decoder], Decoder]:
    def deco(fn: Decoder) -> Decoder:
        for code in type_codes:
            DECODERS[code] = fn
        return fn

    return deco


# --- start of file -------------------------------------------------------------------------------------------


def _version_tuple(version: str) -> tuple[int, int, int]:
    """``do_server_version_split``: the leading three numbers of a server version string."""
    parts = []
    num = ""
    for ch in version:
        if ch.isdigit():
            num += ch
        elif num:
            parts.append(int(num))
            num = ""
            if ch != "." or len(parts) == 3:
                break
        else:
            break
    if num and len(parts) < 3:
        parts.append(int(num))
    while len(parts) < 3:
        parts.append(0)
    return parts[0], parts[1], parts[2]


def has_checksum_alg(server_version: str) -> bool:
    """``Format_description_event::is_version_before_checksum`` negated (MariaDB from 5.3, MySQL from 5.6.1)."""
    v = _version_tuple(server_version)
    if "mariadb" in server_version.lower():
        return v >= C.CHECKSUM_VERSION_MARIADB
    return v >= C.CHECKSUM_VERSION_MYSQL


@register(C.FORMAT_DESCRIPTION_EVENT)
def decode_format_description(c: Cursor, h: EventHeader, ctx: DecodeContext) -> FormatDescriptionEvent:
    """The cursor here spans the whole body INCLUDING the checksum-algorithm byte and the checksum."""
    binlog_version = c.u16("binlog_version")
    raw_version = c.bytes(C.ST_SERVER_VER_LEN, "server_version")
    version = surrogate_str(raw_version.split(b"\x00", 1)[0])
    created = c.u32("create_timestamp")
    header_len = c.u8("common_header_len")
    if header_len < C.LOG_EVENT_HEADER_LEN:
        raise c.corrupt("FORMAT_DESCRIPTION common header length too small", f">= {C.LOG_EVENT_HEADER_LEN}", header_len)
    rest = c.rest()
    alg: Optional[int] = None
    if has_checksum_alg(version):
        if len(rest) < C.BINLOG_CHECKSUM_ALG_DESC_LEN + C.BINLOG_CHECKSUM_LEN:
            raise c.corrupt("FORMAT_DESCRIPTION too short for its checksum fields", ">= 5 bytes", len(rest))
        alg = rest[-5]
        rest = rest[:-5]
        if alg not in (C.BINLOG_CHECKSUM_ALG_OFF, C.BINLOG_CHECKSUM_ALG_CRC32):
            raise c.corrupt("unknown binlog checksum algorithm", "0 (OFF) or 1 (CRC32)", alg)
    return FormatDescriptionEvent(binlog_version, version, created, header_len, rest, alg, raw_version)


@register(C.START_EVENT_V3)
def decode_start_v3(c: Cursor, h: EventHeader, ctx: DecodeContext) -> StartEventV3:
    binlog_version = c.u16("binlog_version")
    raw_version = c.bytes(C.ST_SERVER_VER_LEN, "server_version")
    created = c.u32("create_timestamp")
    c.rest()
    return StartEventV3(binlog_version, surrogate_str(raw_version.split(b"\x00", 1)[0]), created, raw_version)


# --- statement events ----------------------------------------------------------------------------------------


def _mariadb_uncompress(c: Cursor, what: str) -> bytes:
    """The rest of the event as ``binlog_get_uncompress_len`` + ``binlog_buf_uncompress`` read it: a header
    byte ``0x80 | alg << 4 | lenlen`` (alg 0 = zlib; ``binlog_buf_compress`` writes ``0x80 | lenlen``), the
    uncompressed length in ``lenlen`` (1-4) big-endian bytes, then one whole zlib stream of exactly that length.
    Errors point at the header byte."""
    start = c.pos
    data = c.rest()
    head = data[0] if data else None
    if head is None or head & 0xE0 != 0x80 or head & 0x10 or not 1 <= head & 0x07 <= 4:
        c.pos = start
        raise c.corrupt(
            f"{what}: bad compression header",
            "0x80 | lenlen (zlib, a 1-4 byte length)",
            f"0x{head:02x}" if head is not None else "end of event",
        )
    lenlen = head & 0x07
    if len(data) < 1 + lenlen:
        c.pos = start
        raise c.corrupt(
            f"{what}: compressed data shorter than its length field", f"{1 + lenlen} bytes", f"{len(data)} bytes"
        )
    size = int.from_bytes(data[1 : 1 + lenlen], "big")
    d = zlib.decompressobj()
    try:
        out = d.decompress(data[1 + lenlen :], size + 1)
    except zlib.error as exc:
        c.pos = start
        raise c.corrupt(f"{what}: zlib data does not decompress", f"a zlib stream of {size} bytes", exc) from None
    if len(out) != size or not d.eof:
        c.pos = start
        raise c.corrupt(
            f"{what}: compressed data does not hold its stated uncompressed size",
            f"a complete zlib stream of {size} bytes",
            f"{len(out)}{'+' if len(out) > size else ''} bytes{'' if d.eof else ', stream not ended'}",
        )
    return out


def _query_fields(c: Cursor, post_len: int) -> tuple[int, int, int, int, int]:
    """``Query_event`` post-header: thread_id, exec_time, db_len, error_code, [status_vars_len] (v4)."""
    thread_id = c.u32("thread_id")
    exec_time = c.u32("exec_time")
    db_len = c.u8("db_len")
    error_code = c.u16("error_code")
    status_len = c.u16("status_vars_len") if post_len >= C.QUERY_HEADER_LEN else 0
    return thread_id, exec_time, db_len, error_code, status_len


@register(C.QUERY_EVENT, C.QUERY_COMPRESSED_EVENT)
def decode_query(c: Cursor, h: EventHeader, ctx: DecodeContext) -> QueryEvent:
    post_len = ctx.post_header_len(C.QUERY_EVENT, C.QUERY_HEADER_LEN)
    start = c.pos
    thread_id, exec_time, db_len, error_code, status_len = _query_fields(c, post_len)
    if post_len > c.pos - start:
        c.skip(post_len - (c.pos - start), "QUERY post-header")
    status = c.bytes(status_len, "status variables")
    db = c.bytes(db_len, "database name")
    c.skip(1, "NUL after the database name")
    if h.type_code == C.QUERY_COMPRESSED_EVENT:
        query = _mariadb_uncompress(c, "compressed statement")
    else:
        query = c.rest()
    return QueryEvent(thread_id, exec_time, error_code, status, surrogate_str(db), surrogate_str(query))


@register(C.EXECUTE_LOAD_QUERY_EVENT)
def decode_execute_load_query(c: Cursor, h: EventHeader, ctx: DecodeContext) -> ExecuteLoadQueryEvent:
    post_len = ctx.post_header_len(C.EXECUTE_LOAD_QUERY_EVENT, 26)
    start = c.pos
    thread_id, exec_time, db_len, error_code, status_len = _query_fields(c, post_len)
    file_id = c.u32("file_id")
    start_pos = c.u32("fn_pos_start")
    end_pos = c.u32("fn_pos_end")
    dup = c.u8("dup_handling")
    used = c.pos - start
    if post_len > used:
        c.skip(post_len - used, "EXECUTE_LOAD_QUERY post-header")
    status = c.bytes(status_len, "status variables")
    db = c.bytes(db_len, "database name")
    c.skip(1, "NUL after the database name")
    query = c.rest()
    return ExecuteLoadQueryEvent(
        thread_id,
        exec_time,
        error_code,
        status,
        surrogate_str(db),
        surrogate_str(query),
        file_id,
        start_pos,
        end_pos,
        dup,
    )


@register(C.BEGIN_LOAD_QUERY_EVENT, C.APPEND_BLOCK_EVENT)
def decode_load_block(c: Cursor, h: EventHeader, ctx: DecodeContext) -> LoadDataBlockEvent:
    return LoadDataBlockEvent(c.u32("file_id"), c.rest())


@register(C.ROTATE_EVENT)
def decode_rotate(c: Cursor, h: EventHeader, ctx: DecodeContext) -> RotateEvent:
    post_len = ctx.post_header_len(C.ROTATE_EVENT, C.ROTATE_HEADER_LEN)
    position = c.u64("position") if post_len else 4
    return RotateEvent(position, surrogate_str(c.rest()))


@register(C.STOP_EVENT)
def decode_stop(c: Cursor, h: EventHeader, ctx: DecodeContext) -> StopEvent:
    c.rest()
    return StopEvent()


@register(C.XID_EVENT)
def decode_xid(c: Cursor, h: EventHeader, ctx: DecodeContext) -> XidEvent:
    return XidEvent(c.u64("xid"))


@register(C.INTVAR_EVENT)
def decode_intvar(c: Cursor, h: EventHeader, ctx: DecodeContext) -> IntvarEvent:
    return IntvarEvent(c.u8("type"), c.u64("value"))


@register(C.RAND_EVENT)
def decode_rand(c: Cursor, h: EventHeader, ctx: DecodeContext) -> RandEvent:
    return RandEvent(c.u64("seed1"), c.u64("seed2"))


@register(C.USER_VAR_EVENT)
def decode_user_var(c: Cursor, h: EventHeader, ctx: DecodeContext) -> UserVarEvent:
    name = surrogate_str(c.bytes(c.u32("name length"), "variable name"))
    is_null = c.u8("is_null")
    if is_null:
        return UserVarEvent(name, True)
    vtype = c.u8("value type")
    charset = c.u32("charset")
    value = c.bytes(c.u32("value length"), "value")
    flags = c.u8("flags") if c.remaining() else None
    return UserVarEvent(name, False, vtype, charset, value, flags)


@register(C.INCIDENT_EVENT)
def decode_incident(c: Cursor, h: EventHeader, ctx: DecodeContext) -> IncidentEvent:
    incident = c.u16("incident")
    message = c.bytes(c.u8("message length"), "message") if c.remaining() else b""
    return IncidentEvent(incident, surrogate_str(message))


@register(C.HEARTBEAT_LOG_EVENT)
def decode_heartbeat(c: Cursor, h: EventHeader, ctx: DecodeContext) -> HeartbeatEvent:
    return HeartbeatEvent(surrogate_str(c.rest()))


@register(C.HEARTBEAT_LOG_EVENT_V2)
def decode_heartbeat_v2(c: Cursor, h: EventHeader, ctx: DecodeContext) -> HeartbeatEventV2:
    filename, position = "", 0
    while c.remaining():
        ftype = c.packed_int("field type")
        if ftype == 0:
            break
        value = c.packed_bytes("field value")
        if ftype == 1:
            filename = surrogate_str(value)
        elif ftype == 2:
            position = Cursor(value, base=c.base + c.pos - len(value)).packed_int("log position")
    return HeartbeatEventV2(filename, position)


@register(C.ROWS_QUERY_LOG_EVENT)
def decode_rows_query(c: Cursor, h: EventHeader, ctx: DecodeContext) -> RowsQueryEvent:
    length_byte = c.u8("length")
    return RowsQueryEvent(surrogate_str(c.rest()), length_byte)


@register(C.XA_PREPARE_LOG_EVENT)
def decode_xa_prepare(c: Cursor, h: EventHeader, ctx: DecodeContext) -> XaPrepareEvent:
    one_phase = bool(c.u8("one_phase"))
    format_id = c.u32("format_id")
    gtrid_len = c.u32("gtrid_length")
    bqual_len = c.u32("bqual_length")
    if gtrid_len > 64 or bqual_len > 64:
        raise c.corrupt("invalid XID in XA_PREPARE", "gtrid/bqual lengths <= 64", (gtrid_len, bqual_len))
    return XaPrepareEvent(one_phase, format_id, c.bytes(gtrid_len, "gtrid"), c.bytes(bqual_len, "bqual"))


# --- GTIDs ---------------------------------------------------------------------------------------------------


@register(C.GTID_LOG_EVENT, C.ANONYMOUS_GTID_LOG_EVENT)
def decode_gtid(c: Cursor, h: EventHeader, ctx: DecodeContext) -> GtidEvent:
    """``Gtid_event``: flags, SID, GNO, then optional logical clock, timestamps, length, versions, ticket."""
    cls = GtidEvent if h.type_code == C.GTID_LOG_EVENT else AnonymousGtidEvent
    flags = c.u8("flags")
    sid = c.bytes(16, "SID")
    gno = c.i64("GNO")
    kw: dict[str, Optional[int]] = {}
    if c.remaining() >= 1:
        lt_type = c.u8("lt_type")
        kw["lt_type"] = lt_type
        if lt_type == C.LOGICAL_TIMESTAMP_TYPECODE and c.remaining() >= 16:
            kw["last_committed"] = c.i64("last_committed")
            kw["sequence_number"] = c.i64("sequence_number")
            if c.remaining() >= 7:
                ts = c.uint(7, "immediate_commit_timestamp")
                if ts & (1 << 55):
                    ts &= ~(1 << 55)
                    kw["original_commit_timestamp"] = c.uint(7, "original_commit_timestamp")
                kw["immediate_commit_timestamp"] = ts
                if c.remaining() >= 1:
                    kw["transaction_length"] = c.packed_int("transaction_length")
                if c.remaining() >= 4:
                    v = c.u32("immediate_server_version")
                    if v & (1 << 31):
                        v &= ~(1 << 31)
                        kw["original_server_version"] = c.u32("original_server_version")
                    kw["immediate_server_version"] = v
                    if c.remaining() >= 8:
                        kw["commit_group_ticket"] = c.u64("commit_group_ticket")
        c.rest()
    return cls(flags, sid, gno, **kw)


def _varlen_uint(c: Cursor, what: str) -> int:
    """mysql::serialization variable-length unsigned integer: (trailing ones in the first byte) + 1 bytes."""
    first = c.u8(what)
    n = 1
    while n < 9 and first >> (n - 1) & 1:
        n += 1
    if n == 1:
        return first >> 1
    rest = c.bytes(n - 1, what)
    value = int.from_bytes(bytes((first,)) + rest, "little")
    return value >> n if n < 9 else int.from_bytes(rest, "little")


def _varlen_int(c: Cursor, what: str) -> int:
    u = _varlen_uint(c, what)
    return -(u >> 1) - 1 if u & 1 else u >> 1


@register(C.GTID_TAGGED_LOG_EVENT)
def decode_gtid_tagged(c: Cursor, h: EventHeader, ctx: DecodeContext) -> GtidTaggedEvent:
    """GTID_TAGGED_LOG_EVENT in mysql::serialization format (``Gtid_event::define_fields``): a version byte,
    the message size, the last non-ignorable field id, then (field id, value) pairs."""
    raw = c.buf[c.pos : c.end]
    c.u8("serialization version")
    _varlen_uint(c, "message size")
    _varlen_uint(c, "last non-ignorable field id")
    fields: dict[int, object] = {}
    while c.remaining():
        fid = _varlen_uint(c, "field id")
        if fid == 0:
            fields[0] = _varlen_uint(c, "gtid_flags")
        elif fid == 1:
            fields[1] = bytes(_varlen_uint(c, "SID byte") for _ in range(16))
        elif fid == 3:
            fields[3] = surrogate_str(c.bytes(_varlen_uint(c, "tag length"), "tag"))
        elif fid in (2, 4, 5):
            fields[fid] = _varlen_int(c, "GNO / logical clock")
        elif fid <= 11:
            fields[fid] = _varlen_uint(c, "GTID field")
        else:
            break  # a newer, ignorable field: keep the rest in raw
    if 1 not in fields or 2 not in fields:
        raise c.corrupt("GTID_TAGGED_LOG_EVENT lacks its SID or GNO", "fields 1 and 2", sorted(fields))

    ints = {fid: v for fid, v in fields.items() if isinstance(v, int)}
    return GtidTaggedEvent(
        flags=ints.get(0, 0),
        sid=fields[1],
        gno=ints[2],
        last_committed=ints.get(4),  # type: ignore[arg-type]
        sequence_number=ints.get(5),
        immediate_commit_timestamp=ints.get(6),
        original_commit_timestamp=ints.get(7),
        transaction_length=ints.get(8),
        immediate_server_version=ints.get(9),
        original_server_version=ints.get(10),
        commit_group_ticket=ints.get(11),
        tag=str(fields.get(3, "")),
        raw=raw,
    )


@register(C.PREVIOUS_GTIDS_LOG_EVENT)
def decode_previous_gtids(c: Cursor, h: EventHeader, ctx: DecodeContext) -> PreviousGtidsEvent:
    """``Gtid_set::add_gtid_encoding``: 8-byte count (tagged format: format byte 1 in the top byte and the
    count in bits 8-55), then per SID: UUID, [tag], interval count, (start, end) pairs."""
    head = c.u64("n_sids")
    tagged = head >> 56 == 1
    n_sids = (head >> 8) & ((1 << 48) - 1) if tagged else head & ((1 << 56) - 1)
    if n_sids * 24 > c.remaining():
        raise c.corrupt("PREVIOUS_GTIDS SID count exceeds the event", f"<= {c.remaining() // 24}", n_sids)
    entries = []
    for _ in range(n_sids):
        sid = c.bytes(16, "SID")
        tag = surrogate_str(c.bytes(_varlen_uint(c, "tag length"), "tag")) if tagged else ""
        n_iv = c.u64("n_intervals")
        if n_iv * 16 > c.remaining():
            raise c.corrupt("PREVIOUS_GTIDS interval count exceeds the event", f"<= {c.remaining() // 16}", n_iv)
        entries.append(GtidSetEntry(sid, tag, tuple(GtidInterval(c.i64("start"), c.i64("end")) for _ in range(n_iv))))
    return PreviousGtidsEvent(tuple(entries), tagged)


# --- transaction payload -------------------------------------------------------------------------------------


@register(C.TRANSACTION_PAYLOAD_EVENT)
def decode_transaction_payload(c: Cursor, h: EventHeader, ctx: DecodeContext) -> TransactionPayloadEvent:
    """``Transaction_payload_event``: (type, length, value) header fields up to OTW_PAYLOAD_HEADER_END_MARK,
    then the payload."""
    fields = []
    values = {
        C.OTW_PAYLOAD_COMPRESSION_TYPE_FIELD: C.NONE,
        C.OTW_PAYLOAD_SIZE_FIELD: None,
        C.OTW_PAYLOAD_UNCOMPRESSED_SIZE_FIELD: 0,
    }
    while True:
        ftype = c.packed_int("payload header field type")
        if ftype == C.OTW_PAYLOAD_HEADER_END_MARK:
            break
        length = c.packed_int("payload header field length")
        value_start = c.pos
        value = c.packed_int("payload header field value")
        c.pos = value_start
        c.skip(length, "payload header field value")
        fields.append((ftype, value))
        values[ftype] = value
    payload = c.rest()
    size = values[C.OTW_PAYLOAD_SIZE_FIELD]
    if size is not None and size != len(payload):
        raise c.corrupt("TRANSACTION_PAYLOAD size field differs from the payload", size, len(payload))
    comp = values[C.OTW_PAYLOAD_COMPRESSION_TYPE_FIELD]
    return TransactionPayloadEvent(
        comp,
        len(payload),
        values[C.OTW_PAYLOAD_UNCOMPRESSED_SIZE_FIELD] or 0,  # type: ignore[arg-type]
        payload,
        tuple(fields),
    )


# --- MariaDB -------------------------------------------------------------------------------------------------


@register(C.ANNOTATE_ROWS_EVENT)
def decode_annotate_rows(c: Cursor, h: EventHeader, ctx: DecodeContext) -> AnnotateRowsEvent:
    return AnnotateRowsEvent(surrogate_str(c.rest()))


@register(C.BINLOG_CHECKPOINT_EVENT)
def decode_binlog_checkpoint(c: Cursor, h: EventHeader, ctx: DecodeContext) -> BinlogCheckpointEvent:
    return BinlogCheckpointEvent(surrogate_str(c.bytes(c.u32("file name length"), "file name")))


@register(C.GTID_EVENT)
def decode_mariadb_gtid(c: Cursor, h: EventHeader, ctx: DecodeContext) -> MariadbGtidEvent:
    seq_no = c.u64("seq_no")
    domain_id = c.u32("domain_id")
    flags = c.u8("flags2")
    commit_id = None
    xid = None
    if flags & C.FL_GROUP_COMMIT_ID:
        commit_id = c.u64("commit_id")
    elif flags & (C.FL_PREPARED_XA | C.FL_COMPLETED_XA):
        format_id = c.u32("XID format_id")
        gtrid_len = c.u8("XID gtrid_length")
        bqual_len = c.u8("XID bqual_length")
        xid = (format_id, c.bytes(gtrid_len, "gtrid"), c.bytes(bqual_len, "bqual"))
    else:
        c.skip(6, "GTID_EVENT padding")
    return MariadbGtidEvent(seq_no, domain_id, flags, commit_id, xid, c.rest(), h.server_id)


@register(C.GTID_LIST_EVENT)
def decode_gtid_list(c: Cursor, h: EventHeader, ctx: DecodeContext) -> GtidListEvent:
    head = c.u32("count")
    count = head & ((1 << 28) - 1)
    if count * 16 > c.remaining():
        raise c.corrupt("GTID_LIST count exceeds the event", f"<= {c.remaining() // 16}", count)
    gtids = tuple(MariadbGtid(c.u32("domain_id"), c.u32("server_id"), c.u64("seq_no")) for _ in range(count))
    return GtidListEvent(gtids, head >> 28)


@register(C.START_ENCRYPTION_EVENT)
def decode_start_encryption(c: Cursor, h: EventHeader, ctx: DecodeContext) -> StartEncryptionEvent:
    return StartEncryptionEvent(c.u8("scheme"), c.u32("key_version"), c.bytes(C.BINLOG_NONCE_LENGTH, "nonce"))


# --- TABLE_MAP -----------------------------------------------------------------------------------------------


def _column_metadata(c: Cursor, types: tuple[int, ...]) -> tuple[int, ...]:
    out = []
    for t in types:
        if t in C.METADATA_1_BYTE_TYPES:
            out.append(c.u8("column metadata"))
        elif t in (C.MYSQL_TYPE_VARCHAR, C.MYSQL_TYPE_VAR_STRING, C.MYSQL_TYPE_BIT):
            out.append(c.u16("column metadata"))
        elif t in C.METADATA_2_BYTE_TYPES:
            b0 = c.u8("column metadata")
            out.append(b0 << 8 | c.u8("column metadata"))
        else:
            out.append(0)
    return tuple(out)


def _bits_msb(data: bytes, count: int) -> tuple[bool, ...]:
    return tuple(bool(data[i >> 3] & (0x80 >> (i & 7))) for i in range(min(count, len(data) * 8)))


def _packed_list(c: Cursor, what: str) -> tuple[int, ...]:
    out = []
    while c.remaining():
        out.append(c.packed_int(what))
    return tuple(out)


def _key_columns(f: Cursor, indexes: tuple[int, ...], count: int) -> tuple[int, ...]:
    """The primary key's column indexes of a TABLE_MAP field: each names one of the ``count`` columns
    (``Table_map_event`` writes ``field->field_index()``), else a CorruptEventError at the field."""
    for i in indexes:
        if i >= count:
            raise CorruptEventError(
                "primary key names a column past the TABLE_MAP's columns",
                offset=f.base,
                expected=f"a column index below {count}",
                found=i,
            )
    return indexes


def _default_charset(c: Cursor) -> DefaultCharset:
    default = c.packed_int("default collation")
    pairs = []
    while c.remaining():
        pairs.append((c.packed_int("column index"), c.packed_int("collation")))
    return DefaultCharset(default, tuple(pairs))


def _str_value_lists(c: Cursor) -> tuple[tuple[str, ...], ...]:
    out = []
    while c.remaining():
        n = c.packed_int("value count")
        if n > c.remaining():
            raise c.corrupt("ENUM/SET value count exceeds the field", f"<= {c.remaining()}", n)
        out.append(tuple(surrogate_str(c.packed_bytes("ENUM/SET value")) for _ in range(n)))
    return tuple(out)


def _optional_metadata(c: Cursor, types: tuple[int, ...]) -> dict[str, object]:
    n_numeric = sum(1 for t in types if t in C.NUMERIC_TYPES)
    found: dict[str, object] = {}
    raw_fields = []
    while c.remaining():
        ftype = c.u8("optional metadata type")
        value = c.packed_bytes("optional metadata field")
        raw_fields.append((ftype, value))
        f = Cursor(value, base=c.base + c.pos - len(value))
        if ftype == C.SIGNEDNESS:
            found["signedness"] = _bits_msb(value, n_numeric)
        elif ftype == C.DEFAULT_CHARSET:
            found["default_charset"] = _default_charset(f)
        elif ftype == C.COLUMN_CHARSET:
            found["column_charsets"] = _packed_list(f, "collation")
        elif ftype == C.COLUMN_NAME:
            names = []
            while f.remaining():
                names.append(surrogate_str(f.packed_bytes("column name")))
            found["column_names"] = tuple(names)
        elif ftype == C.SET_STR_VALUE:
            found["set_str_values"] = _str_value_lists(f)
        elif ftype == C.ENUM_STR_VALUE:
            found["enum_str_values"] = _str_value_lists(f)
        elif ftype == C.GEOMETRY_TYPE:
            found["geometry_types"] = _packed_list(f, "geometry type")
        elif ftype == C.SIMPLE_PRIMARY_KEY:
            found["simple_primary_key"] = _key_columns(f, _packed_list(f, "primary key column"), len(types))
        elif ftype == C.PRIMARY_KEY_WITH_PREFIX:
            flat = _packed_list(f, "primary key column/prefix")
            if len(flat) % 2:
                raise f.corrupt("PRIMARY_KEY_WITH_PREFIX has an odd number of integers", "pairs", len(flat))
            _key_columns(f, flat[::2], len(types))
            found["primary_key_with_prefix"] = tuple(zip(flat[::2], flat[1::2]))
        elif ftype == C.ENUM_AND_SET_DEFAULT_CHARSET:
            found["enum_and_set_default_charset"] = _default_charset(f)
        elif ftype == C.ENUM_AND_SET_COLUMN_CHARSET:
            found["enum_and_set_column_charsets"] = _packed_list(f, "collation")
        elif ftype == C.COLUMN_VISIBILITY:
            found["column_visibility"] = _bits_msb(value, len(types))
        elif ftype == C.VECTOR_DIMENSIONALITY:
            found["vector_dimensionality"] = _packed_list(f, "vector dimensions")
    found["optional_metadata"] = tuple(raw_fields)
    return found


@register(C.TABLE_MAP_EVENT)
def decode_table_map(c: Cursor, h: EventHeader, ctx: DecodeContext) -> TableMapEvent:
    """``Table_map_event``; a body seen before reuses the decoded event and its row layout (the context's
    TableMapCache)."""
    provider = ctx.schema_provider
    cache = ctx.table_map_cache
    mariadb = ctx.fde is not None and "mariadb" in ctx.fde.server_version.lower()
    key = (
        c.buf[c.pos : c.end],
        ctx.post_header_len(C.TABLE_MAP_EVENT, C.TABLE_MAP_HEADER_LEN),
        id(provider),
        ctx.decode_rows,
        mariadb,
    )
    cached = cache.get(key)
    if cached is None:
        tm = _decode_table_map(c, ctx)
        # the entry holds the provider, so its id can not be reused while the entry exists
        cached = (tm, build_layout(tm, provider, mariadb=mariadb) if ctx.decode_rows else None, provider)
        cache.put(key, cached)
    c.pos = c.end
    tm, layout, _ = cached
    if layout is not None:
        ctx.tables[tm.table_id] = layout
        if layout.assumptions:
            ctx.assumptions[(tm.db, tm.table)] = layout.assumptions
    return tm


def _decode_table_map(c: Cursor, ctx: DecodeContext) -> TableMapEvent:
    post_len = ctx.post_header_len(C.TABLE_MAP_EVENT, C.TABLE_MAP_HEADER_LEN)
    id_size = 4 if post_len == 6 else 6
    table_id = c.uint(id_size, "table_id")
    flags = c.u16("flags")
    if post_len > id_size + 2:
        c.skip(post_len - id_size - 2, "TABLE_MAP post-header")
    db = c.bytes(c.u8("database name length"), "database name")
    c.skip(1, "NUL after the database name")
    table = c.bytes(c.u8("table name length"), "table name")
    c.skip(1, "NUL after the table name")
    ncols = c.packed_int("column count")
    types = tuple(c.bytes(ncols, "column types"))
    meta_len = c.packed_int("metadata length")
    meta_end = c.pos + meta_len
    c.need(meta_len, "column metadata")
    mc = Cursor(c.buf, c.pos, meta_end, c.base)
    metas = _column_metadata(mc, types)
    if mc.pos != meta_end:
        raise mc.corrupt("TABLE_MAP metadata length does not match the column types", meta_len, mc.pos - c.pos)
    c.pos = meta_end
    null_bits = c.bytes((ncols + 7) >> 3, "NULL bitmap")
    opt = _optional_metadata(c, types) if c.remaining() else {}
    return TableMapEvent(
        table_id, flags, surrogate_str(db), surrogate_str(table), types, metas, null_bits, table_id_size=id_size, **opt
    )  # type: ignore[arg-type]


# --- rows events ---------------------------------------------------------------------------------------------

_ROWS_CLASSES = {}
for _codes, _cls in (
    (C.WRITE_ROWS_TYPES, WriteRowsEvent),
    (C.DELETE_ROWS_TYPES, DeleteRowsEvent),
    (C.UPDATE_ROWS_TYPES, UpdateRowsEvent),
):
    for _code in _codes:
        _ROWS_CLASSES[_code] = _cls
_ROWS_CLASSES[C.PARTIAL_UPDATE_ROWS_EVENT] = PartialUpdateRowsEvent
_MARIADB_V2_COMPRESSED = frozenset(
    {C.WRITE_ROWS_COMPRESSED_EVENT, C.UPDATE_ROWS_COMPRESSED_EVENT, C.DELETE_ROWS_COMPRESSED_EVENT}
)


@register(*C.ROWS_EVENT_TYPES)
def decode_rows_event(c: Cursor, h: EventHeader, ctx: DecodeContext) -> object:
    """``Rows_event``: table id, flags, (v2) extra row info, column count, columns-present bitmap(s), rows."""
    t = h.type_code
    v2 = t in C.ROWS_V2_TYPES or t in _MARIADB_V2_COMPRESSED
    default_len = C.ROWS_HEADER_LEN_V2 if v2 else C.ROWS_HEADER_LEN_V1
    post_len = ctx.post_header_len(t, default_len)
    id_size = 4 if post_len == 6 else 6
    table_id = c.uint(id_size, "table_id")
    flags = c.u16("flags")
    extra: Optional[bytes] = None
    if v2:
        extra_len = c.u16("extra row info length")
        if extra_len < 2:
            raise c.corrupt("extra row info length below its own size", ">= 2", extra_len)
        extra = c.bytes(extra_len - 2, "extra row info")
    ncols = c.packed_int("column count")
    nbytes = (ncols + 7) >> 3
    present = c.bytes(nbytes, "columns-present bitmap")
    update = t in C.UPDATE_ROWS_TYPES
    present_after = c.bytes(nbytes, "after-image columns-present bitmap") if update else b""
    compressed_at = None
    if t in C.MARIADB_COMPRESSED_ROWS_TYPES:
        # row_log_event_uncompress: only the rows (m_rows_buf) are compressed, after the plain bitmaps
        compressed_at = c.base + c.pos
        c = Cursor(_mariadb_uncompress(c, "compressed rows"), base=compressed_at)
    rows: tuple = ()
    if c.remaining() and ctx.decode_rows:
        layout = ctx.tables.get(table_id)
        if layout is None:
            raise UnknownTableError(
                f"table id {table_id} has no TABLE_MAP_EVENT before it",
                expected="a TABLE_MAP_EVENT for this table id",
                found="none",
            )
        if layout.table_map.column_count != ncols:
            raise c.corrupt("rows event column count differs from its TABLE_MAP", layout.table_map.column_count, ncols)
        buf = c.buf if c.end == len(c.buf) else c.buf[: c.end]
        try:
            rows = decode_rows(layout, t, buf, c.pos, c.end, present, present_after, ctx.row_dicts)
        except BinlogError as exc:
            if compressed_at is not None:
                # an offset inside the uncompressed rows is no file offset: name it, point at the compressed data
                if exc.offset is not None:
                    exc.message += f" (byte {exc.offset} of the uncompressed rows)"
                exc.offset = compressed_at
                exc.args = (str(exc),)
            elif exc.offset is not None:
                exc.offset += c.base
            raise
    cls = _ROWS_CLASSES[t]
    if update:
        return cls(table_id, flags, extra, ncols, present, rows, id_size, present_after)
    return cls(table_id, flags, extra, ncols, present, rows, id_size)


def decode_body(c: Cursor, header: EventHeader, ctx: DecodeContext) -> object:
    """The typed body of one event (UnknownEvent for types without a decoder)."""
    decoder = DECODERS.get(header.type_code)
    if decoder is None:
        return UnknownEvent(header.type_code, c.rest())
    return decoder(c, header, ctx)
