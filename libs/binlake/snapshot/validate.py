"""What makes a snapshot usable for seeding, checked where it is taken (the server's answers) and where it is read
(a manifest that is damaged or was written from a hostile server's answers).

Each function returns why the value is unusable, or None. A position must be one the binlog ordering can place
(``binlake.pipeline.identity.ordering_key``: a binlog name ending in its sequence number, an offset past the
magic), a table's columns unique in the case-insensitive way MySQL and Spark compare them, its key made of its
columns (the manifest's folder and file names are checked when it is read: ``manifest.Manifest.from_json``).
"""

from __future__ import annotations

from typing import Any, Optional

from binlake.errors import BinlakeError
from binlake.pipeline.identity import file_sequence, ordering_key
from binlake.transport.protocol import binlog_name_problem

MIN_POSITION = 4  # a binlog's first event follows its 4-byte magic
MAX_GTID_TEXT = 1 << 20


def position_problem(file: Any, pos: Any, gtid: Any = None) -> Optional[str]:
    """Why (``file``, ``pos``, ``gtid``) is not a binlog position binlake can continue from."""
    if not isinstance(file, str):
        return f"expected a binlog file name, found {file!r}"
    reason = binlog_name_problem(file)
    if reason is not None:
        return f"binlog file: {reason}"
    if isinstance(pos, bool) or not isinstance(pos, int):
        return f"expected an integer binlog offset, found {pos!r}"
    if pos < MIN_POSITION:
        return f"expected a binlog offset of at least {MIN_POSITION}, found {pos}"
    try:
        ordering_key(file_sequence(file), pos, 0)
    except BinlakeError as exc:
        return str(exc)
    if gtid is not None and (
        not isinstance(gtid, str) or len(gtid) > MAX_GTID_TEXT or any(ord(ch) < 32 for ch in gtid)
    ):
        return f"expected a GTID set as text, found {str(gtid)[:80]!r}"
    return None


def columns_problem(names: list[Any]) -> Optional[str]:
    """Why a table's column names can not be a silver table's (none, empty, not text, duplicates)."""
    if not names:
        return "the table has no columns"
    seen: dict[str, str] = {}
    for name in names:
        if not isinstance(name, str) or not name:
            return f"expected a column name, found {name!r}"
        other = seen.get(name.lower())
        if other is not None:
            return f"the column {name!r} appears twice" + (f" (as {other!r})" if other != name else "")
        seen[name.lower()] = name
    return None


def key_problem(key: Any, names: list[str]) -> Optional[str]:
    """Why ``key`` is not a primary key of the columns ``names``."""
    if not isinstance(key, (list, tuple)) or len(set(map(str, key))) != len(key):
        return f"expected distinct key columns, found {key!r}"
    missing = [k for k in key if k not in names]
    return f"the key names {', '.join(map(repr, missing))}, which is no column" if missing else None


def manifest_problem(manifest: Any) -> Optional[str]:
    """Why a complete snapshot's manifest (:class:`binlake.snapshot.manifest.Manifest`) can not seed silver."""
    from binlake.binlog.silver_types import arrow_schema

    views = {v.index for v in manifest.views}
    for v in manifest.views:
        reason = position_problem(v.position.file, v.position.pos, v.position.gtid)
        if reason is not None:
            return f"view {v.index}: position {v.position.file}:{v.position.pos}: {reason}"
    for t in manifest.tables:
        where = f"table {str(t.db)[:80]!r}.{str(t.table)[:80]!r}"
        names = [c.name for c in t.columns]
        reason = columns_problem(names) or key_problem(t.primary_key, names)
        if reason is None and t.view not in views:
            reason = f"its view {t.view!r} is not one of the snapshot's views"
        if reason is None and any(
            isinstance(c.rows, bool) or not isinstance(c.rows, int) or c.rows < 0 for c in t.chunks
        ):
            reason = "a chunk's row count is not a count"
        if reason is None:
            try:
                arrow_schema([(c.name, c.silver_type) for c in t.columns])
            except (BinlakeError, ValueError, TypeError, KeyError) as exc:
                reason = f"its column types are not silver types ({str(exc)[:160]})"
        if reason is not None:
            return f"{where}: {reason}"
    return None
