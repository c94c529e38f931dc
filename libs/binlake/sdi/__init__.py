"""MySQL serialized dictionary information (SDI, WL#7069): read, write, compare, map to binlog rows, register.

- :mod:`.model` -- typed SDI (``parse_sdi``), :mod:`.writer` -- back to JSON / ``ibd2sdi`` layout
- :mod:`.ibd` -- SDI records straight from ``.ibd`` pages; :mod:`.readers` -- any file format
- :mod:`.compare` -- schema diff; :mod:`.canonical` -- equality and fingerprints
- :mod:`.binlog_layout` -- ``table_schema`` and a binlog ``SchemaProvider``; :mod:`.registry` -- versions over time
"""

from binlake.sdi.binlog_layout import SdiSchemaProvider, check_table_map, table_schema
from binlake.sdi.canonical import definitions_equal, fingerprint
from binlake.sdi.compare import TableDiff, diff_tables
from binlake.sdi.errors import ChecksumError, SdiError, SdiFormatError, TablespaceError
from binlake.sdi.ibd import SdiRecord, TablespaceInfo, read_ibd_sdi
from binlake.sdi.model import (
    Column,
    ForeignKey,
    Index,
    Partition,
    Schema,
    SdiDocument,
    SdiHeader,
    Table,
    Tablespace,
    parse_sdi,
)
from binlake.sdi.readers import SdiEntry, read_entries
from binlake.sdi.registry import BinlogPosition, SchemaRegistry
from binlake.sdi.writer import to_ibd2sdi, to_json

__all__ = [
    "BinlogPosition",
    "ChecksumError",
    "Column",
    "ForeignKey",
    "Index",
    "Partition",
    "Schema",
    "SchemaRegistry",
    "SdiDocument",
    "SdiEntry",
    "SdiError",
    "SdiFormatError",
    "SdiHeader",
    "SdiRecord",
    "SdiSchemaProvider",
    "Table",
    "TableDiff",
    "Tablespace",
    "TablespaceError",
    "TablespaceInfo",
    "check_table_map",
    "definitions_equal",
    "diff_tables",
    "fingerprint",
    "parse_sdi",
    "read_entries",
    "read_ibd_sdi",
    "table_schema",
    "to_ibd2sdi",
    "to_json",
]
