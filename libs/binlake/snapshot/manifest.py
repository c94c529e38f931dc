"""The snapshot folder: its layout, ``manifest.json`` (read, written atomically) and the reader API
:func:`read_snapshots` the lake side calls.

    <landing>/<source>/_snapshots/
        .binlake-snapshot.lock                  flock of the one snapshot writer of this source
        <snapshot id>/manifest.json             what the snapshot holds (below); written last
        <snapshot id>/tables/<db>__<table>/part-00000.parquet ...

``<db>__<table>`` is the silver folder name (:func:`binlake.folders.silver_name`). No name here ends in a
numeric suffix, and the binlog ingest lists only the files directly in ``<landing>/<source>/``
(:func:`binlake.pipeline.identity.landing_files`), so nothing under ``_snapshots`` is taken for a binlog.

Every path read from a manifest is checked before it is used (a snapshot resumes by deleting files it does not
name, and seeding reads the files it names): a table folder and a file are plain names (no separator, no ``..``,
not hidden); the snapshot folders, their ``tables`` folder, table folders and files are not symbolic links.
Anything else is a :class:`SnapshotStateError` naming the manifest: nothing is read or deleted outside it.

A snapshot is read in one or more *views*: a view is one consistent read of the server (one transaction) with
the binlog position at which it is exact. An uninterrupted snapshot has one view. A resumed one opens a new
view; every table's rows come from exactly one view (the table's ``view``), so each table is exact at that
view's position. :func:`read_snapshots` returns one :class:`Snapshot` per view that holds tables.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from binlake.folders import link_problem
from binlake.pipeline.identity import file_sequence, ordering_key
from binlake.snapshot.errors import SnapshotStateError

SNAPSHOTS_DIR = "_snapshots"
MANIFEST_NAME = "manifest.json"
LOCK_NAME = ".binlake-snapshot.lock"
TABLES_DIR = "tables"
MANIFEST_VERSION = 1
RUNNING, COMPLETE = "running", "complete"

KeyValue = Any
"""A key value as the server takes it back as a query parameter: int, str, or bytes (``{"hex": ...}`` in JSON)."""


@dataclass(frozen=True, slots=True)
class Position:
    """A binlog position: the snapshot holds every transaction before ``file:pos`` and none after it."""

    file: str
    pos: int
    gtid: Optional[str] = None  # MySQL gtid_executed / MariaDB gtid_binlog_pos at the position; None: off

    @property
    def seam_seq(self) -> int:
        """``_binlake_seq`` of the position: changes with a smaller ``_binlake_seq`` are in the snapshot."""
        return ordering_key(file_sequence(self.file), self.pos, 0)

    def __str__(self) -> str:
        return f"{self.file}:{self.pos}" + (f" (gtid {self.gtid})" if self.gtid else "")

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "pos": self.pos, "gtid": self.gtid}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Position":
        return cls(str(data["file"]), int(data["pos"]), data.get("gtid"))


@dataclass(frozen=True, slots=True)
class Column:
    """One column: its name, MySQL type (``COLUMN_TYPE``), silver type and the bronze column description
    (``binlake.binlog.silver_types.ColumnMeta``) the binlog's TABLE_MAP would give it."""

    name: str
    mysql_type: str
    data_type: str
    nullable: bool
    charset: Optional[str]
    collation: Optional[str]
    silver_type: str
    meta: tuple

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "mysql_type": self.mysql_type,
            "data_type": self.data_type,
            "nullable": self.nullable,
            "charset": self.charset,
            "collation": self.collation,
            "silver_type": self.silver_type,
            "meta": list(self.meta),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Column":
        return cls(
            d["name"],
            d["mysql_type"],
            d["data_type"],
            bool(d["nullable"]),
            d.get("charset"),
            d.get("collation"),
            d["silver_type"],
            tuple(d["meta"]),
        )


@dataclass(slots=True)
class Chunk:
    """Rows of one key range ``(lo, hi]`` (None: unbounded) read in one view, and the fingerprint of that range
    (how a resumed snapshot tells that the range did not change since)."""

    lo: Optional[list[KeyValue]]
    hi: Optional[list[KeyValue]]
    rows: int
    files: list[str]
    fingerprint: Optional[str] = None
    invalid_temporals: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "lo": _keys_json(self.lo),
            "hi": _keys_json(self.hi),
            "rows": self.rows,
            "files": self.files,
            "fingerprint": self.fingerprint,
            "invalid_temporals": self.invalid_temporals,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Chunk":
        return cls(
            _keys_value(d.get("lo")),
            _keys_value(d.get("hi")),
            int(d["rows"]),
            list(d["files"]),
            d.get("fingerprint"),
            dict(d.get("invalid_temporals") or {}),
        )


@dataclass(slots=True)
class TableState:
    """One table of the snapshot: its definition (as of its view) and the chunks read so far."""

    db: str
    table: str
    folder: str
    engine: str
    create_table: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]  # empty: no primary key (nor a unique NOT NULL key standing in for it)
    chunked: bool  # read in primary-key chunks (else one streamed scan)
    view: Optional[int] = None
    complete: bool = False
    chunks: list[Chunk] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.db}.{self.table}"

    @property
    def rows(self) -> int:
        return sum(c.rows for c in self.chunks)

    @property
    def files(self) -> list[str]:
        return [f for c in self.chunks for f in c.files]

    @property
    def invalid_temporals(self) -> dict[str, int]:
        """Per column, zero or invalid dates that became NULL (as ``binlake run`` counts them)."""
        out: dict[str, int] = {}
        for c in self.chunks:
            for col, n in c.invalid_temporals.items():
                out[col] = out.get(col, 0) + n
        return out

    def same_definition(self, other: "TableState") -> bool:
        return (self.columns, self.primary_key, self.chunked) == (other.columns, other.primary_key, other.chunked)

    def to_json(self) -> dict[str, Any]:
        return {
            "db": self.db,
            "table": self.table,
            "folder": self.folder,
            "engine": self.engine,
            "columns": [c.to_json() for c in self.columns],
            "primary_key": list(self.primary_key),
            "chunked": self.chunked,
            "view": self.view,
            "complete": self.complete,
            "rows": self.rows,
            "files": self.files,
            "invalid_temporals": self.invalid_temporals,
            "chunks": [c.to_json() for c in self.chunks],
            "create_table": self.create_table,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "TableState":
        return cls(
            d["db"],
            d["table"],
            d["folder"],
            d.get("engine", ""),
            d["create_table"],
            tuple(Column.from_json(c) for c in d["columns"]),
            tuple(d["primary_key"]),
            bool(d["chunked"]),
            d.get("view"),
            bool(d["complete"]),
            [Chunk.from_json(c) for c in d["chunks"]],
        )


@dataclass(frozen=True, slots=True)
class View:
    """One consistent read of the server and the binlog position it is exact at."""

    index: int
    position: Position
    opened: str  # UTC time, ISO 8601
    method: str  # how the position was taken (docs/SNAPSHOT.md)

    def to_json(self) -> dict[str, Any]:
        return {"view": self.index, "position": self.position.to_json(), "opened": self.opened, "method": self.method}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "View":
        return cls(int(d["view"]), Position.from_json(d["position"]), d["opened"], d["method"])


@dataclass(slots=True)
class Manifest:
    """What ``manifest.json`` holds (the snapshot's state; see docs/SNAPSHOT.md)."""

    id: str
    source: str
    server: dict[str, Any]  # flavor, version, server_id, uri (no secrets)
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    chunk_rows: int
    created: str
    fingerprint_key: str  # secret mixed into chunk fingerprints (take.py)
    status: str = RUNNING
    completed: Optional[str] = None
    views: list[View] = field(default_factory=list)
    tables: list[TableState] = field(default_factory=list)
    next_file: int = 0

    def to_json(self) -> str:
        return (
            json.dumps(
                {
                    "version": MANIFEST_VERSION,
                    "id": self.id,
                    "source": self.source,
                    "server": self.server,
                    "status": self.status,
                    "created": self.created,
                    "completed": self.completed,
                    "selection": {"include": list(self.include), "exclude": list(self.exclude)},
                    "chunk_rows": self.chunk_rows,
                    "fingerprint_key": self.fingerprint_key,
                    "next_file": self.next_file,
                    "views": [v.to_json() for v in self.views],
                    "tables": [t.to_json() for t in self.tables],
                },
                indent=1,
                ensure_ascii=False,
            )
            + "\n"
        )

    @classmethod
    def from_json(cls, text: str, path: Path) -> "Manifest":
        try:
            d = json.loads(text)
            if d.get("version") != MANIFEST_VERSION:
                raise SnapshotStateError(
                    f"{path}: manifest version {d.get('version')!r}, expected "
                    f"{MANIFEST_VERSION}; this binlake can not read it"
                )
            m = cls(
                id=str(d["id"]),
                source=str(d["source"]),
                server=dict(d["server"]),
                include=tuple(d["selection"]["include"]),
                exclude=tuple(d["selection"]["exclude"]),
                chunk_rows=int(d["chunk_rows"]),
                created=d["created"],
                fingerprint_key=d["fingerprint_key"],
                status=d["status"],
                completed=d.get("completed"),
                views=[View.from_json(v) for v in d["views"]],
                tables=[TableState.from_json(t) for t in d["tables"]],
                next_file=int(d["next_file"]),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            what = f"the member {exc} is missing" if isinstance(exc, KeyError) else str(exc)[:160]
            raise SnapshotStateError(
                f"{path}: unreadable snapshot manifest ({what}); remove the snapshot folder and take the snapshot again"
            ) from None
        for t in m.tables:
            for name, what in ((t.folder, "table folder"), *((f, "file") for f in t.files)):
                reason = _name_problem(name)
                if reason is not None:
                    raise SnapshotStateError(
                        f"{path}: table {str(t.db)[:80]!r}.{str(t.table)[:80]!r}: the {what} {str(name)[:80]!r} "
                        f"{reason}; the manifest was changed outside binlake: nothing was read or deleted, remove "
                        f"the snapshot folder {path.parent} and take the snapshot again"
                    )
        return m

    def write(self, folder: Path) -> None:
        """Replace ``folder/manifest.json`` atomically and durably (temp file, fsync, rename, fsync folder)."""
        _write_atomic(folder / MANIFEST_NAME, self.to_json())


def _name_problem(name: Any) -> Optional[str]:
    """Why ``name`` (a table folder or file name from a manifest) is not one plain name inside its folder."""
    if not isinstance(name, str) or not name:
        return "is not a name"
    if name in (".", "..") or name.startswith("."):
        return "is hidden or names a folder ('.', '..')"
    if any(ch in "/\\" or ord(ch) < 32 or ord(ch) == 127 for ch in name) or os.path.isabs(name):
        return "is not one plain name (it holds a separator or a control character)"
    return None


def linked(base: Path, *parts: str) -> Optional[str]:
    """:func:`binlake.folders.link_problem` of ``base/parts...`` below ``base``: a symbolic link on the way
    (``base`` itself included) or a path resolving outside ``base``; None when neither."""
    if base.is_symlink():
        return f"{base} is a symbolic link to {os.readlink(base)}"
    return link_problem(base, base.joinpath(*parts))


def check_not_linked(base: Path, *parts: str, doing: str) -> Path:
    """``base/parts...``, or SnapshotStateError when :func:`linked` finds a link (``doing``: what was to be
    done there)."""
    problem = linked(base, *parts)
    if problem is not None:
        raise SnapshotStateError(
            f"{problem}: refusing to {doing} through a symbolic link; replace it with the "
            "real folder or file, or remove that snapshot folder and take the snapshot again"
        )
    return base.joinpath(*parts)


def _keys_json(keys: Optional[Sequence[KeyValue]]) -> Optional[list]:
    if keys is None:
        return None
    return [{"hex": bytes(k).hex()} if isinstance(k, (bytes, bytearray)) else k for k in keys]


def _keys_value(keys: Optional[Sequence[Any]]) -> Optional[list[KeyValue]]:
    if keys is None:
        return None
    return [bytes.fromhex(k["hex"]) if isinstance(k, dict) else k for k in keys]


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)  # a left-over (or a planted link): never written through
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with open(fd, "w", encoding="utf-8") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def snapshots_root(landing_source_dir: str | os.PathLike[str]) -> Path:
    return Path(landing_source_dir) / SNAPSHOTS_DIR


def load_manifests(landing_source_dir: str | os.PathLike[str]) -> list[tuple[Path, Manifest]]:
    """Every snapshot folder of a source's landing folder with its manifest (folders without one are
    snapshots that never wrote their first manifest: skipped), in id order."""
    root = snapshots_root(landing_source_dir)
    check_not_linked(root, doing="read snapshots")
    if not root.is_dir():
        return []
    out = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        check_not_linked(folder, doing="read a snapshot")
        path = folder / MANIFEST_NAME
        if path.is_file():
            out.append((folder, Manifest.from_json(path.read_text(encoding="utf-8"), path)))
    return out


# --- the reader API ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SnapshotTable:
    """One table of a snapshot: its definition, rows and Parquet files (absolute paths; the files' columns
    are ``columns`` in order, with their silver types)."""

    db: str
    table: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    rows: int
    files: tuple[Path, ...]
    create_table: str
    invalid_temporals: Mapping[str, int]

    @property
    def silver_columns(self) -> list[tuple[str, str]]:
        """(name, silver type) per column, in table order (``binlake.binlog.silver_types.arrow_schema`` takes it)."""
        return [(c.name, c.silver_type) for c in self.columns]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The tables of one snapshot read in one view: every row is the table's state at ``position``."""

    id: str
    view: int
    source: str
    path: Path  # the snapshot folder
    flavor: str  # "mysql" or "mariadb"
    server_version: str
    position: Position
    tables: tuple[SnapshotTable, ...]
    placed_seq: Optional[int] = None  # the seam in a cluster source's stream, by GTID (binlake.lake.gtid_seam)

    @property
    def seam_seq(self) -> int:
        """Changes with ``_binlake_seq`` < ``seam_seq`` are in the snapshot; the others are not."""
        return self.position.seam_seq if self.placed_seq is None else self.placed_seq

    def table(self, db: str, table: str) -> SnapshotTable:
        for t in self.tables:
            if (t.db, t.table) == (db, table):
                return t
        raise KeyError(f"{db}.{table}")


def _check_usable(folder: Path, m: Manifest) -> None:
    """:class:`InvalidSnapshotError` when a complete snapshot can not seed (``binlake.snapshot.validate``)."""
    from binlake.snapshot.errors import InvalidSnapshotError
    from binlake.snapshot.validate import manifest_problem

    reason = manifest_problem(m)
    if reason is not None:
        raise InvalidSnapshotError(
            f"{folder / MANIFEST_NAME}: snapshot {m.id} can not seed silver: {reason}; this "
            f"source stops here: remove the folder {folder} and take the snapshot again "
            "(binlake snapshot)"
        )


def read_snapshots(landing_source_dir: str | os.PathLike[str]) -> list[Snapshot]:
    """The complete snapshots of one source's landing folder (``<landing>/<source>``), oldest position first:
    one :class:`Snapshot` per view of each complete snapshot folder (see the module docstring). Unfinished
    snapshots are left out; an unreadable manifest raises :class:`SnapshotStateError`, a complete one that can not
    seed (an impossible position, a column twice) :class:`InvalidSnapshotError`."""
    out = []
    for folder, m in load_manifests(landing_source_dir):
        if m.status != COMPLETE:
            continue
        _check_usable(folder, m)
        for view in m.views:
            tables = tuple(
                SnapshotTable(
                    t.db,
                    t.table,
                    t.columns,
                    t.primary_key,
                    t.rows,
                    tuple(check_not_linked(folder, TABLES_DIR, t.folder, f, doing="seed from a file") for f in t.files),
                    t.create_table,
                    t.invalid_temporals,
                )
                for t in m.tables
                if t.view == view.index
            )
            if tables:
                out.append(
                    Snapshot(
                        m.id,
                        view.index,
                        m.source,
                        folder,
                        m.server.get("flavor", ""),
                        m.server.get("version", ""),
                        view.position,
                        tables,
                    )
                )
    return sorted(out, key=lambda s: (s.seam_seq, s.id, s.view))
