"""``binlake status``: per source and table, how fresh the lake is and what needs a look."""

from __future__ import annotations

import argparse
import json
import os

from binlake.lake.delta.engine import ENGINE_NAMES

DESCRIPTION = """\
How fresh the lake is, per source: the commit time of the last applied change and the lag behind it now, the
last run (from meta.run_metrics), landing files not ingested yet and a gap in the binlogs that stops the source
(with --landing) and rows in meta.quarantine;
per table: live rows of its silver table (tombstones not counted, rows of tables without a primary key
counted with their multiplicity) and the commit time of its last applied change.

--json prints one object: {"lake", "generated_at", "sources": [{"source", "last_commit_time" (ISO 8601,
UTC), "lag_seconds", "checkpoint_seq", "applied_gtids" (the GTID set applied, or null), "member" (a cluster
source: the member read last, or null), "last_run", "pending_files", "gap" (why the
source is stopped, or null), "waiting" (the landing file cut short the source waits at, or null),
"refused_files" (with --landing: "<name>: <reason>" of landing entries ingest does
not read, such as symbolic links), "quarantined_rows",
"tables": [{"table": "<db>.<table>", "live_rows", "last_commit_time", "lag_seconds", "quarantined_rows"}]}]}
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "status",
        help="freshness, lag, last run, pending files and quarantine per source",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--lake", required=True, metavar="DIR", help="the lake root (as given to `binlake run`)")
    p.add_argument(
        "--landing", metavar="DIR", help="landing root (one folder per source): also count the files not ingested yet"
    )
    p.add_argument(
        "--engine",
        choices=ENGINE_NAMES,
        default="auto",
        help="ignored: status reads the tables with delta-rs, without Spark (kept for older scripts)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the tables")
    p.set_defaults(func=cmd_status)


def cmd_status(args: argparse.Namespace) -> int:
    from binlake.lake.damage import guarded, printable_doc
    from binlake.lake.layout import LakeLayout
    from binlake.lake.status import check_lake, format_status, lake_status

    lake = LakeLayout(os.path.abspath(args.lake))
    check_lake(lake)
    doc = guarded(lake, lambda: lake_status(lake, landing=args.landing))  # a damaged table: one typed line
    print(json.dumps(doc, sort_keys=True) if args.json else format_status(printable_doc(doc)), flush=True)
    return 0
