"""The compose environment read by the real code: Airflow's Spark provider resolves spark_default to the cluster,
binlake's settings land on the mounted volumes, and the Airflow CLI has the Airflow 3 commands the services run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docker.test_compose import AIRFLOW_COMPONENTS
from tests.docker.tools import compose_model, dockerfile_stages
from tests.support import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.airflow]

PROBE = r"""
import json
from airflow.cli.cli_parser import get_parser
from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from binlake.orchestration.config import SPARK_CONF, load_settings

s = load_settings()
hook = SparkSubmitHook(conn_id=s.spark_conn_id, conf=dict(SPARK_CONF))
commands = get_parser()._subparsers._group_actions[0].choices
jobs_check = commands["jobs"]._subparsers._group_actions[0].choices["check"]
job_types = next(a.choices for a in jobs_check._actions if a.dest == "job_type")
print(json.dumps({
    "connection": hook._connection,
    "argv": hook._build_spark_submit_command(s.spark_job("validate")),
    "settings": {"home": s.home, "landing": s.landing, "lake": s.lake, "sdi": s.sdi, "sources": list(s.sources),
                 "validate_job": s.spark_job("validate")},
    "commands": sorted(commands),
    "job_types": sorted(job_types),
}))
"""


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> dict:
    scheduler_env = {k: str(v) for k, v in compose_model()["services"]["airflow-scheduler"]["environment"].items()}
    home = tmp_path_factory.mktemp("airflow-home")
    environ = {
        **os.environ,
        **scheduler_env,
        # no PostgreSQL here: nothing below queries the metadata DB, but Airflow builds an engine at import
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
    }
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=environ, cwd=home, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_spark_provider_submits_to_the_cluster_in_client_mode(probe: dict) -> None:
    assert probe["connection"]["master"] == "spark://spark-master:7077"
    assert probe["connection"]["deploy_mode"] == "client"
    argv = probe["argv"]
    assert argv[0] == "spark-submit"
    assert argv[argv.index("--master") + 1] == "spark://spark-master:7077"
    assert argv[argv.index("--deploy-mode") + 1] == "client"


def test_binlake_settings_point_at_the_volumes_and_the_image_layout(probe: dict) -> None:
    s = probe["settings"]
    assert (s["landing"], s["sdi"], s["lake"], s["sources"]) == (
        "/landing/binlogs",
        "/landing/sdi",
        "/lake",
        ["shop-primary"],
    )
    # the job spark-submit runs is where the airflow image puts the checkout's spark_jobs/
    copies = {
        dest: src
        for op, args in dockerfile_stages()["airflow"]
        if op == "COPY" and "--from" not in args
        for src, dest in [args.split()]
    }
    job = Path(s["validate_job"])
    assert copies[str(job.parent)] == "spark_jobs" and (ROOT / "spark_jobs" / job.name).is_file()
    assert copies[f"{s['home']}/dags"] == "dags"


def test_airflow_has_the_commands_the_services_run(probe: dict) -> None:
    assert set(AIRFLOW_COMPONENTS.values()) | {"db", "jobs"} <= set(probe["commands"])
    services = compose_model()["services"]
    checked = [
        re.search(r"--job-type (\w+)", " ".join(s["healthcheck"]["test"]))
        for s in services.values()
        if "healthcheck" in s
    ]
    job_types = {m.group(1) for m in checked if m}
    assert job_types == {"DagProcessorJob", "TriggererJob"}
    assert job_types <= set(probe["job_types"])
