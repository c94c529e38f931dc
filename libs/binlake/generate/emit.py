"""Turn the workload's logical transactions into binlog events, as a MySQL 8.0 server with
``binlog_format=ROW``, ``binlog_row_metadata=FULL``, ``binlog_row_value_options=PARTIAL_JSON`` and the
configured ``binlog_row_image`` would log them.

Per transaction: GTID (by the writer), ``BEGIN``, per statement a TABLE_MAP and its rows events (split near
``binlog_row_event_max_size``, the last one flagged STMT_END_F), XID; a DDL is one QUERY (no BEGIN, its database
in the event, logged with its XID as MySQL 8's atomic DDL is). Updates of tables with
JSON columns are PARTIAL_UPDATE_ROWS events; each JSON column with edits is written as a diff vector when that
is smaller than the full document (WL#2955 FR11/FR12, ``use_partial_format``), else in full.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any, Optional

from binlake.binlog import constants as C
from binlake.binlog import events as ev
from binlake.binlog.encode_base import U8, U16, U32, U64, packed_length
from binlake.binlog.encode_rows import optional_metadata_fields, partial_bits
from binlake.binlog.writer import Event
from binlake.generate.jsonbin import JsonEncoder
from binlake.generate.jsondocs import Edit
from binlake.generate.tables import ColumnDef, TableDef
from binlake.generate.workload import DELETE, INSERT, UPDATE, Statement, Transaction
from binlake.mysqljson import BinaryJson, DiffOp, JsonDiff, JsonPath, parse_path
from binlake.mysqljson.diff import ENCODED_LENGTH_BYTES

ROWS_EVENT_MAX_SIZE = 8192  # binlog_row_event_max_size
THREAD_ID = 42
TM_BIT_LEN_EXACT_F = 1

# QUERY_EVENT status variables (Query_event::Query_event_status_vars)
Q_FLAGS2_CODE, Q_SQL_MODE_CODE, Q_CATALOG_NZ_CODE, Q_CHARSET_CODE = 0, 1, 6, 4
Q_UPDATED_DB_NAMES, Q_DDL_LOGGED_WITH_XID, Q_DEFAULT_COLLATION_FOR_UTF8MB4 = 12, 17, 18
SQL_MODE_80_DEFAULT = 0x4000_0000_0000 | 0x1_0000_0000 | 0x2_0000_0000 | 0x20_0000 | 0x8_0000_0000 | 0x40_0000
_COMMON_STATUS = (
    U8.pack(Q_FLAGS2_CODE)
    + U32.pack(0)
    + U8.pack(Q_SQL_MODE_CODE)
    + U64.pack(SQL_MODE_80_DEFAULT)
    + U8.pack(Q_CATALOG_NZ_CODE)
    + U8.pack(3)
    + b"std"
    + U8.pack(Q_CHARSET_CODE)
    + U16.pack(255)
    + U16.pack(255)
    + U16.pack(255)
)


def _ddl_status(db: str, xid: int) -> bytes:
    names = U8.pack(1) + db.encode() + b"\0" if db else U8.pack(0)
    return (
        _COMMON_STATUS
        + U8.pack(Q_UPDATED_DB_NAMES)
        + names
        + U8.pack(Q_DDL_LOGGED_WITH_XID)
        + U64.pack(xid)
        + U8.pack(Q_DEFAULT_COLLATION_FOR_UTF8MB4)
        + U16.pack(255)
    )


# --- TABLE_MAP ---------------------------------------------------------------------------------------------------


def _metadata(c: ColumnDef) -> int:
    """``m_field_metadata`` of a column (see TableMapEvent.column_metadata)."""
    t = c.type_code
    if t == C.MYSQL_TYPE_FLOAT:
        return 4
    if t == C.MYSQL_TYPE_DOUBLE:
        return 8
    if t in (C.MYSQL_TYPE_BLOB, C.MYSQL_TYPE_JSON):
        return c.blob_pack_length
    if t in (C.MYSQL_TYPE_TIMESTAMP2, C.MYSQL_TYPE_DATETIME2, C.MYSQL_TYPE_TIME2):
        return c.fsp
    if t == C.MYSQL_TYPE_VARCHAR:
        return c.max_bytes
    if t == C.MYSQL_TYPE_NEWDECIMAL:
        return c.precision << 8 | c.scale
    if t == C.MYSQL_TYPE_BIT:
        return (c.length // 8) << 8 | (c.length % 8)
    if t == C.MYSQL_TYPE_STRING:
        if c.real_type == C.MYSQL_TYPE_ENUM:
            return C.MYSQL_TYPE_ENUM << 8 | (1 if len(c.elements) < 256 else 2)
        if c.real_type == C.MYSQL_TYPE_SET:
            n = (len(c.elements) + 7) // 8
            return C.MYSQL_TYPE_SET << 8 | (8 if n > 4 else n)
        n = c.max_bytes  # Field_string::do_save_field_metadata: the length's high bits go into byte 0
        return ((C.MYSQL_TYPE_STRING ^ ((n & 0x300) >> 4)) << 8) | (n & 0xFF)
    return 0


def _charsets(collations: list[int]) -> tuple[Optional[ev.DefaultCharset], Optional[tuple[int, ...]]]:
    """(DEFAULT_CHARSET, COLUMN_CHARSET) of these columns: the default form (the most common collation and
    (index, collation) for the others) when it is not bigger than one collation per column, as MySQL chooses
    (every real TABLE_MAP in the fixtures follows this rule)."""
    if not collations:
        return None, None
    default = Counter(collations).most_common(1)[0][0]
    overrides = tuple((i, c) for i, c in enumerate(collations) if c != default)
    default_size = len(packed_length(default)) + sum(
        len(packed_length(i)) + len(packed_length(c)) for i, c in overrides
    )
    if default_size <= sum(len(packed_length(c)) for c in collations):
        return ev.DefaultCharset(default, overrides), None
    return None, tuple(collations)


def table_map_event(t: TableDef) -> ev.TableMapEvent:
    """The TABLE_MAP of a table version with full optional metadata (``binlog_row_metadata=FULL``)."""
    cols = t.columns
    null_bits = bytearray((len(cols) + 7) // 8)
    for i, c in enumerate(cols):
        if c.nullable:
            null_bits[i >> 3] |= 1 << (i & 7)
    char_cols = [c for c in cols if c.real_type in (C.MYSQL_TYPE_STRING, C.MYSQL_TYPE_VARCHAR, C.MYSQL_TYPE_BLOB)]
    enum_set = [c for c in cols if c.real_type in (C.MYSQL_TYPE_ENUM, C.MYSQL_TYPE_SET)]
    default_charset, column_charsets = _charsets([c.collation_id or C.BINARY_COLLATION_ID for c in char_cols])
    enum_set_default, enum_set_columns = _charsets([c.collation_id or 0 for c in enum_set])
    tm = ev.TableMapEvent(
        table_id=t.table_id,
        flags=TM_BIT_LEN_EXACT_F,
        db=t.db,
        table=t.name,
        column_types=tuple(c.type_code for c in cols),
        column_metadata=tuple(_metadata(c) for c in cols),
        null_bits=bytes(null_bits),
        signedness=tuple(c.unsigned for c in cols if c.type_code in C.NUMERIC_TYPES),
        default_charset=default_charset,
        column_charsets=column_charsets,
        column_names=tuple(c.name for c in cols),
        set_str_values=tuple(c.elements for c in cols if c.real_type == C.MYSQL_TYPE_SET) or None,
        enum_str_values=tuple(c.elements for c in cols if c.real_type == C.MYSQL_TYPE_ENUM) or None,
        simple_primary_key=t.pk_indexes or None,
        enum_and_set_default_charset=enum_set_default,
        enum_and_set_column_charsets=enum_set_columns,
        column_visibility=tuple(True for _ in cols),
    )
    return replace(tm, optional_metadata=optional_metadata_fields(tm))


# --- rows ----------------------------------------------------------------------------------------------------------

_BITMAPS: dict[tuple, bytes] = {}


def _bitmap(indexes: tuple[int, ...], n: int) -> bytes:
    """The columns-present bitmap of ``indexes`` among ``n`` columns (bit i of byte i // 8)."""
    got = _BITMAPS.get((indexes, n))
    if got is None:
        out = bytearray((n + 7) // 8)
        for i in indexes:
            out[i >> 3] |= 1 << (i & 7)
        got = _BITMAPS[(indexes, n)] = bytes(out)
    return got


class Emitter:
    """Converts :class:`~binlake.generate.workload.Transaction` values to writer :class:`Event` lists."""

    def __init__(self, row_image: str = "full", partial_json: bool = True) -> None:
        self.row_image = row_image
        self.partial_json = partial_json
        self.xid = 1000
        self._maps: dict[int, ev.TableMapEvent] = {}  # table id (one per table version) -> map
        self._cells: dict[int, tuple[Any, BinaryJson]] = {}  # id(doc) -> (doc, its binary JSON cell)
        self._json = JsonEncoder()
        self.stats: Counter = Counter()

    def table_map(self, t: TableDef) -> ev.TableMapEvent:
        tm = self._maps.get(t.table_id)
        if tm is None:
            tm = self._maps[t.table_id] = table_map_event(t)
        return tm

    # JSON cells are encoded once per document: an after image's document is the next before image
    def _cell(self, doc: Any) -> BinaryJson:
        got = self._cells.get(id(doc))
        if got is not None and got[0] is doc:
            return got[1]
        cell = BinaryJson(self._json.encode(doc))
        self._cells[id(doc)] = (doc, cell)
        return cell

    def _forget(self, doc: Any) -> None:
        got = self._cells.get(id(doc))
        if got is not None and got[0] is doc:
            del self._cells[id(doc)]

    def events(self, txn: Transaction) -> list[Event]:
        ts = txn.commit_time_us // 1_000_000
        if txn.ddl is not None:
            self.xid += 1
            q = ev.QueryEvent(THREAD_ID, 0, 0, _ddl_status(txn.ddl_db, self.xid), txn.ddl_db, txn.ddl)
            return [Event(q, ts)]
        out = [Event(ev.QueryEvent(THREAD_ID, 0, 0, _COMMON_STATUS, "", "BEGIN"), ts, flags=C.LOG_EVENT_SUPPRESS_USE_F)]
        for stmt in txn.statements:
            out.append(Event(self.table_map(stmt.table), ts))
            out.extend(self._rows_events(stmt, ts))
        self.xid += 1
        out.append(Event(ev.XidEvent(self.xid), ts))
        return out

    def _image(self, row: tuple, present: tuple[int, ...], json_cols: tuple[int, ...]) -> tuple:
        """The row as a rows event holds it: JSON documents as binary cells, ABSENT for columns not present."""
        cell = self._cell
        if len(present) == len(row):
            if not json_cols:
                return row
            return tuple(cell(v) if i in json_cols and v is not None else v for i, v in enumerate(row))
        out = [ev.ABSENT] * len(row)
        for i in present:
            v = row[i]
            out[i] = cell(v) if i in json_cols and v is not None else v
        return tuple(out)

    def _present(self, table: TableDef, kind: str, image: str, assigned: frozenset[int]) -> tuple[int, ...]:
        """Columns in a before ("b") or after ("a") image under binlog_row_image (``TABLE::mark_columns_per_
        binlog_row_image``): FULL all; MINIMAL the primary key (all columns without one) before, the
        assigned columns after; NOBLOB all but BLOB/TEXT/JSON columns that are not in the key or assigned."""
        n = len(table.columns)
        pk = table.pk_indexes
        if self.row_image == "full" or (image == "a" and kind == INSERT) or (image == "b" and not pk):
            return tuple(range(n))
        if self.row_image == "minimal":
            return pk if image == "b" else tuple(sorted(assigned))
        keep = set(pk) | (assigned if image == "a" else set())
        return tuple(i for i, c in enumerate(table.columns) if not c.is_blob or i in keep)

    def _rows_events(self, stmt: Statement, ts: int) -> list[Event]:
        table = stmt.table
        tm = self.table_map(table)
        n = len(table.columns)
        json_cols = tuple(i for i, c in enumerate(table.columns) if c.type_code == C.MYSQL_TYPE_JSON)
        if stmt.kind == INSERT:
            type_code, cls = C.WRITE_ROWS_EVENT, ev.WriteRowsEvent
        elif stmt.kind == DELETE:
            type_code, cls = C.DELETE_ROWS_EVENT, ev.DeleteRowsEvent
        elif json_cols and self.partial_json:
            type_code, cls = C.PARTIAL_UPDATE_ROWS_EVENT, ev.PartialUpdateRowsEvent
        else:
            type_code, cls = C.UPDATE_ROWS_EVENT, ev.UpdateRowsEvent
        groups: list[tuple[tuple, list, int]] = []  # (bitmaps, rows, approx size)
        for change in stmt.changes:
            if stmt.kind == INSERT:
                bitmaps: tuple = (self._present(table, INSERT, "a", frozenset()),)
                row: Any = self._image(change.after, bitmaps[0], json_cols)
            elif stmt.kind == DELETE:
                bitmaps = (self._present(table, DELETE, "b", frozenset()),)
                row = self._image(change.before, bitmaps[0], json_cols)
                for i in json_cols:
                    self._forget(change.before[i])
            else:
                bitmaps = (
                    self._present(table, UPDATE, "b", change.assigned),
                    self._present(table, UPDATE, "a", change.assigned),
                )
                row = self._update_row(table, change, bitmaps, json_cols, type_code)
            size = (
                _approx_size(row.before, json_cols) + _approx_size(row.after, json_cols)
                if stmt.kind == UPDATE
                else _approx_size(row, json_cols)
            )
            if groups and groups[-1][0] == bitmaps and groups[-1][2] + size <= ROWS_EVENT_MAX_SIZE:
                groups[-1][1].append(row)
                groups[-1] = (bitmaps, groups[-1][1], groups[-1][2] + size)
            else:
                groups.append((bitmaps, [row], size))
        out = []
        for k, (bitmaps, rows, _) in enumerate(groups):
            flags = C.STMT_END_F if k == len(groups) - 1 else 0
            before = _bitmap(bitmaps[0], n)
            if len(bitmaps) == 2:
                e = cls(tm.table_id, flags, b"", n, before, tuple(rows), 6, _bitmap(bitmaps[1], n))
            else:
                e = cls(tm.table_id, flags, b"", n, before, tuple(rows), 6)
            out.append(Event(e, ts, type_code))
            self.stats[type_code] += 1
        return out

    def _update_row(self, table: TableDef, change, bitmaps: tuple, json_cols: tuple[int, ...], type_code: int) -> Any:
        before = self._image(change.before, bitmaps[0], json_cols)
        after = self._image(change.after, bitmaps[1], json_cols)
        for i in json_cols:
            if change.before[i] is not change.after[i]:
                self._forget(change.before[i])
        if type_code != C.PARTIAL_UPDATE_ROWS_EVENT:
            return ev.UpdateRow(before, after)
        partial: list[int] = []
        if change.edits:
            after_l = list(after)
            for col, edits in change.edits:
                cell = after_l[col]
                if cell is ev.ABSENT or cell is None:
                    continue
                diffs = json_diffs(edits)
                raw = self._json.diffs(diffs)
                self.stats["json_diff_columns"] += 1
                # WL#2955 FR11/FR12 as binlake.mysqljson.use_partial_format: Def1 (4-byte length + the diffs)
                # against Def2 (the column's length bytes + the full binary document), with one encoding
                if ENCODED_LENGTH_BYTES + len(raw) < table.columns[col].blob_pack_length + len(cell.raw):
                    after_l[col] = ev.JsonPartial(raw, diffs)
                    partial.append(col)
                    self.stats["json_partial_columns"] += 1
            after = tuple(after_l)
        if not partial:
            return ev.PartialUpdateRow(before, after, 0)
        return ev.PartialUpdateRow(
            before, after, C.PARTIAL_JSON_UPDATES, tuple(partial), partial_bits(json_cols, partial)
        )


def _approx_size(values: tuple, json_cols: tuple[int, ...]) -> int:
    """Roughly the encoded size of a row image: JSON cells exactly, every other column as 16 bytes (enough
    to split rows events near their maximum size)."""
    size = 16 * len(values)
    for i in json_cols:
        v = values[i]
        if v is not None and v is not ev.ABSENT:
            size += len(v.raw)
    return size


_PATHS: dict[str, JsonPath] = {}


def json_diffs(edits: tuple[Edit, ...]) -> tuple[JsonDiff, ...]:
    """The model's edits as ``binlake.mysqljson`` diffs (operation, parsed path, value)."""
    out = []
    for e in edits:
        text = e.path_text
        path = _PATHS.get(text)
        if path is None:
            path = _PATHS[text] = parse_path(text)
        out.append(JsonDiff(_OPS[e.operation], path, e.value))
    return tuple(out)


_OPS = {op.value: op for op in DiffOp}
