"""Which landing files an ingest decodes: new ones whole, grown ones from where the last ingest stopped,
ingested ones not at all, and every landed file whatever its header time says (a replica's files may be opened
after the transactions they hold were committed): which transactions apply is the apply job's commit-time cut."""

from __future__ import annotations

import hashlib
import struct

from binlake.lake.ingest import IngestedFile, plan_ingest


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
    done = {"binlog.000001": IngestedFile(frozenset({(500, sha)}), 500),
            "binlog.000002": IngestedFile(frozenset({(600, "old")}), 580)}      # it was 600 bytes then
    plan = plan_ingest(str(tmp_path), "src", done, chunk_bytes=1 << 20)
    assert plan.skipped == ["binlog.000001"]
    assert [(t.identity.name, t.start, t.end) for t in plan.tasks] == [("binlog.000002", 580, None),
                                                                     ("binlog.000003", 4, None),
                                                                     ("binlog.000004", 4, None)]
    assert plan.bytes == 800 + 300 + 200
    everything = plan_ingest(str(tmp_path), "src", {}, chunk_bytes=1 << 20)
    assert [t.identity.name for t in everything.tasks] == [f"binlog.00000{n}" for n in range(1, 5)]
