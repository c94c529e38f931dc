"""The daemon binlake's Spark sessions fork their Python workers from (``spark.python.daemon.module``): pyspark's
own (``pyspark.daemon``), started after moving the ``pyspark.zip`` and ``py4j-*-src.zip`` that Spark puts first on
its workers' path to the end of it. Workers then import the installed pyspark and py4j, compiled once in their
``__pycache__``, instead of compiling pyspark from the zip's sources in every new worker process, and the cache
invalidation before each task (``pyspark.worker_util.setup_spark_files``) no longer re-reads the zip's directory.
Where pyspark is not installed next to the worker's Python (a cluster shipping only the zips) they still come
from the zips, as before."""

from __future__ import annotations

import os
import sys


def _zips_last(path: list[str]) -> list[str]:
    """``path`` with Spark's own zips (``pyspark.zip``, ``py4j-*-src.zip``) moved to its end."""

    def spark_zip(entry: str) -> bool:
        name = os.path.basename(entry)
        return name == "pyspark.zip" or (name.startswith("py4j-") and name.endswith("-src.zip"))

    return [p for p in path if not spark_zip(p)] + [p for p in path if spark_zip(p)]


if __name__ == "__main__":
    sys.path[:] = _zips_last(sys.path)
    sys.path_importer_cache.clear()
    from pyspark.daemon import manager

    manager()
