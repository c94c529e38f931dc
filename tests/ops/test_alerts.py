"""Freshness check against the generator's commit times, on a lake loaded day by day."""

from __future__ import annotations

import datetime as dt

import pytest

from binlake.lake.metrics import utc
from binlake.orchestration.alerts import SourceLagging, check_freshness

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_freshness_passes_within_the_threshold_and_fails_beyond(loaded_lake) -> None:
    last = utc(loaded_lake.truth[-1].last_commit_us)
    end = dt.datetime.combine(dt.date.fromisoformat(loaded_lake.days[-1]) + dt.timedelta(days=1), dt.time(),
                              dt.timezone.utc)                  # the last run's data interval end
    lag = (end - last).total_seconds()
    [row] = check_freshness(str(loaded_lake.lake), ["shop-primary"], end, max_lag_hours=lag / 3600 + 0.01)
    assert row["source"] == "shop-primary" and row["lag_seconds"] == lag
    assert dt.datetime.fromisoformat(row["last_commit_time"]) == last
    with pytest.raises(SourceLagging) as err:
        check_freshness(str(loaded_lake.lake), ["shop-primary"], end, max_lag_hours=lag / 3600 - 0.01)
    assert "shop-primary" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(SourceLagging, match="other: nothing applied"):
        check_freshness(str(loaded_lake.lake), ["shop-primary", "other"], end, max_lag_hours=1e6)
