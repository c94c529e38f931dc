"""docker/Dockerfile and the scripts under docker/: linted (hadolint, ShellCheck and the project's own rules), and
every version they pin equals requirements.txt / constraints.txt."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docker.tools import DOCKER, DOCKERFILE, dockerfile_stages, pins, require_tool
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
    done = subprocess.run(
        [hadolint, "--config", str(DOCKER / ".hadolint.yaml"), str(DOCKERFILE)],
        capture_output=True,
        text=True,
        check=False,
    )
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
    assert ignore[next(i for i, ln in enumerate(ignore) if not ln.startswith("#"))] == "*"  # allow-list
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


# --- versions ---------------------------------------------------------------------------------------------------------
def test_docker_requirement_pins_equal_the_project_pins() -> None:
    spark = pins(SPARK_REQUIREMENTS)
    assert {"pyspark", "delta-spark", "zstandard"} <= set(spark)
    for name, version in spark.items():
        assert REQUIREMENTS.get(name) == version, f"docker/spark/requirements.txt {name}=={version}"
        assert CONSTRAINTS[name] == version
    deploy = pins(AIRFLOW_REQUIREMENTS)
    for name in deploy:  # additions only: never a second pin of a project package
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


def pom_property(name: str) -> str:
    found = re.search(rf"<{re.escape(name)}>([^<]+)</{re.escape(name)}>", (ROOT / "jars" / "pom.xml").read_text())
    assert found, f"jars/pom.xml has no <{name}>"
    return found.group(1)


def test_the_jar_pom_matches_pyspark_and_delta_spark() -> None:
    """jars/pom.xml (what setup.sh and the images fetch) is for the pinned pyspark minor and pip delta-spark, and
    SHA256SUMS pins the delta-spark and delta-storage jars of its delta release."""
    assert pom_property("spark.binary") == ".".join(REQUIREMENTS["pyspark"].split(".")[:2])
    assert pom_property("delta.pip.version") == REQUIREMENTS["delta-spark"]
    jar_version, spark_binary = pom_property("delta.spark.version"), pom_property("spark.binary")
    listed = [
        ln.split()[1]
        for ln in (ROOT / "jars" / "SHA256SUMS").read_text().splitlines()
        if ln.strip() and not ln.startswith("#")
    ]
    assert f"delta-spark_{spark_binary}_2.13-{jar_version}.jar" in listed
    assert f"delta-storage-{jar_version}.jar" in listed


@pytest.mark.slow
def test_the_jar_pom_is_the_artifact_binlake_and_delta_spark_name() -> None:
    """binlake's delta_spark_artifact() is the pom's delta-spark; delta-spark's own pip helper names the same
    module (its version is pip's, which Maven Central lacks for 4.4.1: see jars/pom.xml). In a child process:
    SparkSession.Builder options are process-wide."""
    from binlake.lake.delta.engine import delta_spark_artifact

    ours = f"io.delta:delta-spark_{pom_property('spark.binary')}_2.13:{pom_property('delta.spark.version')}"
    assert delta_spark_artifact() == ours
    probe = (
        "from pyspark.sql import SparkSession; from delta import configure_spark_with_delta_pip; "
        "print(configure_spark_with_delta_pip(SparkSession.builder)._options['spark.jars.packages'])"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{ours.rsplit(':', 1)[0]}:{pom_property('delta.pip.version')}"


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


def test_both_images_bake_the_verified_jars_of_the_jar_pom(stages: dict) -> None:
    fetch = instructions(stages, "delta-jars", "RUN")
    assert fetch == ["bash /opt/binlake/src/jars/fetch.sh /opt/binlake/delta-jars"]
    assert "jars /opt/binlake/src/jars" in instructions(stages, "delta-jars", "COPY")
    assert "jars /opt/binlake/src/jars" in instructions(stages, "base", "COPY")
    for target in TARGETS:
        assert "--from=delta-jars /opt/binlake/delta-jars/ /opt/binlake/delta-jars/" in instructions(
            stages, target, "COPY"
        )
        assert "bash /opt/binlake/build/bake_delta_jars.sh /opt/binlake/delta-jars" in instructions(
            stages, target, "RUN"
        )
    bake = (DOCKER / "common" / "bake_delta_jars.sh").read_text()
    assert 'jars/fetch.sh" --python python "$jardir"' in bake  # SHA256SUMS and versions, checked again
    assert "sha256sum" in (ROOT / "jars" / "fetch.sh").read_text()
    # bake_delta_jars installs them into $SPARK_HOME/jars, where binlake.lake.session.delta_jars() looks for
    # delta-spark_*.jar to configure Delta's extension
    session = (ROOT / "libs" / "binlake" / "lake" / "session.py").read_text()
    assert 'glob("delta-spark_*.jar")' in session
    assert 'compgen -G "$SPARK_HOME/jars/delta-spark_*.jar"' in bake


def test_compose_and_image_agree_on_paths(stages: dict) -> None:
    from tests.docker.tools import compose_model

    services = compose_model()["services"]
    assert services["airflow-scheduler"]["environment"]["BINLAKE_HOME"] == env_value(stages, "airflow", "BINLAKE_HOME")
    shipper_script = services["binlog-shipper"]["command"][1]
    assert any(args.endswith(shipper_script) for args in instructions(stages, "airflow", "COPY"))
    assert Path(ROOT, "docker", "shipper", Path(shipper_script).name).is_file()
