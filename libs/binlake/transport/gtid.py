"""MySQL GTID sets as COM_BINLOG_DUMP_GTID carries them, and MariaDB GTID positions (pure functions).

MySQL: text ``uuid:1-5:7,uuid:tag:1-3`` (tags since 8.3) -> the binary form of ``Gtid_set::encode``
(mysql-server ``sql/rpl_gtid_set.cc``): n_sids(8) then per (uuid, tag): uuid(16), [tag], n_intervals(8),
intervals as start(8) / end(8, exclusive). When any tag is present the format is *tagged*: the n_sids word becomes
``format << 56 | n_sids << 8 | format`` (``encode_nsids_format``) and each tag is written as a
``mysql::serialization`` varlen length (one byte ``len << 1`` for the at most 32 characters) plus its characters.

MariaDB: a GTID position ``domain-server-seqno[,...]`` for ``SET @slave_connect_state``.
"""

from __future__ import annotations

import re
import struct
import uuid as uuid_mod
from dataclasses import dataclass

from binlake.transport.errors import SourceUriError

GTID_FORMAT_UNTAGGED = 0
GTID_FORMAT_TAGGED = 1
TAG_MAX_LENGTH = 32
U64 = struct.Struct("<Q")
TAG_RE = re.compile(r"[a-z_][a-z0-9_]{0,31}\Z")
INTERVAL_RE = re.compile(r"(\d+)(?:-(\d+))?\Z")
MARIADB_GTID_RE = re.compile(r"\d+-\d+-\d+\Z")


@dataclass(frozen=True, slots=True)
class GtidInterval:
    """Transactions ``start`` .. ``end`` inclusive (as written in text; the binary form stores end + 1)."""

    start: int
    end: int


@dataclass(frozen=True, slots=True)
class TaggedSid:
    uuid: bytes   # 16 bytes
    tag: str = ""


def parse_gtid_set(text: str) -> dict[TaggedSid, tuple[GtidInterval, ...]]:
    """Parse MySQL's GTID set text; intervals are sorted and merged like ``Gtid_set::add_gtid_text``."""
    groups: dict[TaggedSid, list[GtidInterval]] = {}
    for item in (part.strip() for part in text.replace("\n", "").split(",")):
        if not item:
            continue
        pieces = item.split(":")
        try:
            sid = uuid_mod.UUID(pieces[0].strip()).bytes
        except ValueError:
            raise SourceUriError(f"GTID set {text!r}: {pieces[0]!r} is not a server UUID") from None
        tag = ""
        seen_interval = False
        for piece in (p.strip().lower() for p in pieces[1:]):
            match = INTERVAL_RE.match(piece)
            if match:
                start = int(match.group(1))
                end = int(match.group(2) or start)
                if start < 1 or end < start or end >= 1 << 63:
                    raise SourceUriError(f"GTID set {text!r}: interval {piece!r} is empty or out of range")
                groups.setdefault(TaggedSid(sid, tag), []).append(GtidInterval(start, end))
                seen_interval = True
            elif TAG_RE.match(piece):
                tag = piece
            else:
                raise SourceUriError(f"GTID set {text!r}: {piece!r} is neither an interval (1-5) nor a tag")
        if not seen_interval:
            raise SourceUriError(f"GTID set {text!r}: {item!r} has no interval")
    return {sid: _merge(intervals) for sid, intervals in groups.items()}


def _merge(intervals: list[GtidInterval]) -> tuple[GtidInterval, ...]:
    merged: list[GtidInterval] = []
    for iv in sorted(intervals, key=lambda i: i.start):
        if merged and iv.start <= merged[-1].end + 1:
            last = merged[-1]
            merged[-1] = GtidInterval(last.start, max(last.end, iv.end))
        else:
            merged.append(iv)
    return tuple(merged)


def encode_gtid_set(text: str) -> bytes:
    """The binary GTID set of ``Gtid_set::encode`` for COM_BINLOG_DUMP_GTID (sids sorted by uuid, then tag)."""
    groups = parse_gtid_set(text)
    tagged = any(sid.tag for sid in groups)
    out = bytearray()
    n_sids = len(groups)
    if tagged:
        out += U64.pack(GTID_FORMAT_TAGGED << 56 | n_sids << 8 | GTID_FORMAT_TAGGED)
    else:
        out += U64.pack(n_sids)
    for sid in sorted(groups, key=lambda s: (s.uuid, s.tag)):
        out += sid.uuid
        if tagged:
            tag = sid.tag.encode("ascii")
            out += bytes([len(tag) << 1]) + tag   # varlen unsigned: one byte for values < 128
        intervals = groups[sid]
        out += U64.pack(len(intervals))
        for iv in intervals:
            out += U64.pack(iv.start) + U64.pack(iv.end + 1)
    return bytes(out)


def validate_mariadb_gtid_pos(text: str) -> str:
    """Check a MariaDB GTID position (``0-1-100,1-2-7``) before it goes into ``SET @slave_connect_state``."""
    items = [part.strip() for part in text.split(",") if part.strip()]
    bad = [item for item in items if not MARIADB_GTID_RE.match(item)]
    if bad:
        raise SourceUriError(f"MariaDB GTID position {text!r}: {bad[0]!r} is not domain-server-seqno (e.g. 0-1-100)")
    return ",".join(items)
