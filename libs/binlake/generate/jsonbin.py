"""An incremental MySQL binary JSON encoder for the generator's documents.

The workload edits documents by path copying (only the containers on an edited path are new; every other
subtree is shared with the previous version and never mutated), so the binary form of an unchanged subtree
can be reused: a serialized container is position-independent (its offsets are relative to its own start,
``json_binary::serialize``). :class:`JsonEncoder` memoizes the body of every container it encodes, keyed by the
container's identity, and produces exactly the bytes of :func:`binlake.mysqljson.encode` (the reference;
tests compare the two on every generated document).
"""

from __future__ import annotations

import struct
from typing import Any

from binlake.binlog.encode_base import packed_length
from binlake.mysqljson import encode as reference_encode

SMALL_OBJECT, LARGE_OBJECT, SMALL_ARRAY, LARGE_ARRAY = 0x0, 0x1, 0x2, 0x3
LITERAL, INT16, INT32, INT64, UINT64, DOUBLE, STRING = 0x4, 0x5, 0x7, 0x9, 0xA, 0xB, 0xC
NULL_LITERAL, TRUE_LITERAL, FALSE_LITERAL = 0x0, 0x1, 0x2
_SMALL = (struct.Struct("<HH"), struct.Struct("<HH"), struct.Struct("<BH"), 0xFFFF)  # header, key, value entry
_LARGE = (struct.Struct("<II"), struct.Struct("<IH"), struct.Struct("<BI"), 0xFFFFFFFF)
_I16, _I32, _I64, _U64, _F64 = (struct.Struct(f) for f in ("<h", "<i", "<q", "<Q", "<d"))
MEMO_LIMIT = 500_000
REMOVE_OPERATION = 2  # enum_json_diff_operation::REMOVE: no value


def _varlen(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key_order(key: str) -> tuple[int, bytes]:
    raw = key.encode("utf-8")
    return len(raw), raw


_HEADER_SMALL = _SMALL[0].pack
_VALUE_ENTRY_SMALL = _SMALL[2].pack
_NULL_ENTRY = _VALUE_ENTRY_SMALL(LITERAL, NULL_LITERAL)
_TRUE_ENTRY = _VALUE_ENTRY_SMALL(LITERAL, TRUE_LITERAL)
_FALSE_ENTRY = _VALUE_ENTRY_SMALL(LITERAL, FALSE_LITERAL)


def _key_layout(names: tuple[str, ...]) -> tuple:
    """(member names in MySQL order, their UTF-8 bytes, small-layout key block maker): the key entries of the
    small layout depend only on the names and the element count."""
    ordered = sorted(names, key=_key_order)
    raw = [k.encode("utf-8") for k in ordered]
    key_data = b"".join(raw)
    blocks: dict[int, tuple[bytes, bytes]] = {}

    def small_block(n: int) -> tuple[bytes, bytes]:
        got = blocks.get(n)
        if got is None:
            offset = 4 + 7 * n
            entries = []
            for r in raw:
                entries.append(_SMALL[1].pack(offset & 0xFFFF, len(r) & 0xFFFF))  # unused when it overflows
                offset += len(r)
            got = blocks[n] = (b"".join(entries), key_data)
        return got

    return ordered, raw, small_block


_NO_KEYS: tuple = ((), [], None)


class JsonEncoder:
    """``encode(doc)`` -> MySQL binary JSON, reusing the encoding of containers seen before."""

    __slots__ = ("_keys", "_memo")

    def __init__(self) -> None:
        self._memo: dict[int, tuple[Any, int, bytes]] = {}
        self._keys: dict[tuple[str, ...], tuple] = {}  # member names -> _key_layout

    def encode(self, doc: Any) -> bytes:
        kind = type(doc)
        if kind is not dict and kind is not list:
            return reference_encode(doc)
        if len(self._memo) > MEMO_LIMIT:
            self._memo.clear()
        if len(self._keys) > MEMO_LIMIT:
            self._keys.clear()
        type_byte, body = self._container(doc)
        return bytes((type_byte,)) + body

    def _scalar(self, v: Any) -> tuple[int, bytes]:
        kind = type(v)
        if kind is str:
            raw = v.encode("utf-8")
            return STRING, _varlen(len(raw)) + raw
        if kind is float:
            return DOUBLE, _F64.pack(v)
        if kind is int:
            if -(1 << 15) <= v < 1 << 15:
                return INT16, _I16.pack(v)
            if -(1 << 31) <= v < 1 << 31:
                return INT32, _I32.pack(v)
            if -(1 << 63) <= v < 1 << 63:
                return INT64, _I64.pack(v)
            return UINT64, _U64.pack(v)
        raw = reference_encode(v)  # literals and opaque values: the reference handles them
        return raw[0], raw[1:]

    def _container(self, value: Any) -> tuple[int, bytes]:
        got = self._memo.get(id(value))
        if got is not None and got[0] is value:
            return got[1], got[2]
        is_object = type(value) is dict
        if is_object:
            names = tuple(value)
            layout = self._keys.get(names)
            if layout is None:
                layout = self._keys[names] = _key_layout(names)
            values = [value[k] for k in layout[0]]
        else:
            layout = _NO_KEYS
            values = value
        result = self._small(is_object, layout, values)
        if result is None:  # offsets beyond 64 KiB: the general path
            keys = layout[1]
            children = [
                self._container(v)
                if type(v) is dict or type(v) is list
                else None
                if v is None or type(v) is bool or (type(v) is int and -(1 << 15) <= v < 1 << 15)
                else self._scalar(v)
                for v in values
            ]
            result = self._assemble(is_object, keys, values, children, large=False)
            if result is None:
                result = self._assemble(is_object, keys, values, children, large=True)
                if result is None:
                    raise ValueError("JSON document too large")
        self._memo[id(value)] = (value, result[0], result[1])
        return result

    def _small(self, is_object: bool, layout: tuple, values: Any) -> tuple[int, bytes] | None:
        """The small layout in one pass (the common case), or None when an offset does not fit 16 bits."""
        n = len(values)
        key_block, key_data = layout[2](n) if is_object else (b"", b"")
        offset = 4 + (4 * n if is_object else 0) + 3 * n + len(key_data)
        if offset > 0xFFFF:
            return None
        entries = []
        data = []
        pack = _VALUE_ENTRY_SMALL
        for v in values:
            kind = type(v)
            if kind is int and -(1 << 15) <= v < 1 << 15:
                entries.append(pack(INT16, v & 0xFFFF))
                continue
            if kind is dict or kind is list:
                type_byte, body = self._container(v)
            elif kind is str:
                raw = v.encode("utf-8")
                type_byte, body = STRING, _varlen(len(raw)) + raw
            elif v is None:
                entries.append(_NULL_ENTRY)
                continue
            elif kind is bool:
                entries.append(_TRUE_ENTRY if v else _FALSE_ENTRY)
                continue
            else:
                type_byte, body = self._scalar(v)
            if offset > 0xFFFF:
                return None
            entries.append(pack(type_byte, offset))
            data.append(body)
            offset += len(body)
        if offset > 0xFFFF:
            return None
        body = _HEADER_SMALL(n, offset) + key_block + b"".join(entries) + key_data + b"".join(data)
        return (SMALL_OBJECT if is_object else SMALL_ARRAY), body

    @staticmethod
    def _assemble(
        is_object: bool, keys: list[bytes], values: Any, children: list, large: bool
    ) -> tuple[int, bytes] | None:
        """The container's body in the small (2-byte offsets) or large (4-byte) layout; None if it does not fit."""
        header, key_entry, value_entry, limit = _LARGE if large else _SMALL
        count = len(children)
        fixed = header.size + (key_entry.size * count if is_object else 0) + value_entry.size * count
        if count > limit or fixed > limit:
            return None
        key_part = []
        offset = fixed
        for raw in keys:
            if offset > limit:
                return None
            key_part.append(key_entry.pack(offset, len(raw)))
            offset += len(raw)
        value_part = []
        data = list(keys)
        for v, child in zip(values, children):
            if child is None:
                if v is None:
                    value_part.append(value_entry.pack(LITERAL, NULL_LITERAL))
                elif v is True:
                    value_part.append(value_entry.pack(LITERAL, TRUE_LITERAL))
                elif v is False:
                    value_part.append(value_entry.pack(LITERAL, FALSE_LITERAL))
                else:
                    value_part.append(value_entry.pack(INT16, v & 0xFFFF))
                continue
            type_byte, body = child
            if large and type_byte == INT32:
                value_part.append(value_entry.pack(INT32, _I32.unpack(body)[0] & 0xFFFFFFFF))
                continue
            if offset > limit:
                return None
            value_part.append(value_entry.pack(type_byte, offset))
            data.append(body)
            offset += len(body)
        if offset > limit:
            return None
        body = header.pack(count, offset) + b"".join(key_part) + b"".join(value_part) + b"".join(data)
        if is_object:
            return (LARGE_OBJECT if large else SMALL_OBJECT), body
        return (LARGE_ARRAY if large else SMALL_ARRAY), body

    def diffs(self, diffs) -> bytes:
        """A diff vector without its 4-byte length, as :func:`binlake.mysqljson.write_diffs` writes it
        (``Json_diff_vector::write_binary``), with the values encoded by this encoder."""
        parts = []
        for d in diffs:
            path = str(d.path).encode("utf-8")
            parts.append(bytes((int(d.op),)) + packed_length(len(path)) + path)
            if d.op != REMOVE_OPERATION:
                value = self.encode(d.value)
                parts.append(packed_length(len(value)) + value)
        return b"".join(parts)
