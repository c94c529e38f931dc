"""Which part of a DDL statement applies to tables seeded from a snapshot (``binlake.lake.apply.ddl._after_seams``):
none of a statement before a table's seam; a DROP DATABASE before it spares the table; a RENAME onto a table
seeded after it only retires the old name."""

from __future__ import annotations

from binlake.lake.apply.ddl import _after_seams
from binlake.pipeline.ddl import CreateTable, DropDatabase, DropTable, RenameTable, Truncate, parse_ddl

SEAMS = {("dd", "t"): 1000, ("dd", "moved"): 1000, ("a.b", "t"): 1000}


def at(seq: int) -> dict:
    return {"_binlake_seq": seq}


def test_a_drop_database_before_a_seam_spares_the_seeded_tables():
    [drop] = parse_ddl("DROP DATABASE IF EXISTS dd", None)
    assert _after_seams(drop, at(10), SEAMS) == DropDatabase("dd", keep=frozenset({"t", "moved"}))
    assert _after_seams(drop, at(2000), SEAMS) == drop  # after the seams: the whole database
    assert _after_seams(DropDatabase("other"), at(10), SEAMS) == DropDatabase("other")


def test_table_statements_before_a_seam_do_not_apply():
    assert _after_seams(CreateTable("dd", "t"), at(10), SEAMS) is None
    assert _after_seams(Truncate("a.b", "t"), at(10), SEAMS) is None  # a dotted database name
    assert _after_seams(Truncate("a.b", "t"), at(1000), SEAMS) == Truncate("a.b", "t")
    assert _after_seams(DropTable("dd", "u"), at(10), SEAMS) == DropTable("dd", "u")


def test_a_rename_onto_a_table_seeded_after_it_retires_the_old_name():
    rename = RenameTable("dd", "old", "dd", "moved")
    assert _after_seams(rename, at(10), SEAMS) == DropTable("dd", "old")
    assert _after_seams(rename, at(2000), SEAMS) == rename
