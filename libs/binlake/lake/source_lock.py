"""One writer per source at a time: an exclusive ``flock`` on ``<lake>/_orchestration/locks/<source>.lock``
held by each Spark job that writes a source's tables (``spark_jobs/``: snapshot_sdi, ingest_binlogs,
apply_changes) from its setup until its process ends, so runs of one source never write at once, whatever
started them (a scheduled DAG run, a backfill's runs, a manual run). A job that finds the lock taken waits for
it and says so once on stderr. Every job is idempotent, so jobs of different runs may follow one another in
any order: an older interval's apply after a newer one applied finds nothing left before its end (a no-op).

The lock is advisory and local to the host (or the shared file system) the drivers run on, which is where the
Airflow workers run them (client mode).
"""

from __future__ import annotations

import fcntl
import os
import re
import sys
from typing import IO

_HELD: dict[str, IO[bytes]] = {}


def lock_path(lake_root: str, source: str) -> str:
    return os.path.join(lake_root, "_orchestration", "locks", re.sub(r"[^A-Za-z0-9_.-]", "_", source) + ".lock")


def hold_source_lock(lake_root: str, source: str) -> str:
    """Take the source's lock for the rest of this process (waiting while another job holds it)."""
    path = lock_path(lake_root, source)
    if path in _HELD:
        return path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    f = open(path, "a+b")
    try:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(f"binlake: waiting for {path}: another job is writing source {source}", file=sys.stderr, flush=True)
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
    _HELD[path] = f
    return path
