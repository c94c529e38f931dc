"""Rendering decoded events and rows: JSON-ready values (the CLI contracts) and ``mysqlbinlog -v`` text.

JSON values: integers as numbers, DECIMAL as an exact string, temporals as MySQL's text with the column's
fractional digits, text as strings, binary as ``{"hex": ...}`` (and so is text that is not valid in its charset),
JSON as MySQL's JSON text string, NULL as null.
The ``-v`` pseudo-SQL mirrors ``Rows_log_event::print_verbose`` / ``log_event_print_value`` (sql/log_event.cc),
with partial JSON columns in the WL#2955 FR7 grammar (``binlake.mysqljson.render_mysqlbinlog``).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import math
from decimal import Decimal
from typing import Any, Optional

from binlake.binlog import constants as C
from binlake.binlog.errors import BinlogError, CorruptEventError
from binlake.binlog.events import (
    ABSENT,
    BinlogEvent,
    DeleteRowsEvent,
    FormatDescriptionEvent,
    GtidEvent,
    JsonPartial,
    MariadbGtidEvent,
    PreviousGtidsEvent,
    RowsEvent,
    TransactionPayloadEvent,
    UpdateRowsEvent,
    WriteRowsEvent,
)
from binlake.binlog.jsonvalue import json_text
from binlake.binlog.table import TableLayout
from binlake.binlog.values import MysqlDate, MysqlDateTime, MysqlTime, MysqlTimestamp
from binlake.mysqljson import BinaryJson, DiffOp, JsonError, render_mysqlbinlog

_TEMPORALS = (MysqlDate, MysqlDateTime, MysqlTime, MysqlTimestamp)


def _float(value: float) -> float:
    if not math.isfinite(value):
        raise CorruptEventError(
            "FLOAT/DOUBLE value is not a finite number",
            expected="a finite number (MySQL stores no NaN or infinity)",
            found=repr(value),
        )
    return value


def _text(value: str) -> Any:
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        return {"hex": value.encode("utf-8", "surrogateescape").hex()}


# the renderers of the exact types the decoder gives (json_value's dispatch, without its isinstance chain)
_RENDER = {
    float: _float,
    str: _text,
    Decimal: lambda v: format(v, "f"),
    bytes: lambda v: {"hex": v.hex()},
    MysqlDate: str,
    MysqlDateTime: str,
    MysqlTime: str,
    MysqlTimestamp: str,
}


def json_value(value: Any) -> Any:
    """A column value in the ``binlake rows`` JSON encoding. Text that did not decode in its charset (kept with
    surrogate escapes, e.g. non-UTF-8 text whose charset the TABLE_MAP does not say) is ``{"hex": ...}`` of its
    bytes, so the output is always valid UTF-8 and lossless."""
    render = _RENDER.get(type(value))
    if render is not None:
        return render(value)
    if value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"hex": bytes(value).hex()}
    if isinstance(value, _TEMPORALS):
        return str(value)
    if isinstance(value, BinaryJson):
        return json_text(value)
    if isinstance(value, tuple):  # VECTOR
        if not all(map(math.isfinite, value)):
            raise CorruptEventError(
                "VECTOR element is not a finite number",
                expected="finite FLOAT elements",
                found=repr(next(v for v in value if not math.isfinite(v))),
            )
        return list(value)
    raise CorruptEventError(f"no JSON encoding for a {type(value).__name__} value")


_AS_IS = frozenset((int, type(None)))


def json_image(image: Optional[dict[str, Any]]) -> Optional[dict[str, Any]]:
    """A row image in the ``binlake rows`` JSON encoding; a value that does not render names its column.
    (Integers and NULLs, most values, render as they are; the decoder's other types go straight to their
    renderer.)"""
    if image is None:
        return None
    try:
        render = _RENDER.get
        return {k: v if type(v) in _AS_IS else render(type(v), json_value)(v) for k, v in image.items()}
    except BinlogError:
        for k, v in image.items():
            try:
                json_value(v)
            except BinlogError as exc:
                exc.message += f" (column `{k}`)"
                raise exc.located() from None
        raise


def json_diffs(diffs: Optional[dict[str, Any]]) -> Optional[dict[str, Any]]:
    """``{column: [{"op", "path", "value"}]}``: value is MySQL's JSON text (null for REMOVE)."""
    if diffs is None:
        return None
    out = {}
    for col, ds in diffs.items():
        try:
            out[col] = [
                {
                    "op": DiffOp(d.op).name,
                    "path": str(d.path),
                    "value": None if d.op == DiffOp.REMOVE else json_text(d.value),
                }
                for d in ds
            ]
        except BinlogError as exc:
            exc.message += f" (column `{col}`)"
            raise exc.located() from None
    return out


# --- event summaries -------------------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return value


def event_info(event: BinlogEvent) -> dict[str, Any]:
    """The body's fields as JSON-ready values (rows as a count, payload bytes left out)."""
    body = event.body
    out: dict[str, Any] = {}
    for f in dataclasses.fields(body):
        if f.name in ("rows", "payload", "optional_metadata", "server_version_raw", "raw"):
            continue
        out[f.name] = _plain(getattr(body, f.name))
    if isinstance(body, (GtidEvent, MariadbGtidEvent)):
        out["gtid"] = body.gtid
    if isinstance(body, PreviousGtidsEvent):
        out["gtid_set"] = body.gtid_set()
    return out


def event_record(event: BinlogEvent) -> dict[str, Any]:
    """One ``binlake events --format jsonl`` object."""
    h = event.header
    return {
        "pos": event.pos,
        "type_code": h.type_code,
        "type": h.type_name,
        "timestamp": h.timestamp,
        "server_id": h.server_id,
        "size": h.event_size,
        "log_pos": h.log_pos,
        "flags": h.flags,
        "payload_pos": event.payload_pos,
        "checksum": event.checksum,
        "info": event_info(event),
    }


def event_line(event: BinlogEvent) -> str:
    """One ``binlake events --format text`` line."""
    h = event.header
    where = f"{event.pos}" if event.payload_pos is None else f"{event.payload_pos}+{event.pos}"
    info = event_info(event)
    brief = " ".join(f"{k}={v!r}" for k, v in info.items() if v not in (None, "", (), []))
    return f"{where:>12} {h.type_name:<28} size={h.event_size} server_id={h.server_id} ts={h.timestamp} {brief}"


# --- mysqlbinlog -v --------------------------------------------------------------------------------------------


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def sql_value(value: Any, layout: TableLayout, index: int) -> str:
    """``log_event_print_value``-like text of one value."""
    if value is None:
        return "NULL"
    col = layout.columns[index]
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        if col.real_type == C.MYSQL_TYPE_BIT:
            return "b'" + format(value, "b").zfill(1) + "'"
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, (bytes, bytearray)):
        return _quote(bytes(value).decode("latin-1"))
    if isinstance(value, _TEMPORALS):
        return _quote(str(value))
    if isinstance(value, BinaryJson):
        return _quote(json_text(value))
    if isinstance(value, tuple):
        return "[" + ",".join(repr(v) for v in value) + "]"
    return _quote(str(value))


def _image_lines(image: tuple, layout: TableLayout) -> list[str]:
    out = []
    for i, v in enumerate(image):
        if v is ABSENT:
            continue
        name = f"@{i + 1}"
        try:
            if isinstance(v, JsonPartial):
                out.append(f"###   {name}=" + render_mysqlbinlog(name, v.diffs))
            else:
                out.append(f"###   {name}={sql_value(v, layout, i)}")
        except (BinlogError, JsonError) as exc:
            err = exc if isinstance(exc, BinlogError) else CorruptEventError(f"invalid JSON value: {exc}")
            err.message += f" (column `{layout.column_names[i]}`)"
            raise err.located() from None
    return out


def verbose_rows(event: BinlogEvent, layout: TableLayout) -> list[str]:
    """``Rows_log_event::print_verbose``: INSERT INTO / UPDATE / DELETE FROM pseudo-SQL, one row at a time."""
    body = event.body
    table = f"`{layout.db}`.`{layout.table}`"
    out: list[str] = []
    for n, row in enumerate(body.rows if isinstance(body, (WriteRowsEvent, DeleteRowsEvent, UpdateRowsEvent)) else ()):
        try:
            if isinstance(body, WriteRowsEvent):
                out += [f"### INSERT INTO {table}", "### SET", *_image_lines(row, layout)]
            elif isinstance(body, DeleteRowsEvent):
                out += [f"### DELETE FROM {table}", "### WHERE", *_image_lines(row, layout)]
            else:
                out += [
                    f"### UPDATE {table}",
                    "### WHERE",
                    *_image_lines(row.before, layout),
                    "### SET",
                    *_image_lines(row.after, layout),
                ]
        except BinlogError as exc:
            exc.message += f" (row {n})"
            raise exc.located() from None
    return out


def _when(ts: int) -> str:
    return _dt.datetime.fromtimestamp(ts, _dt.timezone.utc).strftime("%y%m%d %H:%M:%S")


def show_lines(event: BinlogEvent, layout: Optional[TableLayout], verbose: int) -> list[str]:
    """The ``binlake show`` block of one event: ``# at``, a header line, the statement or row pseudo-SQL."""
    h = event.header
    body = event.body
    at = (
        f"# at {event.pos}"
        if event.payload_pos is None
        else f"# at {event.pos} (inside TRANSACTION_PAYLOAD at {event.payload_pos})"
    )
    crc = f" CRC32 0x{event.checksum:08x}" if event.checksum is not None else ""
    lines = [at, f"#{_when(h.timestamp)} server id {h.server_id}  end_log_pos {h.log_pos}{crc} \t{h.type_name}"]
    info = event_info(event)
    if isinstance(body, FormatDescriptionEvent):
        lines.append(
            f"# binlog v {body.binlog_version}, server v {body.server_version} created "
            f"{_when(body.create_timestamp or h.timestamp)}, checksum "
            f"{ {None: 'n/a', 0: 'NONE', 1: 'CRC32'}.get(body.checksum_alg) }"
        )
    elif hasattr(body, "query") and isinstance(body.query, str):
        db = getattr(body, "db", "")
        if db:
            lines.append(f"use `{db}`/*!*/;")
        lines.append(f"{body.query}")
    elif isinstance(body, RowsEvent):
        lines.append(
            f"# table_id: {body.table_id} flags: {'STMT_END_F' if body.flags & C.STMT_END_F else body.flags}"
            f" rows: {len(body.rows)}"
        )
        if verbose and layout is not None:
            lines += verbose_rows(event, layout)
    elif isinstance(body, TransactionPayloadEvent):
        lines.append(
            f"# payload_size={body.payload_size} compression_type="
            f"{ {C.ZSTD: 'ZSTD', C.NONE: 'NONE'}.get(body.compression_type, body.compression_type) }"
            f" uncompressed_size={body.uncompressed_size}"
        )
    else:
        lines.append("# " + " ".join(f"{k}={v}" for k, v in info.items()))
    return lines
