"""Where every table of a lake lives under its root: the one layout the jobs, the quality checks and the DAG
tasks share (DESIGN.md, "Tables").

    <lake>/bronze/binlog_events            <lake>/silver/<db>__<table>[__history]
    <lake>/meta/{checkpoints,quarantine,schema_registry,dq_results}
    <lake>/reports/quality/                <lake>/logs/

Silver folder names are an injective, reversible function of (db, table): names made only of ASCII letters,
digits, ``$`` and single inner underscores keep their readable ``<db>__<table>`` form; any other pair (``/``,
``..``, spaces, ``<``, non-ASCII, ``__`` inside a name, a leading or trailing ``_``) is percent-encoded whole,
``_`` included (each UTF-8 byte outside ``[A-Za-z0-9$]`` as ``~XX``; ``%`` would be taken for a URI escape by
Hadoop and delta-rs paths), so encoded folders always hold a ``~`` and plain ones never do, and the ``__`` separator is
unambiguous in both. A folder can never leave ``silver/``. Encodings longer than a file name allows are cut
and suffixed with ``~~`` and a hash of the full pair; the pair is then kept in the table folder's
``_binlake_table.json`` (a ``_`` file, which Delta and VACUUM leave alone). A NUL byte is refused (MySQL identifiers
can not hold one).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from binlake.lake.errors import LakeError

HISTORY_SUFFIX = "__history"
SEPARATOR = "__"
_PLAIN = re.compile(r"[A-Za-z0-9$]+(?:_[A-Za-z0-9$]+)*")
NAME_FILE = "_binlake_table.json"
_MAX_NAME = 200  # bytes of a folder name, below the usual 255 with room for suffixes


class TableNameError(LakeError):
    """A (db, table) pair that can not name a lake table (a NUL byte, an empty name)."""


_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789$")
_ESCAPE = re.compile(r"~([0-9A-F]{2})")


def _encode(name: str) -> str:
    return "".join(chr(b) if b in _SAFE else f"~{b:02X}" for b in name.encode("utf-8"))


def _decode(name: str) -> str:
    out = bytearray()
    i = 0
    while i < len(name):
        if name[i] == "~":
            out.append(int(name[i + 1 : i + 3], 16))
            i += 3
        else:
            out += name[i].encode()
            i += 1
    return out.decode("utf-8")


def silver_name(db: str, table: str) -> str:
    """The folder name of ``silver.<db>.<table>`` (see the module docstring)."""
    for part, what in ((db, "database"), (table, "table")):
        if not part or "\x00" in part:
            raise TableNameError(f"{what} name {part!r} can not name a lake table (empty or holding a NUL byte)")
    if _PLAIN.fullmatch(db) and _PLAIN.fullmatch(table):
        name = f"{db}{SEPARATOR}{table}"
    else:
        name = f"{_encode(db)}{SEPARATOR}{_encode(table)}"
    if len(name.encode()) > _MAX_NAME:
        digest = hashlib.sha256(f"{db}\x00{table}".encode()).hexdigest()[:16]
        name = f"{name[: _MAX_NAME - 18]}~~{digest}"
    return name


def parse_silver_name(folder: str) -> Optional[tuple[str, str]]:
    """(db, table) of a silver folder name, or None for a folder that is not one (history tables, a cut name
    whose pair is only in the table's metadata, anything else)."""
    if folder.endswith(HISTORY_SUFFIX) or "~~" in folder:
        return None
    db, sep, table = folder.partition(SEPARATOR)
    if not sep or not db or not table or SEPARATOR in table:
        return None
    if "~" in folder:
        try:
            return _decode(db), _decode(table)
        except ValueError:
            return None
    return (db, table) if _PLAIN.fullmatch(db) and _PLAIN.fullmatch(table) else None


@dataclass(frozen=True, slots=True)
class LakeLayout:
    """Where each table lives under the lake root."""

    root: str

    def path(self, *parts: str) -> str:
        return str(Path(self.root, *parts))

    @property
    def bronze(self) -> str:
        return self.path("bronze", "binlog_events")

    def silver(self, db: str, table: str) -> str:
        return self.path("silver", silver_name(db, table))

    def history(self, db: str, table: str) -> str:
        return self.path("silver", silver_name(db, table) + HISTORY_SUFFIX)

    def meta(self, name: str) -> str:
        return self.path("meta", name)

    @property
    def checkpoints(self) -> str:
        return self.meta("checkpoints")

    @property
    def quarantine(self) -> str:
        return self.meta("quarantine")

    @property
    def schema_registry(self) -> str:
        return self.meta("schema_registry")

    @property
    def tombstones(self) -> str:
        """Keys a MERGE deleted whose checkpoint is not written yet (out of readers' sight)."""
        return self.meta("tombstones")

    @property
    def dq_results(self) -> str:
        return self.meta("dq_results")

    @property
    def reports(self) -> str:
        return self.path("reports", "quality")

    @property
    def logs(self) -> str:
        return self.path("logs")

    @property
    def staging(self) -> str:
        """Scratch space of the embedded engine (files Spark writes for delta-rs to stream); emptied after use."""
        return self.path("_staging")

    def record_name(self, db: str, table: str) -> None:
        """Keep the (db, table) of a silver folder whose name was cut, inside it (see the module docstring)."""
        folder = Path(self.silver(db, table))
        if "~~" in folder.name and not (folder / NAME_FILE).is_file():
            folder.mkdir(parents=True, exist_ok=True)
            (folder / NAME_FILE).write_text(json.dumps({"db": db, "table": table}), encoding="utf-8")

    def silver_tables(self) -> list[tuple[str, str]]:
        """(db, table) of every silver Delta table (not the SCD2 ``__history`` tables)."""
        return [pair for pair, _ in self._silver_folders() if pair is not None]

    def unnamed_silver_folders(self) -> list[str]:
        """Silver Delta tables whose (db, table) can not be told (neither by the folder name nor by its name
        file): validation reports them as not validated instead of skipping them silently."""
        return [folder for pair, folder in self._silver_folders() if pair is None]

    def _silver_folders(self) -> list[tuple[Optional[tuple[str, str]], str]]:
        base = Path(self.root, "silver")
        if not base.is_dir():
            return []
        out = []
        for d in sorted(base.iterdir()):
            if not (d / "_delta_log").is_dir() or d.name.endswith(HISTORY_SUFFIX):
                continue
            pair = parse_silver_name(d.name)
            if pair is None and "~~" in d.name and (d / NAME_FILE).is_file():
                try:
                    named = json.loads((d / NAME_FILE).read_text(encoding="utf-8"))
                    pair = (str(named["db"]), str(named["table"]))
                except (ValueError, KeyError, TypeError):
                    pair = None
            out.append((pair, d.name))
        return out


def absolute(root: str) -> LakeLayout:
    return LakeLayout(os.path.abspath(root))
