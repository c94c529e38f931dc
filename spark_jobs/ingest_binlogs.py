"""Spark job: new landing binlogs of one source -> ``bronze.binlog_events`` (a Spark task per file chunk).

    spark-submit spark_jobs/ingest_binlogs.py --landing DIR --lake DIR --source NAME [--run-id ID]
        [--end ISO_DATETIME] [--include DB.TABLE ...] [--exclude DB.TABLE ...] [--engine auto|rust|spark]
        [--on-decode-error quarantine|fail]

Thin entry point: the work is ``binlake.lake.ingest.ingest_job`` (the one ``binlake run`` calls). Files first
written at or after ``--end`` are left for a later run. Prints the job's report as one JSON line.
"""

from __future__ import annotations

import sys
from typing import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from binlake.lake.failures import stage
    from binlake.lake.ingest import ingest_job
    from binlake.lake.job_args import job_main, job_parser, job_setup, print_report, source_dir

    args = job_parser("ingest_binlogs", __doc__, landing=True, filters=True, decode_errors=True).parse_args(argv)

    def run() -> int:
        spark, engine, lake, opts = job_setup(args, "binlake-ingest")
        with stage("ingest", lake):
            return print_report(
                ingest_job(spark, engine, lake, source_dir(args.landing, args.source), opts, opts.new_run_id())
            )

    return job_main(run)


if __name__ == "__main__":
    sys.exit(main())
