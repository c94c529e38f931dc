"""Errors of ``binlake.mysqljson``: corrupt or truncated binary JSON and diffs, bad paths, too-deep documents."""

from __future__ import annotations

from binlake.errors import BinlakeError


class JsonError(BinlakeError):
    """Base of every error this package raises."""


class JsonDecodeError(JsonError):
    """Bytes that are not valid MySQL binary JSON (or a valid diff vector).

    ``offset`` is the byte offset inside the decoded buffer where the problem was found.
    """

    def __init__(self, message: str, offset: int | None = None) -> None:
        self.offset = offset
        where = f" at offset {offset}" if offset is not None else ""
        super().__init__(f"{message}{where}")


class JsonTruncatedError(JsonDecodeError):
    """The value needs more bytes than the buffer holds."""


class JsonCorruptError(JsonDecodeError):
    """A field holds a value the format does not allow (bad type byte, offset out of range, bad UTF-8...)."""


class JsonDiffCorruptError(JsonCorruptError):
    """A partial-update cell (Json_diff_vector binary) is malformed, as ER_CORRUPTED_JSON_DIFF."""


class JsonDepthError(JsonError):
    """The document nests deeper than JSON_DOCUMENT_MAX_DEPTH (100), as ER_JSON_DOCUMENT_TOO_DEEP."""


class JsonPathSyntaxError(JsonError):
    """Text that is not a MySQL JSON path (ER_INVALID_JSON_PATH); ``position`` is the character index."""

    def __init__(self, message: str, text: str, position: int) -> None:
        self.text = text
        self.position = position
        super().__init__(f"invalid JSON path {text!r} at character {position}: {message}")


class JsonTextSyntaxError(JsonError):
    """Text that is not a JSON document (ER_INVALID_JSON_TEXT); ``position`` is the character index."""

    def __init__(self, message: str, position: int) -> None:
        self.position = position
        super().__init__(f"invalid JSON text at character {position}: {message}")


class JsonEncodeError(JsonError):
    """A Python value that has no MySQL binary JSON form (unsupported type, key over 65535 bytes, ...)."""
