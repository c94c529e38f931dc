"""Test hook: ``BINLAKE_TEST_CRASH_AT=<point>[:<n>]`` raises :class:`InjectedCrash` at the n-th (default first)
pass through a :func:`crash_point` (``after_bronze``, ``after_quarantine``, ``after_tombstones``, ``after_history``,
``after_silver``, ``before_checkpoint``), the way a killed job stops between two Delta commits.

``after_commit`` is passed after every Delta commit the engines make (a write, a MERGE, a delete, a schema
change), so ``after_commit:<n>`` stops a run after its n-th commit, whatever the stage: sweeping n from 1 puts a
crash between every pair of a run's commits. Its count runs over the whole ``binlake run`` (from
:func:`reset_crash_counts` with ``commits=True``), not only one job.

Writes that run at once (the spark engine's MERGEs of several tables, :func:`binlake.lake.apply.write.each_table`)
count under a lock, and once the hook has crashed every later :func:`crash_point` raises too until the counts are
reset: the other threads stop at their next commit, as they would in a killed process."""

from __future__ import annotations

import os
import threading
from collections import Counter

CRASH_ENV = "BINLAKE_TEST_CRASH_AT"
COMMIT_POINT = "after_commit"
_counts: Counter = Counter()
_lock = threading.Lock()
_crashed: list[str] = []  # the crash raised since the counts were reset


class InjectedCrash(BaseException):
    """Raised by :func:`crash_point` under the test hook (a BaseException: nothing catches it by accident)."""


def reset_crash_counts(*, commits: bool = False) -> None:
    """Start counting again (a job's start); the commit count only with ``commits`` (a run's start)."""
    with _lock:
        kept = 0 if commits else _counts[COMMIT_POINT]
        _counts.clear()
        _crashed.clear()
        if kept:
            _counts[COMMIT_POINT] = kept


def crash_point(name: str) -> None:
    want = os.environ.get(CRASH_ENV)
    if not want:
        return
    point, _, nth = want.partition(":")
    with _lock:
        if not _crashed:
            if point != name:
                return
            _counts[name] += 1
            if _counts[name] != int(nth or 1):
                return
            _counts.clear()
            _crashed.append(want)
        crashed = _crashed[0]
    raise InjectedCrash(f"test hook: crash at {crashed}")
