"""DDL checked against the SDI registry: after the generator's ALTER TABLE customers ADD COLUMN, silver agrees
with the table's SDI definition at the run's cutoff; when the registry only knows the definition from before the
ALTER (its newer SDI never arrived), the run warns that silver and the SDI differ, naming the column."""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import shutil
from pathlib import Path

import pytest

from binlake.cli import main
from binlake.generate.config import GenerateConfig
from binlake.generate.run import generate

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def run(landing: Path, lake: Path, sdi: Path) -> tuple[dict, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(
            [
                "run",
                "--landing",
                str(landing),
                "--lake",
                str(lake),
                "--sdi",
                str(sdi),
                "--engine",
                "rust",
                "--end",
                "2024-03-02",
                "--json",
            ]
        )
    assert code == 0, err.getvalue()
    [summary] = [json.loads(line) for line in out.getvalue().splitlines() if line.startswith("{")]
    return summary, err.getvalue()


def test_silver_after_ddl_is_checked_against_the_sdi_registry(spark, tmp_path: Path) -> None:
    out = tmp_path / "gen"
    generate(out, GenerateConfig(seed=8, days=2, scale=0.002, start_date=dt.date(2024, 3, 1), alter_day=1))
    summary, _ = run(out / "landing", tmp_path / "lake", out / "sdi")
    assert "AddColumn shop.customers" in summary["ddl"]
    assert summary["schema_mismatches"] == {}

    stale = tmp_path / "sdi-stale"
    shutil.copytree(out / "sdi", stale)
    [*_, newest] = sorted((stale / "shop" / "customers").iterdir())
    shutil.rmtree(newest)  # the SDI taken after the ALTER is missing
    summary, err = run(out / "landing", tmp_path / "lake-stale", stale)
    [why] = summary["schema_mismatches"].values()
    assert list(summary["schema_mismatches"]) == ["shop.customers"]
    added = next(a for a in summary["ddl"] if a.startswith("AddColumn"))
    assert "only in the SDI []" in why and "only in silver [" in why
    assert f"WARNING: {why}" in err and added == "AddColumn shop.customers"
