"""A job's session (``build_session``) keeps the master spark-submit was given (the spark_default connection: a
cluster in production) and is local only when started without spark-submit; either way delta-spark's jars are
on its classpath, so the spark engine is the default, with nothing passed on the command line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SCRIPT = """\
from binlake.lake.delta import engine_for
from binlake.lake.session import build_session
spark = build_session('t')
print('MASTER', spark.sparkContext.master)
print('ENGINE', engine_for(spark).name)
"""


def _run(cmd: list[str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("BINLAKE_DELTA_JARS", "PYSPARK_GATEWAY_PORT")}
    env.update(SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    found = dict(line.split(" ", 1) for line in out.stdout.splitlines() if line.startswith(("MASTER ", "ENGINE ")))
    assert set(found) == {"MASTER", "ENGINE"}, out.stderr[-3000:]
    return found


def test_spark_submit_master_is_kept_and_the_spark_engine_is_the_default(tmp_path: Path) -> None:
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    spark_submit = str(Path(sys.executable).with_name("spark-submit"))
    assert _run([spark_submit, "--master", "local[1]", str(script)]) == {"MASTER": "local[1]", "ENGINE": "spark"}


def test_a_plain_python_process_is_local_with_the_spark_engine(tmp_path: Path) -> None:
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    assert _run([sys.executable, str(script)]) == {"MASTER": "local[2]", "ENGINE": "spark"}


def test_the_checkout_jars_alone_give_the_spark_engine(tmp_path: Path, monkeypatch) -> None:
    """Without the venv's spark-defaults.conf (an empty SPARK_CONF_DIR): build_session finds .jars itself."""
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    monkeypatch.setenv("SPARK_CONF_DIR", str(conf_dir))
    assert _run([sys.executable, str(script)]) == {"MASTER": "local[2]", "ENGINE": "spark"}
