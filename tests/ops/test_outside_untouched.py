"""Nothing outside the lake and the landing changes (issue 25, cases 4, 5, 6 and 9's ``_snapshots``): a "victim"
folder beside them is reached only through a symbolic link, a tampered manifest or a hostile server's file
name, every operation runs, and every file and folder of the victim is compared before and after (path, kind,
size, mtime, SHA-256 of the bytes)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import stat
import time
from pathlib import Path
from typing import Iterator

import pytest

from binlake.cli import main
from tests.mariadb_server import mariadb_server  # noqa: F401  (pytest fixture)

MONTH_AGO = time.time() - 30 * 86400


def tree_state(folder: Path) -> dict[str, tuple]:
    """Every entry under ``folder`` (itself included; links not followed): kind, size, mtime in ns and, for a
    file, the SHA-256 of its bytes; a link: its target."""
    out = {}
    for top, dirs, files in os.walk(folder, followlinks=False):
        for name in [None, *dirs, *files]:
            path = Path(top) if name is None else Path(top, name)
            if name is None and path != folder:
                continue
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                what: tuple = ("link", os.readlink(path))
            elif stat.S_ISREG(st.st_mode):
                what = ("file", st.st_size, hashlib.sha256(path.read_bytes()).hexdigest())
            else:
                what = ("dir",)
            out[str(path.relative_to(folder))] = (*what, st.st_mtime_ns)
    return out


@contextlib.contextmanager
def untouched(*folders: Path) -> Iterator[None]:
    """Assert that nothing under ``folders`` changed while the block ran (even when it raised)."""
    before = {f: tree_state(f) for f in folders}
    try:
        yield
    finally:
        for f in folders:
            after = tree_state(f)
            changed = sorted(k for k in set(before[f]) | set(after) if before[f].get(k) != after.get(k))
            assert not changed, f"{f} changed: {changed}"


def aged(path: Path) -> Path:
    """``path`` and everything under it a month old (older than any vacuum retention or scratch folder)."""
    for p in [*path.rglob("*"), path]:
        os.utime(p, (MONTH_AGO, MONTH_AGO), follow_symlinks=False)
    return path


def put(path: Path, data: bytes = b"not the lake's") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_the_helper_sees_a_deleted_a_rewritten_and_a_touched_file(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    a, b, c = put(victim / "a"), put(victim / "d" / "b"), put(victim / "c")
    for change in (
        a.unlink,
        lambda: b.write_bytes(b"not the lake's"),
        lambda: os.utime(c, (1, 1)),
        lambda: (victim / "new").mkdir(),
    ):
        with pytest.raises(AssertionError, match="changed"):
            with untouched(victim):
                change()
    with untouched(victim):
        (victim / "d" / "b").read_bytes()


# --- case 4: binlake maintain ------------------------------------------------------------------------------------


def delta_table(path: Path) -> Path:
    """A Delta table whose first file the second version replaced (vacuum's to delete: a removed file)."""
    import pyarrow as pa
    from deltalake import write_deltalake

    write_deltalake(str(path), pa.table({"id": [1, 2]}))
    write_deltalake(str(path), pa.table({"id": [3]}), mode="overwrite")
    return path


def linked_lake(tmp_path: Path) -> tuple[Path, Path]:
    """A lake with a table of its own (a removed file for vacuum to delete), a table folder that is a
    link into the victim (an old untracked file there), a table holding a link to a victim folder (old files
    there), a ``_staging`` link to the victim with old scratch-like folders; and the victim."""
    lake, victim = tmp_path / "lake", tmp_path / "victim"
    delta_table(lake / "silver" / "a__own")
    aged(put(victim / "table" / "part-00000-untracked.snappy.parquet").parent)
    delta_table(victim / "table")
    aged(put(victim / "data" / "part-00000-old.snappy.parquet").parent)
    (lake / "silver" / "b__linked").symlink_to(victim / "table")
    inner = delta_table(lake / "silver" / "c__inner")
    (inner / "data").symlink_to(victim / "data")
    for folder in ("fold-run-1", "binlake-staging/abc"):
        aged(put(victim / "staging" / folder / "part-0.parquet").parent)
    (lake / "_staging").symlink_to(victim / "staging")
    aged(victim)
    return lake, victim


def own_rows(lake: Path) -> list[int]:
    from deltalake import DeltaTable

    return sorted(DeltaTable(str(lake / "silver" / "a__own")).to_pyarrow_table().column("id").to_pylist())


def _skipped(summary: dict) -> dict[str, str]:
    return {Path(s["path"]).name: s["reason"] for s in summary["skipped"]}


def _check_linked_lake_maintained(lake: Path, summary: dict) -> None:
    skipped = _skipped(summary)
    assert set(skipped) == {"b__linked", "c__inner", "_staging"}
    assert "is a symbolic link" in skipped["b__linked"] and "symbolic link(s) (data)" in skipped["c__inner"]
    assert [t["table"] for t in summary["tables"]] == ["silver/a__own"]  # its own table is maintained
    assert summary["tables"][0]["files_vacuumed"] == 1
    assert summary["staging_removed"] == []


def test_maintain_rust_never_deletes_through_a_link(tmp_path: Path) -> None:
    lake, victim = linked_lake(tmp_path)
    with untouched(victim):
        dry_run = cli(
            "maintain", "--lake", str(lake), "--engine", "rust", "--vacuum-hours", "0", "--force", "--dry-run", "--json"
        )
        run = cli("maintain", "--lake", str(lake), "--engine", "rust", "--vacuum-hours", "0", "--force", "--json")
    assert dry_run[0] == 0 and run[0] == 0, (dry_run[2], run[2])
    dry, done = json.loads(dry_run[1]), json.loads(run[1])
    _check_linked_lake_maintained(lake, dry)
    _check_linked_lake_maintained(lake, done)
    # the dry run predicted what the run did
    assert [t["files_vacuumed"] for t in dry["tables"]] == [t["files_vacuumed"] for t in done["tables"]]
    assert _skipped(dry) == _skipped(done)
    assert own_rows(lake) == [3] and len(list((lake / "silver" / "a__own").glob("*.parquet"))) == 1
    assert "WARNING: silver/b__linked skipped" in cli("maintain", "--lake", str(lake), "--engine", "rust")[1]


def test_a_lake_root_that_is_a_link_is_maintained_but_a_linked_area_is_not(tmp_path: Path) -> None:
    delta_table(tmp_path / "disk" / "lake" / "silver" / "a__own")
    (tmp_path / "lake").symlink_to(tmp_path / "disk" / "lake")  # the operator's choice: followed
    code, out, err = cli(
        "maintain", "--lake", str(tmp_path / "lake"), "--engine", "rust", "--vacuum-hours", "0", "--force", "--json"
    )
    assert code == 0, err
    summary = json.loads(out)
    assert summary["skipped"] == [] and summary["tables"][0]["files_vacuumed"] == 1
    victim = tmp_path / "victim"
    delta_table(victim / "meta" / "other")
    aged(victim)
    (tmp_path / "disk" / "lake" / "meta").symlink_to(victim / "meta")  # below the root: not followed
    with untouched(victim):
        code, out, err = cli(
            "maintain", "--lake", str(tmp_path / "lake"), "--engine", "rust", "--vacuum-hours", "0", "--force", "--json"
        )
    assert code == 0, err
    assert [(s["path"], "meta is a symbolic link" in s["reason"]) for s in json.loads(out)["skipped"]] == [
        ("meta/other", True)
    ]


def test_maintain_leaves_a_linked_binlake_staging_and_linked_scratch_folders(tmp_path: Path) -> None:
    staging, victim = tmp_path / "lake" / "_staging", tmp_path / "victim"
    (tmp_path / "lake" / "meta").mkdir(parents=True)
    aged(put(victim / "abc" / "part-0.parquet").parent)
    aged(put(victim / "own" / "part-0.parquet").parent)
    own = aged(put(staging / "fold-run-2-7" / "part-0.parquet").parent)
    (staging / "binlake-staging").symlink_to(victim)
    (staging / "fold-run-1-5").symlink_to(victim / "own")
    (staging / "fold-dangling").symlink_to(victim / "nothing")
    aged(victim)
    with untouched(victim):
        code, out, err = cli("maintain", "--lake", str(tmp_path / "lake"), "--engine", "rust", "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["staging_removed"] == [str(own)] and not own.exists()
    assert sorted(_skipped(summary)) == ["binlake-staging", "fold-dangling", "fold-run-1-5"]
    assert all("symbolic link" in reason for reason in _skipped(summary).values())


def test_the_scratch_folders_of_a_run_are_never_behind_a_link(tmp_path: Path) -> None:
    from binlake.lake.owned import OutsideLakeError, scratch_folder

    victim = tmp_path / "victim"
    victim.mkdir()
    (tmp_path / "_staging").symlink_to(victim)
    with pytest.raises(OutsideLakeError, match="_staging is a symbolic link"):
        scratch_folder(str(tmp_path / "_staging"), "fold-r-1")
    (tmp_path / "s2").mkdir()
    (tmp_path / "s2" / "binlake-staging").symlink_to(victim)
    with pytest.raises(OutsideLakeError, match="binlake-staging is a symbolic link"):
        scratch_folder(str(tmp_path / "s2"), "binlake-staging", "abc", check_base=False)
    assert scratch_folder(str(tmp_path / "s3"), "fold-r-1") == tmp_path / "s3" / "fold-r-1"


@pytest.mark.spark
@pytest.mark.slow
def test_maintain_spark_never_deletes_through_a_link(spark, tmp_path: Path) -> None:
    """delta-spark's VACUUM follows a linked folder inside a table and deletes untracked files of a linked table
    folder: such tables are not maintained; the lake's own table is."""
    from binlake.lake.delta import engine_for
    from binlake.lake.layout import LakeLayout
    from binlake.lake.maintain import maintain_lake

    lake, victim = linked_lake(tmp_path)
    engine = engine_for(spark, "spark")
    with untouched(victim):
        dry = maintain_lake(engine, LakeLayout(str(lake)), vacuum_hours=0, force=True, dry_run=True).as_dict()
        done = maintain_lake(engine, LakeLayout(str(lake)), vacuum_hours=0, force=True).as_dict()
    for summary in (dry, done):
        _check_linked_lake_maintained(lake, summary)
    assert [t["files_vacuumed"] for t in dry["tables"]] == [t["files_vacuumed"] for t in done["tables"]]
    assert own_rows(lake) == [3] and len(list((lake / "silver" / "a__own").glob("*.parquet"))) == 1


# --- case 5: a tampered snapshot manifest ------------------------------------------------------------------------


def _snapshot_cli(server, landing: Path, monkeypatch) -> tuple[int, str, str]:
    monkeypatch.setenv("SNAP_PW", "snap-pw")
    return cli(
        "snapshot",
        "--source",
        f"mysql://snap@127.0.0.1:{server.port}/?server_id=4201&name=src",
        "--landing",
        str(landing),
        "--password-env",
        "SNAP_PW",
        "--chunk-rows",
        "10",
        "--include",
        "s.*",
    )


def _unfinished(landing: Path, change) -> Path:
    """The snapshot's manifest made unfinished (status running, table half-read, a chunk's range changed since)
    and then changed by ``change(table_entry)``; the snapshot folder."""
    [path] = landing.glob("src/_snapshots/*/manifest.json")
    m = json.loads(path.read_text())
    m["status"], m["completed"] = "running", None
    t = m["tables"][0]
    t["complete"], t["view"] = False, None
    t["chunks"] = t["chunks"][:2]
    t["chunks"][0]["fingerprint"] = "changed"  # read again: its old files become obsolete (deleted)
    change(t)
    t["files"] = [f for c in t["chunks"] for f in c["files"]]
    path.write_text(json.dumps(m))
    return path.parent


@pytest.mark.mariadb
@pytest.mark.slow
def test_a_tampered_snapshot_manifest_deletes_nothing_outside_the_landing(
    mariadb_server, tmp_path: Path, monkeypatch
) -> None:
    from binlake.snapshot import read_snapshots

    server = mariadb_server
    server.execute(
        "CREATE USER 'snap'@'127.0.0.1' IDENTIFIED BY 'snap-pw'; CREATE DATABASE s; "
        "USE s; CREATE TABLE s.t (id INT PRIMARY KEY, v INT); INSERT INTO s.t SELECT seq, seq FROM seq_1_to_50; "
        "GRANT SELECT ON s.* TO 'snap'@'127.0.0.1'"
    )
    victim, landing = tmp_path / "victimdir", tmp_path / "landing"
    put(victim / "victim.txt")
    put(victim / "part-00000.parquet")
    aged(victim)
    code, _, err = _snapshot_cli(server, landing, monkeypatch)
    assert code == 0, err
    depth = len((landing / "src" / "_snapshots" / "x" / "tables").relative_to(tmp_path).parts)
    escape = "/".join([".."] * depth) + "/victimdir"

    def escaping(t: dict) -> None:  # the case: the table folder leaves the landing
        t["folder"] = escape
        t["chunks"][0]["files"] = ["victim.txt"]

    def escaping_file(t: dict) -> None:
        t["chunks"][0]["files"] = [f"../../../{escape}/victim.txt"]

    def linked_folder(t: dict) -> None:  # a plain name, but the folder is a link out of the landing
        folder = next(landing.glob("src/_snapshots/*/tables"))
        (folder / "s__linked").symlink_to(victim)
        t["folder"] = "s__linked"

    for change, expected in ((escaping, "table folder"), (escaping_file, "the file"), (linked_folder, "symbolic link")):
        snap = _unfinished(landing, change)
        with untouched(victim):
            code, _, err = _snapshot_cli(server, landing, monkeypatch)
        assert code != 0 and err.count("\n") == 1 and expected in err, err
        if change is not linked_folder:  # (read_snapshots leaves unfinished snapshots out, links unseen)
            with pytest.raises(Exception, match=expected):
                read_snapshots(landing / "src")
        shutil.rmtree(snap)  # the way forward the error names: a new snapshot
        code, _, err = _snapshot_cli(server, landing, monkeypatch)
        assert code == 0, err


def _complete_snapshot(landing: Path, files: dict[str, bytes | Path]) -> Path:
    """A complete snapshot of one table written by hand (its files: bytes, or a link to a path)."""
    from binlake.snapshot.manifest import Chunk, Column, Manifest, Position, TableState, View

    folder = landing / "src" / "_snapshots" / "20260101T000000Z"
    (folder / "tables" / "d__t").mkdir(parents=True)
    for name, data in files.items():
        if isinstance(data, Path):
            (folder / "tables" / "d__t" / name).symlink_to(data)
        else:
            (folder / "tables" / "d__t" / name).write_bytes(data)
    col = Column("id", "int(11)", "int", False, None, None, "int", ("id", 3, 3, 0, False, None))
    table = TableState(
        "d",
        "t",
        "d__t",
        "InnoDB",
        "CREATE TABLE t (id INT PRIMARY KEY)",
        (col,),
        ("id",),
        True,
        0,
        True,
        [Chunk(None, None, 1, list(files))],
    )
    Manifest(
        "20260101T000000Z",
        "src",
        {"flavor": "mariadb", "version": "10.11", "server_id": 1},
        ("d.*",),
        (),
        5,
        "2026-01-01T00:00:00Z",
        "00" * 16,
        "complete",
        None,
        [View(0, Position("binlog.000001", 900), "2026-01-01T00:00:00Z", "test")],
        [table],
        1,
    ).write(folder)
    return folder


def test_seeding_never_reads_a_snapshot_file_through_a_link(tmp_path: Path) -> None:
    from binlake.snapshot import read_snapshots
    from binlake.snapshot.errors import SnapshotStateError

    secret = put(tmp_path / "victim" / "secret.parquet", b"PAR1 the secret")
    _complete_snapshot(tmp_path / "landing", {"part-00000.parquet": secret})
    with pytest.raises(SnapshotStateError, match=r"part-00000.parquet is a symbolic link.*refusing to seed"):
        read_snapshots(tmp_path / "landing" / "src")


def test_a_linked_snapshots_folder_is_neither_read_nor_written(tmp_path: Path) -> None:
    from binlake.snapshot import read_snapshots
    from binlake.snapshot.errors import SnapshotStateError

    other = tmp_path / "elsewhere"
    _complete_snapshot(other, {"part-00000.parquet": b"PAR1"})
    (tmp_path / "landing" / "src").mkdir(parents=True)
    (tmp_path / "landing" / "src" / "_snapshots").symlink_to(other / "src" / "_snapshots")
    with pytest.raises(SnapshotStateError, match="_snapshots is a symbolic link"):
        read_snapshots(tmp_path / "landing" / "src")
    (tmp_path / "landing" / "src" / "_snapshots").unlink()
    (tmp_path / "landing" / "src" / "_snapshots").mkdir()
    (tmp_path / "landing" / "src" / "_snapshots" / "20260101T000000Z").symlink_to(
        other / "src" / "_snapshots" / "20260101T000000Z"
    )
    with pytest.raises(SnapshotStateError, match="20260101T000000Z is a symbolic link"):
        read_snapshots(tmp_path / "landing" / "src")


@pytest.mark.parametrize(
    "folder,files",
    [
        ("../../../victim", ["part-00000.parquet"]),
        ("d__t", ["../x.parquet"]),
        ("/abs", ["p"]),
        ("d__t", [".hidden"]),
        ("..", ["p"]),
        ("d__t", [7]),
    ],
)
def test_manifest_paths_that_are_not_plain_names_are_typed_errors(tmp_path: Path, folder, files) -> None:
    from binlake.snapshot import read_snapshots
    from binlake.snapshot.errors import SnapshotStateError

    snap = _complete_snapshot(tmp_path / "landing", {"part-00000.parquet": b"PAR1"})
    m = json.loads((snap / "manifest.json").read_text())
    m["tables"][0]["folder"] = folder
    m["tables"][0]["chunks"][0]["files"] = files
    (snap / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(SnapshotStateError, match=r"manifest.json: table 'd'.'t': the .* nothing was read or deleted"):
        read_snapshots(tmp_path / "landing" / "src")


# --- case 9 (part): a server's binlog names become landing paths -----------------------------------------------


def _fetch_cli(files: list[tuple[str, bytes]], landing: Path, **script) -> tuple[int, str, str]:
    from tests.transport.fake_mysql import FakeMySQL8, Script

    with FakeMySQL8(Script(files, **script)) as server:
        return cli(
            "fetch",
            "--source",
            f"mysql://repl@127.0.0.1:{server.port}/?server_id=4242&name=h&heartbeat=1",
            "--landing",
            str(landing),
            "--until-now",
            "--max-retries",
            "0",
        )


def _binlog() -> bytes:
    from tests.binlog import build

    return build.binlog((230, b"x" * 10))


@pytest.mark.parametrize("name", ["_snapshots", "binlog", "_binlake_fetch.json"])
def test_a_server_binlog_name_that_is_no_binlog_name_is_refused(tmp_path: Path, name: str) -> None:
    landing = tmp_path / "landing"
    kept = put(landing / "h" / "_snapshots" / "20260101T000000Z" / "manifest.json", b"{}").parent.parent
    with untouched(kept):
        code, _, err = _fetch_cli([(name, _binlog())], landing)
    assert code != 0 and err.count("\n") == 1, err
    assert "ending in its sequence number" in err and "Traceback" not in err


def test_fetch_never_appends_through_a_link_or_into_a_folder(tmp_path: Path) -> None:
    landing, victim = tmp_path / "landing", tmp_path / "victim"
    secret = put(victim / "secret.txt", b"the secret\n")
    aged(victim)
    (landing / "h").mkdir(parents=True)
    (landing / "h" / "binlog.000001").symlink_to(secret)
    with untouched(victim):
        code, _, err = _fetch_cli([("binlog.000001", _binlog())], landing)
    assert code != 0 and err.count("\n") == 1 and "symbolic link" in err, err
    (landing / "h" / "binlog.000001").unlink()
    (landing / "h" / "binlog.000001").mkdir()
    code, _, err = _fetch_cli([("binlog.000001", _binlog())], landing)
    assert code != 0 and err.count("\n") == 1 and "not a file" in err and "Traceback" not in err, err
    (landing / "h" / "binlog.000001").rmdir()
    code, _, err = _fetch_cli([("binlog.000001", _binlog())], landing)
    assert code == 0, err
    assert (landing / "h" / "binlog.000001").read_bytes() == _binlog()


@pytest.mark.parametrize("own", [".binlake-fetch.lock", "_binlake_fetch.json", "_binlake_fetch.json.tmp"])
def test_fetch_never_opens_its_own_files_through_a_planted_link(tmp_path: Path, own: str) -> None:
    """The fetcher's lock, manifest and manifest temp file are opened without following a link put in their
    place: the victim is neither read into the manifest nor truncated nor appended to."""
    from binlake.transport.landing import LOCK_NAME, MANIFEST_NAME

    assert {LOCK_NAME, MANIFEST_NAME, MANIFEST_NAME + ".tmp"} >= {own}
    landing, victim = tmp_path / "landing", tmp_path / "victim"
    secret = put(victim / "secret.txt", b"the secret\n")
    aged(victim)
    (landing / "h").mkdir(parents=True)
    (landing / "h" / own).symlink_to(secret)
    with untouched(victim):
        code, _, err = _fetch_cli([("binlog.000001", _binlog())], landing)
    assert code != 0 and err.count("\n") == 1 and "symbolic link" in err and "Traceback" not in err, err


# --- case 6: landing files that are symbolic links ---------------------------------------------------------------


def test_landing_links_are_refused_with_their_reason_and_never_read(tmp_path: Path) -> None:
    from binlake.lake.errors import BinlogGapError
    from binlake.lake.ingest import plan_ingest

    landing, victim = tmp_path / "landing" / "src", tmp_path / "victim"
    secret = put(victim / "secret.txt", b"password=hunter2\n")
    put(landing / "binlog.000001", _binlog())
    (landing / "binlog.000002").symlink_to(secret)
    (landing / "binlog.000003").symlink_to(victim / "gone")
    (landing / "binlog.000004").mkdir()
    plan = plan_ingest(str(landing), "src", {}, chunk_bytes=1 << 20)
    assert [f.name for f in plan.files] == ["binlog.000001"]
    assert {t.path for t in plan.tasks} == {str(landing / "binlog.000001")}
    assert [r.split(":")[0] for r in plan.refused] == ["binlog.000002", "binlog.000003", "binlog.000004"]
    assert f"a symbolic link to {secret};" in plan.refused[0] and "never follows a symbolic link" in plan.refused[0]
    assert "(dangling: nothing is there)" in plan.refused[1] and "not a regular file" in plan.refused[2]
    put(landing / "binlog.000005", _binlog())  # a refused file between two others: a gap, saying why
    with pytest.raises(
        BinlogGapError,
        match=r"binlog.000002 to binlog.000004 is missing .*not read: binlog.000002: a symbolic link to .*secret",
    ):
        plan_ingest(str(landing), "src", {}, chunk_bytes=1 << 20)


@pytest.mark.spark
@pytest.mark.slow
def test_a_run_reads_no_landing_link_and_writes_no_scratch_through_one(spark, tmp_path: Path) -> None:
    """``binlake run`` on the rust engine: a ``_staging`` that is a link stops the run with one line before
    anything is written through it, and so does a bronze table folder that is one; then a landing holding a link
    to a secret and a dangling link loads the real binlogs, reports both links (run summary, ``binlake
    status``) and the secret's bytes are nowhere."""
    import datetime as dt

    from deltalake import DeltaTable

    from binlake.generate.config import GenerateConfig
    from binlake.generate.run import generate

    out, victim = tmp_path / "gen", tmp_path / "victim"
    generate(
        out, GenerateConfig(seed=3, days=1, scale=0.002, start_date=dt.date(2024, 3, 1), max_binlog_size=48 * 1024)
    )
    files = sorted((out / "landing" / "shop-primary").glob("mysql-bin.0*"))
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    (landing / "src").mkdir(parents=True)
    for f in files:
        shutil.copy(f, landing / "src" / f.name)
    secret = put(victim / "secret.txt", b"\xfebinPASSWORD=hunter2-" * 40)
    last = int(files[-1].name.rsplit(".", 1)[1])
    (landing / "src" / f"mysql-bin.{last + 1:06d}").symlink_to(secret)
    (landing / "src" / f"mysql-bin.{last + 2:06d}").symlink_to(victim / "nothing")
    put(victim / "staging" / "binlake-staging" / "keep.parquet")
    aged(victim)
    lake.mkdir()
    (lake / "_staging").symlink_to(victim / "staging")
    argv = ["run", "--landing", str(landing), "--lake", str(lake), "--engine", "rust", "--json"]
    with untouched(victim):
        code, _, err = cli(*argv)
    assert code != 0 and "_staging is a symbolic link" in err and "Traceback" not in err, err
    (lake / "_staging").unlink()
    (lake / "bronze").mkdir()  # the executors write bronze's files themselves: never through a link either
    (lake / "bronze" / "binlog_events").symlink_to(victim / "staging", target_is_directory=True)
    with untouched(victim):
        code, _, err = cli(*argv)
    assert code != 0 and "binlog_events is a symbolic link" in err and "Traceback" not in err, err
    (lake / "bronze" / "binlog_events").unlink()
    with untouched(victim):
        code, stdout, err = cli(*argv)
        assert code == 0, err
        [summary] = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
        status = cli("status", "--lake", str(lake), "--landing", str(landing), "--json")
    for table in [p.parent for p in lake.glob("*/*/_delta_log")]:  # the secret's bytes are nowhere
        for f in table.rglob("*.parquet"):
            assert b"hunter2" not in f.read_bytes(), f
        for row in DeltaTable(str(table)).to_pyarrow_table().to_pylist():
            assert "hunter2" not in json.dumps(row, default=str), table
    refused = summary["files_refused"]
    assert [r.split(":")[0] for r in refused] == [f"mysql-bin.{last + 1:06d}", f"mysql-bin.{last + 2:06d}"]
    assert "symbolic link" in refused[0] and "dangling" in refused[1]
    assert summary["files"] == len(files) and summary["changes_applied"] > 0
    assert "WARNING: landing file not read: mysql-bin." in err
    assert status[0] == 0, status[2]
    [source] = json.loads(status[1])["sources"]
    assert source["refused_files"] == refused
