"""DDL inside an apply batch: which statements split it (a CREATE of a table silver does not hold does not; a
statement before a table's snapshot seam never applies to it), applying one at its position
(:mod:`binlake.lake.ddl_apply` holds the actions), the tables blocked from apply, and after DDL, how silver
differs from the SDI registry."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Optional

from binlake.lake.apply.batch import TableId
from binlake.lake.checkpoints import write_checkpoints
from binlake.lake.table_names import split_table_name, table_name
from binlake.vocabulary import RESERVED_PREFIX, SEQ_COL, SOURCE_ROW

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from binlake.lake.apply.job import ApplyReport
    from binlake.lake.apply.segment import ApplyContext
    from binlake.lake.delta import DeltaEngine
    from binlake.lake.layout import LakeLayout


def check_against_registry(
    spark: "SparkSession", engine: "DeltaEngine", lake: "LakeLayout", tables: set[TableId], cutoff_us: Optional[int]
) -> dict[str, str]:
    """After DDL: "db.table" -> how the silver table's columns differ from the table's definition in the SDI
    registry at the run's cutoff (where the registry has one), compared as names, case-insensitively (MySQL's
    column names are). An empty dict: every checked table agrees."""
    import datetime as dt

    from binlake.lake.registry import registry_rows
    from binlake.sdi.dd_types import HT_VISIBLE
    from binlake.sdi.registry import SchemaRegistry

    if not tables:
        return {}
    rows = registry_rows(spark, engine, lake)
    if not rows:
        return {}
    registry = SchemaRegistry.from_rows(rows)
    at = (
        dt.datetime.fromtimestamp(cutoff_us / 1e6, dt.timezone.utc)
        if cutoff_us is not None
        else dt.datetime.now(dt.timezone.utc)
    ).replace(tzinfo=None)
    out = {}
    for db, table in sorted(t for t in tables if t[0] and t[1]):
        version = registry.definition_at(db, table, at)
        path = lake.silver(db, table)
        if version is None or not engine.exists(path):
            continue
        sdi = {c.name.lower(): c.name for c in version.table.columns if c.hidden == HT_VISIBLE}
        silver = {n.lower(): n for n in engine.column_names(path) if not n.startswith(RESERVED_PREFIX)}
        if sdi.keys() != silver.keys():
            only_silver = sorted(silver[k] for k in silver.keys() - sdi.keys())
            only_sdi = sorted(sdi[k] for k in sdi.keys() - silver.keys())
            out[f"{db}.{table}"] = (
                f"silver {db}.{table} differs from its SDI definition (version {version.version}) "
                f"after DDL: only in silver {only_silver}, only in the SDI {only_sdi}"
            )
    return out


def _no_op(engine: "DeltaEngine", lake: "LakeLayout", action: Any) -> bool:
    """A CREATE TABLE of a table silver does not hold changes nothing: the batch needs no split there."""
    from binlake.pipeline.ddl import CreateTable

    return (
        isinstance(action, CreateTable)
        and bool(action.db)
        and bool(action.table)
        and not engine.exists(lake.silver(action.db, action.table))
    )


def _before_seam(table: tuple[Any, Any], ddl: dict[str, Any], table_seams: dict[TableId, int]) -> bool:
    """Whether ``table`` was seeded from a snapshot taken after ``ddl``: the snapshot holds the DDL's effect."""
    seam = table_seams.get(table)
    return seam is not None and ddl[SEQ_COL] < seam


def _after_seams(action: Any, ddl: dict[str, Any], table_seams: dict[TableId, int]) -> Any:
    """What of a DDL action applies to tables seeded from snapshots (a statement before a table's seam never
    applies to it): None when it touches only such a table; a DROP DATABASE spares them (``keep``); a RENAME onto
    one only retires the old name (the snapshot holds the table under its new name)."""
    from binlake.pipeline.ddl import DropDatabase, DropTable, RenameTable

    if isinstance(action, DropDatabase):
        keep = frozenset(t for (db, t) in table_seams if db == action.db and _before_seam((db, t), ddl, table_seams))
        return dataclasses.replace(action, keep=keep) if keep else action
    if _before_seam((getattr(action, "db", None), getattr(action, "table", None)), ddl, table_seams):
        return None
    if isinstance(action, RenameTable) and _before_seam(
        (action.new_db or action.db, action.new_table), ddl, table_seams
    ):
        return DropTable(action.db, action.table)
    return action


def _spare_others(ctx: "ApplyContext", action: Any) -> Any:
    """A DROP DATABASE spares the database's tables this source may not touch: those another source owns and
    those ``--include``/``--exclude`` leave out (as a DROP TABLE of one of them is not applied)."""
    from binlake.lake.seed import owners
    from binlake.pipeline.ddl import DropDatabase

    if not isinstance(action, DropDatabase):
        return action
    theirs = {t for (db, t) in owners(ctx.spark, ctx.engine, ctx.lake, ctx.opts.source) if db == action.db}
    left_out = {t for (db, t) in ctx.lake.silver_tables() if db == action.db and not ctx.opts.tables.keeps(db, t)}
    spare = theirs | left_out
    return dataclasses.replace(action, keep=action.keep | spare) if spare - action.keep else action


def read_blocked(spark: "SparkSession", engine: "DeltaEngine", lake: "LakeLayout", source: str) -> dict[TableId, str]:
    """(db, table) -> why the source's changes to it go to quarantine: a DDL binlake can not follow blocked it,
    or another source owns it. Two sources, one table: the table belongs to the first source that applied
    changes to it (its ``meta.checkpoints`` table row); the other sources' changes to it are quarantined (kind
    ``schema``) with the owner named, never merged in an order nobody defined."""
    out = {}
    for r in engine.read_rows(spark, lake.checkpoints, ("source", "table_name", "blocked")):
        if r["table_name"] == SOURCE_ROW or "." not in (r["table_name"] or ""):
            continue
        db, table = split_table_name(r["table_name"])
        if r["source"] == source and r.get("blocked"):
            out[db, table] = r["blocked"]
        elif r["source"] != source and (db, table) not in out:
            out[db, table] = (
                f"{db}.{table} belongs to source {r['source']!r} (the first to load it); changes of "
                f"source {source!r} to it are quarantined: load each table from one source"
            )
    return out


def segment_ddls(
    engine: "DeltaEngine", lake: "LakeLayout", ddls: list[dict[str, Any]], table_seams: dict[TableId, int]
) -> list[tuple[dict[str, Any], list]]:
    """The batch's DDL statements (the scan's ``ddls``) that split it, in binlog order, each with its actions
    that apply (:func:`_no_op`, :func:`_after_seams`)."""
    from binlake.pipeline.ddl import parse_ddl

    parsed = [(d, parse_ddl(d["statement"] or "", d["db"])) for d in sorted(ddls, key=lambda d: d[SEQ_COL])]
    kept = [
        (d, [c for a in actions if not _no_op(engine, lake, a) and (c := _after_seams(a, d, table_seams))])
        for d, actions in parsed
    ]
    return [(d, actions) for d, actions in kept if actions]


def apply_ddl(
    ctx: "ApplyContext", ddl: dict[str, Any], actions: list, blocked: dict[TableId, str], report: "ApplyReport"
) -> dict[TableId, str]:
    """The actions of one DDL statement, at its position (added to ``report``); returns ``blocked`` with the
    tables it blocks (a table binlake can not follow) added, as a new dict."""
    import datetime as dt

    from binlake.lake.ddl_apply import Quarantine, apply_action

    spark, engine, lake, opts = ctx.spark, ctx.engine, ctx.lake, ctx.opts
    blocked = dict(blocked)

    when = dt.datetime.fromtimestamp(ddl["commit_ts"] / 1e6, dt.timezone.utc) if ddl["commit_ts"] else None
    rows = []
    for action in actions:
        action = _spare_others(ctx, action)
        table = (getattr(action, "db", None), getattr(action, "table", None))
        if table in blocked or (table[1] is not None and not opts.tables.keeps(*table)):  # or --exclude'd
            continue
        outcome = apply_action(
            spark,
            engine,
            lake,
            action,
            now=when,
            seq=ddl[SEQ_COL],
            commit_ts=ddl["commit_ts"],
            type_options={"temporal_text": opts.temporal_text},
            statement=ddl["statement"],
        )
        report.ddl.append(f"{type(action).__name__} {table[0]}.{table[1]}")
        renamed = (getattr(action, "new_db", None) or table[0], getattr(action, "new_table", None))
        report.ddl_tables.add(renamed if renamed[1] else table)
        if isinstance(outcome, Quarantine):
            blocked[outcome.db, outcome.table] = outcome.message
            report.blocked[f"{outcome.db}.{outcome.table}"] = outcome.message
            rows.append(
                {
                    "source": opts.source,
                    "table_name": table_name(outcome.db, outcome.table),
                    SEQ_COL: ddl[SEQ_COL],
                    "blocked": outcome.message,
                }
            )
    if rows:
        write_checkpoints(spark, engine, lake.checkpoints, rows)
    return blocked
