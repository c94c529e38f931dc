"""A table without a primary key whose layout changed after the SDI registry's snapshot (its newer version never
reached the registry) still ingests: with full row metadata the TABLE_MAP says there is no key, so the registry is
not asked, and nothing ends the file early (it used to stop with an ``error`` row and lose every later
transaction of the file)."""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from pathlib import Path

from binlake.generate.config import GenerateConfig
from binlake.generate.run import generate
from binlake.pipeline.bronze import OP_INDEX, ChunkTask, decode_chunk
from binlake.pipeline.filters import TransactionFilter
from binlake.pipeline.identity import identify
from binlake.sdi import read_entries, table_schema
from binlake.sdi.binlog_layout import SdiSchemaProvider


def test_a_keyless_table_newer_than_the_registry_decodes_like_without_a_registry(tmp_path: Path) -> None:
    out = tmp_path / "gen"
    generate(out, GenerateConfig(days=3, scale=0.002, ddl=True, start_date=dt.date(2024, 3, 1)))
    manifest = json.loads((out / "manifest.json").read_text())
    v1 = next(v for v in manifest["table_versions"] if v["table"] == "cart_items" and v["version"] == 1)
    stale = SdiSchemaProvider([table_schema(next(e.document() for e in read_entries(out / v1["sdi"][0])).table)])
    name = next(d for d in manifest["ddl"] if "gift" in d["statement"])["binlog_file"]
    path = out / "landing" / manifest["source"] / name
    task = ChunkTask(str(path), identify(manifest["source"], path), 4, None)
    with_stale = decode_chunk(task, TransactionFilter(), "run", stale)
    without = decode_chunk(task, TransactionFilter(), "run", None)
    assert Counter(r[OP_INDEX] for r in with_stale) == Counter(r[OP_INDEX] for r in without)
    assert "error" not in {r[OP_INDEX] for r in with_stale}
