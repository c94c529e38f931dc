"""Bad input never escapes as a Python error and never hangs: every prefix of real binlogs, bit flips, wrong
checksums, table ids without TABLE_MAP, lengths past the event, and hypothesis fuzzing. The only outcomes allowed
are success or a :class:`~binlake.binlog.errors.BinlogError` (the incomplete-final-event report for prefixes)."""

from __future__ import annotations

import io
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from binlake.binlog import (
    BinlogError,
    ChecksumMismatchError,
    CorruptEventError,
    EncryptedBinlogError,
    IncompleteEventError,
    NotABinlogError,
    TruncatedEventError,
    UnknownTableError,
    read_events,
)
from binlake.binlog.api import _row_changes
from binlake.binlog.decoders import DecodeContext
from binlake.binlog.reader import ReadStats
from binlake.binlog.render import event_record, json_diffs, json_image
from tests.binlog import build
from tests.support import FIXTURES, fixture_path

SWEEP_FIXTURES = [
    "binlog/rust_mysql_common/transaction_compression.000001",  # zstd payload
    "binlog/rust_mysql_common/mariadb-bin.000001",  # MariaDB events, v1 rows
    "binlog/mysql-binlog-connector-java/mysql-bin.compressed",
    pytest.param("binlog/rust_mysql_common/json.binlog.000001", marks=pytest.mark.slow),  # JSON, partial update
    pytest.param("binlog/go-mysql/tcb-eval002c-bin.003320", marks=pytest.mark.slow),  # DECIMAL, no checksums
]
JSON_FIXTURE = "binlog/rust_mysql_common/json.binlog.000001"


def consume(data: bytes, verify_checksum: bool = True) -> int:
    """Decode everything (events, rows, their JSON rendering); returns the number of events."""
    ctx = DecodeContext()
    stats = ReadStats()
    events = list(read_events(io.BytesIO(data), file="mem", verify_checksum=verify_checksum, ctx=ctx, stats=stats))
    for ev in events:
        event_record(ev)
    for change in _row_changes(iter(events), DecodeContext(tables=dict(ctx.tables)), "mem"):
        json_image(change.before)
        json_image(change.after)
        json_diffs(change.diffs)
    return len(events)


def event_ends(data: bytes) -> list[int]:
    ends, pos = [], 4
    while pos < len(data):
        pos += struct.unpack_from("<I", data, pos + 9)[0]
        ends.append(pos)
    return ends


@pytest.mark.parametrize("name", SWEEP_FIXTURES)
def test_every_prefix_is_complete_or_reports_the_incomplete_final_event(name: str) -> None:
    data = fixture_path(name).read_bytes()
    ends = set(event_ends(data))
    for cut in range(len(data)):
        prefix = data[:cut]
        if cut == 4 or cut in ends:
            consume(prefix)  # cut on an event boundary: a complete file
            continue
        with pytest.raises(IncompleteEventError) as info:
            consume(prefix)
        assert info.value.offset is not None and info.value.offset <= cut


def test_incomplete_final_event_can_end_iteration_quietly() -> None:
    data = fixture_path(JSON_FIXTURE).read_bytes()
    ends = event_ends(data)
    stats = ReadStats()
    events = list(read_events(io.BytesIO(data[: ends[5] + 7]), stats=stats, stop_at_incomplete=True))
    assert len(events) == 6
    assert stats.incomplete is not None and stats.incomplete.offset == ends[5]


@pytest.mark.parametrize("name", SWEEP_FIXTURES)
def test_single_bit_flips_give_typed_errors(name: str) -> None:
    data = fixture_path(name).read_bytes()
    step = max(1, len(data) // 600)
    crc_file = name != "binlog/go-mysql/tcb-eval002c-bin.003320"
    detected = 0
    for i in range(0, len(data), step):
        for verify in (True, False):
            mutated = bytearray(data)
            mutated[i] ^= 1 << (i % 8)
            try:
                consume(bytes(mutated), verify_checksum=verify)
            except BinlogError:
                detected += verify
    if crc_file:  # CRC32 catches every single-bit error (a flip of the FDE's in-use flag is ignored by design)
        assert detected >= len(range(0, len(data), step)) - 2


def test_wrong_checksum_is_a_typed_error_naming_file_and_offset() -> None:
    data = bytearray(fixture_path(JSON_FIXTURE).read_bytes())
    ends = event_ends(bytes(data))
    data[ends[3] - 1] ^= 0xFF  # last checksum byte of the 4th event
    with pytest.raises(ChecksumMismatchError) as info:
        consume(bytes(data))
    assert info.value.offset == ends[2] and "CRC32 mismatch" in str(info.value)
    assert consume(bytes(data), verify_checksum=False) == len(ends)


def test_not_a_binlog_and_bad_first_event() -> None:
    with pytest.raises(NotABinlogError):
        consume(b"-- MySQL dump\n")
    with pytest.raises(NotABinlogError):
        consume(build.MAGIC + build.event(2, b"\0" * 30))
    with pytest.raises(IncompleteEventError):
        consume(b"\xfeb")


def test_rows_without_table_map_and_lengths_past_the_event() -> None:
    tm = build.table_map(7, "d", "t", [3], b"", [False])
    row = build.rows_event(30, 7, 1, build.image([False], struct.pack("<i", 5)))
    assert consume(build.binlog(tm, row)) == 3
    orphan = build.rows_event(30, 8, 1, build.image([False], struct.pack("<i", 5)))
    with pytest.raises(UnknownTableError) as info:
        consume(build.binlog(tm, orphan))
    assert info.value.event_type == "WRITE_ROWS_EVENT"
    # a VARCHAR length pointing past the event
    tm2 = build.table_map(9, "d", "t", [15], struct.pack("<H", 100), [False])
    bad = build.rows_event(30, 9, 1, build.image([False], b"\x50abc"))
    with pytest.raises(TruncatedEventError):
        consume(build.binlog(tm2, bad))
    # an event whose declared size is below the header size
    data = build.binlog(tm)
    with pytest.raises(CorruptEventError):
        consume(data + struct.pack("<IBIIIH", 0, 2, 1, 5, 0, 0))
    # a TABLE_MAP whose column count promises more types than the event has
    with pytest.raises(TruncatedEventError):
        consume(build.binlog((19, tm[1][:20] + build.packed(200) + b"\x03\x03")))


def test_start_encryption_is_a_clear_error() -> None:
    enc = (164, bytes([1]) + struct.pack("<I", 7) + b"n" * 12)
    data = build.binlog(enc, (2, b"\x99" * 40), server_version="10.11.6-MariaDB")
    with pytest.raises(EncryptedBinlogError) as info:
        consume(data)
    assert "encrypted" in str(info.value) and "key version 7" in str(info.value)


def test_unknown_event_types_are_kept_and_counted() -> None:
    data = build.binlog((99, b"opaque"), (99, b"more"))
    stats = ReadStats()
    events = list(read_events(io.BytesIO(data), stats=stats))
    assert [e.body.raw for e in events[1:]] == [b"opaque", b"more"]
    assert stats.unknown[99] == 2 and stats.unknown_total == 2


FUZZ_BASE = [
    build.binlog(
        build.table_map(
            1, "d", "t", [3, 15, 246, 245, 19, 254], struct.pack("<H", 40) + bytes([10, 2, 4, 3, 0xF7, 1]), [True] * 6
        ),
        build.rows_event(
            31,
            1,
            6,
            build.image(
                [False, False, False, True, False, False],
                struct.pack("<i", 1),
                b"\x02hi",
                bytes([0x80, 0, 0, 0, 5]),
                bytes.fromhex("80000000"),
                b"\x01",
            )
            * 2,
        ),
    )
]
FUZZ_BASE += [
    (FIXTURES / name).read_bytes()
    for name in (JSON_FIXTURE, SWEEP_FIXTURES[0], SWEEP_FIXTURES[1])
    if (FIXTURES / name).is_file()
]


def _mutate_and_consume(data: st.DataObject) -> None:
    base = bytearray(data.draw(st.sampled_from(FUZZ_BASE)))
    for _ in range(data.draw(st.integers(1, 8))):
        i = data.draw(st.integers(4, len(base) - 1))
        base[i] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        base = base[: data.draw(st.integers(0, len(base)))]
    try:
        consume(bytes(base), verify_checksum=data.draw(st.booleans()))
    except BinlogError:
        pass


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_mutations_never_escape_as_python_errors(data: st.DataObject) -> None:
    _mutate_and_consume(data)


@pytest.mark.slow
@settings(max_examples=20000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_mutations_long_run(data: st.DataObject) -> None:
    _mutate_and_consume(data)


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=400))
def test_fuzz_random_event_bodies(body: bytes) -> None:
    """Any bytes as the body of any known event type: decoded or a typed error."""
    for type_code in (2, 4, 14, 16, 19, 26, 29, 30, 31, 33, 35, 38, 39, 40, 41, 42, 160, 161, 162, 163, 165, 169):
        try:
            consume(build.binlog(build.table_map(1, "d", "t", [3, 245], bytes([4]), [True, True]), (type_code, body)))
        except BinlogError:
            pass
