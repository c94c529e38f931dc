"""``take_snapshot``: read the selected tables in one consistent view into Parquet, chunk by chunk, resumably.

Per table: primary-key chunks by keyset pagination (``WHERE key > last ORDER BY key LIMIT n``); a table without a
usable key is one streamed scan. Each chunk is written (temp file, fsync, rename) and then recorded in the
manifest (atomic replace), so a kill at any point leaves completed chunks recorded and nothing else; files no
manifest names are removed when the snapshot resumes.

Resumption (docs/SNAPSHOT.md, "Resuming"): the old view can not be reopened, so a rerun opens a new view at a new
position. Tables finished in an earlier view stay as they are: each is exact at its own view's position. A
table left half-read moves to the new view: every recorded chunk's key range is fingerprinted again by the
server in the new view and compared with the fingerprint taken when the chunk was read; a range that did not
change is kept (not read again), one that changed is read again; then the rest of the table is read. So every
table's rows are its state at exactly one position.
"""

from __future__ import annotations

import datetime as dt
import errno
import fcntl
import os
import secrets
import shutil
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, TextIO

import pymysql

from binlake.binlog.silver_types import arrow_schema
from binlake.folders import silver_name
from binlake.pipeline.filters import TableFilter
from binlake.snapshot.errors import SnapshotAnswerError, SnapshotError, SnapshotStateError, UnknownTableError
from binlake.snapshot.manifest import (
    COMPLETE,
    LOCK_NAME,
    MANIFEST_NAME,
    TABLES_DIR,
    Chunk,
    KeyValue,
    Manifest,
    Position,
    TableState,
    View,
    check_not_linked,
    fsync_dir,
    load_manifests,
    snapshots_root,
)
from binlake.snapshot.progress import Progress
from binlake.snapshot.server import ServerSession, TableDef, utc_now
from binlake.transport.uri import MySQLSource

DEFAULT_CHUNK_ROWS = 100_000
DEFAULT_BATCH_ROWS = 10_000


@dataclass(frozen=True, slots=True)
class SnapshotOptions:
    tables: TableFilter = field(default_factory=TableFilter)
    chunk_rows: int = DEFAULT_CHUNK_ROWS  # rows per chunk (and at most per Parquet file)
    batch_rows: int = DEFAULT_BATCH_ROWS  # rows fetched and converted at a time (memory bound)


@dataclass(frozen=True, slots=True)
class SnapshotResult:
    id: str
    path: Path
    tables: int
    rows: int
    positions: tuple[Position, ...]  # of the views holding tables, oldest first
    resumed: bool
    kept_chunks: int  # resumed: chunks kept after their range proved unchanged
    reread_chunks: int  # resumed: chunks read again because their range changed

    def summary(self) -> str:
        at = ", ".join(str(p) for p in self.positions)
        resumed = (
            f"; resumed: {self.kept_chunks} chunk(s) kept, {self.reread_chunks} read again" if self.resumed else ""
        )
        return (
            f"snapshot {self.id} complete: {self.tables} table(s), {self.rows:,} rows at {at} in {self.path}{resumed}"
        )


def take_snapshot(
    source: MySQLSource,
    landing: str | os.PathLike[str],
    options: SnapshotOptions = SnapshotOptions(),
    *,
    connector: Callable[..., Any] = pymysql.connect,
    stream: TextIO | None = None,
) -> SnapshotResult:
    """Snapshot ``source``'s selected tables into ``<landing>/<source name>/_snapshots/<id>/``, or finish the
    unfinished snapshot there (same selection)."""
    if options.chunk_rows < 1 or options.batch_rows < 1:
        raise SnapshotError(f"--chunk-rows {options.chunk_rows}: give at least 1 row per chunk")
    root = snapshots_root(Path(landing) / source.name)
    with _locked(root):
        for folder in root.iterdir():  # begun, killed before its first manifest: nothing to resume
            if folder.is_dir() and not (folder / MANIFEST_NAME).exists():
                shutil.rmtree(check_not_linked(folder, doing="delete an unfinished snapshot"))
        unfinished = [(f, m) for f, m in load_manifests(root.parent) if m.status != COMPLETE]
        if unfinished:
            folder, manifest = unfinished[-1]
            if (manifest.include, manifest.exclude) != (options.tables.include, options.tables.exclude):
                raise SnapshotStateError(
                    f"{folder} is an unfinished snapshot of other tables (--include {' '.join(manifest.include) or '-'}"
                    f" --exclude {' '.join(manifest.exclude) or '-'}); rerun with those options to finish it, or "
                    "remove that folder to start anew"
                )
        session = ServerSession(source, connector=connector)
        try:
            info = session.connect()
            if unfinished and (manifest.server.get("flavor"), manifest.server.get("server_id")) != (
                info.flavor,
                info.server_id,
            ):
                raise SnapshotStateError(
                    f"{folder} was begun on {manifest.server.get('flavor')} server_id="
                    f"{manifest.server.get('server_id')}, but {source.display()} is {info.flavor}"
                    f" server_id={info.server_id}; use another --name for another server"
                )
            position, method = session.open_view()
            defs: dict[tuple[str, str], TableDef] = {}
            if not unfinished:  # described in the view, before anything is written: bad tables fail here
                defs = {(db, t): session.describe(db, t) for db, t in session.list_tables(options.tables)}
                folder = _new_folder(root)
                manifest = Manifest(
                    folder.name,
                    source.name,
                    info.to_json(source.display()),
                    options.tables.include,
                    options.tables.exclude,
                    options.chunk_rows,
                    utc_now(),
                    secrets.token_hex(16),
                    tables=[_table_state(d) for d in defs.values()],
                )
            manifest.views.append(View(len(manifest.views), position, utc_now(), method))
            run = _Run(folder, manifest, session, options, resumed=bool(unfinished), stream=stream)
            run.all_tables(defs)
            session.end_view()
        finally:
            session.close()
    views = sorted({t.view for t in manifest.tables if t.view is not None})
    return SnapshotResult(
        manifest.id,
        folder,
        len(manifest.tables),
        sum(t.rows for t in manifest.tables),
        tuple(manifest.views[v].position for v in views),
        run.resumed,
        run.kept,
        run.reread,
    )


class _Run:
    """One run over the manifest's unfinished tables in the current (last) view."""

    def __init__(
        self,
        folder: Path,
        manifest: Manifest,
        session: ServerSession,
        options: SnapshotOptions,
        resumed: bool,
        stream: TextIO | None,
    ) -> None:
        self.folder, self.manifest, self.session, self.options = folder, manifest, session, options
        self.view = manifest.views[-1].index
        self.resumed = resumed
        self.kept = self.reread = 0
        self.progress = Progress(stream)
        self._obsolete: list[Path] = []  # files to delete once the manifest no longer names them

    def all_tables(self, defs: dict[tuple[str, str], TableDef]) -> None:
        m, p = self.manifest, self.progress
        if self.resumed:
            self._remove_unrecorded()
        pending = []
        for t in [t for t in m.tables if not t.complete]:
            d = defs.get((t.db, t.table))
            if d is None:
                try:
                    d = self.session.describe(t.db, t.table)
                except UnknownTableError:
                    self._obsolete += [self._table_dir(t) / f for f in t.files]
                    m.tables.remove(t)
                    continue
            pending.append((self._refreshed(t, d), d))
        p.start(sum(d.approx_rows for _, d in pending), len(pending))
        p.message(
            f"{'resuming' if self.resumed else 'snapshot'} {m.id} of {self.session.where} at "
            f"{m.views[-1].position} ({m.views[-1].method}); {len(pending)} table(s) to read"
        )
        self._commit()
        for t, d in pending:
            self._table(t, d)
        p.close()
        m.status, m.completed = COMPLETE, utc_now()
        self._commit()

    def _refreshed(self, t: TableState, d: TableDef) -> TableState:
        """``t`` with the definition the server has now; its chunks are dropped when that definition differs."""
        fresh = _table_state(d, t.folder)
        if t.chunks and fresh.same_definition(t):
            fresh.chunks = t.chunks
        elif t.chunks:
            self.progress.message(f"{t.name}: its definition changed since the last run; reading it anew")
            self._obsolete += [self._table_dir(t) / f for f in t.files]
        self.manifest.tables[self.manifest.tables.index(t)] = fresh
        return fresh

    def _table(self, t: TableState, d: TableDef) -> None:
        p, earlier = self.progress, len(t.chunks)
        for i, c in enumerate(t.chunks):  # chunks of an earlier view: keep the unchanged ranges
            if self.session.fingerprint(d, c.lo, c.hi, self.manifest.fingerprint_key) == c.fingerprint:
                self.kept += 1
                p.rows(c.rows, t.name, i)
                continue
            t.chunks[i] = self._read(t, d, c.lo, c.hi, limit=None, number=i)
            self._obsolete += [self._table_dir(t) / f for f in c.files]
            self.reread += 1
            self._commit()
        if earlier:
            p.message(f"{t.name}: {earlier} chunk(s) of an earlier view checked in this one")
        while not t.chunks or t.chunks[-1].hi is not None:
            lo = t.chunks[-1].hi if t.chunks else None
            chunk = self._read(
                t, d, lo, None, limit=self.options.chunk_rows if t.chunked else None, number=len(t.chunks)
            )
            t.chunks.append(chunk)
            if chunk.hi is None:
                t.complete, t.view = True, self.view
            self._commit()
        p.table_done(t.name, t.rows)

    def _read(
        self,
        t: TableState,
        d: TableDef,
        lo: Optional[list[KeyValue]],
        hi: Optional[list[KeyValue]],
        limit: Optional[int],
        number: int,
    ) -> Chunk:
        """Read the key range ``(lo, hi]`` (at most ``limit`` rows) into new Parquet files; the chunk's ``hi`` is
        ``hi`` when given, else the last key read when ``limit`` rows came (None: the table's end)."""
        values = _Values(d, f"{self.session.where} {t.name}")
        rows, last, where = 0, None, values.where
        native = self.session.native_reader()
        batches = self._native_batches if native is not None else self._python_batches
        xor = (0, 0)
        with _Parts(self._table_dir(t), values.schema, self._file_name, self.options.chunk_rows) as parts:
            with _Behind() as behind:
                for table, count, at_end, halves in batches(d, lo, hi, limit, values, native):
                    behind.write(parts, table)
                    del table
                    rows, last = rows + count, at_end
                    xor = (xor[0] ^ halves[0], xor[1] ^ halves[1]) if halves else xor
                    self.progress.rows(count, t.name, number)
            if rows == 0 and number > 0:
                parts.discard()
        if limit is not None and rows > limit:
            raise SnapshotAnswerError(f"{where}: reading rows: the server returned {rows} rows for LIMIT {limit}")
        if hi is None and limit is not None and rows == limit and last is not None:
            hi = _converted(
                lambda k: [r.to_key(v) for r, v in zip(d.key_readers, k)], [last], where, "the primary key"
            )[0]
            if lo is not None and hi == lo:  # keyset pagination would ask for the same range forever
                raise SnapshotAnswerError(
                    f"{where}: reading rows: the server returned rows up to the key {hi!r} "
                    "for the range after that key; the snapshot can not advance"
                )
        fingerprint = None
        if hi is not None:  # the native reader hashed the rows as read; else the server hashes the range
            fingerprint = (
                f"{rows}:{xor[0]:016x}{xor[1]:016x}"
                if native is not None
                else self.session.fingerprint(d, lo, hi, self.manifest.fingerprint_key)
            )
        return Chunk(lo, hi, rows, parts.files, fingerprint, values.invalid)

    def _python_batches(
        self, d: TableDef, lo: Any, hi: Any, limit: Optional[int], values: "_Values", native: Any
    ) -> Iterator[tuple[Any, int, tuple, None]]:
        """Arrow tables of the rows PyMySQL reads, each with its row count and last row's key."""
        import pyarrow as pa

        n = len(values.names)
        for batch in self.session.read(d, lo, hi, limit, self.options.batch_rows):
            if any(len(r) != n for r in batch):
                raise SnapshotAnswerError(
                    f"{values.where}: reading rows: expected rows of {n} value(s) "
                    f"({', '.join(values.names)[:120]}), the server returned one of "
                    f"{next(len(r) for r in batch if len(r) != n)}"
                )
            arrays = []
            for i in range(n):
                raw = [r[i] for r in batch]
                arrays.append(values.column(i, raw))
                del raw
            count, last = len(batch), tuple(batch[-1][i] for i in values.key_at)
            del batch  # one copy of a batch at a time: raw, then values, then Arrow
            yield pa.Table.from_arrays(arrays, schema=values.schema), count, last, None

    def _native_batches(
        self, d: TableDef, lo: Any, hi: Any, limit: Optional[int], values: "_Values", native: Any
    ) -> Iterator[tuple[Any, int, tuple, tuple[int, int]]]:
        """Arrow tables of the native reader's batches: its typed columns as they are, the others (values in a
        form it does not type) typed by Python."""
        import pyarrow as pa

        key = self.manifest.fingerprint_key
        for batch, untyped, count, halves, last in self.session.read_native(
            d, lo, hi, limit, self.options.batch_rows, key, native
        ):
            arrays = list(batch.columns)
            del batch
            for i, raw in untyped.items():
                arrays[i] = values.column(i, raw)
            del untyped
            yield pa.Table.from_arrays(arrays, schema=values.schema), count, tuple(last), halves

    # -- files -------------------------------------------------------------------------------------------------
    def _commit(self) -> None:
        """Write the manifest, then delete the files it stopped naming."""
        self.manifest.write(self.folder)
        for path in self._obsolete:
            path.unlink(missing_ok=True)
        self._obsolete.clear()

    def _table_dir(self, t: TableState) -> Path:
        """The table's folder (its name checked when the manifest was read); never a symbolic link."""
        return check_not_linked(self.folder, TABLES_DIR, t.folder, doing="write or delete snapshot files")

    def _file_name(self) -> str:
        n = self.manifest.next_file
        self.manifest.next_file += 1
        return f"part-{n:05d}.parquet"

    def _remove_unrecorded(self) -> None:
        """Files of chunks a killed run wrote but did not record (and temp files): not part of the snapshot."""
        base = check_not_linked(self.folder, TABLES_DIR, doing="delete snapshot files")
        if not base.is_dir():
            return
        recorded = {t.folder: set(t.files) for t in self.manifest.tables}
        for d in base.iterdir():
            check_not_linked(base, d.name, doing="delete snapshot files")
            if d.name not in recorded:
                shutil.rmtree(d, ignore_errors=True)
                continue
            for f in d.iterdir():
                if f.name in recorded[d.name]:
                    continue
                if f.is_dir() and not f.is_symlink():
                    shutil.rmtree(f)
                else:
                    f.unlink()  # a file, or a link itself (never what it points to)


class _Behind:
    """One thread writing a batch while the next is read, one batch at a time; a batch of ``INLINE_BYTES`` or
    more (wide rows) is written in place, so memory holds at most one such batch."""

    INLINE_BYTES = 4 << 20

    def __init__(self) -> None:
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="snapshot-writer")
        self._pending: Optional[Future[None]] = None

    def __enter__(self) -> "_Behind":
        return self

    def write(self, parts: "_Parts", table: Any) -> None:
        self.wait()
        if table.nbytes >= self.INLINE_BYTES:
            parts.write(table)
        else:
            self._pending = self._thread.submit(parts.write, table)

    def wait(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def __exit__(self, exc_type: Any, *rest: Any) -> None:
        try:
            self.wait()
        except BaseException:
            if exc_type is None:
                raise
        finally:
            self._thread.shutdown()


class _Values:
    """A table's PyMySQL values to Arrow arrays of its silver types, counting the zero and invalid dates that
    become NULL."""

    def __init__(self, d: TableDef, where: str) -> None:
        self.where = where
        self.names = [r.name for r in d.readers]
        self.key_at = [self.names.index(k) for k in d.primary_key]
        self.schema = arrow_schema([(r.name, r.kind) for r in d.readers])
        self._convert = [r.converter() for r in d.readers]
        self._temporal = {i for i, r in enumerate(d.readers) if r.counts_invalid()}
        self.invalid: dict[str, int] = {}

    def column(self, i: int, raw: list[Any]) -> Any:
        import pyarrow as pa

        name = self.names[i]
        values = _converted(self._convert[i], raw, self.where, name)
        if i in self._temporal:  # zero or invalid dates: NULL in silver, counted as binlake run does
            nulled = sum(1 for v, s in zip(raw, values) if v is not None and s is None)
            if nulled:
                self.invalid[name] = self.invalid.get(name, 0) + nulled
        kind = self.schema.field(i).type
        return _converted(lambda v: pa.array(v, type=kind), [values], self.where, name)[0]


def _converted(convert: Callable[[Any], Any], raw: list[Any], where: str, column: str) -> list[Any]:
    """``convert`` of each value; a value the column's type can not hold is the server's fault: typed."""
    try:
        return [convert(v) for v in raw]
    except (ValueError, TypeError, AttributeError, ArithmeticError, UnicodeError, KeyError, IndexError) as exc:
        raise SnapshotAnswerError(
            f"{where}: reading rows: column {column}: the server returned a value its type "
            f"can not hold ({type(exc).__name__}: {str(exc)[:160]})"
        ) from None


def _table_state(d: TableDef, folder: Optional[str] = None) -> TableState:
    return TableState(
        d.db,
        d.table,
        folder or silver_name(d.db, d.table),
        d.engine,
        d.create_table,
        tuple(r.column for r in d.readers),
        d.primary_key,
        d.chunked,
    )


class _Parts:
    """Parquet files of one chunk: at most ``max_rows`` rows each, written as ``<name>.tmp`` and renamed (after
    fsync) when complete; at least one file (an empty table still has its schema) unless discarded."""

    def __init__(self, folder: Path, schema: Any, next_name: Callable[[], str], max_rows: int) -> None:
        self.folder, self.schema, self.next_name, self.max_rows = folder, schema, next_name, max_rows
        self.files: list[str] = []
        self._writer: Any = None
        self._rows = 0

    def __enter__(self) -> "_Parts":
        self.folder.mkdir(parents=True, exist_ok=True)
        self._open()
        return self

    def write(self, table: Any) -> None:
        while table.num_rows:
            if self._rows >= self.max_rows:
                self._close()
                self._open()
            take = min(table.num_rows, self.max_rows - self._rows)
            self._writer.write_table(table.slice(0, take))
            self._rows += take
            table = table.slice(take)

    def discard(self) -> None:
        self._writer.close()
        self._writer = None
        os.unlink(self._tmp(self.files.pop()))

    def __exit__(self, exc_type: Any, *rest: Any) -> None:
        if exc_type is None:
            if self._writer is not None:
                self._close()
            fsync_dir(self.folder)
        elif self._writer is not None:
            self._writer.close()

    def _tmp(self, name: str) -> Path:
        return self.folder / (name + ".tmp")

    def _open(self) -> None:
        import pyarrow.parquet as pq

        name = self.next_name()
        self.files.append(name)
        # no dictionary pages: zstd alone writes these files in half the time and smaller
        self._writer = pq.ParquetWriter(self._tmp(name), self.schema, compression="zstd", use_dictionary=False)
        self._rows = 0

    def _close(self) -> None:
        self._writer.close()
        self._writer = None
        tmp = self._tmp(self.files[-1])
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, self.folder / self.files[-1])


def _new_folder(root: Path) -> Path:
    base = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    for n in range(1000):
        folder = root / (base if n == 0 else f"{base}-{n}")
        try:
            folder.mkdir()
            return folder
        except FileExistsError:
            continue
    raise SnapshotStateError(f"{root}: can not make a new snapshot folder")


@contextmanager
def _locked(root: Path) -> Iterator[None]:
    check_not_linked(root, doing="write snapshots")
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd = os.open(root / LOCK_NAME, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        raise SnapshotStateError(
            f"can not create the snapshot folder {root} or its lock file {LOCK_NAME} (a "
            f"symbolic link is refused): {exc.strerror}"
        ) from None
    with open(fd, "ab") as lock:
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                raise SnapshotStateError(
                    f"another binlake snapshot of this source is running ({root}); wait for it to finish"
                ) from None
            raise
        yield


__all__ = ["SnapshotOptions", "SnapshotResult", "take_snapshot"]
