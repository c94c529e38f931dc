"""Full refresh: rebuild a source's silver tables from bronze (e.g. after silver was damaged)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from binlake.lake.table_names import split_table_name
from binlake.vocabulary import SOURCE_ROW

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from binlake.lake.delta import DeltaEngine
    from binlake.lake.layout import LakeLayout


def reset_source(spark: "SparkSession", engine: "DeltaEngine", lake: "LakeLayout", source: str) -> dict[str, Any]:
    """Empty the silver (and SCD2 history) tables the source has applied to and drop its checkpoint rows, so
    the apply that follows rebuilds them from bronze up to its cutoff. The tables keep their schema and their
    Delta history (one new version each); bronze and the schema registry are not touched."""
    rows = engine.read_rows(spark, lake.checkpoints, ("table_name",), {"source": source})
    names = sorted({r["table_name"] for r in rows if r["table_name"] not in (None, SOURCE_ROW)})
    emptied = []
    for name in names:
        db, table = split_table_name(name)
        for path in (lake.silver(db, table), lake.history(db, table)):
            if engine.exists(path):
                engine.delete(path)
                emptied.append(path)
    deleted = engine.delete(lake.checkpoints, {"source": source})
    return {"tables": emptied, "checkpoints_deleted": deleted}
