"""Step 4 of apply, the write: typed frames of the folded batch (silver's MERGE source, SCD2 history versions,
tombstones, quarantine records) and the writes in their order: quarantine (insert-only MERGE), the tombstones,
then per table the history and the silver MERGE guarded by ``_binlake_seq`` (the checkpoint is the job's,
:mod:`binlake.lake.apply.job`). A crash between any two commits followed by a rerun converges: a change not
newer than a row's ``_binlake_seq`` is already applied. On the spark engine the tables' MERGEs run
:data:`MERGE_THREADS` at a time (:func:`each_table`): a small table's delta-spark MERGE is a dozen short Spark
jobs with driver work between them, so two of them share two cores."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from binlake.binlog.silver_types import to_arrow
from binlake.lake.apply.batch import TableId
from binlake.lake.apply.fold import FoldCounts, deleted_state, state_no_op
from binlake.lake.apply.scan import BatchInfo
from binlake.lake.apply.segment import ApplyContext, Segment
from binlake.lake.arrow import spark_ddl
from binlake.lake.crash import crash_point
from binlake.lake.fold_sql import sql_typable, typed_states
from binlake.lake.quarantine import QUARANTINE_COLUMNS, quarantine_row, write_quarantine
from binlake.lake.silver import column_metas, data_columns, merge_keys, table_columns
from binlake.pipeline.fold import DELETE
from binlake.vocabulary import COMMIT_TS_COL, COUNT_COL, KEY_COL, OP_COL, SEQ_COL

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

# the tables whose MERGEs run at once on the spark engine (the sample's second day: MERGEs 12.6-13.8 s -> 9.6-10.2 s)
MERGE_THREADS = 2


def _silver_rows(r: dict[str, Any], row: list, has_pk: bool) -> list[tuple]:
    """The MERGE source rows of one folded key: a primary-key row (``_binlake_op = 'delete'`` removes it); for a
    table without one, the equal rows that change: ordinals ``[count, base)`` are deleted, ``[base, count)``
    inserted, and when rows were deleted the remaining ones take the change's ``_binlake_seq`` (so a rerun
    knows the deletion is applied)."""
    seq = r["seq"]
    if has_pk:
        return [tuple(row + [seq, r["op"]])]
    count, base = r["count"] or 0, r["base_count"] or 0
    out = [tuple(row + [seq, DELETE, i]) for i in range(count, base)]
    out += [tuple(row + [seq, "insert", i]) for i in range(base, count)]
    if count < base:
        out += [tuple(row + [seq, "update", i]) for i in range(count)]
    return out


def _typed(columns: list[tuple[str, str]], kind: str, has_pk: bool) -> Any:
    """mapInArrow function: OUT_COLUMNS rows of one table -> its silver MERGE source (``state``) or its SCD2
    history rows (``history``)."""
    from binlake.binlog.silver_types import to_silver

    convert = [(name, to_silver(k)) for name, k in columns]
    history = kind == "history"
    target = (
        table_columns(columns, has_pk)
        if not history
        else [
            *columns,
            (KEY_COL, "string"),
            (SEQ_COL, "bigint"),
            (OP_COL, "string"),
            (COMMIT_TS_COL, "bigint"),
            *([] if has_pk else [(COUNT_COL, "bigint")]),
        ]
    )

    def run(batches: Any) -> Any:
        for batch in batches:
            rows: list[tuple] = []
            for r in batch.to_pylist():
                v = json.loads(r["values"])
                row = [conv(v.get(name)) for name, conv in convert]
                if history:
                    rows.append(
                        tuple(
                            row + [r["row_key"], r["seq"], r["op"], r["commit_ts"]] + ([] if has_pk else [r["count"]])
                        )
                    )
                else:
                    rows += _silver_rows(r, row, has_pk)
            if rows:
                yield from to_arrow(target, rows).to_batches()

    return run, target


def table_frame(
    folded: "DataFrame",
    kind: str,
    table: TableId,
    columns: list[tuple[str, str]],
    has_pk: bool,
    metas: Optional[dict[str, list]] = None,
    odd: bool = True,
) -> "DataFrame":
    """One table's silver MERGE source (``kind="state"``) or SCD2 history rows (``kind="history"``). A primary-key
    table's states whose every column converts in SQL (``metas``: the columns' bronze descriptions;
    :func:`binlake.lake.fold_sql.sql_typable`) are converted there, not in Python; with ``odd`` (some states hold
    text that did not decode, :attr:`~binlake.lake.apply.fold.FoldCounts.odd`) Python converts those states."""
    from pyspark.sql import functions as F

    fn, target = _typed(columns, kind, has_pk)
    rows = folded.filter((F.col("kind") == kind) & (F.col("db") == table[0]) & (F.col("table_name") == table[1]))
    if kind == "state" and has_pk and metas is not None and sql_typable(columns, metas):
        return typed_states(rows, columns, (lambda held: held.mapInArrow(fn, spark_ddl(target))) if odd else None)
    return rows.mapInArrow(fn, spark_ddl(target))


def tombstone_frame(folded: "DataFrame", source: str) -> "DataFrame":
    """The keys the batch deleted (a primary key, or the last of equal rows), for ``meta/tombstones``."""
    from pyspark.sql import functions as F

    return folded.filter(deleted_state()).select(
        F.lit(source).alias("source"), "db", "table_name", "row_key", F.col("seq").alias(SEQ_COL)
    )


def quarantine_frame(folded: "DataFrame", source: str, run_id: str) -> "DataFrame":
    from pyspark.sql import functions as F

    def run(batches: Any) -> Any:
        for batch in batches:
            rows = []
            for r in batch.to_pylist():
                rec = json.loads(r["record"])
                kind = "missing_row" if rec["status"] == "MISSING_ROW" else "json_diff"
                rows.append(
                    quarantine_row(rec, source=source, db=r["db"], table=r["table_name"], kind=kind, run_id=run_id)
                )
            if rows:
                yield from to_arrow(QUARANTINE_COLUMNS, rows).to_batches()

    return folded.filter(F.col("kind") == "quarantine").mapInArrow(run, spark_ddl(QUARANTINE_COLUMNS))


def write_blocked(ctx: ApplyContext, changes: "DataFrame", held: dict[TableId, str]) -> int:
    """Quarantine the changes of blocked tables (kind ``schema``, with why the table is blocked); returns how
    many."""
    source, run_id = ctx.opts.source, ctx.run_id

    def run(batches: Any) -> Any:
        for batch in batches:
            rows = [
                quarantine_row(
                    {
                        SEQ_COL: r[SEQ_COL],
                        "binlog_file": r["binlog_file"],
                        "pos": r["pos"],
                        "row": r["row"],
                        "column_name": "",
                        "status": "BLOCKED",
                        "reason": held[r["db"], r["table_name"]],
                        "document": r["after"] or r["before"],
                        "gtid": r["gtid"],
                    },
                    source=source,
                    db=r["db"],
                    table=r["table_name"],
                    kind="schema",
                    run_id=run_id,
                )
                for r in batch.to_pylist()
            ]
            if rows:
                yield from to_arrow(QUARANTINE_COLUMNS, rows).to_batches()

    frame = changes.mapInArrow(run, spark_ddl(QUARANTINE_COLUMNS))
    count = frame.count()
    if count:
        write_quarantine(ctx.engine, ctx.lake.quarantine, frame)
    return count


def write_quarantined(
    ctx: ApplyContext, folded: "DataFrame", info: BatchInfo, records: dict[TableId, int]
) -> dict[tuple, int]:
    """The fold's quarantine records (``records``: how many per table) and the batch's undecodable stretches,
    in one insert-only MERGE; returns how many the batch quarantined per (db, table) (rows already there from
    an interrupted earlier run included; (None, None) for undecodable stretches)."""
    source, run_id = ctx.opts.source, ctx.run_id
    errors = [
        quarantine_row(
            {
                SEQ_COL: e[SEQ_COL],
                "binlog_file": e["binlog_file"],
                "pos": e["pos"],
                "row": 0,
                "column_name": "",
                "status": "ERROR",
                "reason": e["statement"],
                "raw": e["raw"],
            },
            source=source,
            db=None,
            table=None,
            kind="decode",
            run_id=run_id,
        )
        for e in info.errors
    ]
    per_table: dict[tuple, int] = {t: n for t, n in records.items() if n}
    if errors:
        per_table[None, None] = len(errors)
    if per_table:
        frame = quarantine_frame(folded, source, run_id)
        if errors:
            frame = frame.unionByName(ctx.spark.createDataFrame(to_arrow(QUARANTINE_COLUMNS, errors)))
        write_quarantine(ctx.engine, ctx.lake.quarantine, frame)
    return per_table


def write_folded(ctx: ApplyContext, segment: Segment, folded: "DataFrame", counts: FoldCounts) -> dict[tuple, int]:
    """Write a folded segment, in the module's order (a crash point after each commit); returns how many records
    it quarantined per (db, table) (:func:`write_quarantined`)."""
    engine, lake, opts, info = ctx.engine, ctx.lake, ctx.opts, segment.info
    quarantined = write_quarantined(ctx, folded, info, {t: counts.quarantine[t] for t in info.tables})
    crash_point("after_quarantine")
    changing = folded.filter(~state_no_op(info))
    if counts.deleted:  # before the MERGEs that delete them: a rerun knows what a deleted key had (a key
        # silver did not hold needs none: its MERGE source is empty, a rerun folds it to the same no-op)
        # tombstones and history versions are one row per key by the fold's construction, and new unless a
        # crash came between their MERGE and the checkpoint (then the rerun's MERGE matches and only commits
        # an empty version): ``effective`` skips the checks that cost a Spark job each
        engine.merge(
            lake.tombstones,
            tombstone_frame(changing, opts.source),
            ["db", "table_name", "row_key"],
            SEQ_COL,
            op_col=None,
            effective=True,
        )
        crash_point("after_tombstones")

    def write_table(table: TableId) -> None:
        ti = info.tables[table]
        cols = data_columns(column_metas(ti.metas), opts.temporal_text)
        has_pk = bool(ti.pk)
        if opts.history and counts.history[table]:
            engine.merge(
                lake.history(*table),
                table_frame(folded, "history", table, cols, has_pk),
                [KEY_COL, SEQ_COL],
                SEQ_COL,
                op_col=None,
                effective=True,
            )
            crash_point("after_history")
        if counts.effective[table]:
            keys, null_safe = merge_keys(ti.pk, cols)
            states = table_frame(changing, "state", table, cols, has_pk, column_metas(ti.metas), counts.odd[table] > 0)
            engine.merge(
                lake.silver(*table), states, keys, SEQ_COL, op_col=OP_COL, null_safe_keys=null_safe, effective=True
            )
            lake.record_name(*table)
            crash_point("after_silver")

    each_table(sorted(info.tables), write_table, MERGE_THREADS if engine.name == "spark" else 1)
    return quarantined


def each_table(tables: Sequence[TableId], write: Callable[[TableId], None], threads: int) -> None:
    """``write`` each table, ``threads`` at a time. After a failure (an error, or the test hook's crash) no
    table starts; the writes already running finish (each of their Delta commits is whole or absent), then the
    failure of the first table in order is raised: as after a killed job, a rerun converges."""
    if threads <= 1 or len(tables) <= 1:
        for table in tables:
            write(table)
        return
    stop = threading.Event()  # set by the first failure: no table starts after it

    def guarded(table: TableId) -> None:
        if stop.is_set():
            return
        try:
            write(table)
        except BaseException:
            stop.set()
            raise

    with ThreadPoolExecutor(threads, thread_name_prefix="binlake-merge") as pool:
        futures = [pool.submit(guarded, table) for table in tables]
    for f in futures:
        failure = f.exception()
        if failure is not None:
            raise failure
