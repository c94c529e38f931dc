"""The fold in Spark SQL for the common case: a key whose changes are whole row images in binlog order ends as
its last image (or a delete), which the JVM computes with ``max_by`` over the exact order (file, pos, row),
without parsing bronze's JSON in Python. Every other key folds in Python (:mod:`binlake.pipeline.fold`).

A table folds here when it has a primary key that every layout of the batch agrees on (bronze's row key is the
fold key), one column layout in the batch, no key-changing update that needs the old row, and no SCD2 history
is asked for, in a batch of at least :func:`min_changes` changes (a smaller one folds in Python alone, in one
staged pass instead of two). Within such a table a key goes to the Python fold when any of its changes is a half of a
key-changing update or carries partial JSON diffs, when its last change is an UPDATE whose after image lacks
columns of the layout (a MINIMAL image: the state would merge several images), or when silver's state of the key
(its live row, else its tombstone) is not older than its first change (a rerun after a crash: the Python fold
skips the changes already applied one by one). What remains is exactly what :class:`binlake.pipeline.fold._Folder`
computes for such a key: the last change's after image (insert, update) or a delete (its state the primary key's
values, from the fold key: the MERGE matches silver's row by them), the same counters
(``insert``, ``update``, ``delete``) and the zero or invalid dates of the state counted per column as
:func:`binlake.binlog.silver_types.invalid_temporal` counts them.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Callable, Iterable, NamedTuple, Optional

from binlake.lake.silver import column_metas, data_columns
from binlake.lake.table_names import in_tables, row_tag, table_tag
from binlake.pipeline.fold import DELETE
from binlake.vocabulary import CHANGE_OPS, SEQ_COL

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

TEMPORAL_KINDS = ("date", "timestamp", "timestamp_ntz")
# What the fold writes (this SQL fold and the Python one, binlake.lake.apply.fold): final key states, history
# versions, quarantine records, counters.
OUT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("kind", "string"),
    ("db", "string"),
    ("table_name", "string"),
    ("row_key", "string"),
    ("values", "string"),
    ("seq", "bigint"),
    ("op", "string"),
    ("count", "bigint"),
    ("base_count", "bigint"),
    ("commit_ts", "bigint"),
    ("record", "string"),
)


class SqlTable(NamedTuple):
    """A table that folds in SQL (:func:`sql_tables`)."""

    width: Optional[int]  # its layout's columns when an UPDATE's after image may lack some, else None
    temporals: list[tuple[str, str]]  # its temporal columns and kinds when an after image may hold a zero or
    # invalid date, else none
    pk: list[str]  # its primary key's columns, in the order of bronze's row key


SqlTables = dict[tuple[str, str], SqlTable]

MAX_OBSERVED_TABLES = 64  # a fold's counts observed for more tables (more metrics in one generated aggregate):
# count_folded counts them instead

MIN_CHANGES = 250_000
MIN_CHANGES_VAR = "BINLAKE_SQL_FOLD_MIN_CHANGES"


def min_changes() -> int:
    """The fewest changes of a batch that folds in SQL (``$BINLAKE_SQL_FOLD_MIN_CHANGES``, default
    :data:`MIN_CHANGES`). Below it the SQL fold's own staged pass costs more than it saves: a 300,000-change day of
    one table folded in the same time either way, a 10,000-change one 0.8 s quicker in Python alone, and the
    sample's days (4 tables, partial JSON: two staged passes, SQL then Python) 6 s quicker."""
    return int(os.environ.get(MIN_CHANGES_VAR) or MIN_CHANGES)


def sql_tables(info: Any, history: bool, temporal_text: bool) -> SqlTables:
    """(db, table) -> (the columns of its one layout, or None when no UPDATE's after image lacks any; its temporal
    columns with their kinds, or none when no after image holds a zero or invalid date) of the batch's tables
    that fold in SQL (see the module's docstring). What the images do not hold, the scan tells only when the
    bronze writer checked them (:attr:`binlake.lake.apply.scan.TableInfo.maybe_minimal`): the fold then does not
    parse its JSON to ask."""
    if history or info.changes < min_changes():
        return {}
    out = {}
    for t, ti in info.tables.items():
        if ti.pk and ti.keys_exact and not ti.dependent and len(ti.metas) == 1:
            columns = data_columns(column_metas(ti.metas), temporal_text)
            temporals = [(n, k) for n, k in columns if k in TEMPORAL_KINDS] if ti.maybe_invalid_temporal else []
            out[t] = SqlTable(len(columns) if ti.maybe_minimal else None, temporals, list(ti.pk))
    return out


INVALID_TEMPORAL = "invalid_temporal"  # the fold's counter of a column's zero or invalid dates stored as NULL


def invalid_temporal_counter(db: str, table: str, column: str) -> str:
    """The name of a column's ``invalid_temporal`` counter in a ``stats`` row (a JSON object's key, so one
    string: the names joined by NUL, which MySQL names never hold)."""
    return "\x00".join((INVALID_TEMPORAL, db, table, column))


def invalid_temporal_column(counter: str) -> Optional[tuple[str, str, str]]:
    """(db, table, column) of an :func:`invalid_temporal_counter` name, None for another counter."""
    parts = counter.split("\x00")
    return (parts[1], parts[2], parts[3]) if len(parts) == 4 and parts[0] == INVALID_TEMPORAL else None


def _int(text: "Column") -> "Column":
    return text.try_cast("int")


def invalid_temporal(v: "Column", kind: str) -> "Column":
    """Column: a non-NULL bronze text of a ``kind`` column that has no typed value (:func:`_typed_value`), exactly
    where ``binlake.binlog.silver_types._date``/``_datetime`` return None."""
    return v.isNotNull() & _typed_value(v, kind).isNull()


# the renderer's text of a date and of a datetime (native/src/fmt.rs ``date_text``/``datetime_text``) with a
# 4-digit year other than 0: Spark's own cast reads these exactly as ``_date``/``_datetime`` do (fixed offsets)
RENDERED = {
    "date": r"^(?!0000)[0-9]{4}-[0-9]{2}-[0-9]{2}$",
    "datetime": r"^(?!0000)[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?$",
}


def _typed_by_fields(v: "Column", kind: str) -> "Column":
    """Column: a ``kind`` text's typed value read as ``_date``/``_datetime`` read it: fields at fixed offsets read
    as integers, year 1..9999, a real calendar day, hours < 24, minutes and seconds < 60, fraction digits
    right-padded to microseconds; NULL where they return None."""
    from pyspark.sql import functions as F

    y, m, d = _int(F.substring(v, 1, 4)), _int(F.substring(v, 6, 2)), _int(F.substring(v, 9, 2))
    day = F.when(y.between(1, 9999), F.try_make_timestamp_ntz(y, m, d, F.lit(0), F.lit(0), F.lit(0)))
    if kind == "date":
        return day.cast("date")
    h, mi, s = _int(F.substring(v, 12, 2)), _int(F.substring(v, 15, 2)), _int(F.substring(v, 18, 2))
    frac = F.when(F.length(v) > 19, F.substring(v, 21, 6)).otherwise(F.lit(""))
    micros = F.when(frac == "", F.lit(0)).otherwise(_int(F.rpad(frac, 6, "0")))
    valid = day.isNotNull() & h.between(0, 23) & mi.between(0, 59) & s.between(0, 59) & micros.between(0, 999999)
    secs = ((s * 1_000_000 + micros).cast("decimal(16,0)") / F.lit(1_000_000)).cast("decimal(8,6)")
    if kind == "timestamp_ntz":
        return F.when(valid, F.make_timestamp_ntz(y, m, d, h, mi, secs))
    return F.when(valid, F.make_timestamp(y, m, d, h, mi, secs, F.lit("UTC")))


def split_fold(
    records: "DataFrame",
    tables: SqlTables,
    stage: Callable[["DataFrame"], "DataFrame"],
    partitions: int,
    every_table: bool = False,
) -> tuple[Optional["DataFrame"], Optional["DataFrame"], Optional["_FoldObservation"]]:
    """(the fold records the Python fold still takes, the folded rows (``OUT_COLUMNS``) of the keys folded here,
    counters included as one ``stats`` row, the fold's counts observed while staging when it is all here, of at
    most :data:`MAX_OBSERVED_TABLES` tables); ``tables`` from :func:`sql_tables`. ``stage`` materializes the
    per-key aggregate (the apply job writes it to its scratch folder and reads it back): the key states, the
    counters and the keys left to Python all derive from it (whether any key is left, observed while staging
    along with the counts, else counted by a job), and when no key is left to Python the change records are not
    joined to it at all. With ``every_table`` (the records hold no other table) and no key left to Python, the
    Python fold's records are None: the folded rows then derive from the staged aggregate alone."""
    from pyspark.sql import functions as F

    if not tables:
        return records, None, None
    mine = in_tables(tables)
    sq = records.filter(mine)
    change, base, op = ~F.col("base"), F.col("base"), F.col("op")
    # the columns of the tables whose updates may lack some
    width = _per_table((t, F.lit(table.width)) for t, table in tables.items() if table.width is not None)
    keys = ["db", "table_name", "fold_key"]
    # only what the aggregate reads crosses the shuffle: no before image (a deleted key's state is its primary
    # key, which the fold key holds: :func:`_key_values`), and whether a change is odd (a key-change half, partial
    # JSON diffs) as a flag, not its diffs
    slim = sq.select(
        *keys,
        "base",
        "op",
        SEQ_COL,
        "file_seq",
        "pos",
        "row",
        "after",
        ((F.col("split") != "") | F.col("diffs").isNotNull()).alias("odd_change"),
    )
    # partitioned by key first: the aggregate (max_by over strings: a sort-based one) then sorts its input once,
    # in the reducers, instead of sorting every change in the mappers for a partial aggregate that saves little
    # (most keys change once or twice in a batch): about 15% of the fold on a production-size day
    g = (
        slim.repartition(partitions, *keys)
        .groupBy(*keys)
        .agg(
            F.max(F.when(base & (op != DELETE), F.col(SEQ_COL))).alias("live_seq"),
            F.max(F.when(base & (op == DELETE), F.col(SEQ_COL))).alias("dead_seq"),
            F.min(F.when(change, F.col(SEQ_COL))).alias("first_seq"),
            F.max_by(
                F.struct(op.alias("op"), F.col(SEQ_COL).alias("seq"), "after"),
                F.when(change, F.struct("file_seq", "pos", "row")),
            ).alias("last"),
            F.count_if(change & F.col("odd_change")).alias("odd"),
            *[F.count_if(change & (op == o)).alias(f"n_{o}") for o in CHANGE_OPS],
        )
    )
    last_op = F.col("last.op")
    whole = F.lit(True)
    if width is not None:  # (a table of no width: every update's after image is whole)
        whole = (last_op != "update") | width.isNull() | (F.size(F.json_object_keys(F.col("last.after"))) == width)
    base_seq = F.coalesce("live_seq", "dead_seq")
    ok = (
        F.col("first_seq").isNotNull()
        & (F.col("odd") == 0)
        & F.coalesce(whole, F.lit(False))
        & (base_seq.isNull() | (F.col("first_seq") > base_seq))
    )
    g = g.withColumn("ok", ok)
    live = last_op != DELETE
    values = F.when(live, F.col("last.after")).otherwise(_key_values(tables))
    observed = _FoldObservation(tables, live, values) if every_table and len(tables) <= MAX_OBSERVED_TABLES else None
    g = stage(g if observed is None else observed.attach(g))
    left = g.filter(~F.col("ok")).select(*keys)
    python = None if every_table else records.filter(~mine)
    if observed.left() if observed is not None else left.limit(1).count():
        joined = sq.join(left, keys, "left_semi")
        python = joined if python is None else python.unionByName(joined)
        observed = None  # the fold's counts come from the Python fold's rows too

    done = g.filter(F.col("ok"))
    states = done.select(
        F.lit("state").alias("kind"),
        "db",
        "table_name",
        F.col("fold_key").alias("row_key"),
        values.alias("values"),
        F.col("last.seq").alias("seq"),
        last_op.alias("op"),
        F.when(live, 1).otherwise(0).cast("bigint").alias("count"),
        F.when(F.col("live_seq").isNotNull(), 1).otherwise(0).cast("bigint").alias("base_count"),
        F.lit(None).cast("bigint").alias("commit_ts"),
        F.lit(None).cast("string").alias("record"),
    )
    stats = done.agg(
        F.to_json(
            F.create_map(
                *[
                    x
                    for name, agg in _counters(tables, live, F.lit(True))
                    for x in (F.lit(name), F.coalesce(agg, F.lit(0)).cast("bigint"))
                ]
            )
        ).alias("record")
    ).select(
        F.lit("stats").alias("kind"),
        *[F.lit(None).cast(k).alias(c) for c, k in OUT_COLUMNS if c not in ("kind", "record")],
        "record",
    )
    return python, states.unionByName(stats), observed


def _key_values(tables: SqlTables) -> "Column":
    """Column: a deleted key's state, its primary key's columns as a JSON object, from the fold key (bronze's row
    key: the JSON array of those values, :func:`binlake.pipeline.fold.row_key`), each value as it is there (a
    number stays a number, undecodable text its object). Its MERGE matches silver's row by them."""
    from pyspark.sql import functions as F

    members = F.parse_json(F.col("fold_key"))

    def key_object(pk: list[str]) -> "Column":
        return F.to_json(F.struct(*[F.variant_get(members, f"$[{i}]", "variant").alias(n) for i, n in enumerate(pk)]))

    out = _per_table((t, key_object(table.pk)) for t, table in tables.items())
    assert out is not None  # (split_fold is not called without tables)
    return out


def _per_table(values: Iterable[tuple[tuple[str, str], "Column"]]) -> Optional["Column"]:
    """Column: each (db, table)'s value for that table's rows, NULL for another table's; None without any."""
    from pyspark.sql import functions as F

    tag = row_tag()
    out = None
    for (db, t), value in values:
        is_it = tag == table_tag(db, t)
        out = F.when(is_it, value) if out is None else out.when(is_it, value)
    return out


def _counters(tables: SqlTables, live: "Column", rows: "Column") -> list[tuple[str, Any]]:
    """(counter, aggregate) of the ``stats`` row over the per-key aggregate's ``rows``: changes by op, and the zero
    or invalid dates of each temporal column in the live states."""
    from pyspark.sql import functions as F

    tag = row_tag()
    counters: list[tuple[str, Any]] = [(o, F.sum(F.when(rows, F.col(f"n_{o}")))) for o in CHANGE_OPS]
    every_temporal = sorted({name for table in tables.values() for name, _ in table.temporals})
    values = text_members(F.col("last.after"), every_temporal)  # in the plan only if a temporal column reads it
    for (db, t), table in tables.items():
        if not table.temporals:
            continue
        here = rows & live & (tag == table_tag(db, t))
        for name, kind in table.temporals:
            counters.append(
                (invalid_temporal_counter(db, t, name), F.count_if(here & invalid_temporal(values[name], kind)))
            )
    return counters


class _FoldObservation:
    """What :func:`binlake.lake.apply.fold.count_folded` would count of the fold's rows, observed while the per-key
    aggregate is staged (no Spark job reads it again for them). For a fold all in SQL: every state has a primary
    key, so it is a no-op exactly when it deletes a key silver did not hold."""

    def __init__(self, tables: SqlTables, live: "Column", values: "Column") -> None:
        from pyspark.sql import functions as F

        ok = F.col("ok")
        changes = ok & ~(~live & F.col("live_seq").isNull())  # states that change silver
        tag = row_tag()
        self.tables = list(tables)
        self.metrics: list[Any] = [F.count_if(~ok), F.count_if(changes & ~live)]  # left to Python, deleted
        for db, t in self.tables:
            here = changes & (tag == table_tag(db, t))
            self.metrics += [F.count_if(here), F.count_if(here & values.contains(HEX_OBJECT))]
        self.counters = _counters(tables, live, ok)
        self.metrics += [agg for _, agg in self.counters]
        self.observation: Any = None

    def attach(self, g: "DataFrame") -> "DataFrame":
        from pyspark.sql import Observation

        self.observation = Observation("binlake_fold")
        return g.observe(self.observation, *[m.alias(f"m{i}") for i, m in enumerate(self.metrics)])

    def _values(self) -> list[int]:
        got = self.observation.get
        return [got[f"m{i}"] or 0 for i in range(len(self.metrics))]

    def left(self) -> int:
        """The keys the staged aggregate leaves to the Python fold (its count job's, without the job)."""
        return self._values()[0]

    def counts(self) -> dict[str, Any]:
        """``deleted``, ``effective`` and ``odd`` (table -> states), ``stats`` (counter -> n, zeros left out), as
        the staging write observed them."""
        _left, deleted, *rest = self._values()
        n = len(self.tables)
        return {
            "deleted": deleted,
            "effective": {t: rest[2 * i] for i, t in enumerate(self.tables)},
            "odd": {t: rest[2 * i + 1] for i, t in enumerate(self.tables)},
            "stats": {name: v for (name, _), v in zip(self.counters, rest[2 * n :]) if v},
        }


def text_members(json_text: "Column", names: list[str], integers: frozenset[str] = frozenset()) -> "Column":
    """Column: the members ``names`` of a JSON object (bronze's row image) as their text, a struct of strings
    (``values[name]``), except the ``integers`` (columns of an integer type, which bronze holds as JSON integers
    within BIGINT's range) as a ``bigint``: Spark renders a non-string member as text through a JSON generator of
    its own, a fifth of a silver write's time. Parsing into a struct skips the other members and finds a member
    by its field, where a ``map<string,string>`` holds every member and looks each name up through all of its
    keys."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    fields = [StructField(n, LongType() if n in integers else StringType()) for n in names]
    # an option (the default mode) keeps Spark's optimizer from giving each member read its own parser of the
    # whole text (OptimizeCsvJsonExprs prunes a from_json without options to the one field read from it)
    return F.from_json(json_text, StructType(fields), {"mode": "PERMISSIVE"})


def stats_counts(record: str) -> dict[str, int]:
    """A ``stats`` row's counters without the zero ones (the SQL fold states every counter it computes)."""
    return {k: v for k, v in json.loads(record).items() if v}


# --- typed MERGE sources in SQL -----------------------------------------------------------------------------------

INTEGER_KINDS = ("tinyint", "smallint", "int", "bigint")


def _sql_kind(meta: Any, kind: str) -> bool:
    """Whether SQL converts a column's bronze value exactly as :func:`binlake.binlog.silver_types.to_silver` does:
    integers, decimals (their exact text, or an integer for BIGINT UNSIGNED), DATE/DATETIME/TIMESTAMP text, and
    text columns of a character set (a JSON string). Floats, binary, BIT, TIME, JSON, ENUM/SET, vectors: no."""
    from binlake.binlog import constants as C
    from binlake.binlog.silver_types import _CHAR_TYPES

    t, real = meta[1], meta[2]
    if kind in INTEGER_KINDS:
        return t != C.MYSQL_TYPE_BIT
    if kind.startswith("decimal"):
        return True
    if kind in TEMPORAL_KINDS:
        return True
    return kind == "string" and real in _CHAR_TYPES and t != C.MYSQL_TYPE_JSON


def sql_typable(columns: list[tuple[str, str]], metas: dict[str, list]) -> bool:
    """Whether every column of a table converts in SQL (:func:`_sql_kind`)."""
    return all(name in metas and _sql_kind(metas[name], kind) for name, kind in columns)


def _typed_value(v: "Column", kind: str) -> "Column":
    """Column: a bronze text's value of silver type ``kind`` (:func:`binlake.binlog.silver_types.to_silver`'s)."""
    from pyspark.sql import functions as F

    if kind in INTEGER_KINDS or kind.startswith("decimal"):
        return v.try_cast(kind)
    if kind == "string":
        return v
    # the renderer's shapes through Spark's cast (a fifth of the time), any other text field by field
    if kind == "date":
        return F.when(v.rlike(RENDERED["date"]), v.try_cast("date")).otherwise(_typed_by_fields(v, kind))
    cast = v.try_cast("timestamp_ntz") if kind == "timestamp_ntz" else F.concat(v, F.lit("Z")).try_cast("timestamp")
    return F.when(v.rlike(RENDERED["datetime"]), cast).otherwise(_typed_by_fields(v, kind))


HEX_OBJECT = ':{"hex":'  # in bronze's compact JSON only where a value is an object (undecodable text)


def typed_states(rows: "DataFrame", columns: list[tuple[str, str]], python: Optional[Any]) -> "DataFrame":
    """A primary-key table's silver MERGE source from its folded ``state`` rows: the columns converted in SQL
    (:func:`sql_typable` tables), except the rows whose values hold an object (text that did not decode, kept
    as ``{"hex": ...}``), which ``python`` (the Python conversion, a DataFrame -> DataFrame function) converts;
    None when no row holds one (the rows are then read once). The columns and types are
    ``table_columns(columns, True)``."""
    from pyspark.sql import functions as F

    from binlake.vocabulary import OP_COL

    odd = F.col("values").contains(HEX_OBJECT)
    integers = frozenset(n for n, k in columns if k in INTEGER_KINDS)
    values = text_members(F.col("values"), [name for name, _ in columns], integers)
    sql = (rows if python is None else rows.filter(~odd)).select(
        *[_typed_value(values[name], kind).cast(kind).alias(name) for name, kind in columns],
        F.col("seq").alias(SEQ_COL),
        F.col("op").alias(OP_COL),
    )
    return sql if python is None else sql.unionByName(python(rows.filter(odd)))
