"""The apply scan's table layouts: stated once per chunk in bronze, looked up when a batch starts after them."""

from __future__ import annotations

import json

import pytest

from binlake.lake.apply.scan import SCAN_COLUMNS, BatchInfo, _scan
from binlake.lake.errors import LayoutMissingError
from binlake.pipeline.bronze import layout_id
from binlake.vocabulary import CHANGE_OPS

COLUMNS = json.dumps([["id", 3, 3, 0, False, None], ["name", 15, 15, 40, False, 255], ["qty", 3, 3, 0, False, None]])
PK = json.dumps(["id"])
LID = layout_id(COLUMNS, PK)


def row(seq, op, **values):
    r = dict.fromkeys(SCAN_COLUMNS)
    r.update({"_binlake_seq": seq, "binlog_file": "b.000001", "pos": seq, "op": op, "db": "d", "table_name": "t"})
    r.update(values)
    return r


def layout_row(seq):
    return row(seq, "layout", columns=COLUMNS, primary_key=PK, layout=LID)


def key_change(seq, after):
    return row(seq, "update", layout=LID, key_before="[1]", key_after="[2]", after=json.dumps(after))


def scanned(rows, lookup=lambda ids: {}):
    return _scan(iter(rows)).resolve_layouts(lookup)


def test_a_batch_holding_the_layout_row_needs_no_lookup():
    def lookup(ids):
        raise AssertionError(f"looked up {ids}")

    info = scanned([layout_row(1), key_change(1, {"id": 2, "name": "a", "qty": 1})], lookup)
    t = info.tables["d", "t"]
    assert t.metas == {COLUMNS} and t.pk == ["id"] and not t.dependent and t.changes == 1


def test_a_batch_starting_after_the_layout_row_looks_it_up():
    asked = []

    def lookup(ids):
        asked.append(ids)
        return {LID: (COLUMNS, PK)}

    info = scanned([key_change(5, {"id": 2, "name": "a", "qty": 1})], lookup)
    assert asked == [[LID]] and info.tables["d", "t"].metas == {COLUMNS} and info.tables["d", "t"].pk == ["id"]


def test_a_minimal_after_image_makes_the_table_dependent_whatever_the_partition_order():
    partial = key_change(2, {"id": 2})  # MINIMAL: fewer columns than the layout's
    for parts in ([[layout_row(1)], [partial]], [[partial], [layout_row(1)]]):
        info = BatchInfo()
        for p in parts:
            info.add(_scan(iter(p)))
        assert info.resolve_layouts(lambda ids: {}).tables["d", "t"].dependent


def test_a_layout_missing_from_bronze_is_a_typed_error():
    with pytest.raises(LayoutMissingError, match=LID):
        scanned([key_change(5, {"id": 2, "name": "a", "qty": 1})])


def test_bronze_rows_with_their_own_columns_still_scan():
    old = key_change(3, {"id": 2})
    old.update(layout=None, columns=COLUMNS, primary_key=PK)
    t = scanned([old]).tables["d", "t"]
    assert t.metas == {COLUMNS} and t.pk == ["id"] and t.dependent


def test_layouts_of_a_batch_starting_inside_a_chunk_are_read_from_bronze(tmp_path):
    """A real generated binlog decoded to bronze (written with delta-rs): a batch that starts after a chunk's
    layout rows gets the same table metadata from the lookup as the whole chunk's batch has in itself."""
    import datetime as dt

    from binlake.binlog.silver_types import to_arrow
    from binlake.generate.config import GenerateConfig
    from binlake.generate.run import generate
    from binlake.lake.apply.scan import bronze_layouts
    from binlake.lake.delta.rust import RustEngine
    from binlake.lake.ingest import BRONZE_COLUMNS_TYPES
    from binlake.pipeline.bronze import BRONZE_COLUMNS, ChunkTask, decode_chunk
    from binlake.pipeline.filters import TransactionFilter
    from binlake.pipeline.identity import identify, landing_files

    generate(tmp_path / "gen", GenerateConfig(seed=3, days=1, scale=0.002, start_date=dt.date(2024, 3, 1)))
    path = landing_files(tmp_path / "gen" / "landing" / "shop-primary")[0]
    rows = decode_chunk(ChunkTask(path, identify("src", path), 4, None), TransactionFilter(), "run")
    engine, bronze = RustEngine(), str(tmp_path / "bronze")
    engine.append(bronze, to_arrow(BRONZE_COLUMNS_TYPES, rows))
    dicts = [dict(zip(BRONZE_COLUMNS, r)) for r in rows]
    last_layout = max(i for i, r in enumerate(dicts) if r["op"] == "layout")
    whole = _scan(iter(dicts)).resolve_layouts(lambda ids: {})
    asked = []

    def lookup(ids):
        asked.append(ids)
        return bronze_layouts(None, engine, bronze, "src")(ids)

    later = _scan(iter(dicts[last_layout + 1 :])).resolve_layouts(lookup)
    stated = {r["layout"]: r for r in dicts if r["op"] == "layout"}
    named: dict = {}
    for r in dicts[last_layout + 1 :]:
        if r["op"] in CHANGE_OPS:
            named.setdefault((r["db"], r["table_name"]), set()).add(stated[r["layout"]]["columns"])
    assert asked and named and set(later.tables) == set(named)
    for t, info in later.tables.items():
        assert info.metas == named[t] and info.pk == whole.tables[t].pk
    assert bronze_layouts(None, engine, bronze, "another source")(asked[0]) == {}


def _scan_state(info: BatchInfo) -> tuple:
    tables = sorted(
        (
            t,
            ti.pk,
            sorted(ti.metas),
            ti.changes,
            ti.last_seq,
            ti.dependent,
            None if ti.links is None else sorted(ti.links),
            sorted(ti.layouts),
            ti.key_change_after,
            ti.legacy,
            ti.ops,
            ti.last_commit_ts,
        )
        for t, ti in info.tables.items()
    )

    def by_seq(rows: list) -> list:  # partitions come back in any order; apply sorts DDL by seq
        return sorted(rows, key=lambda r: r["_binlake_seq"])

    return tables, info.gtids, info.last, by_seq(info.errors), by_seq(info.ddls), info.changes, info.layouts


def workload_rows(tmp_path, row_image):
    """A generated workload's bronze rows (key changes, JSON diffs, DDL, layouts), one change row as bronze
    wrote it before layout rows."""
    from tests.lake.test_apply_fold import bronze

    rows = [{c: r.get(c) for c in SCAN_COLUMNS} for r in bronze(tmp_path, row_image)]
    old = next(i for i, r in enumerate(rows) if r["op"] in CHANGE_OPS)
    rows[old].update(layout=None, columns=COLUMNS, primary_key=PK)
    return rows


@pytest.mark.spark
@pytest.mark.parametrize("grouped", [True, False], ids=["grouped in the JVM", "one pass"])
@pytest.mark.parametrize("gtids", [True, False])
def test_the_spark_scan_equals_the_row_scan(spark, tmp_path, gtids, grouped, monkeypatch):
    """``scan_batch`` (plain changes grouped in the JVM or not, the rest row by row in Python) finds what
    ``_scan`` finds, op counts and commit times included, on a workload of many transactions in several
    partitions; without GTIDs (a server without them) a group spans many transactions of a file."""
    import pyarrow as pa

    from binlake.lake.apply import scan
    from binlake.lake.apply.scan import scan_batch

    monkeypatch.setattr(scan, "GROUP_IN_JVM_BYTES", -1 if grouped else 1 << 40)

    rows = workload_rows(tmp_path, "full")
    if not gtids:
        for r in rows:
            r["gtid"] = None
    # the batch ends on a plain change (the last position then comes from the grouped rows)
    end = max(i for i, r in enumerate(rows) if r["op"] == "insert" and r["layout"])
    rows = rows[: end + 1]
    batch = spark.createDataFrame(pa.Table.from_pylist(rows)).repartition(3)
    got = scan_batch(batch, lambda ids: {})
    assert got.changes > 1000 and any(ti.links for ti in got.tables.values()) and got.ddls
    assert len({r["commit_ts"] for r in rows if r["op"] in CHANGE_OPS}) > 100
    assert sum(sum(ti.ops.values()) for ti in got.tables.values()) == got.changes
    assert _scan_state(got) == _scan_state(scanned(rows))


@pytest.mark.parametrize("row_image", ["full", "minimal"])
def test_the_columnar_scan_equals_the_row_scan(tmp_path, row_image):
    """``_scan_arrow`` (plain changes counted column-wise, the rest row by row) finds what ``_scan`` finds, on
    a generated workload's bronze rows (key changes, JSON diffs, DDL, layouts) cut into uneven batches."""
    import pickle

    import pyarrow as pa

    from binlake.lake.apply.scan import _scan_arrow

    rows = workload_rows(tmp_path, row_image)
    (out,) = _scan_arrow(iter(pa.Table.from_pylist(rows).to_batches(max_chunksize=777)))
    got = pickle.loads(out.column("info")[0].as_py())
    assert got.changes > 1000 and any(ti.links for ti in got.tables.values()) and got.ddls
    assert _scan_state(got) == _scan_state(_scan(iter(rows)))
