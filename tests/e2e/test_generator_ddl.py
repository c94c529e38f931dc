"""End to end against the generator's ground truth with its DDL on (``GenerateConfig.ddl``): three days of DML
on the shop tables (the DDL plan's five and audit_log) interleaved with TRUNCATE, DROP TABLE and a new table of the
same name, RENAME TABLE,
ALTER TABLE ... RENAME TO, ADD COLUMN ... DEFAULT (AFTER, FIRST, last), DROP/RENAME/CHANGE COLUMN, widening
MODIFYs and one VARCHAR->INT. The binlogs land day by day (with the SDI of every table version); after
``binlake run --end DAY`` for each day every table name the day's truth lists equals its truth file, nothing
filtered: a dropped or renamed-away name has no silver table, each live table has exactly its columns at the end
of the day, and the table the VARCHAR->INT blocked keeps its rows as of that statement while its later row
changes, and nothing else, are in quarantine.

The embedded (rust) engine loads all three days; the spark engine the first (its MERGEs cost far more per table,
and the plan's first migration holds one of each change the engines carry out differently)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from binlake.generate.config import GenerateConfig
from binlake.generate.run import generate
from tests.e2e.lake_compare import as_lines, diff_summary, silver_columns, silver_rows, truth_lines
from tests.e2e.runner import binlake_run

pytestmark = [pytest.mark.spark, pytest.mark.slow]

# of the main tables only audit_log (no primary key): test_generator_e2e covers the others, and each table a load
# touches costs a MERGE (the spark engine's take about a minute each on a loaded machine)
CONFIG = GenerateConfig(seed=7, days=3, scale=0.002, tables=("audit_log",), ddl=True, max_binlog_size=96 * 1024)


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("gen-ddl")
    generate(out, CONFIG)
    return out, json.loads((out / "manifest.json").read_text())


def land(out: Path, manifest: dict, day: dict, landing: Path) -> None:
    """Copy the day's binlog files into ``landing`` (as fetch brings them), with the index file."""
    folder = landing / manifest["source"]
    folder.mkdir(parents=True, exist_ok=True)
    number = lambda name: int(name.rsplit(".", 1)[1])  # noqa: E731
    for f in sorted((out / "landing" / manifest["source"]).glob("mysql-bin.0*")):
        if number(day["first_binlog"]) <= number(f.name) <= number(day["last_binlog"]):
            shutil.copy2(f, folder / f.name)
    (folder / "mysql-bin.index").write_text("".join(f"./{p.name}\n" for p in sorted(folder.glob("mysql-bin.0*"))))


def quarantined(lake: Path) -> dict[tuple[str, str], int]:
    """Rows of meta/quarantine per (db.table, kind)."""
    from deltalake import DeltaTable

    path = lake / "meta" / "quarantine"
    if not (path / "_delta_log").is_dir():
        return {}
    out: dict[tuple[str, str], int] = {}
    for r in DeltaTable(str(path)).to_pyarrow_table(columns=["db", "table_name", "kind"]).to_pylist():
        key = (f"{r['db']}.{r['table_name']}", r["kind"])
        out[key] = out.get(key, 0) + 1
    return out


def assert_day_equals_truth(out: Path, lake: Path, day: dict) -> None:
    date = day["date"]
    for rel in day["truth"]:
        qualified = Path(rel).parent.name
        db, table = qualified.split(".", 1)
        expected, columns = truth_lines(out / "truth", db, table, date)
        actual = as_lines(silver_rows(lake, db, table), columns)
        assert actual == expected, f"{qualified} at the end of {date}: {diff_summary(expected, actual)}"
        held = silver_columns(lake, db, table)
        if qualified not in day["columns"]:  # dropped or renamed away: no silver table
            assert held is None, f"{qualified} at the end of {date}: silver still has {held}"
        elif held is not None:
            assert held == sorted(day["columns"][qualified]), f"{qualified} columns at the end of {date}"
    assert quarantined(lake) == {(t, "schema"): n for t, n in day["blocked_changes"].items()}, date


@pytest.mark.parametrize("engine, days", [("rust", 3), ("spark", 1)])
def test_ddl_day_by_day_equals_truth(spark, generated, tmp_path: Path, engine: str, days: int) -> None:
    out, manifest = generated
    lake, landing = tmp_path / "lake", tmp_path / "landing"
    ((blocked, gno),) = manifest["blocked"].items()
    first_gno = 1
    for day in manifest["days"][:days]:
        land(out, manifest, day, landing)
        [summary] = binlake_run(landing, lake, "--end", day["date"], "--sdi", str(out / "sdi"), engine=engine)
        assert_day_equals_truth(out, lake, day)
        if first_gno <= gno <= day["last_gno"]:  # the run that meets the VARCHAR->INT names the table
            assert blocked in summary["blocked_tables"], summary
        first_gno = day["last_gno"] + 1
    # DROP TABLE retired the dropped table's silver folder (binlake's default), out of the live namespace
    assert list((lake / "silver" / "_retired").glob("shop__sessions__*"))
