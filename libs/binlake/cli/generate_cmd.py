"""``binlake generate``: a deterministic MySQL 8.0 workload as binlogs, SDI and ground truth."""

from __future__ import annotations

import argparse
import datetime as dt
import sys

from binlake.errors import BinlakeError

DESCRIPTION = """\
Write a realistic, deterministic MySQL 8.0 change stream without a MySQL server, plus the exact state it leads
to, so every stage of binlake (and any other CDC tool) can be checked end to end.

The workload (database `shop`, one GTID source):
  customers   int unsigned PK, varchar/char (utf8mb4), date, datetime(6), timestamp(3), decimal, double,
              enum, set, tinyint(1), text, blob, NULLs; gets `ALTER TABLE ... ADD COLUMN loyalty_points`
              in the middle of the stream (a second table version, with its own SDI)
  products    bigint PK that UPDATEs sometimes change (re-SKU), float, mediumint, tinyint unsigned, year,
              binary(4), varbinary, bit(10), timestamp, and a JSON `attributes` document edited in place
  orders      bigint unsigned PK, enum status, decimal(14,4), smallint unsigned, datetime, time(2),
              mediumtext, and a JSON `doc` (~--json-size bytes: nested objects, arrays of objects) updated
              partially: JSON_SET/JSON_REPLACE/JSON_REMOVE/JSON_INSERT/JSON_ARRAY_INSERT-shaped edits, up to
              four per update, on nested paths and array elements (REPLACE, INSERT and REMOVE diffs)
  audit_log   no primary key (rows found by their full before image); signed bigint, double, varbinary,
              time, smallint, char(8) latin1
Each day has --scale x 60000 transactions (1-3 statements each: inserts, multi-row updates, deletes) with
commit timestamps spread evenly over the day. --scale 1 is about 100 MB of binlog per day.

Binlog settings mirrored: binlog_format=ROW, binlog_row_metadata=FULL, gtid_mode=ON, binlog_checksum=CRC32,
binlog_row_value_options=PARTIAL_JSON (a JSON column is logged as a diff vector when that is smaller than
the document, WL#2955 FR11/FR12, else in full), --row-image as binlog_row_image, --compression-share of
transactions as zstd TRANSACTION_PAYLOAD events, files rotated at --max-binlog-size and after each day.

Output (DIR):
  landing/<source>/mysql-bin.NNNNNN (+ mysql-bin.index)   the binlogs
  sdi/shop/<table>/v<N>/<table>_<id>.sdi, <table>.ibd2sdi.json  every table version's SDI
  truth/shop.<table>/day=<YYYY-MM-DD>.jsonl              each table's rows at the end of each day, computed
                                                         from the generator's own model (never from binlogs)
  manifest.json                                          settings, files per day, table versions + positions
The same --seed and knobs always give byte-identical output.
"""


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date like 2024-03-01, got {text!r}") from None


def default_start(days: int, today: dt.date | None = None) -> dt.date:
    """The first of ``days`` days that end yesterday (UTC)."""
    today = today or dt.datetime.now(dt.timezone.utc).date()
    return today - dt.timedelta(days=days)


def _share(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a share between 0 and 1, got {text}")
    return value


def _run(args: argparse.Namespace) -> int:
    from binlake.generate.config import ROW_IMAGES, GenerateConfig
    from binlake.generate.run import generate
    from binlake.generate.tables import TABLE_NAMES

    tables = tuple(t.strip() for t in args.tables.split(",") if t.strip()) if args.tables else TABLE_NAMES
    unknown = sorted(set(tables) - set(TABLE_NAMES))
    if unknown:
        raise BinlakeError(f"unknown table(s) {', '.join(unknown)}; choose from {', '.join(TABLE_NAMES)}")
    if args.row_image not in ROW_IMAGES:
        raise BinlakeError(f"--row-image must be one of {', '.join(ROW_IMAGES)}")
    if args.days < 1 or args.scale <= 0:
        raise BinlakeError("--days must be at least 1 and --scale above 0")
    start = args.start_date or default_start(args.days)
    config = GenerateConfig(
        seed=args.seed,
        days=args.days,
        scale=args.scale,
        tables=tables,
        json_size=args.json_size,
        partial_share=args.partial_share,
        compression_share=args.compression_share,
        row_image=args.row_image,
        start_date=start,
        source=args.source,
        max_binlog_size=args.max_binlog_size,
    )
    result = generate(args.out, config)
    print(
        f"{args.out}: {len(result.binlogs)} binlog files, {result.binlog_bytes / 1e6:.1f} MB, "
        f"{result.transactions} transactions, {result.row_changes} row changes in {result.seconds:.1f} s "
        f"({result.mb_per_second:.1f} MB/s)",
        file=sys.stderr,
    )
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "generate",
        help="write a deterministic MySQL 8.0 workload: binlogs, SDI, truth",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--out", required=True, metavar="DIR", help="output directory (landing/, sdi/, truth/)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    p.add_argument("--days", type=int, default=2, help="number of days (default 2)")
    p.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="size multiplier: 1 = 60000 transactions, about 100 MB of binlog per day (default 1)",
    )
    p.add_argument(
        "--tables",
        default="",
        metavar="T1,T2",
        help="comma-separated subset of customers,products,orders,audit_log (default all)",
    )
    p.add_argument(
        "--json-size",
        type=int,
        default=1000,
        metavar="BYTES",
        help="approximate size of an order's JSON document as text (default 1000)",
    )
    p.add_argument(
        "--partial-share",
        type=_share,
        default=0.8,
        metavar="0..1",
        help="share of JSON updates made as in-place edits (JSON diffs) rather than whole new "
        "documents; 0 also turns PARTIAL_JSON off (default 0.8)",
    )
    p.add_argument(
        "--compression-share",
        type=_share,
        default=0.2,
        metavar="0..1",
        help="share of transactions written zstd-compressed (default 0.2)",
    )
    p.add_argument("--row-image", default="full", metavar="full|minimal|noblob", help="binlog_row_image (default full)")
    p.add_argument(
        "--start-date",
        "--start",
        type=_date,
        default=None,
        metavar="YYYY-MM-DD",
        help="date of the first day (default: the days end yesterday, UTC, so a scheduled run of "
        "today finds recent data; give a date for reproducible dates)",
    )
    p.add_argument("--source", default="shop-primary", help="source name: the landing/ sub-folder")
    p.add_argument(
        "--max-binlog-size",
        type=int,
        default=0,
        metavar="BYTES",
        help="rotate files at this size (default: a quarter of a day's expected bytes)",
    )
    p.set_defaults(func=_run)
