"""JSON path syntax as sql-common/json_path.cc parses and prints it."""

from __future__ import annotations

import pytest

from binlake.mysqljson import JsonPathSyntaxError, parse_path
from binlake.mysqljson.path import JsonPath, LegType, cell, member


@pytest.mark.parametrize(
    "text, printed",
    [
        ("$", "$"),
        ("$.a", "$.a"),
        ('$."a"', "$.a"),
        (" $ . a [ 1 ] ", "$.a[1]"),
        ('$."a b"', '$."a b"'),
        ('$.""', '$.""'),
        ('$."1a"', '$."1a"'),
        ("$.$_x9", "$.$_x9"),
        ("$.é", "$.é"),
        ('$."中"', '$."中"'),  # json_path.cc's is_letter sees only the low byte of U+4E2D ('-')
        ('$."a\\"b"', '$."a\\"b"'),
        ("$.a\\u0062", "$.ab"),
        ("$[0]", "$[0]"),
        ("$[ last ]", "$[last]"),
        ("$[last - 2]", "$[last-2]"),
        ("$[1 to 3]", "$[1 to 3]"),
        ("$[last-3 to last]", "$[last-3 to last]"),
        ("$.*", "$.*"),
        ("$[*]", "$[*]"),
        ("$**.a", "$**.a"),
        ("$.a[2].b", "$.a[2].b"),
    ],
)
def test_parse_and_print(text: str, printed: str) -> None:
    path = parse_path(text)
    assert str(path) == printed
    assert parse_path(str(path)) == path


@pytest.mark.parametrize(
    "text",
    [
        "",
        "a",
        "$.",
        "$a",
        "$**",
        "$***.a",
        "$[",
        "$[a]",
        "$[-1]",
        "$.1a",
        "$.a b",
        '$."a',
        "$[3 to 1]",
        "$[1to 3]",
        "$[4294967296]",
        "$.中",
    ],
)
def test_invalid_paths(text: str) -> None:
    with pytest.raises(JsonPathSyntaxError):
        parse_path(text)


def test_built_paths_print_with_quoting_where_needed() -> None:
    path = JsonPath((member("name"), cell(3), member("first name"), cell(0, from_end=True)))
    assert str(path) == '$.name[3]."first name"[last]'
    assert [leg.type for leg in parse_path(str(path)).legs] == [LegType.MEMBER, LegType.ARRAY_CELL] * 2
