"""The data-quality report across runs (the ``dq_report`` DAG): trend per run, open failures, kept over time.

Reads ``meta.dq_results`` (one row per expectation result, written by ``spark_jobs/validate.py``), keeps the
latest validation of each run (a rerun of a day validates again under the same run id and supersedes it), and
writes under ``<lake>/reports/quality/``:

* ``history/index.html``: runs newest first (expectations checked, failed errors and warnings, link to the
  run's own summary page), then the **open failures**: expectations whose latest result failed, with the run
  they have been failing since;
* ``history/reports.jsonl``: one line per report build (when, runs, open failures), appended: the report's own
  history.

The table is small (hundreds of rows per run): it is read with ``deltalake``, without Spark.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Iterable, Optional

from binlake.quality.report import RunTotals, run_totals
from binlake.quality.results import ResultRow


@dataclass(frozen=True, slots=True)
class OpenFailure:
    latest: ResultRow
    since_run: str
    runs_failing: int


@dataclass(frozen=True, slots=True)
class DqHistory:
    runs: tuple[RunTotals, ...]            # oldest first
    open_failures: tuple[OpenFailure, ...]
    index_path: str


def read_results(dq_results_path: str) -> list[ResultRow]:
    from deltalake import DeltaTable

    if not os.path.isdir(os.path.join(dq_results_path, "_delta_log")):
        return []
    return [ResultRow.from_dict(r) for r in DeltaTable(dq_results_path).to_pyarrow_table().to_pylist()]


def latest_validation_per_run(rows: Iterable[ResultRow]) -> list[ResultRow]:
    """Each run's rows from its newest validation only."""
    rows = list(rows)
    newest: dict[str, dt.datetime] = {}
    for r in rows:
        if r.run_id not in newest or r.validated_at > newest[r.run_id]:
            newest[r.run_id] = r.validated_at
    return [r for r in rows if r.validated_at == newest[r.run_id]]


def _key(r: ResultRow) -> tuple:
    return (r.suite, r.expectation_type, r.columns, r.kwargs)


def open_failures(rows: list[ResultRow], runs: list[RunTotals]) -> list[OpenFailure]:
    """Expectations whose result in the newest run that checked them failed, and since which run."""
    order = {t.run_id: i for i, t in enumerate(runs)}
    by_key: dict[tuple, list[ResultRow]] = {}
    for r in rows:
        by_key.setdefault(_key(r), []).append(r)
    out = []
    for results in by_key.values():
        results.sort(key=lambda r: order[r.run_id])
        if results[-1].success:
            continue
        failing = 0
        for r in reversed(results):
            if r.success:
                break
            failing += 1
        out.append(OpenFailure(results[-1], results[-failing].run_id, failing))
    return sorted(out, key=lambda f: (not f.latest.is_error, f.latest.suite, f.latest.expectation_type))


def build_history(lake: str, dq_results_path: str, report_dir: str, *, max_runs: int = 60,
                  now: Optional[dt.datetime] = None) -> DqHistory:
    """Write ``history/index.html`` and append to ``history/reports.jsonl`` (see the module docstring)."""
    rows = latest_validation_per_run(read_results(dq_results_path))
    runs = run_totals(rows)
    failures = open_failures(rows, runs)
    shown = runs[-max_runs:]
    out = Path(report_dir, "history")
    out.mkdir(parents=True, exist_ok=True)
    index = out / "index.html"
    index.write_text(render(lake, shown, failures, len(runs)), encoding="utf-8")
    built = (now or dt.datetime.now(dt.timezone.utc)).replace(microsecond=0)
    with open(out / "reports.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps({"built_at": built.isoformat(), "runs": len(runs),
                            "latest_run": runs[-1].run_id if runs else None,
                            "open_failures": len(failures),
                            "open_errors": sum(1 for x in failures if x.latest.is_error)}) + "\n")
    return DqHistory(tuple(runs), tuple(failures), str(index))


def render(lake: str, runs: list[RunTotals], failures: list[OpenFailure], total_runs: int) -> str:
    rows = []
    for t in reversed(runs):
        link = f"../runs/{escape(t.run_id)}/summary.html"
        cls = "fail" if t.failed_errors else ("warn" if t.failed_warnings else "pass")
        rows.append(f"<tr class='{cls}'><td><a href='{link}'>{escape(t.run_id)}</a></td>"
                    f"<td>{escape(str(t.validated_at))}</td><td>{t.checked}</td><td>{t.failed_errors}</td>"
                    f"<td>{t.failed_warnings}</td></tr>")
    fails = [f"<tr class='{escape(f.latest.level)}'><td>{escape(f.latest.level)}</td><td>{escape(f.latest.suite)}"
             f"</td><td>{escape(f.latest.expectation_type)}</td><td>{escape(f.latest.columns or '')}</td>"
             f"<td>{escape(f.since_run)} ({f.runs_failing} run{'s' if f.runs_failing > 1 else ''})</td>"
             f"<td>{escape(f.latest.why or '')}</td></tr>" for f in failures]
    return "\n".join([
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>binlake data quality history</title><style>",
        "body{font-family:system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}th{background:#f2f2f2}"
        "tr.fail td:first-child,tr.error td:first-child{color:#c62828;font-weight:bold}"
        "tr.warn td:first-child,tr.warning td:first-child{color:#ef6c00}</style></head><body>",
        "<h1>binlake data quality history</h1>",
        f"<p>Lake <code>{escape(lake)}</code>: {total_runs} validated runs"
        f"{f', the newest {len(runs)} shown' if len(runs) < total_runs else ''}.</p>",
        f"<h2 id='open'>Open failures ({len(failures)})</h2>",
        ("<table><tr><th>level</th><th>suite</th><th>expectation</th><th>column(s)</th><th>failing since</th>"
         "<th>why it is expected</th></tr>" + "".join(fails) + "</table>") if fails else "<p>None.</p>",
        "<h2 id='runs'>Runs</h2>",
        "<table><tr><th>run</th><th>validated at (UTC)</th><th>expectations</th><th>failed errors</th>"
        "<th>failed warnings</th></tr>" + "".join(rows) + "</table>",
        "</body></html>"])
