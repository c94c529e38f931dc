"""Where binlake's Airflow DAGs find their data, and how they run Spark: the one place the DAGs read settings.

Every value has a default for a local checkout and can be set by an environment variable (what a deployment
sets, e.g. in the Airflow workers' environment or the docker image):

- ``BINLAKE_LANDING`` (default ``<home>/sample/landing``): landing root, one folder of binlog files per
  source (``<landing>/<source>/``)
- ``BINLAKE_LAKE`` (default ``<home>/sample/lake``): lake root (bronze/, silver/, meta/, reports/)
- ``BINLAKE_SDI`` (default ``<landing>/../sdi``): SDI files or folders snapshotted by each run
- ``BINLAKE_SOURCES`` (default ``shop-primary``): comma-separated source names (the DAG's task groups and the
  choices of its ``sources`` param)
- ``BINLAKE_START_DATE`` (default ``2024-03-01``): first data interval of the daily DAG (UTC)
- ``BINLAKE_SPARK_CONN_ID`` (default ``spark_default``): the Airflow connection spark-submit runs against
- ``BINLAKE_HOME`` (default: the checkout that holds this package): where ``spark_jobs/`` lives
- ``BINLAKE_MAX_LAG_HOURS`` (default ``24``): the ``freshness`` task fails when a source's last applied commit
  is more than this behind the run's data interval end
- ``BINLAKE_ALERT_WEBHOOK`` (default none): a URL the DAGs' failure callback POSTs each alert to (JSON)
- ``BINLAKE_MAINTENANCE_ENGINE`` (default ``rust``: no Spark in the Airflow worker) and
  ``BINLAKE_VACUUM_HOURS`` (default ``168``): how the weekly ``lake_maintenance`` DAG runs ``binlake maintain``

- ``BINLAKE_MEMBERS`` (default none): the servers of sources that are replication clusters,
  ``source=host:port,host:port;other=host:port,...``: the source is fetched from its members (``binlake fetch``
  with one ``--source`` per member, landing in ``<landing>/<source>/<host>-<port>/``), following a failover
A source whose Airflow connection ``binlake_source_<source>`` (``-`` and ``.`` as ``_``) exists is fetched from
its server (``binlake fetch``) at the start of each run (a cluster source: from its members, with the
connection's user, password and extra; its host is not used); the connection is looked up when that task runs,
never while a DAG file is parsed. Reading these settings touches only ``os.environ``: it is safe at parse time.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from binlake.lake.layout import LakeLayout

DEFAULT_SOURCES = ("shop-primary",)  # the source name `binlake generate` writes by default
DEFAULT_START_DATE = dt.date(2024, 3, 1)  # the first day `binlake generate` writes by default
SOURCE_CONN_PREFIX = "binlake_source_"

# The project's Spark settings for every spark-submit (the master and deploy mode come from the connection).
SPARK_CONF: Mapping[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}

DQ_RESULTS_ASSET = "binlake_dq_results"  # the asset's name; its URI is Settings.dq_results_uri
SILVER_ASSET = "binlake_silver"  # updated by each source's apply; its URI is Settings.silver_uri


def _home() -> Path:
    return Path(__file__).resolve().parents[3]


@dataclass(frozen=True, slots=True)
class Settings:
    home: str
    landing: str
    lake: str
    sdi: str
    sources: tuple[str, ...]
    start_date: dt.date
    spark_conn_id: str = "spark_default"
    max_lag_hours: float = 24.0
    alert_webhook: str = ""
    maintenance_engine: str = "rust"
    vacuum_hours: float = 168.0
    members: Mapping[str, tuple[tuple[str, int], ...]] = None  # type: ignore[assignment]  # source -> servers

    def source_members(self, source: str) -> tuple[tuple[str, int], ...]:
        """The (host, port) of each member of a cluster source, in the order given; () for one server."""
        return tuple((self.members or {}).get(source, ()))

    def source_landing(self, source: str) -> str:
        return os.path.join(self.landing, source)

    def spark_job(self, job: str) -> str:
        """Path of ``spark_jobs/<job>.py``, the application spark-submit runs."""
        return os.path.join(self.home, "spark_jobs", f"{job}.py")

    @property
    def dq_results(self) -> str:
        return self.layout.dq_results

    @property
    def reports(self) -> str:
        return self.layout.reports

    @property
    def layout(self) -> LakeLayout:
        return LakeLayout(self.lake)

    @property
    def dq_results_uri(self) -> str:
        """URI of the Airflow asset ``mysql_cdc_daily`` updates and ``dq_report`` is scheduled on."""
        return Path(self.dq_results).as_uri()

    @property
    def silver_uri(self) -> str:
        """URI of the Airflow asset ``binlake_silver``: each source's ``apply_changes`` task of
        ``mysql_cdc_daily`` updates it; ``dq_report`` (and any user DAG) can be scheduled on it."""
        return Path(self.lake, "silver").as_uri()

    @property
    def orchestration_state(self) -> str:
        """Files the orchestration keeps for itself (the per-file commit-time cache)."""
        return os.path.join(self.lake, "_orchestration")


def source_group_id(source: str) -> str:
    """The source's task group id in ``mysql_cdc_daily`` (letters, digits, ``-`` and ``_`` only)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", source)


def source_conn_id(source: str) -> str:
    """The Airflow connection naming a source's server (``mysql://user@host:port/?server_id=N``)."""
    return SOURCE_CONN_PREFIX + re.sub(r"[^A-Za-z0-9_]", "_", source)


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """The settings from ``env`` (default ``os.environ``) with the documented defaults."""
    env = os.environ if env is None else env
    home = env.get("BINLAKE_HOME") or str(_home())
    landing = os.path.abspath(env.get("BINLAKE_LANDING") or os.path.join(home, "sample", "landing"))
    lake = os.path.abspath(env.get("BINLAKE_LAKE") or os.path.join(home, "sample", "lake"))
    sdi = os.path.abspath(env.get("BINLAKE_SDI") or os.path.join(os.path.dirname(landing), "sdi"))
    sources = tuple(s.strip() for s in (env.get("BINLAKE_SOURCES") or "").split(",") if s.strip())
    start = env.get("BINLAKE_START_DATE")
    return Settings(
        home=home,
        landing=landing,
        lake=lake,
        sdi=sdi,
        sources=sources or DEFAULT_SOURCES,
        start_date=dt.date.fromisoformat(start) if start else DEFAULT_START_DATE,
        spark_conn_id=env.get("BINLAKE_SPARK_CONN_ID") or "spark_default",
        max_lag_hours=_number(env, "BINLAKE_MAX_LAG_HOURS", 24.0),
        alert_webhook=env.get("BINLAKE_ALERT_WEBHOOK") or "",
        maintenance_engine=env.get("BINLAKE_MAINTENANCE_ENGINE") or "rust",
        vacuum_hours=_number(env, "BINLAKE_VACUUM_HOURS", 168.0),
        members=parse_members(env.get("BINLAKE_MEMBERS") or ""),
    )


def parse_members(text: str) -> dict[str, tuple[tuple[str, int], ...]]:
    """``source=host:port,host:port;other=host`` (port 3306 when left out) -> {source: ((host, port), ...)}."""
    from binlake.orchestration.errors import OrchestrationError

    out: dict[str, tuple[tuple[str, int], ...]] = {}
    for part in (p.strip() for p in text.split(";")):
        if not part:
            continue
        source, sep, servers = part.partition("=")
        hosts: list[tuple[str, int]] = []
        for item in (h.strip() for h in servers.split(",")):
            host, _, port = item.rpartition(":") if ":" in item else (item, "", "3306")
            if not item or not host or not port.isdigit() or not 0 < int(port) < 65536:
                hosts = []
                break
            hosts.append((host, int(port)))
        if not sep or not source.strip() or not hosts:
            raise OrchestrationError(
                f"BINLAKE_MEMBERS part {part!r}: write source=host:port,host:port (sources separated by ;)"
            )
        out[source.strip()] = tuple(hosts)
    return out


def _number(env: Mapping[str, str], name: str, default: float) -> float:
    text = env.get(name)
    if not text:
        return default
    try:
        return float(text)
    except ValueError:
        from binlake.orchestration.errors import OrchestrationError

        raise OrchestrationError(f"{name}={text!r} is not a number: set it to a number of hours") from None
