"""Property tests: binary and text round trips, and apply_json_diffs against the manual-based model."""

from __future__ import annotations

import copy
import json
import math
import struct
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from binlake.mysqljson import (
    ApplyStatus,
    DiffOp,
    JsonDiff,
    apply_json_diffs,
    canonical,
    decode,
    encode,
    parse_text,
    to_text,
    write_diffs,
)
from binlake.mysqljson.path import JsonPath, cell, member
from binlake.mysqljson.values import JsonDate, JsonDatetime, JsonOpaque, JsonTime
from tests.mysqljson import json_functions_model as model

KEYS = st.text(max_size=6)
INTS = st.integers(min_value=-(2**63), max_value=2**64 - 1)
FLOATS = st.floats(allow_nan=False, allow_infinity=False)
PLAIN_LEAVES = st.none() | st.booleans() | INTS | st.text(max_size=12)
DECIMALS = st.builds(
    lambda digits, scale: Decimal(digits).scaleb(-scale), st.integers(-(10**35), 10**35), st.integers(0, 30)
)  # within DECIMAL(65,30)
TEMPORALS = st.one_of(
    st.builds(JsonDate, st.integers(0, 9999), st.integers(0, 12), st.integers(0, 31)),
    st.builds(
        JsonDatetime,
        st.integers(0, 9999),
        st.integers(0, 12),
        st.integers(0, 31),
        st.integers(0, 23),
        st.integers(0, 59),
        st.integers(0, 59),
        st.integers(0, 999999),
        st.sampled_from([7, 12]),
    ),
    # a packed TIME has no negative zero (TIME_to_longlong_time_packed multiplies by -1): -00:00:00 is 00:00:00
    st.builds(
        JsonTime, st.integers(0, 838), st.integers(0, 59), st.integers(0, 59), st.integers(0, 999999), st.booleans()
    ).filter(lambda t: not t.negative or any((t.hour, t.minute, t.second, t.microsecond))),
    st.builds(JsonOpaque, st.sampled_from([15, 16, 252, 255]), st.binary(max_size=8)),
)
ALL_LEAVES = PLAIN_LEAVES | FLOATS | DECIMALS | TEMPORALS
FAST = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
THOROUGH = settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def documents(leaves: st.SearchStrategy, max_leaves: int = 25) -> st.SearchStrategy:
    return st.recursive(
        leaves,
        lambda children: st.lists(children, max_size=5) | st.dictionaries(KEYS, children, max_size=5),
        max_leaves=max_leaves,
    )


def containers(leaves: st.SearchStrategy) -> st.SearchStrategy:
    children = documents(leaves)
    return st.lists(children, max_size=5) | st.dictionaries(KEYS, children, max_size=5)


def same(a: object, b: object) -> bool:
    """Strict equality: same types (bool is not int), floats bit for bit, members in the same order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)  # type: ignore[index]
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))  # type: ignore[arg-type]
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b)  # type: ignore[arg-type]
    if isinstance(a, Decimal):
        return a == b and (a.is_signed() == b.is_signed() or a == 0)  # type: ignore[union-attr]
    return a == b


@FAST
@given(documents(ALL_LEAVES))
def test_binary_round_trip(document: object) -> None:
    assert same(decode(encode(document)), model.mysql_key_order(document))


@pytest.mark.slow
@THOROUGH
@given(documents(ALL_LEAVES, max_leaves=60))
def test_binary_round_trip_thorough(document: object) -> None:
    assert same(decode(encode(document)), model.mysql_key_order(document))


@FAST
@given(documents(PLAIN_LEAVES))
def test_text_matches_an_independent_renderer_without_floats(document: object) -> None:
    """json.dumps(ensure_ascii=False) has MySQL's separators and escapes; only numbers and opaques differ."""
    ordered = model.mysql_key_order(document)
    assert to_text(ordered) == json.dumps(ordered, ensure_ascii=False)


@FAST
@given(documents(ALL_LEAVES))
def test_text_round_trip_keeps_the_text(document: object) -> None:
    text = to_text(model.mysql_key_order(document))
    assert to_text(parse_text(text)) == text


@given(FLOATS)
def test_doubles_round_trip_through_text(number: float) -> None:
    text = to_text(number)
    assert float(text) == number and math.copysign(1, float(text)) == math.copysign(1, number)
    assert "." in text or "e" in text


# ------------------------------------------------------------------------- apply_json_diffs vs the model


def to_path(legs: tuple) -> JsonPath:
    return JsonPath(tuple(member(key) if kind == "member" else cell(key) for kind, key in legs))


@st.composite
def valid_updates(draw: st.DrawFn) -> tuple[object, list[JsonDiff], object]:
    """A document, a random sequence of JSON_SET/JSON_REPLACE/JSON_INSERT/JSON_ARRAY_INSERT/JSON_REMOVE calls
    that each change it (so MySQL logs one diff per call), the diffs, and the model's final document."""
    start = model.mysql_key_order(draw(containers(PLAIN_LEAVES | FLOATS)))
    doc = start
    diffs: list[JsonDiff] = []
    for _ in range(draw(st.integers(1, 8))):
        paths = model.all_paths(doc)
        objects = [p for p, v in paths if isinstance(v, dict)] + ([()] if isinstance(doc, dict) else [])
        arrays = [p for p, v in paths if isinstance(v, list)] + ([()] if isinstance(doc, list) else [])
        value = draw(documents(PLAIN_LEAVES, max_leaves=6))
        choices = []
        if paths:
            choices += ["replace", "set-existing", "remove"]
        if objects:
            choices += ["insert-member", "set-member"]
        if arrays:
            choices += ["array-insert", "set-append"]
        action = draw(st.sampled_from(choices))
        if action in ("replace", "set-existing", "remove"):
            legs = draw(st.sampled_from([p for p, _ in paths]))
            if action == "remove":
                doc = model.json_remove(doc, legs)
                diffs.append(JsonDiff(DiffOp.REMOVE, to_path(legs)))
                continue
            function = model.json_replace if action == "replace" else model.json_set
            doc = function(doc, legs, value)
            diffs.append(JsonDiff(DiffOp.REPLACE, to_path(legs), value))
        elif action in ("insert-member", "set-member"):
            parent = draw(st.sampled_from(objects))
            existing = model.lookup(doc, parent)
            key = draw(KEYS.filter(lambda k: k not in existing))  # type: ignore[operator]
            legs = parent + (("member", key),)
            doc = (model.json_insert if action == "insert-member" else model.json_set)(doc, legs, value)
            diffs.append(JsonDiff(DiffOp.INSERT, to_path(legs), value))
        else:
            parent = draw(st.sampled_from(arrays))
            size = len(model.lookup(doc, parent))  # type: ignore[arg-type]
            if action == "array-insert":
                legs = parent + (("cell", draw(st.integers(0, size + 2))),)
                doc = model.json_array_insert(doc, legs, value)
            else:
                legs = parent + (("cell", size + draw(st.integers(0, 2))),)
                doc = model.json_set(doc, legs, value)
            diffs.append(JsonDiff(DiffOp.INSERT, to_path(legs), value))
    return start, diffs, doc


def check_valid_sequence(case: tuple) -> None:
    start, diffs, expected = case
    snapshot = copy.deepcopy(start)
    result = apply_json_diffs(start, diffs)
    assert result.status == ApplyStatus.SUCCESS, result.reason
    assert canonical(result.document) == canonical(expected)
    assert to_text(result.document) == to_text(model.mysql_key_order(expected))
    assert same(start, snapshot)
    via_bytes = apply_json_diffs(start, write_diffs(diffs))
    assert to_text(via_bytes.document) == to_text(result.document)


@FAST
@given(valid_updates())
def test_valid_diff_sequences_give_the_models_document(case: tuple) -> None:
    check_valid_sequence(case)


@pytest.mark.slow
@THOROUGH
@given(valid_updates())
def test_valid_diff_sequences_give_the_models_document_thorough(case: tuple) -> None:
    check_valid_sequence(case)


@st.composite
def invalid_updates(draw: st.DrawFn) -> tuple[object, list[JsonDiff], object]:
    start, diffs, doc = draw(valid_updates())
    paths = model.all_paths(doc)
    options: list[JsonDiff] = [JsonDiff(draw(st.sampled_from(list(DiffOp))), JsonPath(()), 1)]
    for legs, value in paths:
        if isinstance(value, dict):
            options.append(JsonDiff(DiffOp.REPLACE, to_path(legs + (("member", "\x00missing"),)), 1))
            options.append(JsonDiff(DiffOp.REMOVE, to_path(legs + (("cell", 0),))))
            if value:
                options.append(JsonDiff(DiffOp.INSERT, to_path(legs + (("member", next(iter(value))),)), 1))
        elif isinstance(value, list):
            options.append(JsonDiff(DiffOp.REMOVE, to_path(legs + (("cell", len(value)),))))
            options.append(JsonDiff(DiffOp.INSERT, to_path(legs + (("member", "k"),)), 1))
        else:
            options.append(JsonDiff(DiffOp.REPLACE, to_path(legs + (("member", "x"), ("cell", 0))), 1))
    return start, diffs + [draw(st.sampled_from(options))], doc


def check_invalid_sequence(case: tuple) -> None:
    start, diffs, _ = case
    snapshot = copy.deepcopy(start)
    result = apply_json_diffs(start, diffs)
    assert result.status == ApplyStatus.REJECTED
    assert result.failed_index == len(diffs) - 1
    assert result.document is start and same(start, snapshot)


@FAST
@given(invalid_updates())
def test_an_invalid_diff_rejects_the_whole_vector(case: tuple) -> None:
    check_invalid_sequence(case)


@pytest.mark.slow
@THOROUGH
@given(invalid_updates())
def test_an_invalid_diff_rejects_the_whole_vector_thorough(case: tuple) -> None:
    check_invalid_sequence(case)
