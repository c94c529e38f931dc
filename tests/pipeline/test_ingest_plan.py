"""Which landing files an ingest decodes: new ones whole, grown ones from where the last ingest stopped,
ingested ones not at all, and every landed file whatever its header time says (a replica's files may be opened
after the transactions they hold were committed): which transactions apply is the apply job's commit-time cut."""

from __future__ import annotations

import hashlib
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
    done = {"binlog.000001": IngestedFile(frozenset({(500, sha)}), 500),
            "binlog.000002": IngestedFile(frozenset({(600, sha600)}), 580)}      # it was 600 bytes then
    plan = plan_ingest(str(tmp_path), "src", done, chunk_bytes=1 << 20)
    assert plan.skipped == ["binlog.000001"]
    assert [(t.identity.name, t.start, t.end) for t in plan.tasks] == [("binlog.000002", 580, None),
                                                                     ("binlog.000003", 4, None),
                                                                     ("binlog.000004", 4, None)]
    assert plan.bytes == 800 + 300 + 200
    everything = plan_ingest(str(tmp_path), "src", {}, chunk_bytes=1 << 20)
    assert [t.identity.name for t in everything.tasks] == [f"binlog.00000{n}" for n in range(1, 5)]


def test_a_missing_file_between_two_others_stops_the_source_naming_it(tmp_path):
    for n in (1, 2, 5):
        fake_binlog(tmp_path / f"binlog.{n:06d}", 1000, 300)
    with pytest.raises(BinlogGapError, match=r"binlog binlog.000003 to binlog.000004 is missing between "
                                             r"binlog.000002 and binlog.000005.*binlake snapshot"):
        plan_ingest(str(tmp_path), "src", {}, chunk_bytes=1 << 20)
    # files already ingested count too: the landing folder may have dropped them
    (tmp_path / "binlog.000001").unlink()
    sha = hashlib.sha256(b"x").hexdigest()
    with pytest.raises(BinlogGapError, match="binlog.000003 to binlog.000004"):
        plan_ingest(str(tmp_path), "src", {"binlog.000001": IngestedFile(frozenset({(1, sha)}), 1)},
                    chunk_bytes=1 << 20)
    # a snapshot whose position is in binlog.000005 holds what the gap lost; one past the files is a gap itself
    assert len(plan_ingest(str(tmp_path), "src", {}, chunk_bytes=1 << 20, seam_file="binlog.000005").tasks) == 2
    with pytest.raises(BinlogGapError, match="snapshot's position is in binlog.000000"):
        check_sequence("src", ["binlog.000002"], "binlog.000000")


def test_a_file_replaced_below_the_ingested_position_stops_the_source(tmp_path):
    fake_binlog(tmp_path / "binlog.000001", 1000, 300)
    head = (tmp_path / "binlog.000001").read_bytes()
    shrunk = {"binlog.000001": IngestedFile(frozenset({(400, "x")}), 400)}
    with pytest.raises(BinlogGapError, match="300 bytes but was ingested up to position 400"):
        plan_ingest(str(tmp_path), "src", shrunk, chunk_bytes=1 << 20)
    other = {"binlog.000001": IngestedFile(frozenset({(200, hashlib.sha256(b"y" * 200).hexdigest())}), 200)}
    with pytest.raises(BinlogGapError, match="first 200 bytes of binlog.000001 differ"):
        plan_ingest(str(tmp_path), "src", other, chunk_bytes=1 << 20)
    same = {"binlog.000001": IngestedFile(frozenset({(200, hashlib.sha256(head[:200]).hexdigest())}), 200)}
    assert [t.start for t in plan_ingest(str(tmp_path), "src", same, chunk_bytes=1 << 20).tasks] == [200]


def test_task_size_spreads_the_new_bytes_over_every_core_within_bounds():
    mib = 1 << 20
    assert task_bytes(45 * mib, 64 * mib, 2) == -(-45 * mib // 2)       # one 45 MB file: two tasks on two cores
    assert task_bytes(45 * mib, 64 * mib, 1) == 64 * mib
    assert task_bytes(900 * mib, 64 * mib, 4) == 64 * mib                # never above --chunk-mb
    assert task_bytes(6 * mib, 64 * mib, 8) == MIN_TASK_BYTES            # never below the minimum task
    assert task_bytes(6 * mib, 1 * mib, 8) == 1 * mib                    # ... unless --chunk-mb asks for less
    assert task_bytes(0, 64 * mib, 8) == 64 * mib


def test_a_plan_with_parallelism_splits_a_real_binlog_at_transactions(tmp_path):
    from binlake.pipeline.split import transaction_starts

    path = fixture_path("binlog", "mysql-binlog-connector-java", "mysql-bin.checksum-crc32")   # 60 GTIDs
    (tmp_path / "binlog.000001").write_bytes(path.read_bytes())
    size = path.stat().st_size
    one = plan_ingest(str(tmp_path), "src", {}, chunk_bytes=1 << 30)
    assert [(t.start, t.end) for t in one.tasks] == [(4, None)]
    starts = set(transaction_starts(str(tmp_path / "binlog.000001")))
    many = plan_ingest(str(tmp_path), "src", {}, chunk_bytes=1 << 30, parallelism=size // MIN_TASK_BYTES + 4)
    assert len(many.tasks) == 1          # below the minimum task size: splitting is not worth it
    small = plan_ingest(str(tmp_path), "src", {}, chunk_bytes=size // 3, parallelism=2)
    assert len(small.tasks) >= 3 and all(t.start in starts for t in small.tasks[1:])
    assert [t.end for t in small.tasks[:-1]] == [t.start for t in small.tasks[1:]]
