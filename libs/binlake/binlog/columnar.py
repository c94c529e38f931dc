"""Row changes of a binlog as Arrow record batches per table, values typed as silver types them.

    for tb in iter_table_batches("binlog.000042"):        # engine="auto": native when built, else Python
        tb.db, tb.table, tb.columns, tb.primary_key        # the table (TABLE_MAP) the rows belong to
        tb.batch                                           # pyarrow.RecordBatch, layout below

Two engines build the same batches: ``native`` (the ``binlake_native`` extension, ``native/``: Rust) and
``python`` (the pure-Python decoder, :mod:`binlake.binlog.reader`, the reference). ``auto`` takes the native one
when it is built and the input is a file or bytes. Errors are the Python decoder's typed errors
(:mod:`binlake.binlog.errors`) with file, offset, event type, what was expected and found, on both engines.

**Which rows.** Every row change ``binlake rows`` lists (``iter_row_changes``), in binlog order: WRITE, UPDATE,
DELETE rows events (v0, v1 and v2, MariaDB's compressed ones), PARTIAL_UPDATE_ROWS (partial JSON as diffs), and
those inside compressed TRANSACTION_PAYLOAD events.

**Batches.** One batch holds rows of one table layout: same db, table, columns (name, type, metadata,
signedness, collation) and primary key; a table whose TABLE_MAP changes (ALTER TABLE) starts a new batch.
Batches end at transaction boundaries (``iter_transactions``): once a transaction ends and ``batch_rows`` rows
are buffered, every buffered table is handed on, in the order the tables first appeared; the rest at the end of
the input. Memory stays bounded by ``batch_rows`` plus the largest transaction. Sort by (``pos``, ``row``) to
interleave tables in binlog order.

**Columns of** ``TableBatch.batch``:

| column | Arrow type | meaning |
|---|---|---|
| ``pos`` | int64 | file offset of the rows event (of the TRANSACTION_PAYLOAD for events inside one) |
| ``row`` | int32 | row index in the event, counting on across a payload's rows events: (file, pos, row) is unique |
| ``op`` | large_string | ``insert``, ``update`` or ``delete`` |
| ``gtid`` | large_string | the GTID of the row's transaction (MySQL ``uuid:n``, MariaDB ``domain-server-seq``), as ``binlake rows``; null without one |
| ``trx_pos`` | int64 | offset of the transaction's first event (its identity in the file); null for rows outside a transaction |
| ``commit_ts`` | int64 | commit time in microseconds since the epoch (UTC): the GTID's ``immediate_commit_timestamp``, else the transaction's last event's header time; null outside a transaction |
| ``event_type`` | int32 | the rows event's type code |
| ``before`` | struct | the before image (update, delete), one child per table column in TABLE_MAP order; null for insert |
| ``before_present`` | large_binary | columns-present bitmap of ``before`` (bit i: column i, LSB first), null when every column is there (FULL image) |
| ``after`` | struct | the after image (insert, update); null for delete; partial JSON columns are null here and listed in ``diffs`` |
| ``after_present`` | large_binary | as ``before_present``; a partial JSON column's bit is clear |
| ``diffs`` | list<struct<column, op, path, value: large_string>> | partial JSON updates (PARTIAL_UPDATE_ROWS): per diff its column, ``REPLACE``/``INSERT``/``REMOVE``, the JSON path and the new value as MySQL's JSON text (null for REMOVE); null for other rows |

Image children are named after the columns (``@n`` for a name that is not UTF-8 or holds NUL; ``columns``
keeps the real names) and typed by :func:`binlake.binlog.silver_types.silver_type`: integers in the smallest type
holding the range (BIGINT UNSIGNED as decimal128(20, 0)), YEAR int16, BIT int64 (BIT(64) 8 big-endian bytes),
FLOAT float32, DOUBLE float64, DECIMAL decimal128(p, s) (p > 38: the exact digits as a string), DATE date32,
DATETIME timestamp[us], TIMESTAMP timestamp[us, UTC] (zero and invalid dates: null; ``temporal_text=True``
keeps MySQL's text), TIME MySQL's text, text/ENUM/SET strings (binary charsets: large_binary), JSON MySQL's
JSON text, BLOB/BINARY/GEOMETRY large_binary, VECTOR list<float32>. Exactly what ``to_silver`` makes of the
``binlake rows`` value: a text value that is not valid in its charset is the string ``{'hex': '...'}``, an ENUM
or SET without names its number as a string. A value no silver type holds (a BIT wider than its type on
corrupt input) raises :class:`~binlake.binlog.errors.CorruptEventError`, as a FLOAT/DOUBLE that is not finite
or a JSON document that does not decode do (``binlake rows`` raises those too).
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from typing import Any, Iterator, Optional, Union

import pyarrow as pa

from binlake.binlog import constants as C
from binlake.binlog import native
from binlake.binlog.api import event_gtid, open_stream
from binlake.binlog.cursor import surrogate_str
from binlake.binlog.decoders import DecodeContext
from binlake.binlog.errors import BinlogError, CorruptEventError
from binlake.binlog.events import (
    ABSENT,
    DeleteRowsEvent,
    GtidEvent,
    JsonPartial,
    MariadbGtidEvent,
    PartialUpdateRowsEvent,
    QueryEvent,
    RowsEvent,
    UpdateRowsEvent,
    XaPrepareEvent,
    XidEvent,
)
from binlake.binlog.native import statement_kind
from binlake.binlog.reader import MAX_EVENT_SIZE, read_events
from binlake.binlog.render import json_diffs, json_value
from binlake.binlog.schema import SchemaProvider
from binlake.binlog.silver_types import column_meta, silver_type, to_silver
from binlake.binlog.table import TableLayout

BATCH_ROWS = 65536

Source = Union[str, os.PathLike, bytes, bytearray, memoryview]


@dataclass(frozen=True)
class TableBatch:
    """Rows of one table layout (see the module docstring for ``batch``'s columns).

    ``columns``: per column ``[name, type_code, real_type, metadata, unsigned, collation_id]`` (bronze's
    description, :func:`binlake.binlog.silver_types.column_meta`); ``primary_key``: column names from the TABLE_MAP
    (else from the schema provider), or None."""

    file: str
    db: str
    table: str
    columns: tuple[tuple, ...]
    primary_key: Optional[tuple[str, ...]]
    batch: pa.RecordBatch


def iter_table_batches(
    source: Source,
    *,
    engine: str = "auto",
    batch_rows: int = BATCH_ROWS,
    temporal_text: bool = False,
    verify_checksum: bool = True,
    start_position: Optional[int] = None,
    max_event_size: int = MAX_EVENT_SIZE,
    schema_provider: Optional[SchemaProvider] = None,
) -> Iterator[TableBatch]:
    """Every row change of a binlog file (a path or URI, or its bytes) as :class:`TableBatch` values.

    ``schema_provider`` names and types the columns of TABLE_MAPs without metadata (``binlog_row_metadata=
    MINIMAL``; MariaDB's old temporal formats) as for :func:`binlake.binlog.open_binlog`, and gives the primary key
    the TABLE_MAP lacks."""
    if engine not in ("auto", "native", "python"):
        raise ValueError(f"engine must be 'auto', 'native' or 'python', not {engine!r}")
    if isinstance(source, (bytes, bytearray, memoryview)):
        name, stream = "<bytes>", io.BytesIO(bytes(source))
    else:
        name, stream = open_stream(source)
    options = dict(
        verify_checksum=verify_checksum,
        start_position=start_position,
        max_event_size=max_event_size,
        schema_provider=schema_provider,
    )
    if engine != "python":
        mod = native.load()
        try:
            opts = native.options(**options, file=name) if mod is not None else None
        except BaseException:
            stream.close()
            raise
        src = native.native_source(stream) if mod is not None else None
        if mod is not None and opts is not None and src is not None:
            stream.close()
            reader = mod.Batches(src, opts, native.Delegate(name, schema_provider), temporal_text, batch_rows)
            return _native_batches(reader, name, schema_provider)
        if engine == "native":
            stream.close()
            raise RuntimeError(
                "the native decoder is not available (not built, BINLAKE_NATIVE=0, or a transport "
                "it does not read); run scripts/setup.sh or use engine='python'"
            )
    return _python_batches(stream, name, batch_rows, temporal_text, options)


# --- native ----------------------------------------------------------------------------------------------------


class ArrowCapsules:
    """The native core's (schema, array) capsules as an object pyarrow imports (``__arrow_c_array__``)."""

    def __init__(self, capsules: tuple) -> None:
        self.capsules = capsules

    def __arrow_c_array__(self, requested_schema: object = None) -> tuple:
        return self.capsules


def _native_batches(reader: Any, name: str, provider: Optional[SchemaProvider]) -> Iterator[TableBatch]:
    """The native core's ready batches (``binlake_native.Batches``) as TableBatch values. The reader is freed when
    they end, by error too, on this thread (it is bound to it): a traceback keeps this frame, and a cyclic
    collection on another thread could not free it there."""
    try:
        while True:
            ready = reader.next_batches()
            if ready is None:
                return
            for db, table, columns, pk, capsules in ready:
                cols = tuple((surrogate_str(n), *rest) for n, *rest in columns)
                db, table = surrogate_str(db), surrogate_str(table)
                pk = pk or _provider_key(provider, db, table, [c[1] for c in cols])
                yield TableBatch(
                    name,
                    db,
                    table,
                    cols,
                    tuple(cols[i][0] for i in pk) if pk else None,
                    pa.record_batch(ArrowCapsules(capsules)),
                )
    finally:
        del reader


def _provider_key(provider: Optional[SchemaProvider], db: str, table: str, types: list[int]) -> tuple[int, ...]:
    """The primary key column indexes a schema provider gives a table (bronze does the same)."""
    schema = provider(db, table, types) if provider is not None else None
    return tuple(i for i, _ in schema.primary_key) if schema is not None else ()


# --- python ----------------------------------------------------------------------------------------------------


def field_name(name: str, index: int) -> str:
    """The Arrow field name of a column: its name when it is UTF-8 without NUL, else ``@<n>``."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return f"@{index + 1}"
    return f"@{index + 1}" if "\0" in name else name


_INT_TYPES = {
    "tinyint": (pa.int8(), 7),
    "smallint": (pa.int16(), 15),
    "int": (pa.int32(), 31),
    "bigint": (pa.int64(), 63),
}


def arrow_type(kind: str) -> pa.DataType:
    """The Arrow type of a silver (Spark SQL) type name."""
    if kind in _INT_TYPES:
        return _INT_TYPES[kind][0]
    if kind.startswith("decimal("):
        p, s = (int(x) for x in kind[8:-1].split(","))
        return pa.decimal128(p, s) if 1 <= p <= 38 and s <= p else pa.large_string()
    return {
        "float": pa.float32(),
        "double": pa.float64(),
        "date": pa.date32(),
        "timestamp_ntz": pa.timestamp("us"),
        "timestamp": pa.timestamp("us", tz="UTC"),
        "binary": pa.large_binary(),
        "array<float>": pa.list_(pa.float32()),
    }.get(kind, pa.large_string())


def silver_range_error(
    arrow_format: str, found: str, column: str, row: int, db: str, table: str, file: str, pos: int, event_type: int
) -> BinlogError:
    """The error for a value no silver type of its column holds (corrupt input), located like a render error."""
    exc = CorruptEventError(
        f"value out of the range of its silver type (column `{column}`) (row {row} of `{db}`.`{table}`)",
        expected=f"a value of Arrow type {arrow_format}",
        found=found,
    )
    return exc.located(file=file, offset=pos, event_type=C.event_type_name(event_type))


def _arrow_format(t: pa.DataType) -> str:
    if pa.types.is_decimal(t):
        return f"d:{t.precision},{t.scale}"
    return {pa.int8(): "c", pa.int16(): "s", pa.int32(): "i", pa.int64(): "l", pa.large_binary(): "Z"}.get(t, str(t))


class _Range(Exception):
    def __init__(self, found: str) -> None:
        self.found = found


def _converter(kind: str, atype: pa.DataType) -> Any:
    """``to_silver(kind)`` of the ``binlake rows`` value, with the range checks Arrow would fail on."""
    conv = to_silver(kind)
    if kind in _INT_TYPES:
        bits = _INT_TYPES[kind][1]

        def to_int(v: Any) -> Any:
            if not isinstance(v, int) or not -(1 << bits) <= v < 1 << bits:
                raise _Range(str(v))
            return v

        return to_int
    if pa.types.is_decimal(atype):

        def to_dec(v: Any) -> Any:
            d = conv(v)
            _sign, digits, exp = d.as_tuple()
            if exp != -atype.scale or len("".join(map(str, digits)).lstrip("0")) > atype.precision:
                raise _Range(v if isinstance(v, str) else str(v))
            return d

        return to_dec
    if kind == "binary":

        def to_bin(v: Any) -> Any:
            if isinstance(v, int) and v >= 1 << 64:
                raise _Range(str(v))
            return conv(v)

        return to_bin
    return conv


class _Image:
    """The child columns of one image struct while rows are added."""

    def __init__(self, kinds: list[str], types: list[pa.DataType]) -> None:
        self.convs = [_converter(k, t) for k, t in zip(kinds, types)]
        self.values: list[list] = [[] for _ in kinds]
        self.valid: list[bool] = []
        self.present: list[Optional[bytes]] = []


class _Buffer:
    def __init__(self, layout: TableLayout, temporal_text: bool) -> None:
        self.layout = layout
        self.metas = [column_meta(c) for c in layout.columns]
        self.kinds = [silver_type(m, temporal_text) for m in self.metas]
        self.types = [arrow_type(k) for k in self.kinds]
        self.fields = [pa.field(field_name(c.name, i), t) for i, (c, t) in enumerate(zip(layout.columns, self.types))]
        self.before, self.after = _Image(self.kinds, self.types), _Image(self.kinds, self.types)
        self.cols: dict[str, list] = {
            k: [] for k in ("pos", "row", "op", "gtid", "trx_pos", "commit_ts", "event_type", "diffs")
        }
        self.rows = 0
        self.pending_from: Optional[int] = None

    def add_image(self, img: _Image, image: Optional[tuple], where: tuple) -> None:
        n = len(self.layout.columns)
        if image is None:
            img.valid.append(False)
            for vals in img.values:
                vals.append(None)
            img.present.append(None)
            return
        img.valid.append(True)
        present = [v is not ABSENT and not isinstance(v, JsonPartial) for v in image]
        for i, (v, ok) in enumerate(zip(image, present)):
            if not ok or v is None:
                img.values[i].append(None)
                continue
            name = self.layout.column_names[i]
            try:
                jv = json_value(v)
            except BinlogError as exc:
                exc.message += f" (column `{name}`)"
                raise _located(exc.located(), where) from None
            try:
                img.values[i].append(img.convs[i](jv))
            except _Range as r:
                raise silver_range_error(
                    _arrow_format(self.types[i]),
                    r.found,
                    name,
                    where[0],
                    self.layout.db,
                    self.layout.table,
                    where[1],
                    where[2],
                    where[3],
                ) from None
        if all(present):
            img.present.append(None)
        else:
            bits = bytearray((n + 7) >> 3)
            for i, ok in enumerate(present):
                if ok:
                    bits[i >> 3] |= 1 << (i & 7)
            img.present.append(bytes(bits))

    def batch(self) -> pa.RecordBatch:
        def struct(img: _Image) -> pa.Array:
            children = [pa.array(vals, type=t) for vals, t in zip(img.values, self.types)]
            return pa.StructArray.from_arrays(children, fields=self.fields, mask=pa.array([not v for v in img.valid]))

        diff_type = pa.list_(pa.struct([pa.field(n, pa.large_string()) for n in ("column", "op", "path", "value")]))
        c = self.cols
        arrays = [
            pa.array(c["pos"], pa.int64()),
            pa.array(c["row"], pa.int32()),
            pa.array(c["op"], pa.large_string()),
            pa.array(c["gtid"], pa.large_string()),
            pa.array(c["trx_pos"], pa.int64()),
            pa.array(c["commit_ts"], pa.int64()),
            pa.array(c["event_type"], pa.int32()),
            struct(self.before),
            pa.array(self.before.present, pa.large_binary()),
            struct(self.after),
            pa.array(self.after.present, pa.large_binary()),
            pa.array(c["diffs"], diff_type),
        ]
        names = [
            "pos",
            "row",
            "op",
            "gtid",
            "trx_pos",
            "commit_ts",
            "event_type",
            "before",
            "before_present",
            "after",
            "after_present",
            "diffs",
        ]
        return pa.RecordBatch.from_arrays(arrays, names=names)


def _located(exc: BinlogError, where: tuple) -> BinlogError:
    row, file, pos, event_type, db, table = where[0], where[1], where[2], where[3], where[4], where[5]
    exc.message += f" (row {row} of `{db}`.`{table}`)"
    return exc.located(file=file, offset=pos, event_type=C.event_type_name(event_type))


class _Batcher:
    """Buffers per table layout and the transaction state, as the native core keeps them."""

    def __init__(self, name: str, batch_rows: int, temporal_text: bool, provider: Optional[SchemaProvider]) -> None:
        self.name, self.batch_rows, self.temporal_text, self.provider = name, batch_rows, temporal_text, provider
        self.buffers: dict[tuple, _Buffer] = {}
        self.total = 0
        self.group: Optional[list[int]] = None  # [start, last_ts, gtid_ts]
        self.began = False

    def buffer(self, layout: TableLayout) -> _Buffer:
        tm = layout.table_map
        pk = tm.simple_primary_key or tuple(i for i, _ in tm.primary_key_with_prefix or ()) or None
        key = (layout.db, layout.table, pk, tuple(tuple(column_meta(c)) for c in layout.columns))
        got = self.buffers.get(key)
        if got is None:
            got = self.buffers[key] = _Buffer(layout, self.temporal_text)
        return got

    def add(self, layout: TableLayout, ev: Any, first_row: int, gtid: Optional[str]) -> None:
        b = ev.body
        buf = self.buffer(layout)
        pos = ev.payload_pos if ev.payload_pos is not None else ev.pos
        t = ev.header.type_code
        op = "update" if isinstance(b, UpdateRowsEvent) else "delete" if isinstance(b, DeleteRowsEvent) else "insert"
        for i, r in enumerate(b.rows, first_row):
            where = (i, self.name, pos, t, layout.db, layout.table)
            diffs = None
            if op == "update":
                before, after = r.before, r.after
                if isinstance(b, PartialUpdateRowsEvent) and r.partial_columns:
                    diffs = {n: v.diffs for n, v in zip(layout.column_names, after) if isinstance(v, JsonPartial)}
            else:
                before, after = (r, None) if op == "delete" else (None, r)
            buf.add_image(buf.before, before, where)
            buf.add_image(buf.after, after, where)
            items = None
            if diffs is not None:
                try:
                    rendered = json_diffs(diffs)
                except BinlogError as exc:
                    raise _located(exc, where) from None
                items = [
                    {
                        "column": field_name(col, layout.column_names.index(col)),
                        "op": d["op"],
                        "path": d["path"],
                        "value": d["value"],
                    }
                    for col, ds in rendered.items()
                    for d in ds
                ]
            c = buf.cols
            c["pos"].append(pos)
            c["row"].append(i)
            c["op"].append(op)
            c["gtid"].append(gtid)
            c["trx_pos"].append(None)
            c["commit_ts"].append(None)
            c["event_type"].append(t)
            c["diffs"].append(items)
            if self.group is not None and buf.pending_from is None:
                buf.pending_from = buf.rows
            buf.rows += 1
            self.total += 1

    def end_group(self) -> None:
        if self.group is not None:
            start, last_ts, gtid_ts = self.group
            commit = gtid_ts if gtid_ts else last_ts * 1_000_000
            for buf in self.buffers.values():
                if buf.pending_from is not None:
                    for i in range(buf.pending_from, buf.rows):
                        buf.cols["trx_pos"][i] = start
                        buf.cols["commit_ts"][i] = commit
                    buf.pending_from = None
            self.group = None
        self.began = False

    def transactions(self, ev: Any) -> None:
        """``iter_transactions``: GTID or BEGIN opens a group; XID, COMMIT, ROLLBACK or XA_PREPARE closes it;
        any other statement outside BEGIN is a group alone."""
        b = ev.body
        at = ev.payload_pos if ev.payload_pos is not None else ev.pos
        ts = ev.header.timestamp
        if isinstance(b, (GtidEvent, MariadbGtidEvent)):
            self.end_group()
            self.group = [at, ts, (b.immediate_commit_timestamp or 0) if isinstance(b, GtidEvent) else 0]
            self.began = isinstance(b, MariadbGtidEvent) and not b.flags & C.FL_STANDALONE
        elif isinstance(b, QueryEvent):
            kind = statement_kind(b.query)
            if self.group is None:
                self.group = [at, ts, 0]
            self.group[1] = ts
            if kind == "begin":
                self.began = True
            elif kind in ("commit", "xa_commit", "rollback", "xa_rollback") or not self.began:
                self.end_group()
        elif isinstance(b, (XidEvent, XaPrepareEvent)):
            if self.group is None:
                self.group = [at, ts, 0]
            self.group[1] = ts
            self.end_group()
        elif self.group is not None:
            self.group[1] = ts

    def flush(self, file: str) -> list[TableBatch]:
        out = []
        for buf in self.buffers.values():
            if buf.rows:
                layout = buf.layout
                tm = layout.table_map
                pk_idx = (
                    tm.simple_primary_key
                    or tuple(i for i, _ in tm.primary_key_with_prefix or ())
                    or _provider_key(self.provider, layout.db, layout.table, list(tm.column_types))
                )
                out.append(
                    TableBatch(
                        file,
                        layout.db,
                        layout.table,
                        tuple(tuple(m) for m in buf.metas),
                        tuple(layout.column_names[i] for i in pk_idx) if pk_idx else None,
                        buf.batch(),
                    )
                )
        self.buffers.clear()
        self.total = 0
        return out


def _python_batches(
    stream: Any, name: str, batch_rows: int, temporal_text: bool, options: dict
) -> Iterator[TableBatch]:
    """The reference: the pure-Python decoder's events, grouped and typed as the native core does."""
    provider = options.pop("schema_provider")
    ctx = DecodeContext(schema_provider=provider)
    batcher = _Batcher(name, max(batch_rows, 1), temporal_text, provider)
    gtid: Optional[str] = None
    last_pos, next_row = -1, 0
    with stream:
        for ev in read_events(stream, file=name, ctx=ctx, **options):
            b = ev.body
            if isinstance(b, RowsEvent):
                if b.rows:
                    pos = ev.payload_pos if ev.payload_pos is not None else ev.pos
                    if pos != last_pos:
                        last_pos, next_row = pos, 0
                    batcher.add(ctx.tables[b.table_id], ev, next_row, gtid)
                    next_row += len(b.rows)
            elif isinstance(b, (GtidEvent, MariadbGtidEvent)):
                gtid = event_gtid(b)
            elif isinstance(b, XidEvent):
                gtid = None
            elif isinstance(b, QueryEvent) and b.query.lstrip(" \t\r\n(").upper().startswith(("COMMIT", "ROLLBACK")):
                gtid = None
            batcher.transactions(ev)
            if batcher.group is None and batcher.total >= batcher.batch_rows:
                yield from batcher.flush(name)
    batcher.end_group()
    yield from batcher.flush(name)


__all__ = ["BATCH_ROWS", "TableBatch", "arrow_type", "iter_table_batches"]
