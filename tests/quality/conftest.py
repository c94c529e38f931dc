"""Fixtures of the quality tests: the shared Spark session."""

from tests.spark_session import spark  # noqa: F401  (pytest fixture)
