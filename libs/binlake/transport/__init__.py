"""Binlog transports (WL#3283 "transports by URI"): a live server as a binlog source.

``mysql://user@host:port/?server_id=N`` names a MySQL or MariaDB server read with the replication protocol:
:class:`ReplicationClient` (sign-on and raw stream), :func:`fetch` (the server's files, byte for byte, into a
landing folder, resumable; ``binlake fetch``) and :func:`open_mysql_binlog`, registered as binlake.binlog's
``mysql`` URI transport so that ``open_binlog("mysql://...")`` reads one server file live.
"""

from __future__ import annotations

from binlake.binlog.api import register_transport
from binlake.transport.client import BinlogFile, ReplicationClient, ServerInfo
from binlake.transport.errors import (
    AuthenticationError,
    BinlogPurgedError,
    ConnectionLostError,
    LandingError,
    PrivilegeError,
    ProtocolError,
    ServerConfigError,
    ServerTimeoutError,
    SourceUriError,
    TransportError,
)
from binlake.transport.fetcher import FetchOptions, FetchResult, StopFetch, fetch
from binlake.transport.landing import MANIFEST_NAME, Manifest
from binlake.transport.protocol import StreamEnd, StreamEvent
from binlake.transport.stream import open_mysql_binlog
from binlake.transport.uri import MySQLSource, parse_mysql_uri

register_transport("mysql", open_mysql_binlog)

__all__ = [
    "MANIFEST_NAME",
    "AuthenticationError",
    "BinlogFile",
    "BinlogPurgedError",
    "ConnectionLostError",
    "FetchOptions",
    "FetchResult",
    "LandingError",
    "Manifest",
    "MySQLSource",
    "PrivilegeError",
    "ProtocolError",
    "ReplicationClient",
    "ServerConfigError",
    "ServerInfo",
    "ServerTimeoutError",
    "SourceUriError",
    "StopFetch",
    "StreamEnd",
    "StreamEvent",
    "TransportError",
    "fetch",
    "open_mysql_binlog",
    "parse_mysql_uri",
]
