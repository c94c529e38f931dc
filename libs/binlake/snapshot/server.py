"""The snapshot's one connection to the server: flavor, the consistent view and its binlog position, table
definitions, and reads of key ranges (streamed, server-side cursor).

The position is taken with the least locking each server allows (docs/SNAPSHOT.md):

- MariaDB: no lock. ``START TRANSACTION WITH CONSISTENT SNAPSHOT`` and then ``SHOW STATUS LIKE
  'binlog_snapshot_%'``: the binlog file and offset at which the transaction's read view is exact (MariaDB
  takes them at the same instant as the view, under its group-commit lock); ``BINLOG_GTID_POS(file, offset)``
  gives the GTID position there.
- MySQL: no status variable ties a read view to a binlog position, and ``performance_schema.log_status`` or
  ``LOCK INSTANCE FOR BACKUP`` do not stop commits, so they can not either. The brief global read lock
  (``FLUSH TABLES WITH READ LOCK``) is held only while the transaction opens its view and ``SHOW BINARY LOG
  STATUS`` (``SHOW MASTER STATUS`` before 8.2) reads file, offset and ``Executed_Gtid_Set``; then released.

Only InnoDB tables take part in a consistent read: a table in another engine is refused.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional, Sequence

import pymysql
import pymysql.connections
import pymysql.converters
import pymysql.cursors
import pymysql.err

from binlake.pipeline.filters import TableFilter
from binlake.snapshot import answers as A
from binlake.snapshot.columns import ColumnReader, column_reader, quote_name
from binlake.snapshot.errors import (
    ServerUnreachableError,
    SnapshotAccessError,
    SnapshotAnswerError,
    SnapshotError,
    SnapshotServerError,
    TableChangedError,
    UnknownTableError,
)
from binlake.snapshot.manifest import KeyValue, Position
from binlake.snapshot.validate import key_problem
from binlake.transport.auth import auth_plugin_map
from binlake.transport.uri import MySQLSource

SYSTEM_SCHEMAS = ("mysql", "information_schema", "performance_schema", "sys")
TRANSACTIONAL_ENGINES = frozenset({"innodb"})
LOCK_WAIT_TIMEOUT_S = 60  # MySQL: how long FLUSH TABLES WITH READ LOCK may wait for running queries
MIN_READ_TIMEOUT_S = 300.0
BATCH_BYTES = 16 << 20  # a read batch ends once its values hold this much (wide rows: fewer rows)
GRANTS = {
    "mariadb": "GRANT SELECT ON <db>.* TO {user}",
    "mysql": "GRANT SELECT ON <db>.* TO {user}; GRANT RELOAD, REPLICATION CLIENT ON *.* TO {user}",
}

# server error codes (include/mysqld_error.h, errmsg.h)
ER_DBACCESS_DENIED = 1044
ER_ACCESS_DENIED = 1045
ER_TABLEACCESS_DENIED = 1142
ER_COLUMNACCESS_DENIED = 1143
ER_SPECIFIC_ACCESS_DENIED = 1227
ER_NO_SUCH_TABLE = 1146
ER_BAD_FIELD = 1054
ER_PARSE_ERROR = 1064
ER_LOCK_WAIT_TIMEOUT = 1205
ER_TABLE_DEF_CHANGED = 1412
_DENIED = frozenset({ER_DBACCESS_DENIED, ER_TABLEACCESS_DENIED, ER_COLUMNACCESS_DENIED, ER_SPECIFIC_ACCESS_DENIED})
_LOST = frozenset({2002, 2003, 2006, 2013, 2055, 1053, 1927})

# decoders off (values come back as the server's text, binary columns as bytes), the default encoders kept
_ENCODERS_ONLY = {k: v for k, v in pymysql.converters.conversions.items() if not isinstance(k, int)}

Connector = Callable[..., Any]


@dataclass(frozen=True, slots=True)
class ServerInfo:
    flavor: str  # "mysql" | "mariadb"
    version: str
    server_id: int

    def to_json(self, uri: str) -> dict[str, Any]:
        return {"flavor": self.flavor, "version": self.version, "server_id": self.server_id, "uri": uri}


@dataclass(frozen=True, slots=True)
class TableDef:
    """A table as the server describes it: readers per column, key, engine, CREATE TABLE text."""

    db: str
    table: str
    engine: str
    readers: tuple[ColumnReader, ...]
    primary_key: tuple[str, ...]
    create_table: str
    approx_rows: int

    @property
    def name(self) -> str:
        return f"{self.db}.{self.table}"

    @property
    def key_readers(self) -> tuple[ColumnReader, ...]:
        by_name = {r.name: r for r in self.readers}
        return tuple(by_name[k] for k in self.primary_key)

    @property
    def chunked(self) -> bool:
        """Read in primary-key chunks: a key whose every column orders and compares reliably."""
        return bool(self.primary_key) and all(r.keyset for r in self.key_readers)


class ServerSession:
    """One connection, one consistent view at a time. Not thread-safe."""

    def __init__(self, source: MySQLSource, *, connector: Connector = pymysql.connect) -> None:
        self.source = source
        self._connector = connector
        self._conn: Any = None
        self.info: Optional[ServerInfo] = None

    # -- connection ------------------------------------------------------------------------------------------
    def connect(self) -> ServerInfo:
        src = self.source
        try:
            self._conn = self._connector(
                host=src.host,
                port=src.port,
                user=src.user,
                password=src.password() or "",
                connect_timeout=src.connect_timeout_s,
                read_timeout=max(src.read_timeout_s, MIN_READ_TIMEOUT_S),
                ssl=src.pymysql_ssl(),
                charset="utf8mb4",
                autocommit=True,
                conv=dict(_ENCODERS_ONLY),
                init_command="SET time_zone = '+00:00'",
                auth_plugin_map=auth_plugin_map(src),
            )
        except pymysql.err.MySQLError as exc:
            raise self._error(exc, "connecting") from None
        what = "reading the server version"
        version, server_id = A.row(self.query_one("SELECT VERSION(), @@server_id", what=what), 2, self.where, what)
        version = A.text(version, self.where, what)
        flavor = "mariadb" if "mariadb" in version.lower() else "mysql"
        self.info = ServerInfo(flavor, version, A.integer(server_id, self.where, what, high=0xFFFFFFFF))
        major_minor = _version_tuple(version)
        if major_minor < ((10, 5) if flavor == "mariadb" else (8, 0)):
            raise SnapshotServerError(
                f"{self.where}: {version} is too old; binlake snapshot reads MySQL 8.0+ and MariaDB 10.5+"
            )
        (log_bin,) = A.row(self.query_one("SELECT @@log_bin", what="reading log_bin"), 1, self.where, "reading log_bin")
        if str(log_bin).upper() not in ("1", "ON"):
            raise SnapshotServerError(
                f"{self.where}: the binary log is off (log_bin=0), so a snapshot has no "
                "position to continue from; start the server with --log-bin "
                "--binlog-format=ROW --server-id=N"
            )
        # the server may wait long for a slow client while a chunk streams (the Parquet writer)
        self.execute("SET SESSION net_write_timeout = 600")
        return self.info

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 -- closing a dead connection: nothing to report
                pass

    @property
    def where(self) -> str:
        return self.source.display()

    # -- the consistent view ---------------------------------------------------------------------------------
    def open_view(self) -> tuple[Position, str]:
        """Start the consistent read; (its binlog position, how it was taken)."""
        info = self._info()
        if info.flavor == "mariadb":
            self.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            self.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
            what = "reading binlog_snapshot_file"
            status = {
                A.text(name, self.where, what): value
                for name, value in (
                    A.row(r, 2, self.where, what) for r in self.query("SHOW STATUS LIKE 'binlog_snapshot%%'", what=what)
                )
            }
            file, pos = status.get("Binlog_snapshot_file") or "", status.get("Binlog_snapshot_position")
            if not file or pos is None:
                raise SnapshotServerError(
                    f"{self.where}: the server gives no binlog_snapshot_file; is the binary log on?"
                )
            at = A.position(file, pos, None, self.where, what)
            what = "reading the GTID position"
            (gtid,) = A.row(
                self.query_one("SELECT BINLOG_GTID_POS(%s, %s)", (at.file, at.pos), what=what), 1, self.where, what
            )
            return (
                A.position(at.file, at.pos, gtid, self.where, what),
                "mariadb binlog_snapshot_file/position (no lock)",
            )
        self.execute(f"SET SESSION lock_wait_timeout = {LOCK_WAIT_TIMEOUT_S}")
        self.execute("FLUSH TABLES WITH READ LOCK")
        try:
            self.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            self.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
            try:
                rows = self.query("SHOW BINARY LOG STATUS", what="reading the binlog position", dicts=True)
            except _ParseError:
                rows = self.query("SHOW MASTER STATUS", what="reading the binlog position", dicts=True)
        finally:
            self.execute("UNLOCK TABLES")
        if not rows:
            raise SnapshotServerError(f"{self.where}: SHOW BINARY LOG STATUS is empty: the binary log is off")
        row, what = rows[0], "reading the binlog position (SHOW BINARY LOG STATUS)"
        gtid = (A.text(row.get("Executed_Gtid_Set"), self.where, what, null=True) or "").replace("\n", "") or None
        return (
            A.position(
                A.member(row, "File", self.where, what),
                A.member(row, "Position", self.where, what),
                gtid,
                self.where,
                what,
            ),
            "mysql FLUSH TABLES WITH READ LOCK (brief)",
        )

    def end_view(self) -> None:
        self.execute("COMMIT")

    # -- tables ----------------------------------------------------------------------------------------------
    def list_tables(self, tables: TableFilter) -> list[tuple[str, str]]:
        """(db, table) of the base tables the filter keeps, in name order; an ``--include`` without wildcards
        that names no table is an error, and so is a selection of no table."""
        found = self.query(
            "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE' "
            f"AND TABLE_SCHEMA NOT IN ({', '.join(['%s'] * len(SYSTEM_SCHEMAS))}) ORDER BY TABLE_SCHEMA, TABLE_NAME",
            SYSTEM_SCHEMAS,
            what="listing tables",
        )
        found = [
            tuple(A.text(v, self.where, "listing tables") for v in A.row(r, 2, self.where, "listing tables"))
            for r in found
        ]
        kept = [(db, t) for db, t in found if tables.keeps(db, t)]
        names = {f"{db}.{t}" for db, t in kept}
        for pattern in tables.include:
            if not any(ch in pattern for ch in "*?[") and pattern not in names and tables.keeps(*pattern.split(".")):
                self._explain_missing(*pattern.split("."))
        if not kept:
            raise UnknownTableError(
                f"{self.where}: no table matches --include {' '.join(tables.include) or '*.*'}"
                + (f" --exclude {' '.join(tables.exclude)}" if tables.exclude else "")
                + "; check the patterns (db.table, wildcards * and ?) and the user's SELECT grants"
            )
        return kept

    def _explain_missing(self, db: str, table: str) -> None:
        try:
            self.query(f"SHOW CREATE TABLE {quote_name(db)}.{quote_name(table)}", what=f"looking for {db}.{table}")
        except SnapshotAccessError:
            raise
        except SnapshotError:
            raise UnknownTableError(
                f"{self.where}: table {db}.{table} (--include) does not exist; check the name "
                "(db.table, case as on the server)"
            ) from None
        raise UnknownTableError(
            f"{self.where}: {db}.{table} is not a base table (a view or a sequence); drop it from --include"
        )

    def describe(self, db: str, table: str) -> TableDef:
        """The table's columns (with their readers), primary key, engine and CREATE TABLE text, as of now;
        :class:`UnknownTableError` when it does not exist (any more)."""
        where = f"{self.where} {db}.{table}"
        found = self.query(
            "SELECT ENGINE, TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
            (db, table),
            what=f"looking up {db}.{table}",
        )
        if not found:
            raise UnknownTableError(f"{where}: the table does not exist (any more)")
        what = f"looking up {db}.{table}"
        engine, approx_rows = A.row(found[0], 2, where, what)
        engine = A.text(engine, where, what, null=True) or ""
        approx_rows = A.integer(approx_rows, where, what, null=0)
        if engine.lower() not in TRANSACTIONAL_ENGINES:
            raise SnapshotServerError(
                f"{where}: the table's engine is {engine or 'unknown'}, which has no consistent"
                f" read; convert it to InnoDB or leave it out (--exclude {db}.{table})"
            )
        cols = self.query(
            "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, CHARACTER_SET_NAME, COLLATION_NAME, "
            "NUMERIC_PRECISION, NUMERIC_SCALE, DATETIME_PRECISION FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
            (db, table),
            what=f"reading the columns of {db}.{table}",
            dicts=True,
        )
        what = "information_schema.COLUMNS"
        A.column_names([A.text(A.member(c, "COLUMN_NAME", where, what), where, what) for c in cols], where)
        try:
            readers = tuple(column_reader(c, where=where) for c in cols)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise SnapshotAnswerError(
                f"{where}: {what}: a column's description is not what the server returns "
                f"({type(exc).__name__}: {str(exc)[:120]})"
            ) from None
        what = f"reading the keys of {db}.{table}"
        index = self.query(f"SHOW INDEX FROM {quote_name(db)}.{quote_name(table)}", what=what, dicts=True)
        try:
            key = primary_key(index)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise SnapshotAnswerError(
                f"{where}: {what}: SHOW INDEX returned rows without the expected columns "
                f"({type(exc).__name__}: {str(exc)[:120]})"
            ) from None
        reason = key_problem(key, [r.name for r in readers])
        if reason is not None:
            raise SnapshotAnswerError(f"{where}: {what}: {reason}")
        what = f"reading the definition of {db}.{table}"
        (_, create) = A.row(
            self.query_one(f"SHOW CREATE TABLE {quote_name(db)}.{quote_name(table)}", what=what), 2, where, what
        )
        return TableDef(db, table, engine, readers, key, A.text(create, where, what), approx_rows)

    # -- reads -----------------------------------------------------------------------------------------------
    def read(
        self,
        t: TableDef,
        lo: Optional[Sequence[KeyValue]],
        hi: Optional[Sequence[KeyValue]],
        limit: Optional[int],
        batch_rows: int,
        batch_bytes: int = BATCH_BYTES,
    ) -> Iterator[list[tuple]]:
        """Rows of ``t`` with key in ``(lo, hi]`` in key order (all rows when the table is not chunked), at most
        ``limit``, streamed in batches of at most ``batch_rows`` rows that end once they hold ``batch_bytes`` of
        values (a server-side cursor: memory holds one batch, however wide its rows)."""
        what = f"reading {t.name}"
        cursor = self._conn.cursor(pymysql.cursors.SSCursor)
        try:
            self._run(cursor, *_select(t, lo, hi, limit), what)
            while True:
                try:
                    batch = _fetch_batch(cursor, batch_rows, batch_bytes)
                except pymysql.err.MySQLError as exc:
                    raise self._error(exc, what) from None
                if not batch:
                    return
                held = [batch]
                del batch  # the caller holds the batch alone: it frees each part once converted
                yield held.pop()
        finally:
            result = cursor._result
            if result is not None and self._conn._sock is None:  # the connection dropped: nothing left to read
                result.unbuffered_active = False
            try:
                cursor.close()  # reads what is left of an abandoned result
            except pymysql.err.MySQLError:
                pass

    def native_reader(self) -> Any:
        """The native core when this session's connection is PyMySQL's own (the native reader reads its socket),
        else None (no core built, ``BINLAKE_NATIVE=0``, or another connection object)."""
        from binlake.binlog.native import load

        return load() if isinstance(self._conn, pymysql.connections.Connection) else None

    def read_native(
        self,
        t: TableDef,
        lo: Optional[Sequence[KeyValue]],
        hi: Optional[Sequence[KeyValue]],
        limit: Optional[int],
        batch_rows: int,
        key: str,
        native: Any,
        batch_bytes: int = BATCH_BYTES,
    ) -> Iterator[tuple[Any, dict[int, list[Any]], int, tuple[int, int], list[Any]]]:
        """``read``'s rows through the native reader (``binlake_native.TextRows``), in batches: (Arrow record
        batch of silver values, the values of the columns it did not type as PyMySQL gives them by index, rows,
        the fingerprint halves of its rows XORed, the last row's key as PyMySQL gives it)."""
        import pyarrow as pa

        from binlake.binlog.columnar import ArrowCapsules

        what = f"reading {t.name}"
        cursor = self._conn.cursor(pymysql.cursors.SSCursor)
        result = None
        try:
            self._run(cursor, *_select(t, lo, hi, limit), what)
            result = cursor._result
            encodings = [encoding for encoding, _ in result.converters]
            if len(encodings) != len(t.readers):
                raise SnapshotAnswerError(
                    f"{self.where}: {what}: expected rows of {len(t.readers)} value(s) "
                    f"({', '.join(r.name for r in t.readers)[:120]}), the server returned {len(encodings)} column(s)"
                )
            kinds, names = native_kinds(t.readers, encodings), [r.name for r in t.readers]
            key_at = [names.index(k) for k in t.primary_key]
            rows = native.TextRows(self._conn._rfile, self._conn._next_seq_id, kinds, key.encode(), key_at)
            while True:
                try:
                    got = rows.batch(batch_rows, batch_bytes)
                except native.ServerError as exc:
                    result.unbuffered_active = False  # an ERR packet ends the result
                    try:
                        pymysql.err.raise_mysql_exception(exc.args[0])
                    except pymysql.err.MySQLError as error:
                        raise self._error(error, what) from None
                except native.ProtocolError as exc:
                    message, lost = exc.args
                    if lost:
                        raise self._error(pymysql.err.OperationalError(2013, message), what) from None
                    raise SnapshotAnswerError(f"{self.where}: {what}: {message}") from None
                except OSError as exc:
                    raise self._error(pymysql.err.OperationalError(2013, str(exc)), what) from None
                if got is None:
                    result.unbuffered_active, result.connection = False, None
                    self._conn._next_seq_id = rows.seq
                    return
                capsules, count, raw, a, b, last = got
                batch = pa.record_batch(ArrowCapsules(capsules))
                try:
                    untyped = {i: [as_pymysql(v, encodings[i]) for v in batch.column(i).to_pylist()] for i in raw}
                    last = [as_pymysql(v, encodings[i]) for v, i in zip(last, key_at)]
                except UnicodeDecodeError as exc:
                    raise SnapshotAnswerError(
                        f"{self.where}: {what}: the server sent text that is not {exc.encoding} ({exc.reason})"
                    ) from None
                yield batch, untyped, count, (a, b), last
        finally:
            if result is not None and result.unbuffered_active:
                # abandoned: the native reader holds bytes PyMySQL never saw; the connection can not go on
                result.unbuffered_active = False
                self._conn._force_close()
            cursor.close()

    def fingerprint(
        self, t: TableDef, lo: Optional[Sequence[KeyValue]], hi: Optional[Sequence[KeyValue]], key: str
    ) -> str:
        """``count:xor`` of a 128-bit hash per row of the key range ``(lo, hi]``, computed by the server in this
        view. A row's hash is MD5 of ``key`` (the snapshot's secret) and every column's exact value
        (length-prefixed, NULL marked), so any change of the range (a row inserted, deleted or changed) changes
        the fingerprint unless 128-bit hashes collide; a writer that does not know ``key`` can not aim at one."""
        parts = ", ".join(
            f"IFNULL(CONCAT(LENGTH(CAST({r.expression} AS BINARY)), ':', CAST({r.expression} AS BINARY)), 'N')"
            for r in t.readers
        )
        where, params = _range_condition(t, lo, hi)
        sql = (
            "SELECT COUNT(*), BIT_XOR(CAST(CONV(SUBSTRING(h, 1, 16), 16, 10) AS UNSIGNED)), "
            "BIT_XOR(CAST(CONV(SUBSTRING(h, 17, 16), 16, 10) AS UNSIGNED)) "
            f"FROM (SELECT MD5(CONCAT(%s, {parts})) AS h FROM {quote_name(t.db)}.{quote_name(t.table)}{where}) AS r"
        )
        what = f"fingerprinting {t.name}"
        count, a, b = A.row(self.query_one(sql, [key, *params], what=what), 3, self.where, what)
        count = A.integer(count, self.where, what)
        a, b = (A.integer(v, self.where, what, null=0) for v in (a, b))
        return f"{count}:{a:016x}{b:016x}"

    # -- plumbing --------------------------------------------------------------------------------------------
    def execute(self, sql: str, params: Sequence[Any] = (), what: str = "") -> None:
        cursor = self._conn.cursor()
        try:
            self._run(cursor, sql, params, what or sql)
        finally:
            cursor.close()

    def query(self, sql: str, params: Sequence[Any] = (), *, what: str, dicts: bool = False) -> list[Any]:
        cursor = self._conn.cursor(pymysql.cursors.DictCursor if dicts else pymysql.cursors.Cursor)
        try:
            self._run(cursor, sql, params, what)
            return list(cursor.fetchall())
        finally:
            cursor.close()

    def query_one(self, sql: str, params: Sequence[Any] = (), *, what: str) -> tuple:
        rows = self.query(sql, params, what=what)
        if len(rows) != 1:
            raise SnapshotServerError(f"{self.where}: {what}: expected one row, the server returned {len(rows)}")
        return tuple(rows[0])

    def _run(self, cursor: Any, sql: str, params: Sequence[Any], what: str) -> None:
        """Every statement goes through PyMySQL's ``%`` formatting (names are quoted with ``%%``)."""
        try:
            cursor.execute(sql, tuple(params))
        except pymysql.err.MySQLError as exc:
            code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
            if code == ER_PARSE_ERROR and sql.startswith("SHOW BINARY LOG STATUS"):
                raise _ParseError() from None
            raise self._error(exc, what) from None

    def _info(self) -> ServerInfo:
        if self.info is None:
            raise SnapshotError("not connected")
        return self.info

    def _error(self, exc: BaseException, what: str) -> SnapshotError:
        code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
        message = str(exc.args[1]) if len(exc.args) > 1 else str(exc)
        where, user = self.where, f"'{self.source.user}'@'<host>'"
        flavor = self.info.flavor if self.info else "mysql"
        if code in _LOST or code is None or isinstance(exc, pymysql.err.InterfaceError):
            return ServerUnreachableError(
                f"{where}: {what}: the connection failed or dropped ({message}); check "
                "that the server runs and is reachable, then rerun (a snapshot resumes)"
            )
        if code == ER_ACCESS_DENIED:
            return SnapshotAccessError(
                f"{where}: {what}: access denied for user {self.source.user!r} ({message}); "
                f"check the user and the password (--password-env/--password-file)"
            )
        if code in _DENIED:
            return SnapshotAccessError(
                f"{where}: {what}: {message}; the snapshot user needs: "
                + GRANTS[flavor].format(user=user)
                + " (docs/SNAPSHOT.md)"
            )
        if code in (ER_TABLE_DEF_CHANGED, ER_NO_SUCH_TABLE, ER_BAD_FIELD):
            return TableChangedError(
                f"{where}: {what}: the table changed while the snapshot read it ({message}); "
                "rerun the same command: the snapshot resumes and reads that table anew"
            )
        if code == ER_LOCK_WAIT_TIMEOUT:
            return SnapshotServerError(
                f"{where}: {what}: waited {LOCK_WAIT_TIMEOUT_S} s for a lock ({message}); a "
                "long-running statement held it: retry when it has finished"
            )
        return SnapshotError(f"{where}: {what}: server error {code}: {message}")


def _select(
    t: TableDef, lo: Optional[Sequence[KeyValue]], hi: Optional[Sequence[KeyValue]], limit: Optional[int]
) -> tuple[str, list[Any]]:
    """The statement (and its parameters) reading the rows of ``t`` with key in ``(lo, hi]`` in key order."""
    where, params = _range_condition(t, lo, hi)
    sql = (
        f"SELECT {', '.join(r.expression for r in t.readers)} FROM {quote_name(t.db)}.{quote_name(t.table)}"
        + where
        + (f" ORDER BY {', '.join(quote_name(k) for k in t.primary_key)}" if t.chunked else "")
        + (f" LIMIT {int(limit)}" if limit is not None else "")
    )
    return sql, params


def native_kinds(readers: Sequence[ColumnReader], encodings: Sequence[Optional[str]]) -> list[tuple[str, str]]:
    """(name, kind) of each column for ``binlake_native.TextRows``: a column the server sends in another form
    than the one asked for (text for bytes, or bytes for text; ``encoding`` None: bytes) is ``raw``, so that
    Python types it as ``read`` would."""
    return [(r.name, r.native[0] if r.native[1] == (e is None) else "raw") for r, e in zip(readers, encodings)]


def as_pymysql(raw: Optional[bytes], encoding: Optional[str]) -> Any:
    """A value's bytes as PyMySQL gives it with its decoders off: text decoded in the connection's encoding
    (``encoding``, None for a binary column)."""
    return raw.decode(encoding) if raw is not None and encoding is not None else raw


def _fetch_batch(cursor: Any, rows: int, size: int) -> list[tuple]:
    """Up to ``rows`` rows of an unbuffered cursor, fewer once their values reach ``size`` bytes."""
    batch: list[tuple] = []
    held = 0
    while len(batch) < rows and held < size:
        row = cursor.fetchone()
        if row is None:
            break
        batch.append(row)
        held += sum(len(v) for v in row if isinstance(v, (str, bytes)))
    return batch


class _ParseError(Exception):
    """SHOW BINARY LOG STATUS is not known (MySQL before 8.2): ask SHOW MASTER STATUS."""


def primary_key(index_rows: Sequence[dict[str, Any]]) -> tuple[str, ...]:
    """The key the binlog calls the primary key, from SHOW INDEX (rows in the server's key order): the
    PRIMARY KEY, else the first UNIQUE key whose columns are all NOT NULL and whole (no prefix), as
    ``TABLE_SHARE::primary_key`` promotes it; () when there is none."""
    keys: dict[str, list[dict[str, Any]]] = {}
    for row in index_rows:
        keys.setdefault(row["Key_name"], []).append(row)
    for name, parts in keys.items():
        unique = str(parts[0]["Non_unique"]) == "0"
        if name == "PRIMARY" or (unique and all(not p.get("Null") and p.get("Sub_part") is None for p in parts)):
            return tuple(p["Column_name"] for p in sorted(parts, key=lambda p: int(p["Seq_in_index"])))
    return ()


def _range_condition(
    t: TableDef, lo: Optional[Sequence[KeyValue]], hi: Optional[Sequence[KeyValue]]
) -> tuple[str, list[Any]]:
    """`` WHERE key > lo AND key <= hi`` for a (composite) key, written as ORs of equalities and one strict
    comparison each, which both servers' range optimizers turn into index ranges."""
    if not t.chunked:
        return "", []
    keys = [quote_name(k) for k in t.primary_key]
    conds, params = [], []
    for bound, op in ((lo, ">"), (hi, "<")):
        if bound is None:
            continue
        ors = []
        for i in range(len(keys)):
            ors.append(" AND ".join([f"{k} = %s" for k in keys[:i]] + [f"{keys[i]} {op} %s"]))
            params += list(bound[: i + 1])
        if op == "<":
            ors.append(" AND ".join(f"{k} = %s" for k in keys))
            params += list(bound)
        conds.append("(" + " OR ".join(f"({o})" for o in ors) + ")")
    return (" WHERE " + " AND ".join(conds) if conds else ""), params


def _version_tuple(version: str) -> tuple[int, int]:
    try:
        major, minor = version.split("-")[0].split(".")[:2]
        return int(major), int(minor)
    except ValueError:
        return (0, 0)


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
