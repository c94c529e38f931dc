"""The snapshot tests' oracle: a table's rows rebuilt from the server's own binlog by binlake's binlog decoder.

Every test table is created and filled after its server started with the binary log on, so replaying the binlog
from its beginning up to a snapshot's position (in Python: insert, update incl. key changes, delete; tables
without a key as multisets) gives the table exactly as the snapshot must hold it. Values take the binlog path
into silver (``json_value`` then ``to_silver``): equality also checks that the snapshot's SELECT gives each value
as a binlog change of that row would.
"""

from __future__ import annotations

import collections
import struct
from typing import Any, Iterable, Mapping, Optional, Sequence

from binlake.binlog import RowChange, iter_row_changes
from binlake.binlog.render import json_value
from binlake.binlog.silver_types import to_silver
from binlake.pipeline.identity import file_sequence
from binlake.snapshot import Position, SnapshotTable

Rows = collections.Counter  # row tuple (silver values, comparable) -> how many


def comparable(kind: str, value: Any) -> Any:
    """A silver value in a hashable form that compares equal across Parquet and the binlog path (float32
    columns as the float32 they hold)."""
    if value is None:
        return None
    if kind == "float":
        return struct.unpack("<f", struct.pack("<f", value))[0]
    if kind.startswith("array"):
        return tuple(struct.unpack("<f", struct.pack("<f", v))[0] for v in value)
    if kind == "binary":
        return bytes(value)
    return value


def snapshot_rows(table: SnapshotTable) -> Rows:
    import pyarrow.parquet as pq

    kinds = [c.silver_type for c in table.columns]
    rows: Rows = collections.Counter()
    for path in table.files:
        data = pq.read_table(path)
        assert data.column_names == [c.name for c in table.columns], path
        for row in zip(*(data.column(i).to_pylist() for i in range(data.num_columns))):
            rows[tuple(comparable(k, v) for k, v in zip(kinds, row))] += 1
    assert sum(rows.values()) == table.rows, f"{table.db}.{table.table}: manifest rows != Parquet rows"
    return rows


def binlog_changes(
    files: Sequence[Any], start: Optional[Position] = None, end: Optional[Position] = None
) -> list[RowChange]:
    """Row changes of the server's binlog files in order, in ``[start, end)``."""

    def key(file: str, pos: int) -> tuple[int, int]:
        return file_sequence(file), pos

    out = []
    for path in files:
        for change in iter_row_changes(path):
            at = key(change.file, change.pos)
            if (start is None or at >= key(start.file, start.pos)) and (end is None or at < key(end.file, end.pos)):
                out.append(change)
    return out


class Replay:
    """Tables rebuilt from row changes: keyed tables by primary key, the others as multisets."""

    def __init__(self, tables: Iterable[SnapshotTable], defaults: Mapping[tuple[str, str, str], Any] = {}) -> None:
        self.tables = {(t.db, t.table): t for t in tables}
        self.state: dict[tuple[str, str], Any] = {
            name: ({} if t.primary_key else collections.Counter()) for name, t in self.tables.items()
        }
        self.defaults = defaults  # (db, table, column) -> silver value of rows written before it existed

    def start_from(self, table: SnapshotTable, rows: Rows) -> None:
        """Begin a table from a snapshot's rows instead of empty."""
        name = (table.db, table.table)
        if table.primary_key:
            at = [i for k in table.primary_key for i, c in enumerate(table.columns) if c.name == k]
            self.state[name] = {tuple(r[i] for i in at): r for r in rows.elements()}
        else:
            self.state[name] = collections.Counter(rows)

    def _row(self, t: SnapshotTable, image: Mapping[str, Any]) -> tuple:
        return tuple(
            comparable(c.silver_type, to_silver(c.silver_type)(json_value(image[c.name])))
            if c.name in image
            else self.defaults[(t.db, t.table, c.name)]
            for c in t.columns
        )

    def apply(self, changes: Iterable[RowChange]) -> "Replay":
        for ch in changes:
            t = self.tables.get((ch.db, ch.table))
            if t is None:
                continue
            state = self.state[(ch.db, ch.table)]
            before = self._row(t, ch.before) if ch.before is not None else None
            after = self._row(t, ch.after) if ch.after is not None else None
            if t.primary_key:
                at = [i for k in t.primary_key for i, c in enumerate(t.columns) if c.name == k]
                if before is not None:
                    assert state.pop(tuple(before[i] for i in at), None) is not None, (ch, "missing row")
                if after is not None:
                    state[tuple(after[i] for i in at)] = after
            else:
                if before is not None:
                    assert state[before] > 0, (ch, "missing row")
                    state[before] -= 1
                if after is not None:
                    state[after] += 1
        return self

    def rows(self, db: str, table: str) -> Rows:
        state = self.state[(db, table)]
        return +state if isinstance(state, collections.Counter) else collections.Counter(state.values())


def differences(expected: Rows, actual: Rows, limit: int = 5) -> str:
    missing, extra = expected - actual, actual - expected
    return (
        f"{sum(missing.values())} row(s) missing, e.g. {list(missing)[:limit]}; "
        f"{sum(extra.values())} row(s) too many, e.g. {list(extra)[:limit]}"
    )


# -- MySQL text-protocol results (``Protocol::ResultsetRow`` packets), for the native row reader ----------------

EOF_PACKET = b"\xfe\x00\x00\x02\x00"


def lenenc(v: Optional[bytes]) -> bytes:
    """A length-encoded string (0xFB: NULL)."""
    if v is None:
        return b"\xfb"
    n = len(v)
    if n < 0xFB:
        return bytes([n]) + v
    if n < 1 << 16:
        return b"\xfc" + n.to_bytes(2, "little") + v
    if n < 1 << 24:
        return b"\xfd" + n.to_bytes(3, "little") + v
    return b"\xfe" + n.to_bytes(8, "little") + v


def packets(payloads: list[bytes], seq: int = 1) -> bytes:
    """Payloads as packets (split at 16 MiB - 1 as the protocol does) from sequence number ``seq``."""
    out = bytearray()
    for p in payloads:
        while True:
            piece, p = p[:0xFFFFFF], p[0xFFFFFF:]
            out += len(piece).to_bytes(3, "little") + bytes([seq % 256]) + piece
            seq += 1
            if len(piece) < 0xFFFFFF:
                break
    return bytes(out)


def text_result(rows: list[list[Optional[bytes]]], end: bytes = EOF_PACKET) -> bytes:
    """A result set's row packets and its end (no end: ``b""``), after the column definitions."""
    return packets([b"".join(lenenc(v) for v in r) for r in rows] + ([end] if end else []))
