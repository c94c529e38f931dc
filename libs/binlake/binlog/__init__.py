"""``binlake.binlog``: MySQL 5.0-9.x and MariaDB 10.x binary logs, read offline.

Decoders are pure functions of bytes (:mod:`.decoders`, :mod:`.rows`, :mod:`.columns`) behind one bounded
cursor; :mod:`.reader` turns a byte stream into :class:`~.events.BinlogEvent` values; :mod:`.api` adds URIs,
content handlers, transactions and row changes. The event model is in :mod:`.events`, errors in :mod:`.errors`.
"""

from binlake.binlog.api import (
    Binlog,
    ContentHandler,
    ReadOptions,
    RowChange,
    Transaction,
    apply_handlers,
    iter_row_changes,
    iter_transactions,
    open_binlog,
    register_transport,
    row_changes_of,
)
from binlake.binlog.errors import (
    BinlogError,
    ChecksumMismatchError,
    CorruptEventError,
    EncryptedBinlogError,
    EventTooLargeError,
    IncompleteEventError,
    NotABinlogError,
    SchemaMismatchError,
    StartPositionError,
    TruncatedEventError,
    UnknownTableError,
    UnsupportedError,
)
from binlake.binlog.events import ABSENT, BinlogEvent, EventHeader
from binlake.binlog.reader import ReadStats, read_events
from binlake.binlog.values import MysqlDate, MysqlDateTime, MysqlTime, MysqlTimestamp

__all__ = [
    "ABSENT",
    "Binlog",
    "BinlogError",
    "BinlogEvent",
    "ChecksumMismatchError",
    "ContentHandler",
    "CorruptEventError",
    "EncryptedBinlogError",
    "EventHeader",
    "EventTooLargeError",
    "IncompleteEventError",
    "MysqlDate",
    "MysqlDateTime",
    "MysqlTime",
    "MysqlTimestamp",
    "NotABinlogError",
    "ReadOptions",
    "ReadStats",
    "RowChange",
    "SchemaMismatchError",
    "StartPositionError",
    "Transaction",
    "TruncatedEventError",
    "UnknownTableError",
    "UnsupportedError",
    "apply_handlers",
    "iter_row_changes",
    "iter_transactions",
    "open_binlog",
    "read_events",
    "register_transport",
    "row_changes_of",
]
