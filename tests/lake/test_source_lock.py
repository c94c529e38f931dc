"""One writer per source: a job's source lock (binlake.lake.source_lock) excludes any other job of that source
until the holding process ends; other sources are free."""

from __future__ import annotations

import fcntl
import subprocess
import sys
from pathlib import Path

from binlake.lake.source_lock import lock_path

HOLD = (
    "import sys; from binlake.lake.source_lock import hold_source_lock; "
    "print(hold_source_lock(sys.argv[1], sys.argv[2]), flush=True); sys.stdin.read()"
)


def _free(path: str) -> bool:
    with open(path, "a+b") as f:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True


def test_a_source_lock_is_held_until_the_job_ends(tmp_path: Path) -> None:
    lake = str(tmp_path / "lake")
    job = subprocess.Popen(
        [sys.executable, "-c", HOLD, lake, "shop-primary"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        held = job.stdout.readline().strip()
        assert held == lock_path(lake, "shop-primary") and held.startswith(lake)
        assert not _free(held)  # another job of the source would wait
        assert _free(lock_path(lake, "other-source"))  # another source does not
    finally:
        job.communicate("")
    assert _free(held)  # released with the process
