"""Spark job: validate the lake after a run (``spark-submit spark_jobs/validate.py --lake DIR --run-id RUN``).

Thin entry point: arguments and exit codes are those of ``binlake validate`` (``binlake.cli.validate_cmd``); the
work is ``binlake.quality.validate_lake``. Exit 1 when an error-level expectation failed.
"""

from __future__ import annotations

import sys
from typing import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from binlake.cli.validate_cmd import main as validate_main
    from binlake.errors import BinlakeError

    try:
        return validate_main(argv)
    except BinlakeError as exc:
        print(f"validate: error: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
