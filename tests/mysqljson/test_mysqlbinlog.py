"""``mysqlbinlog -v`` pseudo-SQL of diff vectors (WL#2955 section 6, log_event.cc print_json_diff)."""

from __future__ import annotations

from decimal import Decimal

from binlake.mysqljson import DiffOp, JsonDiff, apply_json_diffs, parse_path, parse_text, render_mysqlbinlog, to_text
from binlake.mysqljson.values import JsonDate

# WL#2955 section 6 example: the original document and its diff vector.
ORIGINAL = """{
  "a": "replace this string value by 7",
  "b": [ 0, "replace this string by bb" ],
  "c": "remove this key-value pair, including the key c",
  "d": [ "remove this string" ],
  "0": "insert the key-value pair e: ee in the top-level object",
  "f": [ "insert ff after this string", "and before this string" ],
  "1": "insert the key-value pair g: gg in the top-level object"
}"""
DIFFS = [
    JsonDiff(DiffOp.REPLACE, parse_path("$.a"), 7),
    JsonDiff(DiffOp.REPLACE, parse_path("$.b[1]"), "bb"),
    JsonDiff(DiffOp.REMOVE, parse_path("$.c")),
    JsonDiff(DiffOp.REMOVE, parse_path("$.d[0]")),
    JsonDiff(DiffOp.INSERT, parse_path("$.e"), "ee"),
    JsonDiff(DiffOp.INSERT, parse_path("$.f[1]"), "ff"),
    JsonDiff(DiffOp.INSERT, parse_path("$.g"), "gg"),
]


def test_wl2955_example_reversed_nesting() -> None:
    # The worklog's sample output, with the separators print_json_diff really writes (the worklog text drops
    # the comma after '$.c' and misprints '$.f[1]' as '$.f[3]').
    expected = (
        "JSON_INSERT(\n"
        "###      JSON_ARRAY_INSERT(\n"
        "###      JSON_INSERT(\n"
        "###      JSON_REMOVE(\n"
        "###      JSON_REPLACE(@2, '$.a', 7,\n"
        "###      '$.b[1]', 'bb'),\n"
        "###      '$.c',\n"
        "###      '$.d[0]'),\n"
        "###      '$.e', 'ee'),\n"
        "###      '$.f[1]', 'ff'),\n"
        "###      '$.g', 'gg')"
    )
    assert render_mysqlbinlog("@2", DIFFS) == expected


def test_wl2955_example_applies() -> None:
    result = apply_json_diffs(parse_text(ORIGINAL), DIFFS)
    assert result.ok
    assert to_text(result.document) == (
        '{"0": "insert the key-value pair e: ee in the top-level object", '
        '"1": "insert the key-value pair g: gg in the top-level object", "a": 7, '
        '"b": [0, "bb"], "d": [], "e": "ee", '
        '"f": ["insert ff after this string", "ff", "and before this string"], "g": "gg"}'
    )


def test_single_diff_stays_on_one_line_and_empty_vector_is_the_column() -> None:
    assert render_mysqlbinlog("@1", DIFFS[:1]) == "JSON_REPLACE(@1, '$.a', 7)"
    assert render_mysqlbinlog("@1", []) == "@1"


def test_values_keep_their_json_type_in_sql() -> None:
    values = [None, True, 1.5, Decimal("2.50"), "it's\n", {"x": [1]}, JsonDate(2024, 1, 2)]
    diffs = [JsonDiff(DiffOp.REPLACE, parse_path(f"$[{i}]"), v) for i, v in enumerate(values)]
    rendered = render_mysqlbinlog("@3", diffs)
    assert rendered == (
        "JSON_REPLACE(@3, '$[0]', null,\n###      '$[1]', true,\n###      '$[2]', 1.5,\n"
        "###      '$[3]', 2.50,\n###      '$[4]', 'it\\'s\\n',\n"
        "###      '$[5]', CAST('{\"x\": [1]}' AS JSON),\n###      '$[6]', '2024-01-02')"
    )
