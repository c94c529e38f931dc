"""The lake layout: silver folder names are an injective, reversible function of (db, table) for any name MySQL
allows, and never leave ``silver/`` (fast tier, no Spark)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake.lake.layout import LakeLayout, TableNameError, parse_silver_name, silver_name

# MySQL identifiers: up to 64 characters of the BMP (utf8mb3), anything but NUL
NAMES = st.text(
    st.characters(min_codepoint=1, max_codepoint=0xFFFF, exclude_categories=("Cs",)), min_size=1, max_size=64
)


@settings(max_examples=600, deadline=None)
@given(NAMES, NAMES, NAMES, NAMES)
def test_distinct_pairs_get_distinct_folders(db1: str, t1: str, db2: str, t2: str) -> None:
    if (db1, t1) != (db2, t2):
        assert silver_name(db1, t1) != silver_name(db2, t2)


@settings(max_examples=600, deadline=None)
@given(NAMES, NAMES)
def test_folder_is_one_safe_path_component_and_reversible(db: str, table: str) -> None:
    name = silver_name(db, table)
    assert "/" not in name and "\x00" not in name and name not in (".", "..")
    assert len(name.encode()) <= 255
    parsed = parse_silver_name(name)
    assert parsed == (db, table) or (parsed is None and "~~" in name)  # a cut name keeps its pair in the folder


@pytest.mark.parametrize(
    "db, table",
    [
        ("a__b", "c"),
        ("a", "b__c"),
        ("../../evil", "x"),
        ("/abs", "t"),
        ("a/b", "c"),
        ("sp ace", "<script>"),
        ("_a", "b"),
        ("a_", "_b"),
    ],
)
def test_hostile_names_stay_inside_silver_and_do_not_collide(tmp_path: Path, db: str, table: str) -> None:
    lake = LakeLayout(str(tmp_path))
    path = Path(lake.silver(db, table))
    assert path.parent == tmp_path / "silver" and os.path.realpath(path).startswith(str(tmp_path / "silver") + os.sep)
    assert parse_silver_name(path.name) == (db, table)


def test_collisions_of_the_old_scheme_are_gone() -> None:
    assert silver_name("a__b", "c") != silver_name("a", "b__c")
    assert silver_name("shop", "order_items") == "shop__order_items"  # ordinary names stay readable


def test_nul_and_empty_names_are_typed_errors() -> None:
    with pytest.raises(TableNameError, match="NUL"):
        silver_name("d\x00b", "t")
    with pytest.raises(TableNameError):
        silver_name("", "t")


def test_long_names_are_cut_hashed_and_named_by_their_name_file(tmp_path: Path) -> None:
    lake = LakeLayout(str(tmp_path))
    db, table = "表" * 64, "ü" * 64
    folder = Path(lake.silver(db, table))
    assert "~~" in folder.name and parse_silver_name(folder.name) is None
    (folder / "_delta_log").mkdir(parents=True)
    lake.record_name(db, table)
    assert lake.silver_tables() == [(db, table)] and lake.unnamed_silver_folders() == []
    assert silver_name(db, table + "x") != folder.name
