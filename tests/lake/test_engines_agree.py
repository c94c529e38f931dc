"""The two Delta engines make the same tables from the same input: the same writes return the same versions and
MERGE counts, and the tables hold the same rows under the same Delta types (read by each engine, and the rust
engine's table read by delta-spark too).

Each test runs one sequence of writes on both engines (``run_on_both``) and compares; the expected rows of the
sequences are also written out by hand, so both engines being wrong the same way fails too.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Callable

import pytest

from binlake.lake.delta import MergeResult, engine_for
from tests.lake import cases

pytestmark = [pytest.mark.spark, pytest.mark.slow]

UTC = dt.timezone.utc
KINDS_DDL = (
    "id long, amount decimal(38,10), price decimal(9,2), at timestamp, local_at timestamp_ntz, raw binary, "
    "name string, day date, small int, flag boolean, _binlake_seq long, _binlake_op string"
)
KINDS_BEFORE = [
    (
        1,
        Decimal("12345678901234567890123456.0123456789"),
        Decimal("-9999999.99"),
        dt.datetime(2024, 2, 29, 23, 59, 59, 123456, tzinfo=UTC),
        dt.datetime(2024, 2, 29, 23, 59, 59, 123456),
        b"\x00\xff\x80",
        "naïve ✓ 𝄞",
        dt.date(2024, 2, 29),
        -7,
        True,
        10,
        "insert",
    ),
    (2, None, None, None, None, None, None, None, None, None, 10, "insert"),
    (
        3,
        Decimal("0E-10"),
        Decimal("0.01"),
        dt.datetime(1970, 1, 1, tzinfo=UTC),
        dt.datetime(1, 1, 1),
        b"",
        "",
        dt.date(1000, 1, 1),
        2147483647,
        False,
        10,
        "insert",
    ),
]
KINDS_BATCH = [
    (
        1,
        None,
        Decimal("1.50"),
        None,
        dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
        None,
        None,
        None,
        None,
        None,
        20,
        "update",
    ),  # values to NULL
    (
        2,
        Decimal("-0.0000000001"),
        Decimal("2.00"),
        dt.datetime(2038, 1, 19, 3, 14, 8, tzinfo=UTC),
        None,
        b"\x01" * 300,
        "'quoted' \"text\"\n",
        dt.date(2024, 3, 1),
        0,
        True,
        20,
        "update",
    ),  # NULLs to values
    (3, None, None, None, None, None, None, None, None, None, 20, "delete"),
    (4, Decimal("1"), Decimal("3.00"), None, None, b"\x02", "new", None, None, None, 20, "insert"),
]
KINDS_AFTER = [KINDS_BATCH[0], KINDS_BATCH[1], KINDS_BATCH[3]]

ODD_COLUMNS = (
    ("Key Col", "long"),
    ("we`ird", "string"),
    ("dotted.name", "string"),
    ("ÜMLAUT", "string"),
    ("a,b;c{d}(e)=f", "int"),
    ("_binlake_seq", "long"),
    ("_binlake_op", "string"),
)
WIDE_COLUMNS = tuple((f"c{i:02d}", "string" if i % 2 else "long") for i in range(40))


def run_on_both(spark, tmp_path, steps: Callable) -> dict:
    """``steps(engine, path)`` on a fresh table per engine; the tables' rows/schemas and what the steps returned."""
    out = {}
    for name in ("rust", "spark"):
        engine = engine_for(spark, name)
        path = str(tmp_path / name)
        returned = steps(engine, path)
        back = engine.read(spark, path)
        out[name] = {
            "path": path,
            "returned": returned,
            "schema": [(f.name, f.dataType) for f in back.schema],
            "rows": rows(back),
        }
    assert out["rust"]["returned"] == out["spark"]["returned"]
    assert out["rust"]["schema"] == out["spark"]["schema"]
    assert out["rust"]["rows"] == out["spark"]["rows"]
    across = engine_for(spark, "spark").read(spark, out["rust"]["path"])  # delta-spark reads delta-rs's table
    assert [(f.name, f.dataType) for f in across.schema] == out["rust"]["schema"]
    assert rows(across) == out["rust"]["rows"]
    return out


def rows(df) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def test_exact_types_and_nulls_through_append_and_merge(spark, tmp_path):
    def steps(engine, path):
        return [
            engine.append(path, spark.createDataFrame(KINDS_BEFORE, KINDS_DDL)),
            engine.merge(path, spark.createDataFrame(KINDS_BATCH, KINDS_DDL), ["id"]),
        ]

    out = run_on_both(spark, tmp_path, steps)
    assert out["spark"]["returned"] == [0, MergeResult(1, inserted=1, updated=2, deleted=1)]
    assert out["spark"]["rows"] == rows(spark.createDataFrame(KINDS_AFTER, KINDS_DDL))
    assert out["spark"]["schema"] == [(f.name, f.dataType) for f in spark.createDataFrame([], KINDS_DDL).schema]


def test_cdc_sequence_with_deletes_widening_and_replace_where(spark, tmp_path):
    def frame(batch, columns=cases.COLUMNS):
        return spark.createDataFrame(batch, cases.ddl(columns))

    def steps(engine, path):
        return [
            engine.append(path, frame(cases.TARGET)),
            engine.merge(path, frame(cases.BATCH), ["id"]),
            engine.merge(path, frame(cases.BATCH), ["id"]),  # again: no change, no commit
            engine.merge(path, frame(cases.WIDE_BATCH, cases.WIDE_COLUMNS), ["id"]),
            engine.overwrite(path, frame([(3, "c3", 40, "update", "n")], cases.WIDE_COLUMNS), where="id = 3"),
        ]

    out = run_on_both(spark, tmp_path, steps)
    assert out["spark"]["returned"] == [
        0,
        MergeResult(1, **cases.BATCH_COUNTS),
        MergeResult(1, 0, 0, 0),
        MergeResult(3, inserted=1, updated=1, deleted=0),
        4,
    ]
    expected = [r if r[0] != 3 else (3, "c3", 40, "update", "n") for r in cases.AFTER_WIDE_BATCH]
    assert out["spark"]["rows"] == sorted(expected, key=repr)


def test_tombstones_are_kept_alike(spark, tmp_path):
    def steps(engine, path):
        engine.append(path, spark.createDataFrame(cases.TARGET, cases.ddl(cases.COLUMNS)))
        return engine.merge(
            path, spark.createDataFrame(cases.BATCH, cases.ddl(cases.COLUMNS)), ["id"], keep_tombstones=True
        )

    out = run_on_both(spark, tmp_path, steps)
    assert out["spark"]["rows"] == sorted(cases.AFTER_BATCH_TOMBSTONES, key=repr)


def test_odd_column_names(spark, tmp_path):
    ddl = cases.ddl(ODD_COLUMNS)

    def steps(engine, path):
        return [
            engine.append(path, spark.createDataFrame([(1, "a", "x", "ü", 1, 1, "insert")], ddl)),
            engine.merge(
                path,
                spark.createDataFrame(
                    [(1, "A", None, "Ü", -1, 2, "update"), (2, "b", "y", None, None, 2, "insert")], ddl
                ),
                ["Key Col"],
            ),
        ]

    out = run_on_both(spark, tmp_path, steps)
    assert [name for name, _ in out["spark"]["schema"]] == [name for name, _ in ODD_COLUMNS]
    assert out["spark"]["rows"] == [(1, "A", None, "Ü", -1, 2, "update"), (2, "b", "y", None, None, 2, "insert")]


def test_a_wide_table_widened_by_a_merge(spark, tmp_path):
    keyed = WIDE_COLUMNS + (("_binlake_seq", "long"), ("_binlake_op", "string"))
    wider = keyed + (("c40", "decimal(12,3)"), ("c41", "timestamp"))

    def row(i, seq, extra=()):
        return tuple(i if n % 2 == 0 else f"{i}-{n}" for n in range(40)) + (seq, "insert") + extra

    def steps(engine, path):
        return [
            engine.append(path, spark.createDataFrame([row(i, 1) for i in range(5)], cases.ddl(keyed))),
            engine.merge(
                path,
                spark.createDataFrame(
                    [row(2, 2, (Decimal("1.250"), dt.datetime(2024, 1, 1, tzinfo=UTC))), row(9, 2, (None, None))],
                    cases.ddl(wider),
                ),
                ["c00"],
            ),
        ]

    out = run_on_both(spark, tmp_path, steps)
    assert out["spark"]["returned"] == [0, MergeResult(2, inserted=1, updated=1, deleted=0)]
    assert len(out["spark"]["rows"]) == 6
    assert [name for name, _ in out["spark"]["schema"]] == [name for name, _ in wider]
