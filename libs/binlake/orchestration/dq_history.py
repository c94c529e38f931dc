"""The data-quality report across runs (the ``dq_report`` DAG): trend per run, open failures, kept over time.

Reads ``meta.dq_results`` (one row per expectation result, written by ``spark_jobs/validate.py``), keeps the
latest validation of each run (a rerun of a day validates again under the same run id and supersedes it), and
writes under ``<lake>/reports/quality/``:

* ``history/index.html``: runs newest first (expectations checked, failed errors and warnings, link to the
  run's own summary page), then the **open failures**: ``mysql_cdc_daily`` tasks whose latest outcome failed
  (a load, the validation, freshness: ``<lake>/_orchestration/task_outcomes.jsonl``) and expectations whose
  latest result failed, with the run they have been failing since;
* ``history/reports.jsonl``: one line per report build (when, runs, open failures), appended: the report's own
  history.

The table is small (hundreds of rows per run): it is read with ``deltalake``, without Spark.

The page opens with the **operations overview**, drawn from ``meta.run_metrics`` and the results as inline SVG
(no plotting package, no scripts): lag over time per source (at the end of each run), changes per day per
table (a day: the commit date of the source's last applied change of the run), quarantined rows per run, and
the expectation pass rate per validated run. Each recorded load gets its own page, ``history/loads/<run>.html``
(per table: changes by operation, last applied commit, lag; the run's files, bytes and stage times).
"""

from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any, Iterable, Optional

from binlake.quality.report import RunTotals, run_totals, svg_bar_chart, svg_line_chart
from binlake.quality.results import ResultRow
from binlake.vocabulary import SOURCE_ROW


@dataclass(frozen=True, slots=True)
class OpenFailure:
    latest: ResultRow
    since_run: str
    runs_failing: int


@dataclass(frozen=True, slots=True)
class DqHistory:
    runs: tuple[RunTotals, ...]  # oldest first
    open_failures: tuple[OpenFailure, ...]
    index_path: str
    task_failures: tuple[dict, ...] = ()  # mysql_cdc_daily tasks whose latest outcome failed (alerts.py)


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


def build_history(
    lake: str, dq_results_path: str, report_dir: str, *, max_runs: int = 60, now: Optional[dt.datetime] = None
) -> DqHistory:
    """Write ``history/index.html`` and append to ``history/reports.jsonl`` (see the module docstring)."""
    rows = latest_validation_per_run(read_results(dq_results_path))
    runs = run_totals(rows)
    failures = open_failures(rows, runs)
    from binlake.orchestration.alerts import open_task_failures

    task_failures = open_task_failures(lake)
    shown = runs[-max_runs:]
    out = Path(report_dir, "history")
    out.mkdir(parents=True, exist_ok=True)
    index = out / "index.html"
    loads = read_loads(lake)
    write_load_pages(out / "loads", loads)
    index.write_text(render(lake, shown, failures, len(runs), overview(loads, runs), task_failures), encoding="utf-8")
    built = (now or dt.datetime.now(dt.timezone.utc)).replace(microsecond=0)
    with open(out / "reports.jsonl", "a", encoding="utf-8") as f:
        f.write(
            json.dumps(
                {
                    "built_at": built.isoformat(),
                    "runs": len(runs),
                    "latest_run": runs[-1].run_id if runs else None,
                    "open_failures": len(failures) + len(task_failures),
                    "open_task_failures": len(task_failures),
                    "open_errors": sum(1 for x in failures if x.latest.is_error),
                }
            )
            + "\n"
        )
    return DqHistory(tuple(runs), tuple(failures), str(index), tuple(task_failures))


def read_loads(lake: str) -> list[dict]:
    """``meta.run_metrics`` rows (every recorded load), oldest run first."""
    from binlake.lake.layout import LakeLayout
    from binlake.lake.metrics import read_metrics

    return sorted(read_metrics(LakeLayout(lake)), key=lambda r: (r["run_end"], r["source"], r["table_name"]))


def run_labels(per_source: list[dict]) -> list[str]:
    """The x labels of the per-run plots: each load's run name (the one naming of runs, as the per-run pages
    and the validations use it), with the source when several sources share a run."""
    shared = {r["run_id"] for r in per_source if sum(1 for x in per_source if x["run_id"] == r["run_id"]) > 1}
    return [f"{r['run_id']} {r['source']}" if r["run_id"] in shared else r["run_id"] for r in per_source]


def _sources(loads: list[dict]) -> list[dict]:
    return [r for r in loads if r["table_name"] == SOURCE_ROW]


def _hours(seconds: Optional[float], unit: bool = True) -> str:
    """A lag in hours, two decimals (``-`` when unknown)."""
    return "-" if seconds is None else f"{seconds / 3600:.2f}{' h' if unit else ''}"


def _when(t: Any) -> str:
    return t.strftime("%Y-%m-%d %H:%M") if t is not None else "-"


def overview(loads: list[dict], runs: list[RunTotals]) -> str:
    """The four plots and the table of loads (HTML)."""
    per_source = _sources(loads)
    if not per_source and not runs:
        return "<p>No load recorded in meta/run_metrics and no validation yet.</p>"
    parts = []
    labels = run_labels(per_source)
    names = sorted({r["source"] for r in per_source})
    lag = {
        n: [
            round(r["lag_seconds"] / 3600, 2) if r["source"] == n and r["lag_seconds"] is not None else None
            for r in per_source
        ]
        for n in names
    }
    parts.append(
        svg_line_chart(
            "Lag per source at the end of each run (run end - last applied commit)",
            "lag (hours)",
            labels,
            lag,
            chart_id="lag",
        )
    )
    day_of = {
        (r["run_id"], r["source"]): r["last_commit_time"].date().isoformat()
        for r in per_source
        if r["last_commit_time"] is not None
    }
    changes: dict[tuple[str, str], int] = {}
    for r in loads:
        day = day_of.get((r["run_id"], r["source"]))
        if r["table_name"] != SOURCE_ROW and day is not None and r["changes"]:
            changes[(day, r["table_name"])] = changes.get((day, r["table_name"]), 0) + r["changes"]
    days = sorted({d for d, _ in changes})
    tables = sorted({t for _, t in changes})
    parts.append(
        svg_bar_chart(
            "Changes applied per day per table",
            "changes",
            days,
            {t: [changes.get((d, t), 0) for d in days] for t in tables},
            chart_id="changes",
        )
    )
    parts.append(
        svg_bar_chart(
            "Quarantined rows per run",
            "rows",
            labels,
            {n: [r["quarantined"] if r["source"] == n else 0 for r in per_source] for n in names},
            chart_id="quarantine",
        )
    )
    parts.append(
        svg_line_chart(
            "Expectation pass rate per validated run",
            "% passed",
            [t.run_id for t in runs],
            {
                "expectations": [
                    round(100 * (t.checked - t.failed_errors - t.failed_warnings) / t.checked, 2) if t.checked else None
                    for t in runs
                ]
            },
            chart_id="pass_rate",
        )
    )
    rows = "".join(
        f"<tr><td><a href='loads/{escape(r['run_id'])}.html'>{escape(r['run_id'])}</a></td>"
        f"<td>{escape(r['source'])}</td><td>{escape(_when(r['run_end']))}</td><td>{escape(r['result'])}</td>"
        f"<td>{r['changes']}</td><td>{r['files_ingested']}</td><td>{r['quarantined']}</td>"
        f"<td>{escape(_when(r['last_commit_time']))}</td></tr>"
        for r in reversed(per_source)
    )
    parts.append(
        "<h3 id='loads'>Loads</h3><table><tr><th>run</th><th>source</th><th>ended (UTC)</th>"
        "<th>result</th><th>changes</th><th>files</th><th>quarantined</th><th>last applied commit</th>"
        "</tr>" + rows + "</table>"
    )
    return "\n".join(parts)


def write_load_pages(folder: Path, loads: list[dict]) -> None:
    """``loads/<run>.html``: one page per recorded load."""
    folder.mkdir(parents=True, exist_ok=True)
    by_run: dict[str, list[dict]] = {}
    for r in loads:
        by_run.setdefault(r["run_id"], []).append(r)
    for run, rows in by_run.items():
        body = [f"<h1>binlake load {escape(run)}</h1><p><a href='../index.html'>overview</a></p>"]
        for src in (r for r in rows if r["table_name"] == SOURCE_ROW):
            body.append(
                f"<h2>source {escape(src['source'])}: {escape(src['result'])}</h2><p>engine "
                f"{escape(src['engine'] or '')}, {escape(_when(src['run_start']))} to "
                f"{escape(_when(src['run_end']))} UTC ({src['seconds']} s; stages "
                f"{escape(src['stage_seconds'] or '')}); "
                f"{src['files_ingested']} file(s), {src['bytes_ingested']} bytes ingested, "
                f"{src['bronze_rows']} bronze rows; {src['changes']} changes applied; {src['quarantined']} "
                f"quarantined; {src['registry_versions']} new schema version(s); {src['decode_errors']} "
                f"undecodable stretch(es); last applied commit {escape(str(src['last_commit_time']))}, "
                f"lag {_hours(src['lag_seconds'])}</p>"
            )
            tables = [r for r in rows if r["source"] == src["source"] and r["table_name"] != SOURCE_ROW]
            body.append(
                "<table><tr><th>table</th><th>inserts</th><th>updates</th><th>deletes</th>"
                "<th>last applied commit</th><th>lag (hours)</th><th>quarantined</th></tr>"
                + "".join(
                    f"<tr><td>{escape(t['table_name'])}</td><td>{t['inserts']}</td><td>{t['updates']}</td>"
                    f"<td>{t['deletes']}</td><td>{escape(str(t['last_commit_time']))}</td>"
                    f"<td>{_hours(t['lag_seconds'], unit=False)}</td><td>{t['quarantined']}</td></tr>"
                    for t in tables
                )
                + "</table>"
            )
        (folder / f"{run}.html").write_text(
            "<!DOCTYPE html><html><head><meta charset='utf-8'><title>binlake load " + escape(run) + "</title>"
            "<style>body{font-family:system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:3px 8px}th{background:#f2f2f2}</style></head><body>"
            + "".join(body)
            + "</body></html>",
            encoding="utf-8",
        )


def render(
    lake: str,
    runs: list[RunTotals],
    failures: list[OpenFailure],
    total_runs: int,
    operations: str = "",
    task_failures: Iterable[dict] = (),
) -> str:
    rows = []
    for t in reversed(runs):
        link = f"../runs/{escape(t.run_id)}/summary.html"
        cls = "fail" if t.failed_errors else ("warn" if t.failed_warnings else "pass")
        rows.append(
            f"<tr class='{cls}'><td><a href='{link}'>{escape(t.run_id)}</a></td>"
            f"<td>{escape(str(t.validated_at))}</td><td>{t.checked}</td><td>{t.failed_errors}</td>"
            f"<td>{t.failed_warnings}</td></tr>"
        )
    fails = [
        f"<tr class='{escape(f.latest.level)}'><td>{escape(f.latest.level)}</td><td>{escape(f.latest.suite)}"
        f"</td><td>{escape(f.latest.expectation_type)}</td><td>{escape(f.latest.columns or '')}</td>"
        f"<td>{escape(f.since_run)} ({f.runs_failing} run{'s' if f.runs_failing > 1 else ''})</td>"
        f"<td>{escape(f.latest.why or '')}</td></tr>"
        for f in failures
    ]
    tasks = [
        f"<tr class='error'><td>failed</td><td>{escape(f['task_id'])}</td><td>{escape(str(f['run_id']))}</td>"
        f"<td>{escape(str(f['since_run']))} ({f['runs_failing']} run{'s' if f['runs_failing'] > 1 else ''})</td>"
        f"<td>{escape(str(f['error'] or ''))}</td></tr>"
        for f in task_failures
    ]
    return "\n".join(
        [
            "<!DOCTYPE html><html><head><meta charset='utf-8'><title>binlake data quality history</title><style>",
            "body{font-family:system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}th{background:#f2f2f2}"
            "tr.fail td:first-child,tr.error td:first-child{color:#c62828;font-weight:bold}"
            "tr.warn td:first-child,tr.warning td:first-child{color:#ef6c00}</style></head><body>",
            "<h1>binlake data quality history</h1>",
            *(["<h2 id='operations'>Operations overview</h2>", operations] if operations else []),
            f"<p>Lake <code>{escape(lake)}</code>: {total_runs} validated runs"
            f"{f', the newest {len(runs)} shown' if len(runs) < total_runs else ''}.</p>",
            f"<h2 id='open'>Open failures ({len(failures) + len(tasks)})</h2>",
            *(
                [
                    f"<h3 id='open-tasks'>Failed load tasks ({len(tasks)})</h3>",
                    "<table><tr><th>state</th><th>task</th><th>latest failed run</th>"
                    "<th>failing since</th><th>error</th></tr>" + "".join(tasks) + "</table>",
                ]
                if tasks
                else []
            ),
            (
                "<table><tr><th>level</th><th>suite</th><th>expectation</th><th>column(s)</th><th>failing since</th>"
                "<th>why it is expected</th></tr>" + "".join(fails) + "</table>"
            )
            if fails
            else ("" if tasks else "<p>None.</p>"),
            "<h2 id='runs'>Runs</h2>",
            "<table><tr><th>run</th><th>validated at (UTC)</th><th>expectations</th><th>failed errors</th>"
            "<th>failed warnings</th></tr>" + "".join(rows) + "</table>",
            "</body></html>",
        ]
    )
