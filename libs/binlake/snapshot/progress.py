"""The snapshot's progress on stderr: a bar redrawn in place on a terminal, a line every few seconds (and per
finished table) otherwise (a log file, an Airflow task log)."""

from __future__ import annotations

import sys
import time
from typing import TextIO

BAR_WIDTH = 24
REDRAW_S = 0.2
LOG_EVERY_S = 10.0


class Progress:
    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.total = 1
        self.tables = 0
        self.done_rows = 0
        self.done_tables = 0
        self._last = 0.0
        self._drawn = False

    def start(self, total_rows: int, tables: int) -> None:
        """``total_rows``: the server's estimate of the rows to read; ``tables``: how many."""
        self.total, self.tables = max(total_rows, 1), tables

    def rows(self, n: int, table: str, chunk: int) -> None:
        """``n`` more rows of ``table`` written (``chunk``: its chunk number)."""
        self.done_rows += n
        now = time.monotonic()
        if now - self._last >= (REDRAW_S if self.tty else LOG_EVERY_S):
            self._last = now
            self._show(f"{table} chunk {chunk}")

    def table_done(self, table: str, rows: int, note: str = "") -> None:
        self.done_tables += 1
        self.message(f"{table}: {rows:,} rows{note}")

    def message(self, text: str) -> None:
        if self._drawn:
            self.stream.write("\r\033[K")
            self._drawn = False
        self.stream.write(f"binlake snapshot: {text}\n")
        self.stream.flush()

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False

    def _show(self, where: str) -> None:
        share = min(self.done_rows / self.total, 1.0)  # the total is the server's estimate
        counts = f"{self.done_rows:,}/~{self.total:,} rows, table {self.done_tables + 1} of {self.tables}"
        if self.tty:
            bar = "#" * int(share * BAR_WIDTH)
            self.stream.write(f"\r\033[Kbinlake snapshot: [{bar:<{BAR_WIDTH}}] {share:4.0%} {counts}: {where}")
            self._drawn = True
        else:
            self.stream.write(f"binlake snapshot: {share:4.0%} {counts}: {where}\n")
        self.stream.flush()
