"""Decoding binlogs into bronze rows without Spark: counts against the generator's own model, chunking at
transaction boundaries, a file that grows, filters, and a corrupt file."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest

from binlake.binlog import read_events
from binlake.generate.config import GenerateConfig
from binlake.generate.run import generate
from binlake.pipeline.bronze import BRONZE_COLUMNS, ChunkTask, decode_chunk, layout_id
from binlake.pipeline.filters import GtidSet, TableFilter, TransactionFilter
from binlake.pipeline.identity import identify, landing_files
from binlake.pipeline.split import TRANSACTION_START_TYPES, plan_chunks
from binlake.vocabulary import CHANGE_OPS, LAYOUT_OP

OP = BRONZE_COLUMNS.index("op")
SEQ = BRONZE_COLUMNS.index("_binlake_seq")
STATEMENT = BRONZE_COLUMNS.index("statement")
TABLE = BRONZE_COLUMNS.index("table_name")


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("gen")
    generate(
        out, GenerateConfig(seed=4, days=1, scale=0.002, start_date=dt.date(2024, 3, 1), max_binlog_size=200 * 1024)
    )
    return out, json.loads((out / "manifest.json").read_text())


def decode(path: Path, start: int = 4, end=None, tf=None) -> list[tuple]:
    task = ChunkTask(str(path), identify("s", path), start, end)
    return decode_chunk(task, tf or TransactionFilter(), "run")


IDENTITY = {BRONZE_COLUMNS.index(c) for c in ("file_size", "file_sha256")}


def raw_changes(rows: list[tuple]) -> list[tuple]:
    return [r for r in rows if r[OP] in CHANGE_OPS]


def changes(rows: list[tuple]) -> list[tuple]:
    """Change rows without the file identity columns (to compare decodes of different identities)."""
    return [tuple(v for i, v in enumerate(r) if i not in IDENTITY) for r in raw_changes(rows)]


def test_every_row_change_of_the_model_reaches_bronze(generated):
    out, manifest = generated
    files = landing_files(out / "landing" / manifest["source"])
    rows = [r for f in files for r in decode(Path(f))]
    assert len(changes(rows)) == manifest["counts"]["row_changes"]
    ends = [r for r in rows if r[OP] == "file_end"]
    assert [json.loads(r[STATEMENT])["end_pos"] for r in ends] == [Path(f).stat().st_size for f in files]
    seqs = [r[SEQ] for r in raw_changes(rows)]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


def test_chunks_start_at_transactions_and_give_the_same_rows(generated):
    out, manifest = generated
    path = Path(landing_files(out / "landing" / manifest["source"])[0])
    tasks = plan_chunks(str(path), identify("s", path), chunk_bytes=20_000)
    assert len(tasks) > 3
    starts = {t.start for t in tasks[1:]}
    with open(path, "rb") as f:
        types = {ev.pos: ev.header.type_code for ev in read_events(f) if ev.payload_pos is None}
    assert all(types[s] in TRANSACTION_START_TYPES for s in starts)
    chunked = [r for t in tasks for r in decode_chunk(t, TransactionFilter(), "run")]
    assert changes(chunked) == changes(decode(path))
    assert [r[OP] for r in chunked].count("chunk_end") == len(tasks) - 1


def test_a_growing_file_is_ingested_once_in_two_parts(generated, tmp_path):
    out, manifest = generated
    path = Path(landing_files(out / "landing" / manifest["source"])[0])
    whole = changes(decode(path))
    partial = tmp_path / path.name
    partial.write_bytes(path.read_bytes()[: path.stat().st_size * 2 // 3])  # the server is still writing it
    first = decode(partial)
    end = json.loads(next(r for r in first if r[OP] == "file_end")[STATEMENT])["end_pos"]
    assert 4 < end <= partial.stat().st_size
    shutil.copy(path, partial)  # it grew to its final size
    rest = decode(partial, start=end)
    assert changes(first) + changes(rest) == whole


def test_filters_drop_tables_and_applied_gtids(generated):
    out, manifest = generated
    path = Path(landing_files(out / "landing" / manifest["source"])[0])
    tf = TransactionFilter(TableFilter(exclude=("shop.audit_log",)))
    rows = raw_changes(decode(path, tf=tf))
    everything = raw_changes(decode(path))
    assert {r[TABLE] for r in rows} == {r[TABLE] for r in everything} - {"audit_log"}
    assert tf.stats.rows_filtered == sum(r[TABLE] == "audit_log" for r in everything)
    gtids = sorted({r[BRONZE_COLUMNS.index("gtid")] for r in everything}, key=lambda g: int(g.rsplit(":", 1)[1]))
    skip = TransactionFilter(applied=GtidSet.parse(",".join(gtids[:5])))
    kept = raw_changes(decode(path, tf=skip))
    assert {r[BRONZE_COLUMNS.index("gtid")] for r in kept} == set(gtids[5:])


def test_a_corrupt_event_ends_the_file_with_an_error_row(generated, tmp_path):
    out, manifest = generated
    path = Path(landing_files(out / "landing" / manifest["source"])[0])
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle] ^= 0xFF  # breaks that event's CRC32
    bad = tmp_path / path.name
    bad.write_bytes(bytes(data))
    rows = decode(bad)
    errors = [r for r in rows if r[OP] == "error"]
    assert len(errors) == 1 and "CRC32" in errors[0][STATEMENT]
    assert errors[0][BRONZE_COLUMNS.index("pos")] <= middle
    good = changes(decode(path))
    assert changes(rows) == good[: len(changes(rows))] and 0 < len(changes(rows)) < len(good)


def test_each_chunk_states_each_table_layout_once_before_its_changes(generated):
    """Column metadata is not repeated per change: a ``layout`` row per (chunk, layout) holds it, before the
    chunk's first change naming it; its column names are the TABLE_MAP's (read apart from the bronze code)."""
    from binlake.binlog.events import TableMapEvent

    out, manifest = generated
    path = Path(landing_files(out / "landing" / manifest["source"])[0])
    with open(path, "rb") as f:
        maps = {
            (ev.body.db, ev.body.table, tuple(ev.body.column_names))
            for ev in read_events(f)
            if isinstance(ev.body, TableMapEvent)
        }
    col = {c: BRONZE_COLUMNS.index(c) for c in ("layout", "columns", "primary_key", "db")}
    tasks = plan_chunks(str(path), identify("s", path), chunk_bytes=20_000)
    assert len(tasks) > 3
    stated_total = 0
    for task in tasks:
        stated: dict[str, tuple] = {}
        for r in decode_chunk(task, TransactionFilter(), "run"):
            if r[OP] == LAYOUT_OP:
                lid = r[col["layout"]]
                assert lid not in stated and lid == layout_id(r[col["columns"]], r[col["primary_key"]])
                stated[lid] = r
                names = tuple(c[0] for c in json.loads(r[col["columns"]]))
                assert (r[col["db"]], r[TABLE], names) in maps
            elif r[OP] in CHANGE_OPS:
                assert r[col["columns"]] is None and r[col["primary_key"]] is None
                layout = stated[r[col["layout"]]]  # stated earlier in this chunk
                assert (layout[col["db"]], layout[TABLE]) == (r[col["db"]], r[TABLE]) and layout[SEQ] <= r[SEQ]
            else:
                assert r[col["layout"]] is None
        stated_total += len(stated)
    assert stated_total < len(changes(decode(path))) / 5
