"""What a new user sees of `binlake run --validate` (issue 26, items 5-9), end to end through the CLI as
scripts/sample.sh runs it, on a generated two-day sample: a console without JVM stack traces and a PASSED line
with the counts; the per-run pages counting the run's own bronze rows, with a labelled trend and the freshness
result; `binlake status` without Spark, equal to the generator's truth; Data Docs that render styled with no
network (headless Chromium, every host unresolvable); the DQ history with lag in hours and one naming of runs.

Screenshots go to ``$BINLAKE_TEST_SCREENS`` too when it is set (to look at them)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.quality import browser

pytestmark = [pytest.mark.spark, pytest.mark.slow]

BIN = Path(sys.executable).with_name("binlake")
START = "2024-03-01"
DAYS = ("2024-03-01", "2024-03-02")
TRACE = re.compile(r"Exception|^\s*at [\w$.]+\(|^\s*at org\.|Traceback|ERROR ")


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN), *args], capture_output=True, text=True, timeout=3600)  # a guard, not a timed check


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("sample")
    gen = cli("generate", "--out", str(root), "--seed", "7", "--days", "2", "--scale", "0.005", "--start-date", START)
    assert gen.returncode == 0, gen.stderr
    runs = [
        cli("run", "--landing", str(root / "landing"), "--lake", str(root / "lake"), "--end", day, "--validate")
        for day in DAYS
    ]
    return {"root": root, "lake": root / "lake", "runs": runs}


def _shot(page: Path, png: Path) -> Path:
    """A screenshot taken with every host name unresolvable (no network)."""
    browser._run(page, browser.OFFLINE, f"--screenshot={png}", "--window-size=1280,1400", "--hide-scrollbars")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    keep = os.environ.get("BINLAKE_TEST_SCREENS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(png, Path(keep) / png.name)
    return png


def test_console_has_no_stack_trace_and_says_passed(sample) -> None:
    for day, run in zip(DAYS, sample["runs"]):
        assert run.returncode == 0, run.stderr[-3000:]
        console = (run.stdout + run.stderr).splitlines()
        assert [line for line in console if TRACE.search(line)] == [], day
        passed = [line for line in console if "validate: PASSED: " in line]
        assert len(passed) == 1 and " expectations passed (0 error-level" in passed[0], console
        assert f"runs/{day}/summary.html" in passed[0]  # the run's name: the day it loads
        named = [line for line in console if "Spark's own log: " in line]
        assert len(named) == 1
        log = Path(named[0].split("Spark's own log: ", 1)[1])
        assert log.is_file() and log.parent == sample["lake"] / "logs"
        # the cause is gone, not only moved out of sight: the JVM's own log holds no such trace either
        assert "window functions inside WHERE" not in log.read_text(errors="replace")


def _bronze_ops(lake: Path, run: str) -> dict[str, int]:
    import pyarrow.compute as pc
    from deltalake import DeltaTable

    table = DeltaTable(str(lake / "bronze" / "binlog_events")).to_pyarrow_table(columns=["op", "ingest_run"])
    mine = table.filter(pc.equal(table["ingest_run"].cast("string"), run))
    ops: dict[str, int] = {}
    for op in mine["op"].to_pylist():
        ops[op] = ops.get(op, 0) + 1
    return ops


def _section(text: str, title: str) -> str:
    start = text.index(title)
    end = text.find("<h2", start)
    return text[start : end if end > 0 else None]


def test_per_run_page_counts_the_runs_own_bronze_rows_with_a_labelled_trend(sample, tmp_path) -> None:
    lake = sample["lake"]
    first, second = (lake / "reports" / "quality" / "runs" / day / "summary.html" for day in DAYS)
    ops = _bronze_ops(lake, DAYS[0])
    assert ops and _bronze_ops(lake, DAYS[1]) == {}  # day 2's files were all ingested on day 1
    one = _section(first.read_text(encoding="utf-8"), "Bronze rows of the run by operation")
    for op, n in ops.items():
        assert f"<td>{op}</td><td>{n}</td>" in one
    two = _section(second.read_text(encoding="utf-8"), "Bronze rows of the run by operation")
    assert "(none)" in two and "<td>insert</td>" not in two
    page = second.read_text(encoding="utf-8")
    trend = page[page.index("id='trend'") : page.index("</svg>", page.index("id='trend'"))]
    assert "failed expectations" in trend and "error level" in trend and "warning level" in trend
    assert DAYS[0] in trend and DAYS[1] in trend  # the runs on the x axis, by their names
    browser.chromium()
    _shot(second, tmp_path / "per_run_page.png")


def test_freshness_failure_turns_the_per_run_page_failed(sample, tmp_path) -> None:
    from binlake.quality.report import record_freshness

    page = tmp_path / "summary.html"
    shutil.copy(sample["lake"] / "reports" / "quality" / "runs" / DAYS[1] / "summary.html", page)
    assert "id='verdict'>PASSED" in page.read_text(encoding="utf-8")
    rows = [{"source": "shop-primary", "last_commit_time": "2024-03-01T23:59:00Z", "lag_seconds": 90000.0}]
    assert record_freshness(str(page), rows, "freshness: shop-primary is 25.0 h behind")
    text = page.read_text(encoding="utf-8")
    assert "id='verdict'>FAILED: freshness failed" in text and "id='verdict'>PASSED" not in text
    assert "Freshness: FAILED" in text and "25.00" in text and "25.0 h behind" in text
    assert record_freshness(str(page), rows, "freshness: shop-primary is 25.0 h behind")  # again: no second copy
    assert page.read_text(encoding="utf-8").count("id='freshness'") == 1
    assert page.read_text(encoding="utf-8").count("freshness failed") == 1
    browser.chromium()
    shot = _shot(page, tmp_path / "per_run_page_freshness_failed.png")
    assert shot.stat().st_size > 10_000


def test_status_without_spark_equals_the_truth(sample) -> None:
    root = sample["root"]
    run = cli("status", "--lake", str(sample["lake"]), "--landing", str(root / "landing"), "--json")
    assert run.returncode == 0, run.stderr
    assert "Spark" not in run.stderr and "WARN" not in run.stderr
    doc = json.loads(run.stdout)
    [source] = doc["sources"]
    assert source["pending_files"] == 0 and source["last_run"]["run_id"] in DAYS
    for table in source["tables"]:
        truth = root / "truth" / table["table"] / f"day={DAYS[-1]}.jsonl"
        assert table["live_rows"] == sum(1 for line in truth.read_text().splitlines() if line.strip()), table


def test_data_docs_render_styled_offline(sample, tmp_path) -> None:
    from binlake.quality.offline_docs import remote_assets

    browser.chromium()
    docs = sample["lake"] / "reports" / "quality" / "data_docs"
    pages = [p for p in docs.rglob("*.html") if "static" not in p.relative_to(docs).parts]
    assert pages and all(remote_assets(p.read_text(encoding="utf-8")) == [] for p in pages)
    (validation,) = docs.joinpath("validations", "silver", "shop__orders", DAYS[-1]).rglob("*.html")
    checks = (
        "typeof jQuery",
        "typeof vegaEmbed",
        "typeof jQuery === 'function' && typeof jQuery.fn.bootstrapTable",
        "typeof jQuery === 'function' && typeof jQuery.fn.modal",
        "getComputedStyle(document.querySelector('.navbar') || document.body).display",
        "document.querySelectorAll('table.table tbody tr').length",
        "getComputedStyle(document.body).fontFamily",
    )
    with browser.DevTools() as tools:
        run = tools.load(validation, checks, quiet=1.0)
    v = run.values
    assert v["typeof jQuery"] == "function" and v["typeof vegaEmbed"] == "function"
    assert v[checks[2]] == "function"  # bootstrap-table turned the tables into grids
    assert v[checks[3]] == "function"  # Bootstrap's own script ran (no CORS/SRI refusal)
    assert v[checks[4]] == "flex"  # Bootstrap's CSS applied to the navigation bar
    assert v[checks[5]] >= 10  # expectation rows
    assert "apple-system" in v[checks[6]]  # Bootstrap's font stack, not the browser default
    assert "values must never be null" in run.text and "Succeeded" in run.text
    assert run.exceptions == []
    shot = _shot(validation, tmp_path / "data_docs_offline.png")
    assert shot.stat().st_size > 60_000  # styled: far more than the unstyled text page


def test_dq_history_lag_in_hours_and_run_names(sample, tmp_path) -> None:
    from binlake.orchestration.dq_history import build_history

    lake = sample["lake"]
    report = tmp_path / "reports"
    history = build_history(str(lake), str(lake / "meta" / "dq_results"), str(report))
    text = Path(history.index_path).read_text(encoding="utf-8")
    lag = text[text.index('id="lag"') : text.index("</svg>", text.index('id="lag"'))]
    assert "lag (hours)" in lag and "days" not in lag
    assert f'data-x="{DAYS[0]}"' in lag  # runs named as everywhere else
    assert {t.run_id for t in history.runs} == set(DAYS)
    browser.chromium()
    _shot(Path(history.index_path), tmp_path / "dq_history.png")
