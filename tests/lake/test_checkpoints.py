"""``meta.checkpoints`` writes on both engines: a row newer than the table's replaces it, an older or equal one
changes nothing and commits nothing, a key twice in one write is refused (expected rows worked out by hand)."""

from __future__ import annotations

import pytest

from binlake.lake.checkpoints import read_checkpoint, write_checkpoints
from binlake.lake.errors import MergeSourceError
from binlake.vocabulary import SEQ_COL, SOURCE_ROW

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _row(source: str, table: str, seq, **more) -> dict:  # noqa: ANN001
    return {"source": source, "table_name": table, SEQ_COL: seq, **more}


def _rows(engine, path: str) -> list[tuple]:  # noqa: ANN001
    return sorted(
        (r["source"], r["table_name"], r[SEQ_COL], r["binlog_file"])
        for r in engine.read_rows(None, path, ("source", "table_name", SEQ_COL, "binlog_file"))
    )


def test_checkpoint_rows_move_forward_only_and_an_unchanged_write_commits_nothing(engine, spark, table_path):
    first = [_row("a", SOURCE_ROW, 10, binlog_file="f.1"), _row("a", "shop.t", 9), _row("b", SOURCE_ROW, 5)]
    assert write_checkpoints(spark, engine, table_path, first) == 0
    assert _rows(engine, table_path) == [("a", "*", 10, "f.1"), ("a", "shop.t", 9, None), ("b", "*", 5, None)]

    # the same rows again, an older one, one without a seq over a row that has one: no change, no commit
    same = [*first, _row("a", "shop.t", 3), _row("b", SOURCE_ROW, None, binlog_file="x")]
    assert write_checkpoints(spark, engine, table_path, same[:3]) is None
    assert write_checkpoints(spark, engine, table_path, same[3:]) is None
    assert engine.version(table_path) == 0

    # newer rows replace theirs, new keys are added, the rest stay
    later = [_row("a", SOURCE_ROW, 20, binlog_file="f.2"), _row("a", "shop.u", 20), _row("b", SOURCE_ROW, 5)]
    assert write_checkpoints(spark, engine, table_path, later) == 1
    assert _rows(engine, table_path) == [
        ("a", "*", 20, "f.2"),
        ("a", "shop.t", 9, None),
        ("a", "shop.u", 20, None),
        ("b", "*", 5, None),
    ]
    assert read_checkpoint(spark, engine, table_path, "a").binlog_file == "f.2"

    with pytest.raises(MergeSourceError, match="2 changes for key"):
        write_checkpoints(spark, engine, table_path, [_row("a", "shop.t", 30), _row("a", "shop.t", 31)])
    assert engine.version(table_path) == 1
