"""The one bounded byte cursor every event decoder reads through.

A :class:`Cursor` reads little-endian fields from ``buf[pos:end]`` and never past ``end`` (the event body's
fence, cf. connector-java ``enterBlock`` and MySQL's ``Event_reader``): a read that would cross it raises
:class:`~binlake.binlog.errors.TruncatedEventError` naming the field, the offset, and how many bytes were
needed and left. ``base`` is the file offset of ``buf[0]`` so errors carry file offsets.
"""

from __future__ import annotations

import builtins
import struct

from binlake.binlog.errors import CorruptEventError, TruncatedEventError

U16 = struct.Struct("<H")
U32 = struct.Struct("<I")
U64 = struct.Struct("<Q")
I64 = struct.Struct("<q")
_U16_U = U16.unpack_from
_U32_U = U32.unpack_from
_U64_U = U64.unpack_from
_I64_U = I64.unpack_from


def surrogate_str(raw: bytes) -> str:
    """Bytes from the binlog as str, losslessly: UTF-8 with surrogateescape for anything else."""
    return raw.decode("utf-8", "surrogateescape")


class Cursor:
    """Reads fields from ``buf`` between ``pos`` and the fence ``end``."""

    __slots__ = ("base", "buf", "end", "pos")

    def __init__(self, buf: bytes, pos: int = 0, end: int | None = None, base: int = 0) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf) if end is None else min(end, len(buf))
        self.base = base

    # --- fence ---------------------------------------------------------------------------------------------
    def remaining(self) -> int:
        return self.end - self.pos

    def need(self, n: int, what: str) -> int:
        """Check that ``n`` bytes are left for ``what``; returns the current position."""
        pos = self.pos
        if n < 0 or pos + n > self.end:
            raise TruncatedEventError(
                f"{what} runs past the end of the event",
                offset=self.base + pos,
                expected=f"{n} bytes",
                found=f"{self.end - pos} bytes left",
            )
        return pos

    def corrupt(self, message: str, expected: object = None, found: object = None) -> CorruptEventError:
        return CorruptEventError(message, offset=self.base + self.pos, expected=expected, found=found)

    # --- fixed-width integers ------------------------------------------------------------------------------
    def u8(self, what: str = "1-byte integer") -> int:
        pos = self.need(1, what)
        self.pos = pos + 1
        return self.buf[pos]

    def u16(self, what: str = "2-byte integer") -> int:
        pos = self.need(2, what)
        self.pos = pos + 2
        return _U16_U(self.buf, pos)[0]

    def u24(self, what: str = "3-byte integer") -> int:
        pos = self.need(3, what)
        self.pos = pos + 3
        return int.from_bytes(self.buf[pos : pos + 3], "little")

    def u32(self, what: str = "4-byte integer") -> int:
        pos = self.need(4, what)
        self.pos = pos + 4
        return _U32_U(self.buf, pos)[0]

    def uint(self, n: int, what: str = "integer") -> int:
        pos = self.need(n, what)
        self.pos = pos + n
        return int.from_bytes(self.buf[pos : pos + n], "little")

    def u64(self, what: str = "8-byte integer") -> int:
        pos = self.need(8, what)
        self.pos = pos + 8
        return _U64_U(self.buf, pos)[0]

    def i64(self, what: str = "8-byte integer") -> int:
        pos = self.need(8, what)
        self.pos = pos + 8
        return _I64_U(self.buf, pos)[0]

    def packed_int(self, what: str = "length-encoded integer") -> int:
        """``net_field_length_ll``: 1, 3, 4 or 9 bytes; 251 (NULL) is rejected as corrupt here."""
        first = self.u8(what)
        if first < 251:
            return first
        if first == 252:
            return self.u16(what)
        if first == 253:
            return self.u24(what)
        if first == 254:
            return self.u64(what)
        self.pos -= 1
        raise self.corrupt(f"{what} is not a valid length-encoded integer", "a first byte other than 251/255", first)

    # --- byte strings --------------------------------------------------------------------------------------
    def bytes(self, n: int, what: str = "bytes") -> bytes:
        pos = self.need(n, what)
        self.pos = pos + n
        return self.buf[pos : pos + n]

    def rest(self) -> builtins.bytes:
        pos = self.pos
        self.pos = self.end
        return self.buf[pos : self.end]

    def packed_bytes(self, what: str = "length-encoded string") -> builtins.bytes:
        return self.bytes(self.packed_int(what), what)

    def skip(self, n: int, what: str = "bytes") -> None:
        self.pos = self.need(n, what) + n

    def nul_terminated(self, what: str = "NUL-terminated string") -> builtins.bytes:
        idx = self.buf.find(b"\x00", self.pos, self.end)
        if idx < 0:
            raise TruncatedEventError(
                f"{what} has no terminating NUL",
                offset=self.base + self.pos,
                expected="a NUL byte",
                found="end of event",
            )
        out = self.buf[self.pos : idx]
        self.pos = idx + 1
        return out
