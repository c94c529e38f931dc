"""Test hook: ``BINLAKE_TEST_CRASH_AT=<point>[:<n>]`` raises :class:`InjectedCrash` at the n-th (default first)
pass through a :func:`crash_point` (``after_bronze``, ``after_quarantine``, ``after_tombstones``, ``after_history``,
``after_silver``, ``before_checkpoint``), the way a killed job stops between two Delta commits."""

from __future__ import annotations

import os
from collections import Counter

CRASH_ENV = "BINLAKE_TEST_CRASH_AT"
_counts: Counter = Counter()


class InjectedCrash(BaseException):
    """Raised by :func:`crash_point` under the test hook (a BaseException: nothing catches it by accident)."""


def reset_crash_counts() -> None:
    _counts.clear()


def crash_point(name: str) -> None:
    want = os.environ.get(CRASH_ENV)
    if not want:
        return
    point, _, nth = want.partition(":")
    if point != name:
        return
    _counts[name] += 1
    if _counts[name] == int(nth or 1):
        _counts.clear()
        raise InjectedCrash(f"test hook: crash at {want}")
