"""The snapshot_sdi job: table definitions from SDI -> ``meta.schema_registry`` (see binlake.sdi.registry)."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any, Sequence

from binlake.binlog.silver_types import to_arrow

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from binlake.lake.delta import DeltaEngine
    from binlake.lake.layout import LakeLayout


def snapshot_sdi_job(
    spark: "SparkSession", engine: "DeltaEngine", lake: "LakeLayout", sdi_paths: Sequence[str], seen_at: dt.datetime
) -> int:
    """Load SDI (.ibd/.sdi/ibd2sdi files or folders) into ``meta.schema_registry``; returns new versions.

    Only definitions whose fingerprint the registry does not hold yet are observed (a folder may hold several
    versions of a table, e.g. the generator's ``sdi/<db>/<table>/v<N>/``, so "seen again" is not meaningful
    here), and the table is rewritten only when a new version appears: rerunning changes nothing.

    The snapshot is taken as of ``seen_at`` (a run's cutoff): a definition whose SDI ``last_altered`` (UTC,
    ``YYYYMMDDHHMMSS``) is later did not exist yet then, so it waits for the run whose cutoff reaches it."""
    from binlake.sdi.canonical import fingerprint
    from binlake.sdi.readers import iter_sdi_files, read_entries
    from binlake.sdi.registry import REGISTRY_ROW_SCHEMA, SchemaRegistry

    as_of = int(seen_at.strftime("%Y%m%d%H%M%S"))
    rows = registry_rows(spark, engine, lake)
    registry = SchemaRegistry.from_rows(rows)
    known = {r["fingerprint"] for r in rows}
    added = 0
    for path in iter_sdi_files(sdi_paths):
        for entry in read_entries(path):
            doc = entry.document()
            if doc.table is None or fingerprint(doc.table) in known or doc.table.last_altered > as_of:
                continue
            known.add(fingerprint(doc.table))
            added += registry.observe(doc, seen_at, None, str(path))
    if added:
        cols = [(n, t) for n, t, _ in REGISTRY_ROW_SCHEMA]
        data = [tuple(r[n] for n, _ in cols) for r in registry.to_rows()]
        engine.overwrite(lake.schema_registry, engine.frame(spark, to_arrow(cols, data)))
    return added


def registry_rows(spark: "SparkSession", engine: "DeltaEngine", lake: "LakeLayout") -> list[dict[str, Any]]:
    """Every registry row, on the driver (one row per table definition version: small)."""
    from binlake.sdi.registry import REGISTRY_ROW_SCHEMA

    rows = engine.read_rows(spark, lake.schema_registry, [n for n, _, _ in REGISTRY_ROW_SCHEMA])
    return [{k: _naive_utc(v) for k, v in r.items()} for r in rows]


def _naive_utc(value: Any) -> Any:
    """The registry model keeps naive UTC datetimes; Delta timestamps come back UTC-aware."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value
