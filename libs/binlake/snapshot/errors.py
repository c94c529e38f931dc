"""Errors of ``binlake.snapshot``: each names the server, table or snapshot folder and says what to do next."""

from __future__ import annotations

from binlake.errors import BinlakeError


class SnapshotError(BinlakeError):
    """Base of the snapshot's errors. ``retryable``: rerunning may succeed by itself (and resumes)."""

    retryable = False


class ServerUnreachableError(SnapshotError):
    """The server could not be reached, or the connection dropped (rerun: the snapshot resumes)."""

    retryable = True


class SnapshotAccessError(SnapshotError):
    """The server refused the user, its password or a privilege the snapshot needs (docs/SNAPSHOT.md)."""


class SnapshotServerError(SnapshotError):
    """The server can not give a consistent snapshot with a binlog position (binary log off, a table in an
    engine without consistent reads, a version binlake does not know)."""


class UnknownTableError(SnapshotError):
    """``--include`` names a table the server does not have (or no table matches at all)."""


class TableChangedError(SnapshotError):
    """A table's definition changed (DDL) while the snapshot read it (rerun: that table is read anew)."""

    retryable = True


class SnapshotStateError(SnapshotError):
    """The snapshot folder is unusable: an unreadable manifest, another snapshot running, an unfinished
    snapshot of other tables."""


class SnapshotAnswerError(SnapshotServerError):
    """The server answered a snapshot statement with something that statement can not return (a missing row or
    column, NULL or text where a number belongs, an impossible binlog position, a column named twice): a damaged
    or hostile server. Nothing of the snapshot is marked complete."""


class InvalidSnapshotError(SnapshotStateError):
    """A complete snapshot's manifest holds what no server gives (an impossible position, a column twice, a key of
    no column): it can not seed silver. Its source stops with this line; the other sources load."""
