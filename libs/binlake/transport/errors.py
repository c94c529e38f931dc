"""Errors of ``binlake.transport``: each says what went wrong on which server or landing file and what to do next.

``retryable`` marks the ones a fetcher may retry after a backoff (a dropped or refused connection); everything
else needs a person (credentials, privileges, server settings, purged binlogs, a landing folder that does not
match the server).
"""

from __future__ import annotations

from binlake.errors import BinlakeError


class TransportError(BinlakeError):
    """A binlog stream could not be opened or read from a server."""

    retryable = False


class ConnectionLostError(TransportError):
    """The server could not be reached or the connection dropped (possibly mid-event); safe to retry."""

    retryable = True


class ServerTimeoutError(TransportError):
    """The server accepted the connection but said nothing for ``read_timeout`` seconds while binlake signed on:
    not retried (a hung server or another service on the port does not get better by waiting again)."""


class AuthenticationError(TransportError):
    """The server refused the user name or password."""


class PrivilegeError(TransportError):
    """The user lacks REPLICATION SLAVE or REPLICATION CLIENT (MariaDB: BINLOG MONITOR)."""


class ServerConfigError(TransportError):
    """The server is set up in a way binlake can not use (binary log off, not ROW format, encrypted binlogs)."""


class BinlogPurgedError(TransportError):
    """The binlog file to continue from no longer exists on the server: events were lost to this fetcher."""


class ProtocolError(TransportError):
    """The server sent bytes that do not follow the replication protocol (or not what the request implied)."""


class SourceUriError(TransportError):
    """A ``mysql://`` source URI (or its password setting) is malformed or incomplete."""


class LandingError(TransportError):
    """The landing folder does not match what the server sends (another server, a reset binlog, a bad file)."""
