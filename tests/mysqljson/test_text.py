"""MySQL's JSON text: double formatting (my_gcvt rules), string escaping (double_quote), parsing JSON text."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from binlake.mysqljson import (
    JsonDepthError,
    JsonTextSyntaxError,
    canonical,
    format_double,
    parse_text,
    to_python,
    to_text,
)
from binlake.mysqljson.values import JsonDate, JsonOpaque


# Expected strings worked out by hand from my_gcvt (strings/dtoa.cc) with width MY_GCVT_MAX_FIELD_WIDTH = 34:
# 'f' format iff -14 <= decpt <= 15 (or all 17 digits fit before the point), else 'e' with a bare exponent;
# wrapper_to_string then appends ".0" when neither '.' nor 'e' was printed.
@pytest.mark.parametrize(
    "number, text",
    [
        (3.14159, "3.14159"),
        (1.0, "1.0"),
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (-2.5, "-2.5"),
        (100.0, "100.0"),
        (0.1, "0.1"),
        (1e14, "100000000000000.0"),
        (123456789012345.0, "123456789012345.0"),
        (1e15, "1e15"),
        (1234567890123456.0, "1.234567890123456e15"),
        (1234567890123456.8, "1234567890123456.8"),
        (2.0**53, "9.007199254740992e15"),
        (1e-5, "0.00001"),
        (1.5e-7, "0.00000015"),
        (1e-15, "0.000000000000001"),
        (1e-16, "1e-16"),
        (1.25e-100, "1.25e-100"),
        (1e100, "1e100"),
        (1.7976931348623157e308, "1.7976931348623157e308"),
        (5e-324, "5e-324"),
        (-1e20, "-1e20"),
    ],
)
def test_doubles_print_like_my_gcvt(number: float, text: str) -> None:
    assert format_double(number) == text
    assert to_text([number]) == f"[{text}]"
    assert float(text) == number


def test_strings_are_escaped_like_double_quote() -> None:
    assert to_text('a"b\\c/\n\r\t\b\f\x00\x01\x1f\x7fé😀') == (
        '"a\\"b\\\\c/\\n\\r\\t\\b\\f\\u0000\\u0001\\u001f\x7fé😀"'
    )


def test_separators_key_order_and_scalars() -> None:
    value = {"b": [1, True, None, "x"], "a": {}, "c": [], "d": Decimal("0.000000001")}
    assert to_text(value) == '{"b": [1, true, null, "x"], "a": {}, "c": [], "d": 0.000000001}'
    assert to_text(18446744073709551615) == "18446744073709551615"
    assert to_text(Decimal("1E+2")) == "100"


def test_parse_text_orders_keys_like_mysql_and_keeps_the_last_duplicate() -> None:
    value = parse_text('{"b": 1, "aa": 2, "a": 3, "B": 4, "é": 5, "a": 6}')
    assert list(value) == ["B", "a", "b", "aa", "é"]  # by UTF-8 length, then bytes
    assert value["a"] == 6
    assert to_text(value) == '{"B": 4, "a": 6, "b": 1, "aa": 2, "é": 5}'


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1", 1),
        ("-9223372036854775808", -(2**63)),
        ("18446744073709551615", 2**64 - 1),
        ("1.5", 1.5),
        ("1e2", 100.0),
        ("1.50", Decimal("1.50")),
        ("18446744073709551616", Decimal("18446744073709551616")),
    ],
)
def test_parse_text_numbers(text: str, expected: object) -> None:
    value = parse_text(text)
    assert type(value) is type(expected) and value == expected


def test_parse_text_keeps_rendered_text_of_every_number_kind() -> None:
    for text in ("1.50", "100.0", "1e20", "0.000000001", "-0.0", "123456789012345678901234567890.5"):
        assert to_text(parse_text(text)) == text


@pytest.mark.parametrize("text", ["", "{", "[1,]", "NaN", "[Infinity]", "1e400", "{'a': 1}", "[1] 2", '"\\ud800"'])
def test_parse_text_rejects_what_mysql_rejects(text: str) -> None:
    with pytest.raises(JsonTextSyntaxError):
        parse_text(text)


def test_parse_text_depth_limit() -> None:
    assert parse_text("[" * 100 + "]" * 100) is not None
    with pytest.raises(JsonDepthError):
        parse_text("[" * 101 + "]" * 101)
    with pytest.raises(JsonDepthError):
        parse_text("[" * 5000 + "]" * 5000)


def test_to_python_is_what_a_json_reader_of_mysqls_text_gets() -> None:
    value = {"d": Decimal("1.50"), "t": JsonDate(2024, 1, 2), "o": JsonOpaque(16, b"\xca\xfe"), "l": [1.5, None]}
    assert to_python(value) == json.loads(to_text(value))
    assert json.dumps(to_python(value))


def test_canonical_compares_as_json_not_as_python() -> None:
    assert canonical({"a": 1, "b": 2}) == canonical({"b": 2, "a": 1.0})
    assert canonical(Decimal("1.50")) == canonical(1.5)
    assert canonical(True) != canonical(1)
    assert canonical([1, 2]) != canonical([2, 1])
    assert hash(canonical({"x": [True]})) == hash(canonical({"x": [True]}))
