"""Running ``binlake run`` in-process (sharing the test run's Spark session) and looking at the lake."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

from binlake.cli import main


def binlake_run(landing: Path, lake: Path, *args: str, engine: str = "auto") -> list[dict[str, Any]]:
    """``binlake run --json --engine ENGINE``: the per-source summaries it printed (asserts exit code 0).
    ``auto`` is what users get: the spark engine on a set-up machine."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["run", "--landing", str(landing), "--lake", str(lake), "--json", "--engine", engine, *args])
    assert code == 0, out.getvalue()
    return [json.loads(line) for line in out.getvalue().splitlines() if line.startswith("{")]


def delta_versions(lake: Path) -> dict[str, int]:
    """Every Delta table under the lake and its latest version."""
    from deltalake import DeltaTable

    return {
        str(p.parent.relative_to(lake)): DeltaTable(str(p.parent)).version()
        for p in sorted(lake.glob("*/*/_delta_log"))
    }
