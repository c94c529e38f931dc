"""The DataFrames the pipeline suites check, derived from the lake's tables (pure ``DataFrame -> DataFrame``).

Columns used (DESIGN.md, ``binlake.pipeline.bronze.BRONZE_SCHEMA``): bronze ``source, binlog_file, file_seq,
pos, row, _binlake_seq, db, table_name, op, ingest_run``; silver holds live rows (lakes written before that may
still hold ``_binlake_op = 'delete'`` tombstones and ``_binlake_count`` multiplicities, which the functions
here still honour); quarantine rows of a run carry
``run_id`` (or ``ingest_run``); ``meta.checkpoints`` ``source, table_name, _binlake_seq``.

A *gap* in bronze: bronze keeps, per rows event, the event's offset ``pos`` and the index ``row`` of each row
within it (counting on across the inner events of a TRANSACTION_PAYLOAD, which share the payload's offset).
Offsets are byte positions and say nothing about the events between them, but inside one event the indices
are exactly ``0 .. n-1``. So a gap inside a file is a rows event of that file whose row indices are not
``0 .. max``: ``missing_rows = max(row) + 1 - count(distinct row)`` is above 0 (a repeated index is not a gap:
the ordering-key uniqueness check reports it).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Iterable, Optional

from binlake.lake.table_names import split_table_name
from binlake.sdi.errors import SdiError
from binlake.sdi.model import parse_sdi
from binlake.vocabulary import CHANGE_OPS, COUNT_COL, DELETE_OP, OP_COL, SEQ_COL, SOURCE_ROW

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

RUN_COLUMNS = ("ingest_run", "run_id")


def bronze_changes(bronze: "DataFrame") -> "DataFrame":
    """Bronze's row changes and DDL rows (not the bookkeeping rows ``layout``/``chunk_end``/``file_end``/``error``)."""
    from pyspark.sql import functions as F

    return bronze.where(F.col("op").isin(*CHANGE_OPS, "ddl"))


def row_sequence(bronze: "DataFrame") -> "DataFrame":
    """One row per rows event: ``source, binlog_file, pos, rows, missing_rows`` (see the module docstring)."""
    from pyspark.sql import functions as F

    events = bronze.where(F.col("op").isin(*CHANGE_OPS)).groupBy("source", "binlog_file", "pos")
    return events.agg(
        F.count(F.lit(1)).alias("rows"), (F.max("row") + 1 - F.countDistinct("row")).alias("missing_rows")
    )


def run_rows(df: "DataFrame", run_id: str) -> "DataFrame":
    """The rows ``df`` holds for ``run_id`` (by its ``ingest_run`` or ``run_id`` column; all rows without one)."""
    from pyspark.sql import functions as F

    col = next((c for c in RUN_COLUMNS if c in df.columns), None)
    return df if col is None else df.where(F.col(col) == run_id)


def op_counts(bronze_run: "DataFrame") -> "DataFrame":
    """``op, rows``: bronze rows by operation."""
    from pyspark.sql import functions as F

    return bronze_run.groupBy("op").agg(F.count(F.lit(1)).alias("rows"))


def live_rows(silver: "DataFrame") -> "DataFrame":
    """A silver table's current rows: tombstones (``_binlake_op = 'delete'``, or a count of 0) left out."""
    from pyspark.sql import functions as F

    out = silver
    if OP_COL in silver.columns:
        out = out.where(F.col(OP_COL).isNull() | (F.col(OP_COL) != DELETE_OP))
    if COUNT_COL in silver.columns:
        out = out.where(F.coalesce(F.col(COUNT_COL), F.lit(1)) > 0)
    return out


def live_counts(tables: dict[Any, "DataFrame"]) -> dict[Any, int]:
    """Rows each silver table stands for (multiplicities of tables without a primary key summed), counted in one
    Spark job over all of them."""
    from functools import reduce

    from pyspark.sql import functions as F

    if not tables:
        return {}
    keys = list(tables)
    parts = [
        live_rows(frame).select(
            F.lit(i).alias("t"),
            (F.coalesce(F.col(COUNT_COL), F.lit(1)) if COUNT_COL in frame.columns else F.lit(1))
            .cast("long")
            .alias("n"),
        )
        for i, frame in enumerate(tables.values())
    ]
    totals: dict[int, Any] = dict(reduce(lambda a, b: a.unionAll(b), parts).groupBy("t").agg(F.sum("n")).collect())
    return {key: int(totals.get(i) or 0) for i, key in enumerate(keys)}


def applied(bronze: "DataFrame", checkpoints: Optional["DataFrame"]) -> "DataFrame":
    """Bronze rows already applied to silver: per source, ``_binlake_seq`` up to the source checkpoint's
    (``meta.checkpoints`` row ``table_name = '*'``). Without checkpoints every row counts as applied."""
    from pyspark.sql import functions as F

    if checkpoints is None:
        return bronze
    upto = checkpoints.where(F.col("table_name") == SOURCE_ROW).select("source", F.col(SEQ_COL).alias("_applied_seq"))
    return (
        bronze.join(upto, "source", "left")
        .where(F.col("_applied_seq").isNotNull() & (F.col(SEQ_COL) <= F.col("_applied_seq")))
        .drop("_applied_seq")
    )


def reconciliation(
    spark: "SparkSession", bronze: "DataFrame", silver_counts: dict[tuple[str, str], int]
) -> "DataFrame":
    """One row per silver table: ``db, table_name, inserts, deletes, expected_rows, silver_rows, difference``.

    Every insert adds a row and every delete removes one; an update (also one that changes the primary key:
    the old key goes, the new one comes) leaves the count as it was. So once a run is applied, each table's
    live rows equal its inserts minus deletes over all runs so far; per run, the change of the count equals
    that run's inserts minus deletes. ``bronze``: the applied rows (:func:`applied`)."""
    from pyspark.sql import functions as F

    net = (
        bronze.where(F.col("op").isin("insert", "delete"))
        .groupBy("db", "table_name")
        .agg(
            F.sum(F.when(F.col("op") == "insert", 1).otherwise(0)).alias("inserts"),
            F.sum(F.when(F.col("op") == "delete", 1).otherwise(0)).alias("deletes"),
        )
        .collect()
    )
    by_table = {(r["db"], r["table_name"]): (int(r["inserts"]), int(r["deletes"])) for r in net}
    rows = []
    for (db, table), actual in sorted(silver_counts.items()):
        ins, dels = by_table.get((db, table), (0, 0))
        rows.append((db, table, ins, dels, ins - dels, actual, actual - (ins - dels)))
    return spark.createDataFrame(
        rows,
        "db string, table_name string, inserts long, deletes long, "
        "expected_rows long, silver_rows long, difference long",
    )


def quarantine_share(spark: "SparkSession", run_id: str, changes: int, quarantined: int) -> "DataFrame":
    """One row: ``run_id, changes, quarantined, quarantined_share`` (share 0 when there were no changes)."""
    share = quarantined / changes if changes else (1.0 if quarantined else 0.0)
    return spark.createDataFrame(
        [(run_id, changes, quarantined, float(share))],
        "run_id string, changes long, quarantined long, quarantined_share double",
    )


def registry_completeness(spark: "SparkSession", rows: Iterable[dict[str, Any]]) -> "DataFrame":
    """One row per ``meta.schema_registry`` version with its SDI's FR-03 header members (NULL when absent),
    whether the SDI parses with every required member, and whether ``column_count`` matches the SDI."""
    out = []
    for r in rows:
        header: dict[str, Any] = {}
        parses, columns = False, None
        try:
            raw = json.loads(r.get("sdi_json") or "null")
        except ValueError:
            raw = None
        if isinstance(raw, dict):
            header = raw
            try:
                table = parse_sdi(r["sdi_json"], f"{r.get('db')}.{r.get('table_name')} v{r.get('version')}").table
                parses, columns = table is not None, len(table.columns) if table is not None else None
            except SdiError:
                parses = False
        obj = header.get("dd_object") if isinstance(header.get("dd_object"), dict) else {}
        out.append(
            (
                r.get("db"),
                r.get("table_name"),
                r.get("version"),
                _int(header.get("mysqld_version_id")),
                _int(header.get("dd_version")),
                _int(header.get("sdi_version")),
                header.get("dd_object_type"),
                obj.get("engine") or None,
                parses,
                columns is not None and columns == r.get("column_count"),
                r.get("origin") or None,
            )
        )
    return spark.createDataFrame(
        out,
        "db string, table_name string, version int, mysqld_version_id long, "
        "dd_version long, sdi_version long, dd_object_type string, engine string, "
        "sdi_parses boolean, column_count_matches boolean, origin string",
    )


def _int(v: Any) -> Optional[int]:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def invalid_temporals(spark: "SparkSession", checkpoints: "DataFrame | None", run_id: str) -> "DataFrame":
    """One row per silver table and typed temporal column with zero or invalid dates the run stored as NULL:
    ``db, table_name, column_name, nulled`` (from the run's ``meta.checkpoints`` table rows)."""
    rows = []
    if checkpoints is not None and "invalid_temporals" in checkpoints.columns:
        from pyspark.sql import functions as F

        for r in (
            checkpoints.where((F.col("run_id") == run_id) & F.col("invalid_temporals").isNotNull())
            .select("table_name", "invalid_temporals")
            .collect()
        ):
            db, table = split_table_name(r["table_name"])
            rows += [(db, table, col, int(n)) for col, n in sorted(json.loads(r["invalid_temporals"]).items())]
    return spark.createDataFrame(rows, "db string, table_name string, column_name string, nulled long")
