"""One private MariaDB server for the snapshot tests (each test uses databases of its own)."""

from __future__ import annotations

from typing import Iterator

import pytest

from tests.mariadb_server import MariaDBServer, require_mariadb


@pytest.fixture(scope="package")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MariaDBServer]:
    require_mariadb()
    with MariaDBServer(tmp_path_factory.mktemp("snapshot_mariadb")) as srv:
        srv.execute("CREATE USER 'snap'@'127.0.0.1' IDENTIFIED BY 'snap-pw'")
        yield srv


def source_uri(server: MariaDBServer, user: str = "snap") -> str:
    return f"mysql://{user}@127.0.0.1:{server.port}/?server_id=4201&name=src"
