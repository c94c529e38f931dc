"""docker/compose.yaml: it validates with Compose v2, and its services are wired to each other and to what the DAGs,
the Spark jobs and binlake's engines read."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import PurePosixPath
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.docker.tools import COMPOSE_FILE, DOCKER, DOCKERFILE, compose_model, compose_v2, dockerfile_stages

AIRFLOW_COMPONENTS = {  # service -> the Airflow 3 command it runs
    "airflow-apiserver": "api-server",
    "airflow-scheduler": "scheduler",
    "airflow-dag-processor": "dag-processor",
    "airflow-triggerer": "triggerer",
}
AIRFLOW_SERVICES = (*AIRFLOW_COMPONENTS, "airflow-init")


@pytest.fixture(scope="module")
def model() -> dict:
    return compose_model()


@pytest.fixture(scope="module")
def services(model: dict) -> dict:
    return model["services"]


def env(service: dict) -> dict[str, str]:
    return {k: str(v) for k, v in service.get("environment", {}).items()}


def mounts(service: dict) -> dict[str, str]:
    """Named-volume or bind source -> container path (short syntax ``source:target[:mode]``)."""
    out = {}
    for spec in service.get("volumes", []):
        source, target = spec.split(":")[:2]
        out[source] = target
    return out


def flags(argv: list[str]) -> dict[str, str]:
    """``--some-option=value`` arguments as {some_option: value} (MySQL treats - and _ alike)."""
    return {m.group(1).replace("-", "_"): m.group(2) for a in argv if (m := re.fullmatch(r"--([\w-]+)=(.*)", a))}


def under(path: str, root: str) -> bool:
    return PurePosixPath(path).is_relative_to(root)


# --- validation by Compose itself ----------------------------------------------------------------------------------
def test_compose_v2_validates_the_file_and_renders_what_the_wiring_tests_read(model: dict) -> None:
    rendered = subprocess.run(
        [compose_v2(), "-f", str(COMPOSE_FILE), "config", "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
        cwd=DOCKER,
    )
    assert rendered.returncode == 0, rendered.stderr
    config = json.loads(rendered.stdout)
    assert config["name"] == "binlake"
    assert set(config["services"]) == set(model["services"])
    assert {k: v["name"] for k, v in config["volumes"].items()} == {v: f"binlake_{v}" for v in model["volumes"]}
    # compose's own interpolation and merge keys agree with the model the tests below read
    for name, service in config["services"].items():
        assert service.get("environment", {}) == {
            k: (None if v is None else str(v)) for k, v in model["services"][name].get("environment", {}).items()
        }, name
    assert config["services"]["spark-worker"]["deploy"]["replicas"] == 2


# --- services and start order ---------------------------------------------------------------------------------------
def test_the_stack_has_every_service_of_the_deployment(services: dict) -> None:
    assert set(services) == {
        "postgres",
        "mysql",
        "mysql-workload",
        "binlog-shipper",
        "spark-master",
        "spark-worker",
        *AIRFLOW_SERVICES,
    }


def test_airflow_3_components_run_their_commands_from_the_airflow_image(services: dict) -> None:
    for name, command in AIRFLOW_COMPONENTS.items():
        assert services[name]["command"][:2] == ["airflow", command], name
    for name in (*AIRFLOW_SERVICES, "binlog-shipper"):
        assert services[name]["build"]["target"] == "airflow", name
        assert services[name]["image"] == services["airflow-scheduler"]["image"]
    for name in ("spark-master", "spark-worker"):
        assert services[name]["build"]["target"] == "spark", name
    targets = set(dockerfile_stages())
    for service in services.values():
        if "build" in service:
            assert service["build"]["target"] in targets
            assert (DOCKER / service["build"]["context"] / service["build"]["dockerfile"]).resolve() == DOCKERFILE


def test_dependencies_wait_for_health_checks_that_exist(services: dict) -> None:
    for name, service in services.items():
        for dep, spec in service.get("depends_on", {}).items():
            assert dep in services, f"{name} depends on unknown {dep}"
            if spec["condition"] == "service_healthy":
                assert "healthcheck" in services[dep], f"{name} waits for {dep}'s health, which has no healthcheck"
    for name in AIRFLOW_COMPONENTS:
        deps = services[name]["depends_on"]
        assert deps["airflow-init"]["condition"] == "service_completed_successfully"
        assert deps["postgres"]["condition"] == "service_healthy"
        assert "healthcheck" in services[name], name
    assert services["airflow-init"]["restart"] == "no"
    assert "airflow db migrate" in " ".join(services["airflow-init"]["command"])
    assert services["airflow-scheduler"]["depends_on"]["spark-master"]["condition"] == "service_healthy"
    assert services["spark-worker"]["depends_on"]["spark-master"]["condition"] == "service_healthy"
    for name in ("binlog-shipper", "mysql-workload"):
        assert services[name]["depends_on"]["mysql"]["condition"] == "service_healthy"


# --- Airflow's metadata database and API -----------------------------------------------------------------------------
def test_airflow_runs_on_postgresql_with_one_shared_configuration(services: dict) -> None:
    envs = [env(services[n]) for n in AIRFLOW_SERVICES]
    shared = {k: v for k, v in envs[0].items() if k.startswith(("AIRFLOW", "BINLAKE"))}
    for e in envs[1:]:
        assert {k: e.get(k) for k in shared} == shared  # same DB, secrets, connections, settings everywhere
    url = urlsplit(shared["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"])
    pg = env(services["postgres"])
    assert url.scheme == "postgresql+psycopg2" and url.hostname == "postgres"
    assert (url.username, url.password, url.path.lstrip("/")) == (
        pg["POSTGRES_USER"],
        pg["POSTGRES_PASSWORD"],
        pg["POSTGRES_DB"],
    )
    assert "psycopg2-binary==" in (DOCKER.parent / "requirements.txt").read_text()  # local Airflow's driver too
    assert shared["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor"
    assert shared["AIRFLOW__API_AUTH__JWT_SECRET"]  # one JWT secret, or task tokens fail between services
    api = urlsplit(shared["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"])
    assert api.hostname == "airflow-apiserver" and api.path == "/execution/"
    assert str(api.port) == services["airflow-apiserver"]["command"][-1]
    assert services["airflow-apiserver"]["ports"] == [f"{api.port}:{api.port}"]


# --- Spark: spark_default, the cluster, the engine ------------------------------------------------------------------
def test_spark_default_points_at_the_cluster_in_client_mode(services: dict) -> None:
    conn = json.loads(env(services["airflow-scheduler"])["AIRFLOW_CONN_SPARK_DEFAULT"])
    assert conn["conn_type"] == "spark"
    master = f"{conn['host']}:{conn['port']}"
    assert master == "spark://spark-master:7077"
    assert conn["extra"] == {"deploy-mode": "client", "spark-binary": "spark-submit"}
    cmd = services["spark-master"]["command"]
    assert cmd[:2] == ["spark-class", "org.apache.spark.deploy.master.Master"]
    assert cmd[cmd.index("--host") + 1] == services["spark-master"]["hostname"] == "spark-master"
    assert cmd[cmd.index("--port") + 1] == "7077"
    worker = services["spark-worker"]["command"]
    assert worker[:3] == ["spark-class", "org.apache.spark.deploy.worker.Worker", master]
    assert int(services["spark-worker"]["deploy"]["replicas"]) >= 1


def test_the_driver_is_reachable_from_the_executors(services: dict) -> None:
    scheduler = services["airflow-scheduler"]  # LocalExecutor: spark-submit (client mode) runs here
    assert env(scheduler)["SPARK_LOCAL_HOSTNAME"] == scheduler["hostname"] == "airflow-scheduler"


def test_the_pipeline_uses_the_delta_spark_engine(services: dict) -> None:
    for name in AIRFLOW_SERVICES:
        assert env(services[name])["BINLAKE_DELTA_ENGINE"] == "spark", name


# --- data: landing, SDI and lake volumes at the same paths for driver, executors and shipper -------------------------
def test_landing_and_lake_volumes_are_shared_at_the_paths_the_dags_read(model: dict, services: dict) -> None:
    e = env(services["airflow-scheduler"])
    assert e["BINLAKE_SOURCES"].split(",") == ["shop-primary"]
    for name in ("airflow-scheduler", "spark-worker"):
        m = mounts(services[name])
        assert under(e["BINLAKE_LANDING"], m["landing"]) and under(e["BINLAKE_SDI"], m["landing"]), name
        assert under(e["BINLAKE_LAKE"], m["lake"]), name
    for name in ("landing", "lake"):
        assert name in model["volumes"]


def test_the_shipper_publishes_closed_files_where_the_dag_reads_them(services: dict) -> None:
    e = env(services["airflow-scheduler"])
    shipper = services["binlog-shipper"]
    args = flags(shipper["command"])
    landing_mount = mounts(shipper)["landing"]
    assert shipper["command"][:2] == ["python", "/opt/binlake/app/docker/shipper/ship_binlogs.py"]
    assert args["landing"] == e["BINLAKE_LANDING"] and args["sdi"] == e["BINLAKE_SDI"]
    assert args["name"] in e["BINLAKE_SOURCES"].split(",")
    # the fetcher's folder (with the growing file) is outside the landing root, on the same volume (hard links)
    assert under(args["staging"], landing_mount) and not under(args["staging"], args["landing"])
    assert not under(args["landing"], args["staging"])
    # the source: the mysql service, as the replication user its init script creates, with a replica id of its own
    uri = urlsplit(args["source"])
    mysql = services["mysql"]
    assert (uri.hostname, uri.port, uri.username) == ("mysql", 3306, env(mysql)["BINLAKE_REPL_USER"])
    assert env(shipper)["BINLAKE_MYSQL_PASSWORD"] == env(mysql)["BINLAKE_REPL_PASSWORD"]
    assert parse_qs(uri.query)["server_id"] != [flags(mysql["command"])["server_id"]]
    # SDI snapshots from the source's datadir, read-only
    assert "mysql-data:/mysql-data:ro" in shipper["volumes"] and args["datadir"] == "/mysql-data"
    assert args["schema"] == env(mysql)["MYSQL_DATABASE"]
    init = DOCKER / "mysql" / "init" / "10-binlake-users.sh"
    assert "GRANT REPLICATION SLAVE, REPLICATION CLIENT, RELOAD ON *.*" in init.read_text()
    # the entrypoint runs an executable *.sh as a program (without its docker_process_sql) and sources the others
    assert not os.access(init, os.X_OK) and "docker_process_sql" in init.read_text()


def test_no_airflow_source_connection_competes_with_the_shipper(services: dict) -> None:
    # With AIRFLOW_CONN_BINLAKE_SOURCE_<source> set, the DAG's fetch task would run binlake fetch into the landing
    # folder as well (binlake.orchestration.tasks.fetch_source); the shipper is the one writer there.
    for name in AIRFLOW_SERVICES:
        assert not [k for k in env(services[name]) if k.startswith("AIRFLOW_CONN_BINLAKE_SOURCE_")]


# --- the MySQL 8.4 source ---------------------------------------------------------------------------------------------
def test_mysql_84_writes_row_binlogs_with_partial_json_full_metadata_compression_and_gtids(services: dict) -> None:
    mysql = services["mysql"]
    assert re.fullmatch(r"mysql:8\.4\.\d+", mysql["image"])
    opts = flags(mysql["command"])
    assert {
        k: opts.get(k)
        for k in (
            "binlog_format",
            "binlog_row_value_options",
            "binlog_row_metadata",
            "binlog_transaction_compression",
            "gtid_mode",
            "enforce_gtid_consistency",
            "binlog_row_image",
        )
    } == {
        "binlog_format": "ROW",
        "binlog_row_value_options": "PARTIAL_JSON",
        "binlog_row_metadata": "FULL",
        "binlog_transaction_compression": "ON",
        "gtid_mode": "ON",
        "enforce_gtid_consistency": "ON",
        "binlog_row_image": "FULL",
    }
    assert opts["log_bin"] and int(opts["server_id"]) > 0
    assert "./mysql/init:/docker-entrypoint-initdb.d:ro" in mysql["volumes"]


def test_the_workload_makes_partial_json_updates(services: dict) -> None:
    workload = services["mysql-workload"]
    assert workload["image"] == services["mysql"]["image"]
    script = (DOCKER / "workload" / "workload.sh").read_text()
    # partial updates are logged only for `col = JSON_SET|JSON_REPLACE|JSON_REMOVE(col, ...)` on the same column
    for function in ("JSON_SET", "JSON_REPLACE", "JSON_REMOVE"):
        assert re.search(rf"SET doc = {function}\(doc,", script), function
    assert re.search(r"\bdoc\s+JSON\b", script)
    e, mysql_env = env(workload), env(services["mysql"])
    assert (e["MYSQL_HOST"], e["MYSQL_DATABASE"], e["MYSQL_USER"], e["MYSQL_PASSWORD"]) == (
        "mysql",
        mysql_env["MYSQL_DATABASE"],
        mysql_env["MYSQL_USER"],
        mysql_env["MYSQL_PASSWORD"],
    )
    assert workload["entrypoint"] == ["bash", "/workload/workload.sh"]
    assert "./workload:/workload:ro" in workload["volumes"]


def test_pinned_images_only(services: dict) -> None:
    for name, service in services.items():
        image = service["image"]
        repo, _, tag = image.rpartition(":")
        assert repo and re.match(r"\d+\.\d+", tag), f"{name}: {image} is not pinned to a version tag"
        assert "latest" not in tag
