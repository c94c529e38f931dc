"""The one GTID-set model of binlake: MySQL ``uuid[:tag]:N`` interval sets and MariaDB ``domain-server-seq``
positions, parsed, grown, tested, printed and encoded (pure functions and one mutable value).

MySQL, as ``Gtid_set`` (mysql-server ``sql/rpl_gtid_set.cc``): per (server UUID, tag) a sorted list of disjoint,
non-adjacent inclusive intervals (``add_gtid_text`` merges on insert); text ``uuid:1-5:7,uuid:tag:1-3`` (tags since
8.3, lower-cased like ``Tag::from_string``); ``encode`` is the binary form COM_BINLOG_DUMP_GTID and
PREVIOUS_GTIDS_LOG_EVENT carry (intervals with exclusive ends; the *tagged* format when any tag is present).
MariaDB, as ``gtid_slave_pos``: the highest sequence number per replication domain (and the server that wrote it).
"""

from __future__ import annotations

import re
import struct
import uuid as _uuid
from bisect import bisect_right
from dataclasses import dataclass
from typing import Iterable, Iterator, Optional

from binlake.binlog.errors import BinlogError

GTID_FORMAT_UNTAGGED = 0
GTID_FORMAT_TAGGED = 1
TAG_MAX_LENGTH = 32
GNO_MAX = (1 << 63) - 1
_U64 = struct.Struct("<Q")
_TAG = re.compile(r"[a-z_][a-z0-9_]{0,31}\Z")
_INTERVAL = re.compile(r"(\d+)(?:-(\d+))?\Z")
_MARIADB = re.compile(r"(\d+)-(\d+)-(\d+)\Z")


class GtidSyntaxError(BinlogError):
    """Text that is not a GTID, a GTID set or a MariaDB GTID position."""


@dataclass(frozen=True, slots=True, order=True)
class Sid:
    """A GTID source: the server UUID (16 bytes) and the tag ("" when untagged)."""

    uuid: bytes
    tag: str = ""

    @property
    def text(self) -> str:
        u = str(_uuid.UUID(bytes=self.uuid))
        return f"{u}:{self.tag}" if self.tag else u


def _sid(uuid_text: str, tag: str, whole: str) -> Sid:
    try:
        raw = _uuid.UUID(uuid_text.strip()).bytes
    except ValueError:
        raise GtidSyntaxError(f"GTID set {whole!r}: {uuid_text!r} is not a server UUID") from None
    return Sid(raw, tag)


class GtidSet:
    """A set of GTIDs (see the module docstring). ``in`` takes a GTID's text (``uuid[:tag]:N`` or ``D-S-N``)."""

    __slots__ = ("_mariadb", "_mysql", "_sids")

    def __init__(self) -> None:
        self._mysql: dict[Sid, list[list[int]]] = {}
        self._mariadb: dict[int, tuple[int, int]] = {}  # domain -> (seq, server)
        self._sids: dict[str, Sid] = {}  # GTID prefix text -> Sid (parse cache)

    # --- building ------------------------------------------------------------------------------------------
    @classmethod
    def parse(cls, text: Optional[str]) -> "GtidSet":
        """MySQL's GTID set text and/or MariaDB positions, comma separated (``Gtid_set::add_gtid_text``)."""
        out = cls()
        whole = text or ""
        for item in (part.strip() for part in whole.replace("\n", "").split(",")):
            if not item:
                continue
            m = _MARIADB.match(item)
            if m:
                out._add_mariadb(int(m.group(1)), int(m.group(2)), int(m.group(3)))
                continue
            pieces = item.split(":")
            if len(pieces) < 2:
                raise GtidSyntaxError(
                    f"GTID set {whole!r}: {item!r} has no interval (expected uuid[:tag]:N[-M] or domain-server-seq)"
                )
            tag = ""
            seen = False
            for piece in (p.strip().lower() for p in pieces[1:]):
                iv = _INTERVAL.match(piece)
                if iv:
                    lo, hi = int(iv.group(1)), int(iv.group(2) or iv.group(1))
                    if lo < 1 or hi < lo or hi > GNO_MAX:
                        raise GtidSyntaxError(f"GTID set {whole!r}: interval {piece!r} is empty or out of range")
                    out.add_interval(_sid(pieces[0], tag, whole), lo, hi)
                    seen = True
                elif _TAG.match(piece):
                    tag = piece
                else:
                    raise GtidSyntaxError(f"GTID set {whole!r}: {piece!r} is neither an interval (1-5) nor a tag")
            if not seen:
                raise GtidSyntaxError(f"GTID set {whole!r}: {item!r} has no interval")
        return out

    @classmethod
    def from_entries(cls, entries: Iterable[object]) -> "GtidSet":
        """From PREVIOUS_GTIDS entries (:class:`binlake.binlog.events.GtidSetEntry`: exclusive interval ends)."""
        out = cls()
        for e in entries:
            sid = Sid(e.sid, e.tag)  # type: ignore[attr-defined]
            for iv in e.intervals:  # type: ignore[attr-defined]
                if iv.end > iv.start:
                    out.add_interval(sid, iv.start, iv.end - 1)
        return out

    def add_interval(self, sid: Sid, lo: int, hi: int) -> None:
        """Add GTIDs ``sid:lo-hi`` (inclusive), merging with overlapping or adjacent intervals."""
        ivs = self._mysql.setdefault(sid, [])
        if ivs and ivs[-1][1] + 1 >= lo >= ivs[-1][0]:  # the common case: appending
            ivs[-1][1] = max(ivs[-1][1], hi)
            return
        i = bisect_right(ivs, [lo, GNO_MAX + 1])
        if i and ivs[i - 1][1] + 1 >= lo:
            i -= 1
            lo = min(lo, ivs[i][0])
        j = i
        while j < len(ivs) and ivs[j][0] <= hi + 1:
            hi = max(hi, ivs[j][1])
            j += 1
        ivs[i:j] = [[lo, hi]]

    def _add_mariadb(self, domain: int, server: int, seq: int) -> None:
        if seq > self._mariadb.get(domain, (0, 0))[0]:
            self._mariadb[domain] = (seq, server)

    def _split(self, gtid: str) -> Optional[tuple[Sid, int]]:
        prefix, _, n = gtid.rpartition(":")
        if not prefix or not n.isdigit():
            return None
        sid = self._sids.get(prefix)
        if sid is None:
            uuid_text, _, tag = prefix.partition(":")
            tag = tag.strip().lower()
            if tag and not _TAG.match(tag):
                return None
            try:
                sid = _sid(uuid_text, tag, gtid)
            except GtidSyntaxError:
                return None
            if len(self._sids) < 4096:
                self._sids[prefix] = sid
        return sid, int(n)

    def add(self, gtid: str) -> None:
        """Add one GTID: ``uuid[:tag]:N`` or MariaDB ``domain-server-seq``."""
        m = _MARIADB.match(gtid)
        if m:
            self._add_mariadb(int(m.group(1)), int(m.group(2)), int(m.group(3)))
            return
        split = self._split(gtid)
        if split is None or not 1 <= split[1] <= GNO_MAX:
            raise GtidSyntaxError(f"GTID {gtid!r}: expected uuid[:tag]:N or domain-server-seq")
        self.add_interval(split[0], split[1], split[1])

    def update(self, gtids: Iterable[Optional[str]]) -> None:
        for g in gtids:
            if g:
                self.add(g)

    # --- reading -------------------------------------------------------------------------------------------
    def __contains__(self, gtid: object) -> bool:
        if not isinstance(gtid, str):
            return False
        m = _MARIADB.match(gtid)
        if m:
            return int(m.group(3)) <= self._mariadb.get(int(m.group(1)), (0, 0))[0]
        split = self._split(gtid)
        if split is None:
            return False
        ivs = self._mysql.get(split[0], ())
        i = bisect_right(ivs, [split[1], GNO_MAX + 1])
        return bool(i) and ivs[i - 1][0] <= split[1] <= ivs[i - 1][1]

    def __bool__(self) -> bool:
        return bool(self._mysql or self._mariadb)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GtidSet) and self._mysql == other._mysql and self._mariadb == other._mariadb

    def sids(self) -> Iterator[Sid]:
        """The MySQL sources, in (UUID, tag) order."""
        return iter(sorted(sid for sid, ivs in self._mysql.items() if ivs))

    def intervals(self, sid: Sid) -> tuple[tuple[int, int], ...]:
        """The inclusive intervals of one MySQL source, in order."""
        return tuple((a, b) for a, b in self._mysql.get(sid, ()))

    def entries(self) -> tuple:
        """The MySQL part as PREVIOUS_GTIDS entries (:class:`binlake.binlog.events.GtidSetEntry`)."""
        from binlake.binlog.events import GtidInterval, GtidSetEntry

        return tuple(
            GtidSetEntry(sid.uuid, sid.tag, tuple(GtidInterval(a, b + 1) for a, b in self.intervals(sid)))
            for sid in self.sids()
        )

    def mariadb_position(self) -> str:
        """The MariaDB part as ``domain-server-seq,...`` (``@slave_connect_state``), by domain."""
        return ",".join(f"{d}-{server}-{seq}" for d, (seq, server) in sorted(self._mariadb.items()))

    def to_text(self) -> str:
        """``uuid:1-5:7,uuid:tag:3`` (sources in (UUID, tag) order), then the MariaDB position."""
        parts = [
            sid.text + ":" + ":".join(f"{a}-{b}" if a != b else str(a) for a, b in self.intervals(sid))
            for sid in self.sids()
        ]
        mariadb = self.mariadb_position()
        return ",".join(parts + ([mariadb] if mariadb else []))

    __str__ = to_text

    def __repr__(self) -> str:
        return f"GtidSet({self.to_text()!r})"

    def encode(self) -> bytes:
        """``Gtid_set::encode`` of the MySQL part: n_sids (tagged format: ``1 << 56 | n << 8 | 1``), then per
        source its UUID, [its tag as a varlen length and characters], n_intervals, (start, end + 1) pairs."""
        sids = list(self.sids())
        tagged = any(s.tag for s in sids)
        out = bytearray(
            _U64.pack(GTID_FORMAT_TAGGED << 56 | len(sids) << 8 | GTID_FORMAT_TAGGED if tagged else len(sids))
        )
        for sid in sids:
            out += sid.uuid
            if tagged:
                tag = sid.tag.encode("ascii")
                out += bytes([len(tag) << 1]) + tag  # mysql::serialization varlen: one byte below 128
            ivs = self.intervals(sid)
            out += _U64.pack(len(ivs))
            for a, b in ivs:
                out += _U64.pack(a) + _U64.pack(b + 1)
        return bytes(out)


def validate_mariadb_position(text: str) -> str:
    """A MariaDB GTID position (``0-1-100,1-2-7``) checked and normalised (for ``SET @slave_connect_state``)."""
    items = [part.strip() for part in text.split(",") if part.strip()]
    bad = [item for item in items if not _MARIADB.match(item)]
    if bad:
        raise GtidSyntaxError(f"MariaDB GTID position {text!r}: {bad[0]!r} is not domain-server-seqno (e.g. 0-1-100)")
    return ",".join(items)


__all__ = ["GtidSet", "GtidSyntaxError", "Sid", "validate_mariadb_position"]
