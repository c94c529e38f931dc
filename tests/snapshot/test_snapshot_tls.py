"""``binlake snapshot`` over TLS against a real MariaDB server whose snapshot user must use TLS (``REQUIRE SSL``:
the server refuses the user's login without it): the native reader reads the rows through the TLS socket
PyMySQL opened, and the snapshot equals the server's own ``SELECT`` of the table, row by row (both readers)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from binlake.binlog.native import available
from binlake.pipeline.filters import TableFilter
from binlake.snapshot import SnapshotOptions, read_snapshots, take_snapshot
from binlake.transport import parse_mysql_uri
from tests.mariadb_server import BinlogSettings, MariaDBServer, require_mariadb

pytestmark = [pytest.mark.mariadb, pytest.mark.slow]

ROWS = 30_000


def _certificates(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key (``openssl``)."""
    cert, key = folder / "server.pem", folder / "server.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


def test_a_snapshot_over_tls_equals_the_servers_select(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_mariadb()
    cert, key = _certificates(tmp_path)
    settings = BinlogSettings(extra_args=(f"--ssl-cert={cert}", f"--ssl-key={key}"))
    with MariaDBServer(tmp_path / "server", settings) as server:
        server.execute("CREATE DATABASE shop")
        server.execute(
            "CREATE TABLE shop.t (id INT PRIMARY KEY, name VARCHAR(40), amount DECIMAL(9,2), "
            "at DATETIME(3), blob_ VARBINARY(20)); "
            f"INSERT INTO shop.t SELECT seq, CONCAT('naïve ', seq), seq / 7, '2024-01-01' + INTERVAL seq SECOND, "
            f"UNHEX(HEX(seq)) FROM seq_1_to_{ROWS}; "
            "CREATE USER 'snap'@'127.0.0.1' IDENTIFIED BY 'pw' REQUIRE SSL; "
            "GRANT SELECT, RELOAD, REPLICATION CLIENT ON *.* TO 'snap'@'127.0.0.1'",
            "shop",
        )
        conn = server.connect("shop", raw=False)
        cur = conn.cursor()
        cur.execute("SELECT id, name, amount, at, blob_ FROM t ORDER BY id")
        expected = [tuple(r) for r in cur.fetchall()]
        conn.close()
        monkeypatch.setenv("SNAP_PW", "pw")
        for reader in ["0"] + (["1"] if available() else []):
            monkeypatch.setenv("BINLAKE_NATIVE", reader)
            landing = tmp_path / f"landing-{reader}"
            uri = f"mysql://snap@127.0.0.1:{server.port}/?server_id=4201&name=src"
            source = parse_mysql_uri(uri + "&ssl=1", password_env="SNAP_PW")
            take_snapshot(source, landing, SnapshotOptions(TableFilter(("shop.t",), ()), chunk_rows=7_000))
            [table] = read_snapshots(landing / "src")[-1].tables
            data = pa.concat_tables(pq.read_table(f) for f in table.files)
            got = [tuple(r.values()) for r in data.to_pylist()]
            assert [(i, n, a, t.replace(tzinfo=None), b) for i, n, a, t, b in got] == expected, reader
    if not available():
        pytest.skip("the native core is not built: only the Python reader was compared")
