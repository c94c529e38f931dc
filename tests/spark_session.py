"""The one Spark session of a test run, for every test package that needs Spark.

Use it by importing the fixture into a package's conftest.py::

    from tests.spark_session import spark  # noqa: F401  (pytest fixture)

and mark the tests ``spark`` and ``slow``. The session is local[2], UI off, two shuffle partitions, UTC.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    from binlake.lake.session import build_session

    session = build_session("binlake-tests")
    yield session
    session.stop()
