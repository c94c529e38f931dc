"""Where the tables validation reads and writes live under one lake root (DESIGN.md, "Tables"; the same paths
as ``binlake.lake.jobs.LakeLayout``, which this mirrors rather than imports to keep GX-free imports light).

    <lake>/bronze/binlog_events   <lake>/silver/<db>__<table>   <lake>/meta/<name>   <lake>/reports/quality/
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

HISTORY_SUFFIX = "__history"


@dataclass(frozen=True, slots=True)
class LakeLayout:
    root: str

    @property
    def bronze(self) -> str:
        return os.path.join(self.root, "bronze", "binlog_events")

    def silver(self, db: str, table: str) -> str:
        return os.path.join(self.root, "silver", f"{db}__{table}")

    def meta(self, name: str) -> str:
        return os.path.join(self.root, "meta", name)

    @property
    def reports(self) -> str:
        return os.path.join(self.root, "reports", "quality")

    def silver_tables(self) -> list[tuple[str, str]]:
        """(db, table) of every Delta table under ``silver/`` named ``<db>__<table>`` (not the SCD2
        ``<db>__<table>__history`` tables)."""
        base = Path(self.root, "silver")
        if not base.is_dir():
            return []
        out = []
        for d in sorted(base.iterdir()):
            db, sep, table = d.name.partition("__")
            if sep and not table.endswith(HISTORY_SUFFIX) and (d / "_delta_log").is_dir():
                out.append((db, table))
        return out
