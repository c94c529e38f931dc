"""The installable package: every folder of libs/binlake is a regular package, so a non-editable install
(`pip install ./libs`, as the docker images do) ships all of it."""

from __future__ import annotations

from tests.support import ROOT


def test_every_source_folder_is_a_regular_package():
    src = ROOT / "libs" / "binlake"
    folders = {p.parent for p in src.rglob("*.py")}
    missing = sorted(str(f.relative_to(src)) for f in folders if not (f / "__init__.py").exists())
    assert missing == []
