"""The embedded (delta-rs) engine on Arrow tables, without Spark: the fast tier's proof of the MERGE rules,
schema widening and transaction-log versions. The same cases run on Spark DataFrames for both engines in
test_delta_contract.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from binlake.lake.delta import MergeResult, engine_for
from binlake.lake.delta.rust import RustEngine
from binlake.lake.errors import (
    DeltaEngineUnavailableError,
    DeltaTableNotFoundError,
    LakeError,
    MergeSourceError,
    SchemaConflictError,
)
from tests.lake import cases


@pytest.fixture
def rust() -> RustEngine:
    return RustEngine()


@pytest.fixture
def table_path(tmp_path) -> str:
    return str(tmp_path / "table")


def rows(engine: RustEngine, path: str) -> list[tuple]:
    return cases.sorted_rows(tuple(r.values()) for r in engine.read_arrow(path).to_pylist())


def log_actions(path: str, kind: str) -> list[dict]:
    """The actions of one kind (commitInfo, txn, ...) read straight from _delta_log's JSON commits, in order."""
    found = []
    for commit in sorted(Path(path, "_delta_log").glob("*.json")):
        found += [action[kind] for action in map(json.loads, commit.read_text().splitlines()) if kind in action]
    return found


def log_operations(path: str) -> list[str]:
    return [info["operation"] for info in log_actions(path, "commitInfo")]


def test_merge_applies_a_batch_by_sequence(rust, table_path):
    assert rust.append(table_path, cases.arrow_table(cases.TARGET)) == 0
    result = rust.merge(table_path, cases.arrow_table(cases.BATCH), ["id"])
    assert result == MergeResult(version=1, **cases.BATCH_COUNTS)
    assert rows(rust, table_path) == cases.AFTER_BATCH
    assert log_operations(table_path) == ["WRITE", "MERGE"]


def test_merging_the_same_batch_again_changes_nothing(rust, table_path):
    rust.append(table_path, cases.arrow_table(cases.TARGET))
    rust.merge(table_path, cases.arrow_table(cases.BATCH), ["id"])
    again = rust.merge(table_path, cases.arrow_table(cases.BATCH), ["id"])
    assert again == MergeResult(version=1, inserted=0, updated=0, deleted=0)
    assert rows(rust, table_path) == cases.AFTER_BATCH
    assert rust.version(table_path) == 1  # no commit for a MERGE that changed nothing


def test_tombstones_keep_deletes_so_a_late_insert_can_not_resurrect(rust, table_path):
    rust.append(table_path, cases.arrow_table(cases.TARGET))
    result = rust.merge(table_path, cases.arrow_table(cases.BATCH), ["id"], keep_tombstones=True)
    assert (result.inserted, result.updated, result.deleted) == (2, 2, 0)
    assert rows(rust, table_path) == cases.AFTER_BATCH_TOMBSTONES
    late = cases.arrow_table([(2, "late", 15, "insert"), (6, "late", 15, "insert")])
    assert rust.merge(table_path, late, ["id"], keep_tombstones=True).updated == 0
    assert rows(rust, table_path) == cases.AFTER_BATCH_TOMBSTONES


def test_without_tombstones_a_late_insert_after_a_delete_comes_back(rust, table_path):
    """The documented limit of the default mode: once deleted, a key has no seq left to compare with."""
    rust.append(table_path, cases.arrow_table(cases.TARGET))
    rust.merge(table_path, cases.arrow_table(cases.BATCH), ["id"])
    rust.merge(table_path, cases.arrow_table([(2, "late", 15, "insert")]), ["id"])
    assert (2, "late", 15, "insert") in rows(rust, table_path)


def test_target_rows_without_seq_count_as_older(rust, table_path):
    rust.append(table_path, cases.arrow_table([(1, "snapshot", None, "insert")]))
    rust.merge(table_path, cases.arrow_table([(1, "changed", 1, "update")]), ["id"])
    assert rows(rust, table_path) == [(1, "changed", 1, "update")]


def test_null_safe_keys_match_null_to_null(rust, table_path):
    columns = (("id", "long"), ("k2", "string"), ("_binlake_seq", "long"), ("_binlake_op", "string"))
    rust.append(table_path, cases.arrow_table([(1, None, 1, "insert"), (1, "x", 1, "insert")], columns))
    batch = cases.arrow_table([(1, None, 2, "delete")], columns)
    assert rust.merge(table_path, batch, ["id", "k2"], null_safe_keys=True).deleted == 1
    assert rows(rust, table_path) == [(1, "x", 1, "insert")]


def test_merge_into_a_missing_table_creates_it_from_the_non_delete_changes(rust, table_path):
    result = rust.merge(table_path, cases.arrow_table(cases.BATCH), ["id"])
    assert result == MergeResult(version=0, inserted=3, updated=0, deleted=0)
    assert rows(rust, table_path) == [r for r in cases.sorted_rows(cases.BATCH) if r[3] != "delete"]


def test_a_batch_with_two_changes_for_one_key_is_refused(rust, table_path):
    rust.append(table_path, cases.arrow_table(cases.TARGET))
    batch = cases.arrow_table([(9, "x", 20, "insert"), (9, "y", 21, "update")])
    with pytest.raises(MergeSourceError, match=r"2 changes for key \(id=9\)"):
        rust.merge(table_path, batch, ["id"])
    assert rust.version(table_path) == 0


def test_a_batch_without_the_seq_column_is_refused(rust, table_path):
    batch = cases.arrow_table([(1, "x")], cases.COLUMNS[:2])
    with pytest.raises(MergeSourceError, match="_binlake_seq"):
        rust.merge(table_path, batch, ["id"])


def test_new_columns_widen_the_table_before_the_merge(rust, table_path):
    rust.append(table_path, cases.arrow_table(cases.TARGET))
    rust.merge(table_path, cases.arrow_table(cases.BATCH), ["id"])
    result = rust.merge(table_path, cases.arrow_table(cases.WIDE_BATCH, cases.WIDE_COLUMNS), ["id"])
    assert result == MergeResult(version=3, inserted=1, updated=1, deleted=0)
    assert rows(rust, table_path) == cases.AFTER_WIDE_BATCH
    assert log_operations(table_path) == ["WRITE", "MERGE", "ADD COLUMN", "MERGE"]
    assert rust.read_arrow(table_path).schema.field("note").nullable


def test_append_widens_and_fills_missing_columns_with_null(rust, table_path):
    rust.append(table_path, cases.arrow_table(cases.WIDE_BATCH, cases.WIDE_COLUMNS))
    rust.append(table_path, cases.arrow_table([(8, "h", 40, "insert")]))
    assert rows(rust, table_path)[-1] == (8, "h", 40, "insert", None)


def test_a_changed_column_type_is_a_conflict(rust, table_path):
    rust.append(table_path, cases.arrow_table(cases.TARGET))
    wrong = cases.arrow_table([(1, 5, 20, "update")], (("id", "long"), ("v", "long")) + cases.COLUMNS[2:])
    with pytest.raises(SchemaConflictError, match="'v' is string in the table, long in the data"):
        rust.merge(table_path, wrong, ["id"])
    renamed = cases.arrow_table([(1, "x", 20, "update")], (("ID", "long"),) + cases.COLUMNS[1:])
    with pytest.raises(SchemaConflictError, match="'ID' differs only in case"):
        rust.append(table_path, renamed)


def test_awkward_column_names_are_quoted(rust, table_path):
    columns = (("Key Col", "long"), ('we"ird`', "string"), ("_binlake_seq", "long"), ("_binlake_op", "string"))
    rust.append(table_path, cases.arrow_table([(1, "a", 1, "insert"), (2, "b", 1, "insert")], columns))
    batch = cases.arrow_table([(2, "B", 2, "update"), (3, "c", 2, "insert")], columns)
    assert rust.merge(table_path, batch, ["Key Col"]) == MergeResult(1, inserted=1, updated=1, deleted=0)
    assert rows(rust, table_path) == [(1, "a", 1, "insert"), (2, "B", 2, "update"), (3, "c", 2, "insert")]


def test_overwrite_where_replaces_only_matching_rows(rust, table_path):
    rust.append(table_path, cases.arrow_table(cases.TARGET))
    version = rust.overwrite(table_path, cases.arrow_table([(2, "B", 11, "update")]), where="id = 2")
    assert version == 1
    assert rows(rust, table_path) == [
        (1, "a", 10, "insert"),
        (2, "B", 11, "update"),
        (3, "c", 10, "insert"),
        (4, "d", 10, "update"),
    ]
    assert cases.sorted_rows(r.values() for r in rust.read_arrow(table_path, version=0).to_pylist()) == cases.TARGET
    rust.overwrite(table_path, cases.arrow_table([(1, "x")], cases.COLUMNS[:2]))
    assert rust.read_arrow(table_path).column_names == ["id", "v"]


def test_missing_table(rust, table_path):
    assert not rust.exists(table_path)
    with pytest.raises(DeltaTableNotFoundError, match="no Delta table at"):
        rust.version(table_path)


def test_engine_choice_without_spark():
    assert engine_for(None, "rust").name == "rust"
    assert engine_for(None, "auto").name == "rust"
    with pytest.raises(DeltaEngineUnavailableError, match="no Spark session"):
        engine_for(None, "spark")
    with pytest.raises(LakeError, match="choose auto, rust or spark"):
        engine_for(None, "duckdb")


def test_importing_the_lake_loads_neither_spark_nor_delta_rs():
    code = (
        "import sys, binlake.lake.delta, binlake.lake.session;"
        "print(sorted(m for m in ('pyspark', 'deltalake', 'pyarrow', 'delta') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
