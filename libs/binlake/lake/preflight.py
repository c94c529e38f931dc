"""Checks before any work: the folders a command writes (the lake, its reports) and reads (the landing folder)
are usable, so that a path that is a file, a read-only or a full disk is one line before Spark starts, not a
Spark failure minutes later.

    check_lake("/data/lake")            # raises PathUnusable naming the path, what is wrong and what to do
    check_landing("/data/landing")
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path
from typing import Optional

from binlake.lake.errors import PathUnusable

MIN_FREE_BYTES = 64 << 20  # below this a run's first bronze commit may not fit; refuse before starting
_PROBE_BYTES = 64 << 10


def _file_on_the_way(path: Path) -> Optional[Path]:
    """The path itself or its nearest existing ancestor when that is not a directory, else None."""
    p = path
    while True:
        if p.exists() or p.is_symlink():
            return None if p.is_dir() else p
        if p.parent == p:
            return None
        p = p.parent


def _existing(path: Path) -> Path:
    p = path
    while not p.exists() and p.parent != p:
        p = p.parent
    return p


def check_writable_dir(path: str, what: str, *, min_free: int = MIN_FREE_BYTES) -> None:
    """``path`` is (or can be made) a folder this process can write files into, on a disk with ``min_free``
    bytes free. Creates the folder (as the command would) and writes, syncs and removes a small probe file."""
    target = Path(os.path.abspath(path))
    blocker = _file_on_the_way(target)
    if blocker is not None:
        where = "is a file" if blocker == target else f"lies under {blocker}, which is a file"
        raise PathUnusable(f"{what} {target} {where}, not a folder: pass a folder path (it is created if absent)")
    try:
        free = shutil.disk_usage(_existing(target)).free
    except OSError:
        free = None
    if free is not None and free < min_free:
        raise PathUnusable(
            f"{what} {target} is on a full disk ({free >> 20} MiB free, at least "
            f"{min_free >> 20} MiB needed): free space there or pass a folder on another disk"
        )
    probe = target / f".binlake-probe-{os.getpid()}"
    try:
        target.mkdir(parents=True, exist_ok=True)
        with open(probe, "wb") as f:
            f.write(b"\0" * _PROBE_BYTES)
            f.flush()
            os.fsync(f.fileno())
    except OSError as exc:
        raise PathUnusable(f"{what} {target} {_why(exc)}") from None
    finally:
        try:
            probe.unlink()
        except OSError:
            pass


def _why(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC or exc.errno == errno.EDQUOT:
        return "is on a full disk (no space left): free space there or pass a folder on another disk"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        reason = "read-only file system" if exc.errno == errno.EROFS else "permission denied"
        return f"can not be written ({reason}): pass a folder this user can write"
    return f"can not be written ({exc.strerror or exc}): pass a folder this user can write"


def check_lake(lake: str, report_dir: Optional[str] = None) -> None:
    """The lake root (and a report folder outside it, when given) can be written, and its scratch folder is no
    symbolic link (:func:`binlake.lake.owned.scratch_folder`)."""
    from binlake.lake.owned import scratch_folder

    check_writable_dir(lake, "lake")
    scratch_folder(lake, "_staging", check_base=False)
    if report_dir is not None:
        check_writable_dir(report_dir, "report folder")


def check_landing(landing: str) -> None:
    """The landing folder exists, is a folder and can be read (a run only reads it)."""
    target = Path(os.path.abspath(landing))
    if not target.exists():
        raise PathUnusable(f"landing folder {target} does not exist: pass the folder holding <source>/ binlogs")
    if not target.is_dir():
        raise PathUnusable(
            f"landing folder {target} is a file, not a folder: pass the folder holding <source>/ binlogs"
        )
    if not os.access(target, os.R_OK | os.X_OK):
        raise PathUnusable(
            f"landing folder {target} can not be read (permission denied): pass a folder this user can read"
        )
