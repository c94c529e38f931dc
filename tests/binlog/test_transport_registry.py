"""URI schemes of transports that live outside binlake.binlog are found without importing them first."""

from __future__ import annotations

import subprocess
import sys


def test_mysql_scheme_loads_its_transport_on_first_use():
    code = (
        "import sys\n"
        "from binlake.binlog.api import open_stream\n"
        "from binlake.errors import BinlakeError\n"
        "assert 'binlake.transport' not in sys.modules\n"
        "try:\n"
        "    open_stream('mysql://repl@127.0.0.1:1/binlog.000001?server_id=4242')\n"
        "except BinlakeError as exc:\n"
        "    print(type(exc).__module__, exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "no transport for URI scheme" not in out.stdout
    assert out.stdout.startswith("binlake.transport"), out.stdout
