"""MariaDB's compressed rows events (``--log-bin-compress``; types 166-168 v1, 169-171 v2) built by hand from
MariaDB's layout, on both decoders: ``Rows_log_event::write_compressed`` compresses only the rows
(``m_rows_buf``) with ``binlog_buf_compress``; table id, flags, (v2) extra row info, the column count and the
columns-present bitmap(s) stay plain, as ``row_log_event_uncompress`` reads them. The compressed block is a
header byte ``0x80 | lenlen`` (bits 4-6: algorithm, 0 = zlib), the uncompressed length in ``lenlen`` big-endian
bytes, then a zlib stream. A damaged block is a ``CorruptEventError`` naming file and offset in both engines."""

from __future__ import annotations

import io
import struct
import zlib

import pytest

from binlake.binlog import iter_row_changes, read_events
from binlake.binlog.errors import CorruptEventError
from tests.binlog import build
from tests.binlog.test_columnar import assert_same_batches, batches, needs_native

MARIADB = "10.11.6-MariaDB-log"
PLAIN_OF = {166: 23, 167: 24, 168: 25, 169: 30, 170: 31, 171: 32}


def compress_block(data: bytes) -> bytes:
    """``binlog_buf_compress``: the shortest length field that holds ``len(data)``."""
    lenlen = max(1, (len(data).bit_length() + 7) // 8)
    return bytes([0x80 | lenlen]) + len(data).to_bytes(lenlen, "big") + zlib.compress(data)


def table() -> tuple[int, bytes]:
    """`d`.`t` (id INT NOT NULL, v VARCHAR(40) NULL) with column names."""
    return build.table_map(5, "d", "t", [3, 15], bytes([40, 0]), [False, True], optional=build.names("id", "v"))


def row(i: int, v: str | None) -> bytes:
    if v is None:
        return build.image([False, True], struct.pack("<i", i))
    return build.image([False, False], struct.pack("<i", i), bytes([len(v)]) + v.encode())


def rows_body(type_code: int, rows: bytes, *, compressed: bool) -> bytes:
    """A rows event body: v1 (23-25, 166-168) or v2 (30-32, 169-171), the rows compressed or not."""
    v2 = PLAIN_OF.get(type_code, type_code) >= 30
    head = (5).to_bytes(6, "little") + b"\x01\x00" + (b"\x02\x00" if v2 else b"")
    bitmaps = build.packed(2) + b"\x03" + (b"\x03" if PLAIN_OF.get(type_code, type_code) in (24, 31) else b"")
    return head + bitmaps + (compress_block(rows) if compressed else rows)


WRITE = row(1, "one") + row(2, None) + row(300, "x" * 40)
UPDATE = row(1, "one") + row(1, "uno") + row(2, None) + row(20, "two")
DELETE = row(300, "x" * 40)


def workload(compressed: bool, v2: bool) -> bytes:
    codes = (169, 170, 171) if v2 else (166, 167, 168)
    events = [table()]
    for code, rows in zip(codes, (WRITE, UPDATE, DELETE)):
        events.append((code if compressed else PLAIN_OF[code], rows_body(code, rows, compressed=compressed)))
    return build.binlog(*events, server_version=MARIADB)


def changes(data: bytes, tmp_path, name: str) -> list[tuple]:
    path = tmp_path / name
    path.write_bytes(data)
    return [(c.op, c.before, c.after) for c in iter_row_changes(path)]


@pytest.mark.parametrize("v2", [False, True], ids=["v1", "v2"])
def test_compressed_rows_decode_as_the_uncompressed_events(tmp_path, v2: bool) -> None:
    plain, compressed = workload(False, v2), workload(True, v2)
    want = changes(plain, tmp_path, "plain.000001")
    assert len(want) == 6 and want[4] == ("update", {"id": 2, "v": None}, {"id": 20, "v": "two"})
    assert changes(compressed, tmp_path, "compressed.000001") == want
    types = [e.header.type_code for e in read_events(io.BytesIO(compressed))]
    assert types[2:] == ([169, 170, 171] if v2 else [166, 167, 168])


@needs_native
@pytest.mark.parametrize("v2", [False, True], ids=["v1", "v2"])
def test_native_compressed_rows_equal_the_python_decoder_and_the_plain_events(v2: bool) -> None:
    got = assert_same_batches(workload(True, v2))
    want = assert_same_batches(workload(False, v2))
    strip = ("event_type", "pos", "end_pos", "file")
    rows = [[{k: v for k, v in r.items() if k not in strip} for r in tb[6]] for tb in got]
    assert rows == [[{k: v for k, v in r.items() if k not in strip} for r in tb[6]] for tb in want]
    assert sum(len(tb[6]) for tb in got) == 6


def damaged_block(case: str) -> bytes:
    """The compressed rows of a write event, damaged in one way."""
    block = compress_block(WRITE)
    if case == "stream-cut-short":
        block = block[: len(block) // 2]
    elif case == "adler32-missing":
        block = block[:-4]
    elif case == "adler32-wrong":
        block = block[:-1] + bytes([block[-1] ^ 0xFF])
    elif case == "not-zlib":
        block = block[:2] + b"\x00" * (len(block) - 2)
    elif case == "length-too-large":
        block = bytes([0x82]) + (len(WRITE) + 1).to_bytes(2, "big") + block[2:]
    elif case == "length-too-small":
        block = bytes([0x81, len(WRITE) - 1]) + block[2:]
    elif case == "algorithm-1":
        block = bytes([block[0] | 0x10]) + block[1:]
    elif case == "no-compression-bit":
        block = bytes([block[0] & 0x7F]) + block[1:]
    elif case == "lenlen-0":
        block = bytes([0x80]) + block[2:]
    elif case == "lenlen-5":
        block = bytes([0x85]) + block[1:]
    elif case == "length-field-cut":
        block = bytes([0x84, 0])
    elif case == "empty":
        block = b""
    return block


def damaged(case: str) -> bytes:
    """A binlog whose write event holds a damaged compressed block; every event length and CRC stays right."""
    return build.binlog(
        table(), (166, rows_body(166, b"", compressed=False) + damaged_block(case)), server_version=MARIADB
    )


CASES = [
    "stream-cut-short",
    "adler32-missing",
    "adler32-wrong",
    "not-zlib",
    "length-too-large",
    "length-too-small",
    "algorithm-1",
    "no-compression-bit",
    "lenlen-0",
    "lenlen-5",
    "length-field-cut",
    "empty",
]


@pytest.mark.parametrize("case", CASES)
def test_a_damaged_compressed_block_is_a_corrupt_event(tmp_path, case: str) -> None:
    data = damaged(case)
    path = tmp_path / "maria-bin.000001"
    path.write_bytes(data)
    block = damaged_block(case)
    event_pos = len(data) - (19 + len(rows_body(166, b"", compressed=False)) + len(block) + 4)
    with pytest.raises(CorruptEventError) as info:
        list(iter_row_changes(path))
    err = info.value
    assert err.file == str(path) and err.offset == event_pos, str(err)
    assert "WRITE_ROWS_COMPRESSED_EVENT_V1" in str(err) and "compress" in err.message, str(err)
    assert err.expected is not None or err.found is not None, str(err)
    # the event's offset, and the compressed block's as ``byte N``: after the header, post-header and bitmap
    assert f"at byte {event_pos + 19 + 8 + 2}" in str(err), str(err)


@needs_native
@pytest.mark.parametrize("case", CASES)
def test_a_damaged_compressed_block_fails_alike_in_the_native_core(case: str) -> None:
    data = damaged(case)
    py, py_err = batches(data, "python")
    assert py is None and py_err[0] == "CorruptEventError" and py_err[3] is not None, py_err
    assert_same_batches(data)
