"""The one-string name of a source table in the meta tables: plain ``db.table`` where that is unambiguous,
MySQL-quoted otherwise, and always split back into the same pair (a database named ``a.b`` included)."""

from __future__ import annotations

import pytest

from binlake.lake.table_names import split_table_name, table_name


@pytest.mark.parametrize(
    "pair, text",
    [
        (("shop", "items"), "shop.items"),
        (("a.b", "t"), "`a.b`.`t`"),
        (("d", "x.y"), "`d`.`x.y`"),
        (("`q", "t"), "```q`.`t`"),
        (("a`b.c", "d``"), "`a``b.c`.`d`````"),
        (("d", "`"), "`d`.````"),
        (("a", ".t."), "`a`.`.t.`"),
    ],
)
def test_names_round_trip(pair, text):
    assert table_name(*pair) == text
    assert split_table_name(text) == pair


def test_plain_names_written_before_split_at_their_first_dot():
    assert split_table_name("shop.items") == ("shop", "items")
    assert split_table_name("d.x.y") == ("d", "x.y")  # as binlake wrote a dotted table name before
    assert split_table_name("`unterminated.t") == ("`unterminated", "t")
