"""The one-page HTML summary of a validation run: verdict, what failed (first), trend against earlier runs,
the run's figures, and every check by suite. Self-contained (inline CSS and SVG, no scripts)."""

from __future__ import annotations

import os
import re
from collections import defaultdict
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING, Any, Iterable, Optional

from binlake.quality.results import ResultRow

if TYPE_CHECKING:
    from binlake.quality.runner import ValidationSummary

TREND_RUNS = 15

_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1200px}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.5em 0;font-size:.9em}td,th{border:1px solid #ccc;padding:3px 8px;
text-align:left;vertical-align:top}th{background:#f2f2f2}
.verdict{display:inline-block;padding:4px 12px;border-radius:4px;color:#fff;font-weight:bold}
.pass{background:#2e7d32}.warn{background:#ef6c00}.fail{background:#c62828}
tr.error td:first-child{color:#c62828;font-weight:bold}tr.warning td:first-child{color:#ef6c00;font-weight:bold}
code{font-size:.85em;word-break:break-all}
"""


@dataclass(frozen=True, slots=True)
class RunTotals:
    run_id: str
    validated_at: Any
    checked: int
    failed_errors: int
    failed_warnings: int


def run_totals(rows: Iterable[ResultRow]) -> list[RunTotals]:
    """Per run (oldest first): expectations checked and failed by level."""
    by_run: dict[str, list[ResultRow]] = defaultdict(list)
    for r in rows:
        by_run[r.run_id].append(r)
    out = [
        RunTotals(
            run,
            min(r.validated_at for r in rs),
            len(rs),
            sum(1 for r in rs if not r.success and r.is_error),
            sum(1 for r in rs if not r.success and not r.is_error),
        )
        for run, rs in by_run.items()
    ]
    return sorted(out, key=lambda t: (t.validated_at, t.run_id))


def _key(r: ResultRow) -> tuple:
    return (r.suite, r.expectation_type, r.columns, r.kwargs)


def _verdict(summary: "ValidationSummary") -> tuple[str, str]:
    if summary.not_validated:
        return "fail", (
            f"NOT VALIDATED: {len(summary.not_validated)} check(s) could not be validated, "
            f"{len(summary.failed_errors)} error-level expectation(s) failed"
        )
    if summary.failed_errors:
        return "fail", f"FAILED: {len(summary.failed_errors)} error-level expectation(s) failed"
    if summary.failed_warnings:
        return "warn", f"PASSED with {len(summary.failed_warnings)} warning(s)"
    return "pass", "PASSED"


def _table(header: list[str], rows: Iterable[list[str]], row_classes: Iterable[str] = ()) -> str:
    classes = list(row_classes)
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = []
    for i, cells in enumerate(rows):
        cls = f' class="{classes[i]}"' if i < len(classes) else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def _code(text: Any) -> str:
    return "" if text is None else f"<code>{escape(str(text))}</code>"


def _trend_svg(totals: list[RunTotals]) -> str:
    """Failed expectations per run, error and warning level side by side, on a labelled axis (runs oldest
    left); "" with no run."""
    if not totals:
        return ""
    return svg_bar_chart(
        "Failed expectations per run",
        "failed expectations",
        [t.run_id for t in totals],
        {"error level": [t.failed_errors for t in totals], "warning level": [t.failed_warnings for t in totals]},
        chart_id="trend_chart",
        colors=("#c62828", "#ef6c00"),
    )


def render_summary(summary: "ValidationSummary", earlier: list[ResultRow]) -> str:
    """The page's HTML. ``earlier``: result rows of previous runs (from ``meta.dq_results``)."""
    cls, verdict = _verdict(summary)
    results = list(summary.results)
    suites = sorted({r.suite for r in results})
    docs_link = os.path.relpath(summary.data_docs_path, os.path.dirname(summary.report_path))
    totals = run_totals(list(earlier) + results)[-TREND_RUNS:]
    prev_runs = [t.run_id for t in totals if t.run_id != summary.run_id]
    failing_before: dict[tuple, int] = defaultdict(int)  # key -> consecutive failing runs before this one
    by_run: dict[str, dict[tuple, bool]] = defaultdict(dict)
    for r in earlier:
        by_run[r.run_id][_key(r)] = r.success
    for key in {_key(r) for r in results}:
        for run in reversed(prev_runs):
            if by_run[run].get(key) is False:
                failing_before[key] += 1
            else:
                break

    out = [
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>binlake data quality: "
        f"{escape(summary.run_id)}</title><style>{_CSS}</style></head><body>",
        f"<h1>binlake data quality: run {escape(summary.run_id)}</h1>",
        f"<p><span class='verdict {cls}' id='verdict'>{escape(verdict)}</span></p>",
        f"<p>Lake <code>{escape(summary.lake)}</code>, validated {escape(str(summary.validated_at))} UTC: "
        f"{len(results)} expectations in {len(suites)} suites; {len(summary.failed_errors)} error-level and "
        f"{len(summary.failed_warnings)} warning-level failed. "
        f"<a href='{escape(docs_link)}'>Great Expectations Data Docs</a></p>",
    ]

    if summary.not_validated:
        out.append(
            "<h2 id='not-validated'>Not validated (the run fails)</h2><ul>"
            + "".join(f"<li>{escape(s)}</li>" for s in summary.not_validated)
            + "</ul>"
        )
    failed = summary.failed_errors + summary.failed_warnings
    out.append("<h2 id='failed'>What failed</h2>")
    if failed:
        out.append(
            _table(
                [
                    "level",
                    "suite",
                    "expectation",
                    "column(s)",
                    "why it is expected",
                    "unexpected",
                    "sample / observed",
                    "failing since",
                ],
                (
                    [
                        escape(r.level),
                        escape(r.suite),
                        escape(r.expectation_type),
                        _code(r.columns),
                        escape(r.why or ""),
                        escape("" if r.unexpected_count is None else f"{r.unexpected_count} of {r.element_count}"),
                        _code(
                            r.exception
                            or (r.unexpected_sample if r.unexpected_sample not in ("", "[]") else None)
                            or r.observed_value
                        ),
                        escape(
                            "this run"
                            if not failing_before[_key(r)]
                            else f"{failing_before[_key(r)] + 1} runs in a row"
                        ),
                    ]
                    for r in failed
                ),
                (r.level for r in failed),
            )
        )
    else:
        out.append("<p>Nothing failed.</p>")

    out.append("<h2 id='trend'>Trend</h2>")
    out.append(_trend_svg(totals))
    out.append(f"<p><small>The last {len(totals)} run(s), oldest left; no bar: nothing failed in that run.</small></p>")
    out.append(
        _table(
            ["run", "validated at (UTC)", "expectations", "failed errors", "failed warnings"],
            (
                [
                    ("<b>" + escape(t.run_id) + "</b>") if t.run_id == summary.run_id else escape(t.run_id),
                    escape(str(t.validated_at)),
                    str(t.checked),
                    str(t.failed_errors),
                    str(t.failed_warnings),
                ]
                for t in reversed(totals)
            ),
        )
    )

    for title, rows in summary.facts:
        out.append(f"<h2>{escape(title)}</h2>")
        if rows:
            cols = list(rows[0])
            out.append(_table(cols, ([escape(str(r.get(c))) for c in cols] for r in rows)))
        else:
            out.append("<p>(none)</p>")

    out.append("<h2 id='checks'>Every check</h2>")
    for suite in suites:
        rs = [r for r in results if r.suite == suite]
        bad = sum(1 for r in rs if not r.success)
        out.append(
            f"<details{' open' if bad else ''}><summary><b>{escape(suite)}</b>: {len(rs)} expectations, "
            f"{bad} failed</summary>"
        )
        out.append(
            _table(
                ["result", "level", "expectation", "column(s)", "arguments", "why"],
                (
                    [
                        "passed" if r.success else "FAILED",
                        escape(r.level),
                        escape(r.expectation_type),
                        _code(r.columns),
                        _code(r.kwargs),
                        escape(r.why or ""),
                    ]
                    for r in rs
                ),
            )
        )
        out.append("</details>")
    out.append("</body></html>")
    return "\n".join(out)


_FRESHNESS = re.compile(r"<!--freshness-->.*?<!--/freshness-->", re.S)
_VERDICT = re.compile(r"<span class='verdict (\w+)' id='verdict'>([^<]*)</span>")


def record_freshness(report_path: str, rows: list[dict[str, Any]], problem: Optional[str]) -> bool:
    """Put a run's freshness result (``rows``: per source ``source``, ``last_commit_time``, ``lag_seconds``;
    ``problem``: why it failed, None when it passed) into the run's summary page, replacing an earlier one; a
    failed check turns the page's verdict FAILED. False when the run has no page (it was not validated)."""
    try:
        with open(report_path, encoding="utf-8") as f:
            page = f.read()
    except FileNotFoundError:
        return False
    body = [f"<h2 id='freshness'>Freshness: {'FAILED' if problem else 'passed'}</h2>"]
    if problem:
        body.append(f"<p class='freshness-failed'>{escape(problem)}</p>")
    if rows:
        body.append(
            _table(
                ["source", "last applied commit (UTC)", "lag (hours)"],
                (
                    [
                        escape(str(r.get("source"))),
                        escape(str(r.get("last_commit_time") or "-")),
                        "-" if r.get("lag_seconds") is None else f"{r['lag_seconds'] / 3600:.2f}",
                    ]
                    for r in rows
                ),
            )
        )
    section = "<!--freshness-->" + "".join(body) + "<!--/freshness-->"
    page = (
        _FRESHNESS.sub(lambda m: section, page)
        if _FRESHNESS.search(page)
        else page.replace("<h2 id='failed'>", section + "<h2 id='failed'>", 1)
    )
    verdict = _VERDICT.search(page)
    if problem and verdict is not None and "freshness failed" not in verdict.group(2):
        checks = verdict.group(2)
        text = (
            f"FAILED: freshness failed (the checks {checks})"
            if checks.startswith("PASSED")
            else f"{checks}; freshness failed"
        )
        page = (
            page[: verdict.start()] + f"<span class='verdict fail' id='verdict'>{text}</span>" + page[verdict.end() :]
        )
    with open(report_path, "w", encoding="utf-8") as f:
        f.write(page)
    return True


def write_summary(summary: "ValidationSummary", earlier: list[ResultRow]) -> str:
    os.makedirs(os.path.dirname(summary.report_path), exist_ok=True)
    with open(summary.report_path, "w", encoding="utf-8") as f:
        f.write(render_summary(summary, earlier))
    return summary.report_path


# --- inline SVG charts (the operations overview; no plotting package, no scripts) ---------------------------

PALETTE = ("#1565c0", "#c62828", "#2e7d32", "#6a1b9a", "#ef6c00", "#00838f", "#ad1457", "#4e342e")


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    step = 10 ** len(str(int(value))) / 10
    for m in (1, 2, 2.5, 5, 10):
        if value <= m * step:
            return m * step
    return value


def _fmt(v: float) -> str:
    return f"{v:.0f}" if abs(v) >= 10 or v == int(v) else f"{v:.2g}"


def _frame(
    title: str,
    y_label: str,
    y_max: float,
    width: int,
    height: int,
    left: int,
    bottom: int,
    categories: list[str],
    x_of: Any,
) -> list[str]:
    top, plot_h = 28, height - 28 - bottom
    out = [
        f'<text x="{left}" y="16" font-size="13" font-weight="bold">{escape(title)}</text>',
        f'<text x="6" y="{top + plot_h / 2:.0f}" font-size="11" transform="rotate(-90 10 {top + plot_h / 2:.0f})" '
        f'text-anchor="middle">{escape(y_label)}</text>',
    ]
    for i in range(5):
        v = y_max * i / 4
        y = top + plot_h - plot_h * i / 4
        out.append(
            f'<line x1="{left}" x2="{width - 10}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e0e0e0"/>'
            f'<text x="{left - 4}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{_fmt(v)}</text>'
        )
    every = max(1, len(categories) // 12)
    for i, label in enumerate(categories):
        label = label if len(label) <= 18 else "…" + label[-17:]
        if i % every == 0:
            x = x_of(i)
            out.append(
                f'<text x="{x:.1f}" y="{top + plot_h + 14}" font-size="10" text-anchor="end" '
                f'transform="rotate(-30 {x:.1f} {top + plot_h + 14})">{escape(label)}</text>'
            )
    out.append(
        f'<line x1="{left}" x2="{width - 10}" y1="{top + plot_h}" y2="{top + plot_h}" stroke="#444"/>'
        f'<line x1="{left}" x2="{left}" y1="{top}" y2="{top + plot_h}" stroke="#444"/>'
    )
    return out


def _legend(names: list[str], x: int, y: int, colors: tuple[str, ...] = PALETTE) -> list[str]:
    out = []
    for i, name in enumerate(names):
        out.append(
            f'<rect x="{x}" y="{y + i * 16}" width="10" height="10" fill="{colors[i % len(colors)]}"/>'
            f'<text x="{x + 14}" y="{y + i * 16 + 9}" font-size="11">{escape(name)}</text>'
        )
    return out


def svg_line_chart(
    title: str,
    y_label: str,
    categories: list[str],
    series: dict[str, list[Any]],
    *,
    chart_id: str,
    width: int = 760,
    height: int = 240,
) -> str:
    """One line per series over shared x categories (``None``: no point there); a ``<title>`` per point."""
    left, bottom, legend_w = 70, 60, 150
    values = [v for vs in series.values() for v in vs if v is not None]
    y_max = _nice_max(max(values, default=0))
    plot_w = width - left - 10 - legend_w
    plot_h = height - 28 - bottom
    n = max(len(categories), 1)

    def x_of(i: int) -> float:
        return left + (plot_w * (i + 0.5) / n)

    def y_of(v: float) -> float:
        return 28 + plot_h - plot_h * v / y_max

    out = _frame(title, y_label, y_max, width - legend_w, height, left, bottom, categories, x_of)
    for k, (name, vs) in enumerate(series.items()):
        color = PALETTE[k % len(PALETTE)]
        pts = [(x_of(i), y_of(v), i, v) for i, v in enumerate(vs) if v is not None]
        if len(pts) > 1:
            out.append(
                f'<polyline fill="none" stroke="{color}" stroke-width="2" points="'
                + " ".join(f"{x:.1f},{y:.1f}" for x, y, _, _ in pts)
                + '"/>'
            )
        for x, y, i, v in pts:
            out.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="{color}" data-series="{escape(name)}" '
                f'data-x="{escape(categories[i])}" data-value="{v}"><title>{escape(name)} '
                f"{escape(categories[i])}: {_fmt(v)} {escape(y_label)}</title></circle>"
            )
    out += _legend(list(series), width - legend_w + 10, 30)
    return (
        f'<svg id="{escape(chart_id)}" class="chart" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">{"".join(out)}</svg>'
    )


def svg_bar_chart(
    title: str,
    y_label: str,
    categories: list[str],
    series: dict[str, list[float]],
    *,
    chart_id: str,
    width: int = 760,
    height: int = 240,
    colors: tuple[str, ...] = PALETTE,
) -> str:
    """Grouped bars: per x category one bar per series (``colors`` in series order); a ``<title>`` per bar."""
    left, bottom, legend_w = 70, 60, 150
    y_max = _nice_max(max((v for vs in series.values() for v in vs), default=0))
    plot_w = width - left - 10 - legend_w
    plot_h = height - 28 - bottom
    n = max(len(categories), 1)
    group = plot_w / n
    bar = max(2.0, group * 0.8 / max(len(series), 1))

    def x_of(i: int) -> float:
        return left + group * (i + 0.5)

    out = _frame(title, y_label, y_max, width - legend_w, height, left, bottom, categories, x_of)
    for k, (name, vs) in enumerate(series.items()):
        color = colors[k % len(colors)]
        for i, v in enumerate(vs):
            h = plot_h * v / y_max
            x = left + group * i + group * 0.1 + k * bar
            out.append(
                f'<rect x="{x:.1f}" y="{28 + plot_h - h:.1f}" width="{bar:.1f}" height="{h:.1f}" '
                f'fill="{color}" data-series="{escape(name)}" data-x="{escape(categories[i])}" '
                f'data-value="{v}"><title>{escape(name)} {escape(categories[i])}: {_fmt(v)} '
                f"{escape(y_label)}</title></rect>"
            )
    out += _legend(list(series), width - legend_w + 10, 30, colors)
    return (
        f'<svg id="{escape(chart_id)}" class="chart" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">{"".join(out)}</svg>'
    )
