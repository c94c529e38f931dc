"""apply_json_diffs: the MySQL manual's JSON function examples as diffs, and mysql-server's rules case by case."""

from __future__ import annotations

import copy

import pytest

from binlake.mysqljson import (
    ApplyStatus,
    BinaryJson,
    DiffOp,
    JsonDiff,
    apply_json_diffs,
    encode,
    parse_path,
    parse_text,
    to_text,
    write_diffs,
)

REP, INS, REM = DiffOp.REPLACE, DiffOp.INSERT, DiffOp.REMOVE


def diffs(*specs: tuple) -> list[JsonDiff]:
    return [
        JsonDiff(op, parse_path(path), *([parse_text(value)] if value is not None else []))
        for op, path, value in (spec if len(spec) == 3 else (*spec, None) for spec in specs)
    ]


def applied(document: str, *specs: tuple) -> str:
    result = apply_json_diffs(parse_text(document), diffs(*specs))
    assert result.status == ApplyStatus.SUCCESS, result.reason
    return to_text(result.document)


def status(document: str, *specs: tuple) -> ApplyStatus:
    return apply_json_diffs(parse_text(document), diffs(*specs)).status


# ------------------------------------------------------------- the MySQL reference manual's examples (14.17.4)

ARRAY_DOC = '["a", {"b": [1, 2]}, [3, 4]]'


@pytest.mark.parametrize(
    "path, value, manual_result",
    [
        ("$[1]", '"x"', '["a", "x", {"b": [1, 2]}, [3, 4]]'),
        ("$[100]", '"x"', '["a", {"b": [1, 2]}, [3, 4], "x"]'),
        ("$[1].b[0]", '"x"', '["a", {"b": ["x", 1, 2]}, [3, 4]]'),
        ("$[2][1]", '"y"', '["a", {"b": [1, 2]}, [3, "y", 4]]'),
    ],
)
def test_manual_json_array_insert(path: str, value: str, manual_result: str) -> None:
    assert applied(ARRAY_DOC, (INS, path, value)) == manual_result


def test_manual_json_array_insert_two_pairs() -> None:
    # JSON_ARRAY_INSERT(@j, '$[0]', 'x', '$[2][1]', 'y') -> ["x", "a", {"b": [1, 2]}, [3, 4]]: after the first
    # insert '$[2]' is the object, so the second pair is ignored and MySQL logs no diff for it.
    assert applied(ARRAY_DOC, (INS, "$[0]", '"x"')) == '["x", "a", {"b": [1, 2]}, [3, 4]]'
    # Logged anyway, that pair is an array insert into an object: rejected.
    assert status(ARRAY_DOC, (INS, "$[0]", '"x"'), (INS, "$[2][1]", '"y"')) == ApplyStatus.REJECTED


OBJECT_DOC = '{ "a": 1, "b": [2, 3]}'


def test_manual_json_insert() -> None:
    # JSON_INSERT(@j, '$.a', 10, '$.c', '[true, false]'): '$.a' exists (no diff), '$.c' is added.
    assert applied(OBJECT_DOC, (INS, "$.c", '"[true, false]"')) == '{"a": 1, "b": [2, 3], "c": "[true, false]"}'
    # ... and with CAST('[true, false]' AS JSON)
    assert applied(OBJECT_DOC, (INS, "$.c", "[true, false]")) == '{"a": 1, "b": [2, 3], "c": [true, false]}'


def test_manual_json_replace() -> None:
    # JSON_REPLACE(@j, '$.a', 10, '$.c', '[true, false]'): only '$.a' exists.
    assert applied(OBJECT_DOC, (REP, "$.a", "10")) == '{"a": 10, "b": [2, 3]}'


def test_manual_json_set() -> None:
    # JSON_SET(@j, '$.a', 10, '$.c', '[true, false]'): a REPLACE and an INSERT.
    assert applied(OBJECT_DOC, (REP, "$.a", "10"), (INS, "$.c", '"[true, false]"')) == (
        '{"a": 10, "b": [2, 3], "c": "[true, false]"}'
    )


def test_manual_json_remove() -> None:
    assert applied('["a", ["b", "c"], "d"]', (REM, "$[1]")) == '["a", "d"]'


# ---------------------------------------------------------------------------- rules of sql/json_diff.cc


def test_sql_null_document_and_root_path_are_rejected() -> None:
    assert apply_json_diffs(None, []).status == ApplyStatus.REJECTED
    for op in (REP, INS, REM):
        assert status('{"a": 1}', (op, "$", "1") if op != REM else (op, "$")) == ApplyStatus.REJECTED


def test_empty_vector_succeeds_unchanged() -> None:
    assert applied('{"a": [1]}') == '{"a": [1]}'


def test_replace_needs_the_exact_path() -> None:
    assert status('{"a": 1}', (REP, "$.b", "2")) == ApplyStatus.REJECTED
    assert status("[1, 2]", (REP, "$[2]", "3")) == ApplyStatus.REJECTED
    assert status('{"a": 1}', (REP, "$[0]", "3")) == ApplyStatus.REJECTED  # no auto-wrapping
    assert status('{"a": 1}', (REP, "$.a.b", "3")) == ApplyStatus.REJECTED  # through a scalar
    assert applied("[1, 2, 3]", (REP, "$[last]", '"z"')) == '[1, 2, "z"]'
    assert applied('{"a": {"b": [0]}}', (REP, "$.a.b[0]", "null")) == '{"a": {"b": [null]}}'


def test_insert_member_must_be_new_and_goes_to_mysqls_key_position() -> None:
    assert status('{"a": 1}', (INS, "$.a", "2")) == ApplyStatus.REJECTED
    assert status('{"a": 1}', (INS, "$.x.y", "2")) == ApplyStatus.REJECTED  # parent must exist
    assert status("7", (INS, "$.x", "2")) == ApplyStatus.REJECTED
    assert applied('{"bb": 1, "c": 2}', (INS, "$.a", "0"), (INS, "$.aaa", "3")) == '{"a": 0, "c": 2, "bb": 1, "aaa": 3}'


def test_insert_into_arrays_like_json_array_insert() -> None:
    assert applied("[1, 2, 3]", (INS, "$[0]", "0")) == "[0, 1, 2, 3]"
    assert applied("[1, 2, 3]", (INS, "$[3]", "4")) == "[1, 2, 3, 4]"
    assert applied("[1, 2, 3]", (INS, "$[99]", "4")) == "[1, 2, 3, 4]"
    assert applied("[1, 2, 3]", (INS, "$[last]", "9")) == "[1, 2, 9, 3]"
    assert applied("[1, 2, 3]", (INS, "$[last-7]", "9")) == "[9, 1, 2, 3]"
    assert status("[1, 2, 3]", (INS, "$.a", "9")) == ApplyStatus.REJECTED  # member leg on an array
    assert status('{"a": 1}', (INS, "$[0]", "9")) == ApplyStatus.REJECTED  # cell leg on an object


def test_remove_needs_the_member_or_an_in_bounds_cell() -> None:
    assert applied('{"a": 1, "b": 2}', (REM, "$.a")) == '{"b": 2}'
    assert applied("[1, 2, 3]", (REM, "$[last]")) == "[1, 2]"
    assert status('{"a": 1}', (REM, "$.b")) == ApplyStatus.REJECTED
    assert status("[1, 2, 3]", (REM, "$[3]")) == ApplyStatus.REJECTED
    assert status("[1, 2, 3]", (REM, "$.a")) == ApplyStatus.REJECTED
    assert status('"s"', (REM, "$[0]")) == ApplyStatus.REJECTED


def test_wildcard_paths_are_rejected() -> None:
    for path in ("$.*", "$[*]", "$**.a", "$[0 to 1]"):
        assert status('{"a": [1, 2]}', (REP, path, "1")) == ApplyStatus.REJECTED


def test_failure_is_atomic_and_names_the_failing_diff() -> None:
    document = parse_text('{"a": [1, 2], "b": {"c": 3}}')
    snapshot = copy.deepcopy(document)
    result = apply_json_diffs(document, diffs((REP, "$.a[0]", "9"), (INS, "$.b.d", "4"), (REM, "$.zz")))
    assert result.status == ApplyStatus.REJECTED
    assert result.failed_index == 2
    assert "REMOVE $.zz" in result.reason
    assert result.document is document
    assert document == snapshot and to_text(document) == to_text(snapshot)


def test_success_never_mutates_the_input_and_shares_untouched_subtrees() -> None:
    document = parse_text('{"a": [1, 2], "b": {"c": [3]}, "z": {"big": [4, 5, 6]}}')
    snapshot = copy.deepcopy(document)
    result = apply_json_diffs(document, diffs((REP, "$.a[0]", "9"), (INS, "$.b.c[0]", "0"), (REM, "$.a[1]")))
    assert to_text(result.document) == '{"a": [9], "b": {"c": [0, 3]}, "z": {"big": [4, 5, 6]}}'
    assert document == snapshot
    assert result.document["z"] is document["z"]  # copy-on-write: no copy of what no diff touched


def test_inputs_as_binary_cell_and_raw_vector() -> None:
    cell = BinaryJson(encode({"n": 1}))
    raw_vector = write_diffs(diffs((REP, "$.n", "2")))
    result = apply_json_diffs(cell, raw_vector)
    assert result.ok and result.document == {"n": 2}
    assert apply_json_diffs(encode([1]), raw_vector).status == ApplyStatus.REJECTED


def test_corrupt_inputs_are_errors() -> None:
    assert apply_json_diffs({"n": 1}, bytes.fromhex("0701")).status == ApplyStatus.ERROR
    assert apply_json_diffs(b"\x0d", []).status == ApplyStatus.ERROR


def test_too_deep_result_is_an_error_only_if_it_stays_too_deep() -> None:
    """MySQL checks the depth when it stores the result (Field_json::store_json), after every diff applied."""
    deep = to_text(parse_text("[" * 100 + "]" * 100))  # under "a": 1 + 100 levels, one too many
    result = apply_json_diffs({"a": 1}, diffs((REP, "$.a", deep)))
    assert result.status == ApplyStatus.ERROR and "depth" in result.reason
    assert status('{"a": 1}', (REP, "$.a", deep), (REM, "$.a")) == ApplyStatus.SUCCESS
    assert status('{"a": 1}', (REP, "$.a", deep), (REM, "$.zz")) == ApplyStatus.REJECTED
