"""The logic behind the DAGs (fast tier, no Airflow): settings, the interval's files by commit timestamp (files
spanning midnight, the exact boundary, compressed transactions, a growing file), the job arguments, the
DQ history report."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pytest

from binlake.binlog import constants as C
from binlake.binlog import events as ev
from binlake.binlog.events import GtidEvent
from binlake.binlog.reader import read_events
from binlake.binlog.writer import BinlogWriter, Event
from binlake.orchestration.config import load_settings, source_conn_id
from binlake.orchestration.intervals import RangeCache, epoch_us, scan_file, select_files
from binlake.orchestration.tasks import fetch_uri, job_args, run_key
from tests.support import fixture_path

UTC = dt.timezone.utc
DAY1 = dt.datetime(2024, 3, 1, tzinfo=UTC)
DAY2 = DAY1 + dt.timedelta(days=1)
DAY3 = DAY2 + dt.timedelta(days=1)


def us(when: dt.datetime) -> int:
    return int(when.timestamp()) * 1_000_000 + when.microsecond


def write_binlog(folder: Path, commits: list[list[int]], *, compress_every: int = 0) -> list[Path]:
    """One file per inner list, each transaction committed at the given microsecond (BEGIN ... XID, no rows)."""
    writer = BinlogWriter(folder, create_timestamp=commits[0][0] // 1_000_000)
    gno = 0
    for i, file_commits in enumerate(commits):
        for t in file_commits:
            gno += 1
            begin = ev.QueryEvent(1, 0, 0, b"", "", "BEGIN")
            writer.write_transaction([Event(begin), Event(ev.XidEvent(gno))], gno=gno, commit_time_us=t,
                                     compress=bool(compress_every) and gno % compress_every == 0)
        if i + 1 < len(commits):
            writer.rotate(file_commits[-1] // 1_000_000)
    writer.close()
    return sorted(folder.glob("mysql-bin.0*"))


@pytest.fixture
def landing(tmp_path: Path) -> Path:
    """Three files: all of day 1; one spanning midnight (last microsecond of day 1, first of day 2); day 2-3."""
    last_of_day1 = us(DAY2) - 1
    write_binlog(tmp_path / "src", [
        [us(DAY1 + dt.timedelta(hours=h)) for h in (0, 6, 12)],
        [us(DAY1 + dt.timedelta(hours=23)), last_of_day1, us(DAY2), us(DAY2 + dt.timedelta(hours=1))],
        [us(DAY2 + dt.timedelta(hours=23, minutes=59)), us(DAY3 + dt.timedelta(minutes=5))],
    ], compress_every=2)
    return tmp_path / "src"


def test_scan_gives_the_commit_times_the_writer_was_given(landing: Path) -> None:
    files = sorted(landing.glob("mysql-bin.0*"))
    ranges = [scan_file(str(f)) for f in files]
    assert [(r.transactions, r.first_commit_us, r.last_commit_us) for r in ranges] == [
        (3, us(DAY1), us(DAY1 + dt.timedelta(hours=12))),
        (4, us(DAY1 + dt.timedelta(hours=23)), us(DAY2 + dt.timedelta(hours=1))),
        (2, us(DAY2 + dt.timedelta(hours=23, minutes=59)), us(DAY3 + dt.timedelta(minutes=5))),
    ]


def test_interval_files_by_commit_time_spanning_midnight(landing: Path, tmp_path: Path) -> None:
    cache = RangeCache(str(tmp_path / "cache.json"))
    day1 = select_files("src", str(landing), DAY1, DAY2, cache)
    day2 = select_files("src", str(landing), DAY2, DAY3, cache)
    day3 = select_files("src", str(landing), DAY3, DAY3 + dt.timedelta(days=1), cache)
    day4 = select_files("src", str(landing), DAY3 + dt.timedelta(days=1), DAY3 + dt.timedelta(days=2), cache)
    assert [r.name for r in day1.files] == ["mysql-bin.000001", "mysql-bin.000002"]
    assert day1.spanning == ("mysql-bin.000002",)            # read by both days, filtered by commit time
    assert [r.name for r in day2.files] == ["mysql-bin.000002", "mysql-bin.000003"]
    assert day2.spanning == ("mysql-bin.000002", "mysql-bin.000003")
    assert [r.name for r in day3.files] == ["mysql-bin.000003"]
    assert day4.files == () and day4.landing_files == 3
    assert day4.last_commit_us == us(DAY3 + dt.timedelta(minutes=5))


def test_the_interval_end_is_exclusive_to_the_microsecond(tmp_path: Path) -> None:
    write_binlog(tmp_path / "a", [[us(DAY2) - 1]])
    write_binlog(tmp_path / "b", [[us(DAY2)]])
    cache = RangeCache(str(tmp_path / "cache.json"))
    assert len(select_files("a", str(tmp_path / "a"), DAY1, DAY2, cache).files) == 1
    assert len(select_files("a", str(tmp_path / "a"), DAY2, DAY3, cache).files) == 0
    assert len(select_files("b", str(tmp_path / "b"), DAY1, DAY2, cache).files) == 0
    assert len(select_files("b", str(tmp_path / "b"), DAY2, DAY3, cache).files) == 1


def test_ranges_are_cached_and_a_grown_file_is_scanned_again(landing: Path, tmp_path: Path) -> None:
    path = tmp_path / "cache.json"
    first = RangeCache(str(path))
    select_files("src", str(landing), DAY1, DAY2, first)
    first.save()
    assert len(first.scanned) == 3
    again = RangeCache(str(path))
    select_files("src", str(landing), DAY1, DAY2, again)
    assert again.scanned == []
    grown = landing / "mysql-bin.000003"
    with open(grown, "ab") as f:             # a cut-short event at the end: a file the server is writing
        f.write(b"\x00" * 7)
    later = RangeCache(str(path))
    select_files("src", str(landing), DAY1, DAY2, later)
    assert later.scanned == ["mysql-bin.000003"]
    assert later.range_of(str(grown)).transactions == 2


def test_index_and_state_files_are_not_binlogs(landing: Path, tmp_path: Path) -> None:
    (landing / "_binlake_fetch.json").write_text("{}")
    chosen = select_files("src", str(landing), DAY1, DAY2, RangeCache(str(tmp_path / "c.json")))
    assert chosen.landing_files == 3


@pytest.mark.parametrize("name", ["json.binlog.000001", "bug27213339-bin.000001",
                                  "binlog_transaction_with_GTID.000001"])
def test_scan_agrees_with_the_full_decoder_on_real_binlogs(name: str) -> None:
    """MySQL 8.0 (immediate_commit_timestamp), 5.7 and 5.6 GTIDs (no commit timestamp: the header time of the
    transaction's last event), against every event decoded by binlake.binlog's reader."""
    path = fixture_path("binlog", "rust_mysql_common", name)
    expected: list[int] = []
    pending = None
    last_s = None
    with open(path, "rb") as f:
        for e in read_events(f, file=str(path), stop_at_incomplete=True):
            if e.header.type_code in (C.GTID_LOG_EVENT, C.ANONYMOUS_GTID_LOG_EVENT):
                if pending is not None:
                    expected.append(pending or last_s * 1_000_000)
                assert isinstance(e.body, GtidEvent)
                pending = e.body.immediate_commit_timestamp or 0
                last_s = e.header.timestamp
            elif pending is not None and e.header.type_code not in (C.ROTATE_EVENT, C.STOP_EVENT):
                last_s = e.header.timestamp
    if pending is not None:
        expected.append(pending or last_s * 1_000_000)
    got = scan_file(str(path))
    assert got.transactions == len(expected) > 0
    assert (got.first_commit_us, got.last_commit_us) == (min(expected), max(expected))


def test_settings_from_environment_with_defaults(tmp_path: Path) -> None:
    default = load_settings({})
    assert default.landing.endswith(os.path.join("sample", "landing"))
    assert default.sdi.endswith(os.path.join("sample", "sdi"))
    assert default.sources == ("shop-primary",) and default.spark_conn_id == "spark_default"
    assert Path(default.spark_job("validate")).is_file()          # spark_jobs/ of this checkout
    env = {"BINLAKE_LANDING": str(tmp_path / "in"), "BINLAKE_LAKE": str(tmp_path / "lake"),
           "BINLAKE_SOURCES": "db1, db2 ,", "BINLAKE_START_DATE": "2025-01-02"}
    s = load_settings(env)
    assert (s.landing, s.lake, s.sdi) == (str(tmp_path / "in"), str(tmp_path / "lake"), str(tmp_path / "sdi"))
    assert s.sources == ("db1", "db2") and s.start_date == dt.date(2025, 1, 2)
    assert s.source_landing("db1") == str(tmp_path / "in" / "db1")
    assert s.dq_results_uri == (tmp_path / "lake" / "meta" / "dq_results").as_uri()
    assert source_conn_id("shop-primary.eu") == "binlake_source_shop_primary_eu"


def test_job_arguments_carry_the_interval_cutoff_and_run_key(tmp_path: Path) -> None:
    s = load_settings({"BINLAKE_LANDING": str(tmp_path / "in"), "BINLAKE_LAKE": str(tmp_path / "lake")})
    start = dt.datetime(2024, 3, 2, tzinfo=UTC)
    args = job_args(s, "db1", start, start + dt.timedelta(days=1), ["shop.orders", "shop.c*"])
    assert run_key(start) == "2024-03-02"
    assert args["ingest_binlogs"] == ["--landing", s.landing, "--lake", s.lake, "--source", "db1", "--run-id",
                                      "2024-03-02", "--end", "2024-03-03T00:00:00+00:00",
                                      "--include", "shop.orders", "--include", "shop.c*"]
    assert args["apply_changes"][-2:] == ["--end", "2024-03-03T00:00:00+00:00"]
    assert args["validate"] == ["--lake", s.lake, "--run-id", "2024-03-02"]


def test_fetch_uri_from_connection_fields() -> None:
    assert fetch_uri("db1", 3307, "repl@x", {"server_id": 77, "heartbeat": 5}, "shop") == \
        "mysql://repl%40x@db1:3307/?server_id=77&name=shop&heartbeat=5"
    assert fetch_uri(None, None, None, {}, "s") == "mysql://127.0.0.1:3306/?server_id=4242&name=s"


def test_epoch_us_takes_naive_as_utc() -> None:
    assert epoch_us(dt.datetime(1970, 1, 1, 0, 0, 1, 5)) == 1_000_005
    assert epoch_us(dt.datetime(1970, 1, 1, 1, 0, 0, tzinfo=dt.timezone(dt.timedelta(hours=1)))) == 0


def test_dq_history_open_failures_and_trend(tmp_path: Path) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    from binlake.orchestration.dq_history import build_history
    from binlake.quality.results import DQ_RESULTS_SCHEMA, ResultRow

    def row(run: str, at: int, suite: str, ok: bool, level: str = "error") -> ResultRow:
        return ResultRow(run, dt.datetime(2024, 3, at), suite, None, "expect_x", "id", "{}", level, None, "why",
                         ok, 10, 0 if ok else 1, None, None, None, None)

    rows = [row("d1", 1, "a", True), row("d1", 1, "b", True),
            row("d2", 2, "a", False), row("d2", 2, "b", True),
            row("d3", 3, "a", False), row("d3", 3, "b", False, "warning"),
            row("d3", 4, "a", False), row("d3", 4, "b", True)]     # d3 validated again: supersedes the first
    cols = [c for c, _, _ in DQ_RESULTS_SCHEMA]
    types = {"string": pa.string(), "timestamp": pa.timestamp("us"), "boolean": pa.bool_(),
             "bigint": pa.int64(), "double": pa.float64()}
    table = pa.table({c: pa.array([getattr(r, c) for r in rows], types[t]) for c, t, _ in DQ_RESULTS_SCHEMA})
    assert table.column_names == cols
    results = tmp_path / "meta" / "dq_results"
    write_deltalake(str(results), table)
    history = build_history(str(tmp_path), str(results), str(tmp_path / "reports"))
    assert [(t.run_id, t.checked, t.failed_errors, t.failed_warnings) for t in history.runs] == [
        ("d1", 2, 0, 0), ("d2", 2, 1, 0), ("d3", 2, 1, 0)]
    assert [(f.latest.suite, f.since_run, f.runs_failing) for f in history.open_failures] == [("a", "d2", 2)]
    page = Path(history.index_path).read_text()
    assert "Open failures (1)" in page and "d2 (2 runs)" in page and "../runs/d3/summary.html" in page
    build_history(str(tmp_path), str(results), str(tmp_path / "reports"))
    log = [json.loads(x) for x in (tmp_path / "reports" / "history" / "reports.jsonl").read_text().splitlines()]
    assert [(x["runs"], x["latest_run"], x["open_errors"]) for x in log] == [(3, "d3", 1), (3, "d3", 1)]
