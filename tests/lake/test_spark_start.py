"""A Spark that does not start (a bad setting, no usable Java) ends ``binlake run`` with one line giving the JVM's
own reason, what to check and the log holding Spark's output and the trace, not a Python and Java stack trace
(real JVM launches through the CLI)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from binlake.lake.failures import jvm_exit_reason

BIN = Path(sys.executable).with_name("binlake")
TRACE = re.compile(r"Traceback|^\s*at [\w$.]+\(", re.M)


def _run(tmp_path: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``binlake run --validate`` of an empty landing (--validate starts Spark even with nothing to load)."""
    (tmp_path / "landing" / "db1").mkdir(parents=True, exist_ok=True)
    args = [str(BIN), "run", "--landing", str(tmp_path / "landing"), "--lake", str(tmp_path / "lake"), "--validate"]
    return subprocess.run(
        [*args, *extra], capture_output=True, text=True, timeout=600, env={**os.environ, **(env or {})}
    )  # the timeout is a guard, not a timed check


def _error_line(run: subprocess.CompletedProcess) -> str:
    assert run.returncode == 2, run.stderr[-3000:]
    assert not TRACE.search(run.stderr), run.stderr[-3000:]
    return run.stderr.strip().splitlines()[-1]


def _log(line: str) -> str:
    return Path(line.rsplit("Spark's output and the trace: ", 1)[1]).read_text()


def test_a_jvm_that_can_not_start_is_one_line_with_its_reason(tmp_path: Path) -> None:
    line = _error_line(_run(tmp_path, "--driver-memory", "3x"))
    assert line.startswith(
        "binlake: error: Spark did not start: Invalid maximum heap size: -Xmx3x. Check the Spark settings binlake "
        "was given (--driver-memory, --conf, spark-defaults.conf)"
    ), line
    log = _log(line)
    assert "Invalid maximum heap size: -Xmx3x" in log and "JAVA_GATEWAY_EXITED" in log  # the JVM's output, the trace


def test_no_java_at_java_home_is_named(tmp_path: Path) -> None:
    line = _error_line(_run(tmp_path, env={"JAVA_HOME": str(tmp_path / "no-jdk")}))
    reason = r"binlake: error: Spark did not start: .*/no-jdk/bin/java: No such file or directory\. "
    assert re.match(reason, line), line


@pytest.mark.spark
@pytest.mark.slow
def test_a_setting_the_spark_context_refuses_is_its_java_exception(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder"
    line = _error_line(
        _run(tmp_path, "--conf", "spark.eventLog.enabled=true", "--conf", f"spark.eventLog.dir={missing}")
    )
    assert line.startswith(
        f"binlake: error: Spark did not start: java.io.FileNotFoundException: File file:{missing} does not exist. "
    ), line
    assert "EventLoggingListener" in _log(line)  # the Java stack trace is kept in the log


@pytest.mark.parametrize(
    "output, reason",
    [
        (
            "Invalid maximum heap size: -Xmx3x\nError: Could not create the Java Virtual Machine.\n"
            "Error: A fatal exception has occurred. Program will exit.\n",
            "Invalid maximum heap size: -Xmx3x",
        ),
        (
            "Error occurred during initialization of VM\nMultiple garbage collectors selected\n",
            "Multiple garbage collectors selected",
        ),
        (
            "/spark/bin/spark-class: line 71: /x/bin/java: No such file or directory\n"
            "/spark/bin/spark-class: line 97: CMD: bad array subscript\n",
            "/spark/bin/spark-class: line 71: /x/bin/java: No such file or directory",
        ),
        ("", None),
    ],
)
def test_the_reason_is_the_jvm_line_that_gives_it(output: str, reason: str | None) -> None:
    assert jvm_exit_reason(output) == reason
