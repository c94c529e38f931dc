"""Faults a landing folder meets, with a real MariaDB server's binlogs and its final ``SELECT *`` as the oracle:
files arriving cut (mid-event, or at an event boundary without their ROTATE), out of order, twice under two
names, replaced, copied while the server wrote them (then whole), growing while a run reads them. The invariant
is the same for every step: at the end silver equals the server's tables, and a run that can not go on either
waits at a cut file (saying so, loading nothing after it) or stops the source with one typed line, having applied
nothing wrong; nothing outside the lake changes (the landing neither). One server and one workload are shared by
every case; each case runs on both Delta engines."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import random
import re
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest

from binlake.binlog.scan import scan_events
from binlake.cli import main
from tests.e2e.lake_compare import silver_rows
from tests.mariadb_server import BinlogSettings, MariaDBServer, require_mariadb

pytestmark = [pytest.mark.mariadb, pytest.mark.spark, pytest.mark.slow]

ENGINES = ("rust", "spark")
TABLES = ("items", "log")
SETUP = """
CREATE DATABASE shop;
CREATE TABLE shop.items (id INT PRIMARY KEY, name VARCHAR(40), qty INT);
CREATE TABLE shop.log (who VARCHAR(10), n INT);
"""


def change(cur: Any, rng: random.Random, n: int) -> None:
    """One statement (each its own transaction): inserts, updates and deletes on a keyed and a keyless table."""
    kind = rng.choice(("insert", "insert", "update", "delete", "log", "log_delete"))
    if kind == "insert":
        cur.execute(
            "INSERT INTO shop.items VALUES (%s, %s, %s) ON DUPLICATE KEY UPDATE qty = qty + 1",
            (rng.randrange(60), f"item {n} " + "x" * rng.randrange(30), n),
        )
    elif kind == "update":
        cur.execute("UPDATE shop.items SET name = %s, qty = qty - 1 WHERE id = %s", (f"u{n}", rng.randrange(60)))
    elif kind == "delete":
        cur.execute("DELETE FROM shop.items WHERE id = %s", (rng.randrange(60),))
    elif kind == "log":
        cur.execute("INSERT INTO shop.log VALUES (%s, %s)", (rng.choice(("ann", "bo")), rng.randrange(3)))
    else:
        cur.execute(
            "DELETE FROM shop.log WHERE who = %s AND n = %s LIMIT 1", (rng.choice(("ann", "bo")), rng.randrange(3))
        )


def rows_of(pairs: Iterator[dict]) -> Counter:
    return Counter(json.dumps(r, default=str, sort_keys=True) for r in pairs)


@dataclass
class Workload:
    files: list[Path]  # the server's binlogs, closed (the last one as the server left it)
    live: tuple[int, bytes]  # (index, bytes) of a file copied while the server was writing it
    truth: dict[str, Counter]  # SELECT * of each table at the end


@pytest.fixture(scope="module")
def workload(tmp_path_factory: pytest.TempPathFactory) -> Workload:
    """240 changes on one server rotating its binlog every 4 KiB (the first files hold the setup and the early
    changes); a copy of the file being written half-way; the tables' final rows."""
    require_mariadb()
    base = tmp_path_factory.mktemp("landing-faults")
    with MariaDBServer(base / "server", BinlogSettings(max_binlog_size=4096)) as server:
        server.execute(SETUP)
        conn = server.connect(raw=False)
        cur = conn.cursor()
        rng = random.Random(25)
        live = None
        for n in range(240):
            change(cur, rng, n)
            if n == 150:
                files = server.binlog_files()
                live = (len(files) - 1, files[-1].read_bytes())
        truth = {}
        for table in TABLES:
            cur.execute(f"SELECT * FROM shop.{table}")
            names = [d[0] for d in cur.description]
            truth[table] = rows_of(dict(zip(names, r)) for r in cur.fetchall())
        conn.close()
        server.flush_logs()
        (base / "files").mkdir()
        files = [Path(shutil.copy(f, base / "files" / f.name)) for f in server.binlog_files()]
    assert len(files) >= 6 and live is not None and 2 < live[0] < len(files) - 1
    assert live[1][21] & 1 and not files[live[0]].read_bytes()[21] & 1  # LOG_EVENT_BINLOG_IN_USE_F
    return Workload(files, live, truth)


def silver(lake: Path) -> dict[str, Counter]:
    return {t: rows_of(silver_rows(lake, "shop", t)) for t in TABLES}


def tree(root: Path, skip: Path) -> dict[str, str]:
    """Every file under ``root`` but those under ``skip`` (the lake), with its SHA-256."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and skip not in p.parents
    }


def run(tmp_path: Path, engine: str, *args: str, landing_changes: bool = False) -> tuple[int, dict[str, Any], str]:
    """``binlake run --json`` of ``tmp_path/landing`` into ``tmp_path/lake``: exit code, the summary (empty when
    the source stopped), stderr. Nothing outside the lake may change (the landing and ``outside/`` neither, unless
    the test itself changes the landing during the run)."""
    lake = tmp_path / "lake"
    (tmp_path / "outside").mkdir(exist_ok=True)
    (tmp_path / "outside" / "keep.txt").write_text("not the lake's")
    before = tree(tmp_path, lake)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(
            ["run", "--landing", str(tmp_path / "landing"), "--lake", str(lake), "--json", "--engine", engine, *args]
        )
    after = tree(tmp_path, lake)
    assert after == before or (
        landing_changes
        and {k: v for k, v in after.items() if not k.startswith("landing")}
        == {k: v for k, v in before.items() if not k.startswith("landing")}
    )
    summaries = [json.loads(line) for line in out.getvalue().splitlines() if line.startswith("{")]
    assert "Traceback" not in err.getvalue()
    return code, (summaries[0] if summaries else {}), err.getvalue()


def land(tmp_path: Path, *files: tuple[str, bytes]) -> Path:
    """Put files (name, bytes) into the landing folder of source ``src`` (replacing what has that name)."""
    folder = tmp_path / "landing" / "src"
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files:
        (folder / name).write_bytes(data)
    return folder


def whole(w: Workload, *indexes: int) -> list[tuple[str, bytes]]:
    return [(w.files[i].name, w.files[i].read_bytes()) for i in indexes]


def events(path: Path) -> list[Any]:
    return list(scan_events(str(path), commit_timestamps=False))


def bronze_files(lake: Path) -> set[str]:
    from deltalake import DeltaTable

    path = lake / "bronze" / "binlog_events"
    if not (path / "_delta_log").is_dir():
        return set()
    return set(DeltaTable(str(path)).to_pyarrow_table(columns=["binlog_file"]).column("binlog_file").to_pylist())


def checkpoint_file(lake: Path) -> str:
    from deltalake import DeltaTable

    rows = DeltaTable(str(lake / "meta" / "checkpoints")).to_pyarrow_table().to_pylist()
    [source] = [r for r in rows if r["source"] == "src" and r["table_name"] == "*"]
    return source["binlog_file"]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_binlog_landed_in_two_steps_waits_and_then_applies_every_transaction(
    spark, workload: Workload, tmp_path: Path, engine: str
) -> None:
    """Issue 25, case 1: binlogs 1-4 with the second cut mid-event (a copy in progress) wait at the cut; once it
    lands whole, every transaction applies in order (before: the run loaded 3 and 4 and the cut part was lost)."""
    w = workload
    second = w.files[1]
    cut = [e for e in events(second)][len(events(second)) // 2]
    at = cut.pos + cut.event_size // 2
    land(tmp_path, *whole(w, 0), (second.name, second.read_bytes()[:at]), *whole(w, 2, 3))
    code, summary, err = run(tmp_path, engine)
    assert code == 0, err
    assert summary["waiting"].startswith(f"waiting for {second.name} to complete (ends mid-event at offset {cut.pos});")
    assert summary["held_files"] == [w.files[2].name, w.files[3].name]
    assert f"WARNING: waiting for {second.name}" in err
    assert bronze_files(tmp_path / "lake") == {w.files[0].name, second.name}  # nothing after the cut
    assert checkpoint_file(tmp_path / "lake") in (w.files[0].name, second.name)
    land(tmp_path, *whole(w, 1, *range(4, len(w.files))))
    code, summary, err = run(tmp_path, engine)
    assert code == 0, err
    assert summary["waiting"] is None
    assert silver(tmp_path / "lake") == w.truth


@pytest.mark.parametrize("engine", ENGINES)
def test_a_landing_with_faults_waits_or_stops_and_ends_equal_to_the_server(
    spark, workload: Workload, tmp_path: Path, engine: str
) -> None:
    """One lake through a landing's faults, in turn: a file missing (out of order), a file cut mid-event, then
    cut just before its ROTATE event, a file landed twice under two names, the file the server was writing
    copied live, then whole (its in-use flag cleared: grown, not replaced), a file replaced by other bytes."""
    w, lake = workload, tmp_path / "lake"
    f = w.files
    # out of order: the second file is missing between the first and the third
    land(tmp_path, *whole(w, 0, 2))
    code, _, err = run(tmp_path, engine)
    assert code == 2 and f"binlog {f[1].name} is missing between {f[0].name} and {f[2].name}" in err, err
    assert bronze_files(lake) == set()
    # cut mid-event: waits there, loads nothing after it
    last = events(f[1])[-1]
    middle = events(f[1])[len(events(f[1])) // 2]
    land(tmp_path, (f[1].name, f[1].read_bytes()[: middle.pos + 7]), *whole(w, 3))
    code, summary, err = run(tmp_path, engine)
    assert code == 0, err
    assert summary["waiting"].startswith(
        f"waiting for {f[1].name} to complete (ends mid-event at offset {middle.pos});"
    )
    assert summary["held_files"] == [f[2].name, f[3].name] and bronze_files(lake) <= {f[0].name, f[1].name}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["status", "--lake", str(lake), "--landing", str(tmp_path / "landing"), "--json"]) == 0
    [status] = json.loads(out.getvalue())["sources"]
    assert status["waiting"] == summary["waiting"] and status["pending_files"] == 2
    # every transaction there, only its ROTATE event missing: a closed binlog ends with it, so still waiting
    assert last.type_code == 4 and last.pos + last.event_size == f[1].stat().st_size
    land(tmp_path, (f[1].name, f[1].read_bytes()[: last.pos]))
    code, summary, err = run(tmp_path, engine)
    assert code == 0, err
    assert summary["waiting"].startswith(
        f"waiting for {f[1].name} to complete (ends at offset {last.pos} without "
        f"the ROTATE or STOP event a closed binlog ends with); if no more"
    )
    assert bronze_files(lake) == {f[0].name, f[1].name}
    # one file under two names: its order is unknown, the source stops
    copy = tmp_path / "landing" / "src" / f"copy.{f[2].name.rsplit('.', 1)[1]}"
    copy.write_bytes(f[2].read_bytes())
    code, _, err = run(tmp_path, engine)
    assert code == 2 and f"{f[2].name} and {copy.name} have the same sequence number" in err, err
    copy.unlink()
    # the rest lands; the file the server was writing half-way is a live copy (in use, cut), then whole
    index, live = w.live
    land(tmp_path, *whole(w, 1, *range(3, index)), (f[index].name, live))
    code, summary, err = run(tmp_path, engine)
    assert code == 0 and summary["waiting"] is None, err
    land(tmp_path, *whole(w, *range(index, len(f))))
    code, summary, err = run(tmp_path, engine)
    assert code == 0 and summary["waiting"] is None, err
    assert silver(lake) == w.truth
    # a file replaced by other bytes below what was ingested: the source stops, silver keeps what it had
    data = bytearray(f[2].read_bytes())
    data[len(data) // 2] ^= 0xFF
    land(tmp_path, (f[2].name, bytes(data) + b"\0" * 8))
    code, _, err = run(tmp_path, engine)
    assert code == 2 and "differ from the version already ingested: the file was replaced" in err, err
    assert silver(lake) == w.truth


@pytest.mark.parametrize("engine", ENGINES)
def test_a_first_file_landing_after_later_ones_were_applied_stops_the_source(
    spark, workload: Workload, tmp_path: Path, engine: str
) -> None:
    """Files 2.. land and load first; file 1 lands after: its changes come before applied ones and could never
    apply in order, so the source stops with one line (before: it was ingested and never applied)."""
    w, lake = workload, tmp_path / "lake"
    land(tmp_path, *whole(w, *range(1, len(w.files))))
    code, _summary, err = run(tmp_path, engine)
    assert code == 0, err
    before = silver(lake)
    land(tmp_path, *whole(w, 0))
    code, _, err = run(tmp_path, engine)
    assert code == 2 and re.search(
        rf"{w.files[0].name} landed after changes of the later binlog\.\d+ were "
        r"applied: .* take a snapshot",
        err,
    ), err
    assert silver(lake) == before and bronze_files(lake) == {f.name for f in w.files[1:]}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_file_growing_while_a_run_reads_it_is_read_once(
    spark, workload: Workload, tmp_path: Path, monkeypatch, engine: str
) -> None:
    """The last file is planned cut between two transactions and grows to its end before the executors read it:
    the run takes what it read, the next one resumes after that, never inside it. The first run applies nothing
    (``--end`` before the workload), so the GTIDs of what it read are not applied yet and can not hide a second
    read (before: the next run read the second half again, every change of it twice in bronze, and applied the
    keyless table's inserts twice)."""
    import binlake.lake.ingest as ingest

    w, lake = workload, tmp_path / "lake"
    g = len(w.files) - 2  # the last file with changes (the server's last one has none)
    starts = [e for e in events(w.files[g]) if e.type_code == 162]  # MariaDB GTID: a transaction starts
    middle = starts[len(starts) // 2]
    land(tmp_path, *whole(w, *range(g)), (w.files[g].name, w.files[g].read_bytes()[: middle.pos]))
    plan = ingest.plan_ingest

    def plan_then_grow(*args: Any, **kwargs: Any) -> Any:
        out = plan(*args, **kwargs)
        land(tmp_path, *whole(w, g))
        return out

    monkeypatch.setattr(ingest, "plan_ingest", plan_then_grow)
    code, summary, err = run(tmp_path, engine, "--end", "2000-01-01", landing_changes=True)
    assert code == 0, err
    monkeypatch.setattr(ingest, "plan_ingest", plan)
    code, summary, err = run(tmp_path, engine)
    assert code == 0, err
    assert summary["quarantined"] == 0 and silver(lake) == w.truth
    from deltalake import DeltaTable

    seqs = DeltaTable(str(lake / "bronze" / "binlog_events")).to_pyarrow_table(columns=["_binlake_seq", "op"])
    changes = [s for s, op in zip(*seqs.to_pydict().values()) if op in ("insert", "update", "delete", "ddl")]
    assert len(changes) == len(set(changes)) > 0  # each change read once
