"""Errors of ``binlake.binlog``: each says file, offset, event type, what was expected and what was found.

Decoders raise these (never IndexError/struct.error/KeyError/UnicodeDecodeError/zlib.error); the reader adds the
file name and the event's file offset on the way out (:meth:`BinlogError.located`).
"""

from __future__ import annotations

from binlake.errors import BinlakeError


class BinlogError(BinlakeError):
    """A binlog could not be read. ``offset`` is the file offset of the problem (the event's start or the byte)."""

    hint = ""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        offset: int | None = None,
        event_type: str | None = None,
        expected: object = None,
        found: object = None,
    ) -> None:
        self.message = message
        self.file = file
        self.offset = offset
        self.event_type = event_type
        self.expected = expected
        self.found = found
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.file is not None:
            where.append(str(self.file))
        if self.offset is not None:
            where.append(f"offset {self.offset}")
        if self.event_type is not None:
            where.append(self.event_type)
        text = (", ".join(where) + ": " if where else "") + self.message
        if self.expected is not None or self.found is not None:
            text += f" (expected {self.expected}, found {self.found})"
        if self.hint:
            text += f"; {self.hint}"
        return text

    def located(
        self, *, file: str | None = None, offset: int | None = None, event_type: str | None = None
    ) -> "BinlogError":
        """Point the error at an event: its file, its start offset and its type (a field offset found by the
        decoder stays in the message as ``byte N``); returns self."""
        if self.file is None and file is not None:
            self.file = file
        if offset is not None:
            if self.offset is not None and self.offset != offset:
                self.message += f" (at byte {self.offset})"
            self.offset = offset
        if self.event_type is None and event_type is not None:
            self.event_type = event_type
        self.args = (self._render(),)
        return self

    def __str__(self) -> str:
        return self._render()


class NotABinlogError(BinlogError):
    """The input does not start with the binlog magic ``\\xfebin`` (or its first event is not a start event)."""

    hint = "is this a MySQL/MariaDB binary log file?"


class TruncatedEventError(BinlogError):
    """An event (or a field inside one) ends before its declared length."""


class IncompleteEventError(TruncatedEventError):
    """The final event of the input is cut short: a file still being written, or a truncated copy."""

    hint = "the file may still be written to; read again later or pass a complete copy"
    exit_code = 3


class CorruptEventError(BinlogError):
    """An event's bytes do not follow its layout (bad length, bad field value)."""


class EventTooLargeError(CorruptEventError):
    """An event (or an event inside a TRANSACTION_PAYLOAD) is larger than the maximum event size."""

    hint = "raise the maximum event size (CLI: --max-event-size) if the server's max_allowed_packet allows it"


class ChecksumMismatchError(BinlogError):
    """An event's stored CRC32 differs from the CRC32 of its bytes."""

    hint = "the file is corrupt; pass verify_checksum=False (CLI: --no-verify-checksum) to read it anyway"


class EncryptedBinlogError(BinlogError):
    """MariaDB START_ENCRYPTION_EVENT: the events after it are encrypted and need the server's key."""

    hint = "decrypt it with the server (mariadb-binlog --read-from-remote-server) before reading it offline"


class StartPositionError(BinlogError):
    """A start position that is not an event start of the file: before the first event, inside the
    FORMAT_DESCRIPTION_EVENT, or past the end of the file."""


class UnknownTableError(BinlogError):
    """A rows event names a table id that no earlier TABLE_MAP_EVENT defined."""

    hint = "start reading at (or before) the transaction's TABLE_MAP_EVENT"


class UnsupportedError(BinlogError):
    """A valid structure binlake does not decode (e.g. an unknown compression algorithm)."""


class SchemaMismatchError(BinlogError):
    """A SchemaProvider knows the table but its definition does not fit the TABLE_MAP's column layout."""


class SchemaFileError(BinlogError):
    """A ``--schema`` file that can not be read as SDI or as a column list (binlake.sdi.schema_files)."""
