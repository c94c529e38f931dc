"""Hostile names and values from a binlog (issue #16, items 3 and 9), validated end to end on Spark.

A binlog built here names a database, a table, columns and ENUM members with markup (and ``../``, ``/``, ``.``,
``__`` where the silver folder encoding matters) and holds values with markup; binlake's pipeline loads it, then
``binlake validate`` runs. Nothing may be written outside the lake, every silver table must be validated (the
two tables the old ``<db>__<table>`` scheme merged too), one planted defect must be the only failure, and no
page of the Great Expectations Data Docs or binlake's summary may run a script in a real Chromium (``alert``
dialogs seen over the DevTools protocol).
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path
from typing import Any

import pytest

from binlake.lake.layout import LakeLayout, silver_name
from binlake.quality import suites as S
from binlake.quality.names import gx_name
from tests.quality import browser

pytestmark = [pytest.mark.spark, pytest.mark.slow]

DB = "../../<img src=x onerror=alert(1)>"  # the old silver path left the lake
TABLE = "<script>alert(2)</script>"
NOTE = "<img src=x onerror=alert(3)>"  # a VARCHAR(40) column
DOTTED = "a.b"  # Spark would read it as a struct field
KIND = "sp ace<script>alert(4)</script>"  # an ENUM column
MEMBER = "<img src=x onerror=alert(5)>"  # one of its members
TOO_LONG = "<img src=x onerror=alert(6)>" + "x" * 30  # 58 characters in the VARCHAR(40): the planted defect
CLASHING = (("a__b", "c"), ("a", "b__c"))  # one silver table under the old naming


def _tables() -> list[Any]:
    from binlake.binlog import constants as C
    from binlake.generate.tables import UTF8MB4_0900_AI_CI as UTF8MB4
    from binlake.generate.tables import ColumnDef, TableDef

    def integer(name: str, nullable: bool = True) -> ColumnDef:
        return ColumnDef(name, "int", C.MYSQL_TYPE_LONG, nullable=nullable)

    def varchar(name: str, n: int) -> ColumnDef:
        return ColumnDef(name, f"varchar({n})", C.MYSQL_TYPE_VARCHAR, collation_id=UTF8MB4, length=n)

    enum = ColumnDef(
        KIND,
        f"enum('{MEMBER}','ok')",
        C.MYSQL_TYPE_STRING,
        nullable=False,
        collation_id=UTF8MB4,
        elements=(MEMBER, "ok"),
    )
    hostile = TableDef(
        DB, TABLE, (integer("id", False), varchar(NOTE, 40), integer(DOTTED), enum), ("id",), table_id=71
    )
    plain = [
        TableDef(db, table, (integer("id", False), varchar("v", 10)), ("id",), table_id=72 + i)
        for i, (db, table) in enumerate(CLASHING)
    ]
    return [hostile, *plain]


def _write_source(root: Path) -> tuple[Path, Path]:
    """The landing folder (one binlog) and the SDI folder of the hostile tables."""
    from binlake.binlog.writer import BinlogWriter
    from binlake.generate.emit import Emitter
    from binlake.generate.sdi_out import sdi_documents
    from binlake.generate.workload import RowChange, Statement, Transaction
    from binlake.sdi.writer import to_json

    hostile, *plain = _tables()
    rows = {hostile: [(1, "<script>alert(7)</script>", 1, MEMBER), (2, TOO_LONG, None, "ok")]}
    rows.update({t: [(1, f"{t.db}.{t.name}"[:10]), (2, None)] for t in plain})
    at = dt.datetime(2024, 3, 1, 12, tzinfo=dt.timezone.utc)
    landing, sdi = root / "landing" / "src", root / "sdi"
    sdi.mkdir(parents=True)
    emitter = Emitter()
    with BinlogWriter(landing, create_timestamp=int(at.timestamp())) as writer:
        for gno, (table, values) in enumerate(rows.items(), 1):
            txn = Transaction(
                gno,
                int(at.timestamp()) * 1_000_000 + gno,
                statements=(Statement(table, "insert", tuple(RowChange(None, v) for v in values)),),
            )
            writer.write_transaction(emitter.events(txn), gno=gno, commit_time_us=txn.commit_time_us)
            doc, _ = sdi_documents(table, at.replace(tzinfo=None), at.replace(tzinfo=None))
            (sdi / f"t{gno}.sdi").write_text(to_json(doc), encoding="utf-8")
    return landing, sdi


@pytest.fixture(scope="module")
def hostile(spark, tmp_path_factory) -> dict[str, Any]:
    """The hostile source loaded by the pipeline and validated once by ``binlake validate``."""
    import contextlib
    import io

    from binlake.cli import main
    from binlake.lake.delta import engine_for
    from binlake.lake.options import RunOptions
    from binlake.lake.run import run_source

    root = tmp_path_factory.mktemp("hostile")
    landing, sdi = _write_source(root)
    lake = root / "lake"
    run_source(spark, engine_for(spark, "rust"), LakeLayout(str(lake)), str(landing), RunOptions("src"), [str(sdi)])
    # the silver tables' suites and the one pipeline suite that meets their names (reconciliation, per table)
    suites = [S.silver_table_name(db, t) for db, t in [(DB, TABLE), *CLASHING]] + [S.RECONCILIATION]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(
            [
                "validate",
                "--lake",
                str(lake),
                "--run-id",
                "hostile",
                "--engine",
                "rust",
                *(f"--suite={s}" for s in suites),
            ]
        )
    return {"lake": lake, "code": code, "out": out.getvalue(), "err": err.getvalue()}


def _stored(spark, lake: Path) -> list[dict[str, Any]]:
    from binlake.lake.delta import engine_for

    return [r.asDict() for r in engine_for(spark, "rust").read(spark, LakeLayout(str(lake)).dq_results).collect()]


def test_every_silver_table_is_validated_whatever_its_names(hostile, spark) -> None:
    layout = LakeLayout(str(hostile["lake"]))
    pairs = {(DB, TABLE), *CLASHING}
    assert set(layout.silver_tables()) == pairs  # three tables, none merged into another
    root = hostile["lake"].parent
    assert sorted(p.name for p in root.iterdir()) == ["lake", "landing", "sdi"]  # nothing outside the lake
    assert {p.name for p in (root / "lake").iterdir()} <= {"_staging", "bronze", "logs", "meta", "reports", "silver"}
    assert sorted(p.name for p in (root / "lake" / "silver").iterdir()) == sorted(silver_name(db, t) for db, t in pairs)
    rows = _stored(spark, hostile["lake"])
    suites = {r["suite"] for r in rows}
    assert suites == {S.silver_table_name(db, t) for db, t in pairs} | {S.RECONCILIATION}
    assert not [r for r in rows if r["exception"]]
    # the planted defect is the one failure, on the column GX knows by its safe name; exit 1 = checks failed
    failed = {(r["suite"], r["expectation_type"], r["columns"]) for r in rows if not r["success"]}
    assert failed == {(S.silver_table_name(DB, TABLE), "expect_column_value_lengths_to_be_between", gx_name(NOTE))}
    assert hostile["code"] == 1, hostile["err"]
    assert "NOT VALIDATED" not in hostile["err"]
    # the other rules of the hostile table ran on the right columns: ENUM members and the dotted column
    hostile_rules = {
        (r["expectation_type"], r["columns"]) for r in rows if r["suite"] == S.silver_table_name(DB, TABLE)
    }
    assert {
        ("expect_column_values_to_be_in_set", gx_name(KIND)),
        ("expect_column_to_exist", gx_name(DOTTED)),
        ("expect_column_values_to_be_unique", "id"),
    } <= hostile_rules


def test_a_table_that_can_not_be_validated_fails_the_run_with_its_own_exit_code(
    hostile, spark, tmp_path, capsys
) -> None:
    """A silver table without a definition and a silver folder whose names are lost: exit 2 ("could not run",
    not 1 "checks failed"), from ``binlake validate`` and from the DAG's validate job alike, naming each."""
    from binlake.cli import main
    from binlake.lake.delta import engine_for
    from spark_jobs import validate as validate_job

    lake = tmp_path / "lake"
    shutil.copytree(hostile["lake"], lake, ignore=shutil.ignore_patterns("reports"))
    layout = LakeLayout(str(lake))
    engine_for(spark, "rust").append(layout.silver("nosdi", "t"), spark.createDataFrame([(1,)], "id int"))
    unnamed = Path(layout.path("silver", "x" * 20 + "~~0123456789abcdef"))
    shutil.copytree(layout.silver(*CLASHING[0]), unnamed)
    nosdi, lost = S.silver_table_name("nosdi", "t"), f"silver.{unnamed.name}"
    argv = ["--lake", str(lake), "--engine", "rust", "--suite", nosdi, "--suite", lost]

    assert main(["validate", *argv]) == 2
    err = capsys.readouterr().err
    assert f"NOT VALIDATED {nosdi}: no usable definition in meta.schema_registry" in err
    assert (
        f"NOT VALIDATED {lost}: silver/{unnamed.name} is a Delta table whose database and table binlake can "
        f"not tell" in err
    )
    last = err.strip().splitlines()[-1]
    assert last.startswith("binlake: error: ") and "2 check(s) could not be validated" in last
    assert validate_job.main([*argv, "--run-id", "dag"]) == 2  # the DAG's validate task fails
    assert f'"not_validated": ["{nosdi}: no usable definition' in capsys.readouterr().out
    # a suite name the lake does not have is an error too, not an empty pass
    assert main(["validate", "--lake", str(lake), "--engine", "rust", "--suite", "silver.a__b__c"]) == 2
    assert "no such suite" in capsys.readouterr().err


# elements the hostile names and values would become if a page took them as markup
PAYLOAD_ELEMENTS = (
    "document.querySelectorAll('img[src=\"x\"]').length"
    " + [...document.scripts].filter(s => s.text.includes('alert(')).length"
)


def test_no_page_runs_a_script_from_the_binlog(hostile, tmp_path) -> None:
    browser.chromium()
    reports = hostile["lake"] / "reports" / "quality"
    pages = sorted((reports / "data_docs").rglob("*.html"))
    summary = reports / "runs" / "hostile" / "summary.html"
    assert len(pages) >= 5 and summary.is_file()
    control = tmp_path / "control.html"  # the detector works: the same markup, unescaped, runs
    control.write_text(f"<html><body><h5>{NOTE}</h5><p>{TABLE}</p></body></html>", encoding="utf-8")
    with browser.DevTools() as chrome:
        seen = chrome.load(control, (PAYLOAD_ELEMENTS,))
        assert sorted(seen.dialogs) == ["alert: 2", "alert: 3"] and seen.values[PAYLOAD_ELEMENTS] == 2
        texts = {}
        for page in [*pages, summary]:
            run = chrome.load(page, (PAYLOAD_ELEMENTS,))
            assert run.dialogs == [] and run.values[PAYLOAD_ELEMENTS] == 0, (page, run.dialogs, run.values)
            texts[page] = run.text
    # the names render as text: Data Docs show GX's safe names, binlake's summary the sampled value itself
    validation = next(p for p in pages if "validations" in p.parts and silver_name(DB, TABLE) in str(p))
    assert gx_name(NOTE) in texts[validation] and gx_name(KIND) in texts[validation]
    assert TOO_LONG in texts[summary]
