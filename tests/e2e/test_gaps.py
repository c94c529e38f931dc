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


def test_a_stop_that_can_not_be_recorded_says_so_beside_its_reason(tmp_path: Path) -> None:
    """A lake whose meta.run_metrics is damaged still gets the stop's own reason, and a warning that the stop was
    not recorded (it was swallowed silently)."""
    out = tmp_path / "gen"
    generate(
        out, GenerateConfig(seed=3, days=1, scale=0.002, start_date=dt.date(2024, 3, 1), max_binlog_size=48 * 1024)
    )
    files = sorted((out / "landing" / "shop-primary").glob("mysql-bin.0*"))
    landing = tmp_path / "landing" / "a-gap"
    landing.mkdir(parents=True)
    for f in files[:1] + files[2:]:
        shutil.copy(f, landing / f.name)
    lake = tmp_path / "lake"
    log = lake / "meta" / "run_metrics" / "_delta_log"
    log.mkdir(parents=True)
    (log / f"{0:020d}.json").write_bytes(b"\x00 not a delta commit {{{\n")
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(["run", "--landing", str(landing.parent), "--lake", str(lake), "--engine", "rust"])
    err = stderr.getvalue()
    assert code == 2, err[-3000:]
    assert any("STOPPED:" in line and f"binlog {files[1].name} is missing" in line for line in err.splitlines())
    [warning] = [line for line in err.splitlines() if "the stop was not recorded in meta.run_metrics" in line]
    assert "[a-gap] WARNING:" in warning and "binlake status will not show it" in warning
    assert warning.isprintable() and "Traceback" not in err
