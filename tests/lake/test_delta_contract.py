"""The Delta engine contract on Spark DataFrames: the same assertions for the rust and spark engines.

The spark engine's runs need delta-spark's jars (scripts/setup.sh installs them) and fail without them. Expected
frames are literal values or hand-worked cases (tests/lake/cases.py).
"""

from __future__ import annotations

import datetime as dt
import json
import os
from decimal import Decimal

import pytest

from binlake.lake.delta import MergeResult, engine_for, spark_engine_unavailable_reason
from binlake.lake.errors import MergeSourceError
from tests.lake import cases

pytestmark = [pytest.mark.spark, pytest.mark.slow]

UTC = dt.timezone.utc
TYPES_DDL = (
    "id long, small int, amount decimal(20,6), at timestamp, local_at timestamp_ntz, raw binary, "
    "name string, day date, flag boolean, ratio double"
)
TYPES_ROWS = [
    (
        1,
        -7,
        Decimal("12345678901234.123456"),
        dt.datetime(2024, 2, 29, 23, 59, 59, 123456, tzinfo=UTC),
        dt.datetime(2024, 2, 29, 23, 59, 59, 123456),
        b"\x00\xff\x80",
        "naïve ✓",
        dt.date(2024, 2, 29),
        True,
        0.1,
    ),
    (2, None, None, None, None, None, None, None, None, None),
    (
        9223372036854775807,
        2147483647,
        Decimal("-0.000001"),
        dt.datetime(1970, 1, 1, tzinfo=UTC),
        dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
        b"",
        "",
        dt.date(1000, 1, 1),
        False,
        -1e308,
    ),
]
# The timestamps as text in the session's UTC zone: an independent check of the instants.
TYPES_TEXT = [
    (1, "2024-02-29 23:59:59.123456", "2024-02-29 23:59:59.123456"),
    (2, None, None),
    (9223372036854775807, "1970-01-01 00:00:00", "9999-12-31 23:59:59.999999"),
]


def frame(spark, rows, columns=cases.COLUMNS):
    return spark.createDataFrame(rows, cases.ddl(columns))


def collected(df) -> list[tuple]:
    return cases.sorted_rows(tuple(r) for r in df.collect())


def assert_scan_is_read(engine, spark, table_path) -> None:
    """``scan`` (files listed by delta-rs where they alone give the rows) gives what ``read`` gives."""
    scanned, read = engine.scan(spark, table_path), engine.read(spark, table_path)
    assert [(f.name, f.dataType) for f in scanned.schema] == [(f.name, f.dataType) for f in read.schema]
    assert collected(scanned) == collected(read)


def test_append_and_read_keep_exact_types(engine, spark, table_path):
    source = spark.createDataFrame(TYPES_ROWS, TYPES_DDL)
    assert engine.append(table_path, source) == 0
    back = engine.read(spark, table_path)
    assert [(f.name, f.dataType) for f in back.schema] == [(f.name, f.dataType) for f in source.schema]
    assert collected(back) == collected(source)
    as_text = back.selectExpr("id", "cast(at as string)", "cast(local_at as string)")
    assert collected(as_text) == TYPES_TEXT
    assert_scan_is_read(engine, spark, table_path)


def test_read_rows_filters_by_equal_values_and_by_tuples_of_them(engine, spark, table_path):
    engine.append(table_path, spark.createDataFrame(TYPES_ROWS, TYPES_DDL))
    assert engine.read_rows(spark, table_path, ("id",), {"name": ""}) == [{"id": 9223372036854775807}]
    got = engine.read_rows(spark, table_path, ("id", "small"), {"name": ("naïve ✓", "", "absent")})
    assert sorted(r["id"] for r in got) == [1, 9223372036854775807]
    assert engine.read_rows(spark, table_path, ("id",), {"id": (2, 3)}) == [{"id": 2}]
    assert engine.read_rows(spark, table_path, ("id",), {"id": (2, 1), "name": ("naïve ✓",)}) == [{"id": 1}]
    assert engine.read_rows(spark, str(table_path) + "-absent", ("id",), {"id": (1,)}) == []


def test_appends_make_versions_and_time_travel_reads_them(engine, spark, table_path):
    assert engine.append(table_path, frame(spark, cases.TARGET[:2])) == 0
    assert engine.append(table_path, frame(spark, cases.TARGET[2:])) == 1
    assert engine.version(table_path) == 1
    assert collected(engine.read(spark, table_path)) == cases.TARGET
    assert collected(engine.read(spark, table_path, version=0)) == cases.TARGET[:2]


def test_an_append_sets_the_properties_a_table_was_created_without(engine, spark, table_path):
    """Table properties come with the append that creates a table, or, for a table created without them (a lake
    of an earlier binlake), with the next append that asks for them: one commit, once."""
    from deltalake import DeltaTable

    props = {"delta.dataSkippingStatsColumns": "id,_binlake_seq"}
    assert engine.append(table_path, frame(spark, cases.TARGET[:2])) == 0
    assert "delta.dataSkippingStatsColumns" not in DeltaTable(table_path).metadata().configuration
    assert engine.append(table_path, frame(spark, cases.TARGET[2:3]), properties=props) == 2  # set, then appended
    assert engine.append(table_path, frame(spark, cases.TARGET[3:]), properties=props) == 3  # nothing to set
    table = DeltaTable(table_path)
    assert table.metadata().configuration["delta.dataSkippingStatsColumns"] == "id,_binlake_seq"
    assert collected(engine.read(spark, table_path)) == cases.TARGET
    log = [json.loads(line) for line in open(os.path.join(table_path, "_delta_log", f"{3:020d}.json"))]
    added = [json.loads(a["add"]["stats"]) for a in log if "add" in a]  # the last append's files, as logged
    assert added and all(set(st["minValues"]) == {"id", "_binlake_seq"} for st in added), added
    created = f"{table_path}-created"
    assert engine.append(created, frame(spark, cases.TARGET), properties=props) == 0
    assert DeltaTable(created).metadata().configuration == props


def test_merge_applies_a_batch_by_sequence_and_is_idempotent(engine, spark, table_path):
    engine.append(table_path, frame(spark, cases.TARGET))
    assert engine.merge(table_path, frame(spark, cases.BATCH), ["id"]) == MergeResult(1, **cases.BATCH_COUNTS)
    assert collected(engine.read(spark, table_path)) == cases.AFTER_BATCH
    again = engine.merge(table_path, frame(spark, cases.BATCH), ["id"])
    assert again == MergeResult(version=1, inserted=0, updated=0, deleted=0)
    assert collected(engine.read(spark, table_path)) == cases.AFTER_BATCH


def test_merge_into_an_absent_table_writes_the_batch_without_its_deletes(engine, spark, table_path):
    result = engine.merge(table_path, frame(spark, cases.BATCH), ["id"])
    live = [r for r in cases.BATCH if r[3] != "delete"]  # by hand: 1, 3 and 5 (2, 4 and 6 are deletes)
    assert result == MergeResult(version=0, inserted=3, updated=0, deleted=0)
    assert collected(engine.read(spark, table_path)) == live


def test_merge_with_tombstones(engine, spark, table_path):
    engine.append(table_path, frame(spark, cases.TARGET))
    engine.merge(table_path, frame(spark, cases.BATCH), ["id"], keep_tombstones=True)
    engine.merge(table_path, frame(spark, [(2, "late", 15, "insert")]), ["id"], keep_tombstones=True)
    assert collected(engine.read(spark, table_path)) == cases.AFTER_BATCH_TOMBSTONES


def test_merge_widens_the_table_for_new_columns(engine, spark, table_path):
    engine.append(table_path, frame(spark, cases.TARGET))
    engine.merge(table_path, frame(spark, cases.BATCH), ["id"])
    result = engine.merge(table_path, frame(spark, cases.WIDE_BATCH, cases.WIDE_COLUMNS), ["id"])
    assert result == MergeResult(version=3, inserted=1, updated=1, deleted=0)  # 2: ADD COLUMN, 3: MERGE
    back = engine.read(spark, table_path)
    assert back.columns == [name for name, _ in cases.WIDE_COLUMNS]
    assert collected(back) == cases.AFTER_WIDE_BATCH


def test_add_columns(engine, spark, table_path):
    from pyspark.sql.types import DecimalType, StringType, StructField, StructType

    engine.append(table_path, frame(spark, cases.TARGET))
    fields = StructType([StructField("v", StringType()), StructField("price", DecimalType(12, 2))])
    assert engine.add_columns(table_path, fields) == 1
    assert engine.add_columns(table_path, fields) == 1  # nothing left to add: no commit
    back = engine.read(spark, table_path)
    assert back.schema["price"].dataType == DecimalType(12, 2)
    assert collected(back) == [row + (None,) for row in cases.TARGET]


def test_overwrite_where_and_whole(engine, spark, table_path):
    engine.append(table_path, frame(spark, cases.TARGET))
    assert engine.overwrite(table_path, frame(spark, [(2, "B", 11, "update")]), where="id = 2") == 1
    assert collected(engine.read(spark, table_path)) == [cases.TARGET[0], (2, "B", 11, "update"), *cases.TARGET[2:]]
    engine.overwrite(table_path, frame(spark, [(1, "x")], cases.COLUMNS[:2]))
    assert collected(engine.read(spark, table_path)) == [(1, "x")]


def test_partitioned_table_reads_back_its_partition_column(engine, spark, table_path):
    engine.append(table_path, frame(spark, cases.TARGET), partition_by=["_binlake_op"])
    back = engine.read(spark, table_path)
    assert back.columns == [name for name, _ in cases.COLUMNS]
    assert collected(back) == cases.TARGET
    assert_scan_is_read(engine, spark, table_path)


def test_scan_above_a_bound_leaves_out_files_below_it_by_their_statistics(engine, spark, table_path):
    """``scan(above=...)`` may skip files whose statistics put the column at or below the bound (the apply's read
    of bronze after a checkpoint): the rows above it are all there, and the files of older appends are not read
    (the spark engine falls back to delta-spark only for tables delta-rs can not list)."""
    from pyspark.sql import functions as F

    engine.append(table_path, frame(spark, []))  # a table without rows first (meta.tombstones before a delete)
    assert collected(engine.scan(spark, table_path, above={"_binlake_seq": 0})) == []
    for first in (1, 11, 21):  # three appends: _binlake_seq 1-2, 11-12, 21-22, a file or more each
        rows = [(first + i, f"v{first + i}", first + i, "insert") for i in range(2)]
        engine.append(table_path, frame(spark, rows))
    scanned = engine.scan(spark, table_path, above={"_binlake_seq": 12})
    assert collected(scanned) == [(21, "v21", 21, "insert"), (22, "v22", 22, "insert")]  # no row of 1-12 read
    assert collected(engine.scan(spark, table_path, above={"_binlake_seq": 11}).where(F.col("_binlake_seq") > 11)) == [
        (12, "v12", 12, "insert"),
        (21, "v21", 21, "insert"),
        (22, "v22", 22, "insert"),
    ]
    whole = engine.scan(spark, table_path, above={"_binlake_seq": 0})
    assert collected(whole) == collected(engine.read(spark, table_path))
    nothing = engine.scan(spark, table_path, above={"_binlake_seq": 22})  # every file skipped
    assert collected(nothing) == [] and nothing.columns == [name for name, _ in cases.COLUMNS]


def test_awkward_column_names(engine, spark, table_path):
    columns = (("Key Col", "long"), ("we`ird", "string"), ("_binlake_seq", "long"), ("_binlake_op", "string"))
    engine.append(table_path, frame(spark, [(1, "a", 1, "insert"), (2, "b", 1, "insert")], columns))
    result = engine.merge(
        table_path, frame(spark, [(2, "B", 2, "update"), (3, "c", 2, "insert")], columns), ["Key Col"]
    )
    assert result == MergeResult(1, inserted=1, updated=1, deleted=0)
    back = engine.read(spark, table_path)
    assert back.columns == [name for name, _ in columns]
    assert collected(back) == [(1, "a", 1, "insert"), (2, "B", 2, "update"), (3, "c", 2, "insert")]
    assert_scan_is_read(engine, spark, table_path)  # the spark engine mapped these names: read, not listed


def test_a_batch_with_two_changes_for_one_key_is_refused(engine, spark, table_path):
    engine.append(table_path, frame(spark, cases.TARGET))
    with pytest.raises(MergeSourceError, match=r"2 changes for key \(id=9\)"):
        engine.merge(table_path, frame(spark, [(9, "x", 20, "insert"), (9, "y", 21, "update")]), ["id"])


def test_the_spark_engine_is_the_default_where_the_jars_are(spark):
    assert spark_engine_unavailable_reason(spark) is None
    assert engine_for(spark).name == "spark"
    assert engine_for(spark, "rust").name == "rust"


def test_a_session_without_the_jars_gets_the_rust_engine_and_a_clear_reason(tmp_path):
    """A separate Spark (own JVM, no spark-defaults.conf, no jars) next to the tests' session."""
    import subprocess
    import sys

    script = (
        "from pyspark.sql import SparkSession\n"
        "from binlake.lake.delta import engine_for, spark_engine_unavailable_reason\n"
        "s = SparkSession.builder.master('local[1]').config('spark.ui.enabled', 'false').getOrCreate()\n"
        "print('ENGINE', engine_for(s).name)\n"
        "print('REASON', spark_engine_unavailable_reason(s))\n"
        "try:\n    engine_for(s, 'spark')\nexcept Exception as e:\n    print('ERROR', type(e).__name__)\n"
    )
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("BINLAKE_DELTA_JARS", "PYSPARK_GATEWAY_PORT")}
    env.update(SPARK_CONF_DIR=str(conf_dir), SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    lines = dict(
        line.split(" ", 1) for line in out.stdout.splitlines() if line.startswith(("ENGINE ", "REASON ", "ERROR "))
    )
    assert lines.get("ENGINE") == "rust", out.stderr[-2000:]
    assert lines["ERROR"] == "DeltaEngineUnavailableError"
    assert "delta-spark's jars are absent" in lines["REASON"] and "scripts/setup.sh" in lines["REASON"]


def test_spark_engine_reads_what_the_rust_engine_wrote(spark, table_path):
    engine_for(spark, "rust").merge(table_path, frame(spark, cases.BATCH), ["id"])
    spark_engine = engine_for(spark, "spark")
    assert collected(spark_engine.read(spark, table_path)) == [
        r for r in cases.sorted_rows(cases.BATCH) if r[3] != "delete"
    ]


def test_spark_dialect_clauses_pick_the_expected_rows_without_delta(spark):
    """The spark engine's MERGE text, evaluated by plain Spark SQL over the target/source join: valid syntax, and
    the hand-worked outcome of cases.BATCH (runs without delta-spark's jars)."""
    from pyspark.sql import functions as F

    from binlake.lake.delta.plan import MergeSpec, merge_clauses, quote_spark

    clauses = merge_clauses(MergeSpec(("id",)), [name for name, _ in cases.COLUMNS], quote_spark)
    joined = (
        frame(spark, cases.BATCH).alias("s").join(frame(spark, cases.TARGET).alias("t"), F.expr(clauses.on), "left")
    )
    first_match = (
        F.when(F.col("t.id").isNull(), F.when(F.expr(clauses.insert_when), "insert"))
        .when(F.expr(clauses.delete_when), "delete")
        .when(F.expr(clauses.update_when), "update")
    )
    outcome = {r["id"]: r["action"] for r in joined.select("s.id", first_match.alias("action")).collect()}
    assert outcome == {1: "update", 2: "delete", 3: None, 4: None, 5: "insert", 6: None}
    assignments = dict(clauses.assignments)
    assert joined.where("s.id = 1").select(*[F.expr(e).alias(c) for c, e in assignments.items()]).first() == (
        1,
        "A",
        20,
        "update",
    )


def test_spark_engine_source_checks_run_without_delta(spark):
    """The spark engine's checks that need no Delta classes: one change per key, dropping deletes."""
    from binlake.lake.delta.plan import MergeSpec
    from binlake.lake.delta.spark import SparkEngine

    engine = SparkEngine(spark)
    with pytest.raises(MergeSourceError, match=r"2 changes for key \(id=9\)"):
        engine._check_unique("t", frame(spark, [(9, "x", 20, "insert"), (9, "y", 21, "update")]), ["id"])
    live = engine._without_deletes(frame(spark, cases.BATCH + [(8, "n", 1, None)]), MergeSpec(("id",)))
    assert sorted(r["id"] for r in live.collect()) == [1, 3, 5, 8]


def test_count_says_what_delete_would_delete(engine, spark, table_path):
    engine.append(table_path, spark.createDataFrame(TYPES_ROWS, TYPES_DDL))
    checks = [({"name": "naïve ✓"}, None, 1), ({}, ("id", 2), 2), ({"small": 2147483647}, ("id", 2), 0), ({}, None, 3)]
    for equal, at_most, n in checks:
        assert engine.count(table_path, equal, at_most) == n, (equal, at_most)
    assert engine.count(str(table_path) + "-absent") == 0
    assert engine.delete(table_path, {}, ("id", 1)) == 1
    assert engine.count(table_path, {}, ("id", 2)) == 1 and engine.count(table_path) == 2


def test_warming_readies_the_first_commit_once_and_leaves_nothing(engine, spark, tmp_path):
    """The spark engine's warming commits a throwaway table under its folder while the body runs (a JVM's first
    delta-spark commit loads and compiles its code), once per engine; neither engine leaves anything there."""
    import threading
    import time

    fresh = type(engine)(spark) if engine.name == "spark" else engine  # not yet warmed by another test
    folder = tmp_path / "staging" / "warming"
    log = folder / "table" / "_delta_log" / f"{0:020d}.json"
    with fresh.warming(folder):
        deadline = time.monotonic() + 120
        while engine.name == "spark" and not log.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert log.exists() == (engine.name == "spark")
    assert not folder.exists()
    with fresh.warming(tmp_path / "again"):  # once: no second thread
        assert not any(t.name == "binlake-delta-warming" for t in threading.enumerate())
    assert not (tmp_path / "again").exists()
