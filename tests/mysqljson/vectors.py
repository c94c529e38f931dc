"""The real JSON vectors of ../shared/fixtures/json_vectors, loaded through tests/support.py.

Tests are parametrized by vector id; without ../shared the single placeholder id makes the test skip (through
``fixture_path``) instead of failing collection.
"""

from __future__ import annotations

import json
from functools import lru_cache

from tests.support import FIXTURES, fixture_path

JSONB = "jsonb_vectors.json"
DIFFS = "json_diff_vectors.json"


@lru_cache(maxsize=None)
def load(name: str) -> dict[str, dict]:
    with fixture_path("json_vectors", name).open(encoding="utf-8") as handle:
        return {vector["id"]: vector for vector in json.load(handle)["vectors"]}


def ids(name: str) -> list[str]:
    """Vector ids for parametrize (read without skipping; a placeholder when the fixtures are absent)."""
    path = FIXTURES / "json_vectors" / name
    if not path.exists():
        return ["fixtures-absent"]
    with path.open(encoding="utf-8") as handle:
        return [vector["id"] for vector in json.load(handle)["vectors"]]


def vector(name: str, vector_id: str) -> dict:
    return load(name)[vector_id]
