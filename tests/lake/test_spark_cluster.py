"""binlake's Delta writes on a real Spark standalone cluster (tests/spark_cluster.py: a master and two workers on
127.0.0.1): a job submitted with nothing but ``spark-submit --master spark://...`` gets delta-spark's jars, uses
the spark engine, and its executors run on both workers."""

from __future__ import annotations

import pytest

from tests.spark_cluster import spark_cluster  # noqa: F401  (pytest fixture)

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_a_submitted_job_writes_and_merges_delta_on_both_workers(spark_cluster, tmp_path):  # noqa: F811
    from deltalake import DeltaTable

    table = tmp_path / "table"
    done = spark_cluster.submit("tests/lake/cluster_delta_job.py", str(table))
    assert done.returncode == 0, spark_cluster.failure(done)
    lines = dict(
        line.split(" ", 1) for line in done.stdout.splitlines() if line.startswith(("ENGINE", "MASTER", "MERGE"))
    )
    assert lines == {"ENGINE": "spark", "MASTER": spark_cluster.master_url, "MERGE": "1 10 5 5"}

    assert spark_cluster.workers_used(done) == {0, 1}
    app = spark_cluster.app_id(done)
    for work_dir in spark_cluster.work_dirs:  # each executor fetched the driver's spark.jars
        assert list((work_dir / app).glob("*/delta-spark_*.jar")), f"no delta-spark jar under {work_dir / app}"

    rows = {r["id"]: r for r in DeltaTable(str(table)).to_pyarrow_table().to_pylist()}  # read by delta-rs
    assert len(rows) == 1005
    assert [i for i in range(990, 1000) if i in rows] == [991, 993, 995, 997, 999]
    assert rows[991] == {"id": 991, "v": "new-991", "_binlake_seq": 2, "_binlake_op": "update"}
    assert rows[1009]["v"] == "new-1009" and rows[5] == {"id": 5, "v": "5", "_binlake_seq": 1, "_binlake_op": "insert"}
