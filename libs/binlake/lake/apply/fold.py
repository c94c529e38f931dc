"""Step 3 of apply, the fold: the fold records (:mod:`binlake.lake.apply.records`,
:mod:`binlake.lake.apply.silver_keys`) spread over partitions by (table, key), sorted by the exact binlog order
inside each group and folded one group at a time by :mod:`binlake.pipeline.fold` (partial JSON diffs resolved
against the key's current document); most keys fold in SQL instead (:mod:`binlake.lake.fold_sql`). The folded
batch is staged once as Parquet and counted (:class:`FoldCounts`) while it is written."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from binlake.binlog.silver_types import invalid_temporal, to_arrow
from binlake.lake.apply.batch import TableId
from binlake.lake.apply.records import (
    RECORD_COLUMNS,
    change_records,
    identity_temporals,
    linked_keys_grouped,
    normalizer,
)
from binlake.lake.apply.scan import BatchInfo
from binlake.lake.apply.silver_keys import base_records
from binlake.lake.arrow import spark_ddl
from binlake.lake.fold_sql import (
    HEX_OBJECT,
    MAX_OBSERVED_TABLES,
    OUT_COLUMNS,
    TEMPORAL_KINDS,
    invalid_temporal_column,
    invalid_temporal_counter,
    split_fold,
    sql_tables,
    stats_counts,
)
from binlake.lake.silver import column_metas, data_columns
from binlake.lake.table_names import in_tables, row_tag, table_tag
from binlake.pipeline.fold import DELETE, Change, RowState, _Folder, compact_json
from binlake.vocabulary import SEQ_COL

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from binlake.lake.delta import DeltaEngine
    from binlake.lake.layout import LakeLayout

OUT_BATCH_ROWS = 8192


def _add_base(folder: _Folder, key: str, st: RowState) -> None:
    """Silver's state of a key from its base records: its physical rows (tables without a primary key: how
    many equal rows) and its tombstone (a key deleted by a MERGE whose checkpoint is not written yet)."""
    have = folder.base.get(key)
    if have is None:
        folder.base[key] = st
    elif not st.live:
        if not have.live and st.seq > have.seq:
            folder.base[key] = st
    elif not have.live:  # a live silver row wins: a tombstone is written before the MERGE that deletes
        folder.base[key] = st
    else:
        folder.base[key] = RowState(have.values, max(have.seq, st.seq), have.op, have.count + st.count)


def _fold_partition(
    pks: dict[TableId, Optional[list[str]]],
    temporals: dict[TableId, list[tuple[str, str]]],
    history: bool,
    normalize: dict[TableId, list[tuple[str, str]]],
    exact_keys: frozenset[TableId] = frozenset(),
) -> Any:
    """mapInArrow function: sorted fold records -> OUT_COLUMNS rows, one group (table, key) at a time. Counts
    the zero or invalid dates a state writes as NULL per column (``invalid_temporal`` counters). In the
    ``exact_keys`` tables (:attr:`~binlake.lake.apply.scan.TableInfo.keys_exact`, a primary key), a group's fold
    key is the row key its changes touch (bronze computed it as ``row_key``), so the fold does not encode keys
    again."""

    def run(batches: Any) -> Any:
        out: list[tuple] = []
        stats: Counter = Counter()
        group: Optional[tuple[str, str, str]] = None
        folder: Optional[_Folder] = None
        norm = None

        def flush() -> None:
            if folder is None or group is None:
                return
            db, table, _ = group
            res = folder.out
            dumps = compact_json
            checks = temporals.get((db, table), ())
            for key, st in folder.state.items():
                base = folder.base.get(key)
                out.append(
                    (
                        "state",
                        db,
                        table,
                        key,
                        st.encoded(),
                        st.seq,
                        st.op,
                        st.count if st.live else 0,
                        base.count if base is not None and base.live else 0,
                        None,
                        None,
                    )
                )
                if st.live:
                    for name, kind in checks:
                        if invalid_temporal(kind, st.values.get(name)):
                            stats[invalid_temporal_counter(db, table, name)] += 1
            for rec in res.quarantine:
                out.append(
                    (
                        "quarantine",
                        db,
                        table,
                        None,
                        None,
                        rec[SEQ_COL],
                        None,
                        None,
                        None,
                        None,
                        json.dumps(rec, ensure_ascii=False, default=str),
                    )
                )
            if history:
                last = {(key, st.seq): (key, st, ts) for key, st, ts in res.history}
                for key, st, ts in last.values():
                    out.append(("history", db, table, key, dumps(st.values), st.seq, st.op, st.count, None, ts, None))
            stats.update(res.stats)

        loads = json.loads
        hint = False
        for batch in batches:
            for (
                db,
                table,
                fold_key,
                is_base,
                file_seq,
                pos,
                row,
                seq,
                op,
                split,
                before,
                after,
                diffs,
                commit_ts,
                binlog_file,
                gtid,
                key,
                values,
                count,
            ) in zip(*(batch.column(n).to_pylist() for n, _ in RECORD_COLUMNS)):
                if (db, table, fold_key) != group:
                    flush()
                    group = (db, table, fold_key)
                    folder = _Folder(pks.get((db, table)), {}, history)
                    cols = normalize.get((db, table))
                    norm = normalizer(cols) if cols else None
                    hint = bool(fold_key) and (db, table) in exact_keys
                    if len(out) >= OUT_BATCH_ROWS:
                        yield from to_arrow(OUT_COLUMNS, out).to_batches()
                        out = []
                assert folder is not None
                if is_base:
                    _add_base(folder, key, RowState(loads(values), seq, op, count))
                    continue
                ch = Change(
                    seq,
                    (file_seq, pos, row),
                    op,
                    loads(before) if before else None,
                    loads(after) if after else None,
                    loads(diffs) if diffs else None,
                    commit_ts,
                    binlog_file,
                    gtid,
                    split or "",
                    fold_key if hint else None,
                    after,
                )
                if norm is not None:
                    ch = dataclasses.replace(ch, before=norm(ch.before), after=norm(ch.after), after_text=None)
                folder.step(ch)
        flush()
        out.append(("stats", None, None, None, None, None, None, None, None, None, json.dumps(stats)))
        yield from to_arrow(OUT_COLUMNS, out).to_batches()

    return run


def fold_batch(
    spark: "SparkSession",
    engine: "DeltaEngine",
    lake: "LakeLayout",
    batch: "DataFrame",
    info: BatchInfo,
    history: bool,
    temporal_text: bool,
    *,
    source: str,
    after_seq: int,
    scratch: Path,
) -> tuple["DataFrame", Optional["FoldCounts"]]:
    """The folded batch (OUT_COLUMNS): key states, history versions, quarantine records, counters, computed once
    (:func:`staged` under ``scratch``: the SQL fold's per-key aggregate, then the whole fold when any key folds in
    Python; a fold all in SQL derives from the staged aggregate alone and is not written again), and its
    :class:`FoldCounts` as staging observed them (None when it could not: :func:`count_folded`)."""
    from pyspark.sql import functions as F

    records = change_records(batch, info, temporal_text)
    bases = base_records(spark, engine, lake, batch, info, source, after_seq)
    if bases is not None:
        records = records.unionByName(bases)
    records = linked_keys_grouped(spark, records, info)
    tables = sql_tables(info, history, temporal_text)
    every_table = bool(tables) and set(info.tables) <= set(tables)
    n = fold_partitions(spark, info.changes)
    python, in_sql, observed = split_fold(
        records, tables, lambda df: staged(spark, df, scratch / "sql-groups"), n, every_table
    )
    if python is None:
        assert in_sql is not None  # (split_fold gives no Python records only when every table folds in SQL)
        return in_sql, None if observed is None else FoldCounts.observed(observed.counts())
    pks = {t: ti.pk for t, ti in info.tables.items()}
    temporals = {
        t: [(n, k) for n, k in data_columns(column_metas(ti.metas), temporal_text) if k in TEMPORAL_KINDS]
        for t, ti in info.tables.items()
    }
    folded = (
        python.repartition(n, "db", "table_name", "fold_key")
        .sortWithinPartitions("db", "table_name", "fold_key", F.col("base").desc(), "file_seq", "pos", "row")
        .mapInArrow(
            _fold_partition(
                pks,
                temporals,
                history,
                identity_temporals(info, temporal_text),
                frozenset(t for t, ti in info.tables.items() if ti.pk and ti.keys_exact and not ti.dependent),
            ),
            spark_ddl(OUT_COLUMNS),
        )
    )
    if in_sql is not None:
        folded = folded.unionByName(in_sql)
    counting = _StagedCounts.of(info)
    out = staged(spark, folded if counting is None else counting.attach(folded), scratch / "folded")
    return out, None if counting is None else counting.counts()


CHANGES_PER_PARTITION = 500_000


def fold_partitions(spark: "SparkSession", changes: int) -> int:
    """The fold's partitions by key: the session's shuffle partitions, more for a big batch, so that each
    partition's sort holds some :data:`CHANGES_PER_PARTITION` changes. Two partitions of a 7.5M-change day
    spilled 229 MB each to disk; 15 sort in memory (the aggregate stage 17.2 s -> 14.1 s)."""
    n = int(spark.conf.get("spark.sql.shuffle.partitions"))
    return max(n, -(-changes // CHANGES_PER_PARTITION))


def staged(spark: "SparkSession", folded: "DataFrame", folder: Path) -> "DataFrame":
    """The folded batch, computed once: executors write it as Parquet under the lake's staging folder and every
    later step reads those files. Caching would not do: delta-spark recomputes each cached plan that reads a
    table it writes, and the fold reads silver and ``meta/tombstones``, which the steps after it change (the
    recomputed fold took the batch's own tombstones for applied changes and lost their history versions)."""
    # no dictionaries: the fold's keys and images are mostly distinct, and Parquet built a dictionary of each
    # column before giving it up (7% of the CPU of the fold's aggregate stage)
    folded.write.mode("overwrite").option("parquet.enable.dictionary", "false").parquet(str(folder))
    # as many read tasks as cores: Spark packs the files of a big fold (one per partition, :func:`fold_partitions`)
    # into a few more tasks than that, the last one small, and its writes would wait for it
    return spark.read.schema(folded.schema).parquet(str(folder)).coalesce(spark.sparkContext.defaultParallelism)


# --- what the folded batch holds ------------------------------------------------------------------------------------


def deleted_state() -> "Column":
    """Column: a key state that deletes (a primary key's row, or the last of equal rows)."""
    from pyspark.sql import functions as F

    return (F.col("kind") == "state") & ((F.col("op") == DELETE) | (F.col("count") == 0))


def state_no_op(info: BatchInfo) -> "Column":
    """Column: a key state that leaves silver as it is (deleted, and silver did not hold it; a table without a
    primary key whose number of equal rows did not change). The rest of the states each change silver, so
    the MERGE runs without its uniqueness and no-op checks (``effective``)."""
    from pyspark.sql import functions as F

    unkeyed = in_tables(t for t, ti in info.tables.items() if not ti.pk)
    dead = (F.col("op") == DELETE) | (F.col("count") == 0)
    return (F.col("kind") == "state") & (
        (dead & (F.coalesce(F.col("base_count"), F.lit(0)) == 0)) | (unkeyed & (F.col("count") == F.col("base_count")))
    )


@dataclass
class FoldCounts:
    """What a folded batch holds, per table, and the fold's counters (:func:`count_folded`)."""

    ops: Counter = field(default_factory=Counter)  # insert, update, delete, key_change, quarantined, ...
    invalid_temporals: dict[TableId, Counter] = field(default_factory=dict)  # column -> zero or invalid dates
    # its states wrote as NULL
    quarantine: Counter = field(default_factory=Counter)  # table -> the fold's quarantine records
    history: Counter = field(default_factory=Counter)  # table -> SCD2 history versions
    effective: Counter = field(default_factory=Counter)  # table -> key states that change silver
    odd: Counter = field(default_factory=Counter)  # table -> of those, states whose values hold an object (text
    # that did not decode: only the Python conversion types them, :func:`binlake.lake.fold_sql.typed_states`)
    deleted: int = 0  # key states that delete a row silver holds (the tombstones to write)

    @classmethod
    def observed(cls, seen: dict[str, Any]) -> "FoldCounts":
        """The counts a fold all in SQL observed while staging (``binlake.lake.fold_sql._FoldObservation``)."""
        counts = cls(effective=Counter(seen["effective"]), odd=Counter(seen["odd"]), deleted=seen["deleted"])
        counts.add_counters(seen["stats"])
        return counts

    def add_stats(self, record: str) -> None:
        """Add a ``stats`` row's counters (the Python fold's and the SQL fold's)."""
        self.add_counters(stats_counts(record))

    def add_counters(self, counters: dict[str, int]) -> None:
        """Add counters (name -> n): op counts, and :func:`invalid_temporal_counter` names."""
        for name, n in counters.items():
            column = invalid_temporal_column(name)
            if column is None:
                self.ops[name] += n
            else:
                db, table, col = column
                self.invalid_temporals.setdefault((db, table), Counter())[col] += n


class _StagedCounts:
    """What :func:`count_folded` counts of a folded batch, observed while it is staged (no Spark job reads it
    again for them): per table of the batch, as metrics of the staging write (``Dataset.observe``)."""

    def __init__(self, info: BatchInfo) -> None:
        from pyspark.sql import functions as F

        kind = F.col("kind")
        changes = (kind == "state") & ~state_no_op(info)  # states that change silver
        self.tables = list(info.tables)
        self.metrics: list[Any] = [
            F.count_if((kind != "stats") & ~in_tables(self.tables)),  # rows of no table of the batch
            F.count_if(changes & deleted_state()),
            F.collect_list(F.when(kind == "stats", F.col("record"))),
        ]
        for t in self.tables:
            here = row_tag() == table_tag(*t)
            self.metrics += [
                F.count_if(here & (kind == "quarantine")),
                F.count_if(here & (kind == "history")),
                F.count_if(here & changes),
                F.count_if(here & changes & F.col("values").contains(HEX_OBJECT)),
            ]
        self.observation: Any = None

    @classmethod
    def of(cls, info: BatchInfo) -> Optional["_StagedCounts"]:
        return cls(info) if len(info.tables) <= MAX_OBSERVED_TABLES else None

    def attach(self, folded: "DataFrame") -> "DataFrame":
        from pyspark.sql import Observation

        self.observation = Observation("binlake_folded")
        return folded.observe(self.observation, *[m.alias(f"m{i}") for i, m in enumerate(self.metrics)])

    def counts(self) -> Optional[FoldCounts]:
        """The counts, once the staging write ran; None when a row named a table the batch does not hold."""
        got = self.observation.get
        values = [got[f"m{i}"] for i in range(len(self.metrics))]
        if values[0]:
            return None
        counts = FoldCounts(deleted=values[1])
        for record in values[2]:
            counts.add_stats(record)
        for i, t in enumerate(self.tables):
            quarantine, history, effective, odd = values[3 + 4 * i : 7 + 4 * i]
            for counter, n in ((counts.quarantine, quarantine), (counts.history, history)):
                if n:
                    counter[t] += n
            if effective:
                counts.effective[t] += effective
                counts.odd[t] += odd
        return counts


def count_folded(folded: "DataFrame", info: BatchInfo) -> FoldCounts:
    """The :class:`FoldCounts` of a (staged) folded batch, in one Spark job."""
    from pyspark.sql import functions as F

    counts = FoldCounts()
    for r in (
        folded.groupBy("kind", "db", "table_name", deleted_state().alias("dead"), state_no_op(info).alias("no_op"))
        .agg(
            F.count(F.lit(1)).alias("count"),
            F.collect_list(F.when(F.col("kind") == "stats", F.col("record"))).alias("stats"),
            F.count_if(F.col("values").contains(HEX_OBJECT)).alias("odd"),
        )
        .collect()
    ):
        for stats in r["stats"]:
            counts.add_stats(stats)
        table = (r["db"], r["table_name"])
        if r["kind"] == "quarantine":
            counts.quarantine[table] += r["count"]
        elif r["kind"] == "history":
            counts.history[table] += r["count"]
        elif r["kind"] == "state" and not r["no_op"]:
            counts.effective[table] += r["count"]
            counts.odd[table] += r["odd"]
            counts.deleted += r["count"] if r["dead"] else 0
    return counts
