"""Reading silver tables back for comparison with an independent truth (the generator's truth/, a server's
SELECT). Reads the Delta tables with deltalake directly (not through binlake's engines)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from binlake.lake.silver import live_rows

BOOKKEEPING = ("_binlake_seq", "_binlake_op", "_binlake_count")


def silver_rows(lake: Path, db: str, table: str) -> list[dict[str, Any]]:
    """The live rows of silver.<db>__<table> (tombstones dropped, no-PK multiplicities expanded)."""
    from deltalake import DeltaTable

    path = Path(lake, "silver", f"{db}__{table}")
    if not (path / "_delta_log").is_dir():
        return []
    return live_rows(DeltaTable(str(path)).to_pyarrow_table().to_pylist())


def truth_value(v: Any) -> Any:
    """A silver value in the generator's truth encoding (binary as base64, DECIMAL as exact text)."""
    from decimal import Decimal

    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(bytes(v)).decode("ascii")
    if isinstance(v, Decimal):
        return int(v) if v == v.to_integral_value() and v.as_tuple().exponent == 0 else format(v, "f")
    return v


def as_lines(rows: list[dict[str, Any]], columns: list[str] | None = None) -> list[str]:
    """Rows as sorted canonical JSON lines (only ``columns`` when given)."""
    out = []
    for r in rows:
        keep = columns if columns is not None else list(r)
        out.append(json.dumps({c: truth_value(r.get(c)) for c in keep}, sort_keys=True, ensure_ascii=False))
    return sorted(out)


def truth_lines(truth_dir: Path, db: str, table: str, day: str) -> tuple[list[str], list[str]]:
    """(sorted canonical lines, column names) of truth/<db>.<table>/day=<day>.jsonl."""
    path = Path(truth_dir, f"{db}.{table}", f"day={day}.jsonl")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    columns = list(rows[0]) if rows else []
    return sorted(json.dumps(r, sort_keys=True, ensure_ascii=False) for r in rows), columns


def diff_summary(expected: list[str], actual: list[str], limit: int = 3) -> str:
    exp, act = set(expected), set(actual)
    missing = sorted(exp - act)[:limit]
    extra = sorted(act - exp)[:limit]
    return (f"{len(expected)} expected vs {len(actual)} actual rows; missing {len(exp - act)}: {missing}; "
            f"unexpected {len(act - exp)}: {extra}")
