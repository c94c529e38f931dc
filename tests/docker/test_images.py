"""docker/Dockerfile and the scripts under docker/: linted (hadolint, ShellCheck and the project's own rules), and
every version they pin equals requirements.txt / constraints.txt."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docker.tools import DOCKER, DOCKERFILE, dockerfile_stages, normalize, pins, require_tool
from tests.support import ROOT

REQUIREMENTS = pins(ROOT / "requirements.txt")
CONSTRAINTS = pins(ROOT / "constraints.txt")
SPARK_REQUIREMENTS = DOCKER / "spark" / "requirements.txt"
AIRFLOW_REQUIREMENTS = DOCKER / "airflow" / "requirements.txt"
TARGETS = ("spark", "airflow")


@pytest.fixture(scope="module")
def stages() -> dict[str, list[tuple[str, str]]]:
    return dockerfile_stages()


def instructions(stages: dict, target: str, op: str) -> list[str]:
    """``op`` arguments of ``target`` and of the stages it is built FROM, in build order."""
    chain, stage = [], target
    while stage in stages:
        chain.insert(0, stage)
        stage = stages[stage][0][1]
    return [args for s in chain for name, args in stages[s] if name == op]


def env_value(stages: dict, target: str, key: str) -> str:
    found = None
    for args in instructions(stages, target, "ENV"):
        for m in re.finditer(r"(\w+)=(\S+)", args):
            if m.group(1) == key:
                found = m.group(2)
    assert found is not None, f"{target}: no ENV {key}"
    return found


# --- linters ----------------------------------------------------------------------------------------------------------
def test_hadolint_passes() -> None:
    hadolint = require_tool("hadolint")
    done = subprocess.run([hadolint, "--config", str(DOCKER / ".hadolint.yaml"), str(DOCKERFILE)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0 and not done.stdout.strip(), done.stdout + done.stderr


def test_shellcheck_passes_on_every_script() -> None:
    shellcheck = require_tool("shellcheck")
    scripts = sorted(p for p in DOCKER.rglob("*.sh") if ".tools" not in p.parts)
    assert len(scripts) >= 4
    done = subprocess.run([shellcheck, *map(str, scripts)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_project_rules(stages: dict) -> None:
    """What hadolint does not insist on: version-pinned base images, one apt layer with cleanup, a numeric
    non-root user in every image, pip under the lock, sources that exist in the build context."""
    ignore = (DOCKER / "Dockerfile.dockerignore").read_text().splitlines()
    assert ignore[[i for i, ln in enumerate(ignore) if not ln.startswith("#")][0]] == "*"   # allow-list
    included = {ln.strip() for ln in ignore if ln.startswith("!")}
    for name, body in stages.items():
        base = body[0][1]
        if base not in stages:
            assert re.fullmatch(r"[\w./-]+:\d+\.\d+\.\d+[\w.-]*", base), f"{name}: base {base} not pinned to x.y.z"
            assert "latest" not in base
        for op, args in body:
            if op == "RUN" and "apt-get install" in args:
                assert "--no-install-recommends" in args and "-y" in args
                assert "apt-get update" in args and "rm -rf /var/lib/apt/lists/*" in args
            if op == "RUN" and "pip install" in args:
                for command in re.findall(r"pip install[^&]*", args):
                    assert "-c constraints.txt" in command or "--no-deps" in command, command
            if op == "COPY" and "--from" not in args:
                for src in args.split()[:-1]:
                    assert (ROOT / src).exists(), f"{name}: COPY source {src} is not in the repository"
                    top = src.split("/")[0]
                    assert f"!{top}" in included or f"!{top}/" in included, f"{src} is excluded from the context"
    for target in TARGETS:
        users = instructions(stages, target, "USER")
        assert users and re.fullmatch(r"[1-9]\d*(:\d+)?", users[-1]), f"{target} must end as a numeric non-root user"


# --- versions -----------------------------------------------------------------------------------------------------------
def test_docker_requirement_pins_equal_the_project_pins() -> None:
    spark = pins(SPARK_REQUIREMENTS)
    assert {"pyspark", "delta-spark", "zstandard"} <= set(spark)
    for name, version in spark.items():
        assert REQUIREMENTS.get(name) == version, f"docker/spark/requirements.txt {name}=={version}"
        assert CONSTRAINTS[name] == version
    deploy = pins(AIRFLOW_REQUIREMENTS)
    assert deploy, "docker/airflow/requirements.txt pins nothing"
    for name, version in deploy.items():          # additions only: never a second pin of a project package
        assert name not in REQUIREMENTS and name not in CONSTRAINTS, name
    lines = [ln for ln in AIRFLOW_REQUIREMENTS.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    assert len(lines) == len(deploy), "every docker/airflow/requirements.txt line is an exact == pin"


def test_images_install_the_project_requirements_under_the_lock(stages: dict) -> None:
    airflow_pip = " ".join(instructions(stages, "airflow", "RUN"))
    assert "pip install -r requirements.txt -r docker/airflow/requirements.txt -c constraints.txt" in airflow_pip
    spark_pip = " ".join(instructions(stages, "spark", "RUN"))
    assert "pip install -r docker/spark/requirements.txt -c constraints.txt" in spark_pip
    for target in TARGETS:
        assert "pip install --no-deps ./libs" in " ".join(instructions(stages, target, "RUN"))
        assert "pip check" in " ".join(instructions(stages, target, "RUN"))


def test_delta_spark_package_matches_pyspark_and_delta_spark(stages: dict) -> None:
    args = dict(a.split("=", 1) for a in instructions(stages, "spark", "ARG"))
    spark_minor = ".".join(REQUIREMENTS["pyspark"].split(".")[:2])
    expected = f"io.delta:delta-spark_{spark_minor}_2.13:{REQUIREMENTS['delta-spark']}"
    assert args["DELTA_SPARK_PACKAGE"] == expected


@pytest.mark.slow
def test_delta_spark_package_is_what_delta_spark_itself_resolves(stages: dict) -> None:
    """The artifact delta-spark's own pip helper asks Spark to resolve for the installed pyspark (in a child
    process: SparkSession.Builder options are process-wide)."""
    expected = dict(a.split("=", 1) for a in instructions(stages, "spark", "ARG"))["DELTA_SPARK_PACKAGE"]
    probe = ("from pyspark.sql import SparkSession; from delta import configure_spark_with_delta_pip; "
             "print(configure_spark_with_delta_pip(SparkSession.builder)._options['spark.jars.packages'])")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == expected


def test_one_python_and_one_spark_for_driver_and_executors(stages: dict) -> None:
    base = stages["base"][0][1]
    python = re.fullmatch(r"python:(\d+)\.(\d+)\.\d+-slim-\w+", base)
    assert python, base
    # the lock (constraints.txt) was frozen on this interpreter; PySpark requires the same minor on both sides
    assert (int(python.group(1)), int(python.group(2))) == sys.version_info[:2]
    site = f"/opt/binlake/venv/lib/python{python.group(1)}.{python.group(2)}/site-packages/pyspark"
    for target in TARGETS:
        assert env_value(stages, target, "SPARK_HOME") == site
        assert env_value(stages, target, "PYSPARK_PYTHON") == "/opt/binlake/venv/bin/python"


def test_the_spark_image_bakes_the_jars_and_the_airflow_image_reuses_them(stages: dict) -> None:
    spark_runs = instructions(stages, "spark", "RUN")
    assert any("bake_delta_jars.sh \"$DELTA_SPARK_PACKAGE\"" in r for r in spark_runs)
    copies = instructions(stages, "airflow", "COPY")
    assert "--from=spark /opt/binlake/delta-jars/ /opt/binlake/delta-jars/" in copies
    assert any("bake_delta_jars.sh --verify-only" in r for r in instructions(stages, "airflow", "RUN"))
    # bake_delta_jars installs delta-spark as delta-spark_*.jar in $SPARK_HOME/jars: the name
    # binlake.lake.session.delta_jars() looks for to configure Delta's extension
    session = (ROOT / "libs" / "binlake" / "lake" / "session.py").read_text()
    assert 'glob("delta-spark_*.jar")' in session
    assert 'compgen -G "$SPARK_HOME/jars/delta-spark_*.jar"' in (DOCKER / "common" / "bake_delta_jars.sh").read_text()


def test_compose_and_image_agree_on_paths(stages: dict) -> None:
    from tests.docker.tools import compose_model

    services = compose_model()["services"]
    assert services["airflow-scheduler"]["environment"]["BINLAKE_HOME"] == env_value(stages, "airflow", "BINLAKE_HOME")
    shipper_script = services["binlog-shipper"]["command"][1]
    assert any(args.endswith(shipper_script) for args in instructions(stages, "airflow", "COPY"))
    assert Path(ROOT, "docker", "shipper", Path(shipper_script).name).is_file()
