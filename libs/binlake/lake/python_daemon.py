"""The daemon binlake's Spark sessions fork their Python workers from (``spark.python.daemon.module``): pyspark's
own (``pyspark.daemon``), started after taking off the worker path what Spark puts first on it: ``pyspark.zip``,
``py4j-*-src.zip`` and the ``spark-core`` jar (``PythonUtils.sparkPythonPath``).

- Workers then import the installed pyspark and py4j, compiled once in their ``__pycache__``, instead of
  compiling pyspark from the zip's sources in every new worker process.
- Before each task a worker calls ``importlib.invalidate_caches`` (``pyspark.worker_util.setup_spark_files``),
  and Python 3.11's ``zipimporter`` then reads its archive's whole directory again: the spark-core jar's and
  pyspark.zip's cost about 50 ms a task.
- Where pyspark or py4j is not installed next to the worker's Python (a cluster shipping only the zips), the
  entries stay, moved last.

After its first task a worker also moves what it has imported to the collector's permanent generation
(``gc.freeze``): the daemon runs a full ``gc.collect`` after every task, which otherwise walks every object of
pyarrow, pyspark and binlake again (10-30 ms a task)."""

from __future__ import annotations

import gc
import os
import sys
from importlib.machinery import PathFinder
from typing import Any, Callable


def _is_spark_entry(entry: str) -> bool:
    name = os.path.basename(entry)
    return (
        name == "pyspark.zip"
        or (name.startswith("py4j-") and name.endswith("-src.zip"))
        or (name.startswith("spark-core_") and name.endswith(".jar"))
    )


def worker_path(path: list[str]) -> list[str]:
    """``path`` without Spark's own entries when the rest of it holds pyspark and py4j; else with them moved to
    its end. The rest keeps its order."""
    rest = [p for p in path if not _is_spark_entry(p)]
    if all(PathFinder.find_spec(name, rest) is not None for name in ("pyspark", "py4j")):
        return rest
    return rest + [p for p in path if _is_spark_entry(p)]


def _freezing_after_first_task(worker: Callable[..., int]) -> Callable[..., int]:
    """``pyspark.daemon.worker`` that, the first time it returns in this process, collects and freezes."""
    frozen = False

    def run(*args: Any, **kwargs: Any) -> int:
        nonlocal frozen
        code = worker(*args, **kwargs)
        if not frozen:
            frozen = True
            gc.collect()
            gc.freeze()
        return code

    return run


if __name__ == "__main__":
    sys.path[:] = worker_path(sys.path)
    sys.path_importer_cache.clear()
    import pyspark.daemon

    pyspark.daemon.worker = _freezing_after_first_task(pyspark.daemon.worker)
    pyspark.daemon.manager()
