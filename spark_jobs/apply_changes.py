"""Spark job: a source's unapplied bronze changes -> ``silver.<db>__<table>`` (fold per key, CDC MERGE),
``meta.quarantine`` and ``meta.checkpoints``.

    spark-submit spark_jobs/apply_changes.py --lake DIR --source NAME [--run-id ID] [--end ISO_DATETIME]
        [--history] [--full-refresh] [--engine auto|rust|spark]

Thin entry point: the work is ``binlake.lake.apply.apply_job``. ``--end``: changes committed before it are
applied (a prefix of the binlog order). Records the run in ``meta.run_metrics`` and prints the job's report as
one JSON line.
"""

from __future__ import annotations

import json
import sys
from typing import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from binlake.lake.apply import apply_job
    from binlake.lake.failures import stage
    from binlake.lake.job_args import job_main, job_parser, job_setup, print_report
    from binlake.lake.metrics import record_run
    from binlake.lake.run import RunReport

    p = job_parser("apply_changes", __doc__, history=True)
    p.add_argument(
        "--full-refresh",
        action="store_true",
        help="first empty the source's silver tables and checkpoints: rebuild them from bronze",
    )
    args = p.parse_args(argv)

    def run() -> int:
        spark, engine, lake, opts = job_setup(args, "binlake-apply")
        with stage("apply", lake):
            if args.full_refresh:
                from binlake.lake.refresh import reset_source

                print(json.dumps({"full_refresh": reset_source(spark, engine, lake, opts.source)}))
            run_id = opts.new_run_id()
            report = apply_job(spark, engine, lake, opts, run_id)
            record_run(spark, engine, lake, RunReport(opts.source, run_id, engine.name, apply=report))
            return print_report(report)

    return job_main(run)


if __name__ == "__main__":
    sys.exit(main())
