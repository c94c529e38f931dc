"""Bronze files' footer scans (``binlake.lake.apply.scan_footer``): what an ingest task records equals what the
apply's scan of the same rows finds, and a batch's scan from footers (rows scanned only for files partly inside
the batch) equals the scan of all its rows, on real generated binlogs written by the ingest's own file writer."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from binlake.binlog.silver_types import to_arrow
from binlake.lake.apply.scan import _scan, scan_frame
from binlake.lake.apply.scan_footer import (
    FOOTER_KEY,
    FooterScan,
    _footer_scan,
    dump,
    load,
    read_footers,
    scan_from_footers,
    scan_rows,
)
from binlake.lake.ingest import BRONZE_COLUMNS_TYPES
from binlake.pipeline.bronze import BRONZE_COLUMNS
from binlake.vocabulary import SEQ_COL
from tests.lake.test_apply_fold import bronze
from tests.lake.test_apply_scan import _scan_state


def with_error_row(rows: list[dict]) -> list[dict]:
    """``rows`` and an undecodable stretch after them (raw bytes that are no UTF-8)."""
    last = rows[-1]
    error = dict.fromkeys(BRONZE_COLUMNS)
    error.update(
        {k: last[k] for k in ("source", "binlog_file", "file_seq", "file_size", "file_sha256", "ingest_run")},
        pos=last["pos"] + 1000,
        row=0,
        trx_pos=last["pos"] + 1000,
        commit_ts=last["commit_ts"],
        op="error",
        event_type=30,
        statement="bad event checksum",
        raw=b"\xff\x00\xfe binlog bytes",
    )
    error[SEQ_COL] = last[SEQ_COL] + 1
    return [*rows, error]


@pytest.mark.parametrize("row_image", ["full", "minimal"])
def test_a_files_footer_scan_is_the_scan_of_its_rows(tmp_path, monkeypatch, row_image) -> None:
    """A workload's bronze rows (key changes, JSON diffs, DDL, layouts, an undecodable stretch) in uneven batches,
    scanned a few batches at a time: the footer's scan, read back from a written file's footer, equals the row
    scan of the same rows."""
    from binlake.lake.apply import scan_footer

    monkeypatch.setattr(scan_footer, "SCAN_ROWS", 1000)
    rows = with_error_row(bronze(tmp_path, row_image))
    table = to_arrow(BRONZE_COLUMNS_TYPES, [tuple(r[c] for c in BRONZE_COLUMNS) for r in rows])
    scan = FooterScan()
    for b in table.to_batches(max_chunksize=777):
        scan.add(b)
    path = tmp_path / "f.parquet"
    writer = pq.ParquetWriter(path, table.schema)
    writer.write_table(table)
    writer.add_key_value_metadata(scan.metadata())
    writer.close()

    got = _footer_scan(pq.read_metadata(path).metadata)
    truth = _scan(iter(pa.Table.from_batches([scan_rows(b) for b in table.to_batches()]).to_pylist()))
    assert got is not None and (got.source, got.low, got.high) == ("s", rows[0][SEQ_COL], rows[-1][SEQ_COL])
    assert got.info.errors and got.info.errors[0]["raw"] == b"\xff\x00\xfe binlog bytes" and got.info.ddls
    assert any(t.links for t in got.info.tables.values())
    assert _scan_state(got.info) == _scan_state(truth)
    assert _scan_state(load(dump(truth))) == _scan_state(truth)
    flags = {t: (ti.maybe_minimal, ti.maybe_invalid_temporal) for t, ti in got.info.tables.items()}
    assert flags == dict.fromkeys(truth.tables, (True, True))  # (no facts given: the images were not checked)


def test_scan_rows_keep_images_only_of_key_changes_and_no_buffer_without_one(tmp_path) -> None:
    """A scan row keeps the after image of a key-changing update only; a batch without one gets an after column
    of NULLs with no data buffer (the footer scan concatenates its batches: an all-NULL column as large as the
    images was most of its time)."""
    from binlake.lake.apply.scan import key_changes

    rows = bronze(tmp_path, "full")
    table = to_arrow(BRONZE_COLUMNS_TYPES, [tuple(r[c] for c in BRONZE_COLUMNS) for r in rows])
    batch = table.combine_chunks().to_batches()[0]
    changed = [bool(v) for v in key_changes(batch).fill_null(False).to_pylist()]
    assert any(changed) and not all(changed)
    kept = scan_rows(batch).column("after").to_pylist()
    assert kept == [a if c else None for a, c in zip(batch.column("after").to_pylist(), changed)]
    plain = batch.filter(pa.array([not c for c in changed]))
    after = scan_rows(plain).column("after")
    assert after.null_count == len(plain) and after.nbytes <= 8 * (len(plain) + 1)


def test_no_footer_scan_for_rows_of_several_sources_or_none() -> None:
    assert FooterScan().metadata() == {}
    scan = FooterScan()
    rows = [{**dict.fromkeys(BRONZE_COLUMNS), "source": s, SEQ_COL: i, "op": "chunk_end"} for i, s in enumerate("ab")]
    for batch in to_arrow(BRONZE_COLUMNS_TYPES, [tuple(r.values()) for r in rows]).to_batches():
        scan.add(batch)
    assert scan.low == 0 and scan.high == 1 and scan.metadata() == {}


# --- a batch's scan from the footers of real bronze files -------------------------------------------------------


@pytest.fixture(scope="module")
def bronze_table(tmp_path_factory, spark) -> tuple[str, list]:
    """A bronze table of many files (chunks of several generated binlogs, compressed transactions, DDL, key
    changes) written and committed as the ingest does; its files' (low, high) seqs in order."""
    from binlake.generate.config import GenerateConfig
    from binlake.generate.run import generate
    from binlake.lake.bronze_files import bronze_delta_schema, write_bronze
    from binlake.lake.delta import engine_for
    from binlake.lake.ingest import BRONZE_PROPERTIES
    from binlake.pipeline.filters import TableFilter
    from binlake.pipeline.identity import identify
    from binlake.pipeline.split import plan_chunks

    out = tmp_path_factory.mktemp("footers")
    config = GenerateConfig(
        seed=11, days=1, scale=0.004, compression_share=0.4, max_binlog_size=80_000, start_date=dt.date(2024, 3, 1)
    )
    generate(out / "gen", config)
    paths = sorted((out / "gen" / "landing" / "shop-primary").glob("mysql-bin.0*"))
    tasks = [t for p in paths for t in plan_chunks(str(p), identify("src", str(p)), 4, 30_000)]
    table = str(out / "bronze")
    written = write_bronze(spark, table, tasks, TableFilter(), "", "run-1")
    engine_for(spark, "rust").append_files(table, written.files, bronze_delta_schema(), properties=BRONZE_PROPERTIES)
    spans = sorted((int(s["minValues"][SEQ_COL]), int(s["maxValues"][SEQ_COL])) for s in _stats(written.files))
    assert len(spans) > 8
    return table, spans


def _stats(files) -> list[dict]:
    import json

    return [json.loads(f.stats) for f in files]


def _batch(spark, table: str, after: int, before):
    from pyspark.sql import functions as F

    from binlake.lake.delta import engine_for

    rows = engine_for(spark, "rust").scan(spark, table).filter(F.col("source") == "src")
    rows = rows.filter(F.col(SEQ_COL) > after)
    return rows if before is None else rows.filter(F.col(SEQ_COL) < before)


def _jobs(spark) -> int:
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup(None))


@pytest.mark.spark
def test_a_batch_scanned_from_footers_equals_the_scan_of_its_rows(spark, bronze_table) -> None:
    """Ranges on file edges (footers only: no Spark job) and inside files (only those files' rows scanned)
    give the scan of every row of the range, layouts resolved from bronze alike."""
    from binlake.lake.apply.scan import bronze_layouts
    from binlake.lake.delta import engine_for

    table, spans = bronze_table
    lookup = bronze_layouts(spark, engine_for(spark, "rust"), table, "src")
    mid = [(lo + hi) // 2 for lo, hi in spans]
    cases = [
        (-1, None, True),  # everything
        (spans[2][1], spans[6][0], True),  # files 3..5, cut on their edges
        (spans[0][1], None, True),  # after the first file
        (mid[1], mid[5], False),  # from inside file 2 to inside file 6
        (-1, mid[3], False),  # up to inside file 4 (a cutoff)
        (mid[4], None, False),  # from inside file 5 (a checkpoint)
        (mid[2], mid[2] + 1, False),  # one row inside a file
    ]
    for after, before, whole in cases:
        batch = _batch(spark, table, after, before)
        footers = read_footers(batch, table, "src")
        assert footers is not None and [(f.low, f.high) for f in footers] == spans
        jobs = _jobs(spark)
        got = scan_from_footers(batch, footers, after, before).resolve_layouts(lookup)
        assert (_jobs(spark) == jobs) == whole, (after, before)
        truth = scan_frame(batch).resolve_layouts(lookup)
        assert got.changes == truth.changes and (truth.changes > 0 or (after, before) == (mid[2], mid[2] + 1))
        assert _scan_state(got) == _scan_state(truth), (after, before)
        # the native core checked the images of the files it wrote (FULL, no zero dates): rows scanned are not
        checked = {(ti.maybe_minimal, ti.maybe_invalid_temporal) for ti in got.tables.values()}
        assert (checked == {(False, False)}) == whole, (after, before)
        assert all(ti.maybe_minimal and ti.maybe_invalid_temporal for ti in truth.tables.values())


@pytest.mark.spark
def test_a_file_without_a_footer_scan_scans_the_whole_batch(spark, bronze_table, tmp_path) -> None:
    """A file rewritten without the footer scan (bronze written before it, or by Spark): no footers, the batch
    is scanned row by row. A file of another source without one is told apart by its Parquet statistics."""
    import shutil

    table, _ = bronze_table
    copy = str(tmp_path / "bronze")
    shutil.copytree(table, copy)
    files = sorted(f for f in os.listdir(copy) if f.endswith(".parquet"))
    path = os.path.join(copy, files[3])
    data = pq.read_table(path)
    assert FOOTER_KEY.encode() in pq.read_metadata(path).metadata
    pq.write_table(data, path)  # no footer scan
    assert read_footers(_batch(spark, copy, -1, None), copy, "src") is None

    other = pa.array(["other"] * data.num_rows, pa.string())
    pq.write_table(data.set_column(data.schema.get_field_index("source"), "source", other), path)
    footers = read_footers(_batch(spark, copy, -1, None), copy, "src")
    assert footers is not None and len(footers) == len(files) - 1


@pytest.mark.spark
def test_footers_of_files_that_overlap_are_not_used(spark, bronze_table, tmp_path) -> None:
    """Two files of one source whose seq ranges overlap (bronze holding a stretch twice): no footers."""
    table, _ = bronze_table
    first = sorted(os.path.join(table, f) for f in os.listdir(table) if f.endswith(".parquet"))[0]
    twice = str(tmp_path / "twice.parquet")
    Path(twice).write_bytes(Path(first).read_bytes())
    assert read_footers(spark.read.parquet(first, twice), table, "src") is None
    assert read_footers(spark.read.parquet(first), table, "src") is not None
