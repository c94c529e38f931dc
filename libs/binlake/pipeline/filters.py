"""The filter stage of the WL#6827 pipeline: which transactions go on to the applier.

WL#6827 filters per transaction, not per event. Two filters, combined by :class:`TransactionFilter`:
include/exclude ``db.table`` patterns (shell-style, as ``--replicate-wild-do-table``), and a GTID set of
transactions already applied (skipped; MySQL ``gtid_executed`` semantics, MariaDB per-domain positions).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Optional

from binlake.binlog.gtid import GtidSet as _GtidSet
from binlake.binlog.gtid import GtidSyntaxError
from binlake.pipeline.errors import FilterSyntaxError


@dataclass(frozen=True, slots=True)
class TableFilter:
    """``include``/``exclude`` patterns on ``db.table`` (``*``/``?`` wildcards). Empty include keeps all;
    exclude wins over include."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for p in self.include + self.exclude:
            if p.count(".") != 1:
                raise FilterSyntaxError(f"table pattern {p!r}: write it as db.table (wildcards * and ? allowed)")

    def keeps(self, db: str, table: str) -> bool:
        name = f"{db}.{table}"
        if any(fnmatch.fnmatchcase(name, p) for p in self.exclude):
            return False
        return not self.include or any(fnmatch.fnmatchcase(name, p) for p in self.include)


class GtidSet(_GtidSet):
    """Applied GTIDs: :class:`binlake.binlog.gtid.GtidSet` (MySQL interval sets, MariaDB highest sequence number
    per domain) with this package's FilterSyntaxError for text that does not parse."""

    __slots__ = ()

    @classmethod
    def parse(cls, text: Optional[str]) -> "GtidSet":
        try:
            return super().parse(text)  # type: ignore[return-value]
        except GtidSyntaxError as exc:
            raise FilterSyntaxError(exc.message) from None

    def add(self, gtid: str) -> None:
        try:
            super().add(gtid)
        except GtidSyntaxError as exc:
            raise FilterSyntaxError(exc.message) from None


@dataclass
class FilterStats:
    kept: int = 0
    skipped_gtid: int = 0
    rolled_back: int = 0
    incomplete: int = 0
    rows_filtered: int = 0


@dataclass
class TransactionFilter:
    """Decides per transaction; rows of excluded tables are dropped inside kept transactions (counted)."""

    tables: TableFilter = field(default_factory=TableFilter)
    applied: GtidSet = field(default_factory=GtidSet)
    stats: FilterStats = field(default_factory=FilterStats)

    def keeps_transaction(self, gtid: Optional[str], kind: str) -> bool:
        if kind == "rollback":
            self.stats.rolled_back += 1
            return False
        if kind == "open":
            self.stats.incomplete += 1
            return False
        if gtid is not None and gtid in self.applied:
            self.stats.skipped_gtid += 1
            return False
        self.stats.kept += 1
        return True

    def keeps_table(self, db: str, table: str, rows: int = 1) -> bool:
        """Whether rows of ``db.table`` are kept (``rows`` dropped ones are counted otherwise)."""
        if self.tables.keeps(db, table):
            return True
        self.stats.rows_filtered += rows
        return False
