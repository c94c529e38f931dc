"""A Spark job's session keeps the master spark-submit was given (the spark_default connection: a cluster in
production), and is local only when started without spark-submit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SCRIPT = "from binlake.lake.jobs import job_session\nprint('MASTER', job_session('t').sparkContext.master)\n"


def _master(cmd: list[str]) -> str:
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=180)
    lines = [line for line in out.stdout.splitlines() if line.startswith("MASTER ")]
    assert lines, out.stderr[-2000:]
    return lines[0].split(" ", 1)[1]


def test_spark_submit_master_is_kept_and_local_is_the_default(tmp_path: Path) -> None:
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    spark_submit = str(Path(sys.executable).with_name("spark-submit"))
    assert _master([spark_submit, "--master", "local[1]", str(script)]) == "local[1]"
    assert _master([sys.executable, str(script)]) == "local[2]"
