"""The seam by GTID (binlake.lake.gtid_seam): the Spark membership test against GtidSet's own, which snapshots may
fill a GTID gap, and the switch check a filler lets through."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from binlake.lake.errors import GtidGapError
from binlake.lake.gtid_seam import gap_fillers, holds_all
from binlake.lake.members import _checked_switch, held_gtids
from binlake.pipeline.filters import GtidSet

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
OTHER = "4e11fa47-71ca-11e1-9e33-c80aa9429562"
SET_TEXT = f"{UUID}:1-5:9-12,{UUID}:blue:3,{OTHER}:7,0-1-40,2-7-3"


@pytest.mark.spark
def test_the_spark_membership_test_agrees_with_gtid_set(spark) -> None:
    from pyspark.sql import functions as F

    from binlake.lake.gtid_seam import in_gtid_set

    gset = GtidSet.parse(SET_TEXT)
    gtids = [
        *(f"{UUID}:{n}" for n in range(0, 15)),
        f"{UUID.upper()}:4",
        f"{UUID}:blue:3",
        f"{UUID}:blue:4",
        f"{UUID}:red:3",
        f"{OTHER}:7",
        f"{OTHER}:8",
        *(f"0-{s}-{n}" for s in (1, 2) for n in (1, 39, 40, 41)),
        "1-1-1",
        "2-7-3",
        "2-7-4",
        "12-1-3",
        "0-1-99999999999999999999",
        "not a gtid",
        None,
    ]
    df = spark.createDataFrame([(g,) for g in gtids], "gtid string")
    got = [r["inside"] for r in df.select(in_gtid_set(F.col("gtid"), gset).alias("inside")).collect()]
    assert got == [g in gset for g in gtids]
    assert sum(got) == 19  # both answers occur


def test_holds_all() -> None:
    snap = GtidSet.parse(f"{UUID}:1-20,0-2-30")
    assert holds_all(snap, f"{UUID}:3-20,0-1-30")
    assert holds_all(snap, "")
    assert not holds_all(snap, f"{UUID}:1-21")
    assert not holds_all(snap, "0-1-31")
    assert not holds_all(snap, "1-1-1")


@dataclass(frozen=True)
class _Table:
    db: str
    table: str


@dataclass(frozen=True)
class _Position:
    gtid: str | None


@dataclass(frozen=True)
class _Snap:
    id: str
    tables: tuple[_Table, ...]
    position: _Position


def test_a_snapshot_fills_a_gap_only_when_it_holds_every_table_of_the_source() -> None:
    both = (_Table("shop", "orders"), _Table("shop", "items"))
    whole = _Snap("whole", both, _Position("0-2-30"))
    part = _Snap("part", both[:1], _Position("0-2-31"))
    no_gtids = _Snap("none", both, _Position(None))
    held = {("shop", "orders"), ("shop", "items")}
    assert gap_fillers([whole, part, no_gtids], held, lambda db, t: True) == [("whole", GtidSet.parse("0-2-30"))]
    keeps_orders = lambda db, t: t == "orders"  # noqa: E731 - an --include of orders alone
    assert gap_fillers([whole, part], held, keeps_orders) == [
        ("part", GtidSet.parse("0-2-31")),
        ("whole", GtidSet.parse("0-2-30")),
    ]


def test_a_filler_lets_the_switch_past_a_gap_and_is_skipped_with_the_held_set() -> None:
    held = held_gtids([f"0-1-{n}" for n in range(1, 16)], "0-1-15")
    member = [(f"0-2-{n}", "binlog.000002") for n in range(20, 24)]
    listed = {0: 19}  # the member's file starts after 0-1-16..19 (in a file purged before it was fetched)
    with pytest.raises(GtidGapError, match="sequence numbers 16 to 19 are missing"):
        _checked_switch("s", "replica", member, held, None, listed, list)
    with pytest.raises(GtidGapError, match="sequence numbers 16 to 19 are missing"):
        _checked_switch("s", "replica", member, held, None, listed, lambda: [("a", GtidSet.parse("0-1-17"))])
    follows = [(f"0-2-{n}", "binlog.000002") for n in range(16, 20)]
    assert _checked_switch("s", "replica", follows, held, None, {0: 15}, lambda: [("a", GtidSet.parse("0-2-21"))]) == (
        held,
        None,
    )  # no gap: no snapshot is needed
    filled, by = _checked_switch(
        "s",
        "replica",
        member,
        held,
        None,
        listed,
        lambda: [("a", GtidSet.parse("0-1-17")), ("b", GtidSet.parse("0-2-21"))],
    )
    assert by == "b"  # the first snapshot that fills it
    skip = GtidSet.parse(filled.text())
    assert [g in skip for g, _ in member] == [True, True, False, False]
    assert "0-1-15" in skip and held.mariadb == filled.mariadb
