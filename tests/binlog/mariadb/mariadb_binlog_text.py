"""A parser for the text that MariaDB's own decoder prints: ``mariadb-binlog [-vv] --base64-output=decode-rows``.

It is the independent oracle the binlake tests compare with, so it knows nothing of binlake. It reads:

- the event listing: each ``# at N`` line, then the event's header line
  ``#yymmdd hh:mm:ss server id S  end_log_pos E CRC32 0x...  <Type text>``. (For ANNOTATE_ROWS the tool prints
  two ``# at`` lines in a row and then the two headers: pairing them in order still matches.)
- with ``-vv``, the pseudo-SQL of each statement's rows: ``### INSERT INTO `db`.`t``` / ``### UPDATE ...`` /
  ``### DELETE FROM ...``, ``### WHERE`` (before image), ``### SET`` (after image), ``###   @N=value /* TYPE
  meta=.. nullable=.. is_null=.. */``. ``-vv`` adds that type comment, which marks where a value ends.

Values stay raw tokens here (bytes); ``normalize.from_tool`` interprets them per column type. The tool's quirks,
all handled there or here:

- strings are quoted with ``'`` but inner quotes and backslashes are NOT escaped; bytes below 0x20 print as
  ``\\xNN``, every other byte raw (so the output is bytes, not text): parse up to the last ``'`` before ``/*``.
- FLOAT prints as ``%-20g`` (6 significant digits, padded), DOUBLE as ``%.20g``.
- integers print signed, with the unsigned reading in parentheses when negative: ``-1 (255)``.
- DATE prints as ``'2024:02:29'``; YEAR 0 prints as 1900; TIMESTAMP prints as seconds since the epoch with the
  column's fractional digits (``1709210096.12``).
- ENUM prints its index; BIT prints as ``b'0101'``; SET prints its storage bytes as bits (``b'00000101'``),
  byte by byte in storage (little-endian) order, each byte most significant bit first.
- CHAR/BINARY print as stored in the row: trailing spaces (CHAR) and trailing 0x00 bytes (BINARY) stripped.
- A statement whose rows span several rows events (only the last has STMT_END_F) is printed as one block after
  the last event's header: which row came from which event is not shown. Rows are therefore numbered within
  their statement's group of events (``ToolRow.positions``).
- It can not print MariaDB 5.3's TIME/DATETIME/TIMESTAMP formats (types 11/12/7 with fractional digits): it
  stops at the first such row event and exits 1.
"""

from __future__ import annotations

import calendar
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from tests.mariadb_server import find_binary

# Event type codes (MySQL's Log_event_type, MariaDB's own from 160), keyed by how the tool's header starts.
HEADER_TYPES: tuple[tuple[bytes, int, str], ...] = (
    (b"Start: binlog", 15, "FORMAT_DESCRIPTION_EVENT"),
    (b"Gtid list", 163, "GTID_LIST_EVENT"),
    (b"Binlog checkpoint", 161, "BINLOG_CHECKPOINT_EVENT"),
    (b"GTID ", 162, "GTID_EVENT"),
    (b"Query_compressed", 165, "QUERY_COMPRESSED_EVENT"),
    (b"Query", 2, "QUERY_EVENT"),
    (b"Annotate_rows", 160, "ANNOTATE_ROWS_EVENT"),
    (b"Table_map", 19, "TABLE_MAP_EVENT"),
    (b"Write_rows", 23, "WRITE_ROWS_EVENT_V1"),
    (b"Update_rows", 24, "UPDATE_ROWS_EVENT_V1"),
    (b"Delete_rows", 25, "DELETE_ROWS_EVENT_V1"),
    (b"Write_compressed_rows", 166, "WRITE_ROWS_COMPRESSED_EVENT_V1"),  # --log-bin-compress
    (b"Update_compressed_rows", 167, "UPDATE_ROWS_COMPRESSED_EVENT_V1"),
    (b"Delete_compressed_rows", 168, "DELETE_ROWS_COMPRESSED_EVENT_V1"),
    (b"Xid", 16, "XID_EVENT"),
    (b"Rotate to", 4, "ROTATE_EVENT"),
    (b"Stop", 3, "STOP_EVENT"),
    (b"Intvar", 5, "INTVAR_EVENT"),
    (b"Rand", 13, "RAND_EVENT"),
    (b"User_var", 14, "USER_VAR_EVENT"),
)
ROWS_TYPE_CODES = {23: "insert", 24: "update", 25: "delete", 166: "insert", 167: "update", 168: "delete"}

AT_RE = re.compile(rb"^# at (\d+)$")
HEADER_RE = re.compile(
    rb"^#(\d\d)(\d\d)(\d\d)\s+(\d+):(\d\d):(\d\d) server id (\d+)\s+end_log_pos (\d+)(?: CRC32 0x[0-9a-f]+)?\s+(.*)$"
)
GTID_RE = re.compile(rb"^GTID (\d+-\d+-\d+)")
STMT_RE = re.compile(rb"^### (INSERT INTO|UPDATE|DELETE FROM) `([^`]*)`\.`([^`]*)`$")
VALUE_RE = re.compile(rb"^###   @(\d+)=(.*)$")
ESCAPE_RE = re.compile(rb"\\x([0-9a-f]{2})")


@dataclass(frozen=True, slots=True)
class ToolEvent:
    pos: int
    type_code: int
    type_name: str
    timestamp: int  # seconds since the epoch (the tool printed it in UTC: run with TZ=UTC)
    server_id: int
    end_log_pos: int
    text: bytes  # the header's text after the checksum

    @property
    def size(self) -> int:
        return self.end_log_pos - self.pos


@dataclass(slots=True)
class ToolRow:
    """One row change as the tool printed it; values by column number (1-based), raw tokens or None (NULL)."""

    pos: int  # the first rows event of the statement's group
    row: int  # index within the group
    positions: tuple[int, ...]  # every rows event of the group
    gtid: str | None
    db: str
    table: str
    op: str
    before: dict[int, "ToolValue"] = field(default_factory=dict)
    after: dict[int, "ToolValue"] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ToolValue:
    """A printed value: ``quoted`` strings are unescaped to their bytes; other tokens kept as printed."""

    token: bytes | None  # None: NULL
    quoted: bool
    type_comment: bytes  # e.g. b"TINYINT meta=0 nullable=1 is_null=0"


@dataclass
class ToolOutput:
    returncode: int
    events: list[ToolEvent]
    rows: list[ToolRow]
    stderr: str


def run_mariadb_binlog(path: Path, verbose: bool = True) -> ToolOutput:
    """Run the tool on one file (``-vv`` when ``verbose``) and parse what it printed, even if it failed."""
    args = [find_binary("mariadb-binlog") or "mariadb-binlog", "--no-defaults", "--base64-output=decode-rows"]
    if verbose:
        args.append("-vv")
    result = subprocess.run(args + [str(path)], capture_output=True, check=False, env={**os.environ, "TZ": "UTC"})
    events, rows = parse(result.stdout)
    return ToolOutput(result.returncode, events, rows, result.stderr.decode(errors="replace"))


def _event_type(text: bytes) -> tuple[int, str]:
    for prefix, code, name in HEADER_TYPES:
        if text.startswith(prefix):
            return code, name
    raise ValueError(f"mariadb-binlog printed an event header this parser does not know: {text[:60]!r}")


def _value(raw: bytes) -> ToolValue:
    cut = raw.rfind(b" /* ")
    if cut < 0:
        raise ValueError(f"value without -vv type comment: {raw[:80]!r}")
    body, comment = raw[:cut].rstrip(b" "), raw[cut + 4 :].removesuffix(b" */")
    if body == b"NULL" and b"is_null=1" in comment:
        return ToolValue(None, False, comment)
    if body.startswith(b"'") and body.endswith(b"'") and len(body) >= 2:
        return ToolValue(ESCAPE_RE.sub(lambda m: bytes([int(m.group(1), 16)]), body[1:-1]), True, comment)
    return ToolValue(body, False, comment)


def parse(output: bytes) -> tuple[list[ToolEvent], list[ToolRow]]:
    positions: list[int] = []
    events: list[ToolEvent] = []
    rows: list[ToolRow] = []
    gtid: str | None = None
    current: ToolRow | None = None
    image: dict[int, ToolValue] | None = None
    row_index = 0
    group: list[int] = []  # rows events of the current statement so far
    group_open = False  # the last header was a rows event without STMT_END_F
    for line in output.split(b"\n"):
        if line.startswith(b"# at "):
            match = AT_RE.match(line)
            if match:
                positions.append(int(match.group(1)))
            continue
        if line.startswith(b"#") and not line.startswith((b"##", b"#Q>")):
            match = HEADER_RE.match(line)
            if not match:
                continue
            yy, mo, dd, hh, mi, ss, server_id, end_pos, text = match.groups()
            if len(events) >= len(positions):
                raise ValueError(f"event header without a '# at' line before it: {line[:80]!r}")
            code, name = _event_type(text)
            stamp = calendar.timegm((2000 + int(yy), int(mo), int(dd), int(hh), int(mi), int(ss)))
            event = ToolEvent(positions[len(events)], code, name, stamp, int(server_id), int(end_pos), text)
            events.append(event)
            if code == 162:
                gtid_match = GTID_RE.match(text)
                gtid = gtid_match.group(1).decode() if gtid_match else None
            if code in ROWS_TYPE_CODES:
                if not group_open:
                    group, row_index = [], 0
                group.append(event.pos)
                group_open = b"STMT_END_F" not in text
            elif code != 19:  # TABLE_MAPs may sit between the rows events of one statement
                group_open = False
            current, image = None, None
            continue
        if not line.startswith(b"###"):
            continue
        stmt = STMT_RE.match(line)
        if stmt:
            rows_event = events[-1]
            op = ROWS_TYPE_CODES.get(rows_event.type_code)
            if op is None:
                raise ValueError(f"row printed outside a rows event at {rows_event.pos}")
            current = ToolRow(
                group[0], row_index, tuple(group), gtid, stmt.group(2).decode(), stmt.group(3).decode(), op
            )
            rows.append(current)
            row_index += 1
            image = current.after if op == "insert" else current.before
            continue
        if line == b"### SET" and current is not None:
            image = current.after
            continue
        if line == b"### WHERE" and current is not None:
            image = current.before
            continue
        value = VALUE_RE.match(line)
        if value and image is not None:
            image[int(value.group(1))] = _value(value.group(2))
    return events, rows
