"""MySQL JSON: binary format, text rendering, JSON paths, partial-update diffs and ``apply_json_diffs``.

Value model: ``dict`` (members in stored order), ``list``, ``str``, ``int``, ``float``, ``bool``, ``None`` (JSON
null), ``decimal.Decimal`` (DECIMAL opaque), :class:`JsonDate` / :class:`JsonDatetime` / :class:`JsonTime`
(temporal opaques) and :class:`JsonOpaque` (any other opaque type).
"""

from binlake.mysqljson.apply import ApplyResult, ApplyStatus, apply_json_diffs
from binlake.mysqljson.cell import BinaryJson
from binlake.mysqljson.decoder import decode
from binlake.mysqljson.diff import (
    DiffOp,
    JsonDiff,
    diff_binary_length,
    full_update_size,
    partial_update_size,
    read_diffs,
    use_partial_format,
    write_diffs,
)
from binlake.mysqljson.encoder import encode
from binlake.mysqljson.errors import (
    JsonCorruptError,
    JsonDecodeError,
    JsonDepthError,
    JsonDiffCorruptError,
    JsonEncodeError,
    JsonError,
    JsonPathSyntaxError,
    JsonTextSyntaxError,
    JsonTruncatedError,
)
from binlake.mysqljson.mysqlbinlog import render_mysqlbinlog
from binlake.mysqljson.path import ArrayIndex, JsonPath, LegType, PathLeg, parse_path
from binlake.mysqljson.text import canonical, format_double, parse_text, to_python, to_text
from binlake.mysqljson.values import JsonDate, JsonDatetime, JsonOpaque, JsonTime


def decode_text(data: bytes | bytearray | memoryview) -> str:
    """MySQL's text of a binary JSON cell: ``to_text(decode(data))``."""
    return to_text(decode(data))


__all__ = [
    "ApplyResult",
    "ApplyStatus",
    "ArrayIndex",
    "BinaryJson",
    "DiffOp",
    "JsonCorruptError",
    "JsonDate",
    "JsonDatetime",
    "JsonDecodeError",
    "JsonDepthError",
    "JsonDiff",
    "JsonDiffCorruptError",
    "JsonEncodeError",
    "JsonError",
    "JsonOpaque",
    "JsonPath",
    "JsonPathSyntaxError",
    "JsonTextSyntaxError",
    "JsonTime",
    "JsonTruncatedError",
    "LegType",
    "PathLeg",
    "apply_json_diffs",
    "canonical",
    "decode",
    "decode_text",
    "diff_binary_length",
    "encode",
    "format_double",
    "full_update_size",
    "parse_path",
    "parse_text",
    "partial_update_size",
    "read_diffs",
    "render_mysqlbinlog",
    "to_python",
    "to_text",
    "use_partial_format",
    "write_diffs",
]
