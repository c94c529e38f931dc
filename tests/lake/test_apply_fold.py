"""The fold's partition function (``binlake.lake.apply.fold._fold_partition``) on the bronze rows of generated
workloads: with the known row keys of ``keys_exact`` tables (no key encoded again, states reusing bronze's
after-image text), and with a dependent table's keys grouped by the key changes that link them (or the table
as one group), it folds exactly as ``fold_sorted`` folds each table's changes in order. No Spark: the fold
records are built here the way ``change_records`` and ``_linked_keys_grouped`` build them."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from binlake.binlog.silver_types import to_arrow
from binlake.generate.config import GenerateConfig
from binlake.generate.run import generate
from binlake.lake.apply import scan
from binlake.lake.apply.fold import _fold_partition
from binlake.lake.apply.records import RECORD_COLUMNS
from binlake.lake.apply.scan import _scan, key_change
from binlake.pipeline.bronze import BRONZE_SCHEMA, ChunkTask, decode_chunk
from binlake.pipeline.filters import TransactionFilter
from binlake.pipeline.fold import Change, fold_sorted
from binlake.pipeline.identity import identify, landing_files
from binlake.vocabulary import CHANGE_OPS

BRONZE_COLUMNS = tuple((n, t) for n, t, _ in BRONZE_SCHEMA)


def bronze(tmp_path, row_image: str) -> list[dict]:
    out = tmp_path / row_image
    generate(out, GenerateConfig(days=1, scale=0.01, row_image=row_image, max_binlog_size=200_000))
    rows = []
    for path in landing_files(str(out / "landing" / "shop-primary")):
        task = ChunkTask(path, identify("s", path), 4, None)
        rows += to_arrow(BRONZE_COLUMNS, decode_chunk(task, TransactionFilter(), "run")).to_pylist()
    return rows


def records(rows: list[dict], info) -> pa.Table:
    """``change_records`` and ``_linked_keys_grouped``: one record per change, two per independent key-changing
    update; a dependent table's linked keys share their group's fold key."""
    out = []
    for r in rows:
        if r["op"] not in CHANGE_OPS:
            continue
        t = (r["db"], r["table_name"])
        ti = info.tables[t]
        groups = ti.key_groups()
        halves = ["old", "new"] if key_change(r["op"], r["key_before"], r["key_after"]) and not ti.dependent else [""]
        for split in halves:
            key = (
                "" if ti.one_group else r["key_after"] if split == "new" or r["op"] == "insert" else r["key_before"]
            ) or ""
            out.append(
                (
                    *t,
                    groups.get(key, key),
                    False,
                    r["file_seq"],
                    r["pos"],
                    r["row"],
                    r["_binlake_seq"],
                    r["op"],
                    split,
                    r["before"],
                    r["after"],
                    r["diffs"],
                    r["commit_ts"],
                    r["binlog_file"],
                    r["gtid"],
                    None,
                    None,
                    None,
                )
            )
    out.sort(key=lambda x: (x[0], x[1], x[2], x[4], x[5], x[6]))
    return to_arrow(RECORD_COLUMNS, out)


def folded(table: pa.Table, info, exact) -> dict:
    """(db, table, key) -> (values, seq, op, count) of the final states ``_fold_partition`` writes."""
    pks = {t: ti.pk for t, ti in info.tables.items()}
    run = _fold_partition(pks, {}, False, {}, exact)
    out = pa.Table.from_batches(list(run(iter(table.to_batches(max_chunksize=500))))).to_pylist()
    return {
        (r["db"], r["table_name"], r["row_key"]): (json.loads(r["values"]), r["seq"], r["op"], r["count"])
        for r in out
        if r["kind"] == "state"
    }


def reference(table: pa.Table, info) -> dict:
    """The same states from ``fold_sorted`` over each table's changes, images parsed here (no keys, no texts)."""
    changes: dict = {}
    for r in table.to_pylist():
        changes.setdefault((r["db"], r["table_name"]), []).append(
            Change(
                r["_binlake_seq"],
                (r["file_seq"], r["pos"], r["row"]),
                r["op"],
                *(json.loads(r[c]) if r[c] else None for c in ("before", "after", "diffs")),
                r["commit_ts"],
                r["binlog_file"],
                r["gtid"],
                r["split"],
            )
        )
    out = {}
    for t, chs in changes.items():
        rows = fold_sorted(sorted(chs, key=lambda c: c.order), {}, info.tables[t].pk).rows
        out.update({(*t, key): (st.values, st.seq, st.op, st.count if st.live else 0) for key, st in rows.items()})
    return out


@pytest.mark.parametrize(
    "row_image, links",
    [("full", None), ("minimal", None), ("minimal", 0)],
    ids=["full", "minimal", "minimal-one-group"],
)
def test_known_row_keys_fold_as_computed_ones(tmp_path, monkeypatch, row_image, links):
    """(``links`` 0: too many key changes to group by key, so a dependent table folds as one group.)"""
    if links is not None:
        monkeypatch.setattr(scan, "MAX_KEY_LINKS", links)
    rows = bronze(tmp_path, row_image)
    info = _scan(iter(rows)).resolve_layouts(lambda ids: {})
    exact = frozenset(t for t, ti in info.tables.items() if ti.pk and ti.keys_exact and not ti.dependent)
    assert exact, "no table to fold with known keys"
    table = records(rows, info)
    truth = reference(table, info)
    assert len(truth) > 100
    if row_image == "minimal":  # key-changing updates of a MINIMAL image: grouped by the keys they link
        assert any(ti.dependent and (ti.one_group if links == 0 else ti.key_groups()) for ti in info.tables.values())
    assert folded(table, info, frozenset()) == truth
    assert folded(table, info, exact) == truth


def test_linked_keys_share_the_smallest_key_of_their_set():
    from binlake.lake.apply.scan import TableInfo

    t = TableInfo(pk=["id"], dependent=True)
    for old, new in (("[5]", "[3]"), ("[3]", "[9]"), ("[7]", "[8]"), ("[9]", "[4]")):
        t.link(old, new)
    assert t.key_groups() == {"[3]": "[3]", "[4]": "[3]", "[5]": "[3]", "[9]": "[3]", "[7]": "[7]", "[8]": "[7]"}
    assert not t.one_group and TableInfo(pk=["id"]).key_groups() == {}
    t.links = None
    assert t.one_group and t.key_groups() == {}


def test_a_table_whose_layouts_disagree_on_the_primary_key_computes_its_keys():
    cols = json.dumps([["id", 3, 3, 0, False, None], ["v", 3, 3, 0, False, None]])
    layouts = {"a": (cols, json.dumps(["id"])), "b": (cols, json.dumps(["v"]))}
    base = {
        "_binlake_seq": 1,
        "binlog_file": "b.000001",
        "pos": 1,
        "gtid": None,
        "db": "d",
        "table_name": "t",
        "columns": None,
        "primary_key": None,
        "key_before": None,
        "key_after": "[1]",
        "after": None,
        "diffs": None,
        "statement": None,
        "commit_ts": 0,
        "raw": None,
        "op": "insert",
    }
    one = _scan(iter([{**base, "layout": "a"}])).resolve_layouts(lambda ids: layouts)
    two = _scan(iter([{**base, "layout": "a"}, {**base, "layout": "b"}])).resolve_layouts(lambda ids: layouts)
    legacy = _scan(iter([{**base, "layout": None, "columns": cols, "primary_key": json.dumps(["id"])}]))
    assert one.tables["d", "t"].keys_exact
    assert not two.tables["d", "t"].keys_exact
    assert not legacy.resolve_layouts(lambda ids: {}).tables["d", "t"].keys_exact
