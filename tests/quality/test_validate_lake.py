"""End to end on Spark: a clean generated multi-day load passes every suite; each injected defect trips exactly
the expectation meant for it; the summary and the Data Docs open in headless Chromium.

The lake is loaded by binlake's own pipeline (``binlake.lake.run.run_source``, what ``binlake run`` and the
DAG call), one run per generated day.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest

from binlake.lake.layout import LakeLayout
from binlake.quality import suites as S
from binlake.quality.errors import QualityError
from binlake.quality.runner import ValidationOptions, validate_lake
from tests.quality import browser

pytestmark = [pytest.mark.spark, pytest.mark.slow]

CUSTOMERS, ORDERS = S.silver_table_name("shop", "customers"), S.silver_table_name("shop", "orders")
# the suites that read each table a defect changes (the others see the clean lake's inputs and passed on them)
READERS = {
    "customers": {CUSTOMERS, S.RECONCILIATION},
    "orders": {ORDERS, S.RECONCILIATION},
    "bronze": {S.BRONZE_ORDER, S.BRONZE_SEQUENCE, S.BRONZE_OPS, S.RECONCILIATION, S.QUARANTINE},
    "quarantine": {S.QUARANTINE},
}


def run_of_day(date: str) -> str:
    return f"run-{date}"


@pytest.fixture(scope="module")
def clean(spark, tmp_path_factory) -> dict[str, Any]:
    """Three generated days loaded by the pipeline, one run each, then validated as of the last run."""
    import datetime as dt
    import json

    from binlake.generate.config import GenerateConfig
    from binlake.generate.run import generate
    from binlake.lake.delta import engine_for
    from binlake.lake.options import RunOptions
    from binlake.lake.run import run_source

    root = tmp_path_factory.mktemp("quality")
    gen, lake = root / "gen", root / "lake"
    generate(gen, GenerateConfig(days=3, scale=0.005, json_size=300))
    manifest = json.loads((gen / "manifest.json").read_text())
    engine = engine_for(spark, "rust")
    for day in manifest["days"]:
        end = dt.datetime.combine(dt.date.fromisoformat(day["date"]) + dt.timedelta(days=1), dt.time(), dt.timezone.utc)
        run_source(
            spark,
            engine,
            LakeLayout(str(lake)),
            str(gen / "landing" / manifest["source"]),
            RunOptions(manifest["source"], cutoff_us=int(end.timestamp()) * 1_000_000, run_id=run_of_day(day["date"])),
            [str(gen / "sdi")],
        )
    last_run = run_of_day(manifest["days"][-1]["date"])
    summary = validate_lake(spark, str(lake), last_run)
    return {"lake": lake, "summary": summary, "last_run": last_run, "source": manifest["source"]}


def test_clean_multi_day_load_passes_every_suite(clean, spark):
    summary = clean["summary"]
    assert summary.success, [r for r in summary.results if not r.success]
    # every file landed before the first run, which ingested them all: the last run's own bronze rows are none
    # (a named run counts its own rows, not all of bronze), which is no warning (a backfill, a quiet source)
    assert summary.failed_warnings == []
    assert dict(summary.facts)["Bronze rows of the run by operation"] == []
    tables = {S.silver_table_name("shop", t) for t in ("customers", "products", "orders", "audit_log")}
    assert {r.suite for r in summary.results} == tables | set(S.PIPELINE_SUITES)
    assert not summary.skipped
    # the generator's truth after three days reconciles with bronze's inserts - deletes, with real deletes
    recon = dict(summary.facts)["Reconciliation: silver live rows vs bronze inserts - deletes"]
    assert all(r["difference"] == 0 for r in recon) and len(recon) == 4
    assert sum(r["deletes"] for r in recon) > 0
    # one meta.dq_results row per expectation result
    from binlake.lake.delta import engine_for

    stored = engine_for(spark, "rust").read(spark, LakeLayout(str(clean["lake"])).meta("dq_results"))
    assert stored.where(stored.run_id == clean["last_run"]).count() == len(summary.results)
    assert Path(summary.report_path).is_file() and Path(summary.data_docs_path).is_file()


# ------------------------------------------------------------------------------------------------- defects


def _silver(lake: Path, table: str) -> str:
    return LakeLayout(str(lake)).silver("shop", table)


def _edit(spark, lake: Path, path: str, fn: Callable) -> None:
    from binlake.lake.delta import engine_for

    engine = engine_for(spark, "rust")
    engine.overwrite(path, fn(engine.read(spark, path)).localCheckpoint())


def _two_ids(df, key: str) -> tuple[Any, Any]:
    """The two smallest keys of live rows (tombstones are not validated)."""
    live = df.where("_binlake_op <> 'delete'")
    ids = [r[0] for r in live.select(key).orderBy(key).limit(2).collect()]
    return ids[0], ids[1]


def duplicate_key(spark, lake, facts):
    from pyspark.sql import functions as F

    def fn(df):
        a, b = _two_ids(df, "id")
        return df.withColumn("id", F.when(F.col("id") == b, F.lit(a)).otherwise(F.col("id")))

    _edit(spark, lake, _silver(lake, "customers"), fn)


def null_in_not_null(spark, lake, facts):
    from pyspark.sql import functions as F

    def fn(df):
        a, _ = _two_ids(df, "id")
        return df.withColumn("email", F.when(F.col("id") == a, F.lit(None)).otherwise(F.col("email")))

    _edit(spark, lake, _silver(lake, "customers"), fn)


def value_outside_enum(spark, lake, facts):
    from pyspark.sql import functions as F

    def fn(df):
        a, _ = _two_ids(df, "order_id")
        return df.withColumn("status", F.when(F.col("order_id") == a, F.lit("lost")).otherwise(F.col("status")))

    _edit(spark, lake, _silver(lake, "orders"), fn)


def overlong_varchar(spark, lake, facts):
    """varchar(100) utf8mb4: 100 two-byte characters fit (200 bytes), 101 do not."""
    from pyspark.sql import functions as F

    def fn(df):
        a, b = _two_ids(df, "id")
        return df.withColumn(
            "full_name",
            F.when(F.col("id") == a, F.lit("é" * 100))
            .when(F.col("id") == b, F.lit("é" * 101))
            .otherwise(F.col("full_name")),
        )

    _edit(spark, lake, _silver(lake, "customers"), fn)


def invalid_json(spark, lake, facts):
    from pyspark.sql import functions as F

    def fn(df):
        a, _ = _two_ids(df, "order_id")
        return df.withColumn(
            "doc", F.when(F.col("order_id") == a, F.lit('{"status": "paid", ')).otherwise(F.col("doc"))
        )

    _edit(spark, lake, _silver(lake, "orders"), fn)


def lost_delete(spark, lake, facts):
    """A delete that never reached silver: a row the source deleted is live again in silver (silver holds live
    rows only, so the lost row comes back as one more row)."""
    from pyspark.sql import functions as F

    def fn(df):
        (top,) = df.agg(F.max("order_id")).first()
        return df.unionByName(df.where(F.col("order_id") == top).withColumn("order_id", F.lit(top + 1000)))

    _edit(spark, lake, _silver(lake, "orders"), fn)


def gap_in_bronze(spark, lake, facts):
    """The middle row of an update event with three or more rows is lost (updates keep the counts)."""
    from pyspark.sql import functions as F

    def fn(df):
        events = (
            df.where(F.col("op") == "update")
            .groupBy("binlog_file", "pos")
            .agg(F.count("*").alias("n"))
            .where(F.col("n") >= 3)
            .orderBy("binlog_file", "pos")
            .limit(1)
            .collect()
        )
        assert events, "the generated load has no update event with three rows"
        file, pos = events[0]["binlog_file"], events[0]["pos"]
        return df.where(~((F.col("binlog_file") == file) & (F.col("pos") == pos) & (F.col("row") == 1)))

    _edit(spark, lake, LakeLayout(str(lake)).bronze, fn)


def quarantined_row(spark, lake, facts):
    """One rejected partial JSON update of the run, written the way the apply step writes quarantine."""
    from binlake.lake.delta import engine_for
    from binlake.lake.quarantine import quarantine_row, write_quarantine

    record = {
        "binlog_file": "mysql-bin.000009",
        "pos": 4242,
        "row": 0,
        "column_name": "doc",
        "_binlake_seq": 1,
        "status": "REJECTED",
        "reason": "path $.items[7] not found",
        "document": "{}",
    }
    row = quarantine_row(
        record, source=facts["source"], db="shop", table="orders", kind="json_diff", run_id=facts["last_run"]
    )
    from binlake.binlog.silver_types import to_arrow
    from binlake.lake.quarantine import QUARANTINE_COLUMNS

    write_quarantine(
        engine_for(spark, "rust"), LakeLayout(str(lake)).meta("quarantine"), to_arrow(QUARANTINE_COLUMNS, [row])
    )


@dataclass(frozen=True)
class Defect:
    inject: Callable
    changes: str  # which table (READERS key)
    expected: tuple[str, str, str]  # (suite, expectation type, column)
    unexpected: int = 1  # values reported unexpected (a duplicated key: both rows)


DEFECTS = {
    "duplicate_key": Defect(duplicate_key, "customers", (CUSTOMERS, "expect_column_values_to_be_unique", "id"), 2),
    "null_in_not_null": Defect(
        null_in_not_null, "customers", (CUSTOMERS, "expect_column_values_to_not_be_null", "email")
    ),
    "value_outside_enum": Defect(value_outside_enum, "orders", (ORDERS, "expect_column_values_to_be_in_set", "status")),
    "overlong_varchar": Defect(
        overlong_varchar, "customers", (CUSTOMERS, "expect_column_value_lengths_to_be_between", "full_name")
    ),
    "invalid_json": Defect(invalid_json, "orders", (ORDERS, "expect_column_values_to_be_json_parseable", "doc")),
    "lost_delete": Defect(
        lost_delete, "orders", (S.RECONCILIATION, "expect_column_values_to_be_between", "difference")
    ),
    "gap_in_bronze": Defect(
        gap_in_bronze, "bronze", (S.BRONZE_SEQUENCE, "expect_column_values_to_be_between", "missing_rows")
    ),
    "quarantined_row": Defect(
        quarantined_row, "quarantine", (S.QUARANTINE, "expect_column_values_to_be_between", "quarantined_share")
    ),
}


def _run_defect(spark, clean, tmp_path, name: str):
    defect = DEFECTS[name]
    lake = tmp_path / "lake"
    shutil.copytree(clean["lake"], lake)
    run = f"defect-{name}"  # a run of its own: what the defect files under a run (quarantine) is that run's
    defect.inject(spark, lake, {**clean, "last_run": run})
    with pytest.raises(QualityError) as info:
        validate_lake(spark, str(lake), run, ValidationOptions(suites=frozenset(READERS[defect.changes])))
    return info.value.summary


@pytest.mark.parametrize("name", sorted(DEFECTS))
def test_each_defect_trips_exactly_its_expectation(spark, clean, tmp_path, name):
    summary = _run_defect(spark, clean, tmp_path, name)
    assert {r.suite for r in summary.results} == READERS[DEFECTS[name].changes]
    failed = {(r.suite, r.expectation_type, r.columns) for r in summary.results if not r.success}
    assert failed == {DEFECTS[name].expected}
    (bad,) = summary.failed_errors
    assert bad.exception is None
    assert bad.unexpected_count == DEFECTS[name].unexpected


def test_report_and_data_docs_open_in_chromium(spark, clean, tmp_path):
    browser.chromium()
    summary = _run_defect(spark, clean, tmp_path, "value_outside_enum")
    page = Path(summary.report_path)
    text = browser.dump_dom(page)
    assert "FAILED: 1 error-level expectation(s) failed" in text
    failed_section = text[text.index('id="failed"') : text.index('id="trend"')]
    assert "expect_column_values_to_be_in_set" in failed_section and "status" in failed_section
    assert "lost" in failed_section  # the sampled unexpected value
    trend = text[text.index('id="trend"') :]
    assert clean["last_run"] in trend and "defect-value_outside_enum" in trend
    png = browser.screenshot(page, tmp_path / "summary.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000

    docs = Path(summary.data_docs_path)
    index = browser.dump_dom(docs)
    assert ORDERS in index and "defect-value_outside_enum" in index
    (validation,) = docs.parent.joinpath("validations", *ORDERS.split("."), "defect-value_outside_enum").rglob("*.html")
    vtext = browser.dump_dom(validation)
    assert "status" in vtext and "Failed" in vtext
    assert browser.screenshot(validation, tmp_path / "docs.png").stat().st_size > 10_000


def test_cli_exit_codes(spark, clean, tmp_path, capsys):
    from binlake.cli import main

    lake = tmp_path / "lake"
    shutil.copytree(clean["lake"], lake)
    args = ["validate", "--lake", str(lake), "--suite", S.QUARANTINE]
    assert main(args + ["--run-id", "cli-ok"]) == 0
    assert "report: " in capsys.readouterr().out
    quarantined_row(spark, lake, {"last_run": "cli-bad", "source": clean["source"]})
    assert main(args + ["--run-id", "cli-bad"]) == 1
    captured = capsys.readouterr()
    assert "meta.quarantine" in captured.err and "report: " in captured.out
