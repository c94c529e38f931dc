"""GTID sets as COM_BINLOG_DUMP_GTID carries them, and MariaDB GTID positions: the transport's errors over the one
GTID-set model, :mod:`binlake.binlog.gtid` (``Gtid_set::encode``; tagged format since MySQL 8.3)."""

from __future__ import annotations

from binlake.binlog.gtid import GtidSet, GtidSyntaxError, validate_mariadb_position
from binlake.transport.errors import SourceUriError


def encode_gtid_set(text: str) -> bytes:
    """The binary GTID set of ``Gtid_set::encode`` for COM_BINLOG_DUMP_GTID (sources sorted by uuid, then tag)."""
    try:
        gtids = GtidSet.parse(text)
    except GtidSyntaxError as exc:
        raise SourceUriError(exc.message) from None
    if gtids.mariadb_position():
        raise SourceUriError(f"GTID set {text!r}: MariaDB positions (domain-server-seq) are not MySQL GTIDs")
    return gtids.encode()


def validate_mariadb_gtid_pos(text: str) -> str:
    """Check a MariaDB GTID position (``0-1-100,1-2-7``) before it goes into ``SET @slave_connect_state``."""
    try:
        return validate_mariadb_position(text)
    except GtidSyntaxError as exc:
        raise SourceUriError(exc.message) from None
