"""Where the real fixtures are, and skipping with a reason when they are absent (a clone without ../shared)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("BINLAKE_SHARED", ROOT.parent / "shared"))
FIXTURES = SHARED / "fixtures"


def require_fixtures() -> Path:
    if not FIXTURES.is_dir():
        pytest.skip(f"real fixtures not found at {FIXTURES} (a clone without ../shared); set BINLAKE_SHARED")
    return FIXTURES


def fixture_path(*parts: str) -> Path:
    """Path of a file under ../shared/fixtures; skips the calling test when the folder is absent."""
    path = require_fixtures().joinpath(*parts)
    if not path.exists():
        pytest.fail(f"fixture {path} is missing although {FIXTURES} exists")
    return path
