"""What the native core tells of a chunk's row images (``bronze_native.ImageFacts``, for the footer scan): exactly
the layouts with an UPDATE whose after image lacks columns (no JSON diffs), and the layouts with an after image
holding a zero or invalid date, both found again from the bronze rows it wrote (``silver_types.invalid_temporal``
on each temporal column's text). On generated MySQL 8 workloads (FULL and MINIMAL images) and on a real MariaDB
server's binlogs (zero and invalid dates, MINIMAL images)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from binlake.binlog import native
from binlake.binlog.silver_types import invalid_temporal, silver_type
from binlake.generate.config import GenerateConfig
from binlake.generate.run import generate
from binlake.pipeline.bronze import ChunkTask
from binlake.pipeline.bronze_native import ImageFacts, iter_native_batches, usable
from binlake.pipeline.filters import TransactionFilter
from binlake.pipeline.identity import identify, landing_files
from binlake.vocabulary import LAYOUT_OP
from tests.mariadb_server import BinlogSettings, require_mariadb

pytestmark = pytest.mark.skipif(not native.available(), reason="the native core is not built (scripts/setup.sh)")


def native_bronze(files: list[str]) -> tuple[list[dict], set[str], set[str]]:
    """The bronze rows the native core writes for ``files`` (one chunk each), and the union of its facts."""
    rows: list[dict] = []
    minimal: set[str] = set()
    invalid: set[str] = set()
    for path in files:
        task = ChunkTask(path, identify("s", path), 4, None)
        assert usable(task)
        facts = ImageFacts()
        rows += pa.Table.from_batches(
            list(iter_native_batches(task, TransactionFilter(), "run", facts=facts))
        ).to_pylist()
        assert facts.checked
        minimal |= facts.minimal
        invalid |= facts.invalid_temporal
    return rows, minimal, invalid


def facts_of_rows(rows: list[dict]) -> tuple[set[str], set[str]]:
    """(layouts with an UPDATE without JSON diffs whose after image lacks columns, layouts with an after image
    holding a temporal value that has no typed value), read from the rows themselves."""
    layouts = {r["layout"]: json.loads(r["columns"]) for r in rows if r["op"] == LAYOUT_OP}
    minimal, invalid = set(), set()
    for r in rows:
        if r["op"] not in ("insert", "update") or r["after"] is None:
            continue
        columns, after = layouts[r["layout"]], json.loads(r["after"])
        if r["op"] == "update" and r["diffs"] is None and len(after) < len(columns):
            minimal.add(r["layout"])
        if any(invalid_temporal(silver_type(meta), after.get(meta[0])) for meta in columns):
            invalid.add(r["layout"])
    return minimal, invalid


@pytest.mark.parametrize("row_image", ["full", "minimal"])
def test_the_facts_of_generated_workloads_are_their_rows(tmp_path: Path, row_image: str) -> None:
    out = tmp_path / row_image
    generate(out, GenerateConfig(days=1, scale=0.01, row_image=row_image, max_binlog_size=200_000))
    rows, minimal, invalid = native_bronze(landing_files(str(out / "landing" / "shop-primary")))
    assert sum(r["op"] == "update" for r in rows) > 100
    assert (minimal, invalid) == facts_of_rows(rows)
    assert bool(minimal) == (row_image == "minimal") and not invalid


@pytest.mark.mariadb
@pytest.mark.slow
def test_the_facts_of_a_real_servers_binlogs_are_their_rows(tmp_path: Path) -> None:
    """MariaDB's workload of the oracle tests (zero and invalid dates in DATE/DATETIME/TIMESTAMP columns of some
    tables), with MINIMAL images."""
    require_mariadb()
    from tests.binlog.mariadb.oracle import run_on_fresh_server

    run = run_on_fresh_server(tmp_path / "server", BinlogSettings(row_image="MINIMAL"))
    rows, minimal, invalid = native_bronze([str(f) for f in run.files])
    assert (minimal, invalid) == facts_of_rows(rows)
    named = {r["layout"]: r["table_name"] for r in rows if r["op"] == LAYOUT_OP}
    assert minimal and invalid and {named[lid] for lid in invalid} < set(named.values())
