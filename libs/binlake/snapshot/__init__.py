"""``binlake snapshot``: a live server's tables, read in one consistent view, as Parquet in silver's types,
with the binlog position at which that view is exact: the seed that binlog changes after it continue.

Layout, under the source's landing folder (the one ``binlake fetch`` fills; docs/SNAPSHOT.md has it all):

    <landing>/<source>/_snapshots/<snapshot id>/manifest.json
    <landing>/<source>/_snapshots/<snapshot id>/tables/<db>__<table>/part-NNNNN.parquet

``manifest.json`` holds the snapshot id, the server (flavor, version, server_id), its status (``running`` or
``complete``), the views (each a consistent read with its position: binlog file, offset, GTID set) and per
table: db, table, columns (name, MySQL type, silver type, the TABLE_MAP-style description), primary key, row
count, files, the view it was read in and its CREATE TABLE text. Nothing written there ends in a numeric
suffix, and the binlog ingest lists only the files directly in ``<landing>/<source>/``.

Reader API for the lake: :func:`read_snapshots` (complete snapshots, oldest first; one :class:`Snapshot` per
view), :class:`Snapshot` (``position``, ``seam_seq``, ``tables``), :class:`SnapshotTable` (``files``: the
Parquet paths). Taking one: :func:`take_snapshot` (``binlake snapshot``).
"""

from binlake.snapshot.errors import (
    ServerUnreachableError,
    SnapshotAccessError,
    SnapshotError,
    SnapshotServerError,
    SnapshotStateError,
    TableChangedError,
    UnknownTableError,
)
from binlake.snapshot.manifest import Column, Position, Snapshot, SnapshotTable, read_snapshots
from binlake.snapshot.take import SnapshotOptions, SnapshotResult, take_snapshot

__all__ = [
    "Column",
    "Position",
    "ServerUnreachableError",
    "Snapshot",
    "SnapshotAccessError",
    "SnapshotError",
    "SnapshotOptions",
    "SnapshotResult",
    "SnapshotServerError",
    "SnapshotStateError",
    "SnapshotTable",
    "TableChangedError",
    "UnknownTableError",
    "read_snapshots",
    "take_snapshot",
]
