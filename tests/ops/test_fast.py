"""Pure functions of the operations features (fast tier): retention rule, durations, the SVG charts."""

from __future__ import annotations

import re

import pytest

from binlake.lake.maintain import SAFE_RETENTION_HOURS, UnsafeRetentionError, check_retention, stale_staging
from binlake.lake.status import duration, iso
from binlake.quality.report import PALETTE, svg_bar_chart, svg_line_chart


def test_retention_below_the_safe_minimum_needs_force() -> None:
    check_retention(SAFE_RETENTION_HOURS, force=False)
    check_retention(1000, force=False)
    with pytest.raises(UnsafeRetentionError, match="--force"):
        check_retention(SAFE_RETENTION_HOURS - 0.5, force=False)
    check_retention(0, force=True)
    with pytest.raises(UnsafeRetentionError):
        check_retention(-1, force=True)


def test_durations_and_times_for_people() -> None:
    import datetime as dt

    assert [duration(s) for s in (None, 42, 125, 3 * 3600 + 60, 2 * 86400 + 7200)] == [
        "-",
        "42s",
        "2m 5s",
        "3h 1m",
        "2d 2h",
    ]
    assert iso(dt.datetime(2024, 3, 1, 12, 0, tzinfo=dt.timezone.utc)) == "2024-03-01T12:00:00Z"


def test_charts_draw_one_mark_per_value_scaled_to_the_axis() -> None:
    bars = svg_bar_chart("t", "changes", ["d1", "d2"], {"a": [10, 0], "b": [5, 40]}, chart_id="c")
    marks = re.findall(
        r'<rect x="[^"]+" y="([^"]+)" width="[^"]+" height="([^"]+)" fill="([^"]+)" '
        r'data-series="([^"]+)" data-x="([^"]+)" data-value="([^"]+)"',
        bars,
    )
    assert [(s, x, float(v)) for _, _, _, s, x, v in marks] == [
        ("a", "d1", 10),
        ("a", "d2", 0),
        ("b", "d1", 5),
        ("b", "d2", 40),
    ]
    heights = {(s, x): float(h) for _, h, _, s, x, _ in marks}
    assert heights[("b", "d2")] == pytest.approx(8 * heights[("b", "d1")])  # proportional to the values
    assert {c for *_, c, _, _, _ in marks} == {PALETTE[0], PALETTE[1]}
    line = svg_line_chart("t", "hours", ["r1", "r2", "r3"], {"s": [1.5, None, 3]}, chart_id="l")
    assert re.findall(r'data-value="([^"]+)"', line) == ["1.5", "3"]
    assert "<polyline" in line and 'id="l"' in line


def test_stale_staging_folders_older_than_the_retention_are_deleted(tmp_path) -> None:
    import os
    import time

    staging = tmp_path / "_staging"
    old_fold, new_fold = staging / "fold-run1-42", staging / "fold-run2-43"
    old_merge = staging / "binlake-staging" / "abc"
    old_warming = staging / "warming-run1-99"  # a killed run's (DeltaEngine.warming)
    for folder in (old_fold, new_fold, old_merge, old_warming):
        folder.mkdir(parents=True)
        (folder / "part-0.parquet").write_bytes(b"x")
    week_ago = time.time() - 8 * 86400
    for folder in (old_fold, old_merge, old_warming):
        for path in (folder, folder / "part-0.parquet"):
            os.utime(path, (week_ago, week_ago))
    old = sorted([str(old_fold), str(old_merge), str(old_warming)])
    assert stale_staging(str(staging), SAFE_RETENTION_HOURS, dry_run=True) == old
    assert old_fold.exists() and old_merge.exists()  # a dry run deletes nothing
    assert stale_staging(str(staging), SAFE_RETENTION_HOURS) == old
    assert not old_fold.exists() and not old_merge.exists() and not old_warming.exists() and new_fold.exists()
    assert stale_staging(str(tmp_path / "absent"), SAFE_RETENTION_HOURS) == []
