"""What the ``lake_maintenance`` DAG runs: ``binlake.lake.maintain`` on the configured lake, logged per table."""

from __future__ import annotations

import logging
from typing import Any

from binlake.orchestration.config import Settings

log = logging.getLogger(__name__)


def maintain_lake_task(settings: Settings, *, dry_run: bool = False) -> dict[str, Any]:
    """Compact, vacuum (``settings.vacuum_hours``) and checkpoint every table; returns the summary."""
    from binlake.lake.delta import engine_for
    from binlake.lake.layout import LakeLayout
    from binlake.lake.maintain import check_retention, format_report, maintain_lake
    from binlake.lake.status import check_lake

    lake = LakeLayout(settings.lake)
    check_lake(lake)
    check_retention(settings.vacuum_hours, force=False)
    spark = None
    if settings.maintenance_engine != "rust":
        from binlake.lake.session import build_session

        spark = build_session("binlake-maintain")
    engine = engine_for(spark, settings.maintenance_engine)
    report = maintain_lake(engine, lake, vacuum_hours=settings.vacuum_hours, dry_run=dry_run, progress=log.info)
    log.info("%s", format_report(report))
    return report.as_dict()
