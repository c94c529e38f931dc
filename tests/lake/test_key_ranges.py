"""Reads of a large table bounded by the batch's integer key range (binlake.lake.key_ranges): the spark engine's
MERGE skips the target files outside it and gives the same table; the fold's read of silver's touched keys gives
the same rows."""

from __future__ import annotations

import itertools
import json

import pytest

from binlake.lake.delta import engine_for
from binlake.lake.key_ranges import key_ranges

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SCHEMA = "id int, v string, _binlake_seq bigint, _binlake_op string"


def _target(engine, spark, path: str) -> None:
    """Four files of disjoint ranges of even ids: 0-98, 100-198, 200-298, 300-398."""
    for lo in range(0, 400, 100):
        rows = [(i, f"v{i}", 1, "insert") for i in range(lo, lo + 100, 2)]
        engine.append(path, spark.createDataFrame(rows, SCHEMA).coalesce(1))


def test_key_ranges_are_the_integer_keys_lowest_and_highest(spark) -> None:
    df = spark.createDataFrame([(5, "b", 7), (-3, "a", 9), (12, "c", None)], "k int, s string, n bigint")
    assert key_ranges(df, ["k", "s"]) == {"k": (-3, 12)}
    assert key_ranges(df, ["n"]) == {"n": (7, 9)}
    assert key_ranges(df.limit(0), ["k"]) == {}


def test_a_merge_into_a_large_table_skips_the_files_outside_the_batchs_keys(spark, tmp_path, monkeypatch) -> None:
    """The proof of the skip: the file of ids 300-398 is deleted from disk (its log entry kept); the bounded MERGE
    never opens it, the unbounded one fails on it. The bounded MERGE's table equals the unbounded one's on an
    intact copy."""
    import os

    import pyarrow as pa
    from deltalake import DeltaTable

    from binlake.lake.delta import spark as spark_engine

    engine = engine_for(spark, "spark")
    batch = [(150, "new", 2, "update"), (120, None, 2, "delete"), (198, "x", 2, "update"), (151, "n", 2, "insert")]
    outcome = {}
    for bounded, intact in ((False, True), (False, False), (True, False)):
        monkeypatch.setattr(spark_engine, "KEY_RANGE_MIN_ROWS", 200 if bounded else 10**9)
        path = str(tmp_path / f"t-{bounded}-{intact}")
        _target(engine, spark, path)
        if not intact:
            adds = pa.table(DeltaTable(path).get_add_actions(flatten=True)).to_pylist()
            [last] = [a["path"] for a in adds if a["min.id"] == 300]
            os.remove(os.path.join(path, last))
        try:
            result = engine.merge(path, spark.createDataFrame(batch, SCHEMA), ["id"], effective=True)
        except Exception as exc:  # noqa: BLE001 - the unbounded MERGE reads the missing file
            outcome[bounded, intact] = type(exc).__name__
            continue
        assert (result.inserted, result.updated, result.deleted) == (1, 2, 1)
        rows = spark.read.format("delta").load(path).where("id < 300").collect()
        outcome[bounded, intact] = sorted(tuple(r) for r in rows)
    assert isinstance(outcome[False, False], str)  # not skipped: the missing file was read
    assert outcome[True, False] == outcome[False, True] and len(outcome[True, False]) == 150
    assert json.dumps(sorted(r[0] for r in outcome[True, False] if r[1] in ("new", "x", "n"))) == "[150, 151, 198]"


def test_a_large_snapshot_table_seeds_one_key_range_per_file(spark, tmp_path, monkeypatch) -> None:
    """Snapshot files each spanning the whole key range (as Spark's packing of them by size makes the seed's
    tasks) become silver partitions of disjoint key ranges, so the bounded reads can skip files."""
    from dataclasses import dataclass

    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    from binlake.lake import key_ranges as kr
    from binlake.lake.seed import silver_frame

    @dataclass
    class Col:
        name: str

    @dataclass
    class Table:
        columns: tuple
        primary_key: tuple
        rows: int
        files: tuple

    files = []
    for i in range(4):
        ids = list(range(i, 4000, 4))  # every file spans 0-3999
        path = tmp_path / f"part-{i}.parquet"
        pq.write_table(pa.table({"id": pa.array(ids, pa.int32()), "v": [str(x) for x in ids]}), path)
        files.append(path)
    table = Table((Col("id"), Col("v")), ("id",), 4000, tuple(files))
    monkeypatch.setattr(kr, "KEY_RANGE_MIN_ROWS", 1000)
    df = silver_frame(spark, table, 41)
    ranges = sorted(
        tuple(r)
        for r in df.groupBy(F.spark_partition_id().alias("p")).agg(F.min("id"), F.max("id"), F.count("*")).collect()
    )
    assert len(ranges) == 4 and sum(r[3] for r in ranges) == 4000
    spans = sorted((r[1], r[2]) for r in ranges)
    assert all(a[1] < b[0] for a, b in itertools.pairwise(spans)), spans  # disjoint: one key range per partition
    assert {r["_binlake_seq"] for r in df.select("_binlake_seq").distinct().collect()} == {41}
