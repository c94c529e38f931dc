"""Partial-update diff vectors in the binlog format (WL#2955 section 4 F3; sql/json_diff.cc).

A partial JSON column cell in a PARTIAL_UPDATE_ROWS_EVENT after-image is a 4-byte little-endian length, then the
diffs back to back (no count). Each diff: operation byte (``enum_json_diff_operation``), path length
(``net_field_length``), path text (``Json_path::to_string``), and unless the operation is REMOVE: value length
(``net_field_length``) and the value in binary JSON. :func:`read_diffs` and :func:`write_diffs` handle the bytes
after the 4-byte length, as ``Json_diff_vector::read_binary`` / ``write_binary`` do.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from binlake.mysqljson.decoder import decode
from binlake.mysqljson.encoder import encode
from binlake.mysqljson.errors import JsonDecodeError, JsonDiffCorruptError, JsonPathSyntaxError
from binlake.mysqljson.path import JsonPath, parse_path

ENCODED_LENGTH_BYTES = 4  # Json_diff_vector::ENCODED_LENGTH_BYTES
ENCODED_OPERATION_BYTES = 1  # Json_diff::ENCODED_OPERATION_BYTES
UINT16 = struct.Struct("<H")
UINT24_LOW = struct.Struct("<HB")
UINT32 = struct.Struct("<I")
UINT64 = struct.Struct("<Q")


class DiffOp(enum.IntEnum):
    """``enum_json_diff_operation``."""

    REPLACE = 0
    INSERT = 1
    REMOVE = 2


JSON_DIFF_OPERATION_COUNT = len(DiffOp)


@dataclass(frozen=True, slots=True)
class JsonDiff:
    """One logical change (``Json_diff``): ``value`` is the new value (None for REMOVE, and for JSON null)."""

    op: DiffOp
    path: JsonPath
    value: object = None


def net_field_length(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """``net_field_length_checked``: a packed length at ``pos``; returns (value, new pos)."""
    if pos >= end:
        raise JsonDiffCorruptError("corrupted JSON diff: truncated packed length", pos)
    first = data[pos]
    if first < 251:
        return first, pos + 1
    if first == 251:
        raise JsonDiffCorruptError("corrupted JSON diff: NULL packed length", pos)
    size = 2 if first == 252 else 3 if first == 253 else 8
    if pos + 1 + size > end:
        raise JsonDiffCorruptError(f"corrupted JSON diff: truncated {size}-byte packed length", pos)
    if size == 2:
        return UINT16.unpack_from(data, pos + 1)[0], pos + 3
    if size == 3:
        low, high = UINT24_LOW.unpack_from(data, pos + 1)
        return low | (high << 16), pos + 4
    return UINT64.unpack_from(data, pos + 1)[0], pos + 9


def net_length_size(length: int) -> int:
    """``net_length_size``: bytes of the packed form of ``length``."""
    return 1 if length < 251 else 3 if length < 1 << 16 else 4 if length < 1 << 24 else 9


def net_store_length(length: int) -> bytes:
    """``net_store_length``."""
    if length < 251:
        return bytes((length,))
    if length < 1 << 16:
        return b"\xfc" + UINT16.pack(length)
    if length < 1 << 24:
        return b"\xfd" + UINT32.pack(length)[:3]
    return b"\xfe" + UINT64.pack(length)


def read_diffs(data: bytes | bytearray | memoryview) -> tuple[JsonDiff, ...]:
    """Parse a diff vector (the cell after its 4-byte length), as ``Json_diff_vector::read_binary``.

    Any malformation (unknown operation, bad packed length, length past the end, unparsable path or value)
    raises :class:`JsonDiffCorruptError` with the offset, as MySQL raises ER_CORRUPTED_JSON_DIFF.
    """
    buf = bytes(data)
    end = len(buf)
    pos = 0
    diffs: list[JsonDiff] = []
    while pos < end:
        op_number = buf[pos]
        if op_number >= JSON_DIFF_OPERATION_COUNT:
            raise JsonDiffCorruptError(f"corrupted JSON diff: unknown operation {op_number} (expected 0-2)", pos)
        op = DiffOp(op_number)
        path_length, pos = net_field_length(buf, pos + 1, end)
        if pos + path_length > end:
            raise JsonDiffCorruptError(f"corrupted JSON diff: path of {path_length} bytes, only {end - pos} left", pos)
        try:
            path = parse_path(buf[pos : pos + path_length])
        except JsonPathSyntaxError as exc:
            raise JsonDiffCorruptError(f"corrupted JSON diff: {exc}", pos) from None
        pos += path_length
        if op == DiffOp.REMOVE:
            diffs.append(JsonDiff(op, path))
            continue
        value_length, pos = net_field_length(buf, pos, end)
        if pos + value_length > end:
            raise JsonDiffCorruptError(
                f"corrupted JSON diff: value of {value_length} bytes, only {end - pos} left", pos
            )
        try:
            value = decode(buf[pos : pos + value_length])
        except JsonDecodeError as exc:
            offset = pos + (exc.offset or 0)
            raise JsonDiffCorruptError(f"corrupted JSON diff: bad value ({exc})", offset) from None
        diffs.append(JsonDiff(op, path, value))
        pos += value_length
    return tuple(diffs)


def write_diffs(diffs: Iterable[JsonDiff]) -> bytes:
    """Serialize a diff vector without its 4-byte length (``Json_diff_vector::write_binary`` minus the length)."""
    out = bytearray()
    for diff in diffs:
        out.append(int(diff.op))
        path = str(diff.path).encode("utf-8")
        out += net_store_length(len(path))
        out += path
        if diff.op != DiffOp.REMOVE:
            value = encode(diff.value)
            out += net_store_length(len(value))
            out += value
    return bytes(out)


def diff_binary_length(diff: JsonDiff) -> int:
    """``Json_diff::binary_length``: operation byte, packed path length and path, packed value length and value."""
    path_length = len(str(diff.path).encode("utf-8"))
    size = ENCODED_OPERATION_BYTES + net_length_size(path_length) + path_length
    if diff.op != DiffOp.REMOVE:
        value_length = len(encode(diff.value))
        size += net_length_size(value_length) + value_length
    return size


def partial_update_size(diffs: Sequence[JsonDiff]) -> int:
    """WL#2955 Def1, the size of a partial JSON update in the after-image: 4-byte length plus every diff."""
    return ENCODED_LENGTH_BYTES + sum(diff_binary_length(diff) for diff in diffs)


def full_update_size(document_binary_length: int, length_bytes: int = 4) -> int:
    """WL#2955 Def2, the size of a full JSON value in an image: its length prefix (``length_bytes``,
    the column's pack length, 4 for JSON) plus its binary form."""
    return length_bytes + document_binary_length


def use_partial_format(diffs: Sequence[JsonDiff] | None, document_binary_length: int, length_bytes: int = 4) -> bool:
    """FR11/FR12: write the diffs only when there are diffs and Def1 < Def2 (``Field_json::pack_diff``);
    otherwise (no diffs available, or the partial form is not smaller) write the full document."""
    if diffs is None:
        return False
    return partial_update_size(diffs) < full_update_size(document_binary_length, length_bytes)
