"""Table maintenance (``binlake maintain``, the ``lake_maintenance`` DAG): for every Delta table of the lake
(bronze, silver with its history tables, meta), compact small files, vacuum files no version within the
retention references, and write a Delta log checkpoint. Scratch folders under ``<lake>/_staging`` older than the
retention (left by a job that was killed; a finished job removes its own) are deleted too, and so are the rows of
``meta/tombstones`` at or below their source's checkpoint (loads leave them: they are of applied changes).

Daily MERGEs leave many small files and old versions behind. Compaction rewrites a table's small files into
few large ones without changing its rows (a new version whose data equals the previous one); vacuum deletes
files only versions older than the retention reference, so time travel within the retention and readers that
started within it keep working. The retention defaults to :data:`SAFE_RETENTION_HOURS` (a week, Delta's own
default for ``delta.deletedFileRetentionDuration``); a shorter one is refused unless forced, because a reader
or a load running longer than the retention, or time travel further back, would then fail on deleted files.

Run it while no load writes the lake: a concurrent MERGE and compaction of the same table conflict (one
fails and is retried by Airflow).

Maintenance deletes only what it can prove is the lake's own (:mod:`binlake.lake.owned`): a table folder that is
a symbolic link, lies outside the lake, or holds a link anywhere inside (VACUUM would follow it and delete the
files it points to) is skipped whole, with the reason in the report; so are a ``_staging`` or
``_staging/binlake-staging`` that is a link, and a scratch folder that is one.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from binlake.lake.errors import LakeError
from binlake.lake.owned import LINK_ADVICE, OutsideLakeError, link_problem, links_inside, tree_problem

if TYPE_CHECKING:
    from binlake.lake.delta import DeltaEngine
    from binlake.lake.layout import LakeLayout

SAFE_RETENTION_HOURS = 168.0
AREAS = ("bronze", "silver", "meta")


class UnsafeRetentionError(LakeError):
    """A vacuum retention below the safe minimum was asked for without ``--force``."""


class MaintenanceError(LakeError):
    """A table could not be maintained (the message names it and the cause)."""


def check_retention(hours: float, force: bool) -> None:
    if hours < 0:
        raise UnsafeRetentionError(f"--vacuum-hours {hours:g}: give a retention of 0 hours or more")
    if hours < SAFE_RETENTION_HOURS and not force:
        raise UnsafeRetentionError(
            f"vacuum retention {hours:g} h is below the safe minimum of {SAFE_RETENTION_HOURS:g} h: time travel "
            f"further back and readers or loads running longer would fail on deleted files; pass --force to "
            f"vacuum anyway (only while nothing reads or writes the lake)"
        )


def lake_tables(lake: "LakeLayout") -> list[str]:
    """Every Delta table under the lake's bronze/, silver/ and meta/ (paths, sorted)."""
    out = []
    for area in AREAS:
        base = Path(lake.root, area)
        if base.is_dir():
            out += [str(d) for d in sorted(base.iterdir()) if (d / "_delta_log").is_dir()]
    return out


@dataclass
class TableResult:
    table: str  # relative to the lake root, e.g. silver/shop__orders
    version_before: int = -1
    version_after: int = -1
    files_before: int = 0
    files_after: int = 0
    files_compacted: int = 0  # removed by compaction
    files_written: int = 0  # added by compaction
    files_vacuumed: int = 0  # deleted (dry run: would be deleted)
    checkpoint_version: int | None = None
    seconds: float = 0.0


@dataclass
class MaintenanceReport:
    lake: str
    engine: str
    vacuum_hours: float
    dry_run: bool
    tables: list[TableResult] = field(default_factory=list)
    staging_removed: list[str] = field(default_factory=list)  # stale _staging folders (dry run: would be)
    skipped: list[dict[str, str]] = field(default_factory=list)  # {"path", "reason"}: not provably the lake's
    tombstones_purged: int = 0  # applied tombstones deleted (dry run: that would be deleted)

    def as_dict(self) -> dict[str, Any]:
        t = self.tables
        return {
            "lake": self.lake,
            "engine": self.engine,
            "vacuum_hours": self.vacuum_hours,
            "dry_run": self.dry_run,
            "tables": [asdict(r) for r in t],
            "staging_removed": self.staging_removed,
            "tombstones_purged": self.tombstones_purged,
            "skipped": self.skipped,
            "totals": {
                "tables": len(t),
                "files_before": sum(r.files_before for r in t),
                "files_after": sum(r.files_after for r in t),
                "files_compacted": sum(r.files_compacted for r in t),
                "files_written": sum(r.files_written for r in t),
                "files_vacuumed": sum(r.files_vacuumed for r in t),
            },
        }


def maintain_table(
    engine: "DeltaEngine",
    path: str,
    rel: str,
    *,
    vacuum_hours: float,
    dry_run: bool,
    first: Callable[[], Any] | None = None,
) -> TableResult:
    """Compact, vacuum and checkpoint one table (with ``dry_run``: only count what vacuum would delete);
    ``first`` runs before the compaction (a purge of rows, that counts them in a dry run)."""
    started = time.perf_counter()
    r = TableResult(rel)
    links = [path] if os.path.islink(path) else [os.path.join(path, p) for p in links_inside(path)]
    if links:  # VACUUM (delta-spark) follows links; compaction and checkpoints would write through them
        raise OutsideLakeError(f"{links[0]} is a symbolic link: the table {rel} is not maintained; {LINK_ADVICE}")
    try:
        r.version_before = engine.version(path)
        r.files_before = len(engine.data_files(path))
        files = r.files_before
        if first is not None:
            first()
            files = len(engine.data_files(path))
        if not dry_run and files > 1:
            r.files_compacted, r.files_written = engine.compact(path)
        r.files_vacuumed = len(engine.vacuum(path, vacuum_hours, dry_run=dry_run))
        if not dry_run:
            r.checkpoint_version = engine.checkpoint(path)
        r.version_after = engine.version(path)
        r.files_after = len(engine.data_files(path))
    except LakeError:
        raise
    except Exception as exc:  # noqa: BLE001  (engine errors of many kinds: one line naming the table)
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        raise MaintenanceError(
            f"maintaining {path} with the {engine.name} engine failed: {first}; fix the "
            f"cause and rerun (maintenance is safe to repeat)"
        ) from exc
    r.seconds = round(time.perf_counter() - started, 3)
    return r


def stale_staging(
    staging_root: str,
    older_than_hours: float,
    *,
    dry_run: bool = False,
    now: float | None = None,
    skipped: list[dict[str, str]] | None = None,
) -> list[str]:
    """The scratch folders under ``staging_root`` (a fold's Parquet, the embedded engine's MERGE sources, the
    spark engine's warming table left by a killed run) not modified for ``older_than_hours``: deleted unless
    ``dry_run``; their paths. Nothing is deleted through a symbolic link: ``staging_root`` or its
    ``binlake-staging`` that is one, or resolves outside the lake (the parent of ``staging_root``), and scratch
    folders that are links, are left alone and added to ``skipped``."""
    cutoff = (time.time() if now is None else now) - older_than_hours * 3600
    root = Path(staging_root)
    refused = skipped if skipped is not None else []
    problem = link_problem(root.parent, root)
    if problem is not None:
        refused.append({"path": str(root), "reason": f"{problem}; {LINK_ADVICE}"})
        return []
    merges = root / "binlake-staging"
    candidates = [*root.glob("fold-*"), *root.glob("warming-*")]
    if merges.is_symlink():
        refused.append({"path": str(merges), "reason": f"{link_problem(root, merges)}; {LINK_ADVICE}"})
    else:
        candidates += merges.glob("*")
    found = []
    for p in candidates:
        if p.is_symlink():
            refused.append({"path": str(p), "reason": f"{link_problem(root, p)}; {LINK_ADVICE}"})
        elif p.is_dir() and max((f.lstat().st_mtime for f in p.rglob("*")), default=p.lstat().st_mtime) < cutoff:
            found.append(p)
    if not dry_run:
        for p in found:
            shutil.rmtree(p, ignore_errors=True)  # never follows a link inside (fd-based on Linux)
    return sorted(str(p) for p in found)


def purge_tombstones(engine: "DeltaEngine", lake: "LakeLayout", *, dry_run: bool = False) -> int:
    """Delete the tombstones each source's checkpoint has passed (its loads read only newer ones); how many
    (``dry_run``: only count them)."""
    from binlake.vocabulary import SEQ_COL, SOURCE_ROW

    purge = engine.count if dry_run else engine.delete
    purged = 0
    for r in engine.read_rows(None, lake.checkpoints, ("source", SEQ_COL), {"table_name": SOURCE_ROW}):
        if r[SEQ_COL] is not None:
            purged += purge(lake.tombstones, {"source": r["source"]}, at_most=(SEQ_COL, r[SEQ_COL]))
    return purged


def maintain_lake(
    engine: "DeltaEngine",
    lake: "LakeLayout",
    *,
    vacuum_hours: float = SAFE_RETENTION_HOURS,
    force: bool = False,
    dry_run: bool = False,
    progress: Callable[[str], None] = lambda text: None,
) -> MaintenanceReport:
    """Maintain every table of the lake (see the module docstring); progress per table."""
    check_retention(vacuum_hours, force)
    report = MaintenanceReport(lake.root, engine.name, vacuum_hours, dry_run)

    def purge() -> None:
        report.tombstones_purged = purge_tombstones(engine, lake, dry_run=dry_run)
        progress(
            f"meta/tombstones: {report.tombstones_purged} tombstone(s) of applied changes "
            f"{'to purge' if dry_run else 'purged'}"
        )

    tables = lake_tables(lake)
    for n, path in enumerate(tables, 1):
        rel = str(Path(path).relative_to(lake.root))
        problem = tree_problem(lake.root, path)
        if problem is not None:
            report.skipped.append({"path": rel, "reason": f"{problem}; {LINK_ADVICE}"})
            progress(f"[{n}/{len(tables)}] {rel}: WARNING: skipped, {problem}")
            continue
        progress(f"[{n}/{len(tables)}] {rel}: {'counting' if dry_run else 'compacting, vacuuming, checkpointing'}")
        r = maintain_table(
            engine,
            path,
            rel,
            vacuum_hours=vacuum_hours,
            dry_run=dry_run,
            first=purge if Path(path) == Path(lake.tombstones) else None,
        )
        progress(
            f"[{n}/{len(tables)}] {rel}: {r.files_before} -> {r.files_after} data file(s), "
            f"{r.files_vacuumed} file(s) {'to vacuum' if dry_run else 'vacuumed'}"
        )
        report.tables.append(r)
    refused = len(report.skipped)
    report.staging_removed = stale_staging(lake.staging, vacuum_hours, dry_run=dry_run, skipped=report.skipped)
    for s in report.skipped[refused:]:
        progress(f"WARNING: {s['path']} skipped: {s['reason']}")
    if report.staging_removed:
        progress(f"_staging: {len(report.staging_removed)} stale folder(s) {'to delete' if dry_run else 'deleted'}")
    return report


def format_report(report: MaintenanceReport) -> str:
    d = report.as_dict()
    rows = [("table", "files before", "after", "compacted", "vacuumed", "version", "checkpoint")]
    rows += [
        (
            r.table,
            str(r.files_before),
            str(r.files_after),
            f"{r.files_compacted}->{r.files_written}",
            str(r.files_vacuumed),
            f"{r.version_before}->{r.version_after}",
            "-" if r.checkpoint_version is None else str(r.checkpoint_version),
        )
        for r in report.tables
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [
        f"lake {report.lake}: {len(report.tables)} table(s), engine {report.engine}, vacuum retention "
        f"{report.vacuum_hours:g} h" + (" (dry run: nothing changed)" if report.dry_run else "")
    ]
    lines += [
        "  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in rows
    ]
    t = d["totals"]
    lines.append(
        f"data files {t['files_before']} -> {t['files_after']}; {t['files_compacted']} compacted into "
        f"{t['files_written']}; {t['files_vacuumed']} {'to vacuum' if report.dry_run else 'vacuumed'}"
    )
    if report.tombstones_purged:
        lines.append(
            f"meta/tombstones: {report.tombstones_purged} tombstone(s) of applied changes "
            f"{'to purge' if report.dry_run else 'purged'}"
        )
    for s in report.skipped:
        lines.append(f"WARNING: {s['path']} skipped: {s['reason']}")
    if report.staging_removed:
        lines.append(
            f"_staging: {len(report.staging_removed)} stale folder(s) left by killed jobs "
            f"{'to delete' if report.dry_run else 'deleted'}"
        )
    return "\n".join(lines)
