"""``binlake run``: snapshot SDI -> ingest -> apply, locally, through the same job functions the DAG tasks call."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from binlake.errors import BinlakeError
from binlake.lake.delta.engine import ENGINE_NAMES
from binlake.vocabulary import CHANGE_OPS, DDL_OP, ERROR_OP, KEY_CHANGE_OP

if TYPE_CHECKING:
    from binlake.lake.idle import LookAhead
    from binlake.lake.layout import LakeLayout
    from binlake.lake.options import RunOptions
    from binlake.lake.run import RunReport

DESCRIPTION = """\
Load the binlogs of a landing folder into a Delta lake, locally, on an embedded Spark session:

  1. snapshot_sdi  table definitions (.ibd/.sdi/ibd2sdi files, --sdi) -> meta.schema_registry
  2. ingest        new binlog files, decoded in parallel (a Spark task per file or chunk) -> bronze.binlog_events
  3. apply         unapplied changes in binlog order, folded per key (partial JSON resolved), MERGE ->
                   silver.<db>__<table>; rejected JSON diffs -> meta.quarantine; progress -> meta.checkpoints
  4. validate      with --validate: the data-quality suites (as `binlake validate`)

Everything is idempotent: rerunning a day, or the whole range, changes nothing (no new Delta version).
With --end, changes committed before the next midnight (UTC) are applied, also inside a file spanning it.
Silver holds the source tables' live rows with typed columns (see the README's type table).
With delta-spark's jars set up (scripts/setup.sh) the spark engine is used: executors decode, write bronze,
fold per key and MERGE; the driver only plans and commits. A Spark failure ends the run with one line naming
the stage and what to change; the full trace goes to <lake>/logs/.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "run",
        help="ingest binlogs and apply their changes to Delta tables (local run)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--landing",
        required=True,
        metavar="DIR",
        help="landing folder: one sub-folder of binlog files per source (or the source folder itself with --source)",
    )
    p.add_argument("--lake", required=True, metavar="DIR", help="lake root (created if absent)")
    p.add_argument("--source", metavar="NAME", help="only this source (default: every sub-folder of --landing)")
    p.add_argument(
        "--start",
        type=_date,
        metavar="YYYY-MM-DD",
        help="first day of the interval (informational: unapplied earlier changes are applied too, "
        "since order must hold)",
    )
    p.add_argument(
        "--end",
        type=_date,
        metavar="YYYY-MM-DD",
        help="last day of the interval: apply changes committed before the next midnight UTC "
        "(default: everything landed)",
    )
    p.add_argument(
        "--engine",
        choices=ENGINE_NAMES,
        default="auto",
        help="Delta engine: rust (deltalake, embedded) or spark (delta-spark jars); auto picks spark "
        "when its jars are loaded",
    )
    p.add_argument(
        "--sdi",
        action="append",
        metavar="PATH",
        help="SDI files or folders for the schema registry (default: an `sdi` folder next to --landing, if any)",
    )
    p.add_argument(
        "--include",
        action="append",
        default=[],
        metavar="DB.TABLE",
        help="only these tables (wildcards * and ?; repeatable)",
    )
    p.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="DB.TABLE",
        help="leave these tables out (wins over --include; repeatable)",
    )
    p.add_argument(
        "--history", action="store_true", help="also keep SCD2 history tables (silver.<db>__<table>__history)"
    )
    p.add_argument(
        "--temporal-text",
        action="store_true",
        help="keep DATE/DATETIME/TIMESTAMP columns as MySQL's text in silver (default: date, "
        "timestamp_ntz and timestamp; zero or invalid dates become NULL there and are counted)",
    )
    p.add_argument(
        "--on-decode-error",
        choices=("quarantine", "fail"),
        default="quarantine",
        help="a stretch of a binlog that does not decode: quarantine (default) keeps it in meta/quarantine "
        "with the reason and its first bytes (an event header and 64 KiB) and loads the rest; fail "
        "stops the source with one line naming the file and offset, writing nothing of the ingest",
    )
    p.add_argument(
        "--validate",
        action="store_true",
        help="then run the data-quality suites (binlake validate: meta.dq_results, HTML report); "
        "exits 1 when an error-level expectation fails, 2 when something could not be validated",
    )
    p.add_argument(
        "--driver-memory",
        metavar="SIZE",
        default=os.environ.get("BINLAKE_DRIVER_MEMORY", "2g"),
        help="memory of the embedded Spark driver, which also runs the tasks (default 2g, or $BINLAKE_DRIVER_MEMORY)",
    )
    p.add_argument(
        "--chunk-mb",
        type=int,
        default=64,
        metavar="MB",
        help="split binlog files into Spark tasks of at most this size (default 64; smaller when "
        "that gives every core a task, not below 4)",
    )
    p.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting for the embedded session (repeatable), e.g. spark.sql.shuffle.partitions=8",
    )
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object per source")
    p.set_defaults(func=cmd_run)


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date: write YYYY-MM-DD") from None


def sources_of(landing: Path, source: str | None) -> list[tuple[str, Path]]:
    from binlake.lake.preflight import check_landing

    check_landing(str(landing))
    if source:
        folder = landing / source
        return [(source, folder if folder.is_dir() else landing)]
    found = [(d.name, d) for d in sorted(landing.iterdir()) if d.is_dir()]
    if not found:
        raise BinlakeError(f"{landing} has no source sub-folders; pass --source NAME for a folder of binlogs")
    return found


def _progress(text: str) -> None:
    print(f"binlake run: {text}", file=sys.stderr, flush=True)


def cmd_run(args: argparse.Namespace) -> int:
    from binlake.lake.delta import engine_for
    from binlake.lake.failures import log_path
    from binlake.lake.idle import is_short_run
    from binlake.lake.job_args import cutoff_us
    from binlake.lake.layout import LakeLayout
    from binlake.lake.options import RunOptions
    from binlake.lake.preflight import check_lake
    from binlake.lake.run import run_source
    from binlake.lake.session import build_session
    from binlake.pipeline.filters import TableFilter
    from binlake.pipeline.identity import hash_ahead
    from binlake.pipeline.split import transaction_starts

    landing = Path(args.landing)
    sources = sources_of(landing, args.source)
    end = args.end or args.start
    cutoff = cutoff_us(end)  # the end of the last day loaded, as the DAG's interval end
    sdi = args.sdi or ([str(landing.parent / "sdi")] if (landing.parent / "sdi").is_dir() else [])
    tables = TableFilter(tuple(args.include), tuple(args.exclude))
    conf = {"spark.driver.memory": args.driver_memory}
    for item in args.conf:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise BinlakeError(f"--conf {item!r}: write KEY=VALUE, e.g. --conf spark.sql.shuffle.partitions=8")
        conf[key.strip()] = value
    if args.chunk_mb < 1:
        raise BinlakeError(f"--chunk-mb {args.chunk_mb}: give a size of at least 1 MB")
    lake = LakeLayout(os.path.abspath(args.lake))
    check_lake(lake.root)  # a file, read-only or full disk: one line, before Spark starts
    # one naming of runs: the day loaded, as the DAG's runs (tasks.run_key) and their validations are named
    run_key = (end or dt.datetime.now(dt.timezone.utc).date()).isoformat()

    def options(name: str) -> RunOptions:
        return RunOptions(
            name,
            tables,
            cutoff,
            args.history,
            args.temporal_text,
            chunk_bytes=args.chunk_mb << 20,
            on_decode_error=args.on_decode_error,
            run_id=run_key,
        )

    ahead = _look_ahead(lake, sources, options, args)
    if ahead and not args.validate and not sdi and all(a.report for a in ahead):
        _print_idle([a.report for a in ahead if a.report], args)
        return 0
    for (name, _), a in zip(sources, ahead):
        hash_ahead(name, list(a.unhashed), then=transaction_starts)  # while the JVM starts
    log = log_path(lake.logs, "run")
    _progress(f"starting Spark ({len(sources)} source(s), lake {lake.root}); Spark's own log: {log}")
    spark = build_session("binlake-run", conf=conf, log_file=log, short_run=is_short_run(ahead))
    engine = engine_for(spark, args.engine, staging_root=lake.staging)
    stopped: list[tuple[str, str]] = []  # (source, why)
    for name, folder in sources:
        opts = options(name)
        _progress(
            f"[{name}] snapshot_sdi -> ingest -> apply (engine {engine.name}"
            + (f", changes committed before {dt.date.isoformat(end + dt.timedelta(days=1))}T00:00Z)" if end else ")")
        )
        try:
            report = run_source(spark, engine, lake, str(folder), opts, sdi, progress=_progress)
        except BinlakeError as exc:  # a gap, an unusable snapshot, a decode error with `fail`, a failed stage:
            _progress(f"[{name}] STOPPED: {exc}")  # this source stops; the others keep loading
            stopped.append((name, str(exc)))
            continue
        except Exception as exc:  # noqa: BLE001 - a fault of binlake met by this source's input: it alone
            from binlake.lake.failures import write_log

            trace = write_log(lake.logs, f"run-{name}", exc)
            _progress(
                f"[{name}] STOPPED: binlake failed on this source ({type(exc).__name__}: {exc}); please "
                f"report it{f' with the trace in {trace}' if trace else ''}"
            )
            stopped.append((name, f"binlake failed ({type(exc).__name__})"))
            continue
        summary = report.as_dict()
        if args.json:
            print(json.dumps(summary, sort_keys=True), flush=True)
        else:
            print(format_summary(summary), flush=True)
        for why in {**summary["blocked_tables"], **summary["schema_mismatches"]}.values():
            _progress(f"[{name}] WARNING: {why}")
        if summary["quarantined"]:
            _progress(
                f"[{name}] WARNING: {summary['quarantined']} change(s) quarantined: see "
                f"{lake.quarantine} (reason per row)"
            )
    if args.validate:
        from binlake.quality.errors import ValidationFailed
        from binlake.quality.runner import validate_lake

        _progress("validate: running the data-quality suites")
        try:
            result = validate_lake(spark, lake.root, run_key)
        except ValidationFailed as exc:  # exit 1 or 2; the error line names the report
            _progress(f"validate: {exc.summary.headline()}")
            raise
        _progress(f"validate: {result.headline()}; report {result.report_path}")
    if stopped:
        why = f": {stopped[0][1]}" if len(stopped) == 1 else " (see the STOPPED lines above)"
        raise BinlakeError(
            f"source(s) {', '.join(n for n, _ in stopped)} stopped{why}"
            + ("; the other sources loaded" if len(stopped) < len(sources) else "")
        )
    return 0


def _look_ahead(
    lake: "LakeLayout",
    sources: list[tuple[str, Path]],
    options: Callable[[str], "RunOptions"],
    args: argparse.Namespace,
) -> list["LookAhead"]:
    """What each source's run will do, told on the driver before Spark starts (:mod:`binlake.lake.idle`);
    [] when the engine the run will use is not known yet."""
    from binlake.lake.idle import look_ahead

    engine = _expected_engine(args.engine)
    return [] if engine is None else [look_ahead(lake, str(folder), options(name), engine) for name, folder in sources]


def _print_idle(reports: list["RunReport"], args: argparse.Namespace) -> None:
    """Each source's summary of a run that has nothing to do (Spark is not started)."""
    for report in reports:
        summary = report.as_dict()
        _progress(
            f"[{report.source}] nothing to load: {summary['files_skipped']} landed file(s) already ingested, "
            "every change applied (Spark not started)"
        )
        print(json.dumps(summary, sort_keys=True) if args.json else format_summary(summary), flush=True)


def _expected_engine(name: str) -> str | None:
    """The Delta engine ``binlake run --engine name`` would use (as ``engine_for`` chooses it in a local session);
    None when ``spark`` is asked for without delta-spark's jars (the run then says why)."""
    from binlake.lake.session import delta_jars

    if name == "auto":
        name = os.environ.get("BINLAKE_DELTA_ENGINE", "auto")
    if name == "rust":
        return "rust"
    if name not in ("spark", "auto"):
        return None
    have_delta = delta_jars()[1]
    return "spark" if have_delta else (None if name == "spark" else "rust")


def format_summary(s: dict) -> str:
    ops = s["ops"]
    lines = [
        f"source {s['source']} (run {s['run_id']})",
        f"  files      {s['files']} ingested, {s['files_skipped']} already in bronze, {s['bytes'] / 1e6:.1f} MB",
        f"  events     {s['events']} in {s['transactions']} transactions; bronze rows "
        + _bronze_rows(s["bronze_rows"]),
        f"  applied    {s['changes_applied']} changes to {s['tables']} table(s): insert {ops['insert']}, update "
        f"{ops['update']}, delete {ops['delete']}, key changes {ops[KEY_CHANGE_OP]}, already applied "
        f"{ops['already_applied']}",
        *(
            [f"  pending    {s['waiting']}: {len(s['held_files'])} later file(s) not ingested yet"]
            if s.get("waiting")
            else []
        ),
        f"  quarantined {s['quarantined']}; zero or invalid dates stored as NULL {s['invalid_temporals']}",
        f"  DDL        {len(s['ddl'])} action(s) applied at their position"
        + (f": {', '.join(s['ddl'][:8])}{' ...' if len(s['ddl']) > 8 else ''}" if s["ddl"] else ""),
        f"  time       {s['seconds']:.1f} s ({_stage_times(s['stage_seconds'])})",
    ]
    return "\n".join(lines)


def _bronze_rows(rows: dict[str, int]) -> str:
    """Bronze rows per change kind, in a fixed order, then the bookkeeping rows (a file's or chunk's end, a
    table's layout) as one count."""
    kinds = (*CHANGE_OPS, DDL_OP, ERROR_OP)
    text = ", ".join(f"{k} {rows[k]}" for k in kinds if rows.get(k)) or "none"
    other = sum(v for k, v in rows.items() if k not in kinds)
    return text + (f" (+{other} file-end and layout rows)" if other else "")


def _stage_times(stages: dict[str, float]) -> str:
    """``ingest 3.0 s, apply 8.0 s (scan 1.0 s, fold 2.0 s, merge 3.0 s)``: apply's parts inside apply."""
    text = ", ".join(f"{k} {stages[k]:.1f} s" for k in ("ingest", "apply") if k in stages)
    inner = ", ".join(f"{k} {v:.1f} s" for k, v in stages.items() if k not in ("ingest", "apply"))
    return text + (f" ({inner})" if inner else "")
