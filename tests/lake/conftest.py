"""Fixtures of the lake tests: the shared Spark session and the two Delta engines."""

from __future__ import annotations

import pytest

from tests.spark_session import spark  # noqa: F401  (pytest fixture)


@pytest.fixture(params=["rust", "spark"])
def engine(request, spark):  # noqa: F811  (the imported fixture)
    """Each Delta engine in turn. The spark engine's runs fail (never skip) when it can not run: scripts/setup.sh
    installs its jars on every machine that runs the tests."""
    from binlake.lake.delta import engine_for

    return engine_for(spark, request.param)  # DeltaEngineUnavailableError says why and what to run


@pytest.fixture
def table_path(tmp_path) -> str:
    return str(tmp_path / "table")
