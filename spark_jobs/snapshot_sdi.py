"""Spark job: table definitions from SDI (.ibd, .sdi, ibd2sdi output; files or folders) ->
``meta.schema_registry``, through the schema registry model of ``binlake.sdi.registry``.

    spark-submit spark_jobs/snapshot_sdi.py --lake DIR --sdi PATH [--sdi PATH ...] [--seen-at ISO_DATETIME]
        [--engine auto|rust|spark]

Thin entry point: the work is ``binlake.lake.registry.snapshot_sdi_job``. Only new definition versions are written
(rerunning adds nothing). Prints {"new_versions": N}.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from typing import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from binlake.lake.delta import engine_for
    from binlake.lake.failures import stage
    from binlake.lake.job_args import add_engine_option, job_main
    from binlake.lake.layout import LakeLayout
    from binlake.lake.registry import snapshot_sdi_job
    from binlake.lake.session import build_session

    p = argparse.ArgumentParser(
        prog="snapshot_sdi", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--lake", required=True)
    p.add_argument("--sdi", action="append", required=True)
    p.add_argument(
        "--seen-at",
        type=dt.datetime.fromisoformat,
        help="snapshot time (default: now); the DAG passes its interval end",
    )
    add_engine_option(p)
    args = p.parse_args(argv)
    seen = args.seen_at or dt.datetime.now(dt.timezone.utc)
    if seen.tzinfo is not None:
        seen = seen.astimezone(dt.timezone.utc).replace(tzinfo=None)

    def run() -> int:
        from binlake.lake.preflight import check_lake

        check_lake(args.lake)
        spark = build_session("binlake-snapshot-sdi")
        lake = LakeLayout(args.lake)
        with stage("snapshot_sdi", lake):
            added = snapshot_sdi_job(
                spark, engine_for(spark, args.engine, staging_root=lake.staging), lake, args.sdi, seen
            )
        print(json.dumps({"new_versions": added}))
        return 0

    return job_main(run)


if __name__ == "__main__":
    sys.exit(main())
