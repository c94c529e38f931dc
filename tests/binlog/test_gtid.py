"""The one GTID-set model (binlake.binlog.gtid) and its users: transport encoding, pipeline filters, PREVIOUS_GTIDS
text and the writer."""

from __future__ import annotations

import random
import uuid

import pytest

from binlake.binlog.gtid import GtidSet, GtidSyntaxError, Sid

U1 = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
U2 = "00000000-0000-0000-0000-0000000000aa"


def test_parse_merge_contains_and_text() -> None:
    s = GtidSet.parse(f"{U1}:1-3:4-5:9, {U2}:7, {U1.upper()}:Blue:2, 0-1-100")
    assert s.to_text() == f"{U2}:7,{U1}:1-5:9,{U1}:blue:2,0-1-100"
    assert f"{U1}:5" in s and f"{U1}:6" not in s and f"{U1}:blue:2" in s and f"{U1}:BLUE:2" in s
    assert "0-7-99" in s and "0-1-101" not in s and "not a gtid" not in s and 5 not in s
    s.add(f"{U1}:6")
    s.add(f"{U1}:8")
    assert s.intervals(Sid(uuid.UUID(U1).bytes)) == ((1, 6), (8, 9))
    s.add(f"{U1}:7")
    assert s.intervals(Sid(uuid.UUID(U1).bytes)) == ((1, 9),)
    assert GtidSet.parse(s.to_text()) == s


@pytest.mark.parametrize(
    "text,message",
    [
        ("not-a-uuid:1-5", "not a server UUID"),
        (f"{U1}:5-3", "empty or out of range"),
        (f"{U1}:x!", "neither an interval"),
        (f"{U1}:tag", "has no interval"),
        ("abc", "has no interval"),
        (f"{U1}:0", "empty or out of range"),
        (f"{U1}:{1 << 63}", "empty or out of range"),
    ],
)
def test_bad_text_is_a_typed_error(text, message) -> None:
    with pytest.raises(GtidSyntaxError, match=message):
        GtidSet.parse(text)


def test_intervals_match_a_plain_set_under_random_inserts() -> None:
    rnd = random.Random(7)
    sid = Sid(uuid.UUID(U1).bytes)
    s, ref = GtidSet(), set()
    for _ in range(2000):
        lo = rnd.randint(1, 400)
        hi = lo + rnd.randint(0, 6)
        s.add_interval(sid, lo, hi)
        ref |= set(range(lo, hi + 1))
    ivs = s.intervals(sid)
    assert {g for a, b in ivs for g in range(a, b + 1)} == ref
    assert all(ivs[i][1] + 1 < ivs[i + 1][0] for i in range(len(ivs) - 1))


def test_users_share_the_model() -> None:
    from binlake.binlog.events import GtidInterval, GtidSetEntry, PreviousGtidsEvent
    from binlake.pipeline.errors import FilterSyntaxError
    from binlake.pipeline.filters import GtidSet as FilterGtidSet
    from binlake.transport.gtid import encode_gtid_set

    text = f"{U1}:1-5:9,{U1}:blue:2"
    assert issubclass(FilterGtidSet, GtidSet)
    assert encode_gtid_set(text) == GtidSet.parse(text).encode()
    with pytest.raises(FilterSyntaxError, match="not a server UUID"):
        FilterGtidSet.parse("u1:1-3")
    prev = PreviousGtidsEvent((GtidSetEntry(uuid.UUID(U1).bytes, "", (GtidInterval(1, 6), GtidInterval(9, 10))),))
    assert prev.gtid_set() == f"{U1}:1-5:9"
    assert GtidSet.from_entries(prev.entries).entries() == prev.entries


def test_writer_previous_gtids_come_from_the_model(tmp_path) -> None:
    from binlake.binlog.writer import BinlogWriter

    w = BinlogWriter(tmp_path)
    for gno in (1, 2, 3, 7):
        w._add_gtid(gno)
    assert isinstance(w.gtids, GtidSet)
    [entry] = w.previous_gtids()
    assert [(i.start, i.end) for i in entry.intervals] == [(1, 4), (7, 8)]
