"""Gaps are errors: a source whose landing binlogs skip a file stops with one line naming the missing file (and
the way forward), records the stop in meta.run_metrics, and the other sources of the run keep loading."""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import shutil
from pathlib import Path

import pytest

from binlake.cli import main
from binlake.generate.config import GenerateConfig
from binlake.generate.run import generate
from tests.e2e.test_generator_e2e import assert_equals_truth

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_a_missing_binlog_stops_its_source_and_the_other_source_loads(spark, tmp_path: Path) -> None:
    from deltalake import DeltaTable

    out = tmp_path / "gen"
    generate(
        out, GenerateConfig(seed=3, days=1, scale=0.002, start_date=dt.date(2024, 3, 1), max_binlog_size=48 * 1024)
    )
    files = sorted((out / "landing" / "shop-primary").glob("mysql-bin.0*"))
    assert len(files) >= 3
    landing = tmp_path / "landing"
    for source, kept in (("a-gap", files[:1] + files[2:]), ("b-full", files)):
        (landing / source).mkdir(parents=True)
        for f in kept:
            shutil.copy(f, landing / source / f.name)
    lake = tmp_path / "lake"
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(["run", "--landing", str(landing), "--lake", str(lake), "--engine", "rust", "--json"])
    assert code == 2
    [stop] = [line for line in stderr.getvalue().splitlines() if "STOPPED:" in line]
    assert f"binlog {files[1].name} is missing between {files[0].name} and {files[2].name}" in stop
    assert "binlake snapshot" in stop
    assert stderr.getvalue().splitlines()[-1].startswith("binlake: error: source(s) a-gap stopped")
    assert_equals_truth(out, lake, "2024-03-01")  # b-full loaded everything
    metrics = DeltaTable(str(lake / "meta" / "run_metrics")).to_pyarrow_table().to_pylist()
    assert {(r["source"], r["result"]) for r in metrics if r["table_name"] == "*"} == {
        ("a-gap", "gap"),
        ("b-full", "ok"),
    }
    # the stopped source ingested nothing: bronze holds b-full's rows only
    bronze = DeltaTable(str(lake / "bronze" / "binlog_events")).to_pyarrow_table(columns=["source"])
    assert set(bronze.column("source").to_pylist()) == {"b-full"}
