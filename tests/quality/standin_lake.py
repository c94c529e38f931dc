"""STAND-IN LAKE for the quality tests, built without binlake's pipeline (not yet committed when this was
written): bronze rows from the generator's binlogs decoded with ``binlake.binlog.iter_row_changes``, silver
tables from the generator's truth files of the last day (the state an exact pipeline must reach), and
``meta.schema_registry`` from the generator's SDI through ``binlake.sdi.registry.SchemaRegistry``. Only the
columns the quality checks read are written. Switch the fixtures to ``binlake run`` once the pipeline lands.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

from binlake.binlog import iter_row_changes
from binlake.quality.layout import LakeLayout
from binlake.quality.rules import silver_columns
from binlake.sdi import dd_types as T
from binlake.sdi.charsets import BINARY_COLLATION_ID
from binlake.sdi.model import Column, Table
from binlake.sdi.registry import REGISTRY_ROW_SCHEMA, BinlogPosition, SchemaRegistry

BRONZE_SCHEMA = ("source string, binlog_file string, file_seq int, pos bigint, `row` int, _binlake_seq bigint, "
                 "db string, table_name string, op string, ingest_run string")
QUARANTINE_SCHEMA = ("ingest_run string, db string, table_name string, _binlake_seq bigint, status string, "
                     "reason string")


def file_sequence(name: str) -> int:
    return int(name.rsplit(".", 1)[1])


def ordering_key(file_seq: int, pos: int, row: int) -> int:
    """DESIGN.md's ordering key (file sequence, position, row) packed as the pipeline packs ``_binlake_seq``."""
    return file_seq << 44 | pos << 12 | min(row, 4095)


def run_of_day(date: str) -> str:
    return f"run-{date}"


def silver_type(col: Column) -> str:
    if col.type in T.INTEGER_TYPES or col.type in (T.YEAR, T.BIT):
        return "decimal(20,0)" if col.type == T.LONGLONG and col.is_unsigned else "bigint"
    if col.type in (T.FLOAT, T.DOUBLE):
        return "double"
    if col.type == T.NEWDECIMAL:
        return f"decimal({col.numeric_precision},{col.numeric_scale})"
    if col.type in T.STRING_TYPES and col.collation_id == BINARY_COLLATION_ID:
        return "binary"
    return "string"


def _value(kind: str, v: Any) -> Any:
    if v is None:
        return None
    if kind.startswith("decimal"):
        return Decimal(str(v))
    if kind == "binary":
        return base64.b64decode(v)
    if kind == "double":
        return float(v)
    if kind == "string" and not isinstance(v, str):
        return str(v)
    return v


def build(spark: Any, generated: Path, lake: Path) -> dict[str, Any]:
    """Write the stand-in lake; returns facts the tests use (``last_run``, tables)."""
    from binlake.lake.delta import engine_for

    engine = engine_for(spark, "rust")
    layout = LakeLayout(str(lake))
    manifest = json.loads((generated / "manifest.json").read_text())
    source = manifest["source"]
    day_of_file: dict[str, str] = {}
    for day in manifest["days"]:
        first, last = file_sequence(day["first_binlog"]), file_sequence(day["last_binlog"])
        for seq in range(first, last + 1):
            day_of_file[f"mysql-bin.{seq:06d}"] = day["date"]

    rows = []
    for path in sorted((generated / "landing" / source).glob("mysql-bin.[0-9]*")):
        seq, run = file_sequence(path.name), run_of_day(day_of_file[path.name])
        for c in iter_row_changes(path):
            rows.append((source, path.name, seq, c.pos, c.row, ordering_key(seq, c.pos, c.row), c.db, c.table,
                         c.op, run))
        end = path.stat().st_size
        rows.append((source, path.name, seq, end, 0, ordering_key(seq, end, 0), None, None, "file_end", run))
    engine.append(layout.bronze, spark.createDataFrame(rows, BRONZE_SCHEMA))

    registry = SchemaRegistry()
    for v in manifest["table_versions"]:
        seen = dt.datetime.fromisoformat(v["commit_time"].rstrip("Z"))
        registry.snapshot([generated / p for p in v["sdi"] if p.endswith(".sdi")], seen,
                          BinlogPosition.of(v["binlog_file"], v["binlog_pos"]))
    reg_schema = ", ".join(f"`{c}` {t}" for c, t, _ in REGISTRY_ROW_SCHEMA)
    reg_rows = registry.to_rows()
    engine.append(layout.meta("schema_registry"),
                  spark.createDataFrame([tuple(r[c] for c, _, _ in REGISTRY_ROW_SCHEMA) for r in reg_rows],
                                        reg_schema))

    last_day = manifest["days"][-1]
    tables: dict[str, Table] = {}
    for db, name in registry.tables():
        table = registry.versions(db, name)[-1].table
        cols = silver_columns(table)
        kinds = [silver_type(c) for c in cols]
        truth = generated / "truth" / f"{db}.{name}" / f"day={last_day['date']}.jsonl"
        data = []
        for line in truth.read_text(encoding="utf-8").splitlines():
            obj = json.loads(line)
            data.append(tuple(_value(k, obj.get(c.name)) for c, k in zip(cols, kinds)) + (0, "insert"))
        schema = ", ".join(f"`{c.name}` {k}" for c, k in zip(cols, kinds)) + ", _binlake_seq bigint, " \
                                                                              "_binlake_op string"
        engine.append(layout.silver(db, name), spark.createDataFrame(data, schema))
        tables[f"{db}.{name}"] = table
    engine.append(layout.meta("quarantine"), spark.createDataFrame([], QUARANTINE_SCHEMA))
    return {"last_run": run_of_day(last_day["date"]), "tables": tables, "source": source}
