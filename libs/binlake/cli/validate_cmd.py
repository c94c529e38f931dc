"""``binlake validate``: run the data-quality suites on a lake, write the report; exit 1 when an error-level check
failed, 2 when something could not be validated."""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

from binlake.lake.delta.engine import ENGINE_NAMES

EPILOG = """\
Checks, each an expectation suite (Great Expectations 1.x) run on Spark DataFrames:
  silver.<db>__<table>   generated from the table's newest definition in meta.schema_registry (SDI): primary
                         key not null and unique, NOT NULL columns, ENUM/SET members, CHAR/VARCHAR length in
                         characters, integer/BIT/DECIMAL ranges, valid JSON; plus hand-written rules
  bronze.binlog_events   ordering key (source, file, position, row) unique
  bronze.row_sequence    no gap: each rows event's row indices are 0..n-1
  bronze.ops             this run's rows by operation
  silver.reconciliation  each silver table's live rows = bronze inserts - deletes
  meta.quarantine        this run's quarantined share <= --max-quarantine-share
  meta.schema_registry   every version's SDI complete (WL#7069 FR-03 header, parseable)
Every silver table is validated or listed as not validated. Results go to meta.dq_results; the run's summary
to LAKE/reports/quality/runs/RUN/summary.html; Data Docs to LAKE/reports/quality/data_docs/index.html. Names
Great Expectations gets are its safe form: a table's suite is silver.<its silver folder>, and column and run
names keep letters, digits, _ $ - with every other character as ~XX per UTF-8 byte (as silver folder names).

exit status:
  0  validated: every silver table and pipeline suite checked, every error-level expectation passed
     (warning-level ones may have failed)
  1  checks failed: everything was checked and an error-level expectation failed
  2  could not run: the lake, a silver table (no definition in meta.schema_registry, an unnamed folder) or a
     suite could not be validated, or an expectation raised instead of giving a result; this wins over 1

examples:
  binlake validate --lake /data/lake --run-id 2024-03-01
  binlake validate --lake /data/lake --suite silver.reconciliation --suite bronze.row_sequence
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lake", required=True, metavar="DIR", help="the lake root (bronze/, silver/, meta/)")
    parser.add_argument(
        "--run-id",
        metavar="RUN",
        help="the run to validate and file results under "
        "(its bronze rows are the run's; default: adhoc-<UTC time>, checking all of bronze)",
    )
    parser.add_argument(
        "--max-quarantine-share",
        type=float,
        default=0.0,
        metavar="X",
        help="quarantined / bronze changes of the run allowed (default 0)",
    )
    parser.add_argument(
        "--suite", action="append", metavar="NAME", help="validate only this suite (repeatable; default: all)"
    )
    parser.add_argument("--report-dir", metavar="DIR", help="default: LAKE/reports/quality")
    parser.add_argument(
        "--engine",
        default="auto",
        choices=ENGINE_NAMES,
        help="Delta engine for reads and the results append (default: auto)",
    )


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="run the data-quality suites on a lake and write the report",
        description="Validate a binlake lake with Great Expectations: suites generated from SDI for every "
        "silver table, plus bronze ordering, reconciliation, quarantine and registry checks.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, spark: Any = None) -> int:
    from binlake.quality.errors import LakeLayoutError, ValidationFailed
    from binlake.quality.runner import ValidationOptions, validate_lake

    if not os.path.isdir(args.lake):
        raise LakeLayoutError(
            f"{args.lake}: no such lake directory; pass the lake root that holds bronze/, "
            f"silver/ and meta/ (as given to `binlake run`)"
        )
    if spark is None:
        from binlake.lake.failures import log_path
        from binlake.lake.layout import absolute
        from binlake.lake.preflight import check_lake
        from binlake.lake.session import build_session

        layout = absolute(args.lake)
        check_lake(layout.root, args.report_dir)
        log = log_path(layout.logs, "validate")
        print(f"binlake validate: starting Spark; its log: {log}", file=sys.stderr, flush=True)
        spark = build_session("binlake-validate", log_file=log)
    options = ValidationOptions(
        max_quarantine_share=args.max_quarantine_share,
        suites=frozenset(args.suite) if args.suite else None,
        report_dir=args.report_dir,
        engine=args.engine,
    )
    try:
        with could_not_run(args.lake):
            summary = validate_lake(spark, args.lake, args.run_id, options)
    except ValidationFailed as exc:
        s = exc.summary
        for item in s.not_validated:
            print(f"NOT VALIDATED {item}", file=sys.stderr)
        for r in s.failed_errors + s.failed_warnings:
            print(
                f"FAILED {r.level:7} {r.suite}: {r.expectation_type}({r.columns or ''}) "
                f"unexpected={r.unexpected_count}",
                file=sys.stderr,
            )
        print(f"{s.headline()}\nreport: {s.report_path}\ndata docs: {s.data_docs_path}")
        raise
    for r in summary.failed_warnings:
        print(f"FAILED warning {r.suite}: {r.expectation_type}({r.columns or ''})", file=sys.stderr)
    print(summary.headline())
    print(f"report: {summary.report_path}\ndata docs: {summary.data_docs_path}")
    return 0


@contextmanager
def could_not_run(lake: str) -> Iterator[None]:
    """Anything but a binlake error (a Spark failure, a bug) becomes one line and exit 2, never 1 ("checks
    failed"); the full trace goes to ``<lake>/logs/``."""
    from binlake.errors import BinlakeError
    from binlake.lake.failures import stage, write_log
    from binlake.lake.layout import absolute

    layout = absolute(lake)
    try:
        with stage("validate", layout):
            yield
    except BinlakeError:
        raise
    except Exception as exc:
        log = write_log(layout.logs, "validate", exc)
        what = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        raise BinlakeError(
            f"validate could not run: {what}; please report it with the full trace" + (f" ({log})" if log else "")
        ) from None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="validate", description=__doc__, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))
