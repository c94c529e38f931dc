"""The lake's status, per source and table: what ``binlake status`` prints and the freshness check reads.

Per source: the commit time of the last applied change (the newest bronze row change or DDL of the source up
to its checkpoint), the lag now, the last recorded run (``meta.run_metrics``), landing files not ingested yet
(with a landing folder) and the rows it has in ``meta.quarantine``. Per table: the live rows of its silver
table (counted as :func:`binlake.lake.silver.live_row_count` does) and the commit time of its last applied
change. Everything is read with delta-rs and pyarrow on this process (:mod:`binlake.lake.driver_read`; column
mapping and deletion vectors included), no Spark: bronze is read batch by batch, six columns of the rows up to
each source's checkpoint, and aggregated per batch, so memory stays bounded by a batch.
"""

from __future__ import annotations

import datetime as dt
import os
from typing import TYPE_CHECKING, Any, Callable, Optional

from binlake.lake import driver_read
from binlake.lake.errors import LakeError
from binlake.lake.members import is_cluster
from binlake.lake.metrics import COMMITTED_OPS, read_metrics, utc
from binlake.lake.table_names import split_table_name
from binlake.pipeline.split import WHOLE_FILES
from binlake.vocabulary import CHANGE_OPS, FILE_END_OP, OP_COL, SEQ_COL, SOURCE_ROW

if TYPE_CHECKING:
    from binlake.lake.layout import LakeLayout


class LakeNotFoundError(LakeError):
    """The folder given as a lake holds no lake (no bronze/, silver/ or meta/)."""


def iso(when: Optional[dt.datetime]) -> Optional[str]:
    """ISO 8601 in UTC with a ``Z`` (None stays None)."""
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return when.astimezone(dt.timezone.utc).isoformat().replace("+00:00", "Z")


def check_lake(lake: "LakeLayout") -> None:
    if not any(os.path.isdir(lake.path(d)) for d in ("bronze", "silver", "meta")):
        raise LakeNotFoundError(
            f"{lake.root} holds no lake (no bronze/, silver/ or meta/): pass the --lake folder given to `binlake run`"
        )


def pending_files(lake: "LakeLayout", landing_dir: str, source: str) -> tuple[int, Optional[str], Optional[str]]:
    """Landing files of ``source`` not (fully) ingested yet, the gap that stops the source (or None), and the file
    cut short it waits at (or None; the files after it are pending too)."""
    from binlake.lake.errors import BinlogGapError
    from binlake.lake.ingest import ingested_files, plan_ingest

    if not os.path.isdir(landing_dir):
        return 0, None, None
    if is_cluster(landing_dir):
        return _pending_cluster(lake, landing_dir, source)
    done = ingested_files(None, driver_read.DriverRows(), lake.bronze, source)
    try:
        plan = plan_ingest(landing_dir, source, done, chunk_bytes=WHOLE_FILES)
    except BinlogGapError as exc:
        return 0, str(exc), None
    return len(plan.files) + len(plan.held), None, plan.waiting


def _pending_cluster(lake: "LakeLayout", landing_dir: str, source: str) -> tuple[int, Optional[str], Optional[str]]:
    """:func:`pending_files` of a cluster source: the next ingest's files (the current member's new files, or a
    switch to the next member, checked by GTID as the ingest does)."""
    from binlake.lake.errors import BinlogGapError
    from binlake.lake.gtid_seam import gap_fillers, source_tables, unseeded_gap
    from binlake.lake.members import plan_cluster, read_held, stream_state
    from binlake.snapshot import read_snapshots
    from binlake.vocabulary import SOURCE_ROW as CKPT_SOURCE_ROW

    rows = driver_read.DriverRows()
    ckpt = [
        r
        for r in driver_read.read(lake.checkpoints, ("source", "table_name", SEQ_COL, "gtid_executed"))
        if r["source"] == source and r["table_name"] == CKPT_SOURCE_ROW
    ]
    seq, applied = (ckpt[0][SEQ_COL], ckpt[0]["gtid_executed"] or "") if ckpt else (-1, "")
    try:
        cp = plan_cluster(
            landing_dir,
            source,
            stream_state(None, rows, lake.bronze, source),
            chunk_bytes=WHOLE_FILES,
            applied_seq=seq,
            held=lambda: read_held(None, rows, lake.bronze, source, applied),
            fillers=lambda: gap_fillers(
                [s for s in read_snapshots(landing_dir) if s.position.gtid],
                source_tables(None, rows, lake, source),
                lambda db, table: True,
            ),
        )
        unseeded_gap(None, rows, lake, source, landing_dir, lambda db, table: True)
    except BinlogGapError as exc:
        return 0, str(exc), None
    return len(cp.plan.files) + len(cp.plan.held), None, cp.plan.waiting


def last_member(lake: "LakeLayout", source: str) -> Optional[str]:
    """The member of a cluster source read last (its file with the highest ``file_seq`` in bronze), or None for
    a source of one server."""
    from binlake.lake.members import split_member

    ends = driver_read.DriverRows().read_rows(
        None, lake.bronze, ("binlog_file", "file_seq"), {"source": source, "op": FILE_END_OP}
    )
    if not ends:
        return None
    member = split_member(max(ends, key=lambda r: r["file_seq"])["binlog_file"])[0]
    return member or (None if all("/" not in r["binlog_file"] for r in ends) else "(landing folder)")


def applied_commits(lake: "LakeLayout", checkpoints: dict[str, int]) -> list[dict[str, Any]]:
    """Per (source, db, table_name) of the bronze rows applied (``_binlake_seq`` up to each source's checkpoint):
    ``last_change_us`` (newest commit time of a row change) and ``last_commit_us`` (of a row change or DDL), as
    :func:`binlake.lake.metrics.applied_commits` computes them with Spark."""
    import pyarrow as pa
    import pyarrow.compute as pc

    table = driver_read.open_table(lake.bronze) if checkpoints else None
    if table is None:
        return []
    upto = None
    for source, seq in checkpoints.items():
        term = (driver_read.text("source") == source) & (driver_read.field(SEQ_COL) <= int(seq))
        upto = term if upto is None else upto | term
    where = driver_read.text("op").isin(list(COMMITTED_OPS)) & upto
    keys = ["source", "db", "table_name"]
    out: dict[tuple, list[Optional[int]]] = {}
    for batch in driver_read.batches(table, [*keys, "op", "commit_ts"], where):
        if not batch.num_rows:
            continue
        op = batch.column("op")
        ts = batch.column("commit_ts").cast(pa.int64())
        change = pc.if_else(pc.is_in(op, pa.array(CHANGE_OPS)), ts, pa.scalar(None, pa.int64()))
        part = (
            pa.table(
                {
                    "source": batch.column("source"),
                    "db": batch.column("db"),
                    "table_name": batch.column("table_name"),
                    "change": change,
                    "commit": ts,
                }
            )
            .group_by(keys, use_threads=False)
            .aggregate([("change", "max"), ("commit", "max")])
        )
        for r in part.to_pylist():
            k = (r["source"], r["db"], r["table_name"])
            prev = out.setdefault(k, [None, None])
            for i, v in enumerate((r["change_max"], r["commit_max"])):
                if v is not None and (prev[i] is None or v > prev[i]):
                    prev[i] = v
    return [
        {"source": s, "db": d, "table_name": t, "last_change_us": c, "last_commit_us": m}
        for (s, d, t), (c, m) in out.items()
    ]


def live_rows(path: str) -> Optional[int]:
    """A silver table's live rows, as :func:`binlake.lake.silver.live_row_count` counts them: rows whose
    ``_binlake_op`` is not ``delete``, each ``_binlake_count`` times where the table has that column; None when
    there is no table."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from binlake.vocabulary import COUNT_COL

    table = driver_read.open_table(path)
    if table is None:
        return None
    names = set(driver_read.columns_of(table))
    columns = [c for c in (OP_COL, COUNT_COL) if c in names]
    if not columns:  # no bookkeeping column: every row is live
        return sum(b.num_rows for b in driver_read.batches(table, [next(iter(names))]))
    total = 0
    for batch in driver_read.batches(table, columns):
        live = (
            pc.fill_null(pc.not_equal(batch.column(OP_COL), "delete"), True)
            if OP_COL in columns
            else pa.array([True] * batch.num_rows)
        )
        weight = (
            pc.fill_null(batch.column(COUNT_COL).cast(pa.int64()), 1)
            if COUNT_COL in columns
            else pa.array([1] * batch.num_rows, pa.int64())
        )
        total += pc.sum(pc.if_else(live, weight, 0)).as_py() or 0
    return int(total)


def lake_status(
    lake: "LakeLayout",
    *,
    landing: Optional[str] = None,
    now: Optional[dt.datetime] = None,
    progress: Callable[[str], None] = lambda text: None,
) -> dict[str, Any]:
    """The status document (``binlake status --json``; see the module docstring)."""
    from binlake.vocabulary import SOURCE_ROW as CKPT_SOURCE_ROW

    check_lake(lake)
    now = now or dt.datetime.now(dt.timezone.utc)
    ckpt_rows = driver_read.read(lake.checkpoints, ("source", "table_name", SEQ_COL, "gtid_executed"))
    checkpoints = {r["source"]: r[SEQ_COL] for r in ckpt_rows if r["table_name"] == CKPT_SOURCE_ROW}
    gtids = {r["source"]: r["gtid_executed"] or None for r in ckpt_rows if r["table_name"] == CKPT_SOURCE_ROW}
    sources = set(checkpoints)
    if landing and os.path.isdir(landing):
        sources |= {d.name for d in os.scandir(landing) if d.is_dir()}
    progress(f"{len(sources)} source(s): reading bronze up to each checkpoint")
    groups = applied_commits(lake, checkpoints)
    tables_of: dict[str, list[str]] = {}
    for r in ckpt_rows:
        if r["table_name"] != CKPT_SOURCE_ROW:
            tables_of.setdefault(r["source"], []).append(r["table_name"])
    quarantine: dict[tuple, int] = {}
    for r in driver_read.read(lake.quarantine, ("source", "db", "table_name")):
        key = (r["source"], r["db"], r["table_name"])
        quarantine[key] = quarantine.get(key, 0) + 1
    runs: dict[str, dict] = {}
    for r in read_metrics(lake):
        if r["table_name"] == SOURCE_ROW and (r["source"] not in runs or r["run_end"] > runs[r["source"]]["run_end"]):
            runs[r["source"]] = r

    def lag(us: Optional[int]) -> Optional[float]:
        return None if us is None else round((now - utc(us)).total_seconds(), 3)

    out = []
    for source in sorted(sources):
        mine = [g for g in groups if g["source"] == source]
        last_us = max((g["last_commit_us"] for g in mine if g["last_commit_us"] is not None), default=None)
        tables = []
        for name in sorted(tables_of.get(source, [])):
            db, table = split_table_name(name)
            change_us = max(
                (
                    g["last_change_us"]
                    for g in mine
                    if (g["db"], g["table_name"]) == (db, table) and g["last_change_us"] is not None
                ),
                default=None,
            )
            live = live_rows(lake.silver(db, table))
            tables.append(
                {
                    "table": name,
                    "live_rows": live,
                    "last_commit_time": iso(utc(change_us)),
                    "lag_seconds": lag(change_us),
                    "quarantined_rows": quarantine.get((source, db, table), 0),
                }
            )
        run = runs.get(source)
        entry: dict[str, Any] = {
            "source": source,
            "last_commit_time": iso(utc(last_us)),
            "lag_seconds": lag(last_us),
            "checkpoint_seq": checkpoints.get(source),
            "applied_gtids": gtids.get(source),
            "member": last_member(lake, source),
            "last_run": None
            if run is None
            else {
                "run_id": run["run_id"],
                "run_end": iso(run["run_end"]),
                "result": run["result"],
                "changes": run["changes"],
                "quarantined": run["quarantined"],
            },
            "quarantined_rows": sum(n for (s, _, _), n in quarantine.items() if s == source),
            "pending_files": None,
            "gap": None,
            "waiting": None,
            "tables": tables,
        }
        if landing:
            entry["pending_files"], entry["gap"], entry["waiting"] = pending_files(
                lake, os.path.join(landing, source), source
            )
            entry["refused_files"] = refused_files(os.path.join(landing, source))
        out.append(entry)
    return {"lake": lake.root, "generated_at": iso(now), "sources": out}


def refused_files(landing_dir: str) -> list[str]:
    """Landing entries with a binlog's name that ingest does not read (symbolic links, ...): ``"name: reason"``
    (a cluster source's member folders too, as ``"member/name: reason"``)."""
    from binlake.pipeline.identity import landing_listing

    if not os.path.isdir(landing_dir):
        return []
    from binlake.lake.members import member_folders

    return landing_listing(landing_dir)[1] + [
        f"{m}/{r}" for m in member_folders(landing_dir) for r in landing_listing(os.path.join(landing_dir, m))[1]
    ]


def duration(seconds: Optional[float]) -> str:
    """A lag for people: ``3d 4h``, ``2h 5m``, ``42s`` (``-`` when unknown)."""
    if seconds is None:
        return "-"
    s = int(seconds)
    sign, s = ("-", -s) if s < 0 else ("", s)
    d, rest = divmod(s, 86400)
    h, rest = divmod(rest, 3600)
    m, sec = divmod(rest, 60)
    if d:
        return f"{sign}{d}d {h}h"
    if h:
        return f"{sign}{h}h {m}m"
    return f"{sign}{m}m {sec}s" if m else f"{sign}{sec}s"


def format_status(doc: dict[str, Any]) -> str:
    """``binlake status``'s human output: one block per source, a table of its tables."""
    lines = [f"lake {doc['lake']} at {doc['generated_at']}"]
    if not doc["sources"]:
        lines.append("no source has been applied yet (no meta/checkpoints rows)")
    for s in doc["sources"]:
        run = s["last_run"]
        lines += [
            "",
            f"source {s['source']}",
            f"  last applied commit  {s['last_commit_time'] or '-'}  (lag {duration(s['lag_seconds'])})",
            "  last run             "
            + (
                f"{run['run_id']} ended {run['run_end']}: {run['result']}, "
                f"{run['changes']} change(s), {run['quarantined']} quarantined"
                if run
                else "- (no run recorded in meta/run_metrics)"
            ),
            f"  pending files        {'-' if s['pending_files'] is None else s['pending_files']}"
            + ("" if s["pending_files"] is not None else " (pass --landing to count them)"),
            f"  quarantined rows     {s['quarantined_rows']}",
        ]
        if s.get("applied_gtids"):
            lines.append(f"  applied GTIDs        {s['applied_gtids']}")
        if s.get("member"):
            lines.append(f"  member read last     {s['member']}")
        if s.get("gap"):
            lines.append(f"  STOPPED              {s['gap']}")
        if s.get("waiting"):
            lines.append(f"  WAITING              {s['waiting']}")
        for refused in s.get("refused_files") or ():
            lines.append(f"  NOT READ             {refused}")
        rows = [("table", "live rows", "last applied commit", "lag", "quarantined")]
        rows += [
            (
                t["table"],
                "-" if t["live_rows"] is None else str(t["live_rows"]),
                t["last_commit_time"] or "-",
                duration(t["lag_seconds"]),
                str(t["quarantined_rows"]),
            )
            for t in s["tables"]
        ]
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        for r in rows:
            lines.append(
                "  "
                + "  ".join(
                    c.rjust(w) if i in (1, 4) else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))
                ).rstrip()
            )
    return "\n".join(lines)
