"""Spark job: validate the lake after a run, once per DAG run (all sources).

    spark-submit spark_jobs/validate.py --lake DIR --run-id RUN [--max-quarantine-share X] [--suite NAME ...]
        [--report-dir DIR] [--engine auto|rust|spark]

Thin entry point over ``binlake.quality.validate_lake``. Prints one JSON line (results, failures, report paths);
exit 0 when everything was validated and every error-level expectation passed, 1 when one failed, 2 when the
lake or part of it (a silver table, a suite) could not be validated (the DAG's validate task fails on 1 and 2).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from binlake.lake.job_args import add_engine_option, job_main

    p = argparse.ArgumentParser(
        prog="validate", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--lake", required=True)
    p.add_argument("--run-id", required=True)
    p.add_argument("--max-quarantine-share", type=float, default=0.0)
    p.add_argument("--suite", action="append")
    p.add_argument("--report-dir")
    add_engine_option(p)
    args = p.parse_args(argv)

    def run() -> int:
        from binlake.lake.preflight import check_lake
        from binlake.lake.session import build_session
        from binlake.quality import ValidationFailed, ValidationOptions, validate_lake

        if os.path.exists(args.lake):  # an absent lake is validate_lake's own error, not created here
            check_lake(args.lake, args.report_dir)

        options = ValidationOptions(
            max_quarantine_share=args.max_quarantine_share,
            suites=frozenset(args.suite) if args.suite else None,
            report_dir=args.report_dir,
            engine=args.engine,
        )
        try:
            summary, code = validate_lake(build_session("binlake-validate"), args.lake, args.run_id, options), 0
        except ValidationFailed as exc:
            summary, code = exc.summary, exc.exit_code
        print(
            json.dumps(
                {
                    "run_id": summary.run_id,
                    "expectations": len(summary.results),
                    "failed_errors": [f"{r.suite}: {r.expectation_type}" for r in summary.failed_errors],
                    "not_validated": summary.not_validated,
                    "failed_warnings": len(summary.failed_warnings),
                    "report": summary.report_path,
                    "data_docs": summary.data_docs_path,
                },
                sort_keys=True,
            )
        )
        return code

    return job_main(run)


if __name__ == "__main__":
    sys.exit(main())
