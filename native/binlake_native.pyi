"""Types of ``binlake_native``, binlake's native binlog decoder core and snapshot row reader
(``native/src/lib.rs``; Python front: ``binlake.binlog.native``, ``binlake.binlog.columnar`` and
``binlake.snapshot.server``). maturin ships this file with the module (and a ``py.typed``); mypy reads it from
here (``mypy_path`` in the repository's pyproject.toml). Keep it in step with ``lib.rs`` and ``API``."""

from typing import Any, Literal, TypedDict

API: Literal[6]

# What a source is: a file descriptor of the caller's own (``os.dup``), which the core closes, or a binlog's bytes.
_Source = int | bytes

class Options(TypedDict):
    """``binlake.binlog.native.options``: ``binlake.binlog.api.ReadOptions`` plus the names it reports with."""

    names: list[str]
    registered: list[int]
    verify_checksum: bool
    max_event_size: int
    start_position: int | None
    stop_at_incomplete: bool
    schema: bool

# A column of a ready batch: (name, type code, real type, metadata, unsigned, collation).
_Column = tuple[bytes, int, int, int, bool, int | None]
# The (schema, array) PyCapsules of one Arrow record batch (the Arrow C data interface).
_Capsules = tuple[Any, Any]
# (unknown event type -> count, [(db, table, assumptions)], the incomplete final event's error or None)
_Stats = tuple[dict[int, int], list[tuple[bytes, bytes, Any]], BaseException | None]

class Batches:
    """Columnar batches of one binlog, per table (``binlake.binlog.columnar.read_batches``)."""

    def __init__(self, src: _Source, options: Options, delegate: Any, temporal_text: bool, batch_rows: int) -> None: ...
    def next_batches(self) -> list[tuple[bytes, bytes, list[_Column], list[int] | None, _Capsules]] | None:
        """The next ready batches (db, table, columns, primary key, capsules); None at the end."""
    def stats(self) -> _Stats: ...

class BronzeRows:
    """The bronze rows of one chunk (``binlake.pipeline.bronze_native``), pulled as record batches."""

    def __init__(
        self,
        src: _Source,
        options: Options,
        delegate: Any,
        head: tuple[str, str, int, int, str, str],
        end: int | None,
        batch_rows: int,
    ) -> None:
        """``head``: (source, file name, file sequence, file size, SHA-256, ingest run); ``end``: ``ChunkTask.end``."""
    def next_batch(self) -> _Capsules | None:
        """The next batch of whole transactions' rows; None at the end. A decode error is raised after the rows of
        the transactions before it were handed on."""
    def image_facts(self) -> tuple[list[str], list[str]]:
        """(layout ids with an UPDATE whose after image lacks columns, layout ids with an after image holding a
        zero or invalid date), each sorted: what the rows rendered so far hold."""
    def counters(self) -> tuple[int, int, bool, int, int, list[tuple[str, int]], BaseException | None]:
        """(transactions, end of the last complete one, whether the input ended inside one, events read, unknown
        events, [(op, rows)] in first-seen order, the incomplete final event's error or None)."""

def rows_jsonl(
    src: _Source,
    options: Options,
    delegate: Any,
    fd: int,
    file_utf8: bytes,
    file_ascii: bytes,
    file_needs_ascii: bool,
) -> _Stats:
    """``binlake rows --format jsonl`` to the file descriptor ``fd``; returns what the read saw."""

class TextRows:
    """One MySQL text-protocol result set's rows read from PyMySQL's connection, typed as silver types them
    (``binlake.snapshot.server.ServerSession.read_native``)."""

    def __init__(
        self, rfile: Any, seq: int, columns: list[tuple[str, str]], key: bytes | None, last: list[int]
    ) -> None:
        """``rfile``: the connection's buffered reader after the column definitions; ``seq``: the next sequence
        number; ``columns``: (name, kind); ``key``: the fingerprint key; ``last``: the columns whose last values a
        batch gives."""
    @property
    def seq(self) -> int: ...
    def batch(
        self, max_rows: int, max_bytes: int
    ) -> tuple[_Capsules, int, list[int], int, int, list[bytes | None]] | None:
        """(capsules, rows, columns given as bytes, fingerprint halves, the last row's ``last`` values); None at
        the end."""

class ServerError(Exception):
    """An ERR packet in a result set: args (payload,)."""

class ProtocolError(Exception):
    """A result set that breaks the protocol: args (message, lost)."""
