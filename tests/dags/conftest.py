"""One Airflow home for the whole test session (SQLite, migrated once), and Airflow run in child processes.

Airflow reads its configuration when it is first imported, so every test that runs Airflow does it in a child
Python (or the ``airflow`` CLI) with the environment of ``scripts/airflow_env.sh`` pointed at the session's
home: nothing of Airflow is imported into the pytest process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Mapping

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent


def airflow_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment scripts/airflow_env.sh gives, for ``home`` (plus ``extra``)."""
    script = f". {ROOT / 'scripts' / 'airflow_env.sh'} >/dev/null && env -0"
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "BINLAKE_"))}
    base.update({"AIRFLOW_HOME": str(home), **(extra or {})})
    out = subprocess.run(["bash", "-c", script], env=base, check=True, capture_output=True).stdout
    env = dict(item.split("=", 1) for item in out.decode().split("\0") if "=" in item)
    env.update(extra or {})
    return env


def run_python(code: str, env: Mapping[str, str], timeout: float = 900) -> Any:
    """Run ``code`` in a child Python with ``env``; it prints one JSON document as its last stdout line."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=dict(env), cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise AssertionError(f"child Python failed ({done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-8000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def airflow_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An Airflow home with a migrated SQLite metadata DB, shared by every Airflow test of the session."""
    home = tmp_path_factory.mktemp("airflow_home")
    subprocess.run([str(VENV_BIN / "airflow"), "db", "migrate"], env=airflow_env(home), check=True,
                   capture_output=True, timeout=300)
    return home
