"""``binlake.lake.python_daemon``: local sessions fork their Python workers from a daemon that puts Spark's
pyspark and py4j zips last on the path, so workers import the installed (compiled) packages."""

from __future__ import annotations

import pytest

from binlake.lake.python_daemon import _zips_last


def test_spark_zips_go_last_and_the_rest_keeps_its_order():
    path = [
        "/spark/python/lib/pyspark.zip",
        "/spark/python/lib/py4j-0.10.9.9-src.zip",
        "/usr/lib/python311.zip",
        "/venv/site-packages",
        "/work/libs",
    ]
    assert _zips_last(path) == [
        "/usr/lib/python311.zip",
        "/venv/site-packages",
        "/work/libs",
        "/spark/python/lib/pyspark.zip",
        "/spark/python/lib/py4j-0.10.9.9-src.zip",
    ]


def _worker_modules(batches):
    import sys

    import py4j
    import pyarrow as pa
    import pyspark

    for _ in batches:
        pass
    yield pa.RecordBatch.from_pydict({"path": [f"{pyspark.__file__}|{py4j.__file__}|{sys.path[-1]}"]})


@pytest.mark.spark
@pytest.mark.slow
def test_a_local_sessions_workers_import_the_installed_pyspark(spark):
    (row,) = spark.range(1, numPartitions=1).mapInArrow(_worker_modules, "path string").collect()
    pyspark_file, py4j_file, last = row["path"].split("|")
    assert ".zip" not in pyspark_file and pyspark_file.endswith("__init__.py")
    assert ".zip" not in py4j_file
    assert last.endswith(".zip")  # Spark's zips are still there, last
