"""A complete snapshot that can not seed (issue #25, case 8: written from a hostile server's answers, or changed
since) stops its own source with one line naming it; the other sources of the run load as if it were not there."""

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
from tests.e2e.test_generator_e2e import assert_equals_truth

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_an_unusable_snapshot_stops_its_source_and_the_other_source_loads(spark, tmp_path: Path) -> None:
    from deltalake import DeltaTable

    from binlake.snapshot import take_snapshot
    from binlake.transport.uri import parse_mysql_uri
    from tests.snapshot.fake_server import Answers, serve

    out = tmp_path / "gen"
    generate(out, GenerateConfig(seed=3, days=1, scale=0.002, start_date=dt.date(2024, 3, 1)))
    landing = tmp_path / "landing"
    for source in ("a-bad", "b-good"):
        shutil.copytree(out / "landing" / "shop-primary", landing / source)
    with serve(Answers()) as server:
        take_snapshot(parse_mysql_uri(f"mysql://snap@127.0.0.1:{server.port}/?server_id=9&name=a-bad"), landing)
    [manifest] = (landing / "a-bad" / "_snapshots").glob("*/manifest.json")
    data = json.loads(manifest.read_text())
    data["views"][0]["position"]["pos"] = 1 << 70  # what a hostile server gave before answers were checked
    manifest.write_text(json.dumps(data))
    lake = tmp_path / "lake"
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(["run", "--landing", str(landing), "--lake", str(lake), "--engine", "rust", "--json"])
    assert code == 2, stderr.getvalue()[-3000:]
    [stop] = [line for line in stderr.getvalue().splitlines() if "STOPPED:" in line]
    assert stop.startswith("binlake run: [a-bad] STOPPED:") and str(manifest) in stop and "remove the folder" in stop
    assert stderr.getvalue().splitlines()[-1].startswith("binlake: error: source(s) a-bad stopped")
    assert_equals_truth(out, lake, "2024-03-01")  # b-good loaded everything
    bronze = DeltaTable(str(lake / "bronze" / "binlog_events")).to_pyarrow_table(columns=["source"])
    assert set(bronze.column("source").to_pylist()) == {"b-good"}
    from binlake.lake.layout import LakeLayout
    from binlake.lake.metrics import read_metrics

    results = {(r["source"], r["result"]) for r in read_metrics(LakeLayout(str(lake))) if r["table_name"] == "*"}
    assert results == {("a-bad", "stopped"), ("b-good", "ok")}  # the stop is on record for binlake status
