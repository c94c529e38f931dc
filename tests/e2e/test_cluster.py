"""The Spark jobs on a real standalone cluster (a master and two workers on 127.0.0.1), submitted with
``spark-submit --master spark://...`` exactly as the DAG's SparkSubmitOperator does: multi-day generated data and
the real MariaDB workload load into silver equal to their independent truths, executors run on both workers, and
the jobs find delta-spark's jars by themselves (the spark engine is what they use)."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest

from binlake.generate.config import GenerateConfig
from binlake.generate.run import generate
from tests.e2e.test_generator_e2e import assert_equals_truth
from tests.spark_cluster import spark_cluster  # noqa: F401  (pytest fixture)

pytestmark = [pytest.mark.spark, pytest.mark.slow]

START = dt.date(2024, 3, 1)


def submit(cluster, job: str, *args: str) -> dict:
    done = cluster.submit(f"spark_jobs/{job}.py", *args)
    assert done.returncode == 0, f"{job}: {done.stderr[-4000:]}"
    report = json.loads([line for line in done.stdout.splitlines() if line.startswith("{")][-1])
    return {"report": report, "workers": cluster.workers_used(done)}


def load_day(cluster, landing: Path, lake: Path, source: str, end: dt.datetime, sdi: Path | None = None) -> dict:
    common = ["--lake", str(lake), "--source", source, "--run-id", end.date().isoformat(), "--end", end.isoformat()]
    if sdi is not None:
        submit(cluster, "snapshot_sdi", "--lake", str(lake), "--sdi", str(sdi), "--seen-at", end.isoformat())
    ingest = submit(cluster, "ingest_binlogs", "--landing", str(landing), *common)
    apply = submit(cluster, "apply_changes", *common)
    return {"ingest": ingest, "apply": apply}


def test_generated_days_on_a_two_worker_cluster_equal_the_truth(spark_cluster, tmp_path: Path) -> None:  # noqa: F811
    out = tmp_path / "gen"
    generate(out, GenerateConfig(seed=13, days=2, scale=0.004, start_date=START, max_binlog_size=96 * 1024))
    manifest = json.loads((out / "manifest.json").read_text())
    lake = tmp_path / "lake"
    for i in range(2):
        day = START + dt.timedelta(days=i)
        end = dt.datetime.combine(day + dt.timedelta(days=1), dt.time(), dt.timezone.utc)
        done = load_day(spark_cluster, out / "landing", lake, manifest["source"], end, out / "sdi")
        assert done["apply"]["report"]["changes"] > 0
        if i == 0:  # every landed file is a task: the first ingest spreads them over both workers
            assert done["ingest"]["report"]["files"] > 2 and done["ingest"]["workers"] == {0, 1}
        assert done["apply"]["workers"] == {0, 1}
        assert_equals_truth(out, lake, day.isoformat())
    # the jobs wrote with delta-spark (its commits name the engine), not the embedded engine
    log = (lake / "silver" / "shop__orders" / "_delta_log" / "00000000000000000000.json").read_text()
    assert "Apache-Spark" in log and "Delta-Lake" in log


@pytest.mark.mariadb
def test_mariadb_workload_on_a_two_worker_cluster_equals_select(spark_cluster, tmp_path: Path) -> None:  # noqa: F811
    from tests.binlog.mariadb.oracle import run_on_fresh_server
    from tests.e2e.test_mariadb_e2e import assert_silver_equals_select
    from tests.mariadb_server import BinlogSettings, require_mariadb

    require_mariadb()
    run = run_on_fresh_server(tmp_path / "server", BinlogSettings())
    landing = tmp_path / "landing" / "mariadb-1"
    landing.mkdir(parents=True)
    for f in run.files:
        shutil.copy(f, landing / f.name)
    lake = tmp_path / "lake"
    done = load_day(
        spark_cluster, tmp_path / "landing", lake, "mariadb-1", dt.datetime(2100, 1, 1, tzinfo=dt.timezone.utc)
    )
    assert done["ingest"]["report"]["files"] == len(run.files)
    assert_silver_equals_select(lake, run.select)
