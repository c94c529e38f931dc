"""``meta/run_metrics`` and ``binlake status`` after several days loaded day by day, against the generator's
own model (commit times, row changes per table and operation) and its truth/ files (rows per table)."""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
from pathlib import Path

import pytest

from binlake.cli import main
from binlake.lake.metrics import utc

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def truth_rows(out: Path, table: str, day: str) -> int:
    path = out / "truth" / table / f"day={day}.jsonl"
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_run_metrics_per_day_match_the_model(loaded_lake) -> None:
    from deltalake import DeltaTable

    rows = DeltaTable(str(loaded_lake.lake / "meta" / "run_metrics")).to_pyarrow_table().to_pylist()
    runs = sorted({r["run_id"] for r in rows}, key=lambda run: min(r["run_end"] for r in rows if r["run_id"] == run))
    assert len(runs) == len(loaded_lake.days)
    landed = sorted((loaded_lake.landing / "shop-primary").glob("mysql-bin.0*"))
    assert sum(r["bytes_ingested"] for r in rows if r["table_name"] == "*") == sum(p.stat().st_size for p in landed)
    last_seen: dict[str, int] = {}  # every table changed so far -> its newest change (a run reads only
    for run, summary, truth in zip(runs, loaded_lake.summaries, loaded_lake.truth):  # its own bronze rows)
        assert run == summary["run_id"]
        mine = [r for r in rows if r["run_id"] == run]
        [total] = [r for r in mine if r["table_name"] == "*"]
        assert total["last_commit_time"] == utc(truth.last_commit_us)
        assert total["lag_seconds"] == pytest.approx(
            (total["run_end"] - total["last_commit_time"]).total_seconds(), abs=0.01
        )
        assert total["files_ingested"] == summary["files"] and total["bytes_ingested"] == summary["bytes"]
        assert total["quarantined"] == 0 and total["result"] == "ok"
        assert total["run_start"] <= total["run_end"]
        assert set(json.loads(total["stage_seconds"])) >= {"ingest", "apply"}
        for r in mine:
            if r["table_name"] == "*":
                continue
            for op, col in (("insert", "inserts"), ("update", "updates"), ("delete", "deletes")):
                assert r[col] == truth.changes[(r["table_name"], op)], (run, r["table_name"], op)
        changed = {name for (name, _), n in truth.changes.items() if n}
        assert {r["table_name"] for r in mine if r["changes"] and r["table_name"] != "*"} == changed
        assert total["changes"] == sum(truth.changes.values())
        last_seen.update(truth.table_last_us)
        assert {r["table_name"] for r in mine} - {"*"} == set(last_seen)
        for name, last_us in last_seen.items():
            [r] = [r for r in mine if r["table_name"] == name]
            assert r["last_commit_time"] == utc(last_us), (run, name)


def test_rerun_records_nothing(loaded_lake) -> None:
    from deltalake import DeltaTable

    from tests.e2e.runner import binlake_run

    path = str(loaded_lake.lake / "meta" / "run_metrics")
    before = DeltaTable(path).version()
    [again] = binlake_run(loaded_lake.landing, loaded_lake.lake, "--end", loaded_lake.days[-1], engine="rust")
    assert again["files"] == 0 and again["changes_applied"] == 0
    assert DeltaTable(path).version() == before


def test_status_json_equals_truth(loaded_lake) -> None:
    before = dt.datetime.now(dt.timezone.utc)
    code, out, err = cli("status", "--lake", str(loaded_lake.lake), "--landing", str(loaded_lake.landing), "--json")
    after = dt.datetime.now(dt.timezone.utc)
    assert code == 0, err
    doc = json.loads(out)
    [source] = doc["sources"]
    last_day = loaded_lake.truth[-1]
    expected = utc(last_day.last_commit_us)
    assert source["source"] == "shop-primary"
    assert dt.datetime.fromisoformat(source["last_commit_time"]) == expected
    assert source["last_commit_time"].endswith("Z")
    assert (before - expected).total_seconds() - 1 <= source["lag_seconds"] <= (after - expected).total_seconds() + 1
    assert source["pending_files"] == 0 and source["quarantined_rows"] == 0
    assert source["last_run"]["run_id"] == loaded_lake.summaries[-1]["run_id"]
    tables = {t["table"]: t for t in source["tables"]}
    expected_tables = sorted(p.name for p in (loaded_lake.out / "truth").iterdir())
    assert sorted(tables) == expected_tables
    day = loaded_lake.days[-1]
    for name, t in tables.items():
        assert t["live_rows"] == truth_rows(loaded_lake.out, name, day), name
        newest = max(d.table_last_us.get(name, 0) for d in loaded_lake.truth)
        assert dt.datetime.fromisoformat(t["last_commit_time"]) == utc(newest), name
    assert any(t["live_rows"] > 0 for t in tables.values())

    code, text, _ = cli("status", "--lake", str(loaded_lake.lake))
    assert code == 0
    assert "source shop-primary" in text and source["last_commit_time"] in text
    for name, t in tables.items():
        line = next(line for line in text.splitlines() if line.strip().startswith(name + " "))
        assert str(t["live_rows"]) in line.split()


def test_status_of_a_missing_lake_is_one_line(tmp_path: Path) -> None:
    code, _out, err = cli("status", "--lake", str(tmp_path / "nowhere"))
    assert code == 2 and err.count("\n") == 1 and "--lake" in err and "binlake run" in err


def test_run_metrics_from_the_scan_equal_a_read_of_bronze(loaded_lake, spark) -> None:
    """Each run counted its changes from its apply's scan (``metrics.scanned_groups``); reading bronze between
    the checkpoints the runs reached (``metrics.applied_commits``, the path of a run after one not recorded)
    gives the same counts and times, table by table."""
    from deltalake import DeltaTable

    from binlake.lake.delta import engine_for
    from binlake.lake.layout import LakeLayout
    from binlake.lake.metrics import applied_commits

    rows = DeltaTable(str(loaded_lake.lake / "meta" / "run_metrics")).to_pyarrow_table().to_pylist()
    totals = sorted((r for r in rows if r["table_name"] == "*"), key=lambda r: r["checkpoint_seq"])
    engine, lake, prev = engine_for(spark, "rust"), LakeLayout(str(loaded_lake.lake)), -1
    for total in totals:
        source, seq = total["source"], total["checkpoint_seq"]
        groups = applied_commits(spark, engine, lake, {source: seq}, {source: prev}, only_after=prev >= 0).collect()
        expected = {
            f"{g['db']}.{g['table_name']}": (g["inserts"], g["updates"], g["deletes"], utc(g["last_change_us"]))
            for g in groups
            if g["table_name"] is not None and g["last_change_us"] is not None
        }
        mine = {
            r["table_name"]: (r["inserts"], r["updates"], r["deletes"], r["last_commit_time"])
            for r in rows
            if r["run_id"] == total["run_id"] and r["table_name"] != "*" and r["changes"]
        }
        assert mine == expected, total["run_id"]
        assert total["last_commit_time"] == utc(max(g["last_commit_us"] for g in groups if g["last_commit_us"]))
        assert total["decode_errors"] == sum(g["decode_errors"] for g in groups)
        prev = seq
