"""``binlake maintain`` on a lake loaded day by day: fewer data files in every table that had several, silver
unchanged, the tombstones of applied changes purged (every load here reached its checkpoint), time travel within
the retention intact, a Delta log checkpoint per table; a retention below the safe minimum refused without
--force; a forced vacuum deletes exactly the files no version references."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest

from binlake.cli import main


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def tables(lake: Path) -> list[Path]:
    return sorted(p.parent for p in lake.glob("*/*/_delta_log"))


def snapshot(lake: Path) -> dict[str, dict]:
    """Per table (read with deltalake, not binlake's engines): version, referenced data files, and its rows as
    sorted JSON lines."""
    from deltalake import DeltaTable

    out = {}
    for path in tables(lake):
        dt = DeltaTable(str(path))
        rows = dt.to_pyarrow_table().to_pylist()
        out[str(path.relative_to(lake))] = {
            "version": dt.version(),
            "files": len(dt.file_uris()),
            "rows": sorted(json.dumps(r, sort_keys=True, default=str) for r in rows),
        }
    return out


def parquet_on_disk(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*.parquet") if "_delta_log" not in p.parts}


TOMBSTONES = "meta/tombstones"


def expected_rows(table: str, rows: list[str]) -> list[str]:
    """A table's rows after maintenance: the same, but no tombstone (every load reached its checkpoint)."""
    return [] if table == TOMBSTONES else rows


def check_maintained(before: dict, lake: Path, summary: dict) -> None:
    from deltalake import DeltaTable

    after = snapshot(lake)
    assert set(after) == set(before)
    several = [t for t, s in before.items() if s["files"] > 1]
    assert "bronze/binlog_events" in several
    assert before[TOMBSTONES]["rows"] and summary["tombstones_purged"] == len(before[TOMBSTONES]["rows"])
    for t, s in before.items():
        assert after[t]["rows"] == expected_rows(t, s["rows"]), f"{t}: rows changed by maintenance"
        if t in several:
            assert after[t]["files"] < s["files"], t
        # time travel to the version before maintenance (within the retention) reads the same rows
        old = DeltaTable(str(lake / t), version=s["version"]).to_pyarrow_table().to_pylist()
        assert sorted(json.dumps(r, sort_keys=True, default=str) for r in old) == s["rows"], t
        assert list((lake / t / "_delta_log").glob("*.checkpoint*.parquet")), f"{t}: no checkpoint"
    # version 0 of bronze (the first day's append) is still readable: no file it references was vacuumed
    first = DeltaTable(str(lake / "bronze/binlog_events"), version=0)
    assert all(Path(u.removeprefix("file://")).is_file() for u in first.file_uris())
    by_table = {r["table"]: r for r in summary["tables"]}
    assert set(by_table) == set(before)
    for t, s in before.items():
        assert by_table[t]["files_before"] == s["files"] and by_table[t]["files_after"] == after[t]["files"]
        assert by_table[t]["files_vacuumed"] == 0  # every replaced file is younger than the retention


@pytest.mark.spark
@pytest.mark.slow
def test_maintain_bronze_with_the_spark_engine(loaded_lake, spark, tmp_path: Path) -> None:
    """delta-spark's OPTIMIZE, VACUUM and checkpoint on the table with the most files (the whole lake is
    maintained by the rust-engine test below; delta-spark costs about a minute per table on a CI machine)."""
    from deltalake import DeltaTable

    from binlake.lake.delta import engine_for
    from binlake.lake.maintain import maintain_table

    lake = tmp_path / "lake"
    shutil.copytree(loaded_lake.lake, lake)
    [before] = [s for t, s in snapshot(lake).items() if t == "bronze/binlog_events"]
    assert before["files"] > 1
    path = str(lake / "bronze" / "binlog_events")
    r = maintain_table(engine_for(spark, "spark"), path, "bronze/binlog_events", vacuum_hours=168, dry_run=False)
    dt = DeltaTable(path)
    assert r.files_before == before["files"] and r.files_after == len(dt.file_uris()) < before["files"]
    assert r.files_compacted == before["files"] and r.files_vacuumed == 0
    assert dt.version() == before["version"] + 1 and r.checkpoint_version == dt.version()
    assert (Path(path) / "_delta_log" / f"{dt.version():020d}.checkpoint.parquet").is_file()
    rows = sorted(json.dumps(x, sort_keys=True, default=str) for x in dt.to_pyarrow_table().to_pylist())
    assert rows == before["rows"]
    old = DeltaTable(path, version=before["version"]).to_pyarrow_table().to_pylist()
    assert sorted(json.dumps(x, sort_keys=True, default=str) for x in old) == before["rows"]


@pytest.mark.spark
@pytest.mark.slow
def test_maintain_with_the_rust_engine_then_a_forced_vacuum(loaded_lake, tmp_path: Path) -> None:
    from deltalake import DeltaTable

    lake = tmp_path / "lake"
    shutil.copytree(loaded_lake.lake, lake)
    before = snapshot(lake)
    # a dry run counts the tombstones a run would purge, and changes nothing
    code, out, err = cli("maintain", "--lake", str(lake), "--engine", "rust", "--dry-run", "--json")
    assert code == 0, err
    assert json.loads(out)["tombstones_purged"] == len(before[TOMBSTONES]["rows"]) > 0
    assert snapshot(lake) == before
    code, out, err = cli("maintain", "--lake", str(lake), "--engine", "rust", "--json")
    assert code == 0, err
    first = json.loads(out)
    check_maintained(before, lake, first)
    compacted = {r["table"]: r["files_compacted"] for r in first["tables"]}

    # a retention below the safe minimum: refused with one line naming --force, nothing touched
    disk = {t: parquet_on_disk(lake / t) for t in before}
    code, out, err = cli("maintain", "--lake", str(lake), "--engine", "rust", "--vacuum-hours", "0")
    assert code == 2 and err.count("\n") == 1 and "--force" in err and "168" in err
    # dry run: lists the files no current version references, deletes none
    code, out, err = cli(
        "maintain", "--lake", str(lake), "--engine", "rust", "--vacuum-hours", "0", "--force", "--dry-run", "--json"
    )
    assert code == 0, err
    dry = {r["table"]: r for r in json.loads(out)["tables"]}
    unreferenced, live = {}, {}
    for t in before:
        live[t] = {
            str(Path(u.removeprefix("file://")).relative_to(lake / t)) for u in DeltaTable(str(lake / t)).file_uris()
        }
        unreferenced[t] = disk[t] - live[t]
        # at least the files compaction replaced, never a file the current version reads
        assert compacted[t] <= dry[t]["files_vacuumed"] <= len(unreferenced[t]), t
        assert parquet_on_disk(lake / t) == disk[t], f"{t}: dry run deleted files"
    assert sum(compacted.values()) > 0
    code, out, err = cli("maintain", "--lake", str(lake), "--engine", "rust", "--vacuum-hours", "0", "--force")
    assert code == 0, err
    for t, s in before.items():
        left = parquet_on_disk(lake / t)
        assert live[t] <= left and len(disk[t] - left) == dry[t]["files_vacuumed"], t
        rows = DeltaTable(str(lake / t)).to_pyarrow_table().to_pylist()
        assert sorted(json.dumps(r, sort_keys=True, default=str) for r in rows) == expected_rows(t, s["rows"]), t


def test_maintain_refuses_an_unsafe_retention_and_a_missing_lake(tmp_path: Path) -> None:
    (tmp_path / "lake" / "meta").mkdir(parents=True)
    code, _, err = cli("maintain", "--lake", str(tmp_path / "lake"), "--engine", "rust", "--vacuum-hours", "24")
    assert code == 2 and err.count("\n") == 1 and "--force" in err
    code, _, err = cli("maintain", "--lake", str(tmp_path / "nowhere"), "--engine", "rust")
    assert code == 2 and err.count("\n") == 1 and "--lake" in err
    code, out, _ = cli("maintain", "--lake", str(tmp_path / "lake"), "--engine", "rust", "--json")
    assert code == 0 and json.loads(out)["tables"] == []
