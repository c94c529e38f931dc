"""``mysql://`` as a transport of :func:`binlake.binlog.open_binlog` (WL#3283 ``create_transport``).

``open_binlog("mysql://repl@db1:3306/binlog.000042?server_id=4242")`` reads that one file from the live server
as a byte stream identical to the file (magic, FORMAT_DESCRIPTION_EVENT, events): up to its ROTATE, or up to the
end of the binlog when it is the growing file (a non-blocking dump). Without a file name: the oldest file.
"""

from __future__ import annotations

import io
from typing import BinaryIO

from binlake.binlog.constants import BINLOG_MAGIC, ROTATE_EVENT
from binlake.transport.client import ReplicationClient
from binlake.transport.errors import BinlogPurgedError
from binlake.transport.protocol import StreamEnd, is_fake_rotate, is_heartbeat
from binlake.transport.uri import MySQLSource, parse_mysql_uri


class BinlogFileStream(io.RawIOBase):
    """One server binlog file as a readable stream of its bytes (made-up events left out)."""

    def __init__(self, client: ReplicationClient, file: str) -> None:
        super().__init__()
        self._client = client
        self._file = file
        self._buffer = bytearray(BINLOG_MAGIC)
        self._done = False

    def readable(self) -> bool:
        return True

    def readinto(self, target: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self._buffer and not self._done:
            self._next()
        n = min(len(target), len(self._buffer))
        target[:n] = self._buffer[:n]
        del self._buffer[:n]
        return n

    def _next(self) -> None:
        item = self._client.read()
        if isinstance(item, StreamEnd):
            self._done = True
            return
        header = item.header
        if is_heartbeat(header):
            return
        if is_fake_rotate(header):
            if item.raw[19 + 8 :].startswith(self._file.encode()):
                return
            self._done = True  # the server moved on to the next file (this one ended without a ROTATE)
            return
        if header.log_pos == 0:
            return
        self._buffer += item.raw
        if header.type_code == ROTATE_EVENT:
            self._done = True

    def close(self) -> None:
        if not self.closed:
            self._client.close()
        super().close()


def open_mysql_binlog(uri: str) -> tuple[str, BinaryIO]:
    """Opener for ``binlake.binlog.register_transport("mysql", ...)``: (display name, stream of one file)."""
    source: MySQLSource = parse_mysql_uri(uri)
    client = ReplicationClient(source)
    try:
        client.connect()
        client.check_server(require_row_format=False)
        names = [f.name for f in client.list_binlogs()]
        file = source.binlog_file or (names[0] if names else "")
        if file not in names:
            raise BinlogPurgedError(
                f"{source.display()}: the server has no binlog {file!r} (it has {', '.join(names) or 'none'})"
            )
        client.start_dump(file, 4, non_block=True)
    except BaseException:
        client.close()
        raise
    display = f"{source.display().split('/?')[0]}/{file}"
    return display, io.BufferedReader(BinlogFileStream(client, file))
