"""Which landing files an ingest decodes: new ones whole, grown ones from where the last ingest stopped,
ingested ones not at all, and every landed file whatever its header time says (a replica's files may be opened
after the transactions they hold were committed): which transactions apply is the apply job's commit-time cut."""

from __future__ import annotations

import hashlib
import json
import struct

import pytest

from binlake.lake.errors import BinlogGapError
from binlake.lake.gaps import check_sequence
from binlake.lake.ingest import MIN_TASK_BYTES, IngestedFile, plan_ingest, task_bytes
from tests.support import fixture_path


def fake_binlog(path, created: int, size: int) -> None:
    """Magic and a FORMAT_DESCRIPTION header stamped ``created``, padded to ``size`` (the plan reads only the
    file's bytes)."""
    head = b"\xfebin" + struct.pack("<IBIIIH", created, 15, 1, 100, 104, 0)
    path.write_bytes(head + b"\0" * (size - len(head)))


def test_plan_skips_ingested_resumes_grown_and_takes_every_new_file(tmp_path):
    for n, (created, size) in enumerate([(1000, 500), (2000, 800), (3000, 300), (9000, 200)], start=1):
        fake_binlog(tmp_path / f"binlog.{n:06d}", created, size)
    (tmp_path / "binlog.index").write_text("x")
    sha = hashlib.sha256((tmp_path / "binlog.000001").read_bytes()).hexdigest()
    sha600 = hashlib.sha256((tmp_path / "binlog.000002").read_bytes()[:600]).hexdigest()
    done = {
        "binlog.000001": IngestedFile(frozenset({(500, sha)}), 500),
        "binlog.000002": IngestedFile(frozenset({(600, sha600)}), 580),
    }  # it was 600 bytes then
    plan = plan_ingest(str(tmp_path), "src", done, chunk_bytes=1 << 20)
    assert plan.skipped == ["binlog.000001"]
    assert [(t.identity.name, t.start, t.end) for t in plan.tasks] == [
        ("binlog.000002", 580, None),
        ("binlog.000003", 4, None),
        ("binlog.000004", 4, None),
    ]
    assert plan.bytes == 800 + 300 + 200
    everything = plan_ingest(str(tmp_path), "src", {}, chunk_bytes=1 << 20)
    assert [t.identity.name for t in everything.tasks] == [f"binlog.00000{n}" for n in range(1, 5)]


def test_a_missing_file_between_two_others_stops_the_source_naming_it(tmp_path):
    for n in (1, 2, 5):
        fake_binlog(tmp_path / f"binlog.{n:06d}", 1000, 300)
    with pytest.raises(
        BinlogGapError,
        match=r"binlog binlog.000003 to binlog.000004 is missing between "
        r"binlog.000002 and binlog.000005.*binlake snapshot",
    ):
        plan_ingest(str(tmp_path), "src", {}, chunk_bytes=1 << 20)
    # files already ingested count too: the landing folder may have dropped them
    (tmp_path / "binlog.000001").unlink()
    sha = hashlib.sha256(b"x").hexdigest()
    with pytest.raises(BinlogGapError, match=r"binlog.000003 to binlog.000004"):
        plan_ingest(
            str(tmp_path), "src", {"binlog.000001": IngestedFile(frozenset({(1, sha)}), 1)}, chunk_bytes=1 << 20
        )
    # a snapshot whose position is in binlog.000005 holds what the gap lost; one past the files is a gap itself
    assert len(plan_ingest(str(tmp_path), "src", {}, chunk_bytes=1 << 20, seam_file="binlog.000005").tasks) == 2
    with pytest.raises(BinlogGapError, match=r"snapshot's position is in binlog.000000"):
        check_sequence("src", ["binlog.000002"], "binlog.000000")


def test_a_file_replaced_below_the_ingested_position_stops_the_source(tmp_path):
    fake_binlog(tmp_path / "binlog.000001", 1000, 300)
    head = (tmp_path / "binlog.000001").read_bytes()
    shrunk = {"binlog.000001": IngestedFile(frozenset({(400, "x")}), 400)}
    with pytest.raises(BinlogGapError, match="300 bytes but was ingested up to position 400"):
        plan_ingest(str(tmp_path), "src", shrunk, chunk_bytes=1 << 20)
    other = {"binlog.000001": IngestedFile(frozenset({(200, hashlib.sha256(b"y" * 200).hexdigest())}), 200)}
    with pytest.raises(BinlogGapError, match=r"first 200 bytes of binlog.000001 differ"):
        plan_ingest(str(tmp_path), "src", other, chunk_bytes=1 << 20)
    same = {"binlog.000001": IngestedFile(frozenset({(200, hashlib.sha256(head[:200]).hexdigest())}), 200)}
    assert [t.start for t in plan_ingest(str(tmp_path), "src", same, chunk_bytes=1 << 20).tasks] == [200]


def test_task_size_spreads_the_new_bytes_over_every_core_within_bounds():
    mib = 1 << 20
    assert task_bytes(45 * mib, 64 * mib, 2) == -(-45 * mib // 2)  # one 45 MB file: two tasks on two cores
    assert task_bytes(45 * mib, 64 * mib, 1) == 64 * mib
    assert task_bytes(900 * mib, 64 * mib, 4) == 64 * mib  # never above --chunk-mb
    assert task_bytes(6 * mib, 64 * mib, 8) == MIN_TASK_BYTES  # never below the minimum task
    assert task_bytes(6 * mib, 1 * mib, 8) == 1 * mib  # ... unless --chunk-mb asks for less
    assert task_bytes(0, 64 * mib, 8) == 64 * mib


def test_a_plan_with_parallelism_splits_a_real_binlog_at_transactions(tmp_path):
    from binlake.pipeline.split import transaction_starts

    path = fixture_path("binlog", "mysql-binlog-connector-java", "mysql-bin.checksum-crc32")  # 60 GTIDs
    (tmp_path / "binlog.000001").write_bytes(path.read_bytes())
    size = path.stat().st_size
    one = plan_ingest(str(tmp_path), "src", {}, chunk_bytes=1 << 30)
    assert [(t.start, t.end) for t in one.tasks] == [(4, None)]
    starts = set(transaction_starts(str(tmp_path / "binlog.000001")))
    many = plan_ingest(str(tmp_path), "src", {}, chunk_bytes=1 << 30, parallelism=size // MIN_TASK_BYTES + 4)
    assert len(many.tasks) == 1  # below the minimum task size: splitting is not worth it
    small = plan_ingest(str(tmp_path), "src", {}, chunk_bytes=size // 3, parallelism=2)
    assert len(small.tasks) >= 3 and all(t.start in starts for t in small.tasks[1:])
    assert [t.end for t in small.tasks[:-1]] == [t.start for t in small.tasks[1:]]


def test_a_scanned_file_is_not_scanned_again_until_it_changes(tmp_path, monkeypatch):
    """transaction_starts keeps what it found for a file unchanged since (the run scans ahead while its JVM
    starts; the ingest plan asks again); a file cut shorter, or grown back, is scanned again."""
    from binlake.pipeline import split

    data = fixture_path("binlog", "mysql-binlog-connector-java", "mysql-bin.checksum-crc32").read_bytes()
    path = tmp_path / "binlog.000001"
    path.write_bytes(data)
    scans = []
    real = split.scan_events
    monkeypatch.setattr(split, "scan_events", lambda p, **kw: scans.append(p) or real(p, **kw))
    whole = list(split.transaction_starts(str(path)))
    assert len(whole) == 60 and list(split.transaction_starts(str(path))) == whole and len(scans) == 1
    path.write_bytes(data[: whole[30]])
    assert list(split.transaction_starts(str(path))) == whole[:30] and len(scans) == 2
    path.write_bytes(data)
    assert list(split.transaction_starts(str(path))) == whole and len(scans) == 3


def land_fixture(tmp_path, *sizes):
    """Copies of a real MySQL 8 binlog (ends with its ROTATE event) as binlog.000001.., each cut to its size
    (None: whole); returns the whole file's bytes."""
    data = fixture_path("binlog", "mysql-binlog-connector-java", "mysql-bin.checksum-crc32").read_bytes()
    for n, size in enumerate(sizes, start=1):
        (tmp_path / f"binlog.{n:06d}").write_bytes(data if size is None else data[:size])
    return data


def test_a_file_cut_short_before_a_new_file_holds_the_source_there(tmp_path):
    from binlake.binlog.scan import scan_events

    data = land_fixture(tmp_path, None, None, None)
    events = list(scan_events(str(tmp_path / "binlog.000002"), commit_timestamps=False))
    middle = events[len(events) // 2]
    (tmp_path / "binlog.000002").write_bytes(data[: middle.pos + 10])  # a copy in progress
    plan = plan_ingest(str(tmp_path), "src", {}, chunk_bytes=1 << 30)
    assert plan.waiting.startswith(
        f"waiting for binlog.000002 to complete (ends mid-event at offset {middle.pos}); "
        "if no more of it will come, land it whole again"
    )
    assert plan.held == ["binlog.000003"]
    assert [t.identity.name for t in plan.tasks] == ["binlog.000001", "binlog.000002"]  # its whole transactions
    # all of it but the ROTATE: a closed binlog (in-use flag cleared) ends with one, so it is still cut
    (tmp_path / "binlog.000002").write_bytes(data[: events[-1].pos])
    assert "without the ROTATE or STOP event" in plan_ingest(str(tmp_path), "src", {}, chunk_bytes=1 << 30).waiting
    # ... unless the server never closed it (a crash: the flag still set): what is there is all there is
    crashed = bytearray(data[: events[-1].pos])
    crashed[21] |= 1
    (tmp_path / "binlog.000002").write_bytes(bytes(crashed))
    assert plan_ingest(str(tmp_path), "src", {}, chunk_bytes=1 << 30).waiting is None
    # ... or binlake fetch saw the server move past it
    (tmp_path / "binlog.000002").write_bytes(data[: events[-1].pos])
    (tmp_path / "_binlake_fetch.json").write_text(
        json.dumps({"version": 1, "source": "s", "closed": ["binlog.000001", "binlog.000002"]})
    )
    assert plan_ingest(str(tmp_path), "src", {}, chunk_bytes=1 << 30).waiting is None
    (tmp_path / "_binlake_fetch.json").unlink()
    # ingested cut, unchanged, and a new file behind it: still waiting (read from where its ingest stopped)
    (tmp_path / "binlog.000002").write_bytes(data[: middle.pos + 10])
    cut_sha = hashlib.sha256(data[: middle.pos + 10]).hexdigest()
    done = {
        "binlog.000001": IngestedFile(frozenset({(len(data), hashlib.sha256(data).hexdigest())}), len(data)),
        "binlog.000002": IngestedFile(frozenset({(middle.pos + 10, cut_sha)}), events[1].pos),
    }
    plan = plan_ingest(str(tmp_path), "src", done, chunk_bytes=1 << 30)
    assert plan.skipped == ["binlog.000001", "binlog.000002"] and plan.held == ["binlog.000003"] and not plan.tasks
    # whole: it resumes where it stopped and the next file follows
    (tmp_path / "binlog.000002").write_bytes(data)
    plan = plan_ingest(str(tmp_path), "src", done, chunk_bytes=1 << 30)
    assert plan.waiting is None
    assert [(t.identity.name, t.start) for t in plan.tasks] == [("binlog.000002", events[1].pos), ("binlog.000003", 4)]


def test_files_landing_before_what_was_applied_or_twice_stop_the_source(tmp_path):
    from binlake.lake.gaps import check_in_order

    data = land_fixture(tmp_path, None, None)
    (tmp_path / "copy.000002").write_bytes(data)
    with pytest.raises(BinlogGapError, match=r"binlog.000002 and copy.000002 have the same sequence number"):
        plan_ingest(str(tmp_path), "src", {}, chunk_bytes=1 << 30)
    (tmp_path / "copy.000002").unlink()
    with pytest.raises(
        BinlogGapError,
        match=r"binlog.000001 landed after changes of the later binlog.000002 were "
        "applied.*binlake snapshot",
    ):
        plan_ingest(str(tmp_path), "src", {}, chunk_bytes=1 << 30, applied_file="binlog.000002")
    # before the newest snapshot's position it changes nothing the snapshot does not hold
    assert (
        len(
            plan_ingest(
                str(tmp_path), "src", {}, chunk_bytes=1 << 30, applied_file="binlog.000002", seam_file="binlog.000002"
            ).tasks
        )
        == 2
    )
    # a file grown after a later one was applied: only its ROTATE is harmless
    from binlake.binlog.scan import scan_events

    rotate = list(scan_events(str(tmp_path / "binlog.000001"), commit_timestamps=False))[-1]
    assert rotate.type_code == 4
    check_in_order("src", str(tmp_path / "binlog.000001"), rotate.pos, "binlog.000002", None)
    with pytest.raises(BinlogGapError, match=r"binlog.000001 grew \(from offset 4\) after changes of the later"):
        check_in_order("src", str(tmp_path / "binlog.000001"), 4, "binlog.000002", None)


def test_a_file_copied_while_the_server_wrote_it_has_grown_not_been_replaced(tmp_path):
    from binlake.lake.gaps import check_grown

    data = land_fixture(tmp_path, None)
    live = bytearray(data[:5000])
    live[21] |= 1  # LOG_EVENT_BINLOG_IN_USE_F: set while the server writes the file
    check_grown("src", str(tmp_path / "binlog.000001"), [(5000, hashlib.sha256(live).hexdigest())], 4000)
    live[100] ^= 1
    with pytest.raises(BinlogGapError, match="differ from the version already ingested"):
        check_grown("src", str(tmp_path / "binlog.000001"), [(5000, hashlib.sha256(live).hexdigest())], 4000)


def test_the_newest_ingested_file_gone_with_a_later_one_landed_stops_the_source(tmp_path):
    """binlog.000002 was ingested (up to 300) while it may still have been written, then left the landing folder;
    binlog.000003 landed: its tail can not be checked, so the source stops rather than load binlog.000003 after a
    hole (it loaded binlog.000003 and lost binlog.000002's tail silently)."""
    for n in (1, 3):
        fake_binlog(tmp_path / f"binlog.{n:06d}", 1000, 300)
    sha = hashlib.sha256((tmp_path / "binlog.000001").read_bytes()).hexdigest()
    done = {
        "binlog.000001": IngestedFile(frozenset({(300, sha)}), 300),
        "binlog.000002": IngestedFile(frozenset({(300, "x")}), 300),
    }
    with pytest.raises(
        BinlogGapError,
        match=r"binlog.000002, the newest binlog it ingested, is no longer in the landing folder and "
        r"binlog.000003 follows it.*land binlog.000002 again.*binlake snapshot",
    ):
        plan_ingest(str(tmp_path), "src", done, chunk_bytes=1 << 20)
    # a file binlake fetch closed is whole; so is one the newest snapshot's position is past
    from binlake.transport.landing import MANIFEST_NAME, Manifest

    plan_ingest(str(tmp_path), "src", done, chunk_bytes=1 << 20, seam_file="binlog.000003")  # (no stop)
    (tmp_path / MANIFEST_NAME).write_text(Manifest("src", closed=["binlog.000001", "binlog.000002"]).to_json())
    plan_ingest(str(tmp_path), "src", done, chunk_bytes=1 << 20)
    (tmp_path / MANIFEST_NAME).unlink()
    # an older ingested file gone is no matter (the files after it were ingested after it)
    (tmp_path / "binlog.000001").unlink()
    fake_binlog(tmp_path / "binlog.000002", 1000, 300)
    done["binlog.000002"] = IngestedFile(
        frozenset({(300, hashlib.sha256((tmp_path / "binlog.000002").read_bytes()).hexdigest())}), 300
    )
    assert plan_ingest(str(tmp_path), "src", done, chunk_bytes=1 << 20).skipped == ["binlog.000002"]
