"""What the thin Spark job entry points (``spark_jobs/*.py``) share: their argument parser, their setup (session,
engine, layout, options) and their one-line JSON report."""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

from binlake.lake.layout import LakeLayout
from binlake.lake.options import RunOptions
from binlake.pipeline.bronze import DECODE_ERROR_POLICIES
from binlake.pipeline.filters import TableFilter

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from binlake.lake.delta import DeltaEngine


def job_parser(
    prog: str,
    doc: Optional[str],
    *,
    landing: bool = False,
    filters: bool = False,
    history: bool = False,
    decode_errors: bool = False,
) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    if landing:
        p.add_argument("--landing", required=True, help="landing root (binlogs in <landing>/<source>/)")
    p.add_argument("--lake", required=True, help="lake root")
    p.add_argument("--source", required=True)
    p.add_argument("--run-id", default="", help="the run's id (the DAG passes its interval start)")
    p.add_argument(
        "--end",
        type=dt.datetime.fromisoformat,
        help="interval end (exclusive): changes committed before it; naive times are UTC",
    )
    add_engine_option(p)
    if filters:
        p.add_argument("--include", action="append", default=[], metavar="DB.TABLE")
        p.add_argument("--exclude", action="append", default=[], metavar="DB.TABLE")
    if decode_errors:
        p.add_argument(
            "--on-decode-error",
            choices=DECODE_ERROR_POLICIES,
            default="quarantine",
            help="an undecodable stretch: quarantine it and load the rest (default), or fail the job",
        )
    if history:
        p.add_argument("--history", action="store_true", help="also write SCD2 history tables")
        p.add_argument(
            "--temporal-text",
            action="store_true",
            help="DATE/DATETIME/TIMESTAMP as MySQL's text in silver instead of typed columns",
        )
    return p


def cutoff_us(end: Optional[dt.date]) -> Optional[int]:
    """Microseconds since the epoch of an interval end (naive times are UTC); a date (not a time) is the last day
    loaded: its end, the next midnight UTC."""
    if end is None:
        return None
    if not isinstance(end, dt.datetime):
        end = dt.datetime.combine(end + dt.timedelta(days=1), dt.time())
    end = end if end.tzinfo is not None else end.replace(tzinfo=dt.timezone.utc)
    return int(end.timestamp() * 1_000_000)


def add_engine_option(p: argparse.ArgumentParser, help: Optional[str] = None) -> None:
    """``--engine auto|rust|spark``, as every job and command takes it (``binlake.lake.delta.engine_for``)."""
    from binlake.lake.delta.engine import ENGINE_NAMES

    p.add_argument(
        "--engine",
        choices=ENGINE_NAMES,
        default="auto",
        help=help or "Delta engine (default auto: spark when delta-spark's jars are set up, else rust)",
    )


def job_setup(args: Any, app: str) -> tuple["SparkSession", "DeltaEngine", LakeLayout, RunOptions]:
    from binlake.lake.delta import engine_for
    from binlake.lake.preflight import check_lake, check_landing
    from binlake.lake.session import build_session

    check_lake(args.lake)  # a file, read-only or full disk: one line, before Spark starts
    if getattr(args, "landing", None):
        check_landing(args.landing)
    from binlake.lake.source_lock import hold_source_lock

    hold_source_lock(args.lake, args.source)  # one writer per source, across runs and backfills (before Spark)
    tables = TableFilter(tuple(getattr(args, "include", ())), tuple(getattr(args, "exclude", ())))
    opts = RunOptions(
        args.source,
        tables,
        cutoff_us(args.end),
        getattr(args, "history", False),
        getattr(args, "temporal_text", False),
        run_id=args.run_id,
        on_decode_error=getattr(args, "on_decode_error", "quarantine"),
    )
    spark = build_session(app)
    lake = LakeLayout(args.lake)
    return spark, engine_for(spark, args.engine, staging_root=lake.staging), lake, opts


def source_dir(landing: str, source: str) -> str:
    folder = Path(landing, source)
    return str(folder if folder.is_dir() else Path(landing))


def job_main(run: Callable[[], int]) -> int:
    """Run a job; a binlake error (a Spark failure included, see lake.failures) is one line on stderr and the
    error's exit code, like the CLI. A fatal signal in the driver's Python (an abort in a native library) prints
    every thread's Python stack first (``faulthandler``), so the job's log names where it happened."""
    import faulthandler
    import sys

    try:
        faulthandler.enable()
    except (OSError, ValueError):  # a stderr without a file descriptor (captured in-process): no dump
        pass

    from binlake.errors import BinlakeError

    try:
        return run()
    except BinlakeError as exc:
        print(f"binlake: error: {exc}", file=sys.stderr)
        return exc.exit_code


def print_report(report: Any) -> int:
    """A job's report as one JSON line (``dataclasses.asdict`` would mangle its Counters)."""
    fields = {f.name: getattr(report, f.name) for f in dataclasses.fields(report)}
    print(
        json.dumps({k: dict(v) if isinstance(v, dict) else v for k, v in fields.items()}, default=str, sort_keys=True)
    )
    return 0
