"""``binlake status`` on a damaged lake (issue #25, case 9): a commit in a table's ``_delta_log`` that is not a
Delta commit, or a data file its log names deleted, is one typed line naming the table and what to do (was a
Py4JJavaError traceback)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.ops.test_status_metrics import cli

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _copy(loaded_lake, tmp_path: Path) -> tuple[Path, Path]:
    lake = tmp_path / "lake"
    shutil.copytree(loaded_lake.lake, lake, symlinks=True)
    table = sorted(p for p in (lake / "silver").iterdir() if (p / "_delta_log").is_dir())[0]
    return lake, table


def _next_commit(table: Path) -> Path:
    versions = [int(p.name.split(".")[0]) for p in (table / "_delta_log").glob("*.json")]
    return table / "_delta_log" / f"{max(versions) + 1:020d}.json"


@pytest.mark.parametrize("damage", ["garbage commit", "missing data file"])
def test_status_of_a_damaged_table_is_one_line_naming_it(loaded_lake, tmp_path, damage) -> None:
    lake, table = _copy(loaded_lake, tmp_path)
    if damage == "garbage commit":
        _next_commit(table).write_bytes(b"\x00\x01 not a delta commit {{{\n")
    else:
        for part in table.rglob("*.parquet"):
            part.unlink()
    code, _out, err = cli("status", "--lake", str(lake))
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err[-3000:]
    assert f"silver/{table.name} is damaged" in lines[0] and "Restore that table folder" in lines[0]
    assert "Traceback" not in err and "Py4J" not in err
