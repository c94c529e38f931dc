#!/usr/bin/env bash
# Set up everything binlake needs on a fresh machine: Java 17 for Spark (apt, only when `java` is missing), a
# virtualenv in .venv with the pinned requirements.txt installed under the lock constraints.txt, the binlake
# package (editable), and delta-spark's jars: fetched by Maven (jars/pom.xml) into .jars, verified against
# jars/SHA256SUMS, and named in the venv's Spark's conf/spark-defaults.conf so every Spark of the venv (a plain
# python, spark-submit, a standalone cluster's drivers) loads them and Delta's SQL extension.
# Idempotent and fast: .venv/.binlake-setup holds the hashes of requirements.txt, constraints.txt and
# libs/pyproject.toml; when they match, pip does not run at all; Maven runs only when .jars lacks a verified jar.
# Usage: bash scripts/setup.sh           create or update .venv
#        bash scripts/setup.sh --lock    re-resolve requirements.txt in a scratch venv, `pip check` it, write
#                                        constraints.txt from its `pip freeze`, then update .venv (commit both)
set -euo pipefail
cd "$(dirname "$0")/.."

LOCK=""
case "${1:-}" in
  "") ;;
  --lock) LOCK=1 ;;
  -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "setup: unknown argument '$1' (try --help)" >&2; exit 2 ;;
esac

PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3

# apt_install COMMAND PACKAGE WHY: install PACKAGE with apt when COMMAND is missing.
apt_install() {
  command -v "$1" >/dev/null 2>&1 && return 0
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo=sudo; else
      echo "setup: $1 is missing; as root run: apt-get install -y $2" >&2; exit 1; fi
  fi
  command -v apt-get >/dev/null 2>&1 || { echo "setup: $1 is missing; install $2 ($3)" >&2; exit 1; }
  echo "setup: installing $2 with apt ($3)"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq "$2" >/dev/null
}

# --- Java 17 (Spark 4 needs Java 17 or newer) ---
apt_install java openjdk-17-jre-headless "Spark needs Java 17"
java -version 2>&1 | grep -Eq 'version "(1[7-9]|[2-9][0-9])' ||
  echo "setup: warning: Spark 4 needs Java 17 or newer; found: $(java -version 2>&1 | head -n1)" >&2

# --- the lock: constraints.txt = `pip freeze` of a fresh venv holding requirements.txt, after `pip check` ---
if [ -n "$LOCK" ]; then
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  echo "setup: resolving requirements.txt in a scratch venv (about a minute)"
  "$PY" -m venv "$scratch/venv"
  "$scratch/venv/bin/python" -m pip install --quiet --upgrade pip
  "$scratch/venv/bin/python" -m pip install --quiet -r requirements.txt
  "$scratch/venv/bin/python" -m pip check
  {
    echo "# Lock of every package in the environment, produced by 'bash scripts/setup.sh --lock' (pip freeze of a"
    echo "# fresh venv holding requirements.txt, after a clean pip check). scripts/setup.sh installs with -c this file."
    "$scratch/venv/bin/python" -m pip freeze --exclude-editable
  } > constraints.txt
  echo "setup: wrote constraints.txt ($(grep -vc '^#' constraints.txt) packages)"
fi

# --- the venv ---
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($PY --version)"
  "$PY" -m venv .venv
fi
STAMP=.venv/.binlake-setup
want=$( { .venv/bin/python --version; cat requirements.txt constraints.txt libs/pyproject.toml; } | sha256sum | cut -d' ' -f1)
# --- delta-spark's jars: .jars (verified) and the venv's spark-defaults.conf naming them ---
delta_jars() {
  [ -d .jars ] || apt_install mvn maven "it fetches delta-spark's jars"
  bash jars/fetch.sh --python .venv/bin/python .jars
  local conf_dir jars
  conf_dir="$(.venv/bin/python -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')/conf"
  jars=$(grep -v '^#' jars/SHA256SUMS | awk -v d="$PWD/.jars" 'NF { printf "%s%s/%s", sep, d, $2; sep="," }')
  mkdir -p "$conf_dir"
  {
    echo "# Written by binlake's scripts/setup.sh (rewritten on every run): delta-spark's verified jars"
    echo "# (jars/SHA256SUMS) and Delta's SQL extension for every Spark this venv starts."
    echo "spark.jars                       $jars"
    echo "spark.sql.extensions             io.delta.sql.DeltaSparkSessionExtension"
    echo "spark.sql.catalog.spark_catalog  org.apache.spark.sql.delta.catalog.DeltaCatalog"
  } > "$conf_dir/spark-defaults.conf.new"
  mv "$conf_dir/spark-defaults.conf.new" "$conf_dir/spark-defaults.conf"
}

# --- the native decoder core (native/: Rust, built by maturin, pinned in native/pyproject.toml and Cargo.lock) ---
# Optional: without cargo, or when the build fails, binlake uses its pure-Python decoder. Skipped while the
# installed module matches the hash of native/'s sources (.venv/.binlake-native).
native_core() {
  local stamp=.venv/.binlake-native log=.venv/.binlake-native.log src
  src=$( { .venv/bin/python --version; find native -path native/target -prune -o -type f \( -name '*.rs' -o \
          -name Cargo.toml -o -name Cargo.lock -o -name pyproject.toml \) -print | LC_ALL=C sort | xargs cat; } |
        sha256sum | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$src" ] && .venv/bin/python -c 'import binlake_native' 2>/dev/null; then
    return 0
  fi
  rm -f "$stamp"
  if ! command -v cargo >/dev/null 2>&1; then
    .venv/bin/python -m pip uninstall --quiet --yes binlake-native >/dev/null 2>&1 || true
    echo "setup: no Rust toolchain (cargo): binlake will use its pure-Python decoder (install Rust for the native core)"
    return 0
  fi
  echo "setup: building the native decoder core (native/, about 1-2 min the first time)"
  if MATURIN_PEP517_ARGS="--locked" .venv/bin/python -m pip install --quiet --no-deps --force-reinstall ./native \
       >"$log" 2>&1 && .venv/bin/python -c 'import binlake_native' 2>>"$log"; then
    echo "$src" > "$stamp"
  else
    .venv/bin/python -m pip uninstall --quiet --yes binlake-native >/dev/null 2>&1 || true
    echo "setup: the native decoder core did not build (see $log): binlake will use its pure-Python decoder"
  fi
}

# --- the Spark driver's class archive (.jars/cds: binlake's JVMs start about 4 s sooner), rewritten only after
# a JDK, jar or class path layout change; optional: without it Spark starts as usual ---
class_archive() {
  .venv/bin/python -m binlake.cli.class_archive_cmd --if-stale || true
}

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] && [ -x .venv/bin/binlake ]; then
  delta_jars
  native_core
  class_archive
  echo "setup: ok, up to date ($(.venv/bin/binlake --version); delta-spark jars in .jars)"
  exit 0
fi
echo "setup: installing requirements.txt under constraints.txt into .venv (1-2 min on a new machine)"
rm -f "$STAMP"
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -r requirements.txt -c constraints.txt || {
  echo "setup: pip could not install requirements.txt under constraints.txt; after changing requirements.txt run" \
       "'bash scripts/setup.sh --lock' (re-resolves and rewrites constraints.txt)" >&2; exit 1; }
# setuptools' notice about how an editable install is made is for package authors, not for a new user's console
PYTHONWARNINGS="ignore:Editable installation" .venv/bin/python -m pip install --quiet --no-deps -e libs
problems=$(.venv/bin/python -m pip check) || { echo "setup: pip check: $problems" >&2; exit 1; }
unlocked=$(.venv/bin/python -m pip freeze --exclude-editable | grep -v '^binlake-native' |
           grep -vxF -f <(grep -v '^#' constraints.txt) || true)
if [ -n "$unlocked" ]; then
  echo "setup: warning: installed but not in constraints.txt: $(echo "$unlocked" | tr '\n' ' ')" >&2
  echo "setup: run 'bash scripts/setup.sh --lock' and commit constraints.txt" >&2
fi
delta_jars
native_core
class_archive
echo "$want" > "$STAMP"
echo "setup: ok ($(.venv/bin/binlake --version); delta-spark jars in .jars)"
