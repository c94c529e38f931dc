"""The apply job's cut of silver to the touched keys (``_key_prefilter``) before whole rows are converted: it keeps
exactly the rows whose primary key the batch touches (of this table, not another's): integer keys, composite ones
included, in SQL; string, binary (UUID), date and decimal keys by their row keys (from ``KEY_CUT_MIN_ROWS``
silver rows on); a table without a primary key stays whole. The touched keys and expected rows are written out by
hand, as bronze spells the keys."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from binlake.lake.apply.silver_keys import KEY_CUT_MIN_ROWS, _key_prefilter
from binlake.lake.driver_read import table_rows
from binlake.lake.key_ranges import KEY_RANGE_MIN_ROWS

pytestmark = [pytest.mark.spark, pytest.mark.slow]

TOUCHED = [
    ("shop", "orders", "[3]"),
    ("shop", "orders", "[7]"),
    ("shop", "orders", "[3]"),
    ("shop", "other", "[5]"),
    ("shop", "orders", "[9223372036854775807]"),
    ("shop", "lines", "[2,1]"),
    ("shop", "lines", "[1,2]"),
    ("shop", "codes", '["b"]'),
    ("shop", "codes", '["caf\u00e9 \\"x\\""]'),
    ("shop", "other", '["a"]'),
    ("shop", "uuids", '[{"hex":"00ff"}]'),
    ("shop", "days", '["2024-03-01",2]'),
    ("shop", "prices", '["12.50"]'),
]


def touched_frame(spark):
    return spark.createDataFrame(TOUCHED, "db string, table_name string, row_key string")


def test_integer_keys_are_cut_to_the_touched_ones(spark):
    touched = touched_frame(spark)
    orders = spark.createDataFrame([(i, f"n{i}") for i in (1, 3, 5, 7, 9223372036854775807)], "id bigint, name string")
    kept = _key_prefilter(orders, {"id": "bigint", "name": "string"}, {}, ["id"], touched, "shop", "orders")
    assert sorted(r["id"] for r in kept.collect()) == [3, 7, 9223372036854775807]

    lines = spark.createDataFrame([(1, 1), (1, 2), (2, 1), (2, 2)], "o int, n smallint")
    kept = _key_prefilter(lines, {"o": "int", "n": "smallint"}, {}, ["o", "n"], touched, "shop", "lines")
    assert sorted((r["o"], r["n"]) for r in kept.collect()) == [(1, 2), (2, 1)]

    # a large table is read bounded by the touched keys' range first (its files outside are skipped): same rows
    for size in (KEY_RANGE_MIN_ROWS - 1, KEY_RANGE_MIN_ROWS):
        kept = _key_prefilter(orders, {"id": "bigint", "name": "string"}, {}, ["id"], touched, "shop", "orders", size)
        assert sorted(r["id"] for r in kept.collect()) == [3, 7, 9223372036854775807]
        plan = kept._jdf.queryExecution().analyzed().toString()
        assert (">= cast(3 as bigint)" in plan) == (size == KEY_RANGE_MIN_ROWS), plan
        kept = _key_prefilter(lines, {"o": "int", "n": "smallint"}, {}, ["o", "n"], touched, "shop", "lines", size)
        assert sorted((r["o"], r["n"]) for r in kept.collect()) == [(1, 2), (2, 1)]


def test_other_keys_are_cut_by_their_row_keys(spark):
    touched = touched_frame(spark)
    codes = spark.createDataFrame([("a", 1), ("b", 2), ('caf\u00e9 "x"', 3), ("caf\u00e9", 4)], "code string, v int")
    kept = _key_prefilter(codes, {"code": "string", "v": "int"}, {}, ["code"], touched, "shop", "codes")
    assert sorted(r["v"] for r in kept.collect()) == [2, 3]

    uuids = spark.createDataFrame([(bytes([0, 255]), 1), (bytes([0, 254]), 2)], "u binary, v int")
    kept = _key_prefilter(uuids, {"u": "binary", "v": "int"}, {}, ["u"], touched, "shop", "uuids")
    assert [r["v"] for r in kept.collect()] == [1]

    days = spark.createDataFrame(
        [(dt.date(2024, 3, 1), 1), (dt.date(2024, 3, 1), 2), (dt.date(2024, 3, 2), 2)], "d date, n int"
    )
    kept = _key_prefilter(days, {"d": "date", "n": "int"}, {}, ["d", "n"], touched, "shop", "days")
    assert [(r["d"], r["n"]) for r in kept.collect()] == [(dt.date(2024, 3, 1), 2)]

    prices = spark.createDataFrame([(Decimal("12.50"), 1), (Decimal("12.51"), 2)], "p decimal(10,2), v int")
    kept = _key_prefilter(prices, {"p": "decimal(10,2)", "v": "int"}, {}, ["p"], touched, "shop", "prices")
    assert [r["v"] for r in kept.collect()] == [1]

    # a table smaller than the cut's own cost is converted whole; from the threshold on it is cut
    kinds = {"code": "string", "v": "int"}
    small = KEY_CUT_MIN_ROWS - 1
    assert _key_prefilter(codes, kinds, {}, ["code"], touched, "shop", "codes", small) is codes
    kept = _key_prefilter(codes, kinds, {}, ["code"], touched, "shop", "codes", KEY_CUT_MIN_ROWS)
    assert sorted(r["v"] for r in kept.collect()) == [2, 3]


def test_a_silver_tables_size_comes_from_its_delta_log(tmp_path):
    import pyarrow as pa
    from deltalake import write_deltalake

    path = str(tmp_path / "t")
    for n in (3, 4):
        write_deltalake(path, pa.table({"id": list(range(n))}), mode="append")
    assert table_rows(path) == 7


def test_a_table_without_a_primary_key_stays_whole(spark):
    names = spark.createDataFrame([("a", 1), ("b", 2)], "code string, v int")
    kinds = {"code": "string", "v": "int"}
    assert _key_prefilter(names, kinds, {}, None, touched_frame(spark), "shop", "codes") is names
