"""QUERY_EVENT status variables: the client character set (``binlake.binlog.query_status``)."""

from __future__ import annotations

import struct

from binlake.binlog.query_status import client_collation

CHARSET = b"\x04" + struct.pack("<HHH", 8, 255, 45)


def test_found_after_the_variables_mysql_writes_before_it():
    flags2, sql_mode, catalog_nz, auto_inc = b"\x00" + bytes(4), b"\x01" + bytes(8), b"\x06\x03std", b"\x03" + bytes(4)
    assert client_collation(flags2 + sql_mode + catalog_nz + auto_inc + CHARSET + b"\x05\x03UTC") == 8
    assert client_collation(b"\x02\x03std\x00" + CHARSET) == 8  # the old NUL-terminated catalog


def test_absent_unknown_or_truncated_is_none():
    assert client_collation(b"") is None
    assert client_collation(b"\x00" + bytes(4)) is None
    assert client_collation(b"\x63\x01" + CHARSET) is None  # an unknown code: its length is unknown
    assert client_collation(CHARSET[:5]) is None
    assert client_collation(b"\x06") is None
