"""Bronze appends written by the executors themselves: each ingest task writes its chunk's bronze rows
(:func:`binlake.pipeline.bronze_native.iter_chunk_batches`) as one Parquet file in the bronze table's folder
with pyarrow, its footer holding the file's scan for the apply (:mod:`binlake.lake.apply.scan_footer`), and
returns the file's Delta ``add`` action (its size and the statistics of the columns bronze is skipped by) with
the chunk's end rows; the driver commits the run's files in one Delta commit
(:meth:`binlake.lake.delta.DeltaEngine.append_files`, delta-spark's transaction on the spark engine).

Spark's own writer cost more than the decode: every Arrow batch became JVM rows, which parquet-mr then encoded
again. A task that fails leaves at most a file no commit names (``binlake maintain``'s vacuum removes it); a
task retried writes a new file, and only the successful attempt's action reaches the driver.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Optional, Sequence

from binlake.lake.apply.scan_footer import FooterScan
from binlake.vocabulary import END_OPS, ERROR_OP, SEQ_COL

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

    from binlake.pipeline.bronze import ChunkTask
    from binlake.pipeline.bronze_native import ImageFacts
    from binlake.pipeline.filters import TableFilter

# The columns Delta keeps per-file statistics of (delta.dataSkippingStatsColumns): bronze's readers skip files by
# the source, its order and commit times; statistics of the images, layouts and statements would cost their copy.
STATS_COLUMNS = ("source", "file_seq", SEQ_COL, "commit_ts")
# Parquet row-group statistics (Spark's row-group skipping) of every column but the large text and bytes.
LARGE_COLUMNS = frozenset(
    ("before", "after", "diffs", "columns", "primary_key", "key_before", "key_after", "statement", "raw")
)
ROW_GROUP_BYTES = 64 << 20  # Arrow bytes gathered before a Parquet row group is written (bounded task memory)
CODECS = {"snappy": "snappy", "zstd": "zstd", "gzip": "gzip", "none": "none", "uncompressed": "none"}


@dataclass(frozen=True)
class DataFile:
    """A Parquet file written in a table's folder, as its Delta ``add`` action names it."""

    path: str  # relative to the table's folder
    size: int
    modification_time: int  # milliseconds since the epoch
    stats: str  # Delta statistics JSON: numRecords, minValues, maxValues, nullCount

    def add_action(self) -> dict:
        return {
            "path": self.path,
            "partitionValues": {},
            "size": self.size,
            "modificationTime": self.modification_time,
            "dataChange": True,
            "stats": self.stats,
        }


@dataclass(frozen=True)
class WrittenBronze:
    """What the tasks of one bronze append wrote: the files (not committed yet) and their chunks' end rows
    (``op``, ``statement``, ``seq``: chunk_end/file_end with their counters, error with its reason)."""

    files: list[DataFile]
    ends: list[dict]
    created: list[str]  # the folders the write made, outermost first

    def first_error(self) -> Optional[str]:
        """The reason of the first undecodable stretch in binlog order, if any."""
        errors = [e for e in self.ends if e["op"] == ERROR_OP]
        return min(errors, key=lambda e: e["seq"])["statement"] if errors else None

    def remove(self, folder: str) -> None:
        """Delete the files, and the folders the write made when they are empty (an append that will not be
        committed)."""
        for f in self.files:
            try:
                os.remove(os.path.join(folder, f.path))
            except FileNotFoundError:
                pass
        for made in reversed(self.created):
            try:
                os.rmdir(made)
            except OSError:  # not empty (a task's file, or someone's): kept
                break


class _Stats:
    """Delta statistics of :data:`STATS_COLUMNS` over the batches of one file."""

    def __init__(self) -> None:
        self.rows = 0
        self.low: dict[str, Any] = {}
        self.high: dict[str, Any] = {}
        self.nulls = dict.fromkeys(STATS_COLUMNS, 0)

    def add(self, batch: "pa.RecordBatch") -> None:
        import pyarrow.compute as pc

        self.rows += batch.num_rows
        for name in STATS_COLUMNS:
            column = batch.column(name)
            self.nulls[name] += column.null_count
            if column.null_count == len(column):
                continue
            span = pc.min_max(column).as_py()
            low, high = span["min"], span["max"]
            self.low[name] = low if name not in self.low else min(self.low[name], low)
            self.high[name] = high if name not in self.high else max(self.high[name], high)

    def json(self) -> str:
        return json.dumps(
            {"numRecords": self.rows, "minValues": self.low, "maxValues": self.high, "nullCount": self.nulls},
            separators=(",", ":"),
        )


def bronze_arrow_schema() -> "pa.Schema":
    from binlake.binlog.silver_types import arrow_schema
    from binlake.pipeline.bronze_native import COLUMNS

    return arrow_schema(COLUMNS)


def bronze_delta_schema() -> dict:
    """Bronze's Delta schema (Delta/Spark JSON; every column nullable, as Spark's writer made it)."""
    from deltalake import Schema

    return json.loads(Schema.from_arrow(bronze_arrow_schema()).to_json())


def files_arrow_schema() -> "pa.Schema":
    """What a bronze task returns: one row per file it wrote (:func:`write_chunk_file`)."""
    import pyarrow as pa

    end = pa.struct([("op", pa.string()), ("statement", pa.string()), ("seq", pa.int64())])
    return pa.schema(
        [
            ("path", pa.string()),
            ("size", pa.int64()),
            ("modification_time", pa.int64()),
            ("stats", pa.string()),
            ("ends", pa.list_(end)),
        ]
    )


def write_chunk_file(
    batches: Iterator["pa.RecordBatch"], folder: str, index: int, codec: str, facts: Optional["ImageFacts"] = None
) -> dict:
    """Write a chunk's bronze batches as one Parquet file in ``folder``; its ``add`` fields and end rows (one
    row of :func:`files_arrow_schema`). ``facts``: what the writer of the batches saw of their images, for the
    footer scan. A failure removes the partial file."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    schema = bronze_arrow_schema()
    name = f"part-{index:05d}-{uuid.uuid4()}-c000.{codec}.parquet"
    path = os.path.join(folder, name)
    stats, ends, scan = _Stats(), list[dict](), FooterScan()
    pending: list[pa.RecordBatch] = []
    pending_bytes = 0
    end_ops = pa.array([*END_OPS, ERROR_OP])
    writer = pq.ParquetWriter(
        path,
        schema,
        compression=codec,
        write_statistics=[n for n in schema.names if n not in LARGE_COLUMNS],
    )
    try:
        for batch in batches:
            if batch.schema != schema:
                batch = batch.cast(schema)
            stats.add(batch)
            scan.add(batch)
            marked = batch.filter(pc.is_in(batch.column("op"), end_ops))
            ends.extend(
                {"op": r["op"], "statement": r["statement"], "seq": r[SEQ_COL]}
                for r in marked.select(["op", "statement", SEQ_COL]).to_pylist()
            )
            pending.append(batch)
            pending_bytes += batch.nbytes
            if pending_bytes >= ROW_GROUP_BYTES:
                writer.write_table(pa.Table.from_batches(pending), row_group_size=1 << 62)
                pending, pending_bytes = [], 0
        if pending:
            writer.write_table(pa.Table.from_batches(pending), row_group_size=1 << 62)
        writer.add_key_value_metadata(scan.metadata(facts))
        writer.close()
    except BaseException:
        writer.close()
        os.remove(path)
        raise
    info = os.stat(path)
    return {
        "path": name,
        "size": info.st_size,
        "modification_time": info.st_mtime_ns // 1_000_000,
        "stats": stats.json(),
        "ends": ends,
    }


def write_bronze(
    spark: "SparkSession",
    folder: str,
    tasks: Sequence["ChunkTask"],
    tables: "TableFilter",
    applied_gtids: str,
    run_id: str,
    registry: Optional[list[dict]] = None,
) -> WrittenBronze:
    """Have the executors decode ``tasks`` (one Spark task per chunk) and write each chunk's bronze rows as a
    Parquet file in ``folder``, the bronze table's; nothing is committed. Only the files' actions and the chunks'
    end rows reach the driver."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import from_arrow_schema

    from binlake.pipeline.bronze_native import ImageFacts, iter_chunk_batches
    from binlake.pipeline.filters import GtidSet, TransactionFilter

    codec = CODECS.get((spark.conf.get("spark.sql.parquet.compression.codec", "snappy") or "").lower(), "snappy")
    created = _missing_folders(folder)
    os.makedirs(folder, exist_ok=True)
    tasks = list(tasks)
    out_schema = files_arrow_schema()

    def write(batches: Any) -> Any:
        provider = None
        if registry:
            from binlake.sdi.registry import SchemaRegistry

            provider = SchemaRegistry.from_rows(registry).schema_provider()
        for batch in batches:
            for index in batch.column(0).to_pylist():
                tf = TransactionFilter(tables, GtidSet.parse(applied_gtids))
                facts = ImageFacts()
                rows = iter_chunk_batches(tasks[index], tf, run_id, provider, facts=facts)
                yield pa.RecordBatch.from_pylist([write_chunk_file(rows, folder, index, codec, facts)], out_schema)

    n = len(tasks)
    out = spark.range(n, numPartitions=max(1, n)).mapInArrow(write, from_arrow_schema(out_schema)).collect()
    files = [DataFile(r["path"], r["size"], r["modification_time"], r["stats"]) for r in out]
    return WrittenBronze(files, [e.asDict() for r in out for e in r["ends"]], created)


def _missing_folders(folder: str) -> list[str]:
    """The folders ``os.makedirs(folder)`` would make, outermost first."""
    missing: list[str] = []
    path = os.path.abspath(folder)
    while not os.path.exists(path):
        missing.insert(0, path)
        path = os.path.dirname(path)
    return missing
