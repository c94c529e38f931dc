"""What a command that reads the whole lake (``binlake status``) says when a table is damaged, and names printed
safely.

A Delta table is damaged when its log can not be replayed (a commit file that is not a Delta commit: JSON
actions, one per line) or a data file its log names is gone. Any engine's reader then fails deep inside
(delta-rs' ``DeltaError``, Spark's ``Py4JJavaError``); :func:`damaged_lake_error` finds the table by checking each
Delta table of the lake itself (``_delta_log`` replayed by delta-rs, every named file present) and turns the
failure into one line naming the table, what is wrong and what to do.

Names come from the binlogs (database and table names are the server's, any characters): :func:`printable`
escapes control characters (C0, DEL, C1 and the bidirectional overrides) before they reach a terminal.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any, Callable, Optional, TypeVar
from urllib.parse import unquote, urlsplit

from binlake.errors import BinlakeError
from binlake.lake.errors import LakeError

if TYPE_CHECKING:
    from binlake.lake.layout import LakeLayout

T = TypeVar("T")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


class DamagedTableError(LakeError):
    """A Delta table of the lake can not be read: its log or one of its data files is damaged or missing."""


def printable(text: str) -> str:
    """``text`` with each control character as ``\\xNN`` / ``\\uNNNN`` (a backslash itself unchanged)."""
    return _CONTROL.sub(
        lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", text
    )


def printable_doc(value: Any) -> Any:
    """A JSON-like document with every string (keys included) made :func:`printable`."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable_doc(k): printable_doc(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [printable_doc(v) for v in value]
    return value


def delta_tables(lake: "LakeLayout") -> list[str]:
    """The Delta table folders of the lake (a folder holding ``_delta_log``), bronze and meta first."""
    out = []
    for top in ("bronze", "meta", "silver"):
        base = lake.path(top)
        if not os.path.isdir(base):
            continue
        for entry in sorted(os.scandir(base), key=lambda e: e.name):
            if entry.is_dir(follow_symlinks=False) and os.path.isdir(os.path.join(entry.path, "_delta_log")):
                out.append(entry.path)
    return out


def table_damage(path: str) -> Optional[str]:
    """What is wrong with the Delta table at ``path`` (its log replayed by delta-rs, its files present), or None."""
    from deltalake import DeltaTable

    try:
        files = DeltaTable(path).file_uris()
    except Exception as exc:  # noqa: BLE001 -- any failure to replay the log is the damage being looked for
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return (
            f"its Delta log ({os.path.join(path, '_delta_log')}) can not be replayed ({first[:200]}); a commit "
            "file there is not a Delta commit"
        )
    missing = [p for p in map(_local, files) if p is not None and not os.path.exists(p)]
    if missing:
        return (
            f"{len(missing)} data file(s) its Delta log names are missing (first: {missing[0]}); a file was "
            "deleted outside binlake"
        )
    return None


def damaged_lake_error(lake: "LakeLayout", cause: BaseException) -> BaseException:
    """:class:`DamagedTableError` for the first damaged table of ``lake`` when reading it failed with ``cause``;
    ``cause`` itself when every table reads (the failure is something else)."""
    for path in delta_tables(lake):
        problem = table_damage(path)
        if problem is not None:
            name = os.path.relpath(path, lake.root)
            return DamagedTableError(
                printable(
                    f"the lake's table {name} is damaged: {problem}. Restore that table folder from a backup (a silver "
                    "table can also be removed and loaded again: binlake snapshot, then binlake run); the other tables "
                    "were not changed"
                )
            )
    return cause


def guarded(lake: "LakeLayout", read: Callable[[], T]) -> T:
    """``read()``, with a failure caused by a damaged table raised as :class:`DamagedTableError`."""
    try:
        return read()
    except BinlakeError:
        raise
    except Exception as exc:  # noqa: BLE001 -- re-raised as is unless a damaged table explains it
        error = damaged_lake_error(lake, exc)
        if error is exc:
            raise
        raise error from None


def _local(uri: str) -> Optional[str]:
    """A local path of a data file URI (None for a remote store, not checked here)."""
    parts = urlsplit(uri)
    if parts.scheme in ("", "file"):
        return unquote(parts.path) if parts.scheme else uri
    return None
