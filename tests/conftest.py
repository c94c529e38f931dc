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
    groups = {}
    for item in items:
        rel = item.path.relative_to(tests_dir)
        groups[item] = rel.parts[0] if rel.parts[0] in SHARED_SESSION_PACKAGES else rel.as_posix()
        item.add_marker(pytest.mark.xdist_group(groups[item]))
    # The longest work first: the shared-session packages, then the groups holding a slow test, then the fast
    # ones, so the run ends on short groups, not with one worker idle while the other runs a long group it had
    # queued (scripts/test.sh passes --no-loadscope-reorder, so xdist hands the groups out in this order).
    slow = {groups[item] for item in items if item.get_closest_marker("slow")}

    def weight(item: pytest.Item) -> int:
        group = groups[item]
        return 0 if group in SHARED_SESSION_PACKAGES else 1 if group in slow else 2

    items[:] = sorted(items, key=weight)
