"""MySQL JSON path expressions: parse and print (sql-common/json_path.cc, ``parse_path`` / ``Json_path::to_string``).

Grammar: ``$`` followed by legs: ``.name`` or ``."quoted name"`` or ``.*``, ``[n]`` / ``[last]`` /
``[last-n]`` / ``[m to n]`` / ``[*]``, and ``**`` (never last). Whitespace is allowed between legs. Diffs in the
binlog use only member and array-cell legs; the others parse so that a diff naming one is rejected as MySQL does.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from json.encoder import encode_basestring

from binlake.mysqljson.errors import JsonPathSyntaxError

SCOPE = "$"
_WHITESPACE = " \t\n\v\f\r"  # my_isspace of utf8mb4


class LegType(enum.IntEnum):
    """``enum_json_path_leg_type``."""

    MEMBER = 0
    ARRAY_CELL = 1
    ARRAY_RANGE = 2
    MEMBER_WILDCARD = 3
    ARRAY_CELL_WILDCARD = 4
    ELLIPSIS = 5


@dataclass(frozen=True, slots=True)
class ArrayIndex:
    """An array index as written: ``n`` or ``last-n`` (``from_end``)."""

    offset: int
    from_end: bool = False

    def position(self, size: int) -> tuple[int, bool]:
        """``Json_array_index`` for an array of ``size``: (position, within bounds).

        Out of bounds, a forward index clamps to ``size`` (append) and ``last-N`` to 0 (prepend).
        """
        within = self.offset < size
        if self.from_end:
            return (size - 1 - self.offset if within else 0), within
        return (self.offset if within else size), within

    def __str__(self) -> str:
        if not self.from_end:
            return str(self.offset)
        return "last" if self.offset == 0 else f"last-{self.offset}"


@dataclass(frozen=True, slots=True)
class PathLeg:
    """One leg of a path (``Json_path_leg``)."""

    type: LegType
    member: str | None = None
    index: ArrayIndex | None = None
    range_end: ArrayIndex | None = None

    def __str__(self) -> str:
        if self.type == LegType.MEMBER:
            name = self.member or ""
            return "." + (name if is_ecmascript_identifier(name) else encode_basestring(name))
        if self.type == LegType.ARRAY_CELL:
            return f"[{self.index}]"
        if self.type == LegType.ARRAY_RANGE:
            return f"[{self.index} to {self.range_end}]"
        if self.type == LegType.MEMBER_WILDCARD:
            return ".*"
        if self.type == LegType.ARRAY_CELL_WILDCARD:
            return "[*]"
        return "**"


def member(name: str) -> PathLeg:
    return PathLeg(LegType.MEMBER, member=name)


def cell(index: int, from_end: bool = False) -> PathLeg:
    return PathLeg(LegType.ARRAY_CELL, index=ArrayIndex(index, from_end))


@dataclass(frozen=True, slots=True)
class JsonPath:
    """A parsed path; ``str(path)`` prints MySQL's form (``$.a."b c"[3]``)."""

    legs: tuple[PathLeg, ...] = ()

    def __str__(self) -> str:
        return SCOPE + "".join(str(leg) for leg in self.legs)

    def __repr__(self) -> str:
        return f"JsonPath({str(self)!r})"


_ASCII_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_ASCII_DIGITS = frozenset("0123456789")
_CONNECTOR_PUNCTUATION = frozenset((0x5F, 0x203F, 0x2040, 0x2054, 0xFE33, 0xFE34, 0xFE4D, 0xFE4E, 0xFE4F, 0xFF3F))


def _is_letter(codepoint: int) -> bool:
    """json_path.cc ``is_letter``: ``my_isalpha`` of utf8mb4's ctype table sees only the low byte of the code
    point (bytes 0x80-0xFF count as letters), and U+0300-U+036F are excluded."""
    if 0x300 <= codepoint <= 0x36F:
        return False
    low = codepoint & 0xFF
    return low >= 0x80 or chr(low) in _ASCII_LETTERS


def is_ecmascript_identifier(name: str) -> bool:
    """json_path.cc ``is_ecmascript_identifier``: may the member name be printed (and parsed) unquoted?"""
    if not name:
        return False
    for index, char in enumerate(name):
        codepoint = ord(char)
        if _is_letter(codepoint) or char == "$" or char == "_":
            continue
        if index == 0:
            return False
        if 0x300 <= codepoint <= 0x36F or chr(codepoint & 0xFF) in _ASCII_DIGITS:
            continue
        if codepoint in _CONNECTOR_PUNCTUATION or codepoint in (0x200C, 0x200D):
            continue
        return False
    return True


def parse_path(text: str | bytes) -> JsonPath:
    """Parse MySQL path syntax; :class:`JsonPathSyntaxError` with the character position on bad input."""
    if isinstance(text, (bytes, bytearray, memoryview)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonPathSyntaxError(f"invalid UTF-8 ({exc.reason})", repr(bytes(text)), exc.start) from None
    return _PathParser(text).parse()


class _PathParser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def error(self, message: str) -> JsonPathSyntaxError:
        return JsonPathSyntaxError(message, self.text, self.pos)

    def skip_ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in _WHITESPACE:
            self.pos += 1

    def parse(self) -> JsonPath:
        self.skip_ws()
        if not self.text.startswith(SCOPE, self.pos):
            raise self.error("a path must start with '$'")
        self.pos += 1
        legs: list[PathLeg] = []
        while True:
            self.skip_ws()
            if self.pos >= len(self.text):
                break
            char = self.text[self.pos]
            if char == ".":
                legs.append(self.member_leg())
            elif char == "[":
                legs.append(self.array_leg())
            elif self.text.startswith("**", self.pos):
                self.pos += 2
                if self.text.startswith("*", self.pos):
                    raise self.error("'***' is not allowed")
                legs.append(PathLeg(LegType.ELLIPSIS))
            else:
                raise self.error(f"unexpected {char!r}")
        if legs and legs[-1].type == LegType.ELLIPSIS:
            raise self.error("a path cannot end with '**'")
        return JsonPath(tuple(legs))

    def member_leg(self) -> PathLeg:
        self.pos += 1
        self.skip_ws()
        if self.pos >= len(self.text):
            raise self.error("a member name must follow '.'")
        char = self.text[self.pos]
        if char == "*":
            self.pos += 1
            return PathLeg(LegType.MEMBER_WILDCARD)
        if char == '"':
            end = self.end_of_quoted(self.pos)
            name = self.unescape(self.text[self.pos : end])
            self.pos = end
            return member(name)
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] not in ".[*" + _WHITESPACE:
            self.pos += 1
        name = self.text[start : self.pos]
        if "\\" in name or '"' in name:
            name = self.unescape('"' + name + '"')  # an unquoted name may hold escapes too
        if not is_ecmascript_identifier(name):
            raise self.error(f"{name!r} is not a valid unquoted member name (quote it)")
        return member(name)

    def end_of_quoted(self, start: int) -> int:
        """``find_end_of_member_name``: just after the next unescaped double quote (or the end)."""
        pos = start + 1
        while pos < len(self.text):
            char = self.text[pos]
            pos += 1
            if char == "\\":
                pos += 1
            elif char == '"':
                return pos
        return len(self.text)

    def unescape(self, quoted: str) -> str:
        """The member name of a quoted JSON string, as ``parse_name_with_rapidjson``."""
        try:
            name = json.loads(quoted)
        except json.JSONDecodeError:
            raise self.error("invalid quoted member name") from None
        if type(name) is not str:
            raise self.error("invalid quoted member name")
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            raise self.error("invalid surrogate escape in member name") from None
        return name

    def array_leg(self) -> PathLeg:
        self.pos += 1
        self.skip_ws()
        if self.text.startswith("*", self.pos):
            self.pos += 1
            self.skip_ws()
            self.expect("]")
            return PathLeg(LegType.ARRAY_CELL_WILDCARD)
        first = self.array_index()
        self.skip_ws()
        if (
            self.text.startswith("to", self.pos)
            and self.text[self.pos - 1] in _WHITESPACE
            and self.text[self.pos + 2 : self.pos + 3] in tuple(_WHITESPACE)
            and self.pos + 3 < len(self.text)
        ):
            self.pos += 3
            self.skip_ws()
            last = self.array_index()
            self.skip_ws()
            self.expect("]")
            if first.from_end == last.from_end and (
                (not first.from_end and first.offset > last.offset) or (first.from_end and first.offset < last.offset)
            ):
                raise self.error("array range start is after its end")
            return PathLeg(LegType.ARRAY_RANGE, index=first, range_end=last)
        self.expect("]")
        return PathLeg(LegType.ARRAY_CELL, index=first)

    def array_index(self) -> ArrayIndex:
        if self.text.startswith("last", self.pos):
            self.pos += 4
            save = self.pos
            self.skip_ws()
            if self.text.startswith("-", self.pos):
                self.pos += 1
                self.skip_ws()
                return ArrayIndex(self.number(), from_end=True)
            self.pos = save
            return ArrayIndex(0, from_end=True)
        return ArrayIndex(self.number())

    def number(self) -> int:
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] in "0123456789":
            self.pos += 1
        if start == self.pos:
            raise self.error("an array index must be a non-negative integer, 'last' or 'last-N'")
        value = int(self.text[start : self.pos])
        if value > 0xFFFFFFFF:
            self.pos = start
            raise self.error("array index out of range")
        return value

    def expect(self, token: str) -> None:
        if not self.text.startswith(token, self.pos):
            raise self.error(f"expected {token!r}")
        self.pos += len(token)
