"""A snapshot's memory is bounded by a batch's bytes, not only its row count (issue #25, case 10): six rows of
50 MB are read and written one at a time. Measured as the peak resident size (``VmHWM``, see
tests/transport/test_hostile_memory.py) of a child process that runs only the snapshot; the scripted server runs
in this process."""

from __future__ import annotations

import dataclasses

import pyarrow.parquet as pq
import pytest

from tests.snapshot.fake_server import Answers, serve, uri
from tests.transport.test_hostile_memory import PEAK, peak_mb

pytestmark = pytest.mark.slow

ROW_MB, ROWS = 50, 6
CHILD = (
    PEAK
    + """
import sys
from binlake.snapshot import take_snapshot
from binlake.transport.uri import parse_mysql_uri

result = take_snapshot(parse_mysql_uri(sys.argv[1]), sys.argv[2])
print(result.rows, peak_mb())
"""
)


def test_wide_rows_are_snapshotted_in_bounded_memory(tmp_path) -> None:
    value = b"x" * (ROW_MB << 20)
    answers = dataclasses.replace(
        Answers(),
        rows=(["id", "v"], [[str(i), value] for i in range(ROWS)]),
        engine=(["ENGINE", "TABLE_ROWS"], [["InnoDB", str(ROWS)]]),
    )
    with serve(answers) as server:
        rows, mb = peak_mb(CHILD, uri(server), str(tmp_path))
    assert rows == str(ROWS)
    assert mb < 800, f"the snapshot peaked at {mb} MB for rows of {ROW_MB} MB"
    [part] = tmp_path.glob("src/_snapshots/*/tables/d__t/*.parquet")
    data = pq.read_table(part)
    assert data.num_rows == ROWS and set(map(len, data.column("v").to_pylist())) == {ROW_MB << 20}
