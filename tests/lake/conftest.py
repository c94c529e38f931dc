"""Fixtures of the lake tests: the shared Spark session and the two Delta engines."""

from __future__ import annotations

import pytest

from tests.spark_session import spark  # noqa: F401  (pytest fixture)


@pytest.fixture(params=["rust", "spark"])
def engine(request, spark):  # noqa: F811  (the imported fixture)
    """Each Delta engine in turn; the spark engine's tests skip with the reason it can not run here."""
    from binlake.lake.delta import engine_for, spark_engine_unavailable_reason

    if request.param == "spark":
        reason = spark_engine_unavailable_reason(spark)
        if reason is not None:
            pytest.skip(reason)
    return engine_for(spark, request.param)


@pytest.fixture
def table_path(tmp_path) -> str:
    return str(tmp_path / "table")
