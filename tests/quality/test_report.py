"""The summary page and result rows, without Spark: what failed comes first, trend across runs, escaping."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re

from binlake.quality.report import render_summary, run_totals
from binlake.quality.results import DQ_RESULTS_SCHEMA, ResultRow
from binlake.quality.runner import ValidationSummary


def _row(
    run: str, day: int, suite: str, column: str, success: bool, level: str = "error", sample: str | None = None
) -> ResultRow:
    return ResultRow(
        run,
        dt.datetime(2024, 3, day),
        suite,
        None,
        "expect_column_values_to_be_in_set",
        column,
        '{"value_set":["a"]}',
        level,
        "in_set",
        "enum('a')",
        success,
        10,
        0 if success else 1,
        0.0 if success else 10.0,
        None,
        sample,
        None,
    )


def test_result_rows_follow_the_table_schema():
    assert [f.name for f in dataclasses.fields(ResultRow)] == [c for c, _, _ in DQ_RESULTS_SCHEMA]


def test_summary_lists_failures_first_with_trend_and_escaping(tmp_path):
    earlier = [
        _row("r1", 1, "silver.a", "status", True),
        _row("r1", 1, "silver.a", "kind", True),
        _row("r2", 2, "silver.a", "status", False),
        _row("r2", 2, "silver.a", "kind", True),
    ]
    now = (
        _row("r3", 3, "silver.a", "status", False, sample='["<script>x</script>"]'),
        _row("r3", 3, "silver.a", "kind", False, level="warning"),
        _row("r3", 3, "silver.b", "id", True),
    )
    summary = ValidationSummary(
        "r3",
        dt.datetime(2024, 3, 3),
        "/lake",
        now,
        str(tmp_path / "runs" / "r3" / "summary.html"),
        str(tmp_path / "data_docs" / "index.html"),
    )
    html = render_summary(summary, earlier)
    assert "FAILED: 1 error-level expectation(s) failed" in html
    failed = html[html.index("id='failed'") : html.index("id='trend'")]
    assert failed.index("status") < failed.index("kind")  # errors before warnings
    assert "2 runs in a row" in failed and "this run" in failed  # status failed in r2 too; kind is new
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "href='../../data_docs/index.html'" in html
    trend = html[html.index("id='trend'") : html.index("id='checks'")]
    table = trend[trend.index("<table") :]
    assert table.index("<b>r3</b>") < table.index("r2") < table.index("r1")  # newest first
    bars = {
        (series, run): int(v)
        for series, run, v in re.findall(r'data-series="([^"]+)" data-x="([^"]+)" data-value="(\d+)"', trend)
    }
    assert bars == {
        ("error level", "r1"): 0,
        ("error level", "r2"): 1,
        ("error level", "r3"): 1,
        ("warning level", "r1"): 0,
        ("warning level", "r2"): 0,
        ("warning level", "r3"): 1,
    }
    assert "failed expectations</text>" in trend and ">r1</text>" in trend  # labelled axes: y title, runs


def test_run_totals_count_failures_by_level():
    rows = [
        _row("r1", 1, "s", "a", False),
        _row("r1", 1, "s", "b", False, level="warning"),
        _row("r0", 1, "s", "a", True),
    ]
    totals = {t.run_id: (t.checked, t.failed_errors, t.failed_warnings) for t in run_totals(rows)}
    assert totals == {"r1": (2, 1, 1), "r0": (1, 0, 0)}


def test_could_not_run_and_checks_failed_have_their_own_exit_codes(tmp_path):
    from binlake.quality.errors import NotValidated, QualityCheckFailed

    ok, failed = _row("r", 1, "silver.a", "status", True), _row("r", 1, "silver.a", "kind", False)
    raised = dataclasses.replace(_row("r", 1, "silver.b", "id", False), exception="column id\nis missing")
    warned = dataclasses.replace(raised, level="warning")

    def summary(*rows: ResultRow, skipped: tuple[str, ...] = ()) -> ValidationSummary:
        return ValidationSummary(
            "r", dt.datetime(2024, 3, 1), "/lake", rows, str(tmp_path / "s.html"), str(tmp_path / "index.html"), skipped
        )

    assert summary(ok, warned).failure() is None and summary(ok, warned).success
    checks_failed = summary(ok, failed).failure()
    assert type(checks_failed) is QualityCheckFailed and checks_failed.exit_code == 1
    for s in (summary(ok, raised), summary(ok, failed, raised), summary(ok, skipped=("silver.c: no definition",))):
        error = s.failure()
        assert type(error) is NotValidated and error.exit_code == 2 and "\n" not in str(error)
        assert ("1 error-level expectation(s) failed too" in str(error)) == bool(s.failed_errors)
        assert "NOT VALIDATED: 1 check(s) could not be validated" in render_summary(s, [])
    assert summary(ok, raised).not_validated == [
        "silver.b: expect_column_values_to_be_in_set(id) could not run: column id\nis missing"
    ]
    assert summary(ok, failed, raised).failed_errors == [failed]
    # the one line names what failed (errors first, then warnings; three at most)
    assert summary(ok).headline().endswith("0 warning-level failed) on 1 silver table(s) and 0 pipeline suite(s)")
    assert summary(ok, warned, failed).headline().endswith("; failed: silver.a in_set(kind), silver.b in_set(id)")
    many = [dataclasses.replace(failed, columns=c) for c in "wxyz"]
    assert (
        summary(*many)
        .headline()
        .endswith("; failed: silver.a in_set(w), silver.a in_set(x), silver.a in_set(y) and 1 more")
    )


def test_the_freshness_task_writes_its_failure_into_the_runs_page(tmp_path):
    """``run_freshness`` (the DAG's freshness task): a source with nothing applied fails the task and the run's
    page reads FAILED with the reason; the page of a run never validated is left alone."""
    import pytest

    from binlake.orchestration.alerts import SourceLagging
    from binlake.orchestration.config import Settings
    from binlake.orchestration.tasks import run_freshness
    from binlake.quality.report import write_summary

    lake = tmp_path / "lake"
    page = lake / "reports" / "quality" / "runs" / "2024-03-01" / "summary.html"
    write_summary(
        ValidationSummary(
            "2024-03-01",
            dt.datetime(2024, 3, 2),
            str(lake),
            (_row("2024-03-01", 1, "silver.a", "id", True),),
            str(page),
            str(lake / "reports" / "quality" / "data_docs" / "index.html"),
        ),
        [],
    )
    assert "id='verdict'>PASSED</span>" in page.read_text(encoding="utf-8")
    settings = Settings(
        str(tmp_path), str(tmp_path / "landing"), str(lake), str(tmp_path / "sdi"), ("src",), dt.date(2024, 3, 1)
    )
    start = dt.datetime(2024, 3, 1, tzinfo=dt.timezone.utc)
    with pytest.raises(SourceLagging) as caught:
        run_freshness(settings, start, start + dt.timedelta(days=1))
    html = page.read_text(encoding="utf-8")
    assert "id='verdict'>FAILED: freshness failed (the checks PASSED)</span>" in html
    assert "Freshness: FAILED" in html and str(caught.value).split(";")[0][:40] in html.replace("&#x27;", "'")
    with pytest.raises(SourceLagging):  # a later day never validated: no page made for it
        run_freshness(settings, start + dt.timedelta(days=1), start + dt.timedelta(days=2))
    assert not (page.parent.parent / "2024-03-02").exists()
