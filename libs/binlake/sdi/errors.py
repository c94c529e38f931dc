"""Errors of ``binlake.sdi``: every one names the file (when known) and what was expected versus found."""

from __future__ import annotations

from binlake.errors import BinlakeError


class SdiError(BinlakeError):
    """Base of all SDI errors."""


class SdiFormatError(SdiError):
    """An SDI JSON document is not valid JSON, lacks a required field (WL#7069 FR-03) or has a wrong type.

    ``field`` is the JSON path of the offending member, e.g. ``dd_object.columns[2].type``.
    """

    def __init__(self, source: str, field: str, message: str) -> None:
        self.source = source
        self.field = field
        super().__init__(f"{source or '<sdi>'}: {field}: {message}")


class TablespaceError(SdiError):
    """An ``.ibd`` tablespace cannot be read: corrupt, truncated, not MySQL 8.0+, or an unsupported layout.

    ``page_no`` is the page being read (None for file-level problems).
    """

    def __init__(self, source: str, page_no: int | None, message: str) -> None:
        self.source = source
        self.page_no = page_no
        where = f"page {page_no}: " if page_no is not None else ""
        super().__init__(f"{source or '<tablespace>'}: {where}{message}")


class ChecksumError(TablespaceError):
    """A page's stored checksums match none of crc32c, innodb, none (``BlockReporter::is_corrupted``)."""
