"""Fixtures of the operations tests: the one Spark session of the run, and a lake loaded day by day from the
generator with its independent truth (the generator's own workload model and truth/ files)."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.spark_session import spark  # noqa: F401  (pytest fixture)

START = dt.date(2024, 3, 1)
DAYS = 3


@dataclass
class DayTruth:
    """What the generator's model committed on one day: the newest commit time (any change or DDL), the newest
    per table (row changes only), and the row changes per (table, op)."""

    last_commit_us: int = 0
    table_last_us: dict[str, int] = field(default_factory=dict)
    changes: Counter = field(default_factory=Counter)


def model_truth(cfg) -> list[DayTruth]:
    from binlake.generate.workload import Workload

    out = []
    for _, _, transactions in Workload(cfg).days():
        day = DayTruth()
        for txn in transactions:
            if txn.ddl is not None or any(s.changes for s in txn.statements):
                day.last_commit_us = max(day.last_commit_us, txn.commit_time_us)
            for s in txn.statements:
                if s.changes:
                    name = f"{s.table.db}.{s.table.name}"
                    day.table_last_us[name] = max(day.table_last_us.get(name, 0), txn.commit_time_us)
                    day.changes[(name, s.kind)] += len(s.changes)
        out.append(day)
    return out


@dataclass
class LoadedLake:
    out: Path
    landing: Path
    lake: Path
    days: list[str]
    summaries: list[dict]
    truth: list[DayTruth]


@pytest.fixture(scope="session")
def loaded_lake(spark, tmp_path_factory) -> LoadedLake:  # noqa: F811
    """3 generated days (several binlog files a day, a table without primary key, an ALTER TABLE) loaded
    with ``binlake run --end DAY`` day by day on the embedded engine (CI time), the last one validated."""
    from binlake.generate.config import GenerateConfig
    from binlake.generate.run import generate
    from tests.e2e.runner import binlake_run

    base = tmp_path_factory.mktemp("ops")
    out = base / "gen"
    cfg = GenerateConfig(seed=5, days=DAYS, scale=0.004, start_date=START, max_binlog_size=96 * 1024)
    generate(out, cfg)
    days = [(START + dt.timedelta(days=i)).isoformat() for i in range(DAYS)]
    lake, landing = base / "lake", base / "landing"
    summaries = []
    for day, files in zip(days, _files_per_day(out)):
        # the binlogs land day by day, as fetch brings them: each day's ingest is its own bronze append
        folder = landing / files[0].parent.name
        folder.mkdir(parents=True, exist_ok=True)
        for f in files:
            shutil.copy2(f, folder / f.name)
        names = sorted(p.name for p in folder.glob("mysql-bin.0*"))
        (folder / "mysql-bin.index").write_text("".join(f"./{n}\n" for n in names))
        # the last day also validates (binlake run --validate): the report's pass-rate plot has a real point
        summaries.append(
            binlake_run(
                landing,
                lake,
                "--end",
                day,
                "--sdi",
                str(out / "sdi"),
                *(["--validate"] if day == days[-1] else []),
                engine="rust",
            )[0]
        )
    return LoadedLake(out, landing, lake, days, summaries, model_truth(cfg))


def _files_per_day(out: Path) -> list[list[Path]]:
    """The generated binlog files of each day (the generator's manifest names each day's first and last)."""
    manifest = json.loads((out / "manifest.json").read_text())
    folder = out / "landing" / manifest["source"]
    number = lambda name: int(name.rsplit(".", 1)[1])  # noqa: E731
    return [
        [
            p
            for p in sorted(folder.glob("mysql-bin.0*"))
            if number(d["first_binlog"]) <= number(p.name) <= number(d["last_binlog"])
        ]
        for d in manifest["days"]
    ]
