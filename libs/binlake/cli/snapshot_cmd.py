"""``binlake snapshot``: a live server's tables in one consistent view, as Parquet with the binlog position."""

from __future__ import annotations

import argparse
import sys
from typing import Any

EPILOG = """\
The source and its password are given as for `binlake fetch` (the same URI; the password from --password-env,
default BINLAKE_MYSQL_PASSWORD, or the first line of --password-file, never in the URI).
The user needs SELECT on the tables; on MySQL also RELOAD and REPLICATION CLIENT (a brief
FLUSH TABLES WITH READ LOCK while the position is read). MariaDB needs no lock at all. See docs/SNAPSHOT.md.

Files go to LANDING/<name>/_snapshots/<id>/ (manifest.json and tables/<db>__<table>/part-NNNNN.parquet), next
to the binlogs `binlake fetch` lands there. Kill it any time: rerunning the same command finishes the snapshot,
keeping every chunk whose key range did not change since.

A replication cluster: give each member's --source and the source's --name; the snapshot is taken on the
member the source read last (as `binlake fetch` follows it), or the next that answers. `binlake run` places a
snapshot of any member in the source's stream by its GTID set.

examples:
  BINLAKE_MYSQL_PASSWORD=... binlake snapshot --source 'mysql://snap@db1:3306/?server_id=4242' --landing /data/landing
  binlake snapshot --source 'mysql://snap@db1/?server_id=4242' --landing /data/landing --include 'shop.*' \\
      --exclude shop.audit_log --password-file /run/secrets/db1
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "snapshot",
        help="read a live server's tables in one consistent view into Parquet (resumable)",
        description="Read the selected tables of a running MySQL 8.0+/MariaDB 10.5+ server in one consistent view, "
        "in primary-key chunks, into Parquet files with silver's column types, and record the binlog "
        "position (file, offset, GTID set) at which that view is exact.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--source",
        required=True,
        metavar="URI",
        action="append",
        help="mysql://user@host:port/?server_id=N (as for fetch); repeat it (or give a comma-separated list) for "
        "the members of a replication cluster, with --name for the source: the snapshot is taken on the member "
        "the source read last, or the next that answers",
    )
    parser.add_argument(
        "--landing", required=True, metavar="DIR", help="landing root; the snapshot goes to DIR/<name>/_snapshots/"
    )
    parser.add_argument("--name", help="landing sub-folder for this source (default: URI name= or host-port)")
    parser.add_argument(
        "--include",
        action="append",
        default=[],
        metavar="DB.TABLE",
        help="only these tables (wildcards * and ?; repeatable; default: every base table outside the system schemas)",
    )
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="DB.TABLE",
        help="leave these tables out (wins over --include; repeatable)",
    )
    secret = parser.add_mutually_exclusive_group()
    secret.add_argument("--password-env", metavar="VAR", help="environment variable with the password")
    secret.add_argument("--password-file", metavar="FILE", help="file whose first line is the password")
    parser.add_argument(
        "--allow-cleartext-password",
        action="store_true",
        help="let a server that asks (mysql_clear_password, PAM dialog) have the password in clear "
        "text, only over TLS verified with ssl_ca in the URI (default: refused)",
    )
    parser.add_argument(
        "--chunk-rows",
        type=int,
        default=100_000,
        metavar="N",
        help="rows per primary-key chunk and per Parquet file (default 100000)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace
    from pathlib import Path

    from binlake.pipeline.filters import TableFilter
    from binlake.snapshot import ServerUnreachableError, SnapshotOptions, take_snapshot
    from binlake.transport.cluster import member_order, parse_members

    members = parse_members(
        args.source,
        args.name,
        password_env=args.password_env,
        password_file=args.password_file,
        allow_cleartext_password=args.allow_cleartext_password,
    )
    options = SnapshotOptions(TableFilter(tuple(args.include), tuple(args.exclude)), chunk_rows=args.chunk_rows)
    order = member_order(members, Path(args.landing) / args.name) if len(members) > 1 else members
    for i, member in enumerate(order):
        try:
            result = take_snapshot(
                replace(member, name=args.name or member.name), args.landing, options, stream=sys.stderr
            )
        except ServerUnreachableError as exc:
            if i + 1 == len(order):
                raise
            print(f"binlake snapshot: member {member.name} does not answer ({exc}); trying the next", file=sys.stderr)
            continue
        print(result.summary())
        return 0
    return 1  # (not reached: the last member's error is raised)
