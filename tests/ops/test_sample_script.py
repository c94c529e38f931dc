"""scripts/sample.sh lands the sample's binlogs day by day, as a binlog shipper delivers them, so each day's run
ingests that day's files (before, the first run ingested every file and the second run's validation warned
"the run ingested something")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).with_name("binlake")


def _ship(out: Path, what: str) -> None:
    """Run sample.sh's own ``ship`` function (not a copy of it)."""
    script = f'OUT={out}; eval "$(sed -n "/^ship() {{/,/^}}/p" scripts/sample.sh)"; ship {what}'
    subprocess.run(["bash", "-c", script], cwd=ROOT, check=True)


def _binlogs(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("mysql-bin.0*")) if folder.is_dir() else []


def test_each_days_binlogs_land_before_its_run(tmp_path: Path) -> None:
    out = tmp_path / "sample"
    gen = [str(BIN), "generate", "--out", str(out), "--seed", "7", "--days", "2", "--scale", "0.002"]
    subprocess.run(gen, check=True, capture_output=True)
    manifest = json.loads((out / "manifest.json").read_text())
    landing, shipping = out / "landing" / manifest["source"], out / "shipping" / manifest["source"]
    every = _binlogs(landing)
    day1, day2 = manifest["days"]
    first_day = [n for n in every if n <= day1["last_binlog"]]
    assert first_day and first_day != every

    _ship(out, "hold")  # after generating: only the first day has landed
    assert _binlogs(landing) == first_day and _binlogs(shipping) == [n for n in every if n not in first_day]
    _ship(out, day1["date"])  # the first run's day: already there
    assert _binlogs(landing) == first_day
    _ship(out, day2["date"])  # the second run's day lands
    assert _binlogs(landing) == every and _binlogs(shipping) == []
    _ship(out, day2["date"])  # a rerun of sample.sh changes nothing
    assert _binlogs(landing) == every
