"""Spark job: a source's unapplied bronze changes -> ``silver.<db>__<table>`` (fold per key, CDC MERGE),
``meta.quarantine`` and ``meta.checkpoints``.

    spark-submit spark_jobs/apply_changes.py --lake DIR --source NAME [--run-id ID] [--end ISO_DATETIME]
        [--history] [--engine auto|rust|spark]

Thin entry point: the work is ``binlake.lake.jobs.apply_job``. ``--end``: changes committed before it are
applied (a prefix of the binlog order). Prints the job's report as one JSON line.
"""

from __future__ import annotations

import sys
from typing import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from binlake.lake.jobs import apply_job, job_parser, job_setup, print_report

    p = job_parser("apply_changes", __doc__, history=True)
    args = p.parse_args(argv)
    spark, engine, lake, opts = job_setup(args, "binlake-apply")
    return print_report(apply_job(spark, engine, lake, opts, opts.new_run_id()))


if __name__ == "__main__":
    sys.exit(main())
