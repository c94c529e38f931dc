"""Two sources, one table: a table belongs to the first source that loads it; another source writing the same
``db.table`` has its changes quarantined (kind ``schema``, the owner named) instead of merged in an undefined
order, and the run summary says so. The owner's silver equals its own truth."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest

from binlake.generate.config import GenerateConfig
from binlake.generate.run import generate
from tests.e2e.runner import binlake_run
from tests.e2e.test_generator_e2e import assert_equals_truth

pytestmark = [pytest.mark.spark, pytest.mark.slow]

START = dt.date(2024, 3, 1)


def test_the_first_source_owns_a_table_and_the_second_is_quarantined(spark, tmp_path: Path) -> None:
    from deltalake import DeltaTable

    landing = tmp_path / "landing"
    gens = {}
    for name, seed in (("a-primary", 1), ("b-other", 2)):
        out = gens[name] = tmp_path / f"gen-{name}"
        generate(out, GenerateConfig(seed=seed, days=1, scale=0.002, start_date=START))
        [folder] = [p for p in (out / "landing").iterdir() if p.is_dir()]
        shutil.copytree(folder, landing / name)
    lake = tmp_path / "lake"
    first, second = binlake_run(landing, lake, "--end", START.isoformat(), engine="rust")
    assert (first["source"], second["source"]) == ("a-primary", "b-other")
    assert first["changes_applied"] > 0 and not first["blocked_tables"]
    assert second["changes_applied"] == 0
    assert set(second["blocked_tables"]) == {"shop.customers", "shop.products", "shop.orders", "shop.audit_log"}
    assert all("belongs to source 'a-primary'" in why for why in second["blocked_tables"].values())
    assert_equals_truth(gens["a-primary"], lake, START.isoformat())
    quarantine = DeltaTable(str(lake / "meta" / "quarantine")).to_pyarrow_table().to_pylist()
    theirs = [q for q in quarantine if q["source"] == "b-other"]
    bronze = DeltaTable(str(lake / "bronze" / "binlog_events")).to_pyarrow_table(columns=["source", "op"]).to_pylist()
    changes = sum(1 for r in bronze if r["source"] == "b-other" and r["op"] in ("insert", "update", "delete"))
    assert len(theirs) == changes == second["quarantined"] and {q["kind"] for q in theirs} == {"schema"}
