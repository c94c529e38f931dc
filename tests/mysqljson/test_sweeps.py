"""Truncation and corruption sweeps over the real vectors: every input gives a value or a typed error."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake.mysqljson import (
    JsonDecodeError,
    JsonDepthError,
    JsonDiffCorruptError,
    JsonTruncatedError,
    apply_json_diffs,
    decode,
    read_diffs,
    to_text,
)
from tests.mysqljson.vectors import DIFFS, JSONB, ids, load, vector


def decode_or_typed_error(raw: bytes) -> None:
    try:
        to_text(decode(raw))
    except (JsonDecodeError, JsonDepthError):
        pass


@pytest.mark.parametrize("vector_id", ids(JSONB))
def test_every_prefix_of_a_vector_decodes_or_raises_a_typed_error(vector_id: str) -> None:
    raw = bytes.fromhex(vector(JSONB, vector_id)["hex"])
    full_text = to_text(decode(raw))
    for cut in range(len(raw)):
        try:
            text = to_text(decode(raw[:cut]))
        except JsonDecodeError:
            continue
        # A prefix may decode only when it still holds the whole value (trailing bytes are not part of it), or
        # when it is empty (JSON null), or a cut container whose declared size the vector overstated.
        assert text == full_text or cut == 0 or vector_id == "vitess/arr-here", (cut, text)


def test_prefixes_of_containers_are_truncation_errors() -> None:
    """Cut anywhere inside its declared size, a container is reported as truncated (not as corrupt)."""
    checked = 0
    for vector_id, case in load(JSONB).items():
        raw = bytes.fromhex(case["hex"])
        if not raw or raw[0] > 3 or vector_id == "vitess/arr-here":  # scalars; a vector that overstates its size
            continue
        large = raw[0] & 1
        size = int.from_bytes(raw[3:5], "little") if not large else int.from_bytes(raw[5:9], "little")
        for cut in range(1, min(len(raw), 1 + size)):
            with pytest.raises(JsonTruncatedError):
                decode(raw[:cut])
        checked += 1
    assert checked >= 20


@pytest.mark.parametrize("vector_id", ids(JSONB))
def test_every_single_byte_corruption_decodes_or_raises_a_typed_error(vector_id: str) -> None:
    raw = bytearray.fromhex(vector(JSONB, vector_id)["hex"])
    for position in range(len(raw)):
        original = raw[position]
        for replacement in {0x00, 0xFF, original ^ 0x01, original ^ 0x80}:
            raw[position] = replacement
            decode_or_typed_error(bytes(raw))
        raw[position] = original


@pytest.mark.parametrize("vector_id", ids(DIFFS))
def test_every_prefix_and_corruption_of_a_diff_vector(vector_id: str) -> None:
    raw = bytearray.fromhex(vector(DIFFS, vector_id)["hex"])
    document = {"age": 1, "data": "x", "name": "y"}
    for cut in range(1, len(raw)):
        with pytest.raises(JsonDiffCorruptError):
            read_diffs(bytes(raw[:cut]))
    for position in range(len(raw)):
        original = raw[position]
        for replacement in range(256):
            raw[position] = replacement
            try:
                diffs = read_diffs(bytes(raw))
            except JsonDiffCorruptError:
                continue
            apply_json_diffs(document, diffs)  # any status, never an exception
        raw[position] = original


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_random_bytes_decode_or_raise_a_typed_error(raw: bytes) -> None:
    decode_or_typed_error(raw)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_random_diff_vectors_parse_or_raise_a_typed_error(raw: bytes) -> None:
    try:
        read_diffs(raw)
    except JsonDiffCorruptError:
        pass
