"""Where every table of a lake lives under its root: the one layout the jobs, the quality checks and the DAG
tasks share (DESIGN.md, "Tables").

    <lake>/bronze/binlog_events            <lake>/silver/<db>__<table>[__history]
    <lake>/meta/{checkpoints,quarantine,schema_registry,dq_results}
    <lake>/reports/quality/                <lake>/logs/

Silver folder names (``<db>__<table>``, encoded where a name needs it) are :func:`binlake.folders.silver_name`;
a folder whose name was cut keeps its (db, table) in its ``_binlake_table.json`` (a ``_`` file, which Delta
and VACUUM leave alone).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from binlake.folders import HISTORY_SUFFIX, TableNameError, parse_silver_name, silver_name

__all__ = [
    "HISTORY_SUFFIX",
    "NAME_FILE",
    "LakeLayout",
    "TableNameError",
    "absolute",
    "parse_silver_name",
    "silver_name",
]

NAME_FILE = "_binlake_table.json"


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
