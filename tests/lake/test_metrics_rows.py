"""``meta.run_metrics``: a run reads only its own bronze rows; the tables it does not touch keep the last change
time their newest recorded row has (``binlake.lake.metrics._unchanged_tables``)."""

from __future__ import annotations

import datetime as dt

from binlake.lake.metrics import _unchanged_tables, utc
from binlake.vocabulary import SOURCE_ROW

UTC = dt.timezone.utc


def metrics_row(table: str, run_end: int, last_us: int | None) -> dict:
    return {
        "source": "s",
        "table_name": table,
        "run_end": dt.datetime(2024, 3, run_end, tzinfo=UTC),
        "last_commit_time": utc(last_us),
        "checkpoint_seq": run_end,
    }


def test_untouched_tables_keep_their_newest_recorded_change_time():
    recorded = [
        metrics_row(SOURCE_ROW, 1, 10),
        metrics_row("a.t1", 1, 5),
        metrics_row("a.t2", 1, 7),
        metrics_row("a.t2", 3, 1_700_000_000_123_456),
        metrics_row("a.t2", 2, 9),
        metrics_row("b.t3", 2, None),
    ]
    touched = [{"db": "a", "table_name": "t1"}, {"db": None, "table_name": None}]
    [t2] = _unchanged_tables(recorded, touched)
    assert t2 == {
        "source": "s",
        "db": "a",
        "table_name": "t2",
        "last_change_us": 1_700_000_000_123_456,
        "last_commit_us": 1_700_000_000_123_456,
        "inserts": 0,
        "updates": 0,
        "deletes": 0,
        "decode_errors": 0,
    }


def test_naive_timestamps_read_back_as_utc():
    row = metrics_row("a.t", 1, 42)
    row["last_commit_time"] = row["last_commit_time"].replace(tzinfo=None)
    assert _unchanged_tables([row], [])[0]["last_change_us"] == 42
