"""``binlake.lake.python_daemon``: local sessions fork their Python workers from a daemon that takes Spark's
pyspark and py4j zips and spark-core jar off the path when pyspark and py4j are installed (workers import the
installed, compiled packages; no zip directory is read again before each task), and whose workers freeze what
they imported after their first task."""

from __future__ import annotations

from pathlib import Path

import pytest

from binlake.lake.python_daemon import worker_path

SPARK_ENTRIES = [
    "/spark/python/lib/pyspark.zip",
    "/spark/python/lib/py4j-0.10.9.9-src.zip",
    "/spark/jars/spark-core_2.13-4.1.3.jar",
]


def _packages(root: Path, *names: str) -> str:
    for name in names:
        (root / name).mkdir(parents=True)
        (root / name / "__init__.py").write_text("")
    return str(root)


def test_spark_entries_leave_the_path_when_pyspark_and_py4j_are_installed(tmp_path):
    site = _packages(tmp_path / "site", "pyspark", "py4j")
    path = [SPARK_ENTRIES[0], SPARK_ENTRIES[1], "/usr/lib/python311.zip", site, SPARK_ENTRIES[2], "/work/libs"]
    assert worker_path(path) == ["/usr/lib/python311.zip", site, "/work/libs"]


@pytest.mark.parametrize("installed", [(), ("pyspark",), ("py4j",)])
def test_spark_entries_go_last_when_the_zips_are_all_there_is(tmp_path, installed):
    site = _packages(tmp_path / "site", *installed)
    path = [*SPARK_ENTRIES, "/usr/lib/python311.zip", site, "/work/libs"]
    assert worker_path(path) == ["/usr/lib/python311.zip", site, "/work/libs", *SPARK_ENTRIES]


def _worker_state(batches):
    import gc
    import os
    import sys

    import py4j
    import pyarrow as pa
    import pyspark

    for _ in batches:
        pass
    spark_entries = [p for p in sys.path if p.endswith((".jar", "pyspark.zip", "-src.zip"))]
    yield pa.RecordBatch.from_pylist(
        [
            {
                "pyspark": pyspark.__file__,
                "py4j": py4j.__file__,
                "spark_entries": len(spark_entries),
                "pid": os.getpid(),
                "frozen": gc.get_freeze_count(),
            }
        ]
    )


@pytest.mark.spark
@pytest.mark.slow
def test_a_local_sessions_workers_import_the_installed_pyspark_and_freeze_after_a_task(spark):
    schema = "pyspark string, py4j string, spark_entries long, pid long, frozen long"
    rows = []
    for _ in range(3):  # two cores: at most two workers, so later tasks run in workers that ran one before
        rows += spark.range(2, numPartitions=2).mapInArrow(_worker_state, schema).collect()
    for row in rows:
        assert ".zip" not in row["pyspark"] and row["pyspark"].endswith("__init__.py")
        assert ".zip" not in row["py4j"]
        assert row["spark_entries"] == 0
    seen: set[int] = set()
    for row in rows:
        if row["pid"] in seen:  # a worker's later task: its first task's imports are frozen
            assert row["frozen"] > 0
        seen.add(row["pid"])
    assert len(seen) < len(rows)
