"""Freshness check against the generator's commit times, on a lake loaded day by day: judged against the run's
data interval end (not the wall clock), a quiet source fresh up to its newest landed commit, landed but
unapplied changes lagging."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest

from binlake.lake.metrics import utc
from binlake.orchestration.alerts import SourceLagging, check_freshness, last_commit_times

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _day_end(day: str) -> dt.datetime:
    return dt.datetime.combine(dt.date.fromisoformat(day) + dt.timedelta(days=1), dt.time(), dt.timezone.utc)


def test_a_quiet_source_is_fresh_and_an_old_day_is_judged_against_its_own_end(loaded_lake) -> None:
    lake, last = str(loaded_lake.lake), utc(loaded_lake.truth[-1].last_commit_us)
    # today's scheduled run on a sample whose newest change is weeks old: nothing newer landed, not an outage
    weeks_later = _day_end(loaded_lake.days[-1]) + dt.timedelta(days=30)
    [row] = check_freshness(lake, ["shop-primary"], weeks_later, max_lag_hours=1)
    assert row["quiet"] and row["lag_seconds"] == 0
    assert dt.datetime.fromisoformat(row["last_commit_time"]) == last
    assert dt.datetime.fromisoformat(row["last_landed_commit_time"]) == last
    # a backfill of the first day after later days were applied: that day's changes are in, nothing lags
    [row] = check_freshness(lake, ["shop-primary"], _day_end(loaded_lake.days[0]), max_lag_hours=0)
    assert row["lag_seconds"] == 0 and not row["quiet"]
    with pytest.raises(SourceLagging, match="other: nothing applied"):
        check_freshness(lake, ["shop-primary", "other"], weeks_later, max_lag_hours=1e6)


def test_landed_changes_not_applied_lag(loaded_lake, tmp_path: Path) -> None:
    from deltalake import DeltaTable

    lake = tmp_path / "lake"
    shutil.copytree(loaded_lake.lake, lake)
    # the checkpoints as the second day's run left them: the third day is in bronze but not applied
    day2 = utc(loaded_lake.truth[-2].last_commit_us)
    checkpoints = DeltaTable(str(lake / "meta" / "checkpoints"))
    for version in range(checkpoints.version() - 1, -1, -1):
        checkpoints.restore(version)
        if last_commit_times(str(lake), ["shop-primary"])["shop-primary"] == day2:
            break
    else:
        raise AssertionError("no checkpoints version ends at the second day")
    last = utc(loaded_lake.truth[-1].last_commit_us)
    end = _day_end(loaded_lake.days[-1])
    lag = (last - day2).total_seconds()  # behind the newest landed commit, which is before `end`
    [row] = check_freshness(str(lake), ["shop-primary"], end, max_lag_hours=lag / 3600 + 0.01)
    assert row["lag_seconds"] == lag and not row["quiet"]
    with pytest.raises(SourceLagging) as err:
        check_freshness(str(lake), ["shop-primary"], end, max_lag_hours=lag / 3600 - 0.01)
    assert "shop-primary" in str(err.value) and "\n" not in str(err.value)
    # the run of the second day itself: everything committed before its end is applied; its lag is the day's
    # quiet last minutes, whatever landed after its end
    end2 = _day_end(loaded_lake.days[-2])
    [row] = check_freshness(str(lake), ["shop-primary"], end2, max_lag_hours=1)
    assert row["lag_seconds"] == (end2 - day2).total_seconds() < 3600
