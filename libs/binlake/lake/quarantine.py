"""``meta.quarantine``: everything that could not be applied, with the reason; nothing is dropped silently.

Kinds: ``json_diff`` (a partial JSON update REJECTED/ERROR by apply_json_diffs, or skipped because an earlier
diff of the column was), ``missing_row`` (a delete/update of a row without primary key that silver does not
hold), ``decode`` (an undecodable stretch of a binlog: the reader's error with file and offset, and in ``raw``
the stretch's first bytes as in the file from that offset, at most an event header and 64 KiB:
``binlake.pipeline.bronze.RAW_CAP``). Rows are keyed by (source, file, position, row, column) and written with an
insert-only MERGE, so reruns add nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from binlake.vocabulary import SEQ_COL

if TYPE_CHECKING:
    from binlake.lake.delta import DeltaEngine

QUARANTINE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("source", "string"),
    ("binlog_file", "string"),
    ("pos", "bigint"),
    ("row", "bigint"),
    ("column_name", "string"),
    (SEQ_COL, "bigint"),
    ("db", "string"),
    ("table_name", "string"),
    ("kind", "string"),
    ("status", "string"),
    ("reason", "string"),
    ("document", "string"),
    ("diffs", "string"),
    ("gtid", "string"),
    ("run_id", "string"),
    ("raw", "binary"),
)
QUARANTINE_KEYS = ("source", "binlog_file", "pos", "row", "column_name")


def quarantine_row(
    record: dict[str, Any], *, source: str, db: str | None, table: str | None, kind: str, run_id: str
) -> tuple:
    full = {"source": source, "db": db, "table_name": table, "kind": kind, "run_id": run_id, **record}
    return tuple(full.get(name) for name, _ in QUARANTINE_COLUMNS)


def write_quarantine(engine: "DeltaEngine", path: str, rows: Any) -> int:
    """Insert the rows (a DataFrame or Arrow table of QUARANTINE_COLUMNS) not there yet; returns how many
    were new."""
    return engine.merge(path, rows, QUARANTINE_KEYS, SEQ_COL, op_col=None).inserted
