"""Session-wide pytest fixtures shared by all test packages."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import pytest

from tests.support import require_fixtures

# the SQL fold wherever a table can take it, as on a production-size day (its default starts at 250,000 changes:
# test_fold_sql.py checks that a smaller batch folds in Python alone, and the same)
os.environ.setdefault("BINLAKE_SQL_FOLD_MIN_CHANGES", "0")


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


# Seconds each group took in a full run (setup, call and teardown of its tests): the longest groups are handed
# out first (scripts/test.sh: --no-loadscope-reorder keeps this order; xdist would order by test count), so a run
# ends on short groups instead of one worker idling while the other runs a long one. Every run writes its own
# figures to .test-logs/group-seconds.json; copy them here after a full run when groups changed much. A group
# not listed counts as GROUP_SECONDS_DEFAULT if it holds a slow test, else 0.
GROUP_SECONDS = Path(__file__).with_name("group_seconds.json")
GROUP_SECONDS_DEFAULT = 60.0


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tests_dir = Path(__file__).parent
    rels = {item: item.path.relative_to(tests_dir) for item in items}
    sharing = {
        rel
        for item, rel in rels.items()
        if rel.parts[0] in SHARED_SESSION_PACKAGES and _uses_package_session(item, rel.parts[0])
    }
    groups = {item: rel.parts[0] if rel in sharing else rel.as_posix() for item, rel in rels.items()}
    for item, group in groups.items():
        item.add_marker(pytest.mark.xdist_group(group))
    known = json.loads(GROUP_SECONDS.read_text()) if GROUP_SECONDS.is_file() else {}
    slow = {group for item, group in groups.items() if item.get_closest_marker("slow")}
    weight = {g: known.get(g, GROUP_SECONDS_DEFAULT if g in slow else 0.0) for g in set(groups.values())}
    items.sort(key=lambda item: -weight[groups[item]])  # stable: a group's tests keep their order


_seconds: dict[str, float] = defaultdict(float)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # under xdist the controller sees every worker's reports, their node ids ending in "@<group>"
    group = report.nodeid.rpartition("@")[2] if "@" in report.nodeid else report.nodeid.split("::")[0][6:]
    _seconds[group] += report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    if hasattr(session.config, "workerinput") or not _seconds:  # an xdist worker: the controller writes
        return
    out = Path(session.config.rootpath) / ".test-logs" / "group-seconds.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({g: round(s, 1) for g, s in sorted(_seconds.items(), key=lambda kv: -kv[1])}, indent=1))
