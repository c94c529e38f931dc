"""Bronze files written by the executors (``binlake.lake.bronze_files``) and committed by either Delta engine
(``DeltaEngine.append_files``): the table read back equals the Python bronze writer's rows (the reference,
``binlake.pipeline.bronze.decode_chunk``), every add action's statistics equal what its file holds, the files
of an earlier append are skipped by those statistics, and a task that fails leaves no file behind."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from binlake.binlog.silver_types import to_arrow
from binlake.generate.config import GenerateConfig
from binlake.generate.run import generate
from binlake.lake.arrow import spark_ddl
from binlake.lake.bronze_files import STATS_COLUMNS, bronze_delta_schema, write_bronze, write_chunk_file
from binlake.lake.ingest import BRONZE_COLUMNS_TYPES, BRONZE_PROPERTIES
from binlake.pipeline.bronze import BRONZE_COLUMNS, decode_chunk
from binlake.pipeline.filters import TableFilter, TransactionFilter
from binlake.pipeline.identity import identify
from binlake.pipeline.split import plan_chunks
from binlake.vocabulary import SEQ_COL

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def binlogs(tmp_path_factory) -> list[Path]:
    out = tmp_path_factory.mktemp("gen")
    config = GenerateConfig(
        seed=5, days=1, scale=0.002, compression_share=0.4, max_binlog_size=60_000, start_date=dt.date(2024, 3, 1)
    )
    generate(out, config)
    return sorted((out / "landing" / "shop-primary").glob("mysql-bin.0*"))


def tasks_of(paths: list[Path]) -> list:
    return [t for p in paths for t in plan_chunks(str(p), identify("src", str(p)), 4, 20_000)]


def reference_rows(tasks: list) -> list[tuple]:
    """The Python writer's rows of ``tasks`` (run id ``run-1``), in the bronze columns' order."""
    rows = [r for t in tasks for r in decode_chunk(t, TransactionFilter(), "run-1")]
    return comparable(tuple(r.values()) for r in to_arrow(BRONZE_COLUMNS_TYPES, rows).to_pylist())


def comparable(rows) -> list[tuple]:
    """Rows sorted by their text (values of mixed None and text in one column do not sort)."""
    return sorted((tuple(bytes(v) if isinstance(v, bytearray) else v for v in r) for r in rows), key=repr)


def logged_adds(table_path: str, version: int) -> list[dict]:
    with open(os.path.join(table_path, "_delta_log", f"{version:020d}.json")) as f:
        return [a["add"] for a in map(json.loads, f) if "add" in a]


def test_committed_files_read_back_as_the_python_writer_wrote_them(engine, spark, binlogs, tmp_path) -> None:
    table = str(tmp_path / "bronze")
    first, second = tasks_of(binlogs[:2]), tasks_of(binlogs[2:])
    assert len(first) > 2 and second
    for version, tasks in enumerate((first, second)):
        written = write_bronze(spark, table, tasks, TableFilter(), "", "run-1")
        assert len(written.files) == len(tasks)  # a file per chunk
        assert engine.append_files(table, written.files, bronze_delta_schema(), properties=BRONZE_PROPERTIES) == version
        ends = sorted((e["op"], e["statement"]) for e in written.ends)
        truth = [r for r in reference_rows(tasks) if r[BRONZE_COLUMNS.index("op")] in ("chunk_end", "file_end")]
        assert ends == sorted((r[BRONZE_COLUMNS.index("op")], r[BRONZE_COLUMNS.index("statement")]) for r in truth)

    back = engine.read(spark, table)
    as_spark_wrote = spark.createDataFrame([], spark_ddl(BRONZE_COLUMNS_TYPES)).schema
    assert back.schema == as_spark_wrote
    assert comparable(back.collect()) == reference_rows(first + second)
    from deltalake import DeltaTable

    assert DeltaTable(table).metadata().configuration == BRONZE_PROPERTIES

    for add in logged_adds(table, 0) + logged_adds(table, 1):  # statistics: what each file holds
        held = pq.read_table(os.path.join(table, add["path"]), columns=list(STATS_COLUMNS))
        stats = json.loads(add["stats"])
        assert stats["numRecords"] == held.num_rows and add["size"] == os.path.getsize(os.path.join(table, add["path"]))
        for name in STATS_COLUMNS:
            span = pc.min_max(held.column(name)).as_py()
            assert (stats["minValues"][name], stats["maxValues"][name]) == (span["min"], span["max"]), name
            assert stats["nullCount"][name] == held.column(name).null_count

    # the second append's rows come from files the statistics keep; the first append's files are not read
    bound = max(json.loads(a["stats"])["maxValues"][SEQ_COL] for a in logged_adds(table, 0))
    later = engine.scan(spark, table, above={SEQ_COL: bound})
    assert {os.path.basename(f) for f in later.inputFiles()} == {a["path"] for a in logged_adds(table, 1)}


def test_a_chunk_that_fails_while_written_leaves_no_file(binlogs, tmp_path) -> None:
    task = tasks_of(binlogs[:1])[0]

    def failing():
        from binlake.pipeline.bronze_native import iter_chunk_batches

        yield from iter_chunk_batches(task, TransactionFilter(), "run-1")
        raise OSError("disk full")

    folder = tmp_path / "table"
    folder.mkdir()
    with pytest.raises(OSError, match="disk full"):
        write_chunk_file(failing(), str(folder), 0, "snappy")
    assert list(folder.iterdir()) == []
    written = write_chunk_file(iter([]), str(folder), 1, "zstd")  # no rows: an empty file with its statistics
    assert json.loads(written["stats"])["numRecords"] == 0 and written["ends"] == []
    assert pq.read_table(folder / written["path"]).schema.names == list(BRONZE_COLUMNS)
    assert pa.types.is_string(pq.read_schema(folder / written["path"]).field("after").type)


def test_files_are_not_committed_into_a_table_with_column_mapping(spark, binlogs, tmp_path) -> None:
    """The files name their columns as the schema does; a table whose columns are mapped to physical names
    (binlake never turns that on for bronze) is refused with the reason, and its version does not move."""
    from binlake.lake.delta import engine_for
    from binlake.lake.errors import LakeError

    table = str(tmp_path / "bronze")
    as_spark_wrote = spark.createDataFrame([], spark_ddl(BRONZE_COLUMNS_TYPES))
    as_spark_wrote.write.format("delta").option("delta.columnMapping.mode", "name").save(table)
    written = write_bronze(spark, table, tasks_of(binlogs[:1]), TableFilter(), "", "run-1")
    for name in ("rust", "spark"):
        with pytest.raises(LakeError, match="column mapping"):
            engine_for(spark, name).append_files(table, written.files, bronze_delta_schema())
    assert engine_for(spark, "spark").version(table) == 0
