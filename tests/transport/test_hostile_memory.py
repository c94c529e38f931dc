"""Memory is bounded by what is real (issue #25, case 10): a server that sends 16 MiB packet pieces without end
gets a typed error after the first piece, not after the 1 GiB max_packet allows. Measured as the peak resident
size of a child process that runs only the replica's read: ``VmHWM`` of its own memory after exec, not
``ru_maxrss``, which Linux carries over from the parent across the child's exec (a big test process would count)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.transport.fake_mysql import FakeMySQL8, Script

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

PEAK = """
def peak_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
"""
CHILD = (
    PEAK
    + """
import sys
from binlake.errors import BinlakeError
from binlake.transport.client import ReplicationClient
from binlake.transport.uri import parse_mysql_uri

client = ReplicationClient(parse_mysql_uri(sys.argv[1]))
client.connect()
client.start_dump("binlog.000001", 4)
try:
    client.read()
    outcome = "no error"
except BinlakeError as exc:
    outcome = type(exc).__name__
print(outcome, peak_mb())
"""
)


def peak_mb(code: str, *args: str) -> tuple[str, int]:
    """(the child's last printed word before the number, its peak resident MB)."""
    out = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    outcome, mb = out.stdout.split()[-2:]
    return outcome, int(mb)


def test_endless_packet_pieces_stop_early_with_bounded_memory() -> None:
    files = [("binlog.000001", b"\xfebin" + bytes(100))]
    with FakeMySQL8(Script(files, flood=b"\x00")) as server:
        outcome, mb = peak_mb(CHILD, f"mysql://repl@127.0.0.1:{server.port}/?server_id=4242&heartbeat=0")
    assert outcome == "ProtocolError"
    assert mb < 400, f"the replica peaked at {mb} MB for a packet it refused (the first piece is 16 MiB)"
