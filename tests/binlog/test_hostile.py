"""Hostile binlogs (issue #16): memory bombs, unbounded work and errors without their place.

Each test builds its input here and measures bounded memory or work by counting (tracemalloc peaks, cache
sizes, calls), never by timing."""

from __future__ import annotations

import io
import tracemalloc

import pytest
import zstandard

from binlake.binlog import BinlogError, CorruptEventError, EventTooLargeError, read_events
from binlake.binlog.decoders import DecodeContext
from tests.binlog import build

IGNORABLE_UNKNOWN = 230       # an event type no server writes, kept undecoded


def payload_body(inner: bytes, *, compress: bool = True, uncompressed_size: int | None = None) -> bytes:
    """A TRANSACTION_PAYLOAD body: (type, length, value) fields, end mark, payload (``Transaction_payload_event``)."""
    data = zstandard.ZstdCompressor(level=3).compress(inner) if compress else inner
    usize = len(inner) if uncompressed_size is None else uncompressed_size

    def field(ftype: int, value: int) -> bytes:
        v = build.packed(value)
        return build.packed(ftype) + build.packed(len(v)) + v

    return field(2, 0 if compress else 255) + field(3, usize) + field(1, len(data)) + b"\0" + data


def bomb(inner_size: int) -> bytes:
    """A small binlog whose compressed transaction (its last event) holds one inner event of ``inner_size``
    bytes (zeros)."""
    inner = build.event(IGNORABLE_UNKNOWN, bytes(inner_size - 19), crc=False)
    return build.binlog((40, payload_body(inner)))


def last_event_pos(data: bytes) -> int:
    pos = 4
    while True:
        size = int.from_bytes(data[pos + 9:pos + 13], "little")
        if pos + size >= len(data):
            return pos
        pos += size


def read_all(data: bytes, **kw) -> list:
    return list(read_events(io.BytesIO(data), file="bomb.bin", ctx=DecodeContext(), **kw))


def peak_of(fn) -> int:
    tracemalloc.start()
    try:
        fn()
    except BinlogError:
        pass
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def test_inner_event_above_the_cap_is_a_typed_error_naming_file_and_payload_offset() -> None:
    data = bomb(16 << 20)
    assert len(data) < 64 << 10
    with pytest.raises(EventTooLargeError) as err:
        read_all(data, max_event_size=1 << 20)
    e = err.value
    assert e.file == "bomb.bin" and e.offset == last_event_pos(data)
    assert "inner offset 0" in str(e) and "at most 1048576 bytes" in str(e) and str(16 << 20) in str(e)


def test_rejecting_an_oversized_inner_event_allocates_nothing_near_its_size() -> None:
    data = bomb(32 << 20)
    peak = peak_of(lambda: read_all(data, max_event_size=1 << 20))
    assert peak < 4 << 20, peak


def test_a_legitimate_large_inner_event_is_held_once_not_copied() -> None:
    size = 24 << 20
    data = bomb(size)
    events = []
    peak = peak_of(lambda: events.extend(e.header.event_size for e in read_all(data)))
    assert events[-1] == size
    # the event's bytes and the body kept by UnknownEvent; no third copy from joining header and rest
    assert peak < 2.3 * size, peak / size


def test_outer_event_above_the_cap_is_a_typed_error() -> None:
    data = build.binlog((IGNORABLE_UNKNOWN, bytes(5000)))
    with pytest.raises(EventTooLargeError) as err:
        read_all(data, max_event_size=4096)
    assert err.value.expected == "at most 4096 bytes" and err.value.found == 5000 + 19 + 4


def test_payload_must_decompress_to_its_declared_size() -> None:
    inner = build.event(IGNORABLE_UNKNOWN, b"x" * 100, crc=False)
    short = build.binlog((40, payload_body(inner, uncompressed_size=len(inner) + 50)))
    with pytest.raises(CorruptEventError, match="shorter than its declared uncompressed size"):
        read_all(short)
    long = build.binlog((40, payload_body(inner + inner, uncompressed_size=len(inner))))
    with pytest.raises(CorruptEventError):
        read_all(long)


def test_cli_max_event_size(tmp_path, capsys) -> None:
    from binlake.cli import main

    path = tmp_path / "bomb.bin"
    path.write_bytes(bomb(4 << 20))
    assert main(["events", str(path), "--max-event-size", "65536"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "larger than the maximum event size" in err[0] and str(path) in err[0]
