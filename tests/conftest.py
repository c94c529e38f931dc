"""Session-wide pytest fixtures shared by all test packages."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import require_fixtures


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return require_fixtures()


# Test packages whose files share a session fixture (a loaded lake, an Airflow home): one xdist worker runs all of
# them. Every other file is a group of its own, so module fixtures are built once (scripts/test.sh: -n 2
# --dist loadgroup).
SHARED_SESSION_PACKAGES = ("dags", "ops")


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tests_dir = Path(__file__).parent
    for item in items:
        rel = item.path.relative_to(tests_dir)
        group = rel.parts[0] if rel.parts[0] in SHARED_SESSION_PACKAGES else rel.as_posix()
        item.add_marker(pytest.mark.xdist_group(group))
