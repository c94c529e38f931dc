"""The GTID rules of a cluster source's switch to another member (binlake.lake.members.check_switch), and the
landing's member folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from binlake.lake.errors import ErrantTransactionError, GtidGapError
from binlake.lake.members import MEMBERS_FILE, check_switch, held_gtids, member_folders, split_member
from binlake.pipeline.filters import GtidSet

A = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
B = "4f22ab58-82db-22f2-af44-d91bb0530673"


def _mysql(uuid: str, lo: int, hi: int, file: str = "binlog.000001") -> list[tuple[str, str]]:
    return [(f"{uuid}:{n}", file) for n in range(lo, hi + 1)]


def _maria(domain: int, server: int, lo: int, hi: int, file: str = "binlog.000001") -> list[tuple[str, str]]:
    return [(f"{domain}-{server}-{n}", file) for n in range(lo, hi + 1)]


def test_mysql_member_that_continues_the_held_set_passes_and_counts_the_held() -> None:
    held = held_gtids([f"{A}:{n}" for n in range(1, 11)], "")
    assert check_switch("s", "b", _mysql(A, 1, 10) + _mysql(A, 11, 12) + _mysql(B, 1, 3), held) == 10


def test_mysql_hole_after_the_held_set_is_a_gap_naming_the_range() -> None:
    held = held_gtids([f"{A}:{n}" for n in range(1, 11)], "")
    with pytest.raises(GtidGapError, match=rf"GTIDs {A}:11-13 are missing.*fetch the missing transactions"):
        check_switch("s", "b", _mysql(A, 1, 10) + _mysql(A, 14, 15), held)


def test_mysql_errant_transaction_before_held_ones_is_reported() -> None:
    held = held_gtids([f"{A}:{n}" for n in range(1, 11)], "")
    with pytest.raises(ErrantTransactionError, match=rf"{B}:1 come before {A}:6 .*errant"):
        check_switch("s", "b", _mysql(A, 1, 5) + _mysql(B, 1, 1) + _mysql(A, 6, 10), held)


def test_mysql_member_without_the_last_held_transaction_is_reported() -> None:
    held = held_gtids([f"{A}:{n}" for n in range(1, 11)], "")
    with pytest.raises(ErrantTransactionError, match=rf"do not hold {A}:10"):
        check_switch("s", "b", _mysql(A, 1, 8) + _mysql(B, 1, 2), held)


def test_mysql_previous_gtids_vouch_for_history_before_the_landed_files() -> None:
    held = held_gtids([f"{A}:{n}" for n in range(5, 11)], f"{A}:1-4")
    assert check_switch("s", "b", _mysql(B, 1, 2), held, previous=GtidSet.parse(f"{A}:1-10")) == 0


def test_mysql_excluded_tables_do_not_make_holes_in_the_held_range() -> None:
    held = held_gtids([f"{A}:1", f"{A}:2", f"{A}:5"], "")  # 3, 4 touched only excluded tables
    assert check_switch("s", "b", _mysql(A, 1, 6), held) == 5


def test_mariadb_continuation_and_gap() -> None:
    held = held_gtids([f"0-1-{n}" for n in range(1, 21)], "0-1-20")
    assert check_switch("s", "b", _maria(0, 1, 1, 20) + _maria(0, 2, 21, 25), held) == 20
    with pytest.raises(GtidGapError, match="domain 0 sequence numbers 21 to 24 are missing"):
        check_switch("s", "b", _maria(0, 2, 25, 26), held, listed={0: 24})


def test_mariadb_same_seq_from_another_server_is_a_diverged_history() -> None:
    """The source fetched 0-1-19 and 0-1-20 from the old primary; the promoted replica never got them and wrote
    its own 0-2-19: following it would skip 0-2-19 as held."""
    held = held_gtids([f"0-1-{n}" for n in range(1, 21)], "")
    with pytest.raises(ErrantTransactionError, match=r"0-2-19 .* is not the 0-1-19 the source holds"):
        check_switch("s", "b", _maria(0, 1, 1, 18) + _maria(0, 2, 19, 30), held)


def test_mariadb_errant_in_another_domain_before_held_ones() -> None:
    held = held_gtids([f"0-1-{n}" for n in range(1, 11)], "")
    with pytest.raises(ErrantTransactionError, match="1-2-1 come before 0-1-6"):
        check_switch("s", "b", _maria(0, 1, 1, 5) + _maria(1, 2, 1, 1) + _maria(0, 1, 6, 10), held)


def test_member_folders_follow_the_fetch_order_then_names(tmp_path: Path) -> None:
    for name in ("zeta", "alpha", "_snapshots", ".tmp", "mid"):
        (tmp_path / name).mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "alpha")
    assert member_folders(str(tmp_path)) == ["alpha", "mid", "zeta"]
    (tmp_path / MEMBERS_FILE).write_text("zeta\nalpha\n")
    assert member_folders(str(tmp_path)) == ["zeta", "alpha", "mid"]
    assert split_member("zeta/binlog.000003") == ("zeta", "binlog.000003")
    assert split_member("binlog.000003") == ("", "binlog.000003")


def test_mysql_transactions_before_what_the_source_read_count_as_held() -> None:
    """The source started at a later file of the old primary (A:50 on): the new member's files reach back to A:1."""
    held = held_gtids([f"{A}:{n}" for n in range(50, 61)], "")
    assert check_switch("s", "b", _mysql(A, 1, 61), held) == 60


def test_status_names_refused_entries_of_member_folders(tmp_path: Path) -> None:
    from binlake.lake.status import refused_files

    (tmp_path / "db1").mkdir()
    (tmp_path / "db1" / "binlog.000001").symlink_to("/etc/hostname")
    (tmp_path / "db1" / "binlog.000002").write_bytes(b"")
    [line] = refused_files(str(tmp_path))
    assert line.startswith("db1/binlog.000001: a symbolic link to /etc/hostname")
