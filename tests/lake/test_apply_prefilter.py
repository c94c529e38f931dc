"""The apply job's SQL cut of silver to the touched keys (``_integer_key_prefilter``): for tables keyed by integer
columns it keeps exactly the rows whose key the batch touches (of this table, not another's), composite keys
included; any other key keeps silver whole. The expected ids are written out by hand."""

from __future__ import annotations

import pytest

from binlake.lake.apply import _integer_key_prefilter

pytestmark = [pytest.mark.spark, pytest.mark.slow]

TOUCHED = [("shop", "orders", "[3]"), ("shop", "orders", "[7]"), ("shop", "orders", "[3]"),
           ("shop", "other", "[5]"), ("shop", "orders", "[9223372036854775807]"),
           ("shop", "lines", "[2,1]"), ("shop", "lines", "[1,2]")]


def test_integer_keys_are_cut_to_the_touched_ones(spark):
    touched = spark.createDataFrame(TOUCHED, "db string, table_name string, row_key string")
    orders = spark.createDataFrame([(i, f"n{i}") for i in (1, 3, 5, 7, 9223372036854775807)], "id bigint, name string")
    kept = _integer_key_prefilter(orders, {"id": "bigint", "name": "string"}, ["id"], touched, "shop", "orders")
    assert sorted(r["id"] for r in kept.collect()) == [3, 7, 9223372036854775807]

    lines = spark.createDataFrame([(1, 1), (1, 2), (2, 1), (2, 2)], "o int, n smallint")
    kept = _integer_key_prefilter(lines, {"o": "int", "n": "smallint"}, ["o", "n"], touched, "shop", "lines")
    assert sorted((r["o"], r["n"]) for r in kept.collect()) == [(1, 2), (2, 1)]


def test_other_keys_keep_silver_whole(spark):
    touched = spark.createDataFrame(TOUCHED, "db string, table_name string, row_key string")
    names = spark.createDataFrame([("a", 1), ("b", 2)], "code string, v int")
    assert _integer_key_prefilter(names, {"code": "string", "v": "int"}, ["code"], touched, "shop", "orders") is names
    assert _integer_key_prefilter(names, {"code": "string", "v": "int"}, None, touched, "shop", "orders") is names
    mixed = {"code": "string", "v": "int"}
    assert _integer_key_prefilter(names, mixed, ["v", "code"], touched, "shop", "orders") is names
