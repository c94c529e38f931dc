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
    assert "; bronze rows insert 5, update 3" in text
