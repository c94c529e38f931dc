"""BinaryJson: the lazily decoded JSON column cell the binlog row decoder hands out."""

from __future__ import annotations

import pytest

from binlake.mysqljson import BinaryJson, JsonCorruptError, decode, encode
from tests.mysqljson.test_binary_format import WL10570_AFTER_REMOVE


def test_cell_decodes_lazily_and_renders_mysql_text() -> None:
    cell = BinaryJson(memoryview(b"\x0d"))  # corrupt, but nothing is decoded yet
    assert cell.raw == b"\x0d" and len(cell) == 1
    with pytest.raises(JsonCorruptError):
        _ = cell.value
    assert "error" in repr(cell)
    assert BinaryJson(encode({"b": [1], "a": None})).text == '{"a": null, "b": [1]}'


def test_empty_cell_is_json_null() -> None:
    assert BinaryJson(b"").value is None
    assert BinaryJson(b"") == BinaryJson(b"\x04\x00")


def test_equality_is_by_json_value_not_bytes() -> None:
    sparse = BinaryJson(WL10570_AFTER_REMOVE)  # stale bytes left by an in-place update
    compact = BinaryJson.from_value({"c": "z", "a": "x"})
    assert sparse.raw != compact.raw
    assert sparse == compact and hash(sparse) == hash(compact)
    assert BinaryJson(encode(1)) == BinaryJson(encode(1.0))  # SQL '=' compares numbers by value
    assert BinaryJson(encode(True)) != BinaryJson(encode(1))
    assert list(compact.value) == ["a", "c"]


def test_cell_is_immutable() -> None:
    cell = BinaryJson(b"\x04\x01")
    with pytest.raises(AttributeError):
        cell.raw = b""  # type: ignore[misc]
    with pytest.raises(AttributeError):
        cell.extra = 1  # type: ignore[attr-defined]
    assert decode(cell.raw) is True
