"""Encoders of event bodies (everything after the 19-byte header, before the checksum), one per event type.

Each mirrors the ``write_data_header``/``write_data_body`` pair of the event's class in mysql-server
(``sql/log_event.cc``, ``libs/mysql/binlog/event/*.cpp``) or MariaDB (``sql/log_event_server.cc``) and is the
inverse of the matching decoder in ``binlake.binlog``: ``decode(encode(body)) == body``. Row events and
TABLE_MAP live in :mod:`binlake.binlog.encode_rows`.
"""

from __future__ import annotations

import struct
from typing import Any, Callable

from binlake.binlog import events as ev
from binlake.binlog.constants import (
    FL_COMPLETED_XA,
    FL_GROUP_COMMIT_ID,
    FL_PREPARED_XA,
    OTW_PAYLOAD_COMPRESSION_TYPE_FIELD,
    OTW_PAYLOAD_HEADER_END_MARK,
    OTW_PAYLOAD_SIZE_FIELD,
    OTW_PAYLOAD_UNCOMPRESSED_SIZE_FIELD,
    ST_SERVER_VER_LEN,
)
from binlake.binlog.encode_base import U8, U32, U64, BinlogWriteError, packed_length

START_V3 = struct.Struct("<H50sI")  # binlog_version, server_version, create_timestamp
FDE_FIXED = struct.Struct("<H50sIB")  # ... + common header length
QUERY_POST_HEADER = struct.Struct("<IIBHH")  # thread_id, exec_time, db_len, error_code, status_vars_len
QUERY_POST_HEADER_V3 = struct.Struct("<IIBH")
EXEC_LOAD_EXTRA = struct.Struct("<IIIB")  # file_id, fn_pos_start, fn_pos_end, dup_handling
INTVAR = struct.Struct("<BQ")
RAND = struct.Struct("<QQ")
GTID_FIXED = struct.Struct("<B16sq")  # gtid_flags, sid, gno
GTID_LOGICAL_CLOCK = struct.Struct("<Bqq")  # lt_type, last_committed, sequence_number
GTID_SERVER_VERSION = U32
XA_PREPARE = struct.Struct("<BiII")  # one_phase, formatID, gtrid_length, bqual_length
INCIDENT = struct.Struct("<HB")
MARIADB_GTID = struct.Struct("<QIB")  # seq_no, domain_id, flags2
MARIADB_GTID_LIST_ITEM = struct.Struct("<IIQ")
START_ENCRYPTION = struct.Struct("<BI12s")

ENCODED_TIMESTAMP_LENGTH = 7  # Gtid_event: 56-bit commit timestamps
ORIGINAL_TIMESTAMP_FLAG = 1 << 55
ORIGINAL_SERVER_VERSION_FLAG = 1 << 31


class Context:
    """What body encoders need to know from the stream: the FORMAT_DESCRIPTION's post-header lengths."""

    __slots__ = ("post_header_lengths",)

    def __init__(self, post_header_lengths: bytes = b"") -> None:
        self.post_header_lengths = post_header_lengths

    def post_header_len(self, type_code: int, default: int) -> int:
        if 0 < type_code <= len(self.post_header_lengths):
            return self.post_header_lengths[type_code - 1]
        return default


def _text(s: str) -> bytes:
    return s.encode("utf-8", "surrogateescape")


def _server_version(raw: bytes, version: str) -> bytes:
    if raw:
        return raw
    data = _text(version)
    if len(data) > ST_SERVER_VER_LEN:
        raise BinlogWriteError("server version is longer than 50 bytes", found=version)
    return data.ljust(ST_SERVER_VER_LEN, b"\0")


def encode_start_v3(e: ev.StartEventV3, ctx: Context) -> bytes:
    return START_V3.pack(e.binlog_version, _server_version(e.server_version_raw, e.server_version), e.create_timestamp)


def encode_format_description(e: ev.FormatDescriptionEvent, ctx: Context) -> bytes:
    """``Format_description_event::write``: the checksum-algorithm byte follows the post-header lengths."""
    data = (
        FDE_FIXED.pack(
            e.binlog_version,
            _server_version(e.server_version_raw, e.server_version),
            e.create_timestamp,
            e.header_length,
        )
        + e.post_header_lengths
    )
    if e.checksum_alg is not None:
        data += U8.pack(e.checksum_alg)
    return data


def _query_like(
    thread_id: int,
    exec_time: int,
    error_code: int,
    status_vars: bytes,
    db: str,
    query: str,
    post_header_len: int,
    extra_post_header: bytes = b"",
) -> bytes:
    dbb = _text(db)
    if len(dbb) > 255:
        raise BinlogWriteError("database name is longer than 255 bytes", found=db)
    if post_header_len <= QUERY_POST_HEADER_V3.size:
        if status_vars:
            raise BinlogWriteError("a v3 QUERY_EVENT has no status variables", found=len(status_vars))
        head = QUERY_POST_HEADER_V3.pack(thread_id, exec_time, len(dbb), error_code)
    else:
        head = QUERY_POST_HEADER.pack(thread_id, exec_time, len(dbb), error_code, len(status_vars))
    return head + extra_post_header + status_vars + dbb + b"\0" + _text(query)


def encode_query(e: ev.QueryEvent, ctx: Context) -> bytes:
    """``Query_event::write``: post-header, status variables, db NUL, query (not NUL-terminated)."""
    return _query_like(
        e.thread_id,
        e.exec_time,
        e.error_code,
        e.status_vars,
        e.db,
        e.query,
        ctx.post_header_len(2, QUERY_POST_HEADER.size),
    )


def encode_execute_load_query(e: ev.ExecuteLoadQueryEvent, ctx: Context) -> bytes:
    extra = EXEC_LOAD_EXTRA.pack(e.file_id, e.start_pos, e.end_pos, e.dup_handling)
    return _query_like(
        e.thread_id, e.exec_time, e.error_code, e.status_vars, e.db, e.query, QUERY_POST_HEADER.size, extra
    )


def encode_rotate(e: ev.RotateEvent, ctx: Context) -> bytes:
    return U64.pack(e.position) + _text(e.next_file)


def encode_stop(e: ev.StopEvent, ctx: Context) -> bytes:
    return b""


def encode_xid(e: ev.XidEvent, ctx: Context) -> bytes:
    return U64.pack(e.xid)


def encode_intvar(e: ev.IntvarEvent, ctx: Context) -> bytes:
    return INTVAR.pack(e.type, e.value)


def encode_rand(e: ev.RandEvent, ctx: Context) -> bytes:
    return RAND.pack(e.seed1, e.seed2)


def encode_user_var(e: ev.UserVarEvent, ctx: Context) -> bytes:
    name = _text(e.name)
    data = U32.pack(len(name)) + name + U8.pack(1 if e.is_null else 0)
    if not e.is_null:
        data += U8.pack(e.value_type) + U32.pack(e.charset) + U32.pack(len(e.value)) + e.value
        if e.flags is not None:
            data += U8.pack(e.flags)
    return data


def encode_incident(e: ev.IncidentEvent, ctx: Context) -> bytes:
    msg = _text(e.message)
    return INCIDENT.pack(e.incident, len(msg)) + msg


def encode_heartbeat(e: ev.HeartbeatEvent, ctx: Context) -> bytes:
    return _text(e.log_ident)


def encode_rows_query(e: ev.RowsQueryEvent, ctx: Context) -> bytes:
    return U8.pack(e.length_byte) + _text(e.query)


def encode_xa_prepare(e: ev.XaPrepareEvent, ctx: Context) -> bytes:
    return XA_PREPARE.pack(1 if e.one_phase else 0, e.format_id, len(e.gtrid), len(e.bqual)) + e.gtrid + e.bqual


def _timestamp7(value: int, flag: int = 0) -> bytes:
    return (value | flag).to_bytes(ENCODED_TIMESTAMP_LENGTH, "little")


def encode_gtid(e: ev.GtidEvent, ctx: Context) -> bytes:
    """``Gtid_event::write_data_header`` + ``write_data_body``: each optional group only when present."""
    data = GTID_FIXED.pack(e.flags, e.sid, e.gno)
    if e.lt_type is None:
        return data
    data += GTID_LOGICAL_CLOCK.pack(e.lt_type, e.last_committed or 0, e.sequence_number or 0)
    if e.immediate_commit_timestamp is None:
        return data
    if e.original_commit_timestamp is None:
        data += _timestamp7(e.immediate_commit_timestamp)
    else:
        data += _timestamp7(e.immediate_commit_timestamp, ORIGINAL_TIMESTAMP_FLAG)
        data += _timestamp7(e.original_commit_timestamp)
    if e.transaction_length is None:
        return data
    data += packed_length(e.transaction_length)
    if e.immediate_server_version is None:
        return data
    if e.original_server_version is None:
        data += GTID_SERVER_VERSION.pack(e.immediate_server_version)
    else:
        data += GTID_SERVER_VERSION.pack(e.immediate_server_version | ORIGINAL_SERVER_VERSION_FLAG)
        data += GTID_SERVER_VERSION.pack(e.original_server_version)
    if e.commit_group_ticket is not None:
        data += U64.pack(e.commit_group_ticket)
    return data


def encode_gtid_tagged(e: ev.GtidTaggedEvent, ctx: Context) -> bytes:
    if not e.raw:
        raise BinlogWriteError("GTID_TAGGED_LOG_EVENT is only written from its stored bytes (raw)")
    return e.raw


def encode_previous_gtids(e: ev.PreviousGtidsEvent, ctx: Context) -> bytes:
    """``Gtid_set::encode``: n_sids, then per SID its 16 bytes, n_intervals and [start, end) pairs."""
    if e.tagged:
        raise BinlogWriteError("tagged PREVIOUS_GTIDS (MySQL 8.3+) is not written by this encoder")
    parts = [U64.pack(len(e.entries))]
    for entry in e.entries:
        parts.append(entry.sid + U64.pack(len(entry.intervals)))
        parts.extend(U64.pack(i.start) + U64.pack(i.end) for i in entry.intervals)
    return b"".join(parts)


def payload_fields(compression_type: int, payload_size: int, uncompressed_size: int) -> tuple[tuple[int, int], ...]:
    """The header fields of a TRANSACTION_PAYLOAD in the order MySQL 8.0 writes them."""
    return (
        (OTW_PAYLOAD_COMPRESSION_TYPE_FIELD, compression_type),
        (OTW_PAYLOAD_UNCOMPRESSED_SIZE_FIELD, uncompressed_size),
        (OTW_PAYLOAD_SIZE_FIELD, payload_size),
    )


def encode_transaction_payload(e: ev.TransactionPayloadEvent, ctx: Context) -> bytes:
    """``Transaction_payload_event``: (type, length, value) packed-integer fields, end mark, payload bytes."""
    fields = e.fields or payload_fields(e.compression_type, e.payload_size, e.uncompressed_size)
    parts = []
    for field_type, value in fields:
        value_bytes = packed_length(value)
        parts.append(packed_length(field_type) + packed_length(len(value_bytes)) + value_bytes)
    parts.append(packed_length(OTW_PAYLOAD_HEADER_END_MARK))
    parts.append(e.payload)
    return b"".join(parts)


def encode_load_data_block(e: ev.LoadDataBlockEvent, ctx: Context) -> bytes:
    return U32.pack(e.file_id) + e.data


def encode_annotate_rows(e: ev.AnnotateRowsEvent, ctx: Context) -> bytes:
    return _text(e.query)


def encode_binlog_checkpoint(e: ev.BinlogCheckpointEvent, ctx: Context) -> bytes:
    name = _text(e.binlog_file)
    return U32.pack(len(name)) + name


def encode_mariadb_gtid(e: ev.MariadbGtidEvent, ctx: Context) -> bytes:
    """MariaDB ``Gtid_log_event::write``: seq_no, domain_id, flags2, then commit_id or XID, then the rest."""
    data = MARIADB_GTID.pack(e.seq_no, e.domain_id, e.flags)
    if e.flags & FL_GROUP_COMMIT_ID:
        data += U64.pack(e.commit_id or 0)
    if e.flags & (FL_PREPARED_XA | FL_COMPLETED_XA) and e.xid is not None:
        format_id, gtrid, bqual = e.xid
        data += U32.pack(format_id) + U8.pack(len(gtrid)) + U8.pack(len(bqual)) + gtrid + bqual
    return data + e.extra


def encode_gtid_list(e: ev.GtidListEvent, ctx: Context) -> bytes:
    parts = [U32.pack(len(e.gtids) | (e.flags << 28))]
    parts.extend(MARIADB_GTID_LIST_ITEM.pack(g.domain_id, g.server_id, g.seq_no) for g in e.gtids)
    return b"".join(parts)


def encode_start_encryption(e: ev.StartEncryptionEvent, ctx: Context) -> bytes:
    return START_ENCRYPTION.pack(e.scheme, e.key_version, e.nonce)


def encode_unknown(e: ev.UnknownEvent, ctx: Context) -> bytes:
    return e.raw


BODY_ENCODERS: dict[type, Callable[[Any, Context], bytes]] = {
    ev.StartEventV3: encode_start_v3,
    ev.FormatDescriptionEvent: encode_format_description,
    ev.QueryEvent: encode_query,
    ev.ExecuteLoadQueryEvent: encode_execute_load_query,
    ev.RotateEvent: encode_rotate,
    ev.StopEvent: encode_stop,
    ev.XidEvent: encode_xid,
    ev.IntvarEvent: encode_intvar,
    ev.RandEvent: encode_rand,
    ev.UserVarEvent: encode_user_var,
    ev.IncidentEvent: encode_incident,
    ev.HeartbeatEvent: encode_heartbeat,
    ev.RowsQueryEvent: encode_rows_query,
    ev.XaPrepareEvent: encode_xa_prepare,
    ev.GtidEvent: encode_gtid,
    ev.AnonymousGtidEvent: encode_gtid,
    ev.GtidTaggedEvent: encode_gtid_tagged,
    ev.PreviousGtidsEvent: encode_previous_gtids,
    ev.TransactionPayloadEvent: encode_transaction_payload,
    ev.LoadDataBlockEvent: encode_load_data_block,
    ev.AnnotateRowsEvent: encode_annotate_rows,
    ev.BinlogCheckpointEvent: encode_binlog_checkpoint,
    ev.MariadbGtidEvent: encode_mariadb_gtid,
    ev.GtidListEvent: encode_gtid_list,
    ev.StartEncryptionEvent: encode_start_encryption,
    ev.UnknownEvent: encode_unknown,
}
