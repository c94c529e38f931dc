"""`binlake run`'s per-source summary as a new user reads it (scripts/sample.sh's console)."""

from __future__ import annotations

from binlake.cli.run_cmd import format_summary
from binlake.vocabulary import KEY_CHANGE_OP


def _summary(bronze_rows: dict[str, int]) -> dict:
    return {
        "source": "shop-primary",
        "run_id": "2024-03-02",
        "files": 0,
        "files_skipped": 8,
        "bytes": 0,
        "events": 0,
        "transactions": 0,
        "bronze_rows": bronze_rows,
        "changes_applied": 2388,
        "tables": 4,
        "ops": {"insert": 707, "update": 1499, "delete": 182, KEY_CHANGE_OP: 63, "already_applied": 0},
        "quarantined": 0,
        "invalid_temporals": 0,
        "ddl": [],
        "seconds": 1.0,
        "stage_seconds": {"ingest": 1.0},
    }


def test_a_run_that_ingested_nothing_says_none_not_a_dangling_label() -> None:
    [events] = [line for line in format_summary(_summary({})).splitlines() if line.lstrip().startswith("events")]
    assert events.endswith("bronze rows none"), events


def test_bronze_rows_by_operation() -> None:
    text = format_summary(_summary({"update": 3, "insert": 5}))
    assert text.splitlines()[2].endswith("; bronze rows insert 5, update 3")
    text = format_summary(_summary({"file_end": 2, "ddl": 1, "layout": 3, "delete": 4, "insert": 5}))
    assert text.splitlines()[2].endswith("; bronze rows insert 5, delete 4, ddl 1 (+5 file-end and layout rows)")
    assert (
        format_summary(_summary({"file_end": 2}))
        .splitlines()[2]
        .endswith("; bronze rows none (+2 file-end and layout rows)")
    )


def test_apply_parts_are_shown_inside_apply() -> None:
    stages = {"ingest": 3.04, "scan": 1.0, "fold": 2.0, "merge": 3.0, "apply": 8.0}
    text = format_summary({**_summary({}), "seconds": 11.2, "stage_seconds": stages})
    assert (
        text.splitlines()[-1] == "  time       11.2 s (ingest 3.0 s, apply 8.0 s (scan 1.0 s, fold 2.0 s, merge 3.0 s))"
    )
    assert format_summary(_summary({})).splitlines()[-1] == "  time       1.0 s (ingest 1.0 s)"
