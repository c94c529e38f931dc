"""``binlake status`` reads without Spark (:mod:`binlake.lake.driver_read`): on tables the spark engine wrote with
Delta column mapping (name mode) and with deletion vectors, its live row counts equal Spark's own
(:func:`binlake.lake.silver.live_row_count` over delta-spark's read), where delta-rs's plain pyarrow dataset
gives NULL columns (column mapping) or refuses the table (deletion vectors)."""

from __future__ import annotations

from pathlib import Path

import pytest

from binlake.lake import driver_read
from binlake.lake.delta.spark import SparkEngine
from binlake.lake.status import live_rows

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROWS = [
    (i, f"n{i}", "delete" if i % 7 == 0 else ("update" if i % 3 == 0 else "insert"), (i % 4) or None)
    for i in range(200)
]
MAPPED = "`my id` long, `na,me` string, _binlake_op string, _binlake_count long"  # names only column mapping allows
PLAIN = "my_id long, name string, _binlake_op string, _binlake_count long"


def _spark_live(spark, path: Path) -> int:
    from binlake.lake.silver import live_row_count

    df = spark.read.format("delta").load(str(path))
    return df.agg(live_row_count(df.columns).alias("n")).first()["n"]


def _write(spark, path: Path, **options: str) -> None:
    schema = MAPPED if "delta.columnMapping.mode" in options else PLAIN
    writer = spark.createDataFrame(ROWS, schema).coalesce(1).write.format("delta")
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.save(str(path))


def test_column_mapping_and_deletion_vectors_count_as_spark_does(spark, tmp_path: Path) -> None:
    from delta.tables import DeltaTable

    cmap, dv, both = tmp_path / "cmap", tmp_path / "dv", tmp_path / "both"
    _write(spark, cmap, **{"delta.columnMapping.mode": "name"})
    spark.sql(f"ALTER TABLE delta.`{cmap}` RENAME COLUMN `na,me` TO nm")
    _write(spark, dv, **{"delta.enableDeletionVectors": "true"})
    _write(spark, both, **{"delta.enableDeletionVectors": "true", "delta.columnMapping.mode": "name"})
    DeltaTable.forPath(spark, str(dv)).delete("my_id < 50")
    DeltaTable.forPath(spark, str(both)).delete("`my id` < 50")
    engine = SparkEngine(spark)
    for path in (cmap, dv, both):
        table = driver_read.open_table(str(path))
        assert not driver_read.is_plain(table)
        assert live_rows(str(path)) == _spark_live(spark, path), path
        # the validation's scan: delta-spark's own read here, not the listed files (NULL or deleted rows)
        scanned, read = engine.scan(spark, str(path)), spark.read.format("delta").load(str(path))
        assert sorted(scanned.collect()) == sorted(read.collect()) and scanned.columns == read.columns, path
    # what a plain pyarrow read would have counted: NULL op and count columns, every row "live" once
    assert live_rows(str(cmap)) != len(ROWS)
    rows = driver_read.read(str(cmap), ["my id", "nm"], driver_read.field("my id") < 3)
    assert rows == [{"my id": 0, "nm": "n0"}, {"my id": 1, "nm": "n1"}, {"my id": 2, "nm": "n2"}]


def test_plain_table_and_missing_table(spark, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    _write(spark, plain)
    assert driver_read.is_plain(driver_read.open_table(str(plain)))
    assert live_rows(str(plain)) == _spark_live(spark, plain)
    assert live_rows(str(tmp_path / "none")) is None


def test_the_spark_engine_reads_timestamps_on_the_driver_as_its_collect_gives_them(spark, tmp_path: Path) -> None:
    """``SparkEngine.read_rows`` of a timestamp column (``meta.schema_registry``'s, ``meta.run_metrics``'):
    delta-rs on the driver, naive UTC datetimes equal to delta-spark's own read, with no Spark job."""
    import datetime as dt

    path = tmp_path / "times"
    rows = [(1, dt.datetime(2024, 3, 1, 23, 59, 59, 999999)), (2, dt.datetime(1970, 1, 1)), (3, None)]
    spark.createDataFrame(rows, "id long, at timestamp").write.format("delta").save(str(path))
    tracker = spark.sparkContext.statusTracker()
    jobs = set(tracker.getJobIdsForGroup(None))
    got = SparkEngine(spark).read_rows(spark, str(path), ("id", "at"))
    assert set(tracker.getJobIdsForGroup(None)) == jobs  # read on the driver
    assert sorted(got, key=lambda r: r["id"]) == [{"id": i, "at": at} for i, at in rows]
    assert sorted(tuple(r) for r in spark.read.format("delta").load(str(path)).collect()) == sorted(
        rows, key=lambda r: r[0]
    )
