"""Data quality with Great Expectations 1.x: suites generated from SDI, pipeline suites, runs, reports.

    summary = validate_lake(spark, "/data/lake", run_id="2024-03-01")   # raises a ValidationFailed on failure
    print(summary.report_path)

Modules: :mod:`rules` (SDI -> column rules, pure Python), :mod:`suites` (rules -> GX suites; pipeline and
hand-written suites), :mod:`frames` (the Spark DataFrames the pipeline suites check), :mod:`runner` (GX context,
runs, ``meta.dq_results`` rows), :mod:`report` (the one-page HTML summary), :mod:`project` (the committed GX
project in ``expectations/``). Importing this package imports neither GX nor pyspark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from binlake.quality.errors import LakeLayoutError, NotValidated, QualityCheckFailed, QualityError, ValidationFailed

if TYPE_CHECKING:
    from binlake.quality.runner import ValidationOptions, ValidationSummary, validate_lake

__all__ = [
    "LakeLayoutError",
    "NotValidated",
    "QualityCheckFailed",
    "QualityError",
    "ValidationFailed",
    "ValidationOptions",
    "ValidationSummary",
    "validate_lake",
]


def __getattr__(name: str) -> Any:
    if name in ("ValidationOptions", "ValidationSummary", "validate_lake"):
        from binlake.quality import runner

        return getattr(runner, name)
    raise AttributeError(name)
