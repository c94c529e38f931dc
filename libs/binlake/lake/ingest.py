"""The ingest job: a source's new landing binlogs -> ``bronze.binlog_events``, decoded and written by Spark's
executors (a task per file or chunk, ``mapInArrow``); the driver plans and commits.

Exactly once: a file whose identity (source, name, size, SHA-256) has a ``file_end`` row in bronze is skipped;
a file that grew since (same name, new identity) is decoded from the end position its last ingest recorded. All
new rows of a run go to bronze in one Delta append (atomic), so a crash leaves all or none of them.

Snapshots landed by ``binlake snapshot`` seed their tables first (``binlake.lake.seed``), and the landed files
must continue what bronze holds (``binlake.lake.gaps``). Ingest takes every complete transaction landed so far; which
of them a run applies is decided by one rule, the
apply job's commit-time cut (``binlake.lake.apply.batch``), never by file names or file header times.

An undecodable stretch of a binlog (``RunOptions.on_decode_error``): ``quarantine`` (the default) appends it as
an ``error`` row with its reason and first bytes (the apply job quarantines it) and loads everything else;
``fail`` stops the source with :class:`~binlake.pipeline.errors.DecodeFailed` and appends nothing (the chunks' end
rows come back with their files, which are deleted uncommitted).
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from binlake.lake.bronze_files import STATS_COLUMNS, bronze_delta_schema, write_bronze
from binlake.lake.checkpoints import read_checkpoint
from binlake.lake.errors import BinlogGapError
from binlake.lake.gaps import (
    check_grown,
    check_in_order,
    check_newest_ingested,
    check_sequence,
    fetched_closed,
    unfinished,
)
from binlake.lake.members import ingest_cluster, is_cluster, snapshots_of
from binlake.lake.registry import registry_rows
from binlake.lake.seed import SeedReport, seed_from_snapshots
from binlake.pipeline.bronze import BRONZE_SCHEMA, ChunkTask
from binlake.pipeline.errors import DecodeFailed
from binlake.pipeline.identity import FileIdentity, identify, landing_listing
from binlake.pipeline.split import plan_chunks
from binlake.vocabulary import END_OPS, FILE_END_OP

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from binlake.lake.delta import DeltaEngine
    from binlake.lake.layout import LakeLayout
    from binlake.lake.options import RunOptions

BRONZE_COLUMNS_TYPES = tuple((n, t) for n, t, _ in BRONZE_SCHEMA)
BRONZE_PROPERTIES = {"delta.dataSkippingStatsColumns": ",".join(STATS_COLUMNS)}
MIN_TASK_BYTES = 4 << 20  # a smaller share of the input is not worth a task of its own


@dataclass(frozen=True, slots=True)
class IngestedFile:
    identities: frozenset[tuple[int, str]]  # (size, sha256) of each ingested version of the file
    end_pos: int

    @property
    def sizes(self) -> frozenset[int]:
        return frozenset(size for size, _ in self.identities)


def ingested_files(
    spark: "SparkSession", engine: "DeltaEngine", bronze_path: str, source: str
) -> dict[str, IngestedFile]:
    """name -> identities already in bronze and the furthest end position reached, for one source."""
    done: dict[str, tuple[set[tuple[int, str]], int]] = {}
    for r in engine.read_rows(
        spark, bronze_path, ("binlog_file", "file_size", "file_sha256", "pos"), {"source": source, "op": FILE_END_OP}
    ):
        identities, end = done.setdefault(r["binlog_file"], (set(), 0))
        identities.add((r["file_size"], r["file_sha256"]))
        done[r["binlog_file"]] = (identities, max(end, r["pos"]))
    return {name: IngestedFile(frozenset(h), end) for name, (h, end) in done.items()}


@dataclass
class IngestPlan:
    tasks: list[ChunkTask] = field(default_factory=list)
    files: list[FileIdentity] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # already ingested with the same identity
    refused: list[str] = field(default_factory=list)  # "name: reason" not read (symbolic links, ...)
    waiting: Optional[str] = None  # why the source waits at a file cut short
    held: list[str] = field(default_factory=list)  # the later files it holds back meanwhile

    @property
    def bytes(self) -> int:
        return sum(f.size for f in self.files)


def task_bytes(new_bytes: int, chunk_bytes: int, parallelism: int) -> int:
    """The chunk size to plan with: at most ``chunk_bytes``, and small enough that the new bytes make at least
    ``parallelism`` tasks (every core decodes; one 45 MB file on two cores is two tasks), but not below
    :data:`MIN_TASK_BYTES` (a task has a fixed cost)."""
    if parallelism <= 1 or new_bytes <= 0:
        return chunk_bytes
    return max(min(chunk_bytes, MIN_TASK_BYTES), min(chunk_bytes, -(-new_bytes // parallelism)))


def plan_ingest(
    landing_dir: str,
    source: str,
    done: dict[str, IngestedFile],
    *,
    chunk_bytes: int,
    verify_hashes: bool = False,
    seam_file: Optional[str] = None,
    parallelism: int = 1,
    applied_file: Optional[str] = None,
    hash_new: bool = True,
) -> IngestPlan:
    """The chunks to decode: new files, and the new tail of grown ones; :mod:`binlake.lake.gaps` checks first
    that the files continue what bronze holds (``seam_file``: where the newest snapshot's position is;
    ``applied_file``: where the source's checkpoint is). Chunks are at most ``chunk_bytes`` and spread the new
    bytes over ``parallelism`` tasks at least (:func:`task_bytes`).

    A file cut short (:func:`binlake.lake.gaps.unfinished`: it ends mid-event, or without the end marker of a
    closed binlog) before a file not ingested yet holds the source there: its complete transactions are planned,
    the later files are not (``held``), and ``waiting`` says why, until the rest of it lands.

    A file whose name and size match an ingested identity is skipped without hashing it again (binlogs are
    append-only: hashing the whole landing folder on every run would cost O(history)); with
    ``verify_hashes`` every file is hashed and compared. Without ``hash_new`` (a look-ahead: what is there to
    do), a file of a new name is planned by its size, its hash left empty."""
    plan = IngestPlan()
    starts: list[tuple[str, FileIdentity, int]] = []
    paths, plan.refused = landing_listing(landing_dir)
    try:
        check_sequence(source, [*done, *map(os.path.basename, paths)], seam_file)
    except BinlogGapError as exc:
        if not plan.refused:
            raise
        short = ", ".join(r.split(";")[0] for r in plan.refused)
        raise BinlogGapError(f"{exc} (landing entries not read: {short}; ingest reads regular files only)") from None
    closed = fetched_closed(landing_dir)
    check_newest_ingested(source, done, map(os.path.basename, paths), closed, seam_file)
    for i, path in enumerate(paths):
        name = os.path.basename(path)
        prev = done.get(name)
        start: Optional[int] = None
        ident = None
        if prev is None and not hash_new:
            ident = FileIdentity(source, name, os.path.getsize(path), "")
        elif prev is None or verify_hashes or os.path.getsize(path) not in prev.sizes:
            ident = identify(source, path)
            if prev is not None and (ident.size, ident.sha256) in prev.identities:
                ident = None
        if ident is None:
            plan.skipped.append(name)
        else:
            if prev is not None:
                check_grown(source, path, prev.identities, prev.end_pos)
            check_in_order(source, path, prev.end_pos if prev is not None else None, applied_file, seam_file)
            start = prev.end_pos if prev is not None else 4
            plan.files.append(ident)
            starts.append((path, ident, start))
        if i + 1 < len(paths) and os.path.basename(paths[i + 1]) not in done and name not in closed:
            why = unfinished(path, start if start is not None else prev.end_pos)  # (prev: skipped, ingested)
            if why is not None:  # the next file may not load before the rest of this one
                plan.waiting = (
                    f"waiting for {name} to complete ({why}); if no more of it will come, land it "
                    f"whole again (binlake fetch, or copy it from the server), or take a snapshot "
                    f"(binlake snapshot)"
                )
                plan.held = [os.path.basename(p) for p in paths[i + 1 :]]
                break
    size = task_bytes(sum(ident.size - start for _, ident, start in starts), chunk_bytes, parallelism)
    for path, ident, start in starts:
        plan.tasks.extend(plan_chunks(path, ident, start, size))
    return plan


@dataclass
class IngestReport:
    files: int = 0
    skipped_files: int = 0
    bytes: int = 0
    rows: Counter = field(default_factory=Counter)  # bronze rows per op
    totals: dict[str, int] = field(default_factory=dict)  # events, transactions, skipped_gtid, ...
    version: Optional[int] = None
    seconds: float = 0.0
    seeded: SeedReport = field(default_factory=SeedReport)  # tables seeded from a snapshot in the landing folder
    refused: list[str] = field(default_factory=list)  # landing entries not read, "name: reason"
    waiting: Optional[str] = None  # the file cut short the source waits at, and why
    held: list[str] = field(default_factory=list)  # later files not ingested while it waits
    member: Optional[str] = None  # a cluster source: the member read last
    switches: list[str] = field(default_factory=list)  # "old -> new" members switched to (lake.members)


def ingest_job(
    spark: "SparkSession", engine: "DeltaEngine", lake: "LakeLayout", landing_dir: str, opts: "RunOptions", run_id: str
) -> IngestReport:
    """Decode the source's new landing files on Spark's executors and append them to bronze in one commit."""
    from binlake.lake.crash import reset_crash_counts

    reset_crash_counts()
    started = time.perf_counter()
    now, by_gtid = snapshots_of(spark, engine, lake, opts.source, landing_dir)
    seeded = seed_from_snapshots(spark, engine, lake, opts.source, now, tables=opts.tables)
    if is_cluster(landing_dir):  # a replication cluster: one folder per member (lake.members)
        return ingest_cluster(spark, engine, lake, landing_dir, opts, run_id, seeded, started, by_gtid)
    done = ingested_files(spark, engine, lake.bronze, opts.source)
    checkpoint = read_checkpoint(spark, engine, lake.checkpoints, opts.source)
    plan = plan_ingest(
        landing_dir,
        opts.source,
        done,
        chunk_bytes=opts.chunk_bytes,
        seam_file=seeded.seam_file,
        parallelism=spark.sparkContext.defaultParallelism,
        applied_file=checkpoint.binlog_file,
    )
    report = IngestReport(
        len(plan.files), len(plan.skipped), plan.bytes, seeded=seeded, waiting=plan.waiting, held=plan.held
    )
    report.refused = plan.refused
    if plan.tasks:
        registry = registry_rows(spark, engine, lake) or None
        report.version, report.rows, report.totals = append_bronze(
            spark, engine, lake, plan.tasks, opts, checkpoint.gtid_executed, run_id, registry
        )
    report.seconds = time.perf_counter() - started
    return report


def append_bronze(
    spark: "SparkSession",
    engine: "DeltaEngine",
    lake: "LakeLayout",
    tasks: list[ChunkTask],
    opts: "RunOptions",
    applied_gtids: str,
    run_id: str,
    registry: Optional[list[dict]],
) -> tuple[int, Counter, dict[str, int]]:
    """Decode ``tasks`` on the executors into bronze files (:mod:`binlake.lake.bronze_files`) and commit them in
    one append; (version, bronze rows per op, decode totals). With ``--on-decode-error fail`` an undecodable
    stretch raises :class:`DecodeFailed` (its reason names the file, the offset and what was expected) and
    nothing is committed."""
    from binlake.lake.crash import crash_point
    from binlake.lake.owned import LINK_ADVICE, OutsideLakeError, link_problem, scratch_folder

    problem = link_problem(lake.root, lake.bronze)
    if problem is not None:  # the executors write bronze's files themselves: never through a link
        raise OutsideLakeError(f"{problem}; {LINK_ADVICE}")
    with engine.warming(scratch_folder(lake.staging, f"warming-{run_id}-{os.getpid()}")):
        written = write_bronze(spark, lake.bronze, tasks, opts.tables, applied_gtids, run_id, registry)
    error = written.first_error() if opts.on_decode_error == "fail" else None
    if error is not None:
        written.remove(lake.bronze)
        raise DecodeFailed(
            f"{error}; the source stops here (--on-decode-error fail): replace the damaged file, or run with "
            f"--on-decode-error quarantine to load the rest and keep this stretch in meta/quarantine"
        )
    version = engine.append_files(lake.bronze, written.files, bronze_delta_schema(), properties=BRONZE_PROPERTIES)
    crash_point("after_bronze")
    rows, totals = _counters([e for e in written.ends if e["op"] in END_OPS])
    return version, rows, totals


def _counters(ends: list[Any]) -> tuple[Counter, dict[str, int]]:
    """Bronze rows per op and the decode totals of this ingest, from its chunks' end rows."""
    rows: Counter = Counter()
    totals: dict[str, int] = {}
    for r in ends:
        rows[r["op"]] += 1
        _add_stats(json.loads(r["statement"]), rows, totals)
    return rows, totals


def _add_stats(stats: dict[str, Any], rows: Counter, totals: dict[str, int]) -> None:
    for k, v in stats.items():
        if k == "rows":
            rows.update(v)
        elif isinstance(v, (bool, int)) and k != "end_pos":
            totals[k] = totals.get(k, 0) + int(v)
