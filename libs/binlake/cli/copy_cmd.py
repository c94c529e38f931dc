"""``binlake copy``: decode a binlog and write it again, optionally keeping only some tables."""

from __future__ import annotations

import argparse
import fnmatch
import sys
from typing import Sequence

DESCRIPTION = """\
Decode IN with binlake's reader and re-encode every event with binlake's writer into OUT.

Without filters OUT is byte-identical to IN for every event type the writer supports (a self-check of the
decoder and the encoder). With --include/--exclude, OUT is a valid binlog holding only the kept transactions:
rows events and TABLE_MAPs of other tables are dropped, transactions left without rows are dropped whole,
and positions, GTID transaction lengths, compressed payloads and CRC32 checksums are rewritten. Transactions
without row events (DDL) are kept when their default database matches an include pattern.

Patterns are shell globs over db.table, e.g. --include 'shop.*' --exclude 'shop.audit_*'. An exclude wins
over an include; with only excludes every other table is kept.
"""


def table_filter(include: Sequence[str], exclude: Sequence[str]):
    """``keep(db, table)`` for glob patterns over ``db.table`` (table ``*`` asks about a whole database)."""
    inc = list(include) or ["*"]

    def keep(db: str, table: str) -> bool:
        if table == "*":
            return any(fnmatch.fnmatchcase(db, p.split(".", 1)[0]) for p in inc) and not any(
                p.endswith(".*") and fnmatch.fnmatchcase(db, p[:-2]) for p in exclude
            )
        name = f"{db}.{table}"
        return any(fnmatch.fnmatchcase(name, p) for p in inc) and not any(fnmatch.fnmatchcase(name, p) for p in exclude)

    return keep


def _run(args: argparse.Namespace) -> int:
    from binlake.binlog.encode_copy import copy_binlog

    keep = table_filter(args.include, args.exclude) if (args.include or args.exclude) else None
    stats = copy_binlog(args.input, args.output, keep=keep, verify_checksum=not args.no_verify_checksum)
    print(
        f"{args.output}: {stats.bytes_out} bytes, {stats.events_out}/{stats.events_in} events, "
        f"{stats.transactions_out}/{stats.transactions_in} transactions kept",
        file=sys.stderr,
    )
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "copy",
        help="re-encode a binlog (byte-identical), optionally filtering tables",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("input", metavar="IN", help="binlog file to read")
    p.add_argument("output", metavar="OUT", help="binlog file to write (overwritten)")
    p.add_argument(
        "--include",
        action="append",
        default=[],
        metavar="DB.TABLE",
        help="keep tables matching this glob (repeatable; default: all)",
    )
    p.add_argument(
        "--exclude", action="append", default=[], metavar="DB.TABLE", help="drop tables matching this glob (repeatable)"
    )
    p.add_argument(
        "--no-verify-checksum",
        action="store_true",
        help="do not check CRC32 checksums while reading (for damaged files)",
    )
    p.set_defaults(func=_run)
