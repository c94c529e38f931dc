"""Reading silver tables back for comparison with an independent truth (the generator's truth/, a server's
SELECT). Reads the Delta tables with deltalake directly (not through binlake's engines).

Silver is typed (date, timestamp, timestamp_ntz, float, ...) while the truth is MySQL text: both sides are put in
one canonical form: temporals as ``YYYY-MM-DD[ HH:MM:SS.ffffff]`` (a date or time that does not exist, such as
``0000-00-00``, as NULL, which is what silver stores for it), FLOAT as the shortest decimal of its float32."""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
import struct
from pathlib import Path
from typing import Any

from binlake.lake.silver import live_rows


def silver_rows(lake: Path, db: str, table: str) -> list[dict[str, Any]]:
    """The rows of silver.<db>__<table> as a reader sees them (bookkeeping columns dropped; FLOAT columns as the
    shortest decimal of their float32, as MySQL prints them)."""
    import pyarrow as pa
    from deltalake import DeltaTable

    from binlake.binlog.columns import shortest_float32

    path = Path(lake, "silver", f"{db}__{table}")
    if not (path / "_delta_log").is_dir():
        return []
    data = DeltaTable(str(path)).to_pyarrow_table()
    floats = [f.name for f in data.schema if f.type == pa.float32()]
    rows = live_rows(data.to_pylist())
    for r in rows:
        for name in floats:
            if r[name] is not None:
                r[name] = shortest_float32(struct.pack("<f", r[name]))
    return rows


def silver_columns(lake: Path, db: str, table: str) -> list[str] | None:
    """The sorted column names of silver.<db>__<table> without the bookkeeping ones; None when it does not exist."""
    from deltalake import DeltaTable

    path = Path(lake, "silver", f"{db}__{table}")
    if not (path / "_delta_log").is_dir():
        return None
    return sorted(f.name for f in DeltaTable(str(path)).schema().fields if not f.name.startswith("_binlake_"))


_TEMPORAL = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?: (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?)?")


def canonical_temporal(text: str) -> Any:
    """MySQL temporal text in the canonical form; None for a date that does not exist; other text unchanged."""
    m = _TEMPORAL.fullmatch(text)
    if m is None:
        return text
    y, mo, d, h, mi, s, frac = m.groups()
    try:
        dt.date(int(y), int(mo), int(d))
    except ValueError:
        return None
    if h is None:
        return f"{y}-{mo}-{d}"
    return f"{y}-{mo}-{d} {h}:{mi}:{s}.{(frac or '').ljust(6, '0')}"


def truth_value(v: Any) -> Any:
    """A value (silver's or the truth's) in the canonical truth encoding: binary as base64, DECIMAL as exact text,
    temporals as :func:`canonical_temporal` (UTC for timestamps)."""
    from decimal import Decimal

    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(bytes(v)).decode("ascii")
    if isinstance(v, Decimal):
        return int(v) if v == v.to_integral_value() and v.as_tuple().exponent == 0 else format(v, "f")
    if isinstance(v, dt.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(dt.timezone.utc)
        return v.strftime("%Y-%m-%d %H:%M:%S.%f")
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, str):
        return canonical_temporal(v)
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
    return sorted(
        json.dumps({k: truth_value(v) for k, v in r.items()}, sort_keys=True, ensure_ascii=False) for r in rows
    ), columns


def diff_summary(expected: list[str], actual: list[str], limit: int = 3) -> str:
    exp, act = set(expected), set(actual)
    missing = sorted(exp - act)[:limit]
    extra = sorted(act - exp)[:limit]
    return (
        f"{len(expected)} expected vs {len(actual)} actual rows; missing {len(exp - act)}: {missing}; "
        f"unexpected {len(act - exp)}: {extra}"
    )


def history_versions(lake: Path, db: str, table: str) -> list[tuple[str, int, str]]:
    """(key, ``_binlake_seq``, op) of every version in silver.<db>__<table>__history, sorted."""
    from deltalake import DeltaTable

    rows = (
        DeltaTable(str(Path(lake, "silver", f"{db}__{table}__history")))
        .to_pyarrow_table(columns=["_binlake_key", "_binlake_seq", "_binlake_op"])
        .to_pylist()
    )
    return sorted((r["_binlake_key"], r["_binlake_seq"], r["_binlake_op"]) for r in rows)


def versions_from_bronze(lake: Path, db: str, table: str, before_us: int) -> list[tuple[str, int, str]]:
    """The versions the SCD2 history of a table with a primary key must hold, from bronze's change rows committed
    before ``before_us`` alone: an insert, an update and a delete each make one version of their key; an update
    that changes the key makes a delete of the old key and an update of the new one (same seq)."""
    from deltalake import DeltaTable

    rows = (
        DeltaTable(str(Path(lake, "bronze", "binlog_events")))
        .to_pyarrow_table(columns=["db", "table_name", "op", "_binlake_seq", "commit_ts", "key_before", "key_after"])
        .to_pylist()
    )
    out = []
    for r in rows:
        if (r["db"], r["table_name"]) != (db, table) or r["commit_ts"] >= before_us:
            continue
        seq, op, old, new = r["_binlake_seq"], r["op"], r["key_before"], r["key_after"]
        if op == "insert":
            out.append((new, seq, "insert"))
        elif op == "delete":
            out.append((old, seq, "delete"))
        elif op == "update" and new is not None and new != old:
            out += [(old, seq, "delete"), (new, seq, "update")]
        elif op == "update":
            out.append((old, seq, "update"))
    return sorted(out)
