"""Every real vector of ../shared/fixtures/json_vectors decodes to its expected text and operations."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from binlake.mysqljson import (
    ApplyStatus,
    BinaryJson,
    DiffOp,
    apply_json_diffs,
    decode,
    decode_text,
    encode,
    parse_text,
    read_diffs,
    to_text,
    write_diffs,
)
from tests.mysqljson.vectors import DIFFS, JSONB, ids, vector

# Vectors whose expected_text is not in MySQL's output form (the notes say where it comes from); for these the
# value must equal the expected JSON and the text must be MySQL's rendering of it (separators ", " / ": ").
SOURCE_RENDERS_DIFFERENTLY = {
    "go-mysql/TestParseJson/2": "expected_text is the INSERT statement's compact literal, not SELECT output",
}


@pytest.mark.parametrize("vector_id", ids(JSONB))
def test_jsonb_vector_decodes_to_expected_text(vector_id: str) -> None:
    case = vector(JSONB, vector_id)
    text = decode_text(bytes.fromhex(case["hex"]))
    if vector_id in SOURCE_RENDERS_DIFFERENTLY:
        assert text != case["expected_text"]
        assert json.loads(text) == json.loads(case["expected_text"])
        assert text == json.dumps(json.loads(case["expected_text"]), ensure_ascii=False)
    else:
        assert text == case["expected_text"]


@pytest.mark.parametrize("vector_id", ids(JSONB))
def test_jsonb_vector_reencodes_to_an_equal_value_and_text(vector_id: str) -> None:
    raw = bytes.fromhex(vector(JSONB, vector_id)["hex"])
    value = decode(raw)
    again = decode(encode(value))
    assert to_text(again) == to_text(value)
    assert BinaryJson(encode(value)) == BinaryJson(raw)
    assert to_text(parse_text(to_text(value))) == to_text(value)


def test_decimal_and_temporal_vectors_reencode_byte_for_byte() -> None:
    """Opaque values MySQL (or the vector's author) wrote: our encoder picks the same precision and layout."""
    cases = vector(JSONB, "vitess/opaque-decimal"), vector(JSONB, "vitess/opaque-decimal-0.1")
    for case in cases + tuple(vector(JSONB, f"vitess/opaque-{name}") for name in ("datetime", "time", "date")):
        raw = bytes.fromhex(case["hex"])
        assert encode(decode(raw)) == raw, case["id"]
    assert decode(bytes.fromhex(vector(JSONB, "vitess/opaque-decimal")["hex"])) == Decimal("123456789.1234")


def test_objects_written_by_mysql_reencode_byte_for_byte() -> None:
    """Compact documents a real server wrote (not updated in place) are exactly what our encoder writes."""
    for vector_id in (
        "binlog:rust_mysql_common/json.binlog.000001@1059/row0/after/col1",
        "binlog:MySqlCdc/mysql-bin.000001@1544/row0/after/col12",
        "go-mysql/TestParseJson/1",
        "vitess/obj-complex",
    ):
        raw = bytes.fromhex(vector(JSONB, vector_id)["hex"])
        assert encode(decode(raw)) == raw, vector_id


def test_sparse_documents_updated_in_place_decode_by_offsets() -> None:
    """BINLOG_UPDATE_80 holds stale bytes from an in-place JSON_REMOVE; the removed key must not reappear."""
    for vector_id in ("mysql-binlog-connector-java/BINLOG_UPDATE_57", "mysql-binlog-connector-java/BINLOG_UPDATE_80"):
        value = decode(bytes.fromhex(vector(JSONB, vector_id)["hex"]))
        assert not any(key.startswith("17fc98") for key in value)


@pytest.mark.parametrize("vector_id", ids(DIFFS))
def test_diff_vector_reads_expected_operations_and_writes_back_exactly(vector_id: str) -> None:
    case = vector(DIFFS, vector_id)
    raw = bytes.fromhex(case["hex"])
    diffs = read_diffs(raw)
    assert [(d.op.name, str(d.path)) for d in diffs] == [(e["op"], e["path"]) for e in case["expected"]]
    for diff, expected in zip(diffs, case["expected"]):
        assert diff.op in (DiffOp.REPLACE, DiffOp.INSERT, DiffOp.REMOVE)
        assert diff.value == expected["value"]
        assert encode(diff.value) == bytes.fromhex(expected["value_hex"])
    assert write_diffs(diffs) == raw


def test_real_partial_updates_apply_to_the_real_documents_they_were_made_for() -> None:
    """json.binlog.000001: UPDATE_ROWS at 2612 wrote the full documents (ages 25, 33, 41); the
    PARTIAL_UPDATE_ROWS_EVENT at 3750 then set each age one higher. Rows 0-2 of both events are the same rows."""
    for row in range(3):
        before = vector(JSONB, f"binlog:rust_mysql_common/json.binlog.000001@2612/row{row}/after/col1")
        diff_cell = vector(DIFFS, f"binlog:rust_mysql_common/json.binlog.000001@3750/row{row}/col1")
        age = json.loads(before["expected_text"])["age"]
        expected = before["expected_text"].replace(f'"age": {age},', f'"age": {age + 1},')
        result = apply_json_diffs(BinaryJson(bytes.fromhex(before["hex"])), bytes.fromhex(diff_cell["hex"]))
        assert result.status == ApplyStatus.SUCCESS
        assert to_text(result.document) == expected


def _plain(value: object) -> object:
    """python-mysql-replication's output with its bytes keys and strings as str."""
    if isinstance(value, dict):
        return {_plain(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value.decode("utf-8") if isinstance(value, bytes) else value


def test_an_independent_decoder_agrees_on_every_vector_without_opaque_values() -> None:
    """python-mysql-replication's json_binary (a separate implementation) reads the same values."""
    parse_json = pytest.importorskip("pymysqlreplication.json_binary").parse_json
    compared = 0
    for vector_id in ids(JSONB):
        raw = bytes.fromhex(vector(JSONB, vector_id)["hex"])
        if not raw or raw[0] == 0x0F or vector_id == "vitess/arr-here":
            continue  # empty cell, opaque values, and a size it rejects: it has no opinion to compare
        assert decode(raw) == _plain(parse_json(raw[0], raw[1:])), vector_id
        compared += 1
    assert compared >= 35
