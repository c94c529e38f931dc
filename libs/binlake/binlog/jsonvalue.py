"""The narrow adapter between row decoding and ``binlake.mysqljson`` (MySQL binary JSON, diff vectors).

A JSON column's value is kept as its binary cell and decoded on demand (most consumers only pass it on), via
``binlake.mysqljson.BinaryJson(raw)`` when that class exists, else :class:`JsonCell`, which calls
``binlake.mysqljson.binary.decode`` and ``binlake.mysqljson.text.to_text``. Partial-update cells go through
``binlake.mysqljson.read_diffs`` (or ``binlake.mysqljson.diff.read_diffs``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, Optional

from binlake.binlog.errors import CorruptEventError
from binlake.errors import BinlakeError


def _find(*candidates: str) -> Optional[Callable[..., Any]]:
    """The first ``module:attribute`` that imports; None when binlake.mysqljson does not provide any yet."""
    for spec in candidates:
        module_name, _, attr = spec.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        found = getattr(module, attr, None)
        if found is not None:
            return found
    return None


_decode = _find("binlake.mysqljson:decode", "binlake.mysqljson.binary:decode")
_to_text = _find("binlake.mysqljson:to_text", "binlake.mysqljson.text:to_text")
_read_diffs = _find("binlake.mysqljson:read_diffs", "binlake.mysqljson.diff:read_diffs")
_BinaryJson = _find("binlake.mysqljson:BinaryJson")


@dataclass(frozen=True, slots=True)
class JsonCell:
    """A MySQL binary JSON column value (``json_binary``), decoded lazily."""

    raw: bytes

    def value(self) -> Any:
        """The decoded JSON value (binlake.mysqljson's Python representation)."""
        if _decode is None:
            raise CorruptEventError("binlake.mysqljson has no binary JSON decoder installed")
        return _decode(self.raw)

    def to_text(self) -> str:
        """MySQL's text of the document, as ``SELECT`` prints it."""
        if _to_text is None:
            raise CorruptEventError("binlake.mysqljson has no JSON text renderer installed")
        return _to_text(self.value())

    def __str__(self) -> str:
        return self.to_text()


def make_json_value(raw: bytes) -> Any:
    """The value of a JSON column cell."""
    if _BinaryJson is not None:
        return _BinaryJson(raw)
    return JsonCell(raw)


def json_text(value: Any) -> str:
    """MySQL's JSON text of a JSON column value or of a decoded JSON value (e.g. a diff's value)."""
    try:
        if isinstance(value, JsonCell) or (_BinaryJson is not None and isinstance(value, _BinaryJson)):
            to_text = getattr(value, "to_text", None)
            return to_text() if to_text is not None else str(value)
        if _to_text is None:
            raise CorruptEventError("binlake.mysqljson has no JSON text renderer installed")
        return _to_text(value)
    except BinlakeError as exc:
        if isinstance(exc, CorruptEventError):
            raise
        raise CorruptEventError(f"invalid binary JSON value: {exc}") from None


def read_diffs(cell: bytes) -> Any:
    """The JSON diffs of a partial cell (without its length), or None if binlake.mysqljson can not read them."""
    if _read_diffs is None:
        return None
    try:
        return _read_diffs(cell)
    except BinlakeError as exc:
        raise CorruptEventError(f"invalid partial JSON diff vector: {exc}") from None
