"""Timestamps of the lake's meta tables mean UTC on a machine whatever its time zone: PySpark converts them with
the process's local time (``binlake.lake.session.utc_python``). Run in a process started in New York time."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from binlake.generate.config import GenerateConfig
from binlake.generate.run import generate

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SCRIPT = """\
import datetime as dt, json, sys, time
from binlake.lake.delta import engine_for
from binlake.lake.layout import LakeLayout
from binlake.lake.registry import registry_rows, snapshot_sdi_job
from binlake.lake.session import build_session
from binlake.quality.results import DQ_RESULTS_SCHEMA, ResultRow

sdi, lake, *snapshots = sys.argv[1:]
zone = time.strftime("%Z")  # before the session
spark = build_session("tz")
out = {"zone": zone}
for name in ("spark", "rust"):
    layout, engine = LakeLayout(f"{lake}/{name}"), engine_for(spark, name)
    for at in snapshots:  # the second snapshot adds a version: the registry is read and written again
        snapshot_sdi_job(spark, engine, layout, [sdi], dt.datetime.fromisoformat(at))
    out[name] = sorted(
        [r["db"], r["table_name"], r["version"], r["first_seen"].isoformat(), r["last_seen"].isoformat()]
        for r in registry_rows(spark, engine, layout)
    )
naive = dt.datetime(2024, 3, 2, 1, 2, 3)
[row] = spark.createDataFrame([(naive,)], "t timestamp").selectExpr("unix_micros(t) AS us", "t").collect()
out["round_trip"] = [row["us"], row["t"].isoformat()]
print("OUT " + json.dumps(out))
"""


def test_registry_times_are_utc_on_a_machine_in_new_york(tmp_path: Path) -> None:
    generate(tmp_path / "gen", GenerateConfig(days=3, scale=0.001))  # ADD COLUMN on day 2
    first, second = dt.datetime(2024, 3, 2), dt.datetime(2024, 3, 3)  # the ends of days 1 and 2 (UTC)
    script = tmp_path / "tz.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_GATEWAY_PORT",)}
    env.update(TZ="America/New_York", SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)
    cmd = [sys.executable, str(script), str(tmp_path / "gen" / "sdi"), str(tmp_path / "lake")]
    done = subprocess.run([*cmd, first.isoformat(), second.isoformat()], capture_output=True, text=True, env=env)
    lines = [line[4:] for line in done.stdout.splitlines() if line.startswith("OUT ")]
    assert lines, done.stderr[-3000:]
    out = json.loads(lines[0])
    assert out["zone"] in ("EST", "EDT")  # the process did start in New York time
    spark_rows, rust_rows = out["spark"], out["rust"]
    assert spark_rows == rust_rows
    versions = {(db, table, v): (seen, last) for db, table, v, seen, last in spark_rows}
    assert ("shop", "customers", 2) in versions  # day 2's ADD COLUMN: the registry was rewritten
    assert versions["shop", "customers", 1] == (first.isoformat(), first.isoformat())
    assert versions["shop", "customers", 2] == (second.isoformat(), second.isoformat())
    assert {f for f, _ in versions.values()} == {first.isoformat(), second.isoformat()}
    # a naive datetime written through Spark means UTC, and comes back as written
    assert out["round_trip"] == [1709341323000000, "2024-03-02T01:02:03"]
