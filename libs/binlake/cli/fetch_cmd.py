"""``binlake fetch``: copy a live server's binlogs into the landing zone (replication protocol), resumably."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from types import FrameType
from typing import Any

EPILOG = """\
The password is never part of the URI: it is read from the environment variable named by --password-env
(default BINLAKE_MYSQL_PASSWORD) or from the first line of --password-file, and never printed.
The user needs: GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'user'@'host'.

Files land in LANDING/<name>/ with the server's names and bytes; LANDING/<name>/_binlake_fetch.json lists the
closed files and the fsynced position. Kill it any time: the next run resumes after the last whole event.

A replication cluster: give each member's URI (repeated --source, or comma-separated) and the source's --name.
Each member lands in LANDING/<name>/<member>/ (member: the URI's name= or host-port); the fetch reads the member
it read last and, when that one does not answer, the next one given (a failover); binlake run follows the source
to it by GTID.

examples:
  BINLAKE_MYSQL_PASSWORD=... binlake fetch --source 'mysql://repl@db1:3306/?server_id=4242' --landing /data/landing
  binlake fetch --source 'mysql://repl@db1/?server_id=4242&name=db1' --landing /data/landing --stop-never
  binlake fetch --source 'mysql://repl@db1/?server_id=4242' --source 'mysql://repl@db2/?server_id=4242' \\
      --name shop --landing /data/landing
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "fetch",
        help="copy a live server's binlogs into the landing zone (resumable)",
        description="Fetch binary logs from a running MySQL/MariaDB server with the replication protocol and "
        "store them byte for byte under LANDING/<name>/.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--source",
        required=True,
        metavar="URI",
        action="append",
        help="mysql://user@host:port/?server_id=N[&name=...&heartbeat=5&semi_sync=0&ssl=0&ssl_ca=FILE]"
        "; repeat it (or give a comma-separated list) for the members of a replication cluster, "
        "with --name for the source: each member lands in DIR/<name>/<member>/",
    )
    parser.add_argument("--landing", required=True, metavar="DIR", help="landing root; files go to DIR/<name>/")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--until-now",
        action="store_true",
        help="stop at the end of the server's binlog as it is when reached (default)",
    )
    mode.add_argument(
        "--stop-never",
        action="store_true",
        help="keep following the binlog until stopped (SIGTERM/Ctrl-C stop cleanly)",
    )
    parser.add_argument("--name", help="landing sub-folder for this source (default: URI name= or host-port)")
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
        "--start-file",
        metavar="BINLOG",
        help="for an empty landing folder: start at this server file instead of the oldest",
    )
    parser.add_argument(
        "--allow-statement-format", action="store_true", help="fetch even when the server's binlog_format is not ROW"
    )
    parser.add_argument(
        "--max-retries",
        type=int,
        default=None,
        metavar="N",
        help="consecutive failed reconnects before giving up (default 5; with --stop-never: forever)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log connects, rotations and retries")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from binlake.transport import FetchOptions, StopFetch, fetch
    from binlake.transport.cluster import fetch_cluster, parse_members

    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, stream=sys.stderr, format="binlake fetch: %(message)s"
    )
    members = parse_members(
        args.source,
        args.name,
        password_env=args.password_env,
        password_file=args.password_file,
        allow_cleartext_password=args.allow_cleartext_password,
    )
    cluster = len(members) > 1
    source = members[0]
    retries = args.max_retries if args.max_retries is not None else (None if args.stop_never else 5)
    options = FetchOptions(
        until_now=not args.stop_never,
        start_file=args.start_file,
        require_row_format=not args.allow_statement_format,
        max_retries=retries,
    )

    def stop(signum: int, frame: FrameType | None) -> None:
        raise StopFetch()

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        if cluster:
            source, result = fetch_cluster(members, args.landing, args.name, options)
        else:
            result = fetch(source, args.landing, options)
    finally:
        signal.signal(signal.SIGTERM, previous)
    closed = f", closed {', '.join(result.closed_files)}" if result.closed_files else ""
    print(
        f"fetched {result.events} events ({result.bytes} bytes) from {source.display()} into {result.landing}"
        f"{closed}; now at {result.current_file}:{result.position}"
        + (f"; {result.reconnects} reconnects" if result.reconnects else "")
    )
    return 0
