"""Transaction filter stage: db.table patterns and the applied-GTID skip set."""

from __future__ import annotations

import pytest

from binlake.pipeline.errors import FilterSyntaxError
from binlake.pipeline.filters import GtidSet, TableFilter, TransactionFilter

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"


def test_table_patterns_include_and_exclude():
    f = TableFilter(include=("shop.*", "crm.contacts"), exclude=("shop.audit_?og",))
    assert f.keeps("shop", "orders") and f.keeps("crm", "contacts")
    assert not f.keeps("shop", "audit_log") and not f.keeps("crm", "deals")
    assert TableFilter().keeps("any", "thing")
    with pytest.raises(FilterSyntaxError):
        TableFilter(include=("orders",))


def test_mysql_gtid_set_intervals_and_tags():
    s = GtidSet.parse(f"{UUID}:1-5:7, {UUID}:tag_a:3")
    assert f"{UUID}:5" in s and f"{UUID}:7" in s and f"{UUID}:tag_a:3" in s
    assert f"{UUID}:6" not in s and f"{UUID}:8" not in s and f"{UUID}:tag_b:3" not in s
    s.add(f"{UUID}:6")
    assert s.to_text() == f"{UUID}:1-7,{UUID}:tag_a:3"
    assert GtidSet.parse(s.to_text()).to_text() == s.to_text()


def test_mariadb_gtid_positions_per_domain():
    s = GtidSet.parse("0-1-100,1-2-5")
    assert "0-9-100" in s and "0-1-101" not in s and "1-2-4" in s and "2-1-1" not in s
    with pytest.raises(FilterSyntaxError):
        GtidSet.parse(f"{UUID}:x-y")


def test_transaction_filter_discards_and_counts():
    tf = TransactionFilter(applied=GtidSet.parse(f"{UUID}:1-3"))
    kept = [
        tf.keeps_transaction(g, k)
        for g, k in (
            (f"{UUID}:2", "commit"),
            (f"{UUID}:4", "commit"),
            (None, "rollback"),
            (f"{UUID}:5", "open"),
            (None, "ddl"),
        )
    ]
    assert kept == [False, True, False, False, True]
    s = tf.stats
    assert (s.kept, s.skipped_gtid, s.rolled_back, s.incomplete) == (2, 1, 1, 1)
