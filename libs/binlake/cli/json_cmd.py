"""``binlake json``: decode MySQL binary JSON, show and apply partial-update diff vectors."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from binlake.errors import BinlakeError

EPILOG = """\
HEX is hexadecimal bytes (spaces and a 0x prefix are ignored): for `decode`, a JSON column cell without its
length prefix; for --diffs and `diffs`, a partial JSON cell of a PARTIAL_UPDATE_ROWS_EVENT after-image without
its 4-byte length prefix.

`apply` prints the status (SUCCESS, REJECTED or ERROR) on one line and the resulting document on the next (the
input document, unchanged, unless SUCCESS); the reason for a failure goes to stderr.
Exit codes: 0 SUCCESS, 3 REJECTED, 4 ERROR, 2 bad arguments or undecodable input.

examples:
  binlake json decode 0001000c000b00010005020061
  binlake json apply --doc '{"age": 25, "name": "Joe"}' --diffs 0005242e61676503051a00
  binlake json diffs 0005242e61676503051a00
"""

EXIT_REJECTED = 3
EXIT_ERROR = 4


class UsageError(BinlakeError):
    """Bad command-line input; the message says what to fix."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "json",
        help="decode MySQL binary JSON; show or apply partial JSON diffs",
        description="MySQL binary JSON and partial-update diff vectors, rendered exactly as MySQL prints them.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="json_command", metavar="COMMAND", required=True)

    decode = commands.add_parser(
        "decode",
        help="print MySQL's text of a binary JSON value",
        description="Print the text MySQL's SELECT shows for a binary JSON cell.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    decode.add_argument("hex", metavar="HEX", help="the JSON cell, without its length prefix")
    decode.set_defaults(func=run_decode)

    apply = commands.add_parser(
        "apply",
        help="apply a diff vector to a document (apply_json_diffs)",
        description="Apply a partial-update diff vector to a JSON document as MySQL's "
        "apply_json_diffs does, all or nothing.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    apply.add_argument("--doc", required=True, metavar="JSON_TEXT", help="the document before the update")
    apply.add_argument(
        "--diffs", required=True, metavar="HEX", help="the partial cell, without its 4-byte length prefix"
    )
    apply.set_defaults(func=run_apply)

    diffs = commands.add_parser(
        "diffs",
        help="list the diffs of a vector and its mysqlbinlog -v form",
        description="Print each diff (operation, path, value) and the pseudo-SQL mysqlbinlog -v shows for the vector.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    diffs.add_argument("hex", metavar="HEX", help="the partial cell, without its 4-byte length prefix")
    diffs.add_argument("--column", default="@1", help="column name for the pseudo-SQL (default @1)")
    diffs.set_defaults(func=run_diffs)


def parse_hex(text: str, what: str) -> bytes:
    cleaned = "".join(text.split())
    if cleaned[:2].lower() == "0x":
        cleaned = cleaned[2:]
    try:
        return bytes.fromhex(cleaned)
    except ValueError:
        raise UsageError(f"{what} is not hexadecimal bytes: {text[:40]!r} (give pairs of hex digits)") from None


def run_decode(args: argparse.Namespace) -> int:
    from binlake.mysqljson import decode_text

    print(decode_text(parse_hex(args.hex, "HEX")))
    return 0


def run_apply(args: argparse.Namespace) -> int:
    from binlake.mysqljson import ApplyStatus, BinaryJson, JsonError, apply_json_diffs, parse_text, to_text

    try:
        document = BinaryJson.from_value(parse_text(args.doc))  # a cell: JSON null is not SQL NULL
    except JsonError as exc:
        raise UsageError(f"--doc is not a JSON document: {exc}") from None
    result = apply_json_diffs(document, parse_hex(args.diffs, "--diffs"))
    print(result.status.name)
    print(to_text(result.document.value if isinstance(result.document, BinaryJson) else result.document))
    if result.status != ApplyStatus.SUCCESS:
        where = f"diff #{result.failed_index}: " if result.failed_index is not None else ""
        print(f"binlake json apply: {result.status.name}: {where}{result.reason}", file=sys.stderr)
    return {ApplyStatus.SUCCESS: 0, ApplyStatus.REJECTED: EXIT_REJECTED}.get(result.status, EXIT_ERROR)


def run_diffs(args: argparse.Namespace) -> int:
    from binlake.mysqljson import read_diffs, render_mysqlbinlog, to_text

    diffs = read_diffs(parse_hex(args.hex, "HEX"))
    for index, diff in enumerate(diffs):
        value = "" if diff.op.name == "REMOVE" else " " + to_text(diff.value)
        print(f"#{index} {diff.op.name} {diff.path}{value}")
    print(render_mysqlbinlog(args.column, diffs))
    return 0
