"""Local Spark sessions for binlake's jobs, CLI and tests.

``build_session`` gives a small local session (``local[2]``, UI off, few shuffle partitions, UTC session time
zone so timestamps mean the same everywhere). When delta-spark's jars are at hand (``$BINLAKE_DELTA_JARS``, a
comma-separated list of jar paths, or ``delta-spark_*.jar`` in ``$SPARK_HOME/jars``) it puts them on the
classpath and configures Delta's SQL extension, so ``engine_for`` picks the spark engine.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from binlake.lake.delta.engine import DELTA_EXTENSION

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"


def delta_jars() -> tuple[list[str], bool]:
    """(jars to add to spark.jars, whether delta-spark's classes will be on the classpath)."""
    listed = [j for j in os.environ.get("BINLAKE_DELTA_JARS", "").split(",") if j.strip()]
    if listed:
        return listed, True
    spark_home = os.environ.get("SPARK_HOME")
    if not spark_home:
        import pyspark

        spark_home = str(Path(pyspark.__file__).parent)
    return [], any(Path(spark_home, "jars").glob("delta-spark_*.jar"))


def submitted_by_spark_submit() -> bool:
    """True inside a driver that ``spark-submit`` launched: its JVM gateway and ``--master`` already exist."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def build_session(app_name: str = "binlake", *, master: str | None = None, shuffle_partitions: int = 2,
                  conf: Mapping[str, str] | None = None) -> SparkSession:
    """A Spark session (getOrCreate: an active session is returned as it is).

    ``master`` defaults to ``local[2]``, except under ``spark-submit``, whose ``--master`` (e.g. the cluster of
    the ``spark_default`` connection) is kept.
    """
    if master is None and not submitted_by_spark_submit():
        master = "local[2]"
    if master and master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)   # workers need this venv's packages
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master) if master else SparkSession.builder
    builder = (builder.appName(app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
               .config("spark.sql.session.timeZone", "UTC"))
    jars, have_delta = delta_jars()
    if jars:
        builder = builder.config("spark.jars", ",".join(jars))
    if have_delta:
        builder = (builder.config("spark.sql.extensions", DELTA_EXTENSION)
                   .config("spark.sql.catalog.spark_catalog", DELTA_CATALOG))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
