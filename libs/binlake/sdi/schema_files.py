"""Table definitions from files, for binlogs whose TABLE_MAPs lack what decoding needs (``--schema PATH``).

``binlog_row_metadata=MINIMAL``/``NO_LOG`` TABLE_MAPs have no column names, signedness or charsets, and MariaDB's
5.3 temporal formats (``mysql56_temporal_format=OFF``) have no fractional digits in the binlog at all. Two kinds
of file fill the gap, mixed freely (a folder is searched recursively for ``.ibd``, ``.sdi`` and ``.json``):

- MySQL SDI: ``.ibd`` tablespaces, ``.sdi`` files, ``ibd2sdi`` output (read by :mod:`binlake.sdi`);
- a column list (for MariaDB, which has no SDI), a JSON object::

      {"tables": [{"db": "shop", "table": "t_old_time",
                   "columns": ["id", {"name": "tm3", "fsp": 3}, {"name": "qty", "unsigned": true},
                               {"name": "note", "charset": "latin1"}, {"name": "raw", "charset": "binary"},
                               {"name": "st", "enum": ["new", "paid"]}, {"name": "tags", "set": ["a", "b"]}]}]}

  (or one such table object alone). Columns are in table order; a column is a name or an object with
  ``name`` and optionally ``unsigned`` (default false), ``charset`` (a MySQL charset name; default utf8mb4,
  ``binary`` for BLOB/BINARY columns) or ``collation_id``, ``fsp`` (fractional digits of TIME/DATETIME/
  TIMESTAMP), ``enum``, ``set``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

from binlake.binlog.errors import SchemaFileError
from binlake.binlog.schema import ColumnInfo, SchemaProvider, TableSchema
from binlake.binlog.values import charset_collation_id

DEFAULT_CHARSET = "utf8mb4"


MAX_COLLATION_ID = 0xFFFF  # collation ids are 16-bit in TABLE_MAP optional metadata and the DD


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _shown(value: Any) -> str:
    """A JSON value for a message: its type and at most 60 characters of it."""
    try:
        text = json.dumps(value)
    except ValueError:  # an integer too long to print
        text = "..."
    return f"{type(value).__name__} {text[:60]}"


def _column(item: Any, where: str) -> ColumnInfo:
    if isinstance(item, str):
        item = {"name": item}
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        raise SchemaFileError(
            f'{where}: a column must be a name or an object with a "name"',
            expected='"id" or {"name": "id", ...}',
            found=_shown(item),
        )
    known = {"name", "unsigned", "charset", "collation_id", "fsp", "enum", "set"}
    unknown = sorted(set(item) - known)
    if unknown:
        raise SchemaFileError(
            f"{where}: unknown column keys {unknown}", expected=f"keys among {sorted(known)}", found=unknown
        )
    unsigned = item.get("unsigned", False)
    if not isinstance(unsigned, bool):
        raise SchemaFileError(f'{where}: bad "unsigned"', expected="true or false", found=_shown(unsigned))
    collation = item.get("collation_id")
    if collation is not None and (not _is_int(collation) or not 1 <= collation <= MAX_COLLATION_ID):
        raise SchemaFileError(
            f'{where}: bad "collation_id"', expected=f"an integer 1..{MAX_COLLATION_ID}", found=_shown(collation)
        )
    if collation is None:
        charset = item.get("charset", DEFAULT_CHARSET)
        if not isinstance(charset, str):
            raise SchemaFileError(
                f'{where}: bad "charset"', expected="a MySQL charset name (a string)", found=_shown(charset)
            )
        collation = charset_collation_id(charset)
        if collation is None:
            raise SchemaFileError(
                f"{where}: unknown charset",
                expected="a MySQL charset name (utf8mb4, latin1, binary, ...)",
                found=charset,
            )
    fsp = item.get("fsp")
    if fsp is not None and (not _is_int(fsp) or not 0 <= fsp <= 6):
        raise SchemaFileError(f"{where}: bad fsp", expected="0..6", found=_shown(fsp))
    enum, set_ = item.get("enum"), item.get("set")
    for key, values in (("enum", enum), ("set", set_)):
        if values is not None and (not isinstance(values, list) or not all(isinstance(v, str) for v in values)):
            raise SchemaFileError(f'{where}: bad "{key}"', expected="a list of strings", found=_shown(values))
    return ColumnInfo(
        name=item["name"],
        unsigned=unsigned,
        collation_id=collation,
        enum_values=tuple(enum) if enum is not None else None,
        set_values=tuple(set_) if set_ is not None else None,
        fsp=fsp,
    )


def column_list_schemas(data: Any, source: str) -> list[TableSchema]:
    """The tables of a column-list document (see the module docstring)."""
    tables = data.get("tables", [data]) if isinstance(data, dict) else None
    if not isinstance(tables, list):
        raise SchemaFileError(f"{source}: not a column list", expected='{"tables": [...]}', found=type(data).__name__)
    out = []
    for i, t in enumerate(tables):
        where = f"{source}: tables[{i}]"
        if (
            not isinstance(t, dict)
            or not all(isinstance(t.get(k), str) for k in ("db", "table"))
            or not isinstance(t.get("columns"), list)
        ):
            raise SchemaFileError(
                f'{where}: a table needs "db", "table" and a "columns" list',
                expected='{"db": ..., "table": ..., "columns": [...]}',
                found=_shown(t),
            )
        columns = tuple(_column(c, f"{where}.columns[{k}]") for k, c in enumerate(t["columns"]))
        out.append(TableSchema(t["db"], t["table"], columns, source=source))
    return out


def _is_column_list(path: Path) -> Optional[Any]:
    """The parsed document when ``path`` is a JSON column list (not SDI), else None."""
    if path.suffix.lower() != ".json":
        return None
    from binlake.sdi import SdiError
    from binlake.sdi.model import load_json

    try:
        data = load_json(path.read_text(encoding="utf-8"), str(path))
    except (OSError, UnicodeDecodeError, SdiError):
        return None  # left to the SDI reader, which reports what is wrong
    if isinstance(data, dict) and ("tables" in data or "columns" in data):
        return data
    return None


class FileSchemaProvider:
    """A :data:`~binlake.binlog.schema.SchemaProvider` over column lists, backed by SDI (newest fitting version)."""

    def __init__(self, tables: Iterable[TableSchema], sdi: Optional[SchemaProvider] = None) -> None:
        self._tables = {(t.db.lower(), t.table.lower()): t for t in tables}
        self._sdi = sdi

    def __call__(self, db: str, table: str, column_types: Sequence[int]) -> Optional[TableSchema]:
        found = self._tables.get((db.lower(), table.lower()))
        if found is not None:
            return found
        return self._sdi(db, table, column_types) if self._sdi is not None else None


def load_schema_provider(paths: Iterable[str | os.PathLike[str]]) -> FileSchemaProvider:
    """A schema provider over SDI files and column lists (files, or folders searched recursively)."""
    from binlake.sdi import SdiError, SdiSchemaProvider, table_schema
    from binlake.sdi.readers import iter_sdi_files, read_entries

    lists: list[TableSchema] = []
    sdi = SdiSchemaProvider()
    for path in iter_sdi_files(paths):
        if not path.exists():
            raise SchemaFileError(f"{path}: no such schema file or folder")
        data = _is_column_list(path)
        if data is not None:
            lists += column_list_schemas(data, str(path))
            continue
        try:
            for entry in read_entries(path):
                table = entry.document().table
                if table is not None:
                    sdi.add(table_schema(table, str(path)))
        except SdiError as exc:
            raise SchemaFileError(f"{path}: neither SDI nor a column list: {exc}") from None
    return FileSchemaProvider(lists, sdi)
