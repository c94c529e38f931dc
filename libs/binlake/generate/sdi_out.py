"""SDI (WL#7069) of every table version the workload creates, as MySQL 8.0 would store it for InnoDB.

Built as :class:`binlake.sdi.model.SdiDocument` values and serialized with :mod:`binlake.sdi.writer`, so the
files are in MySQL's own SDI JSON (``.sdi`` files as ``sdi_file::store`` writes them, and ``ibd2sdi`` output
with the Table and Tablespace records of the ``.ibd``). Column attributes follow what the real 8.0 SDIs in
the fixtures show (``char_length``, ``numeric_precision``, hidden InnoDB columns DB_TRX_ID/DB_ROLL_PTR, the
PRIMARY index with its hidden elements). A column's DEFAULT is in ``default_value_utf8`` (the binary
``default_value`` record image is left empty).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from binlake.generate.tables import (
    BINARY_COLLATION,
    DD_TYPE,
    LATIN1_SWEDISH_CI,
    UTF8MB4_0900_AI_CI,
    ColumnDef,
    TableDef,
)
from binlake.sdi import dd_types as T
from binlake.sdi.model import (
    Column,
    ColumnTypeElement,
    Index,
    IndexElement,
    SdiDocument,
    SdiHeader,
    Table,
    Tablespace,
    TablespaceFile,
)
from binlake.sdi.writer import to_ibd2sdi, to_json

MYSQLD_VERSION_ID = 80036
DD_VERSION = 80023
SDI_VERSION = 80019
TABLE_OPTIONS = (
    "avg_row_length=0;encrypt_type=N;key_block_size=0;keys_disabled=0;pack_record=1;"
    "stats_auto_recalc=0;stats_sample_pages=0;"
)
ORDER_ASC = 2
ALGORITHM_BTREE = 2
ROW_FORMAT_DYNAMIC = 2
KEY_LENGTH_ALL = 4294967295  # hidden index elements cover the whole column

_INT_WIDTH = {
    "tinyint": (4, 3, 3),
    "smallint": (6, 5, 5),
    "mediumint": (9, 8, 7),
    "int": (11, 10, 10),
    "bigint": (20, 20, 19),
}  # (display width signed, unsigned, numeric precision)
_INT_BYTES = {"tinyint": 1, "smallint": 2, "mediumint": 3, "int": 4, "bigint": 8}
_BLOB_LENGTH = {"text": 65535, "blob": 65535, "mediumtext": 16777215, "mediumblob": 16777215, "json": 4294967295}


def _char_length(c: ColumnDef) -> int:
    base = c.base_type
    if base in _INT_WIDTH:
        if c.sql == "tinyint(1)":
            return 1
        signed, unsigned, _ = _INT_WIDTH[base]
        return unsigned if c.unsigned else signed
    if base == "decimal":
        return c.precision + (1 if c.scale else 0) + 1
    fixed = {"float": 12, "double": 22, "date": 10, "year": 4, "datetime": 19, "timestamp": 19, "time": 10}
    if base in fixed:
        return fixed[base] + (c.fsp + 1 if c.fsp else 0)
    if base in ("char", "varchar", "binary", "varbinary"):
        return c.max_bytes
    if base in _BLOB_LENGTH:
        return _BLOB_LENGTH[base]
    if base == "enum":
        return max(len(e) for e in c.elements) * 4
    if base == "set":
        return (sum(len(e) for e in c.elements) + len(c.elements) - 1) * 4
    if base == "bit":
        return c.length
    return 0


def _sdi_column(c: ColumnDef, position: int, in_pk: bool, table_id: int) -> Column:
    base = c.base_type
    dd_type = 15 if base == "date" else DD_TYPE[base]  # DATE columns are NEWDATE in the dictionary
    precision, scale, scale_null = 0, 0, True
    if base in _INT_WIDTH:
        precision = _INT_WIDTH[base][2] + (1 if base == "bigint" and c.unsigned else 0)
        scale_null = False
    elif base == "decimal":
        precision, scale, scale_null = c.precision, c.scale, False
    elif base in ("float", "double"):
        precision = 12 if base == "float" else 22
    elif base == "bit":
        precision = c.length
    temporal = base in ("datetime", "timestamp", "time")
    collation = (
        c.collation_id
        if c.collation_id is not None
        else (BINARY_COLLATION if base in ("blob", "mediumblob") else UTF8MB4_0900_AI_CI)
    )
    return Column(
        name=c.name,
        type=dd_type,
        is_nullable=c.nullable,
        is_unsigned=c.unsigned,
        is_auto_increment=c.auto_increment,
        hidden=T.HT_VISIBLE,
        ordinal_position=position,
        char_length=_char_length(c),
        numeric_precision=precision,
        numeric_scale=scale,
        numeric_scale_null=scale_null,
        datetime_precision=c.fsp if temporal else 0,
        datetime_precision_null=0 if temporal else 1,
        has_no_default=not c.nullable and not c.auto_increment and c.default_sql is None,
        default_value_null=c.nullable and c.default_sql is None,
        default_value_utf8_null=c.default_sql is None,
        default_value_utf8=(c.default_sql or "").strip("'"),
        options="interval_count=0;",
        se_private_data=f"table_id={table_id};",
        column_key=2 if in_pk else 1,
        column_type_utf8=c.sql,
        elements=tuple(ColumnTypeElement(e.encode("utf-8"), k + 1) for k, e in enumerate(c.elements)),
        collation_id=collation,
        is_explicit_collation=c.collation_id == LATIN1_SWEDISH_CI,
    )


def _hidden_column(name: str, dd_type: int, length: int, position: int, table_id: int) -> Column:
    return Column(
        name=name,
        type=dd_type,
        hidden=T.HT_HIDDEN_SE,
        ordinal_position=position,
        char_length=length,
        numeric_scale_null=True,
        default_value_null=True,
        options="",
        se_private_data=f"table_id={table_id};",
        column_key=1,
        collation_id=BINARY_COLLATION,
    )


def table_ids(t: TableDef) -> tuple[int, int]:
    """(InnoDB table id, tablespace id) of a table version: new per version (an ALTER rebuilds the table), from
    its TABLE_MAP table id (one per version), so no two versions share one."""
    base = 1064 + 10 * t.table_id
    return base + t.version % 10, 2 + t.table_id % 100


def sdi_documents(t: TableDef, created: dt.datetime, first_created: dt.datetime) -> tuple[SdiDocument, SdiDocument]:
    """(Table SDI, Tablespace SDI) of one table version."""
    se_id, space_id = table_ids(t)
    pk = set(t.primary_key)
    columns = [_sdi_column(c, i + 1, c.name in pk, se_id) for i, c in enumerate(t.columns)]
    n = len(columns)
    hidden = [] if pk else [_hidden_column("DB_ROW_ID", T.INT24, 6, n + 1, se_id)]
    hidden += [
        _hidden_column("DB_TRX_ID", T.INT24, 6, n + len(hidden) + 1, se_id),
        _hidden_column("DB_ROLL_PTR", T.LONGLONG, 7, n + len(hidden) + 2, se_id),
    ]
    columns += hidden
    tablespace = f"{t.db}/{t.name}"
    indexes = ()
    if pk:
        pk_idx = t.pk_indexes
        elements = [
            IndexElement(k + 1, _INT_BYTES.get(t.columns[i].base_type, KEY_LENGTH_ALL), ORDER_ASC, False, i)
            for k, i in enumerate(pk_idx)
        ]
        rest = [n + j for j in range(len(hidden))] + [i for i in range(n) if i not in pk_idx]
        elements += [
            IndexElement(len(elements) + k + 1, KEY_LENGTH_ALL, ORDER_ASC, True, i) for k, i in enumerate(rest)
        ]
        indexes = (
            Index(
                name="PRIMARY",
                type=T.IT_PRIMARY,
                ordinal_position=1,
                options="flags=0;",
                se_private_data=f"id={se_id + 100};root=4;space_id={space_id};table_id={se_id};trx_id=0;",
                algorithm=ALGORITHM_BTREE,
                engine="InnoDB",
                elements=tuple(elements),
                tablespace_ref=tablespace,
            ),
        )
    stamp = int(created.strftime("%Y%m%d%H%M%S"))
    table = Table(
        name=t.name,
        schema_ref=t.db,
        engine="InnoDB",
        collation_id=UTF8MB4_0900_AI_CI,
        columns=tuple(columns),
        mysql_version_id=MYSQLD_VERSION_ID,
        created=int(first_created.strftime("%Y%m%d%H%M%S")),
        last_altered=stamp,
        hidden=1,
        options=TABLE_OPTIONS,
        se_private_id=se_id,
        se_private_data=f"autoinc=0;version={t.version - 1};",
        row_format=ROW_FORMAT_DYNAMIC,
        indexes=indexes,
    )
    space = Tablespace(
        name=tablespace,
        engine="InnoDB",
        options="autoextend_size=0;encryption=N;",
        se_private_data=f"flags=16417;id={space_id};server_version={MYSQLD_VERSION_ID};space_version=1;state=normal;",
        files=(TablespaceFile(1, f"./{t.db}/{t.name}.ibd", f"id={space_id};"),),
    )
    return (
        SdiDocument(SdiHeader(MYSQLD_VERSION_ID, DD_VERSION, SDI_VERSION, "Table"), table),
        SdiDocument(SdiHeader(MYSQLD_VERSION_ID, DD_VERSION, SDI_VERSION, "Tablespace"), space),
    )


def write_table_sdi(root: Path, t: TableDef, created: dt.datetime, first_created: dt.datetime) -> list[Path]:
    """``<root>/<db>/<table>/v<N>/<table>_<id>.sdi`` and ``.../<table>.ibd2sdi.json``; returns both paths."""
    table_doc, space_doc = sdi_documents(t, created, first_created)
    se_id, space_id = table_ids(t)
    folder = root / t.db / t.name / f"v{t.version}"
    folder.mkdir(parents=True, exist_ok=True)
    sdi_path = folder / f"{t.name}_{se_id}.sdi"
    sdi_path.write_text(to_json(table_doc), encoding="utf-8")
    ibd2sdi_path = folder / f"{t.name}.ibd2sdi.json"
    ibd2sdi_path.write_text(
        to_ibd2sdi(
            [(T.SDI_TYPE_TABLE, se_id, to_json(table_doc)), (T.SDI_TYPE_TABLESPACE, space_id, to_json(space_doc))],
            pretty=True,
        ),
        encoding="utf-8",
    )
    return [sdi_path, ibd2sdi_path]
