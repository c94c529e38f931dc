"""DDL applied to silver at its binlog position: one function per ``binlake.pipeline.ddl`` action, on either
Delta engine. The apply job splits a batch at each DDL's position and calls these between the segments.

API (each function takes ``(spark, engine, lake, action)``; ``spark`` may be None for the rust engine except
where noted):

    apply_action(spark, engine, lake, action, *, remove_dropped=False, now=None, seq=None, commit_ts=None,
                 type_options=None) -> Applied | Quarantine        dispatch on the action's class
    truncate(...,  seq=None, commit_ts=None) -> Applied    delete every row of silver (one commit); with ``seq``
        and an SCD2 history table, close its open versions (a delete version per live key at ``seq``; Spark)
    drop_table(..., remove=False, now=None) -> Applied    retire ``silver/<db>__<t>`` (and its ``__history``):
        moved to ``<lake>/silver/_retired/<folder>__<UTC yyyymmddThhmmssffffffZ>``, outside the live namespace
        (``LakeLayout.silver_tables`` never lists it); ``remove=True`` deletes the folders instead
    drop_database(..., remove=False, now=None) -> Applied  retire every silver table of the database
    create_table(..., now=None) -> Applied    CREATE TABLE of a name silver still holds (a DROP was missed)
        retires the old table, so the new one starts empty; IF NOT EXISTS keeps an existing table
    rename_table(...) -> Applied    move the table (and its history) to ``lake.silver(new_db, new_table)``;
        ``SilverTableExistsError`` when the target holds rows (an empty target is replaced)
    add_column(..., type_options=None) -> Applied    the column, nullable, with the DEFAULT in existing rows:
        one commit on both engines (a rewrite with the constant column; a NULL default or one that is not a
        constant: a metadata-only add; the note says why rows were not backfilled); plus, on the spark engine,
        one commit enabling the ``timestampNtz`` table feature the first time a timestamp_ntz column arrives
    drop_column(...) / rename_column(...) -> Applied    one overwrite commit with the new schema
    modify_column(..., type_options=None) -> Applied | Quarantine    same silver type: nothing; a safe widening
        (``ddl.widening``): one overwrite commit with the column cast; anything else: ``Quarantine``
    unsupported(...) -> Quarantine
    reserved_column(action) -> Quarantine | None    ADD/CHANGE/RENAME COLUMN to a ``_binlake_*`` name: the table
        is blocked alone (``apply_action`` checks it first), silver unchanged
    retired_folders(lake) -> [((db, table) | None, folder name)]    what ``_retired`` holds
    delta_type(silver_type) / sql_type(delta_type)    Spark SQL type name <-> Delta schema type (JSON)

``Applied.commits`` counts the Delta commits made (0: nothing to do: no silver table yet, a column already
there, ...), so a rerun of the same DDL after a crash is a no-op for the column and table actions. Truncate is
not idempotent against later rows: the apply job must not re-run a DDL its checkpoint covers. Column names
match silver's case-insensitively, as MySQL's do. ``type_options`` are passed to ``types.silver_type`` (e.g.
``{"temporal_text": True}``). Retiring and renaming move folders: the lake root must be a local (or mounted)
file system path.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Union

from binlake.lake.delta.engine import RewriteColumn
from binlake.lake.errors import LakeError
from binlake.lake.layout import HISTORY_SUFFIX, NAME_FILE, LakeLayout, parse_silver_name
from binlake.pipeline import ddl as D
from binlake.vocabulary import COMMIT_TS_COL, COUNT_COL, DELETE_OP, KEY_COL, OP_COL, SEQ_COL

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from binlake.lake.delta.engine import DeltaEngine

RETIRED = "_retired"


class DdlApplyError(LakeError):
    """A DDL action that can not be applied to the lake as it is."""


class SilverTableExistsError(DdlApplyError):
    """RENAME TABLE onto a silver table that holds rows."""


@dataclass(frozen=True)
class Applied:
    action: D.DdlAction
    commits: int  # Delta commits made (0: nothing to change)
    note: str = ""


@dataclass(frozen=True)
class Quarantine:
    """The table's changes from this DDL's position go to quarantine; ``message`` is the run summary's line."""

    action: D.DdlAction
    db: Optional[str]
    table: Optional[str]
    reason: str
    message: str


Outcome = Union[Applied, Quarantine]


def _name(db: Optional[str], table: Optional[str]) -> str:
    return f"{db}.{table}" if db else str(table)


# --- tables --------------------------------------------------------------------------------------------------
def truncate(
    spark: Optional[SparkSession],
    engine: DeltaEngine,
    lake: LakeLayout,
    action: D.Truncate,
    *,
    seq: Optional[int] = None,
    commit_ts: Any = None,
) -> Applied:
    """``TRUNCATE [TABLE] t``: silver holds no row (tombstones included) after one delete commit."""
    path = lake.silver(action.db, action.table)
    commits = 0
    if engine.exists(path):
        before = engine.version(path)
        engine.delete(path)
        commits += engine.version(path) != before
    if seq is not None and spark is not None:
        commits += _close_history(spark, engine, lake.history(action.db, action.table), seq, commit_ts)
    return Applied(action, commits)


def _close_history(spark: SparkSession, engine: DeltaEngine, path: str, seq: int, commit_ts: Any) -> int:
    """Append a delete version at ``seq`` for each key whose latest history version is live (one commit)."""
    if not engine.exists(path):
        return 0
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    df = engine.scan(spark, path)
    if KEY_COL not in df.columns or SEQ_COL not in df.columns:
        return 0
    latest = (
        df.withColumn("__rank", F.row_number().over(Window.partitionBy(KEY_COL).orderBy(F.col(SEQ_COL).desc())))
        .where("__rank = 1")
        .drop("__rank")
    )
    live = F.lit(True)
    if OP_COL in df.columns:
        live = live & ~F.col(OP_COL).eqNullSafe(DELETE_OP)
    if COUNT_COL in df.columns:
        live = live & (F.coalesce(F.col(COUNT_COL), F.lit(1)) > 0)
    closing = latest.where(live).withColumn(SEQ_COL, F.lit(seq).cast(df.schema[SEQ_COL].dataType))
    if OP_COL in df.columns:
        closing = closing.withColumn(OP_COL, F.lit(DELETE_OP))
    if COUNT_COL in df.columns:
        closing = closing.withColumn(COUNT_COL, F.lit(0).cast(df.schema[COUNT_COL].dataType))
    if COMMIT_TS_COL in df.columns:
        closing = closing.withColumn(COMMIT_TS_COL, F.lit(commit_ts).cast(df.schema[COMMIT_TS_COL].dataType))
    if closing.isEmpty():
        return 0
    engine.append(path, closing)
    return 1


def _stamp(now: Optional[_dt.datetime]) -> str:
    now = now or _dt.datetime.now(_dt.timezone.utc)
    return now.astimezone(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")


def _is_empty(spark: Optional[SparkSession], engine: DeltaEngine, path: str) -> bool:
    if spark is not None:
        return engine.scan(spark, path).isEmpty()
    from deltalake import DeltaTable

    return DeltaTable(path).to_pyarrow_dataset().head(1).num_rows == 0


def _retire(
    engine: DeltaEngine, lake: LakeLayout, db: str, table: str, *, remove: bool, now: Optional[_dt.datetime]
) -> int:
    """Move (or delete) the table's silver and history folders; returns how many folders."""
    stamp = _stamp(now)
    moved = 0
    for path in (lake.silver(db, table), lake.history(db, table)):
        folder = Path(_local(path, db, table))
        if not folder.exists():
            continue
        if remove:
            shutil.rmtree(folder)
        else:
            target = Path(lake.path("silver", RETIRED, f"{folder.name}__{stamp}"))
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(folder, target)
        engine.forget(path)
        moved += 1
    return moved


def _local(path: str, db: Optional[str], table: Optional[str]) -> str:
    if "://" in path and not path.startswith("file://"):
        raise DdlApplyError(
            f"DDL on {_name(db, table)}: silver folder {path} is not on a local or mounted file "
            "system, so it can not be moved; run the apply job with a local or mounted lake root"
        )
    return path.removeprefix("file://")


def drop_table(
    spark: Optional[SparkSession],
    engine: DeltaEngine,
    lake: LakeLayout,
    action: D.DropTable,
    *,
    remove: bool = False,
    now: Optional[_dt.datetime] = None,
) -> Applied:
    """``DROP TABLE [IF EXISTS] t``: the silver table (and its history) leave the live namespace; see module doc."""
    moved = _retire(engine, lake, action.db, action.table, remove=remove, now=now)
    return Applied(action, 0, f"{'removed' if remove else 'retired'} {moved} folder(s)" if moved else "no silver table")


def drop_database(
    spark: Optional[SparkSession],
    engine: DeltaEngine,
    lake: LakeLayout,
    action: D.DropDatabase,
    *,
    remove: bool = False,
    now: Optional[_dt.datetime] = None,
) -> Applied:
    """``DROP {DATABASE|SCHEMA} d``: every silver table of ``d`` is retired (or removed), but ``action.keep``."""
    tables = [t for db, t in lake.silver_tables() if db == action.db and t not in action.keep]
    for table in tables:
        _retire(engine, lake, action.db, table, remove=remove, now=now)
    return Applied(action, 0, f"{'removed' if remove else 'retired'} {len(tables)} table(s)")


def create_table(
    spark: Optional[SparkSession],
    engine: DeltaEngine,
    lake: LakeLayout,
    action: D.CreateTable,
    *,
    now: Optional[_dt.datetime] = None,
) -> Applied:
    """``CREATE TABLE t``: silver starts empty (created by the table's first MERGE); an older silver table of
    that name is retired. ``CREATE TABLE IF NOT EXISTS`` of an existing table changes nothing."""
    if not engine.exists(lake.silver(action.db, action.table)):
        return Applied(action, 0)
    if action.if_not_exists:
        return Applied(action, 0, "the table exists (IF NOT EXISTS)")
    _retire(engine, lake, action.db, action.table, remove=False, now=now)
    return Applied(action, 0, "retired the silver table of an earlier table of that name")


def rename_table(
    spark: Optional[SparkSession], engine: DeltaEngine, lake: LakeLayout, action: D.RenameTable
) -> Applied:
    """``RENAME TABLE a TO b`` / ``ALTER TABLE a RENAME [TO|AS] b``: silver (and history) move to the new name;
    nothing remains under the old one."""
    source = lake.silver(action.db, action.table)
    target = lake.silver(action.new_db, action.new_table)
    if not engine.exists(source):
        return Applied(action, 0, "no silver table")
    if engine.exists(target):
        if not _is_empty(spark, engine, target):
            raise SilverTableExistsError(
                f"RENAME TABLE {_name(action.db, action.table)} TO {_name(action.new_db, action.new_table)}: silver "
                f"already holds rows at {target}; retire or remove that table (or run a full refresh), then rerun"
            )
    pairs = [(source, target), (lake.history(action.db, action.table), lake.history(action.new_db, action.new_table))]
    for old, new in pairs:
        old_dir = Path(_local(old, action.db, action.table))
        new_dir = Path(_local(new, action.new_db, action.new_table))
        if new_dir.exists():
            shutil.rmtree(new_dir)
            engine.forget(new)
        if old_dir.exists():
            new_dir.parent.mkdir(parents=True, exist_ok=True)
            os.replace(old_dir, new_dir)
            (new_dir / NAME_FILE).unlink(missing_ok=True)
            engine.forget(old)
            engine.forget(new)
    lake.record_name(action.new_db, action.new_table)
    return Applied(action, 0)


# --- columns -------------------------------------------------------------------------------------------------
_SQL_TO_DELTA = {"bigint": "long", "int": "integer", "smallint": "short", "tinyint": "byte"}
_DELTA_TO_SQL = {v: k for k, v in _SQL_TO_DELTA.items()}


def delta_type(silver_type: str) -> Any:
    """The Delta schema type (JSON) of a silver Spark SQL type name."""
    t = silver_type.replace(" ", "").lower()
    if t.startswith("array<") and t.endswith(">"):
        return {"type": "array", "elementType": delta_type(t[6:-1]), "containsNull": True}
    return _SQL_TO_DELTA.get(t, t)


def sql_type(delta: Any) -> str:
    """The Spark SQL type name of a Delta schema type (JSON)."""
    if isinstance(delta, dict):
        if delta.get("type") == "array":
            return f"array<{sql_type(delta['elementType'])}>"
        return json.dumps(delta)
    return _DELTA_TO_SQL.get(delta, delta)


def _fields(engine: DeltaEngine, path: str) -> list[dict]:
    return engine.table_schema(path)["fields"]


def _find(fields: list[dict], column: str) -> Optional[dict]:
    exact = [f for f in fields if f["name"] == column]
    if exact:
        return exact[0]
    folded = [f for f in fields if f["name"].lower() == column.lower()]
    return folded[0] if folded else None


def _has(engine: DeltaEngine, path: str, column: str) -> bool:
    return _find(_fields(engine, path), column) is not None


def _keep(fields: list[dict]) -> list[RewriteColumn]:
    return [RewriteColumn(f["name"], f["name"]) for f in fields]


def add_column(
    spark: Optional[SparkSession],
    engine: DeltaEngine,
    lake: LakeLayout,
    action: D.AddColumn,
    *,
    type_options: Optional[dict] = None,
) -> Applied:
    """``ALTER TABLE t ADD [COLUMN] c type [DEFAULT x] [FIRST|AFTER y]``: rows that existed get x, as MySQL
    shows them (the column goes last in silver: silver's column order is not MySQL's)."""
    path = lake.silver(action.db, action.table)
    if not engine.exists(path):
        return Applied(action, 0, "no silver table")
    fields = _fields(engine, path)
    if _find(fields, action.column) is not None:
        return Applied(action, 0, "the column exists")
    kind = D.silver_type_of(action.mysql_type_text, **(type_options or {}))
    if kind is None:
        return Applied(action, 0, f"type {action.mysql_type_text} is not known: the column arrives with the rows")
    from pyspark.sql.types import StructField

    if action.generated:
        value: Any = D.NotConstant("a generated column: MySQL computes the existing rows' values")
    else:
        value = D.default_value(action.default_sql, kind, action.mysql_type_text, action.not_null)
    features = engine.enable_type_features(path, [delta_type(kind)])
    if isinstance(value, D.NotConstant) or value is None:
        engine.add_columns(
            path,
            [StructField.fromJson({"name": action.column, "type": delta_type(kind), "nullable": True, "metadata": {}})],
        )
        note = "" if value is None else f"existing rows hold NULL: {value.reason}"
        return Applied(action, features + 1, note)
    engine.rewrite(path, _keep(fields) + [RewriteColumn(action.column, None, delta_type(kind), value)])
    return Applied(action, features + 1)


def drop_column(spark: Optional[SparkSession], engine: DeltaEngine, lake: LakeLayout, action: D.DropColumn) -> Applied:
    """``ALTER TABLE t DROP [COLUMN] c``: silver loses the column (one overwrite commit)."""
    path = lake.silver(action.db, action.table)
    if not engine.exists(path):
        return Applied(action, 0, "no silver table")
    fields = _fields(engine, path)
    gone = _find(fields, action.column)
    if gone is None:
        return Applied(action, 0, "no such column")
    engine.rewrite(path, _keep([f for f in fields if f is not gone]))
    return Applied(action, 1)


def rename_column(
    spark: Optional[SparkSession], engine: DeltaEngine, lake: LakeLayout, action: D.RenameColumn
) -> Applied:
    """``RENAME COLUMN a TO b`` / ``CHANGE a b type``: the column's values stay, under the new name."""
    path = lake.silver(action.db, action.table)
    if not engine.exists(path):
        return Applied(action, 0, "no silver table")
    fields = _fields(engine, path)
    old = _find(fields, action.old)
    if old is None or old["name"] == action.new:
        return Applied(action, 0, "no such column" if old is None else "same name")
    clash = [f for f in fields if f is not old and f["name"].lower() == action.new.lower()]
    if clash:
        raise DdlApplyError(
            f"RENAME COLUMN {action.old} TO {action.new} on {_name(action.db, action.table)}: "
            f"silver already has a column {clash[0]['name']}; run a full refresh of the table"
        )
    engine.rewrite(path, [RewriteColumn(action.new if f is old else f["name"], f["name"]) for f in fields])
    return Applied(action, 1)


def modify_column(
    spark: Optional[SparkSession],
    engine: DeltaEngine,
    lake: LakeLayout,
    action: D.ModifyColumn,
    *,
    type_options: Optional[dict] = None,
    statement: str = "",
) -> Outcome:
    """``MODIFY [COLUMN] c type`` (and the type part of ``CHANGE``): a wider silver type (``ddl.widening``)
    rewrites the table with the column cast (one commit); the same silver type changes nothing; any other type
    change quarantines the table's changes from here."""
    path = lake.silver(action.db, action.table)
    if not engine.exists(path):
        return Applied(action, 0, "no silver table")
    fields = _fields(engine, path)
    col = _find(fields, action.column)
    if col is None:
        return Applied(action, 0, "no such column")
    old = sql_type(col["type"])
    new = D.silver_type_of(action.new_type_text, **(type_options or {}))
    if new is not None and new == old:
        return Applied(action, 0, "same silver type")
    if new is None or not D.widening(old, new):
        reason = (
            f"column {col['name']} changes from silver type {old} to {new or action.new_type_text}, which no "
            "safe widening covers"
        )
        return _quarantine(action, action.db, action.table, reason, statement)
    features = engine.enable_type_features(path, [delta_type(new)])
    engine.rewrite(path, [RewriteColumn(f["name"], f["name"], delta_type(new) if f is col else None) for f in fields])
    return Applied(action, features + 1)


def _quarantine(
    action: D.DdlAction, db: Optional[str], table: Optional[str], reason: str, statement: str
) -> Quarantine:
    shown = " ".join(statement.split())
    shown = shown if len(shown) <= 200 else shown[:197] + "..."
    message = (
        f"{_name(db, table)}: changes from the DDL `{shown}` on go to quarantine: {reason}; the other tables "
        "keep loading; run a full refresh of this table to load it again"
    )
    return Quarantine(action, db, table, reason, message)


def reserved_column(action: D.DdlAction) -> Optional[Quarantine]:
    """ADD/CHANGE/RENAME COLUMN to a name silver keeps for its own columns (``_binlake_*``, any case): nothing
    changes in silver and the table is blocked alone, with the reason a TABLE_MAP column of such a name gets
    (``binlake.lake.silver.reserved_reason``); None for any other action."""
    from binlake.lake.silver import reserved_reason
    from binlake.vocabulary import RESERVED_PREFIX

    name = (
        action.column if isinstance(action, D.AddColumn) else action.new if isinstance(action, D.RenameColumn) else None
    )
    if name is None or not name.lower().startswith(RESERVED_PREFIX):
        return None
    reason = reserved_reason(action.db, action.table, [name])  # type: ignore[attr-defined]
    return Quarantine(action, action.db, action.table, reason, reason)  # type: ignore[attr-defined]


def unsupported(
    spark: Optional[SparkSession], engine: DeltaEngine, lake: LakeLayout, action: D.Unsupported
) -> Quarantine:
    """DDL binlake can not follow (see ``binlake.pipeline.ddl``): the table's changes go to quarantine."""
    return _quarantine(action, action.db, action.table, action.reason, action.statement)


def apply_action(
    spark: Optional[SparkSession],
    engine: DeltaEngine,
    lake: LakeLayout,
    action: D.DdlAction,
    *,
    remove_dropped: bool = False,
    now: Optional[_dt.datetime] = None,
    seq: Optional[int] = None,
    commit_ts: Any = None,
    type_options: Optional[dict] = None,
    statement: str = "",
) -> Outcome:
    """Apply one action (dispatch to the functions above)."""
    reserved = reserved_column(action)
    if reserved is not None:
        return reserved
    if isinstance(action, D.Truncate):
        return truncate(spark, engine, lake, action, seq=seq, commit_ts=commit_ts)
    if isinstance(action, D.DropTable):
        return drop_table(spark, engine, lake, action, remove=remove_dropped, now=now)
    if isinstance(action, D.DropDatabase):
        return drop_database(spark, engine, lake, action, remove=remove_dropped, now=now)
    if isinstance(action, D.CreateTable):
        return create_table(spark, engine, lake, action, now=now)
    if isinstance(action, D.RenameTable):
        return rename_table(spark, engine, lake, action)
    if isinstance(action, D.AddColumn):
        return add_column(spark, engine, lake, action, type_options=type_options)
    if isinstance(action, D.DropColumn):
        return drop_column(spark, engine, lake, action)
    if isinstance(action, D.RenameColumn):
        return rename_column(spark, engine, lake, action)
    if isinstance(action, D.ModifyColumn):
        return modify_column(spark, engine, lake, action, type_options=type_options, statement=statement)
    if isinstance(action, D.Unsupported):
        return unsupported(spark, engine, lake, action)
    raise DdlApplyError(f"DDL action {action!r} has no lake function; this is a binlake bug: report it")


def retired_folders(lake: LakeLayout) -> list[tuple[Optional[tuple[str, str]], str]]:
    """The retired silver folders: ((db, table) when the name tells it, folder name), oldest stamp first per table."""
    base = Path(lake.path("silver", RETIRED))
    if not base.is_dir():
        return []
    out = []
    for d in sorted(base.iterdir()):
        name, _, _ = d.name.rpartition("__")
        out.append((None if name.endswith(HISTORY_SUFFIX) else parse_silver_name(name), d.name))
    return out
