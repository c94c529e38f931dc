"""What the ``mysql_snapshot`` DAG's tasks do (dags/mysql_snapshot.py is wiring only): take the snapshot of a
source into its landing folder, then load the landing folder into the lake with ``binlake run``.

Both are safe to rerun: a snapshot task that failed or was killed resumes its unfinished snapshot (same
source name and tables), and ``binlake run`` applies nothing twice.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

from binlake.snapshot.errors import SnapshotError

log = logging.getLogger(__name__)


class LoadFailed(SnapshotError):
    """``binlake run`` after the snapshot did not finish."""


def snapshot_task(
    source_uri: str,
    landing: str,
    *,
    name: Optional[str] = None,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    password_env: Optional[str] = None,
    chunk_rows: int = 100_000,
) -> dict[str, Any]:
    """Take (or finish) the snapshot; what it did, for the task's XCom."""
    from binlake.pipeline.filters import TableFilter
    from binlake.snapshot.take import SnapshotOptions, take_snapshot
    from binlake.transport.errors import SourceUriError
    from binlake.transport.uri import URI_PASSWORD_ENV_RE, parse_mysql_uri

    if password_env and not URI_PASSWORD_ENV_RE.match(password_env):
        # A DAG run's conf is written by whoever triggers it: like a URI, it may name only a binlake/MySQL variable.
        raise SourceUriError(
            f"password_env={password_env!r} must name a variable starting with BINLAKE_ or MYSQL_ "
            "(a triggered run must not send just any variable of the worker to a server)"
        )
    source = parse_mysql_uri(source_uri, password_env=password_env, name=name)
    options = SnapshotOptions(TableFilter(tuple(include), tuple(exclude)), chunk_rows=chunk_rows)
    result = take_snapshot(source, landing, options, stream=sys.stderr)
    log.info("%s", result.summary())
    return {
        "source": source.name,
        "landing": str(Path(landing) / source.name),
        "snapshot": result.id,
        "path": str(result.path),
        "tables": result.tables,
        "rows": result.rows,
        "positions": [p.to_json() for p in result.positions],
        "resumed": result.resumed,
    }


def load_task(landing: str, lake: str, source: str) -> dict[str, Any]:
    """``binlake run --landing LANDING --lake LAKE --source SOURCE --json``: the source's summary."""
    binlake = shutil.which("binlake") or str(Path(sys.executable).with_name("binlake"))
    argv = [binlake, "run", "--landing", landing, "--lake", lake, "--source", source, "--json"]
    log.info("%s", " ".join(argv))
    done = subprocess.run(argv, stdout=subprocess.PIPE, text=True, check=False)
    if done.returncode != 0:
        raise LoadFailed(
            f"binlake run for source {source} exited with {done.returncode}; see the task log above, "
            "fix the cause and clear the task to retry"
        )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {}
