"""Folder names and the link check the lake and snapshots share (below both packages: ``binlake.lake`` and
``binlake.snapshot`` import them from here).

Silver folder names are an injective, reversible function of (db, table): names made only of ASCII letters,
digits, ``$`` and single inner underscores keep their readable ``<db>__<table>`` form; any other pair (``/``,
``..``, spaces, ``<``, non-ASCII, ``__`` inside a name, a leading or trailing ``_``) is percent-encoded whole,
``_`` included (each UTF-8 byte outside ``[A-Za-z0-9$]`` as ``~XX``; ``%`` would be taken for a URI escape by
Hadoop and delta-rs paths), so encoded folders always hold a ``~`` and plain ones never do, and the ``__`` separator is
unambiguous in both. A folder can never leave ``silver/``. Encodings longer than a file name allows are cut
and suffixed with ``~~`` and a hash of the full pair; the pair is then kept in the table folder's
``_binlake_table.json`` (a ``_`` file, which Delta and VACUUM leave alone). A NUL byte is refused (MySQL identifiers
can not hold one).

The link check (:func:`link_problem`): what binlake writes or deletes is provably under its root, with no
symbolic link on the way (``binlake.lake.owned``).
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Optional

from binlake.errors import BinlakeError

HISTORY_SUFFIX = "__history"
SEPARATOR = "__"
_PLAIN = re.compile(r"[A-Za-z0-9$]+(?:_[A-Za-z0-9$]+)*")
_MAX_NAME = 200  # bytes of a folder name, below the usual 255 with room for suffixes


class TableNameError(BinlakeError):
    """A (db, table) pair that can not name a lake table (a NUL byte, an empty name)."""


_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789$")


def _encode(name: str) -> str:
    return "".join(chr(b) if b in _SAFE else f"~{b:02X}" for b in name.encode("utf-8"))


def _decode(name: str) -> str:
    out = bytearray()
    i = 0
    while i < len(name):
        if name[i] == "~":
            out.append(int(name[i + 1 : i + 3], 16))
            i += 3
        else:
            out += name[i].encode()
            i += 1
    return out.decode("utf-8")


def silver_name(db: str, table: str) -> str:
    """The folder name of ``silver.<db>.<table>`` (see the module docstring)."""
    for part, what in ((db, "database"), (table, "table")):
        if not part or "\x00" in part:
            raise TableNameError(f"{what} name {part!r} can not name a lake table (empty or holding a NUL byte)")
    if _PLAIN.fullmatch(db) and _PLAIN.fullmatch(table):
        name = f"{db}{SEPARATOR}{table}"
    else:
        name = f"{_encode(db)}{SEPARATOR}{_encode(table)}"
    if len(name.encode()) > _MAX_NAME:
        digest = hashlib.sha256(f"{db}\x00{table}".encode()).hexdigest()[:16]
        name = f"{name[: _MAX_NAME - 18]}~~{digest}"
    return name


def parse_silver_name(folder: str) -> Optional[tuple[str, str]]:
    """(db, table) of a silver folder name, or None for a folder that is not one (history tables, a cut name
    whose pair is only in the table's metadata, anything else)."""
    if folder.endswith(HISTORY_SUFFIX) or "~~" in folder:
        return None
    db, sep, table = folder.partition(SEPARATOR)
    if not sep or not db or not table or SEPARATOR in table:
        return None
    if "~" in folder:
        try:
            return _decode(db), _decode(table)
        except ValueError:
            return None
    return (db, table) if _PLAIN.fullmatch(db) and _PLAIN.fullmatch(table) else None


def link_target(path: Path) -> str:
    """Where the symbolic link ``path`` points, for a message (``?`` when it can not be read)."""
    try:
        return os.readlink(path)
    except OSError:
        return "?"


def link_problem(root: str | os.PathLike[str], path: str | os.PathLike[str]) -> Optional[str]:
    """Why ``path`` is not provably under ``root`` without links, or None: a component below ``root`` (``path``
    itself included) that is a symbolic link, a path outside ``root``, or one resolving outside it."""
    base, target = Path(os.path.abspath(root)), Path(os.path.abspath(path))
    try:
        rel = target.relative_to(base)
    except ValueError:
        return f"{target} is not inside {base}"
    if ".." in rel.parts:
        return f"{target} leaves {base} ('..')"
    step = base
    for part in rel.parts:
        step = step / part
        if step.is_symlink():
            return f"{step} is a symbolic link to {link_target(step)}"
    real_base, real = os.path.realpath(base), os.path.realpath(target)
    if real != real_base and not real.startswith(real_base.rstrip(os.sep) + os.sep):
        return f"{target} resolves to {real}, outside {real_base}"
    return None
