"""Coverage-guided fuzzing (atheris) of every decoder that meets hostile input, with a fixed run count per target
(bench/fuzz.py runs them for longer). A run passes when no input makes a target raise anything but binlake's
typed errors; a crash leaves its input in the test's tmp folder and the libFuzzer report in the failure."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz.targets import TARGETS, seeds

ROOT = Path(__file__).resolve().parents[2]
RUNS = 4000

pytestmark = pytest.mark.slow


def _atheris() -> None:
    try:
        import atheris  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"atheris is not importable ({exc}); bash scripts/setup.sh installs it")


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_fuzz_target_short_run(tmp_path, target) -> None:
    _atheris()
    cmd = [
        sys.executable,
        "-m",
        "tests.fuzz.run",
        target,
        str(tmp_path / "corpus"),
        f"-runs={RUNS}",
        "-seed=1",
        "-max_len=65536",
        "-len_control=0",
        "-rss_limit_mb=2048",
        f"-artifact_prefix={tmp_path}/",
    ]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    crashes = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(("crash-", "oom-", "timeout-")))
    assert out.returncode == 0 and not crashes, (crashes, out.stderr[-4000:])
    assert f"Done {RUNS} runs" in out.stderr


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_every_seed_passes_its_target(target) -> None:
    """The seeds alone (no atheris needed): each returns or raises a typed error."""
    count = 0
    for seed in seeds(target):
        TARGETS[target](seed)
        count += 1
    assert count > 0
