"""Session-wide pytest fixtures shared by all test packages."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import require_fixtures


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return require_fixtures()


# Test packages with session fixtures of their own (a loaded lake, an Airflow home, in the package's conftest.py):
# one xdist worker runs every file of the package that uses one of them, so each is built once. Every other file
# is a group of its own, so module fixtures are built once (scripts/test.sh: -n 2 --dist loadgroup).
SHARED_SESSION_PACKAGES = ("dags", "ops")


def _uses_package_session(item: pytest.Item, package: str) -> bool:
    """Whether ``item`` uses a session fixture of ``tests/<package>/conftest.py``."""
    info = getattr(item, "_fixtureinfo", None)
    return info is not None and any(
        d.scope == "session" and d.baseid == f"tests/{package}" for defs in info.name2fixturedefs.values() for d in defs
    )


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tests_dir = Path(__file__).parent
    rels = {item: item.path.relative_to(tests_dir) for item in items}
    sharing = {
        rel
        for item, rel in rels.items()
        if rel.parts[0] in SHARED_SESSION_PACKAGES and _uses_package_session(item, rel.parts[0])
    }
    for item, rel in rels.items():
        item.add_marker(pytest.mark.xdist_group(rel.parts[0] if rel in sharing else rel.as_posix()))
