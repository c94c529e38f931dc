"""A source that is a replication cluster: its servers' binlogs, one stream, followed across a failover by GTID.

Landing: ``landing/<source>/<member>/binlog.NNNNNN``, one folder per server (a flat ``landing/<source>/binlog.*``
is the source's first member, named ``""``: a one-server source is unchanged). In bronze a member's file is
``<member>/binlog.NNNNNN``.

The stream: the source reads one member at a time, the one it read last (the *current* member). Its files keep
their own order; their ``file_seq`` (the high bits of ``_binlake_seq``) is the file's number plus the member's
stream offset. The first member's offset is 0 (its files keep their numbers, as a one-server source). When the
current member has nothing new and another member's folder holds files the source has not read, the source
switches to it: its offset puts its first landed file right after the last file ingested. Bronze's ``file_end``
rows (name, ``file_seq``) are the record of the members and their offsets, written in the same atomic append
as the rows (no separate table to keep in step). Files of a member the source has moved past are not read again.

The switch is checked by GTID (:func:`check_switch`) over the new member's landed files, against the GTIDs the
source holds (ingested in bronze, or applied in its checkpoint):

- a transaction the source holds is skipped at ingest (the ingest's GTID filter gets the held set), whatever
  file or member it comes from; so the old and the new primary's copies of one transaction land once;
- the member's first transaction not held must continue the held set without a hole: per MySQL server UUID the
  next number after the highest held, per MariaDB replication domain the next sequence number (a UUID or domain
  the source never saw starts at 1), else :class:`GtidGapError` names the missing range;
- once the member continues past the held set, no held transaction may follow: transactions not held that come
  before held ones were written on that server while it replicated (errant), :class:`ErrantTransactionError`;
- the held set's last transaction per UUID/domain must be in the member's history (seen in its files, or in its
  first file's PREVIOUS_GTIDS / GTID_LIST), and a MariaDB GTID at a held ``domain-seq`` must be the held one (same
  server): otherwise the source holds changes the member never had (they were on the old primary only), and
  silver can not become the member's tables without a snapshot: :class:`ErrantTransactionError`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Sequence

from binlake.lake.errors import ErrantTransactionError, GtidGapError
from binlake.pipeline.filters import GtidSet
from binlake.pipeline.identity import FILE_SHIFT, file_sequence, landing_listing
from binlake.vocabulary import FILE_END_OP

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from binlake.lake.delta import DeltaEngine
    from binlake.lake.ingest import IngestedFile, IngestPlan

MEMBERS_FILE = "_members"  # landing/<source>/_members: member folders in the order fetch read them
_SEQUENCE = re.compile(r"\.(\d+)$")
_MARIADB = re.compile(r"(\d+)-(\d+)-(\d+)\Z")
HELD_OPS = ("insert", "update", "delete", "ddl")
SWITCH_NEXT = (
    "fetch the missing transactions from a member that has them into its landing folder, or take a "
    "snapshot of every table of the source on this member (binlake snapshot --source <its URI> --name <the "
    "source>; it fills the gap) and run again"
)


def member_folders(landing_dir: str) -> list[str]:
    """The member folders of a source's landing folder (sub-folders, not ``_snapshots`` or hidden ones, not
    links), in the order of ``_members`` (written by ``binlake fetch``) and then by name."""
    try:
        entries = list(os.scandir(landing_dir))
    except OSError:
        return []
    found = sorted(e.name for e in entries if e.is_dir(follow_symlinks=False) and not e.name.startswith(("_", ".")))
    order: list[str] = []
    try:
        with open(os.path.join(landing_dir, MEMBERS_FILE), encoding="utf-8") as f:
            order = [line.strip() for line in f if line.strip()]
    except (OSError, UnicodeDecodeError):
        pass
    rank = {m: i for i, m in enumerate(order)}
    return sorted(found, key=lambda m: (rank.get(m, len(rank)), m))


def is_cluster(landing_dir: str) -> bool:
    return bool(member_folders(landing_dir))


def split_member(binlog_file: str) -> tuple[str, str]:
    """``member/binlog.000003`` -> (member, base name); a flat name is the first member ``""``."""
    member, _, base = binlog_file.rpartition("/")
    return member, base


def bronze_name(member: str, base: str) -> str:
    return f"{member}/{base}" if member else base


@dataclass
class StreamState:
    """What bronze holds of a cluster source: per member its ingested files and stream offset, in stream order."""

    order: list[str] = field(default_factory=list)  # members in the order first read
    offsets: dict[str, int] = field(default_factory=dict)  # member -> file_seq - file number
    done: dict[str, dict[str, "IngestedFile"]] = field(default_factory=dict)  # member -> base name -> file
    last_seq: int = -1  # the highest file_seq ingested

    @property
    def current(self) -> Optional[str]:
        return self.order[-1] if self.order else None


def stream_state(spark: "SparkSession", engine: "DeltaEngine", bronze_path: str, source: str) -> StreamState:
    from binlake.lake.ingest import IngestedFile

    files: dict[str, tuple[set, int, int]] = {}
    for r in engine.read_rows(
        spark,
        bronze_path,
        ("binlog_file", "file_seq", "file_size", "file_sha256", "pos"),
        {"source": source, "op": FILE_END_OP},
    ):
        ids, end, seq = files.setdefault(r["binlog_file"], (set(), 0, r["file_seq"]))
        ids.add((r["file_size"], r["file_sha256"]))
        files[r["binlog_file"]] = (ids, max(end, r["pos"]), seq)
    state = StreamState()
    first: dict[str, int] = {}
    for name, (ids, end, seq) in files.items():
        member, base = split_member(name)
        state.done.setdefault(member, {})[base] = IngestedFile(frozenset(ids), end)
        state.offsets.setdefault(member, seq - file_sequence(base))
        first[member] = min(first.get(member, seq), seq)
        state.last_seq = max(state.last_seq, seq)
    state.order = sorted(first, key=first.__getitem__)
    return state


# --- the GTIDs a source holds ---------------------------------------------------------------------------------


@dataclass
class Held:
    """The GTIDs a source holds: MySQL per (UUID, tag) the range from its lowest to highest GTID in bronze (a
    server's transactions follow each other; a transaction with no row kept, e.g. of an excluded table, is in
    the range) plus the checkpoint's applied set; MariaDB the exact ``domain-server-seq`` of bronze, by
    (domain, seq), and the highest seq per domain (bronze or checkpoint)."""

    mysql: GtidSet = field(default_factory=GtidSet)
    mariadb: dict[tuple[int, int], int] = field(default_factory=dict)  # (domain, seq) -> server
    top: dict[int, tuple[int, int]] = field(default_factory=dict)  # domain -> (seq, server)

    def __bool__(self) -> bool:
        return bool(self.mysql) or bool(self.top)

    def text(self) -> str:
        """The ingest's skip set (MySQL intervals, MariaDB highest seq per domain)."""
        out = GtidSet.parse(self.mysql.to_text())
        for d, (seq, server) in self.top.items():
            out.add(f"{d}-{server}-{seq}")
        return out.to_text()


def held_gtids(gtids: Iterable[Optional[str]], applied: str) -> Held:
    held = Held()
    ranges: dict[str, list[int]] = {}
    for g in gtids:
        if not g:
            continue
        m = _MARIADB.match(g)
        if m:
            d, s, n = int(m.group(1)), int(m.group(2)), int(m.group(3))
            held.mariadb[(d, n)] = s
            if n > held.top.get(d, (0, 0))[0]:
                held.top[d] = (n, s)
            continue
        prefix, _, n_text = g.rpartition(":")
        lo_hi = ranges.setdefault(prefix, [int(n_text), int(n_text)])
        lo_hi[0], lo_hi[1] = min(lo_hi[0], int(n_text)), max(lo_hi[1], int(n_text))
    held.mysql = GtidSet.parse(",".join([applied, *(f"{p}:{lo}-{hi}" for p, (lo, hi) in ranges.items())]))
    for item in GtidSet.parse(applied).mariadb_position().split(","):
        m = _MARIADB.match(item)
        if m and int(m.group(3)) > held.top.get(int(m.group(1)), (0, 0))[0]:
            held.top[int(m.group(1))] = (int(m.group(3)), int(m.group(2)))
    return held


def read_held(spark: "SparkSession", engine: "DeltaEngine", bronze_path: str, source: str, applied: str) -> Held:
    rows = engine.read_rows(spark, bronze_path, ("gtid",), {"source": source, "op": HELD_OPS})
    return held_gtids((r["gtid"] for r in rows), applied)


# --- reading a member's GTIDs ---------------------------------------------------------------------------------


def member_gtids(
    paths: Iterable[str], header_only: bool = False
) -> tuple[list[tuple[str, str]], Optional[GtidSet], dict[int, int]]:
    """The GTIDs of ``paths`` in order as (gtid, file name), and the first file's history: its PREVIOUS_GTIDS
    (MySQL) and GTID_LIST (MariaDB: domain -> highest seq); ``header_only``: the history alone."""
    from binlake.binlog.api import event_gtid
    from binlake.binlog.events import GtidListEvent, MariadbGtidEvent, PreviousGtidsEvent
    from binlake.binlog.reader import ReadStats, read_events

    out: list[tuple[str, str]] = []
    previous: Optional[GtidSet] = None
    listed: dict[int, int] = {}
    for i, path in enumerate(paths):
        name = os.path.basename(path)
        with open(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb") as f:
            for ev in read_events(f, file=name, stop_at_incomplete=True, decode_payloads=False, stats=ReadStats()):
                body = ev.body
                if i == 0 and isinstance(body, PreviousGtidsEvent):
                    previous = GtidSet.from_entries(body.entries)
                elif i == 0 and isinstance(body, GtidListEvent):
                    for g in body.gtids:
                        listed[g.domain_id] = max(listed.get(g.domain_id, 0), g.seq_no)
                gtid = event_gtid(body)
                if header_only and (gtid is not None or isinstance(body, MariadbGtidEvent)):
                    return out, previous, listed
                if gtid is not None or isinstance(body, MariadbGtidEvent):
                    out.append((gtid or body.gtid, name))
    return out, previous, listed


def _sid_seq(gtid: str) -> tuple[str, int, Optional[int]]:
    """(UUID[:tag] or ``domain D``, number, MariaDB server id or None)."""
    m = _MARIADB.match(gtid)
    if m:
        return f"domain {m.group(1)}", int(m.group(3)), int(m.group(2))
    prefix, _, n = gtid.rpartition(":")
    return prefix.lower(), int(n), None


def check_switch(
    source: str,
    member: str,
    gtids: list[tuple[str, str]],
    held: Held,
    previous: Optional[GtidSet] = None,
    listed: Optional[dict[int, int]] = None,
) -> int:
    """Raise unless ``member``'s transactions (``gtids`` in its files' order) continue ``held`` (see the module
    docstring); returns how many of them are held (skipped at ingest)."""
    where = f"source {source}: member {member}"
    first_new: Optional[tuple[str, str]] = None
    new_before: list[str] = []
    seen_tops: set[str] = set()
    held_count = 0
    tops_mysql = {sid.text: held.mysql.intervals(sid)[-1][1] for sid in held.mysql.sids()}
    lows_mysql = {sid.text: held.mysql.intervals(sid)[0][0] for sid in held.mysql.sids()}
    first_new_of: dict[str, int] = {}
    for gtid, name in gtids:
        key, n, server = _sid_seq(gtid)
        if server is not None:
            d = int(key.split()[1])
            if (d, n) in held.mariadb:
                if held.mariadb[(d, n)] != server:
                    theirs = f"{d}-{held.mariadb[(d, n)]}-{n}"
                    raise ErrantTransactionError(
                        f"{where}: its {gtid} ({name}) is not the {theirs} the source holds: the member's history "
                        f"differs from the one the source followed (it never received {theirs}, the old primary's, "
                        f"or wrote its own on top); silver can not become this member's tables by following it: "
                        f"take a snapshot of the source's tables (binlake snapshot) and load from there"
                    )
                is_held = True
            else:
                is_held = n <= held.top.get(d, (0, 0))[0]
            if is_held and held.top.get(d, (0, 0))[0] == n:
                seen_tops.add(key)
        else:
            is_held = gtid in held.mysql or n < lows_mysql.get(key, 0)  # below: before what the source read
            if is_held and tops_mysql.get(key) == n:
                seen_tops.add(key)
        if is_held:
            held_count += 1
            if new_before:
                shown = ", ".join(new_before[:3]) + (f" and {len(new_before) - 3} more" if len(new_before) > 3 else "")
                raise ErrantTransactionError(
                    f"{where}: {shown} come before {gtid} ({name}), which the source already holds: they were written "
                    f"on {member} and never on the primary the source followed (errant transactions); remove them "
                    f"from the member's history or take a snapshot of the source's tables (binlake snapshot) and "
                    f"load from there"
                )
            continue
        if first_new is None:
            first_new = (gtid, name)
        new_before.append(gtid)
        if key not in first_new_of:
            first_new_of[key] = n
            top = held.top.get(int(key.split()[1]), (0, 0))[0] if server is not None else tops_mysql.get(key, 0)
            if n != top + 1:
                if server is not None:
                    missing = f"domain {key.split()[1]} sequence numbers {top + 1}" + (
                        f" to {n - 1}" if n - 1 > top + 1 else ""
                    )
                else:
                    missing = f"{key}:{top + 1}" + (f"-{n - 1}" if n - 1 > top + 1 else "")
                after = f" after the held {key}:{top}" if server is None and top else ""
                raise GtidGapError(
                    f"{where}: its first new transaction {gtid} ({name}) does not follow what the source holds"
                    f"{after}: GTIDs {missing} are missing (on the old primary only, or purged before they were "
                    f"fetched), so nothing of {member} is applied; {SWITCH_NEXT}"
                )
    # the held set's last transaction of each UUID/domain must be in the member's history
    for key, top in tops_mysql.items():
        if key in seen_tops or (previous is not None and f"{key}:{top}" in previous):
            continue
        raise ErrantTransactionError(
            f"{where}: its landed files do not hold {key}:{top}, the last transaction the source holds from "
            f"{key}: the member never received it (it was on the old primary only); silver holds changes this "
            f"member lacks: take a snapshot of the source's tables (binlake snapshot) and load from there"
        )
    for d, (top, server) in held.top.items():
        key = f"domain {d}"
        if key in seen_tops or (listed or {}).get(d, 0) >= top:
            continue
        raise ErrantTransactionError(
            f"{where}: its landed files do not hold {d}-{server}-{top}, the last transaction the source holds "
            f"in domain {d}: the member never received it (it was on the old primary only); silver holds "
            f"changes this member lacks: take a snapshot of the source's tables (binlake snapshot) and load "
            f"from there"
        )
    return held_count


# --- planning the ingest of a cluster source ------------------------------------------------------------------


@dataclass
class ClusterPlan:
    plan: "IngestPlan"
    member: Optional[str] = None  # the member read
    switched_from: Optional[str] = None  # the member the source moved past in this plan
    skip_gtids: Optional[str] = None  # the held set to skip at ingest (a switch), else None: the checkpoint's
    filled_by: Optional[str] = None  # the snapshot whose GTID set filled a gap at the switch (skip_gtids holds it)
    more: bool = False  # another member waits to be switched to after this plan


def _member_dir(landing_dir: str, member: str) -> str:
    return os.path.join(landing_dir, member) if member else landing_dir


def _landed_members(landing_dir: str) -> list[str]:
    """The members with landed binlogs: the flat folder's (``""``) first, then the member folders."""
    return [m for m in ["", *member_folders(landing_dir)] if landing_listing(_member_dir(landing_dir, m))[0]]


def _with_stream(plan: "IngestPlan", member: str, offset: int) -> "IngestPlan":
    """``plan`` (of one member folder) with its files named ``member/base`` and placed in the stream."""

    def ident(i):  # noqa: ANN001, ANN202
        return replace(i, name=bronze_name(member, i.name), stream_seq=file_sequence(i.name) + offset)

    plan.files = [ident(i) for i in plan.files]
    plan.tasks = [replace(t, identity=ident(t.identity)) for t in plan.tasks]
    return plan


def plan_cluster(
    landing_dir: str,
    source: str,
    state: StreamState,
    *,
    chunk_bytes: int,
    parallelism: int = 1,
    seam_file: Optional[str] = None,
    applied_seq: int = -1,
    held: "Optional[Callable[[], Any]]" = None,
    fillers: "Callable[[], list[tuple[str, GtidSet]]]" = list,
) -> ClusterPlan:
    """The next ingest of a cluster source: the current member's new files, or, when it has none, the switch to
    the next member that holds files (checked by :func:`check_switch` with ``held()``, the source's GTIDs; a
    GTID gap is filled by the first of ``fillers()``, snapshots' (id, GTID set), that makes the check pass: the
    plan's ``filled_by``)."""
    from binlake.lake.ingest import plan_ingest

    landed = _landed_members(landing_dir)
    current = state.current
    if current is not None:
        offset = state.offsets[current]
        folder = _member_dir(landing_dir, current)
        plan = plan_ingest(
            folder,
            source,
            state.done.get(current, {}),
            chunk_bytes=chunk_bytes,
            parallelism=parallelism,
            seam_file=seam_file if offset == 0 else None,
        )
        _check_stream_order(source, current, plan, offset, applied_seq)
        waiting = [m for m in landed if m not in state.order]
        if plan.files or plan.waiting or not waiting:
            return ClusterPlan(_with_stream(plan, current, offset), current, more=bool(waiting) and not plan.waiting)
        nxt = waiting[0]
    else:
        if not landed:
            from binlake.lake.ingest import IngestPlan

            return ClusterPlan(IngestPlan())
        nxt = landed[0]
    folder = _member_dir(landing_dir, nxt)
    paths, _ = landing_listing(folder)
    skip: Optional[str] = None
    filled_by: Optional[str] = None
    if current is not None and paths:
        have = held() if held is not None else Held()
        _add_start(have, landing_dir, state)
        if have:
            gtids, previous, listed = member_gtids(paths)
            have, filled_by = _checked_switch(source, nxt, gtids, have, previous, listed, fillers)
            skip = have.text()
    offset = 0 if current is None else state.last_seq + 1 - file_sequence(paths[0]) if paths else 0
    plan = plan_ingest(
        folder,
        source,
        {},
        chunk_bytes=chunk_bytes,
        parallelism=parallelism,
        seam_file=seam_file if current is None else None,
    )
    rest = [m for m in landed if m not in state.order and m != nxt]
    return ClusterPlan(
        _with_stream(plan, nxt, offset),
        nxt,
        switched_from=current,
        skip_gtids=skip,
        filled_by=filled_by,
        more=bool(rest) and not plan.waiting,
    )


def _checked_switch(
    source: str,
    member: str,
    gtids: list[tuple[str, str]],
    held: Held,
    previous: Optional[GtidSet],
    listed: dict[int, int],
    fillers: "Callable[[], list[tuple[str, GtidSet]]]",
) -> tuple[Held, Optional[str]]:
    """(``held``, None) when ``member`` continues it (:func:`check_switch`); at a GTID gap, (``held`` with the GTID
    set of the first snapshot that fills it, that snapshot's id): the snapshot holds every table of the source
    (``binlake.lake.gtid_seam``) and its transactions are then skipped at the switch; else the gap's
    :class:`GtidGapError`."""
    try:
        check_switch(source, member, gtids, held, previous, listed)
        return held, None
    except GtidGapError as gap:
        for snapshot_id, extra in fillers():
            filled = held_gtids((), ",".join(t for t in (held.text(), extra.to_text()) if t))
            filled.mariadb = dict(held.mariadb)
            try:
                check_switch(source, member, gtids, filled, previous, listed)
            except (GtidGapError, ErrantTransactionError):
                continue
            return filled, snapshot_id
        raise gap from None


def _add_start(held: Held, landing_dir: str, state: StreamState) -> None:
    """Count as held what came before the source's start: the history (PREVIOUS_GTIDS, GTID_LIST) of the first
    file the source ingested, when it is still landed (a source that started at a server's binlog.000050 holds
    what 000001 to 000049 did, through a snapshot or by the user's choice)."""
    first = state.order[0]
    names = sorted(state.done.get(first, {}), key=file_sequence)
    path = os.path.join(_member_dir(landing_dir, first), names[0]) if names else None
    if path is None or not os.path.isfile(path) or os.path.islink(path):
        return
    from binlake.binlog.errors import BinlogError

    try:
        _, previous, listed = member_gtids([path], header_only=True)
    except (BinlogError, OSError):
        return
    if previous is not None:
        held.mysql = GtidSet.parse(",".join(t for t in (held.mysql.to_text(), previous.to_text()) if t))
    for d, seq in listed.items():
        if seq > held.top.get(d, (0, 0))[0]:
            held.top[d] = (seq, 0)


def _check_stream_order(source: str, member: str, plan: "IngestPlan", offset: int, applied_seq: int) -> None:
    """A file of the current member that lands (or grows) at a stream place before what is applied: its changes
    come before applied ones (as :func:`binlake.lake.gaps.check_in_order`, by stream sequence)."""
    from binlake.lake.errors import BinlogGapError

    applied_file = applied_seq >> FILE_SHIFT if applied_seq >= 0 else None
    for f in plan.files:
        if applied_file is not None and file_sequence(f.name) + offset < applied_file:
            raise BinlogGapError(
                f"source {source}: {bronze_name(member, f.name)} landed after changes of a later "
                f"file were applied: its changes come before them and can not be applied in "
                f"order; take a snapshot of the source's tables (binlake snapshot) and load from "
                f"there"
            )


def ingest_cluster(
    spark: "SparkSession",
    engine: "DeltaEngine",
    lake,  # noqa: ANN001 - LakeLayout
    landing_dir: str,
    opts,  # noqa: ANN001 - RunOptions
    run_id: str,
    seeded,  # noqa: ANN001 - SeedReport
    started: float,
    by_gtid: "Sequence[Any]" = (),
):  # noqa: ANN201 - IngestReport
    """The ingest of a cluster source (``binlake.lake.ingest.ingest_job`` for a landing folder with members):
    the current member's new files, then the switch to the next member (one Delta append each), with the
    GTIDs the source holds skipped at a switch; then the seed of the snapshots ``by_gtid`` places in the
    stream (``binlake.lake.gtid_seam``)."""
    import time

    from binlake.lake.checkpoints import read_checkpoint
    from binlake.lake.gtid_seam import gap_fillers, place_snapshots, source_tables, unseeded_gap
    from binlake.lake.ingest import IngestReport, append_bronze
    from binlake.lake.registry import registry_rows
    from binlake.lake.seed import GapFill, record_gap_fill, seed_from_snapshots
    from binlake.pipeline.identity import ordering_key

    checkpoint = read_checkpoint(spark, engine, lake.checkpoints, opts.source)
    report = IngestReport(seeded=seeded)

    def fillers() -> list[tuple[str, GtidSet]]:
        held = source_tables(spark, engine, lake, opts.source)
        return gap_fillers(by_gtid, held, opts.tables.keeps)

    for _ in range(64):  # a member after another; each pass reads bronze again
        state = stream_state(spark, engine, lake.bronze, opts.source)
        cp = plan_cluster(
            landing_dir,
            opts.source,
            state,
            chunk_bytes=opts.chunk_bytes,
            parallelism=spark.sparkContext.defaultParallelism,
            seam_file=seeded.seam_file,
            applied_seq=checkpoint.seq,
            held=lambda: read_held(spark, engine, lake.bronze, opts.source, checkpoint.gtid_executed),
            fillers=fillers,
        )
        plan = cp.plan
        report.member = cp.member
        report.files += len(plan.files)
        report.skipped_files += len(plan.skipped)
        report.bytes += plan.bytes
        report.refused += plan.refused
        report.waiting, report.held = plan.waiting, plan.held
        if cp.switched_from is not None and plan.files:
            report.switches.append(f"{cp.switched_from or '(landing folder)'} -> {cp.member}")
        if cp.filled_by is not None and plan.files:  # before the append that skips the snapshot's transactions
            first = min(plan.files, key=lambda f: f.sequence)
            record_gap_fill(
                spark,
                engine,
                lake,
                opts.source,
                GapFill(cp.filled_by, ordering_key(first.sequence, 0, 0), first.name, cp.skip_gtids or ""),
            )
        if plan.tasks:
            applied = cp.skip_gtids or checkpoint.gtid_executed
            registry = registry_rows(spark, engine, lake) or None
            report.version, rows, totals = append_bronze(
                spark, engine, lake, plan.tasks, opts, applied, run_id, registry
            )
            report.rows.update(rows)
            for k, v in totals.items():
                report.totals[k] = report.totals.get(k, 0) + v
        if not cp.more or not plan.files:
            break
    if by_gtid:
        placed, waits = place_snapshots(
            spark,
            engine,
            lake,
            opts.source,
            by_gtid,
            checkpoint.seq,
            checkpoint.gtid_executed,
            _stream_places(landing_dir, stream_state(spark, engine, lake.bronze, opts.source)),
        )
        report.seeded.warnings += waits
        report.seeded.add(seed_from_snapshots(spark, engine, lake, opts.source, placed, tables=opts.tables))
    unseeded_gap(spark, engine, lake, opts.source, landing_dir, opts.tables.keeps)
    report.seconds = time.perf_counter() - started
    return report


def snapshots_of(
    spark: "SparkSession",
    engine: "DeltaEngine",
    lake,  # noqa: ANN001 - LakeLayout
    source: str,
    landing_dir: str,
) -> tuple[list, list]:
    """(the complete snapshots of a source's landing folder that seed before the ingest, those placed by their
    GTID set after it): ``binlake.snapshot.read_snapshots``. A snapshot's binlog position is a place in the
    stream only on the member the stream starts with (offset 0), before any switch; a cluster source places
    every other snapshot by GTID (``binlake.lake.gtid_seam``), and refuses one without a GTID set with a typed
    line."""
    from binlake.lake.seed import last_seeds
    from binlake.snapshot import read_snapshots
    from binlake.snapshot.errors import InvalidSnapshotError

    snapshots = read_snapshots(landing_dir)
    if not snapshots or not is_cluster(landing_dir):
        return snapshots, []
    state = stream_state(spark, engine, lake.bronze, source)
    switched = any(state.offsets.get(m, 0) for m in state.order)
    landed = _landed_members(landing_dir)
    first = state.order[0] if state.order else (landed[0] if landed else None)
    first_server = _file_server_id(landing_dir, first, state) if first is not None else None
    seeded = last_seeds(engine, lake, source)
    now, by_gtid = [], []
    for snap in snapshots:
        last = [seeded.get((t.db, t.table), (-1, None)) for t in snap.tables]
        if all(seam >= snap.seam_seq for seam, _ in last) or all(id_ == snap.id for _, id_ in last):
            continue  # seeded already (a snapshot placed by GTID has another seam than its position's)
        taken_on = _snapshot_server_id(snap)
        if not switched and (first_server is None or taken_on is None or taken_on == first_server):
            now.append(snap)
        elif snap.position.gtid:
            by_gtid.append(snap)
        else:
            where = (
                "the source has switched members"
                if switched
                else f"it was taken on server_id {taken_on}, but the source's stream starts with member "
                f"{first or '(landing folder)'} (server_id {first_server})"
            )
            raise InvalidSnapshotError(
                f"source {source}: snapshot {snap.id} ({snap.position.file}:{snap.position.pos}) has no GTID set "
                f"and {where}: its binlog position is one server's file, not a place in the source's stream; "
                f"take the snapshot with GTIDs on, or from member {first or '(landing folder)'} before any switch, "
                f"and move this one out of {landing_dir}/_snapshots"
            )
    return now, by_gtid


def _stream_places(landing_dir: str, state: StreamState) -> Callable[[Any], Optional[int]]:
    """snapshot -> the ``_binlake_seq`` of its position in the stream, when it was taken on a member the stream
    has read (by server_id) and its file is not before that member's first file in the stream; else None."""
    from binlake.pipeline.identity import ordering_key

    servers = {sid: m for m in state.order if (sid := _file_server_id(landing_dir, m, state)) is not None}

    def place(snap) -> Optional[int]:  # noqa: ANN001
        taken_on = _snapshot_server_id(snap)
        member = servers.get(taken_on) if taken_on is not None else None
        if member is None or not state.done.get(member):
            return None
        number = file_sequence(snap.position.file)
        if number < min(file_sequence(n) for n in state.done[member]):
            return None
        return ordering_key(number + state.offsets[member], snap.position.pos, 0)

    return place


def _snapshot_server_id(snap) -> Optional[int]:  # noqa: ANN001
    """The server_id a snapshot was taken on (its manifest's ``server``), or None when it does not say."""
    import json

    try:
        with open(os.path.join(snap.path, "manifest.json"), encoding="utf-8") as f:
            value = json.load(f).get("server", {}).get("server_id")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, int) else None


def _file_server_id(landing_dir: str, member: str, state: StreamState) -> Optional[int]:
    """The server_id of the server that wrote a member's first file (its FORMAT_DESCRIPTION event's header:
    timestamp, type, server_id), or None when no file of it is landed."""
    names = sorted(state.done.get(member, {}), key=file_sequence)
    folder = _member_dir(landing_dir, member)
    paths = [os.path.join(folder, n) for n in names] or landing_listing(folder)[0]
    for path in paths:
        try:
            with open(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb") as f:
                head = f.read(4 + 9)
        except OSError:
            continue
        if len(head) == 13:
            return int.from_bytes(head[9:13], "little")
    return None
