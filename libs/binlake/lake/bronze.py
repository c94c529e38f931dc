"""Ingest: landing binlogs -> ``bronze.binlog_events``, decoded in parallel on Spark (a task per file chunk).

Exactly once: a file whose identity (source, name, size, SHA-256) has a ``file_end`` row in bronze is skipped;
a file that grew since (same name, new identity) is decoded from the end position its last ingest recorded.
All new rows of a run go to bronze in one Delta append (atomic), so a crash leaves all or none of them.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from binlake.lake.silver import read_rows, to_arrow
from binlake.pipeline.bronze import BRONZE_SCHEMA, ChunkTask, decode_chunk
from binlake.pipeline.filters import GtidSet, TableFilter, TransactionFilter
from binlake.pipeline.identity import FileIdentity, identify, landing_files
from binlake.pipeline.split import DEFAULT_CHUNK_BYTES, plan_chunks

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

    from binlake.lake.delta import DeltaEngine


BRONZE_COLUMNS_TYPES = tuple((n, t) for n, t, _ in BRONZE_SCHEMA)


@dataclass(frozen=True, slots=True)
class IngestedFile:
    identities: frozenset[tuple[int, str]]      # (size, sha256) of each ingested version of the file
    end_pos: int

    @property
    def sizes(self) -> frozenset[int]:
        return frozenset(size for size, _ in self.identities)


def ingested_files(spark: "SparkSession", engine: "DeltaEngine", bronze_path: str,
                   source: str) -> dict[str, IngestedFile]:
    """name -> identities already in bronze and the furthest end position reached, for one source."""
    done: dict[str, tuple[set[tuple[int, str]], int]] = {}
    for r in read_rows(engine, spark, bronze_path, ("binlog_file", "file_size", "file_sha256", "pos"),
                       {"source": source, "op": "file_end"}):
        identities, end = done.setdefault(r["binlog_file"], (set(), 0))
        identities.add((r["file_size"], r["file_sha256"]))
        done[r["binlog_file"]] = (identities, max(end, r["pos"]))
    return {name: IngestedFile(frozenset(h), end) for name, (h, end) in done.items()}


@dataclass
class IngestPlan:
    tasks: list[ChunkTask] = field(default_factory=list)
    files: list[FileIdentity] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)        # already ingested with the same identity

    @property
    def bytes(self) -> int:
        return sum(f.size for f in self.files)


def plan_ingest(landing_dir: str, source: str, done: dict[str, IngestedFile], *,
                created_before: Optional[int] = None, chunk_bytes: int = DEFAULT_CHUNK_BYTES,
                verify_hashes: bool = False) -> IngestPlan:
    """The chunks to decode: new files, and the new tail of grown ones. ``created_before`` (seconds since the
    epoch) leaves out files whose first event is at or after it (they belong to a later interval).

    A file whose name and size match an ingested identity is skipped without hashing it again (binlogs are
    append-only: hashing the whole landing folder on every run would cost O(history)); with
    ``verify_hashes`` every file is hashed and compared."""
    plan = IngestPlan()
    for path in landing_files(landing_dir):
        name = os.path.basename(path)
        if created_before is not None and _first_event_time(path) >= created_before:
            continue
        prev = done.get(name)
        if prev is not None and not verify_hashes and os.path.getsize(path) in prev.sizes:
            plan.skipped.append(name)
            continue
        ident = identify(source, path)
        if prev is not None and (ident.size, ident.sha256) in prev.identities:
            plan.skipped.append(name)
            continue
        start = prev.end_pos if prev is not None else 4
        plan.files.append(ident)
        plan.tasks.extend(plan_chunks(path, ident, start, chunk_bytes))
    return plan


def _first_event_time(path: str) -> int:
    """The header timestamp of the FORMAT_DESCRIPTION_EVENT (bytes 4..8): when the server opened the file."""
    with open(path, "rb") as f:
        head = f.read(8)
    return int.from_bytes(head[4:8], "little") if len(head) == 8 else 0


def decode_tasks(spark: "SparkSession", tasks: list[ChunkTask], tables: TableFilter, applied_gtids: str,
                 run_id: str, registry_rows: Optional[list[dict]] = None) -> "pa.Table":
    """The bronze rows of ``tasks``, decoded on Spark, one task per chunk; each task ships its rows back as
    Arrow IPC bytes (the Delta append is one commit from the driver)."""
    from binlake.lake.resolve import from_ipc

    def decode(task: ChunkTask) -> list[bytes]:
        from binlake.lake.resolve import to_ipc

        provider = None
        if registry_rows:
            from binlake.sdi.registry import SchemaRegistry

            provider = SchemaRegistry.from_rows(registry_rows).schema_provider()
        tf = TransactionFilter(tables, GtidSet.parse(applied_gtids))
        return [to_ipc(to_arrow(BRONZE_COLUMNS_TYPES, decode_chunk(task, tf, run_id, provider)))]

    import pyarrow as pa

    parts = spark.sparkContext.parallelize(tasks, max(1, len(tasks))).flatMap(decode).collect()
    return pa.concat_tables([from_ipc(p) for p in parts])


def summarize(stats: list[str]) -> dict[str, Any]:
    """Totals of the chunk_end/file_end stats (JSON texts) of an ingest."""
    total: dict[str, Any] = {}
    for text in stats:
        for k, v in json.loads(text).items():
            if isinstance(v, bool):
                total[k] = total.get(k, 0) + int(v)
            elif isinstance(v, int) and k != "end_pos":
                total[k] = total.get(k, 0) + v
    return total
