"""Headless Debian Chromium for the report tests: page text (--dump-dom) and screenshots (--screenshot)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync")


def chromium() -> str:
    exe = shutil.which("chromium")
    if exe is None:
        pytest.skip("chromium not installed; run: bash scripts/install_chromium.sh")
    return exe


def _run(page: Path, *args: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        return subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}", *args, page.as_uri()],
                              capture_output=True, timeout=120, check=True)


def dump_dom(page: Path) -> str:
    """The page's DOM after Chromium loaded it, as HTML text."""
    return _run(page, "--dump-dom").stdout.decode("utf-8", "replace")


def screenshot(page: Path, png: Path) -> Path:
    _run(page, f"--screenshot={png}", "--window-size=1280,1600", "--hide-scrollbars")
    return png
