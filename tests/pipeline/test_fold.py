"""The per-key fold on small literal changes with hand-computed results (WL#10570 semantics for the JSON)."""

from __future__ import annotations

import json

from binlake.pipeline.fold import Change, RowState, fold_table, row_key
from binlake.pipeline.identity import ordering_key

PK = ["id"]


def ch(n: int, op: str, before=None, after=None, diffs=None, row: int = 0) -> Change:
    return Change(
        ordering_key(1, 1000 + n * 100, row),
        (1, 1000 + n * 100, row),
        op,
        before,
        after,
        diffs,
        binlog_file="binlog.000001",
    )


def diff(op: str, path: str, value=None) -> dict:
    return {"op": op, "path": path, "value": value}


def live(result) -> dict:
    return {k: st.values for k, st in result.rows.items() if st.live}


def test_insert_update_delete_last_change_wins_and_deletes_are_tombstones():
    out = fold_table(
        [
            ch(1, "insert", after={"id": 1, "v": "a"}),
            ch(2, "insert", after={"id": 2, "v": "b"}),
            ch(3, "update", before={"id": 1, "v": "a"}, after={"id": 1, "v": "c"}),
            ch(4, "delete", before={"id": 2, "v": "b"}),
        ],
        {},
        PK,
    )
    assert live(out) == {"[1]": {"id": 1, "v": "c"}}
    tomb = out.rows["[2]"]
    assert (tomb.op, tomb.seq, tomb.values) == ("delete", ordering_key(1, 1400, 0), {"id": 2, "v": "b"})
    assert (out.stats["insert"], out.stats["update"], out.stats["delete"]) == (2, 1, 1)


def test_order_is_file_position_row_not_input_order():
    changes = [
        ch(2, "update", before={"id": 1, "v": "a"}, after={"id": 1, "v": "second"}),
        ch(1, "update", before={"id": 1, "v": "a"}, after={"id": 1, "v": "first"}),
    ]
    base = {"[1]": RowState({"id": 1, "v": "a"}, 0, "insert")}
    assert live(fold_table(changes, base, PK)) == {"[1]": {"id": 1, "v": "second"}}


def test_key_change_deletes_old_key_and_writes_new_key():
    base = {"[1]": RowState({"id": 1, "v": "x", "w": 5}, 7, "insert")}
    out = fold_table([ch(1, "update", before={"id": 1}, after={"id": 9})], base, PK)  # MINIMAL images
    assert out.rows["[1]"].op == "delete"
    assert out.rows["[9]"].values == {"id": 9, "v": "x", "w": 5}
    assert out.stats["key_change"] == 1


def test_minimal_after_image_merges_into_silver_row():
    base = {"[3]": RowState({"id": 3, "a": 1, "b": 2}, 5, "update")}
    out = fold_table([ch(1, "update", before={"id": 3}, after={"b": 20})], base, PK)
    assert live(out) == {"[3]": {"id": 3, "a": 1, "b": 20}}


def test_partial_json_against_silver_then_against_the_earlier_change_in_the_batch():
    base = {"[1]": RowState({"id": 1, "j": '{"a": 1, "b": [1, 2]}'}, 5, "insert")}
    out = fold_table(
        [
            ch(
                1,
                "update",
                before={"id": 1},
                after={},
                diffs={"j": [diff("REPLACE", "$.a", "10"), diff("INSERT", "$.b[1]", '"x"')]},
            ),
            ch(
                2,
                "update",
                before={"id": 1},
                after={},
                diffs={"j": [diff("REMOVE", "$.b[0]"), diff("INSERT", "$.c", "null")]},
            ),
        ],
        base,
        PK,
    )
    # MySQL: JSON_REPLACE(j,'$.a',10), JSON_ARRAY_INSERT(j,'$.b[1]','x'), JSON_REMOVE(j,'$.b[0]'),
    # JSON_INSERT(j,'$.c',NULL); keys print in MySQL's order (length, then bytes)
    assert live(out)["[1]"]["j"] == '{"a": 10, "b": ["x", 2], "c": null}'
    assert out.stats["json_diffs_applied"] == 4 and not out.quarantine


def test_rejected_diff_is_quarantined_column_keeps_last_good_value_until_a_full_value():
    base = {"[1]": RowState({"id": 1, "j": "[]", "s": "old"}, 5, "insert")}
    out = fold_table(
        [
            ch(1, "update", before={"id": 1}, after={"s": "new"}, diffs={"j": [diff("REPLACE", "$.a", "1")]}),
            ch(2, "update", before={"id": 1}, after={}, diffs={"j": [diff("REPLACE", "$[0]", "1")]}),
            ch(3, "update", before={"id": 1}, after={"j": '{"z": 0}'}),
            ch(4, "update", before={"id": 1}, after={}, diffs={"j": [diff("REPLACE", "$.z", "1")]}),
        ],
        base,
        PK,
    )
    assert [q["status"] for q in out.quarantine] == ["REJECTED", "SKIPPED"]
    first = out.quarantine[0]
    assert (first["column_name"], first["document"], first["pos"]) == ("j", "[]", 1100)
    assert json.loads(first["diffs"]) == [diff("REPLACE", "$.a", "1")]
    assert live(out)["[1]"] == {"id": 1, "j": '{"z": 1}', "s": "new"}


def test_diff_without_any_base_document_is_rejected():
    out = fold_table([ch(1, "update", before={"id": 4}, after={}, diffs={"j": [diff("REPLACE", "$.a", "1")]})], {}, PK)
    assert out.quarantine[0]["status"] == "REJECTED" and "no base document" in out.quarantine[0]["reason"]
    assert "j" not in live(out)["[4]"]


def test_changes_not_newer_than_silver_are_already_applied():
    seq2 = ordering_key(1, 1200, 0)
    base = {"[1]": RowState({"id": 1, "v": "after-2"}, seq2, "update")}
    out = fold_table(
        [
            ch(1, "update", before={"id": 1}, after={"v": "after-1"}),
            ch(2, "update", before={"id": 1}, after={"v": "after-2"}),
            ch(3, "update", before={"id": 1}, after={"v": "after-3"}),
        ],
        base,
        PK,
    )
    assert out.stats["already_applied"] == 2
    assert live(out) == {"[1]": {"id": 1, "v": "after-3"}}


def test_tables_without_primary_key_count_duplicates():
    row = {"a": 1, "b": None}
    key = row_key(row, None)
    out = fold_table(
        [
            ch(1, "insert", after=row, row=0),
            ch(1, "insert", after=row, row=1),
            ch(2, "update", before=row, after={"a": 2, "b": None}),
            ch(3, "delete", before={"a": 5, "b": None}),
        ],
        {},
        None,
    )
    assert (out.rows[key].count, out.rows[key].op) == (1, "update")
    assert out.rows[row_key({"a": 2}, None)].count == 1
    assert [q["status"] for q in out.quarantine] == ["MISSING_ROW"]
    gone = fold_table([ch(4, "delete", before=row)], {key: RowState(row, 1, "insert", 1)}, None)
    assert (gone.rows[key].count, gone.rows[key].op) == (0, "delete")


def test_a_rerun_over_silver_that_holds_the_batch_applies_nothing_to_tables_without_primary_key():
    row, other = {"a": 1}, {"a": 2}
    changes = [
        ch(1, "insert", after=row, row=0),
        ch(1, "insert", after=row, row=1),
        ch(2, "insert", after=other),
        ch(3, "update", before=other, after={"a": 3}),
    ]
    first = fold_table(changes, {}, None)
    again = fold_table(changes, first.rows, None)  # silver's rows and meta/tombstones' deleted keys
    assert again.stats["already_applied"] == 4
    assert again.rows == {}


def test_history_has_one_version_per_key_and_change():
    row = {"a": 1}
    out = fold_table(
        [
            ch(1, "insert", after=row),
            ch(2, "update", before=row, after={"a": 1}),
            ch(3, "update", before={"a": 1}, after={"a": 2}),
        ],
        {},
        None,
        history=True,
    )
    versions = [(key, st.seq, st.op, st.count) for key, st, _ in out.history]
    k1, k2 = row_key({"a": 1}, None), row_key({"a": 2}, None)
    assert versions == [
        (k1, ordering_key(1, 1100, 0), "insert", 1),
        (k1, ordering_key(1, 1200, 0), "insert", 1),
        (k1, ordering_key(1, 1300, 0), "delete", 0),
        (k2, ordering_key(1, 1300, 0), "insert", 1),
    ]


def test_rows_past_the_saturated_seq_slot_of_one_big_transaction_still_apply_in_order():
    # A compressed transaction: every inner row has the payload's position; rows 4100 and 4200 share the
    # saturated _binlake_seq, so only the exact (file, pos, row) order can tell them apart.
    inserted = ch(1, "insert", after={"id": 7, "v": "new"}, row=4100)
    updated = ch(1, "update", before={"id": 7, "v": "new"}, after={"id": 7, "v": "changed"}, row=4200)
    deleted = ch(1, "delete", before={"id": 8, "v": "x"}, row=4300)
    reinserted = ch(1, "insert", after={"id": 8, "v": "again"}, row=4400)
    assert inserted.seq == updated.seq == deleted.seq == reinserted.seq
    out = fold_table([reinserted, updated, deleted, inserted], {}, PK)
    assert live(out) == {"[7]": {"id": 7, "v": "changed"}, "[8]": {"id": 8, "v": "again"}}
    assert out.stats["already_applied"] == 0
    # Rerunning the same batch against the silver it produced changes nothing.
    again = fold_table([inserted, updated, deleted, reinserted], dict(out.rows), PK)
    assert again.stats["already_applied"] == 4
