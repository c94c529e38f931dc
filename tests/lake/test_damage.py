"""A damaged Delta table is named with what is wrong (issue #25, case 9), on real delta-rs tables; names with
terminal control bytes are escaped before they are printed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from binlake.lake.damage import DamagedTableError, damaged_lake_error, guarded, printable, printable_doc, table_damage
from binlake.lake.layout import LakeLayout


def _lake(tmp_path: Path) -> LakeLayout:
    import pyarrow as pa
    from deltalake import write_deltalake

    lake = LakeLayout(str(tmp_path / "lake"))
    for path in (lake.bronze, lake.silver("shop", "orders"), lake.silver("shop", "users")):
        write_deltalake(path, pa.table({"id": [1, 2, 3]}))
        write_deltalake(path, pa.table({"id": [4]}), mode="append")
    return lake


def test_an_intact_lake_has_no_damage_and_failures_pass_through(tmp_path) -> None:
    lake = _lake(tmp_path)
    assert all(table_damage(p) is None for p in (lake.bronze, lake.silver("shop", "orders")))
    cause = RuntimeError("something else")
    assert damaged_lake_error(lake, cause) is cause
    with pytest.raises(RuntimeError, match="something else"):
        guarded(lake, lambda: (_ for _ in ()).throw(cause))
    assert guarded(lake, lambda: 42) == 42


def test_a_garbage_commit_names_the_table_and_what_to_do(tmp_path) -> None:
    lake = _lake(tmp_path)
    log = Path(lake.silver("shop", "orders")) / "_delta_log"
    (log / "00000000000000000002.json").write_text("this is not a commit\n")
    error = damaged_lake_error(lake, RuntimeError("a reader failed"))
    assert isinstance(error, DamagedTableError)
    text = str(error)
    assert "silver/shop__orders is damaged" in text and "can not be replayed" in text and "backup" in text
    assert "\n" not in text
    with pytest.raises(DamagedTableError, match="shop__orders"):
        guarded(lake, lambda: (_ for _ in ()).throw(OSError("deep inside a reader")))


def test_a_missing_data_file_names_the_table(tmp_path) -> None:
    lake = _lake(tmp_path)
    folder = Path(lake.silver("shop", "users"))
    victim = sorted(folder.glob("*.parquet"))[0]
    os.unlink(victim)
    problem = table_damage(str(folder))
    assert problem is not None and "1 data file(s)" in problem and victim.name in problem
    assert "silver/shop__users is damaged" in str(damaged_lake_error(lake, RuntimeError()))


def test_control_bytes_in_names_are_escaped() -> None:
    from binlake.lake.status import format_status

    evil = "db.t\x1b[2J\x1b]0;owned\x07\r\u202eexe.txt"
    assert printable(evil) == "db.t\\x1b[2J\\x1b]0;owned\\x07\\x0d\\u202eexe.txt"
    assert printable("plain.name_ü") == "plain.name_ü"
    doc = {
        "lake": "/l",
        "generated_at": "2024-01-01T00:00:00Z",
        "sources": [
            {
                "source": "s\x1b[31m",
                "last_commit_time": None,
                "lag_seconds": None,
                "checkpoint_seq": None,
                "last_run": None,
                "pending_files": None,
                "gap": None,
                "quarantined_rows": 0,
                "tables": [
                    {
                        "table": evil,
                        "live_rows": 1,
                        "last_commit_time": None,
                        "lag_seconds": None,
                        "quarantined_rows": 0,
                    }
                ],
            }
        ],
    }
    text = format_status(printable_doc(doc))
    assert not any(ch in text for ch in "\x1b\x07\r\u202e") and "db.t\\x1b[2J" in text and "s\\x1b[31m" in text
