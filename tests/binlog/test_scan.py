"""The one event-header scanner (binlake.binlog.scan): places and headers as the full reader sees them, GTID
commit timestamps, a cut-short tail reported quietly, bounded memory for lying lengths."""

from __future__ import annotations

import io
import tracemalloc

import pytest

from binlake.binlog import CorruptEventError, NotABinlogError, open_binlog
from binlake.binlog.scan import ScanStats, scan_events
from tests.binlog import build
from tests.support import FIXTURES, fixture_path


def _written(tmp_path, compress: bool = False):
    from binlake.binlog import events as ev
    from binlake.binlog.writer import BinlogWriter, Event

    with BinlogWriter(tmp_path) as w:
        for gno, ts in ((1, 1_700_000_000_123_456), (2, 1_700_000_001_000_001)):
            w.write_transaction(
                [Event(ev.QueryEvent(1, 0, 0, b"", "d", "CREATE TABLE t (a INT)"))],
                gno=gno,
                commit_time_us=ts,
                compress=compress,
            )
        return w.current_file


def test_scan_matches_the_reader_and_carries_gtid_commit_timestamps(tmp_path) -> None:
    path = _written(tmp_path)
    scanned = list(scan_events(path))
    full = list(open_binlog(path, decode_rows=False))
    assert [(s.pos, s.type_code, s.event_size, s.timestamp, s.log_pos) for s in scanned] == [
        (e.pos, e.header.type_code, e.header.event_size, e.header.timestamp, e.header.log_pos) for e in full
    ]
    assert [s.commit_timestamp for s in scanned if s.type_code == 33] == [1_700_000_000_123_456, 1_700_000_001_000_001]


@pytest.mark.skipif(not FIXTURES.is_dir(), reason=f"real fixtures not found at {FIXTURES}")
@pytest.mark.parametrize(
    "name",
    [
        "rust_mysql_common/transaction_compression.000001",
        "rust_mysql_common/mariadb-bin.000001",
        "go-mysql/tcb-eval002c-bin.003320",
        "rust_mysql_common/binlog_transaction_with_GTID.000001",
    ],
)
def test_scan_matches_the_reader_on_real_files(name) -> None:
    path = fixture_path("binlog", *name.split("/"))
    full = [(e.pos, e.header.type_code) for e in open_binlog(path, decode_rows=False) if e.payload_pos is None]
    assert [(s.pos, s.type_code) for s in scan_events(path)] == full


def test_cut_short_tail_ends_quietly_with_the_last_whole_boundary(tmp_path) -> None:
    data = _written(tmp_path).read_bytes()
    ends = [s.pos + s.event_size for s in scan_events(io.BytesIO(data))]
    for cut in (ends[2] + 5, ends[2] + 25, 2):
        stats = ScanStats()
        got = list(scan_events(io.BytesIO(data[:cut]), stats=stats))
        assert stats.incomplete is not None
        assert stats.end == (ends[2] if cut > 4 else 0) and len(got) == stats.events
    stats = ScanStats()
    assert [s.pos for s in scan_events(io.BytesIO(data), start=ends[1], stats=stats)] == ends[1:-1]
    assert stats.end == len(data) and stats.incomplete is None


def test_lying_lengths_cost_no_memory_and_bad_input_is_typed() -> None:
    class Pipe(io.RawIOBase):  # not seekable: bodies are read through in bounded steps
        def __init__(self, b: bytes) -> None:
            self._b = io.BytesIO(b)

        def readable(self) -> bool:
            return True

        def readinto(self, target) -> int:
            chunk = self._b.read(len(target))
            target[: len(chunk)] = chunk
            return len(chunk)

    huge = build.binlog() + build.event(230, b"")[:9] + (1 << 30).to_bytes(4, "little") + bytes(6) + bytes(50 << 20)
    tracemalloc.start()
    stats = ScanStats()
    list(scan_events(io.BufferedReader(Pipe(huge)), stats=stats))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert stats.incomplete is not None and peak < 8 << 20
    with pytest.raises(NotABinlogError):
        list(scan_events(io.BytesIO(b"GIF89a" + bytes(40))))
    with pytest.raises(CorruptEventError, match="impossible event length"):
        list(scan_events(io.BytesIO(build.binlog() + bytes(19))))
