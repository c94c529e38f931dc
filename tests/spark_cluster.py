"""A real Spark standalone cluster on 127.0.0.1 for tests: one master and two workers (1 core, 2 GB each), started
with the venv's ``spark-class``, stopped by PID at the end of the test session.

Use it by importing the fixture into a conftest.py (or a test module) and marking the tests ``spark`` and ``slow``::

    from tests.spark_cluster import spark_cluster  # noqa: F401  (pytest fixture)

    @pytest.mark.spark
    @pytest.mark.slow
    def test_ingest_on_a_cluster(spark_cluster, tmp_path):
        done = spark_cluster.submit("spark_jobs/ingest_binlogs.py", "--landing", str(landing), "--lake", str(lake))
        assert done.returncode == 0, spark_cluster.failure(done)
        assert spark_cluster.workers_used(done) == {0, 1}       # executors ran on both workers

``SparkCluster``:

- ``master_url`` (``spark://127.0.0.1:PORT``), ``web_url`` (the master's UI; ``/json/`` lists workers and apps);
- ``work_dirs``: the two workers' work dirs; each app gets ``<work dir>/<app id>/<executor id>/`` (with the
  executor's ``stdout``/``stderr``) on every worker that ran one of its executors;
- ``submit(app, *args, conf=None, timeout=900)``: ``spark-submit --master <master_url>`` of a Python file (relative
  paths are from the repository root), in the repository root, with the venv's Python on driver and executors;
  returns the ``subprocess.CompletedProcess`` (text; never raises on a failed job). It waits until both executors
  have registered before the job starts, so its tasks can use both workers;
- ``failure(done)``: what a failed ``submit`` said: the tail of its stdout (the Python driver's own output,
  its stderr included: spark-submit's PythonRunner merges them there) and of its stderr without INFO lines;
- ``app_id(done)``: the application id of a finished ``submit``; ``workers_used(done)``: indexes (0, 1) of the
  workers that ran its executors;
- ``env``: the environment the cluster and ``submit`` use (``SPARK_LOCAL_IP``, ``PYSPARK_PYTHON``, ...).

Delta: the venv's ``spark-defaults.conf`` (written by scripts/setup.sh) gives every driver ``spark.jars`` (the
verified ``.jars``) and Delta's SQL extension; Spark ships those jars to the executors. Nothing to pass.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
START_TIMEOUT = 120  # seconds for the master and both workers to come up


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class SparkCluster:
    master_url: str
    web_url: str
    work_dirs: tuple[Path, Path]
    env: dict[str, str]
    log_dir: Path
    processes: list[subprocess.Popen] = field(default_factory=list)

    def submit(
        self, app: str | Path, *args: str, conf: Mapping[str, str] | None = None, timeout: float = 900
    ) -> subprocess.CompletedProcess:
        settings = {
            "spark.pyspark.python": sys.executable,
            "spark.executor.cores": "1",
            "spark.executor.memory": "1g",
            "spark.cores.max": "2",
            "spark.scheduler.minRegisteredResourcesRatio": "1.0",  # both executors before the first task
            "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s",
            **(conf or {}),
        }
        cmd = [str(BIN / "spark-submit"), "--master", self.master_url]
        for key, value in settings.items():
            cmd += ["--conf", f"{key}={value}"]
        cmd += [str(ROOT / app), *args]
        return subprocess.run(cmd, cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=timeout)

    @staticmethod
    def failure(done: subprocess.CompletedProcess) -> str:
        log = "\n".join(line for line in done.stderr.splitlines() if " INFO " not in line)
        driver = done.stdout[-4000:]
        return f"exit {done.returncode}\n-- stdout (the Python driver) --\n{driver}\n-- stderr --\n{log[-4000:]}"

    def app_id(self, done: subprocess.CompletedProcess) -> str:
        found = re.search(r"app-\d{14}-\d{4}", done.stdout + done.stderr)
        if found is None:
            raise AssertionError(f"no application id in spark-submit's output: {done.stderr[-2000:]}")
        return found.group(0)

    def workers_used(self, done: subprocess.CompletedProcess) -> set[int]:
        app = self.app_id(done)
        return {i for i, work_dir in enumerate(self.work_dirs) if any((work_dir / app).glob("*/stderr"))}

    def status(self) -> dict:
        with urllib.request.urlopen(f"{self.web_url}/json/", timeout=10) as response:
            return json.load(response)

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def start_cluster(base: Path) -> SparkCluster:
    """Start a master and two workers under ``base`` (work dirs and logs); return once both workers are ALIVE."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_GATEWAY_PORT", "SPARK_CONF_DIR")}
    env.update(
        SPARK_LOCAL_IP="127.0.0.1",
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
    )
    port, web_port = free_port(), free_port()
    log_dir = base / "logs"
    log_dir.mkdir(parents=True)
    work_dirs = (base / "worker-0", base / "worker-1")
    cluster = SparkCluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{web_port}", work_dirs, env, log_dir)
    spark_class = str(BIN / "spark-class")

    def launch(name: str, args: list[str], extra_env: Mapping[str, str] = {}) -> None:
        with open(log_dir / f"{name}.log", "wb") as log:
            cluster.processes.append(
                subprocess.Popen(
                    [spark_class, *args], env={**env, **extra_env}, cwd=base, stdout=log, stderr=subprocess.STDOUT
                )
            )

    try:
        launch(
            "master",
            [
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(web_port),
            ],
        )
        deadline = time.monotonic() + START_TIMEOUT
        # the ports the master got (another process may have taken one asked for in between: Spark then binds
        # the next), before any worker starts and takes ports of its own
        master_log = log_dir / "master.log"
        cluster.master_url = f"spark://127.0.0.1:{_started_on(master_log, 'sparkMaster', cluster, deadline)}"
        cluster.web_url = f"http://127.0.0.1:{_started_on(master_log, 'MasterUI', cluster, deadline)}"
        for i, work_dir in enumerate(work_dirs):
            work_dir.mkdir()
            launch(
                f"worker-{i}",
                [
                    "org.apache.spark.deploy.worker.Worker",
                    "--host",
                    "127.0.0.1",
                    "--cores",
                    "1",
                    "--memory",
                    "2g",
                    "--work-dir",
                    str(work_dir),
                    "--port",
                    str(free_port()),
                    "--webui-port",
                    str(free_port()),
                    cluster.master_url,
                ],
                {"SPARK_WORKER_DIR": str(work_dir)},
            )
        while True:
            for process in cluster.processes:
                if process.poll() is not None:
                    raise RuntimeError(f"a Spark daemon exited with {process.returncode}; see {log_dir}")
            try:
                alive = [w for w in cluster.status().get("workers", []) if w.get("state") == "ALIVE"]
            except OSError:
                alive = []
            if len(alive) == 2:
                return cluster
            if time.monotonic() > deadline:
                raise RuntimeError(f"the Spark cluster did not get 2 ALIVE workers in {START_TIMEOUT} s; see {log_dir}")
            time.sleep(0.5)
    except BaseException:
        cluster.stop()
        raise


def _started_on(log: Path, service: str, cluster: SparkCluster, deadline: float) -> int:
    """The port a daemon's log says ``service`` started on."""
    pattern = re.compile(rf"Successfully started service '{service}' on port (\d+)")
    while True:
        found = pattern.search(log.read_text(errors="replace"))
        if found:
            return int(found.group(1))
        if any(p.poll() is not None for p in cluster.processes):
            raise RuntimeError(f"a Spark daemon exited; see {cluster.log_dir}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"no {service} started in {START_TIMEOUT} s; see {log}")
        time.sleep(0.2)


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory) -> Iterator[SparkCluster]:
    cluster = start_cluster(tmp_path_factory.mktemp("spark-cluster"))
    try:
        yield cluster
    finally:
        cluster.stop()
