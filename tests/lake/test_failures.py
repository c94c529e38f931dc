"""Spark failures end a stage with one line naming the stage, the cause and what to change, and the full trace in
a log file under the lake (real failures of a real Spark session: a Java heap exhaustion in the JVM, a Python
task that raises)."""

from __future__ import annotations

from pathlib import Path

import pytest

from binlake.lake.errors import SparkJobFailed
from binlake.lake.failures import diagnose, stage
from binlake.lake.layout import LakeLayout

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_java_heap_exhaustion_is_one_line_with_the_setting_and_the_log(spark, tmp_path: Path) -> None:
    jvm = spark.sparkContext._jvm
    with pytest.raises(SparkJobFailed) as caught:
        with stage("apply", LakeLayout(str(tmp_path))):
            jvm.java.lang.reflect.Array.newInstance(jvm.java.lang.Long.TYPE, 2**31 - 16)  # ~16 GiB of longs
    message = str(caught.value)
    assert "\n" not in message and message.startswith("apply failed: Spark ran out of Java heap memory")
    assert "--driver-memory" in message and "spark.driver.memory" in message
    log = Path(message.rsplit("full trace in ", 1)[1].split(". Rerunning", 1)[0])
    assert log.parent == tmp_path / "logs" and "OutOfMemoryError" in log.read_text()
    assert spark.range(3).count() == 3  # the session survives: a rerun is possible at once


def test_a_failed_python_task_names_the_python_error(spark, tmp_path: Path) -> None:
    def boom(batches):
        for _ in batches:
            raise ValueError("row 7 is not what it should be")
        yield from ()

    with pytest.raises(SparkJobFailed) as caught:
        with stage("ingest", LakeLayout(str(tmp_path))):
            spark.range(1).mapInArrow(boom, "id long").collect()
    message = str(caught.value)
    assert message.startswith("ingest failed: a Python task failed with ValueError: row 7 is not what it should be")
    assert "\n" not in message and "full trace in" in message


def test_errors_of_binlake_itself_pass_unchanged(tmp_path: Path) -> None:
    from binlake.lake.errors import SchemaConflictError

    with pytest.raises(SchemaConflictError):
        with stage("apply", LakeLayout(str(tmp_path))):
            raise SchemaConflictError("x")
    assert not (tmp_path / "logs").exists()


@pytest.mark.parametrize(
    "text, cause",
    [
        (
            "org.apache.spark.SparkException: Job aborted ... ExecutorLostFailure (executor 1 exited)",
            "executor was lost",
        ),
        ("py4j.protocol.Py4JNetworkError: Answer from Java side is empty", "driver's JVM stopped"),
        ("Caused by: java.lang.OutOfMemoryError: GC overhead limit exceeded", "ran out of Java heap"),
    ],
)
def test_diagnoses(text: str, cause: str) -> None:
    what, todo = diagnose(text)
    assert cause in what and todo


def test_a_binlake_error_raised_by_a_python_task_is_its_own_line(spark, tmp_path: Path) -> None:
    """A typed error an executor raises (a landing file swapped for a link since the plan) reaches the user as its
    own message (what happened and what to do), not as a failure to report."""
    from binlake.pipeline.errors import LandingFileError

    def swapped(batches):
        for _ in batches:
            raise LandingFileError("landing/s/binlog.000001: can not be read as the regular file the ingest planned")
        yield from ()

    with pytest.raises(SparkJobFailed) as caught:
        with stage("ingest", LakeLayout(str(tmp_path))):
            spark.range(1).mapInArrow(swapped, "id long").collect()
    message = str(caught.value)
    assert message.startswith(
        "ingest failed: landing/s/binlog.000001: can not be read as the regular file the ingest planned"
    ), message
    assert "please report" not in message and "\n" not in message and "full trace in" in message
