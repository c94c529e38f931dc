"""The fold in Spark SQL (``binlake.lake.fold_sql``) against the Python fold it stands in for: the folded batch
of generated workloads (FULL images: most keys fold in SQL; MINIMAL images: the keys whose last change is a
partial image, and the dependent tables, stay in Python) is the same with the SQL fold as without it (every
key's state, the counters, the zero or invalid dates counted per column); and the SQL test for a zero or
invalid date is exactly ``invalid_temporal``'s."""

from __future__ import annotations

import datetime as dt
import itertools
import json
import re

import pytest

from binlake.binlog.silver_types import invalid_temporal
from binlake.generate.config import GenerateConfig
from binlake.generate.run import generate
from binlake.lake import fold_sql
from binlake.lake.apply import fold
from binlake.lake.apply.fold import count_folded, fold_batch
from binlake.lake.apply.scan import _scan
from binlake.lake.delta import engine_for
from binlake.lake.layout import LakeLayout
from binlake.pipeline.bronze import BRONZE_SCHEMA
from tests.lake.test_apply_fold import bronze

pytestmark = [pytest.mark.spark]


_SCRATCH = itertools.count()
OBSERVED: list = []  # the counts folds all in SQL observed (``_folded``)


def _folded(spark, tmp_path, rows, info, scratch=None) -> tuple[dict, dict]:
    """(db, table, key) -> state, and the counters, of ``fold_batch`` over the bronze ``rows`` (staged in
    ``scratch``, else a new folder)."""
    from pyspark.sql.types import StructType

    schema = StructType.fromDDL(", ".join(f"`{n}` {t}" for n, t, _ in BRONZE_SCHEMA))
    batch = spark.createDataFrame([tuple(r[n] for n, _, _ in BRONZE_SCHEMA) for r in rows], schema)
    folded, observed = fold_batch(
        spark,
        engine_for(spark, "spark"),
        LakeLayout(str(tmp_path / "lake")),
        batch,
        info,
        False,
        False,
        source="s",
        after_seq=-1,
        scratch=scratch or tmp_path / f"fold-{next(_SCRATCH)}",  # the fold staged, as the job does
    )
    if observed is not None:  # a fold all in SQL counted while staging: what the count job counts
        assert observed == count_folded(folded, info)
        OBSERVED.append(observed)
    out = folded.collect()
    states, stats = {}, {}
    for r in out:
        if r["kind"] == "state":
            values = json.loads(r["values"])
            if r["op"] == "delete":  # its MERGE matches silver's row by the primary key (without one, every column)
                pk = info.tables[r["db"], r["table_name"]].pk
                values = {k: values.get(k) for k in pk} if pk else values
            states[r["db"], r["table_name"], r["row_key"]] = (
                values,
                r["seq"],
                r["op"],
                r["count"],
                r["base_count"],
            )
        elif r["kind"] == "stats":
            for k, v in json.loads(r["record"]).items():
                if v:
                    stats[k] = stats.get(k, 0) + v
    stats.pop("update_without_base", None)  # a Python-only counter, not reported
    return states, stats


def checked_scan(tmp_path, row_image):
    """(bronze rows of a generated workload, their scan as the footers of the native core's files hold it: it
    checked their images, so a table whose images lack nothing says so)."""

    from binlake.binlog.silver_types import to_arrow
    from binlake.lake.apply.scan_footer import FooterScan, _footer_scan
    from binlake.lake.ingest import BRONZE_COLUMNS_TYPES
    from binlake.pipeline.bronze import BRONZE_COLUMNS
    from binlake.pipeline.bronze_native import ImageFacts
    from binlake.pipeline.identity import landing_files
    from tests.pipeline.test_image_facts import native_bronze

    out = tmp_path / f"checked-{row_image}"
    generate(out, GenerateConfig(days=1, scale=0.01, row_image=row_image, max_binlog_size=200_000))
    rows, minimal, invalid = native_bronze(landing_files(str(out / "landing" / "shop-primary")))
    scan = FooterScan()
    for b in to_arrow(BRONZE_COLUMNS_TYPES, [tuple(r[c] for c in BRONZE_COLUMNS) for r in rows]).to_batches():
        scan.add(b)
    facts = ImageFacts(True, frozenset(minimal), frozenset(invalid))
    footer = _footer_scan({k.encode(): v.encode() for k, v in scan.metadata(facts).items()})
    return rows, footer.info.resolve_layouts(lambda ids: {})


@pytest.mark.parametrize("row_image", ["full", "minimal"])
@pytest.mark.parametrize("checked", [False, True], ids=["row-scan", "checked-images"])
def test_sql_fold_equals_python_fold(spark, tmp_path, monkeypatch, row_image, checked):
    """Also with the scan of footers whose images the native core checked: a table whose updates all have whole
    after images (FULL) folds without counting their members, and one without zero dates without reading them."""
    if checked:
        rows, info = checked_scan(tmp_path, row_image)
    else:
        rows = bronze(tmp_path, row_image)
        info = _scan(iter(rows)).resolve_layouts(lambda ids: {})
    tables = fold_sql.sql_tables(info, False, False)
    assert tables, "no table folds in SQL"
    assert any(t.temporals for t in tables.values()) != checked  # (no zero dates in the workload)
    assert all(t.width is None for t in tables.values()) == (checked and row_image == "full")
    with_sql = _folded(spark, tmp_path, rows, info)
    monkeypatch.setattr(fold, "sql_tables", lambda *a: {})
    without = _folded(spark, tmp_path, rows, info)
    assert len(without[0]) > 100
    # partitions by key as a big batch has them: the same fold, both ways
    monkeypatch.setattr(fold, "CHANGES_PER_PARTITION", max(1, info.changes // 7))
    assert fold.fold_partitions(spark, info.changes) >= 7
    assert _folded(spark, tmp_path, rows, info) == without
    monkeypatch.setattr(fold, "sql_tables", fold_sql.sql_tables)
    assert _folded(spark, tmp_path, rows, info) == without
    assert with_sql == without
    if row_image == "full":  # most keys did fold in SQL
        seen = []

        def split(records, tables, stage, partitions, every_table=False):
            python, in_sql, observed = fold_sql.split_fold(records, tables, stage, partitions, every_table)
            seen.append(in_sql)
            return python, in_sql, observed

        monkeypatch.setattr(fold, "sql_tables", fold_sql.sql_tables)
        monkeypatch.setattr(fold, "split_fold", split)
        assert _folded(spark, tmp_path, rows, info) == without
        assert seen[0].filter("kind = 'state'").count() > len(without[0]) // 4


def test_a_fold_all_in_sql_is_staged_once(spark, tmp_path, monkeypatch):
    """A batch whose every key folds in SQL (one table, whole-row inserts and deletes) takes its folded rows from
    the staged per-key aggregate alone (no second staging of the fold), and they equal the Python fold's."""
    from binlake.vocabulary import CHANGE_OPS

    rows = [
        r
        for r in bronze(tmp_path, "full")
        if r["op"] not in CHANGE_OPS or (r["table_name"] == "products" and r["op"] != "update")
    ]
    info = _scan(iter(rows)).resolve_layouts(lambda ids: {})
    assert set(info.tables) == {("shop", "products")} and set(fold_sql.sql_tables(info, False, False)) == set(
        info.tables
    )
    scratch = tmp_path / "fold-sql-only"
    OBSERVED.clear()
    with_sql = _folded(spark, tmp_path, rows, info, scratch)
    assert sorted(p.name for p in scratch.iterdir()) == ["sql-groups"]
    (counts,) = OBSERVED  # counted while staging, equal to the count job's (``_folded``)
    assert counts.ops["insert"] > 100 and counts.effective["shop", "products"] > 100
    monkeypatch.setattr(fold, "sql_tables", lambda *a: {})
    python_only = tmp_path / "fold-python"
    assert _folded(spark, tmp_path, rows, info, python_only) == with_sql
    assert sorted(p.name for p in python_only.iterdir()) == ["folded"]
    assert len(with_sql[0]) > 100


def test_a_batch_under_the_minimum_folds_in_python_alone(spark, tmp_path, monkeypatch):
    """At the default minimum (``fold_sql.min_changes``) a small batch whose tables could fold in SQL folds in
    Python alone: one staged pass, the same states and counters."""
    rows = bronze(tmp_path, "full")
    info = _scan(iter(rows)).resolve_layouts(lambda ids: {})
    assert fold_sql.sql_tables(info, False, False)  # (the suite's minimum: 0)
    with_sql = _folded(spark, tmp_path, rows, info, tmp_path / "with-sql")
    monkeypatch.delenv(fold_sql.MIN_CHANGES_VAR)
    assert 0 < info.changes < fold_sql.min_changes() == fold_sql.MIN_CHANGES
    assert fold_sql.sql_tables(info, False, False) == {}
    small = tmp_path / "small"
    assert _folded(spark, tmp_path, rows, info, small) == with_sql
    assert sorted(p.name for p in small.iterdir()) == ["folded"]
    assert sorted(p.name for p in (tmp_path / "with-sql").iterdir()) == ["folded", "sql-groups"]


VALUES = [
    "2024-03-01",
    "0000-00-00",
    "2024-02-30",
    "2024-02-29",
    "2023-02-29",
    "0000-01-01",
    "0001-01-01",
    "9999-12-31",
    "2024-13-01",
    "2024-00-10",
    "2024-03-00",
    "",
    "2024",
    "x024-03-01",
    "2024-03-01 00:00:00",
    "2024-03-01 23:59:59.999999",
    "2024-03-01 24:00:00",
    "2024-03-01 00:60:00",
    "2024-03-01 00:00:60",
    "2024-03-01 00:00:00.5",
    "2024-03-01 00:00:00.",
    "2024-03-01 00:00:00.1234567",
    "0000-00-00 00:00:00",
    "2024-02-30 10:00:00",
    "2024-03-01 1:00:00",
    "2024-03-01 00:00:00.-5",
    "2024-03-01 00:00",
    # the renderer's shapes, and texts close to them that Spark's own cast reads unlike Python (zones, signs, year 0)
    "2024-02-29",
    "2023-02-29",
    "0000-01-01",
    "0001-01-01",
    "9999-12-31",
    " 202-03-01",
    "+024-03-01",
    "2024-03-1 ",
    "2024-03-01T00:00:00",
    "2024-03-01 00:00:00Z",
    "2024-03-01 00:00:00.5Z",
    "2024-03-01 00:00:00.1+1",
    "2024-03-01 00:00:00.000000",
    "0000-01-01 00:00:00",
    "0001-01-01 00:00:00.000001",
    "9999-12-31 23:59:59.999999",
    "2024-03-01 00:00:0 ",
    "2024-03-01 0:00:00 ",
    "2024-03-01 00:00:00.12 ",
    "2024-03-01 00:00:00.123",
    "10000-01-01",  # a year past 9999 (a 15-bit DATE year): five digits
    "10000-01-01 00:00:00",
    "2024-03-01 00:00:00.123456 ",
    None,
]


def test_invalid_temporal_in_sql_is_pythons(spark):
    from pyspark.sql import functions as F

    frame = spark.createDataFrame([(v,) for v in VALUES], "v string")
    for kind in ("date", "timestamp_ntz", "timestamp"):
        got = dict(frame.select("v", fold_sql.invalid_temporal(F.col("v"), kind).alias("bad")).collect())
        assert got == {v: invalid_temporal(kind, v) for v in VALUES}, kind


def test_temporal_values_in_sql_are_pythons(spark):
    """Each text's typed value in SQL (``_typed_value``: dates and datetimes read at fixed offsets) is the Python
    conversion's, for the renderer's shapes and for the texts near them in ``VALUES``."""
    from pyspark.sql import functions as F

    from binlake.binlog.silver_types import to_silver

    def epoch(value):  # days of a date, microseconds of a datetime (PySpark can not collect year 1's first instant)
        if value is None:
            return None
        if isinstance(value, dt.datetime):
            return (value.replace(tzinfo=None) - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
        return (value - dt.date(1970, 1, 1)).days

    frame = spark.createDataFrame([(i, v) for i, v in enumerate(VALUES)], "i int, v string")
    for kind in ("date", "timestamp_ntz", "timestamp"):
        typed = fold_sql._typed_value(F.col("v"), kind)
        number = (
            F.unix_date(typed)
            if kind == "date"
            else F.unix_micros(F.to_utc_timestamp(typed.cast("timestamp_ntz"), "UTC"))
        )
        got = dict(frame.select("i", number.alias("t")).collect())
        assert got == {i: epoch(to_silver(kind)(v)) for i, v in enumerate(VALUES)}, kind


META = {
    "id": ["id", 3, 3, 0, False, None],
    "big": ["big", 8, 8, 0, True, None],
    "amount": ["amount", 246, 246, (12 << 8) | 2, False, None],
    "name": ["name", 15, 15, 80, False, 45],
    "note": ["note", 252, 252, 2, False, 45],
    "day": ["day", 10, 10, 0, False, None],
    "at": ["at", 18, 18, 6, False, None],
    "ts": ["ts", 17, 17, 3, False, None],
    "small": ["small", 2, 2, 0, True, None],
    "signed": ["signed", 8, 8, 0, False, None],
    "tiny": ["tiny", 1, 1, 0, False, None],
}
STATES = [
    {
        "id": 1,
        "big": 18446744073709551615,
        "amount": "-1234567890.25",
        "name": 'Zürich "quoted" \\ back',
        "note": "line\nbreak",
        "day": "2024-02-29",
        "at": "2024-03-01 23:59:59.999999",
        "ts": "1970-01-01 00:00:00.5",
        "small": 65535,
        "signed": -9223372036854775808,
        "tiny": -128,
    },
    {
        "id": 2,
        "big": 0,
        "amount": "0.00",
        "name": "",
        "note": None,
        "day": "0000-00-00",
        "at": "0000-00-00 00:00:00",
        "ts": "2024-02-30 10:00:00.000",
        "small": 0,
        "signed": 9223372036854775807,
        "tiny": 127,
    },
    {"id": 3, "name": "only some columns"},
    {
        "id": 4,
        "name": {"hex": "c328"},
        "note": 'text that did not decode: {"hex":"ff"}',
        "day": "0001-01-01",
        "at": "9999-12-31 23:59:59.000001",
        "ts": "2038-01-19 03:14:07.999",
    },
    {"id": -5, "amount": "99.9", "day": "2024-13-01", "at": "2024-03-01 00:00:00", "ts": "2024-03-01 00:00:00."},
]


def test_typed_states_in_sql_equal_the_python_conversion(spark):
    """The silver MERGE source of a primary-key table from SQL (``table_frame`` with the columns' bronze
    descriptions) holds exactly the rows of the Python conversion: integers (BIGINT's and TINYINT's bounds
    among them, read from the JSON as ``bigint``), BIGINT UNSIGNED, decimals, text with quotes and accents, text
    kept as ``{"hex"}`` (converted by Python), zero and invalid dates, missing columns, NULLs."""
    from binlake.lake.apply.fold import OUT_COLUMNS
    from binlake.lake.apply.write import table_frame
    from binlake.lake.silver import data_columns
    from binlake.pipeline.fold import compact_json

    cols = data_columns(META)
    assert fold_sql.sql_typable(cols, META)
    rows = [
        ("state", "d", "t", f"[{s['id']}]", compact_json(s), 10 + i, "update" if i else "insert", 1, 0, None, None)
        for i, s in enumerate(STATES)
    ]
    folded = spark.createDataFrame(rows, ", ".join(f"`{n}` {k}" for n, k in OUT_COLUMNS))
    sql = table_frame(folded, "state", ("d", "t"), cols, True, META)
    python = table_frame(folded, "state", ("d", "t"), cols, True)
    assert sql.schema == python.schema
    got, want = sorted(map(tuple, sql.collect())), sorted(map(tuple, python.collect()))
    assert len(want) == len(STATES) and got == want
    # one parser of each state's JSON text for all its columns (the plan repeats it, evaluated once), not one
    # per column: Spark's optimizer splits a from_json without options into one per member read
    plan = sql._jdf.queryExecution().optimizedPlan().toString()
    schemas = set(re.findall(r"from_json\((StructField\([^)]*\)(?:, StructField\([^)]*\))*)", plan))
    assert len(schemas) == 1 and all(f"StructField({name}," in next(iter(schemas)) for name, _ in cols), schemas
    # integer members read as numbers (Spark renders a number it reads as text through a JSON generator of its own)
    assert {n for n, k in re.findall(r"StructField\((\w+),(\w+),", next(iter(schemas))) if k == "LongType"} == {
        "id",
        "small",
        "signed",
        "tiny",
    }


def test_zero_and_invalid_dates_folded_in_sql_are_counted_as_in_python(spark, tmp_path, monkeypatch):
    """Zero or invalid dates in the images of the tables that fold in SQL (a third of the generated images, each of
    a different shape) are counted per column exactly as the Python fold counts them."""
    bad = ["0000-00-00 00:00:00", "2023-02-29 10:00:00", "2024-03-01 24:00:00", "2024-13-01 00:00:00.5", ""]
    rows, n = [], 0
    for r in bronze(tmp_path, "full"):
        if r["after"] and r["table_name"] in ("products", "orders"):
            image = json.loads(r["after"])
            for name in ("updated_at", "placed_at"):
                if image.get(name) is not None and n % 3 == 0:
                    image[name] = bad[n % len(bad)]
                n += 1
            r = {**r, "after": json.dumps(image, ensure_ascii=False, separators=(",", ":"))}
        rows.append(r)
    info = _scan(iter(rows)).resolve_layouts(lambda ids: {})
    assert set(fold_sql.sql_tables(info, False, False)) == {("shop", "products"), ("shop", "orders")}
    with_sql = _folded(spark, tmp_path, rows, info)
    monkeypatch.setattr(fold, "sql_tables", lambda *a: {})
    without = _folded(spark, tmp_path, rows, info)
    counted = {k: v for k, v in without[1].items() if fold_sql.invalid_temporal_column(k)}
    assert {fold_sql.invalid_temporal_column(k)[1] for k in counted} == {"products", "orders"}
    assert with_sql == without


def test_states_holding_undecoded_text_are_counted_and_typed_in_python(spark):
    """``count_folded`` counts per table the changing states whose values hold text that did not decode (kept as
    ``{"hex": ...}``; not text that merely reads like it); the MERGE source of an SQL-typed table converts exactly
    those in Python and, with none, reads the states once, without the Python conversion. Both give what the
    Python conversion gives."""
    from binlake.lake.apply.fold import OUT_COLUMNS, count_folded
    from binlake.lake.apply.scan import BatchInfo, TableInfo
    from binlake.lake.apply.write import table_frame
    from binlake.lake.silver import data_columns
    from binlake.pipeline.fold import compact_json

    table, cols = ("d", "t"), data_columns(META)
    info = BatchInfo(tables={table: TableInfo(pk=["id"])})
    hex_state = next(s for s in STATES if isinstance(s["name"], dict))
    for states in ([s for s in STATES if s is not hex_state], STATES):
        rows = [
            ("state", *table, f"[{s['id']}]", compact_json(s), 10 + i, "update", 1, 1, None, None)
            for i, s in enumerate(states)
        ]
        folded = spark.createDataFrame(rows, ", ".join(f"`{n}` {k}" for n, k in OUT_COLUMNS))
        counts = count_folded(folded, info)
        assert counts.odd[table] == (hex_state in states) and counts.effective[table] == len(states)
        sql = table_frame(folded, "state", table, cols, True, META, counts.odd[table] > 0)
        python = table_frame(folded, "state", table, cols, True)
        assert sorted(map(tuple, sql.collect())) == sorted(map(tuple, python.collect()))
        plan = sql._jdf.queryExecution().executedPlan().toString()
        assert ("MapInArrow" in plan) == (hex_state in states), plan


def test_counts_observed_while_staging_equal_the_count_job(spark, tmp_path, monkeypatch):
    """A fold all in SQL counts while its per-key aggregate is staged: deletes of rows silver holds (tombstones)
    and of keys it never held (no-ops), states holding undecoded text, zero dates of two tables, changes by op.
    The counts equal ``count_folded``'s over the folded rows, and no Spark job but the staging write's runs (the
    keys left to Python are observed too); a key left to Python (a MINIMAL after image), or more tables than
    ``MAX_OBSERVED_TABLES``, leaves the counting to ``count_folded``."""
    from binlake.lake.apply.fold import FoldCounts, count_folded
    from binlake.lake.apply.records import RECORD_COLUMNS
    from binlake.lake.apply.scan import BatchInfo, TableInfo

    def rec(table, key, base, seq, op, after=None, before=None):
        return (*table, key, base, 1, seq, 0, seq, op, "", before, after, None, 0, "f", None, None, None, None)

    t, u = ("d", "t"), ("d", "u")
    rows = [
        rec(t, "[1]", True, 1, "insert", '{"id":1,"at":"2024-01-01"}'),  # silver holds [1]: deleted
        rec(t, "[1]", False, 10, "delete", before='{"id":1,"at":"2024-01-01"}'),
        rec(t, "[2]", False, 11, "insert", '{"id":2,"at":"2024-01-02"}'),  # never held: a no-op delete
        rec(t, "[2]", False, 12, "delete", before='{"id":2,"at":"2024-01-02"}'),
        rec(t, "[3]", True, 2, "insert", '{"id":3,"at":"2024-01-03"}'),
        rec(t, "[3]", False, 13, "update", '{"id":3,"at":{"hex":"ff"}}', '{"id":3,"at":"2024-01-03"}'),
        rec(t, "[4]", False, 14, "insert", '{"id":4,"at":"0000-00-00"}'),
        rec(u, "[1]", False, 15, "insert", '{"id":1,"at":"2024-02-30"}'),
        rec(u, "[1]", False, 16, "update", '{"id":1,"at":"2024-02-28"}', '{"id":1,"at":"2024-02-30"}'),
        rec(u, "[2]", False, 17, "insert", '{"id":2,"at":"2024-13-01"}'),
    ]
    schema = ", ".join(f"`{n}` {k}" for n, k in RECORD_COLUMNS)
    tables = {t: fold_sql.SqlTable(2, [("at", "date")], ["id"]), u: fold_sql.SqlTable(2, [("at", "date")], ["id"])}
    info = BatchInfo(tables={t: TableInfo(pk=["id"]), u: TableInfo(pk=["id"])})
    stages = itertools.count()

    tracker, staging_jobs = spark.sparkContext.statusTracker(), set()

    def stage(df):
        folder = str(tmp_path / f"stage-{next(stages)}")
        before = set(tracker.getJobIdsForGroup("fold"))
        df.write.parquet(folder)
        staging_jobs.update(set(tracker.getJobIdsForGroup("fold")) - before)
        return spark.read.schema(df.schema).parquet(folder)

    spark.sparkContext.setJobGroup("fold", "the SQL fold")
    try:
        python, in_sql, observed = fold_sql.split_fold(spark.createDataFrame(rows, schema), tables, stage, 2, True)
        assert set(tracker.getJobIdsForGroup("fold")) == staging_jobs != set()
    finally:
        spark.sparkContext._jsc.clearJobGroup()
    assert python is None and observed is not None
    counts = FoldCounts.observed(observed.counts())
    assert counts == count_folded(in_sql, info)
    assert counts.deleted == 1 and counts.effective == {t: 3, u: 2} and counts.odd == {t: 1, u: 0}
    assert counts.ops == {"insert": 4, "update": 2, "delete": 2}
    assert counts.invalid_temporals == {t: {"at": 2}, u: {"at": 1}}  # t: a zero date, an object

    monkeypatch.setattr(fold_sql, "MAX_OBSERVED_TABLES", 1)
    python, many, observed = fold_sql.split_fold(spark.createDataFrame(rows, schema), tables, stage, 2, True)
    assert python is None and observed is None and count_folded(many, info) == counts
    monkeypatch.undo()

    minimal = rec(t, "[5]", False, 18, "update", '{"id":5}', '{"id":5,"at":"2024-01-05"}')
    python, _, observed = fold_sql.split_fold(spark.createDataFrame([*rows, minimal], schema), tables, stage, 2, True)
    assert python is not None and python.count() == 1 and observed is None


def test_a_deleted_keys_state_is_its_primary_key_as_the_before_image_holds_it(spark, tmp_path):
    """The SQL fold does not carry before images: a deleted key's state is built from its fold key (bronze's row
    key), each primary key value as the before image holds it (numbers past 64 bits, decimals as text, escaped
    and non-ASCII text, undecodable text's object, several columns in key order), and converts to the same
    silver key in SQL as the Python fold's state does in Python."""
    from binlake.lake.apply.records import RECORD_COLUMNS
    from binlake.lake.apply.write import table_frame
    from binlake.lake.silver import data_columns
    from binlake.pipeline.fold import compact_json, row_key

    one, two = ("d", "one"), ("d", "two")
    befores = {
        one: [{"id": 7, "v": 1}, {"id": 18446744073709551615, "v": 2}, {"id": 0, "v": 3}],
        two: [
            {"b": 'x"\\é\u0001', "a": "12.50", "v": 1},
            {"b": {"hex": "ff00"}, "a": "-0.00", "v": 2},
        ],
    }
    pks = {one: ["id"], two: ["b", "a"]}

    def rec(table, key, seq, op, after=None, before=None):
        return (*table, key, False, 1, seq, 0, seq, op, "", before, after, None, 0, "f", None, None, None, None)

    rows, seq = [], 0
    for table, images in befores.items():
        for image in images:
            key = row_key(image, pks[table])
            rows += [
                rec(table, key, seq + 1, "insert", compact_json(image)),
                rec(table, key, seq + 2, "delete", before=compact_json(image)),
            ]
            seq += 2
    tables = {t: fold_sql.SqlTable(None, [], pks[t]) for t in befores}
    schema = ", ".join(f"`{n}` {k}" for n, k in RECORD_COLUMNS)

    def stage(df):
        df.write.parquet(str(tmp_path / "stage"))
        return spark.read.schema(df.schema).parquet(str(tmp_path / "stage"))

    python, in_sql, _ = fold_sql.split_fold(spark.createDataFrame(rows, schema), tables, stage, 2, True)
    assert python is None
    states = {(r["table_name"], r["row_key"]): r["values"] for r in in_sql.filter("kind = 'state'").collect()}
    assert len(states) == 5
    for table, images in befores.items():
        for image in images:
            got = json.loads(states[table[1], row_key(image, pks[table])])
            assert got == {c: image[c] for c in pks[table]}
    # the SQL conversion of a state reads its key columns as the Python conversion does
    metas = {"id": ["id", 8, 8, 0, True, None], "v": ["v", 3, 3, 0, False, None]}  # BIGINT UNSIGNED, INT
    cols = data_columns(metas)
    folded = in_sql.filter("kind = 'state' AND table_name = 'one'")
    sql = table_frame(folded, "state", one, cols, True, metas, False)
    python_typed = table_frame(folded, "state", one, cols, True)
    assert sorted(map(tuple, sql.collect())) == sorted(map(tuple, python_typed.collect()))
    assert sorted(int(r["id"]) for r in sql.collect()) == [0, 7, 18446744073709551615]


def test_staged_counts_equal_the_count_job_and_give_way_to_it_for_a_stranger(spark, tmp_path):
    """A folded batch's counts observed while it is staged (quarantine records, history versions, changing states,
    undecoded text, tombstones, the stats rows' counters) equal ``count_folded``'s; a row of a table outside the
    batch makes them None, so that the count job counts instead."""
    from binlake.lake.apply.fold import OUT_COLUMNS, _StagedCounts, count_folded
    from binlake.lake.apply.scan import BatchInfo, TableInfo

    t, u = ("d", "t"), ("d", "u")
    info = BatchInfo(tables={t: TableInfo(pk=["id"]), u: TableInfo(pk=["id"])})
    rows = [
        ("state", *t, "[1]", '{"id":1}', 10, "update", 1, 1, None, None),
        ("state", *t, "[2]", '{"id":2,"n":{"hex":"ff"}}', 11, "insert", 1, 0, None, None),
        ("state", *t, "[3]", '{"id":3}', 12, "delete", 0, 1, None, None),  # a tombstone
        ("state", *u, "[4]", '{"id":4}', 13, "delete", 0, 0, None, None),  # a no-op
        ("history", *u, "[5]", '{"id":5}', 14, "update", 1, None, 5, None),
        ("quarantine", *u, None, None, 15, None, None, None, None, '{"reason":"x"}'),
        ("stats", None, None, None, None, None, None, None, None, None, '{"insert":1,"update":2,"delete":2}'),
        ("stats", None, None, None, None, None, None, None, None, None, '{"update":1}'),
    ]
    schema = ", ".join(f"`{n}` {k}" for n, k in OUT_COLUMNS)

    def staged_counts(rows):
        counting = _StagedCounts.of(info)
        counting.attach(spark.createDataFrame(rows, schema)).write.parquet(str(tmp_path / f"s{len(rows)}"))
        return counting.counts()

    counts = staged_counts(rows)
    assert counts == count_folded(spark.createDataFrame(rows, schema), info)
    assert counts.effective == {t: 3} and counts.odd == {t: 1} and counts.deleted == 1
    assert (
        counts.history == {u: 1}
        and counts.quarantine == {u: 1}
        and counts.ops == {"insert": 1, "update": 3, "delete": 2}
    )
    stranger = ("quarantine", "d", "v", None, None, 16, None, None, None, None, '{"reason":"y"}')
    assert staged_counts([*rows, stranger]) is None
