"""``binlake maintain``: compact, vacuum and checkpoint every Delta table of a lake."""

from __future__ import annotations

import argparse
import json
import os
import sys

from binlake.lake.delta.engine import ENGINE_NAMES

DESCRIPTION = """\
Maintain every Delta table of the lake (bronze, silver and its history tables, meta):

  compact     rewrite small files into few large ones (rows unchanged; a new table version)
  vacuum      delete files that no version within the retention references
  checkpoint  write a Delta log checkpoint, so readers replay few log files

The retention (--vacuum-hours, default 168 = 7 days, Delta's default) keeps time travel and readers working
within it; a shorter one is refused unless --force is given. Run it while no load writes the lake (the
weekly lake_maintenance DAG does). --dry-run changes nothing and counts what vacuum would delete per table and
the tombstones it would purge.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    from binlake.lake.maintain import SAFE_RETENTION_HOURS

    p = subparsers.add_parser(
        "maintain",
        help="compact, vacuum and checkpoint every Delta table of a lake",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--lake", required=True, metavar="DIR", help="the lake root (as given to `binlake run`)")
    p.add_argument(
        "--vacuum-hours",
        type=float,
        default=SAFE_RETENTION_HOURS,
        metavar="N",
        help=f"vacuum retention in hours (default {SAFE_RETENTION_HOURS:g}; below it needs --force)",
    )
    p.add_argument("--force", action="store_true", help="allow a retention below the safe minimum")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="change nothing; count what vacuum would delete and the tombstones it would purge",
    )
    p.add_argument(
        "--engine",
        choices=ENGINE_NAMES,
        default="auto",
        help="Delta engine (rust needs no Spark; auto picks spark when its jars are set up)",
    )
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.set_defaults(func=cmd_maintain)


def _progress(text: str) -> None:
    print(f"binlake maintain: {text}", file=sys.stderr, flush=True)


def cmd_maintain(args: argparse.Namespace) -> int:
    from binlake.lake.layout import LakeLayout
    from binlake.lake.maintain import check_retention, format_report, maintain_lake
    from binlake.lake.status import check_lake

    lake = LakeLayout(os.path.abspath(args.lake))
    check_lake(lake)
    check_retention(args.vacuum_hours, args.force)
    if args.engine == "rust":
        from binlake.lake.delta.rust import RustEngine

        engine = RustEngine()
    else:
        from binlake.lake.delta import engine_for
        from binlake.lake.session import build_session

        _progress("starting Spark")
        engine = engine_for(build_session("binlake-maintain"), args.engine)
    report = maintain_lake(
        engine, lake, vacuum_hours=args.vacuum_hours, force=args.force, dry_run=args.dry_run, progress=_progress
    )
    print(json.dumps(report.as_dict(), sort_keys=True) if args.json else format_report(report), flush=True)
    return 0
