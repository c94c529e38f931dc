"""``BinaryJson``: one JSON column cell's raw bytes, decoded only when asked (``Field_json`` value)."""

from __future__ import annotations

from binlake.mysqljson.binary import mysql_key_order
from binlake.mysqljson.decoder import decode
from binlake.mysqljson.encoder import encode

_UNSET = object()


class BinaryJson:
    """An immutable, lazily decoded JSON column value.

    ``raw`` holds the cell's bytes without the length prefix (empty bytes are JSON null, as MySQL reads them);
    ``value`` decodes on first use (raising a typed :class:`~binlake.mysqljson.errors.JsonDecodeError` for bad
    bytes); ``text`` is MySQL's ``SELECT j`` text. Two cells are equal when their values are equal as JSON
    (``canonical``), whatever their byte layout.
    """

    __slots__ = ("_raw", "_value")

    def __init__(self, raw: bytes | bytearray | memoryview) -> None:
        object.__setattr__(self, "_raw", bytes(raw))
        object.__setattr__(self, "_value", _UNSET)

    @classmethod
    def from_value(cls, value: object) -> BinaryJson:
        """The cell MySQL would store for ``value`` (its ``value`` has members in MySQL's key order)."""
        cell = cls(encode(value))
        object.__setattr__(cell, "_value", mysql_key_order(value))
        return cell

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("BinaryJson is immutable")

    @property
    def raw(self) -> bytes:
        return self._raw

    @property
    def value(self) -> object:
        value = self._value
        if value is _UNSET:
            value = decode(self._raw)
            object.__setattr__(self, "_value", value)
        return value

    @property
    def text(self) -> str:
        from binlake.mysqljson.text import to_text

        return to_text(self.value)

    def _key(self) -> object:
        from binlake.mysqljson.text import canonical

        return canonical(self.value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BinaryJson):
            return NotImplemented
        return self._raw == other._raw or self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __len__(self) -> int:
        return len(self._raw)

    def __repr__(self) -> str:
        from binlake.mysqljson.errors import JsonError

        try:
            return f"BinaryJson({self.text})"
        except JsonError as exc:
            return f"BinaryJson(raw={self._raw.hex()}, error={exc})"
