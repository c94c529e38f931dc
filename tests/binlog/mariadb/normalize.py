"""One comparable form per column kind, from each of the three sources the MariaDB tests compare.

- ``from_select``: what the server's own ``SELECT *`` returned over PyMySQL with no converters (numbers and
  temporal values as the server's text, character columns as str, binary columns as bytes), session time zone
  UTC.
- ``from_binlake``: a value of ``binlake rows --format jsonl`` under the issue-2 contract: integers as numbers,
  DECIMAL as an exact string, DATE/TIME/DATETIME/TIMESTAMP as MySQL's text with the column's fractional digits
  (TIMESTAMP in UTC), text as strings, binary as ``{"hex": ...}``, NULL as null.
- ``from_tool``: a token that ``mariadb-binlog -vv`` printed (see ``mariadb_binlog_text`` for its quirks).

The comparable forms: int (integers, YEAR, BIT), str (DECIMAL exact text, temporal text, text, ENUM label, SET
labels joined by ``,`` in definition order, JSON text), bytes (binary, GEOMETRY in MariaDB's internal SRID+WKB
form, INET4/INET6/UUID in their stored byte order), float32/float64 values for FLOAT/DOUBLE, None for NULL.

Where the contract does not fix a form, both plausible ones are accepted and said so: BIT as a number or as
``{"hex"}``; FLOAT as the single-precision value or its double widening. With ``binlog_row_metadata=MINIMAL``
the TABLE_MAP has no ENUM/SET member names, so an ENUM may come as its index and a SET as its bitmap number.
With ``NO_LOG`` (MariaDB's default) it has no signedness and no charsets either: an unsigned integer may come
as its signed reading, and character/binary columns are compared as the bytes the decoder shows.
"""

from __future__ import annotations

import datetime
import ipaddress
import struct
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from tests.binlog.mariadb.mariadb_binlog_text import ToolValue
from tests.binlog.mariadb.workload import Column

FLOAT32 = struct.Struct("<f")
PYTHON_CODECS = {"utf8mb4": "utf-8", "latin1": "cp1252", "ucs2": "utf-16-be", "utf16": "utf-16-be"}


class Mismatch(AssertionError):
    """A value that can not be brought to the column kind's comparable form (wrong JSON type, bad text, ...)."""


def float32(value: float) -> float:
    return FLOAT32.unpack(FLOAT32.pack(value))[0]


@dataclass(frozen=True, slots=True)
class PrintedFloat:
    """A FLOAT as mariadb-binlog prints it (``%g``: 6 significant digits): equal to a float that prints the same."""

    text: str

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PrintedFloat):
            return other.text == self.text
        return isinstance(other, float) and ("%g" % other) == self.text

    def __hash__(self) -> int:
        return hash(self.text)


def _members_to_set_text(col: Column, mask: int) -> str:
    return ",".join(m for i, m in enumerate(col.members) if mask >> i & 1)


def _set_text(col: Column, text: str) -> str:
    """SET labels in definition order (the server's text already is; this checks every label is a member)."""
    labels = [m for m in text.split(",") if m] if text else []
    for label in labels:
        if label not in col.members:
            raise Mismatch(f"{col.name}: {label!r} is not a member of {col.sql[:40]}...")
    return ",".join(m for m in col.members if m in labels)


def _bytes_of(value: Any, col: Column) -> bytes:
    if isinstance(value, dict) and set(value) == {"hex"} and isinstance(value["hex"], str):
        try:
            return bytes.fromhex(value["hex"])
        except ValueError as exc:
            raise Mismatch(f"{col.name}: bad hex {value['hex'][:40]!r}") from exc
    raise Mismatch(f'{col.name} ({col.sql}): expected {{"hex": ...}}, found {type(value).__name__} {value!r:.80}')


def _pad(col: Column, raw: bytes) -> bytes:
    width = col.fixed or {"inet4": 4, "inet6": 16, "uuid": 16}.get(col.kind, 0)
    return raw.ljust(width, b"\x00") if width else raw


# -- the server's SELECT -------------------------------------------------------------------------------------------
def from_select(col: Column, value: Any) -> Any:
    if value is None:
        return None
    kind = col.kind
    if kind in ("int", "year"):
        return int(value)
    if kind == "bit":
        return int.from_bytes(value, "big")
    if kind == "float":
        return float32(float(value))
    if kind == "double":
        return float(value)
    if kind in ("decimal", "date", "time", "datetime", "timestamp", "text", "json", "enum"):
        return value
    if kind == "char":
        return value.rstrip(" ")
    if kind == "set":
        return _set_text(col, value)
    if kind in ("binary", "geometry"):
        return bytes(value)
    if kind in ("inet4", "inet6"):
        return ipaddress.ip_address(value).packed
    if kind == "uuid":
        return bytes.fromhex(value.replace("-", ""))
    raise AssertionError(f"no SELECT normalisation for kind {kind}")


# -- binlake rows --format jsonl ---------------------------------------------------------------------------------
def from_binlake(col: Column, value: Any, metadata: str = "FULL") -> Any:
    if value is None:
        return None
    kind = col.kind
    if kind in ("int", "year"):
        if isinstance(value, bool) or not isinstance(value, int):
            raise Mismatch(f"{col.name} ({col.sql}): expected a JSON integer, found {value!r:.80}")
        if metadata == "NO_LOG" and col.unsigned and value < 0:
            return value + (1 << col.bits)  # no signedness in TABLE_MAP: the same bits read as signed
        return value
    if metadata == "NO_LOG" and kind in ("text", "json", "char", "binary", "inet4", "inet6", "uuid"):
        return _without_charset(col, value)
    if kind == "bit":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        return int.from_bytes(_bytes_of(value, col), "big")
    if kind in ("float", "double"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise Mismatch(f"{col.name} ({col.sql}): expected a JSON number, found {value!r:.80}")
        return float32(float(value)) if kind == "float" else float(value)
    if kind == "enum" and metadata != "FULL" and isinstance(value, int):
        return col.members[value - 1] if value else ""
    if kind == "set" and metadata != "FULL" and isinstance(value, int):
        return _members_to_set_text(col, value)
    if kind in ("decimal", "date", "time", "datetime", "timestamp", "text", "json", "enum", "set", "char"):
        if not isinstance(value, str):
            raise Mismatch(f"{col.name} ({col.sql}): expected a JSON string, found {value!r:.80}")
        if kind == "char":
            return value.rstrip(" ")
        if kind == "set":
            return _set_text(col, value)
        if kind == "decimal":
            _check_decimal_text(col, value)
        return value
    if kind in ("binary", "geometry", "inet4", "inet6", "uuid"):
        return _bytes_of(value, col)
    raise AssertionError(f"no binlake normalisation for kind {kind}")


def _without_charset(col: Column, value: Any) -> Any:
    """A character or binary column's value when TABLE_MAP has no charsets (binlog_row_metadata=NO_LOG): the
    decoder can not know the charset nor binary-ness, so its text (UTF-8, undecodable bytes as surrogate escapes)
    or hex is taken back to bytes and read as the column's own type."""
    if isinstance(value, str):
        raw = value.encode("utf-8", "surrogateescape")
    else:
        raw = _bytes_of(value, col)
    if col.kind in ("binary", "inet4", "inet6", "uuid"):
        return _pad(col, raw)
    try:
        text = raw.decode(PYTHON_CODECS[col.charset])
    except UnicodeDecodeError as exc:
        raise Mismatch(f"{col.name} ({col.sql}): bytes {raw[:40]!r} are not {col.charset}") from exc
    return text.rstrip(" ") if col.kind == "char" else text


def _check_decimal_text(col: Column, text: str) -> None:
    try:
        Decimal(text)
    except ArithmeticError as exc:
        raise Mismatch(f"{col.name}: {text!r} is not a decimal number") from exc


# -- mariadb-binlog -vv --------------------------------------------------------------------------------------------
def from_tool(col: Column, printed: ToolValue) -> Any:
    token = printed.token
    if token is None:
        return None
    kind = col.kind
    if printed.quoted:
        if kind in ("text", "json", "char"):
            text = token.decode(PYTHON_CODECS[col.charset])
            return text.rstrip(" ") if kind == "char" else text
        if kind in ("binary", "geometry", "inet4", "inet6", "uuid"):
            return _pad(col, token)  # the tool prints BINARY(n) with trailing 0x00 stripped, as stored in the row
        text = token.decode("ascii")
        if kind == "date":
            return text.replace(":", "-")  # the tool prints DATE as '2024:02:29'
        if kind in ("time", "datetime"):
            return text
        raise AssertionError(f"{col.name}: the tool quoted a {kind} value: {token[:40]!r}")
    text = token.decode("ascii")
    if kind == "int":
        signed, _, unsigned = text.partition(" (")
        return int(unsigned.rstrip(")")) if (col.unsigned and unsigned) else int(signed)
    if kind == "year":
        return 0 if text == "1900" else int(text)  # the tool prints YEAR 0 ('0000') as 1900
    if kind in ("bit", "set"):
        if not (text.startswith("b'") and text.endswith("'")):
            raise AssertionError(f"{col.name}: expected b'...', the tool printed {text!r}")
        digits = text[2:-1] or "0"
        if kind == "bit":
            return int(digits, 2)
        # a SET prints its storage bytes in order, each MSB first: the bitmap is little-endian by byte
        octets = bytes(int(digits[i : i + 8], 2) for i in range(0, len(digits), 8))
        return _members_to_set_text(col, int.from_bytes(octets, "little"))
    if kind == "enum":
        index = int(text)
        return col.members[index - 1] if index else ""
    if kind == "float":
        return PrintedFloat(text)
    if kind == "double":
        return float(text)
    if kind == "decimal":
        return text
    if kind == "timestamp":
        return _timestamp_text(text)
    raise AssertionError(f"{col.name}: unexpected unquoted {kind} value {text!r}")


def _timestamp_text(epoch_text: str) -> str:
    """The tool's ``seconds[.fraction]`` as the server's UTC text; 0 is MySQL's zero timestamp."""
    seconds, _, fraction = epoch_text.partition(".")
    if int(seconds) == 0:
        base = "0000-00-00 00:00:00"
    else:
        moment = datetime.datetime.fromtimestamp(int(seconds), datetime.timezone.utc)
        base = moment.strftime("%Y-%m-%d %H:%M:%S")
    return f"{base}.{fraction}" if fraction else base
