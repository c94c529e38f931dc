"""Local Spark sessions for binlake's jobs, CLI and tests.

``build_session`` gives a small local session (``local[2]``, UI off, few shuffle partitions, UTC session time
zone so timestamps mean the same everywhere, and UTC as the process's own local time: :func:`utc_python`). When
delta-spark's jars are at hand it puts them on the classpath and configures Delta's SQL extension, so
``engine_for`` picks the spark engine. Where they come from, first match:
``$BINLAKE_DELTA_JARS`` (comma-separated jar paths); the checkout's ``.jars`` folder holding every jar
``jars/SHA256SUMS`` lists (scripts/setup.sh puts them there); ``delta-spark_*.jar`` in ``$SPARK_HOME/jars`` (the
docker images). scripts/setup.sh also names the ``.jars`` in the venv's ``spark-defaults.conf``, which covers
``spark-submit`` and standalone clusters without this module.
"""

from __future__ import annotations

import os
import re
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Mapping

from binlake.lake import class_archive
from binlake.lake.delta.engine import DELTA_EXTENSION
from binlake.lake.failures import is_spark_failure, start_failed

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
PROJECT_ROOT = class_archive.PROJECT_ROOT
# C1 only, compiling at half the JDK's thresholds (less of a small run interpreted: a small day 9.4 -> 9.0 s on
# average of six, alternated; a quarter or a tenth of them were no quicker, twice them slower). With tiered
# compilation off the JDK reserves a 48 MB code cache instead of 240 MB, and a run that then compiles much (a short
# load followed by --validate) filled it: "Out of space in CodeCache for adapters" killed the SparkContext. The cache
# is reserved address space, committed only as it fills.
SHORT_RUN_JIT = "-XX:TieredStopAtLevel=1 -XX:CompileThresholdScaling=0.5 -XX:ReservedCodeCacheSize=240m"
# C2 for the hottest code only, inlining less: on two cores C2 compiled some 2,600 methods in 23-28 s of a compiler
# thread's time during a 35-50 s production-size day, the tasks waiting for the cores meanwhile. With ten times its
# thresholds and FreqInlineSize 150 (not 325) it compiled about 40 in 9-13 s, and that day ran 9-15% quicker
# (bench/production.py; the JDK's defaults: Tier4InvocationThreshold 5000, Tier4MinInvocationThreshold 600,
# Tier4CompileThreshold 15000, Tier4BackEdgeThreshold 40000).
LONG_RUN_JIT = (
    "-XX:Tier4InvocationThreshold=50000 -XX:Tier4MinInvocationThreshold=6000 -XX:Tier4CompileThreshold=150000 "
    "-XX:Tier4BackEdgeThreshold=400000 -XX:FreqInlineSize=150"
)
# The throughput collector, not the JDK's default G1: tasks make short-lived garbage at a high rate, and on few cores
# G1's write barriers and concurrent threads cost throughput (a production-size day ran about 10% quicker, bench/
# production.py). Not when the user chose a collector: a JVM given two refuses to start.
DRIVER_GC = "-XX:+UseParallelGC"
_GC_CHOICE = re.compile(r"-XX:\+Use\w*GC\b")
# The metaspace size at which the JVM first collects to unload classes, not the JDK's 21 MB: Spark's and Delta's
# classes and each query's generated ones pass it within seconds, and each time (twice in a production-size day,
# once in a small one) a full collection stopped every task for 0.1-0.2 s and unloaded nothing. Metaspace held
# about 40 MB at the end of such a day (the class archive's classes are mapped, not in it).
DRIVER_METASPACE = "-XX:MetaspaceSize=128m"


def driver_java_options(archive: "class_archive.ArchiveLaunch | None", short_run: bool, user: str = "") -> str:
    """The Java options binlake gives a driver JVM it starts on this machine (``spark.driver.defaultJavaOptions``):
    the class archive's, :data:`DRIVER_GC` unless ``user`` (their own Java options) or the JVM's environment
    choose a collector, :data:`DRIVER_METASPACE`, and :data:`SHORT_RUN_JIT` for a short run, else
    :data:`LONG_RUN_JIT`."""
    chosen = " ".join([user, os.environ.get("JAVA_TOOL_OPTIONS", ""), os.environ.get("JDK_JAVA_OPTIONS", "")])
    options = [archive.java_options] if archive else []
    if not _GC_CHOICE.search(chosen):
        options.append(DRIVER_GC)
    return " ".join([*options, DRIVER_METASPACE, SHORT_RUN_JIT if short_run else LONG_RUN_JIT])


def driver_jars(jars: list[str], local: bool, user: Mapping[str, str]) -> dict[str, str]:
    """The Spark settings that give a driver JVM binlake starts on this machine Delta's ``jars``: on its own class
    path (``spark.driver.extraClassPath``, before the user's), where the class archive finds their classes as it
    was written with them; in ``spark.jars`` (after the user's) only for a cluster's executors: a ``local``
    driver is its own executor, and Spark would copy each jar into a temporary folder and spawn a ``chmod`` for
    each as its context starts (half a second of a small run)."""
    class_path = [*jars, user.get("spark.driver.extraClassPath", "")]
    served = [user.get("spark.jars", ""), *([] if local else jars)]
    return {
        "spark.driver.extraClassPath": os.pathsep.join(p for p in class_path if p),
        "spark.jars": ",".join(j for j in served if j),
    }


def delta_jars() -> tuple[list[str], bool]:
    """(jars to add to spark.jars, whether delta-spark's classes will be on the classpath)."""
    listed = [j for j in os.environ.get("BINLAKE_DELTA_JARS", "").split(",") if j.strip()]
    if listed:
        return listed, True
    project = project_delta_jars()
    if project:
        return project, True
    spark_home = os.environ.get("SPARK_HOME")
    if not spark_home:
        import pyspark

        spark_home = str(Path(pyspark.__file__).parent)
    return [], any(Path(spark_home, "jars").glob("delta-spark_*.jar"))


def project_delta_jars(root: Path = PROJECT_ROOT) -> list[str]:
    """The verified jars of the checkout at ``root`` (``.jars``, as jars/SHA256SUMS lists them); [] unless all
    are there."""
    try:
        lines = (root / "jars" / "SHA256SUMS").read_text().splitlines()
    except OSError:
        return []
    jars = [root / ".jars" / line.split()[1] for line in lines if line.strip() and not line.startswith("#")]
    return [str(j) for j in jars] if jars and all(j.is_file() for j in jars) else []


def submitted_by_spark_submit() -> bool:
    """True inside a driver that ``spark-submit`` launched: its JVM gateway and ``--master`` already exist."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def build_session(
    app_name: str = "binlake",
    *,
    master: str | None = None,
    shuffle_partitions: int = 2,
    conf: Mapping[str, str] | None = None,
    log_file: str | None = None,
    short_run: bool = False,
) -> SparkSession:
    """A Spark session (getOrCreate: an active session is returned as it is).

    ``master`` defaults to ``local[2]``, except under ``spark-submit``, whose ``--master`` (e.g. the cluster of
    the ``spark_default`` connection) is kept. With ``log_file``, a JVM this call starts writes its output
    (log4j's console, the JVM's own warnings, stack traces) to that file instead of the console. A session that
    does not start raises :class:`~binlake.lake.errors.SparkStartFailed` (the JVM's reason, in one line).
    """
    utc_python()
    if master is None and not submitted_by_spark_submit():
        master = "local[2]"
    local = bool(master and master.startswith("local"))
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers need this venv's packages
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master) if master else SparkSession.builder
    builder = (
        builder.appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.session.timeZone", "UTC")
    )
    # whether this call starts the driver JVM (Delta's jars on its class path; Java options of binlake's choosing,
    # none when conf names its own)
    launching = SparkContext._gateway is None and not submitted_by_spark_submit()
    jars, have_delta = delta_jars()
    conf = dict(conf or {})
    if jars and launching:
        conf.update(driver_jars(jars, local, conf))
    elif jars:
        builder = builder.config("spark.jars", ",".join(jars))
    if have_delta:
        builder = (
            builder.config("spark.sql.extensions", DELTA_EXTENSION)
            .config("spark.sql.catalog.spark_catalog", DELTA_CATALOG)
            # a table's state (its log replay) in as many partitions as a shuffle, not Delta's 50
            .config("spark.databricks.delta.snapshotPartitions", str(shuffle_partitions))
        )
    if local:  # workers of this venv's Python (binlake installed) import the installed pyspark, not its zip
        builder = builder.config("spark.python.daemon.module", "binlake.lake.python_daemon")
    for key, value in conf.items():
        builder = builder.config(key, value)
    tuned = launching and "spark.driver.defaultJavaOptions" not in conf
    archive = class_archive.launch() if tuned else None
    if tuned:
        user = conf.get("spark.driver.extraJavaOptions", "")
        builder = builder.config("spark.driver.defaultJavaOptions", driver_java_options(archive, short_run, user))
    try:
        with jvm_output_to(log_file), _environment(archive.env if archive else {}):
            session = builder.getOrCreate()
    except Exception as exc:
        if not is_spark_failure(exc):
            raise
        raise start_failed(exc, log_file) from exc
    session.sparkContext.setLogLevel("ERROR")
    return session


def utc_python() -> None:
    """Make the process's local time zone UTC (``TZ``, ``time.tzset``; Python workers a local JVM starts inherit
    it). PySpark turns a TimestampType value into a naive datetime of the *process's* local time, and a naive
    datetime into a timestamp as local time (``TimestampType.fromInternal``/``toInternal``), whatever
    ``spark.sql.session.timeZone`` says, while the lake's timestamps are UTC: on a machine in New York the
    spark engine read ``meta.schema_registry``'s times 5 hours early and wrote them back so on every rewrite."""
    if os.environ.get("TZ") != "UTC":
        os.environ["TZ"] = "UTC"
        time.tzset()


@contextmanager
def _environment(values: Mapping[str, str]) -> Iterator[None]:
    """``os.environ`` holds ``values`` inside (what a JVM launched there inherits), as before on leaving."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextmanager
def jvm_output_to(log_file: str | None) -> Iterator[None]:
    """While Spark's JVM is launched inside, standard output and error (file descriptors 1 and 2, which the JVM
    inherits) point at ``log_file`` (appended to); this process's own are restored on leaving. Nothing changes
    without a file, or when a JVM is already running (under ``spark-submit``, or a second session)."""
    from pyspark import SparkContext

    if log_file is None or SparkContext._gateway is not None or submitted_by_spark_submit():
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    target = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    saved = (os.dup(1), os.dup(2))
    try:
        os.dup2(target, 1)
        os.dup2(target, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, target):
            os.close(fd)
