"""``apply.write.each_table`` (the spark engine's MERGEs of several tables, two at a time) and the crash hook
under threads: every table is written once; after a failure no table starts, the running ones finish, and the
first table's failure in order is raised; a crash injected in one thread stops the others at their next commit."""

from __future__ import annotations

import threading
import time

import pytest

from binlake.lake.apply.write import each_table
from binlake.lake.crash import CRASH_ENV, InjectedCrash, crash_point, reset_crash_counts

TABLES = [("db", f"t{i}") for i in range(6)]


class Writes:
    """Records which tables were written, and how many writes ran at once at most."""

    def __init__(self, fail: dict[tuple[str, str], BaseException] | None = None, pause: float = 0.02) -> None:
        self.fail, self.pause = fail or {}, pause
        self.started: list[tuple[str, str]] = []
        self.running = self.most = 0
        self.lock = threading.Lock()

    def __call__(self, table: tuple[str, str]) -> None:
        with self.lock:
            self.started.append(table)
            self.running += 1
            self.most = max(self.most, self.running)
        try:
            time.sleep(self.pause)
            if table in self.fail:
                raise self.fail[table]
        finally:
            with self.lock:
                self.running -= 1


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_every_table_is_written_once_at_most_threads_at_a_time(threads):
    writes = Writes(pause=0.2)  # long enough for every thread to have started on a busy machine
    each_table(TABLES, writes, threads)
    assert sorted(writes.started) == TABLES
    assert writes.most == threads
    if threads == 1:
        assert writes.started == TABLES  # in order


def test_after_a_failure_no_table_starts_and_the_first_failure_is_raised():
    first, later = RuntimeError("t1"), RuntimeError("t2")
    writes = Writes({TABLES[1]: first, TABLES[2]: later})
    with pytest.raises(RuntimeError) as caught:
        each_table(TABLES, writes, 2)
    assert caught.value is first
    assert set(writes.started) <= set(TABLES[:4])  # t3 may have started beside t2; t4 and t5 never
    assert TABLES[4] not in writes.started and TABLES[5] not in writes.started
    assert writes.running == 0  # the running writes finished before the failure was raised


def test_a_crash_in_one_thread_stops_the_others_at_their_next_commit(monkeypatch):
    monkeypatch.setenv(CRASH_ENV, "after_silver:2")
    reset_crash_counts(commits=True)
    committed: list[tuple[str, str]] = []
    lock = threading.Lock()

    def write(table):
        time.sleep(0.02)
        with lock:
            committed.append(table)
        crash_point("after_silver")

    with pytest.raises(InjectedCrash):
        each_table(TABLES, write, 2)
    # the second commit crashed; the write beside it committed and stopped at its own crash point; none started
    # after
    assert 2 <= len(committed) <= 3
    with pytest.raises(InjectedCrash):  # the process is "dead" until the next run resets the counts
        crash_point("after_commit")
    reset_crash_counts(commits=True)
    crash_point("after_commit")


def test_crash_counts_are_not_lost_between_threads(monkeypatch):
    monkeypatch.setenv(CRASH_ENV, "after_commit:400")
    reset_crash_counts(commits=True)
    crashed = []

    def commits():
        for _ in range(100):
            try:
                crash_point("after_commit")
            except InjectedCrash:
                crashed.append(threading.current_thread().name)
                return

    threads = [threading.Thread(target=commits) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(crashed) == 1  # exactly the 400th of 4 x 100 passes
    reset_crash_counts(commits=True)
