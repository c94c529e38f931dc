"""The schema registry model: every distinct version of every table definition seen in SDI snapshots.

Pure Python, no Spark: the job ``spark_jobs/snapshot_sdi.py`` only reads the current rows of
``meta.schema_registry`` (:meth:`SchemaRegistry.from_rows`), records a snapshot (:meth:`SchemaRegistry.snapshot`
on a folder) and writes :meth:`SchemaRegistry.to_rows` back with a MERGE on :data:`REGISTRY_KEY` (update
``last_seen``/``last_binlog_*`` when matched, insert otherwise) -- the rows follow :data:`REGISTRY_ROW_SCHEMA`.

A version is a run of consecutive observations (ordered by snapshot time) with the same fingerprint
(:func:`binlake.sdi.canonical.fingerprint`); observing an unchanged definition again only moves ``last_seen``.
A version is valid from its ``first_seen`` until the next version's ``first_seen``.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterable, Optional

from binlake.sdi.binlog_layout import DD_TO_BINLOG_TYPE, SdiSchemaProvider, table_schema
from binlake.sdi.canonical import fingerprint
from binlake.sdi.errors import SdiError
from binlake.sdi.model import SdiDocument, Table, parse_sdi
from binlake.sdi.readers import iter_sdi_files, read_entries
from binlake.sdi.writer import to_json

_SEQ = re.compile(r"(\d+)$")


@dataclass(frozen=True, slots=True, order=True)
class BinlogPosition:
    """A binlog coordinate, ordered by the file's numeric suffix, then the offset."""

    sequence: int
    pos: int
    file: str = field(default="", compare=False)

    @classmethod
    def of(cls, file: str, pos: int) -> "BinlogPosition":
        m = _SEQ.search(file)
        if m is None:
            raise SdiError(f"binlog file name {file!r} has no numeric suffix (expected e.g. mysql-bin.000042)")
        return cls(int(m.group(1)), pos, file)


@dataclass(frozen=True, slots=True)
class Observation:
    """One table definition seen in one snapshot."""

    fingerprint: str
    seen_at: datetime
    position: Optional[BinlogPosition]
    origin: str  # where the SDI came from (file path, ibd2sdi dump, ...)


@dataclass(frozen=True, slots=True)
class Version:
    """A distinct table definition and the span of snapshots it was seen in."""

    db: str
    table_name: str
    version: int  # 1, 2, ... per table in first_seen order
    fingerprint: str
    document: SdiDocument
    first_seen: datetime
    last_seen: datetime
    first_position: Optional[BinlogPosition]
    last_position: Optional[BinlogPosition]
    origin: str

    @property
    def table(self) -> Table:
        return self.document.obj  # type: ignore[return-value]  # observe() admits Table SDIs only


REGISTRY_ROW_SCHEMA: tuple[tuple[str, str, bool], ...] = (
    # (column, Spark SQL type, nullable)
    ("db", "string", False),
    ("table_name", "string", False),
    ("version", "int", False),
    ("fingerprint", "string", False),
    ("engine", "string", False),
    ("first_seen", "timestamp", False),
    ("last_seen", "timestamp", False),
    ("first_binlog_file", "string", True),
    ("first_binlog_pos", "long", True),
    ("last_binlog_file", "string", True),
    ("last_binlog_pos", "long", True),
    ("origin", "string", False),
    ("mysqld_version_id", "int", False),
    ("dd_version", "int", False),
    ("column_count", "int", False),
    ("columns_json", "string", False),  # [{"name", "dd_type", "binlog_type", "unsigned", "nullable", ...}]
    ("sdi_json", "string", False),  # the full definition: the SDI JSON as stored
)
REGISTRY_KEY = ("db", "table_name", "version")


class SchemaRegistry:
    """Versions of table definitions keyed by (db, table)."""

    def __init__(self) -> None:
        self._obs: dict[tuple[str, str], list[Observation]] = {}
        self._docs: dict[str, SdiDocument] = {}

    def observe(
        self, doc: SdiDocument, seen_at: datetime, position: Optional[BinlogPosition] = None, origin: str = ""
    ) -> bool:
        """Record that ``doc`` (a Table SDI) was seen at ``seen_at``; True when this adds a new version."""
        table = doc.table
        if table is None:
            raise SdiError(
                f"{origin or doc.source}: only Table SDIs go to the schema registry, not {doc.header.dd_object_type}"
            )
        key = (table.schema_ref, table.name)
        fp = fingerprint(table)
        self._docs.setdefault(fp, doc)
        before = len(self.versions(*key))
        obs = self._obs.setdefault(key, [])
        obs.append(Observation(fp, seen_at, position, origin or doc.source))
        obs.sort(key=lambda o: o.seen_at)
        return len(self.versions(*key)) > before

    def tables(self) -> list[tuple[str, str]]:
        return sorted(self._obs)

    def versions(self, db: str, table_name: str) -> list[Version]:
        out: list[Version] = []
        for o in self._obs.get((db, table_name), []):
            if out and out[-1].fingerprint == o.fingerprint:
                last = out[-1]
                pos = o.position if o.position is not None else last.last_position
                out[-1] = Version(
                    db,
                    table_name,
                    last.version,
                    last.fingerprint,
                    last.document,
                    last.first_seen,
                    o.seen_at,
                    last.first_position,
                    pos,
                    last.origin,
                )
            else:
                out.append(
                    Version(
                        db,
                        table_name,
                        len(out) + 1,
                        o.fingerprint,
                        self._docs[o.fingerprint],
                        o.seen_at,
                        o.seen_at,
                        o.position,
                        o.position,
                        o.origin,
                    )
                )
        return out

    def definition_at(self, db: str, table_name: str, at: datetime | BinlogPosition) -> Optional[Version]:
        """The version valid at a time or binlog position: the last one first seen at or before ``at``.

        None when ``at`` precedes every snapshot of the table (or, for positions, no version has one)."""
        found = None
        for v in self.versions(db, table_name):
            start = v.first_position if isinstance(at, BinlogPosition) else v.first_seen
            if start is not None and start <= at:
                found = v
        return found

    def schema_provider(self) -> SdiSchemaProvider:
        """A binlog SchemaProvider over all versions (the newest version matching a TABLE_MAP wins)."""
        return SdiSchemaProvider(
            table_schema(v.table, f"{v.origin} (version {v.version}, {v.fingerprint[:12]})")
            for key in self.tables()
            for v in self.versions(*key)
        )

    def snapshot(
        self,
        paths: Iterable[str | os.PathLike[str]],
        seen_at: datetime,
        position: Optional[BinlogPosition] = None,
        verify_checksums: bool = True,
    ) -> int:
        """Observe every Table SDI in ``paths`` (files or folders of .ibd/.sdi/ibd2sdi files) as one snapshot taken
        at ``seen_at`` (and binlog ``position``); returns how many new versions it added."""
        added = 0
        for path in iter_sdi_files(paths):
            for entry in read_entries(path, verify_checksums):
                doc = entry.document()
                if doc.table is not None:
                    added += self.observe(doc, seen_at, position, str(path))
        return added

    # ---- rows for meta.schema_registry

    def to_rows(self) -> list[dict[str, Any]]:
        """One plain dict per version, with the columns of :data:`REGISTRY_ROW_SCHEMA`."""
        return [_row(v) for key in self.tables() for v in self.versions(*key)]

    @classmethod
    def from_rows(cls, rows: Iterable[dict[str, Any]]) -> "SchemaRegistry":
        """Rebuild a registry from rows written by :meth:`to_rows`."""
        reg = cls()
        for r in sorted(rows, key=lambda r: (r["db"], r["table_name"], r["version"])):
            doc = parse_sdi(r["sdi_json"], r["origin"])
            for when, file, pos in (
                (r["first_seen"], r["first_binlog_file"], r["first_binlog_pos"]),
                (r["last_seen"], r["last_binlog_file"], r["last_binlog_pos"]),
            ):
                position = BinlogPosition.of(file, pos) if file is not None and pos is not None else None
                reg.observe(doc, when, position, r["origin"])
        return reg


def _columns_json(table: Table) -> str:
    cols = [
        {
            "name": c.name,
            "ordinal_position": c.ordinal_position,
            "dd_type": c.type,
            "binlog_type": DD_TO_BINLOG_TYPE.get(c.type),
            "column_type": c.column_type_utf8,
            "unsigned": bool(c.is_unsigned),
            "nullable": bool(c.is_nullable),
            "collation_id": c.collation_id,
            "hidden": c.hidden,
        }
        for c in table.columns
    ]
    return json.dumps(cols, separators=(",", ":"), ensure_ascii=False)


def _row(v: Version) -> dict[str, Any]:
    doc = v.document
    return {
        "db": v.db,
        "table_name": v.table_name,
        "version": v.version,
        "fingerprint": v.fingerprint,
        "engine": v.table.engine,
        "first_seen": v.first_seen,
        "last_seen": v.last_seen,
        "first_binlog_file": v.first_position.file if v.first_position else None,
        "first_binlog_pos": v.first_position.pos if v.first_position else None,
        "last_binlog_file": v.last_position.file if v.last_position else None,
        "last_binlog_pos": v.last_position.pos if v.last_position else None,
        "origin": v.origin,
        "mysqld_version_id": doc.header.mysqld_version_id,
        "dd_version": doc.header.dd_version,
        "column_count": len(v.table.columns),
        "columns_json": _columns_json(v.table),
        "sdi_json": doc.raw or to_json(doc),
    }
