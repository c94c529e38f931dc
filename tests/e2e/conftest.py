"""Fixtures of the end-to-end tests: the one Spark session of the run."""

from tests.spark_session import spark  # noqa: F401  (pytest fixture)
