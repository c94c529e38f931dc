"""The filter stage of the WL#6827 pipeline: which transactions go on to the applier.

WL#6827 filters per transaction, not per event. Two filters, combined by :class:`TransactionFilter`:
include/exclude ``db.table`` patterns (shell-style, as ``--replicate-wild-do-table``), and a GTID set of
transactions already applied (skipped; MySQL ``gtid_executed`` semantics, MariaDB per-domain positions).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from typing import Iterable, Optional

from binlake.pipeline.errors import FilterSyntaxError

_MARIADB_GTID = re.compile(r"^(\d+)-(\d+)-(\d+)$")
_TAG = re.compile(r"^[a-z_][a-z0-9_]{0,31}$", re.IGNORECASE)


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


class GtidSet:
    """Applied GTIDs: MySQL ``uuid[:tag]:N`` as interval sets; MariaDB ``domain-server-seq`` as the highest
    sequence number per domain (MariaDB's ``gtid_slave_pos`` model)."""

    def __init__(self) -> None:
        self._mysql: dict[str, list[list[int]]] = {}
        self._mariadb: dict[int, tuple[int, int]] = {}     # domain -> (seq, server)

    @classmethod
    def parse(cls, text: Optional[str]) -> "GtidSet":
        out = cls()
        for part in (text or "").replace("\n", "").split(","):
            part = part.strip()
            if not part:
                continue
            m = _MARIADB_GTID.match(part)
            if m:
                out.add(part)
                continue
            uuid, *rest = part.split(":")
            sid = uuid
            if not uuid or not rest:
                raise FilterSyntaxError(f"GTID set element {part!r}: expected uuid[:tag]:N[-M][:N-M...] or D-S-N")
            if not _is_range(rest[-1]):
                raise FilterSyntaxError(f"GTID set element {part!r}: ends without an interval N[-M]")
            for rng in rest:
                if not _is_range(rng):
                    if not _TAG.match(rng):
                        raise FilterSyntaxError(f"GTID set element {part!r}: {rng!r} is neither an interval "
                                                "N[-M] nor a tag")
                    sid = f"{uuid}:{rng}"            # MySQL 8.3+ tagged GTIDs: uuid:tag:N
                    continue
                lo, _, hi = rng.partition("-")
                out._add_interval(sid, int(lo), int(hi or lo))
        return out

    def _add_interval(self, sid: str, lo: int, hi: int) -> None:
        ivs = self._mysql.setdefault(sid, [])
        ivs.append([lo, hi])
        ivs.sort()
        merged: list[list[int]] = []
        for a, b in ivs:
            if merged and a <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        self._mysql[sid] = merged

    def add(self, gtid: str) -> None:
        m = _MARIADB_GTID.match(gtid)
        if m:
            domain, server, seq = int(m.group(1)), int(m.group(2)), int(m.group(3))
            if seq > self._mariadb.get(domain, (0, 0))[0]:
                self._mariadb[domain] = (seq, server)
            return
        sid, _, n = gtid.rpartition(":")
        if not sid or not n.isdigit():
            raise FilterSyntaxError(f"GTID {gtid!r}: expected uuid[:tag]:N or domain-server-seq")
        ivs = self._mysql.get(sid)
        g = int(n)
        if ivs and ivs[-1][1] + 1 == g:
            ivs[-1][1] = g                           # the common case: the next GTID of a source
        else:
            self._add_interval(sid, g, g)

    def __contains__(self, gtid: object) -> bool:
        if not isinstance(gtid, str):
            return False
        m = _MARIADB_GTID.match(gtid)
        if m:
            return int(m.group(3)) <= self._mariadb.get(int(m.group(1)), (0, 0))[0]
        sid, _, n = gtid.rpartition(":")
        if not n.isdigit():
            return False
        g = int(n)
        return any(a <= g <= b for a, b in self._mysql.get(sid, ()))

    def update(self, gtids: Iterable[Optional[str]]) -> None:
        for g in gtids:
            if g:
                self.add(g)

    def __bool__(self) -> bool:
        return bool(self._mysql or self._mariadb)

    def to_text(self) -> str:
        parts = [sid + ":" + ":".join(f"{a}-{b}" if a != b else str(a) for a, b in ivs)
                 for sid, ivs in sorted(self._mysql.items())]
        parts += [f"{d}-{server}-{seq}" for d, (seq, server) in sorted(self._mariadb.items())]
        return ",".join(parts)


def _is_range(text: str) -> bool:
    lo, _, hi = text.partition("-")
    return lo.isdigit() and (not hi or hi.isdigit())


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
