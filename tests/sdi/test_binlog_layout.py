"""From SDI tables to binlog row layouts (TableSchema), checked against the SDI fixtures column by column and
against TABLE_MAP events that real servers wrote."""

from __future__ import annotations

import pytest

from binlake.binlog.decoders import DecodeContext
from binlake.binlog.errors import SchemaMismatchError
from binlake.binlog.reader import read_events
from binlake.binlog.schema import ColumnInfo
from binlake.sdi import SdiSchemaProvider, check_table_map, read_entries, table_schema
from binlake.sdi.model import Column, ColumnTypeElement, Index, IndexElement, Table
from tests.support import fixture_path


def _fixture_table(name: str) -> Table:
    [entry, _] = read_entries(fixture_path("sdi", "ibd", "innodb_ruby", f"{name}.ibd"))
    return entry.document().table


def _cols(schema) -> list[tuple]:
    return [
        (c.name, c.type_code, c.unsigned, c.collation_id, c.enum_values, c.set_values, c.geometry_type, c.visible)
        for c in schema.columns
    ]


# (name, MYSQL_TYPE_*, unsigned, collation id, ENUM values, SET values, geometry type, visible), written from the
# tables' DDL (sakila-schema.sql): SMALLINT 2, TINYINT 1, INT 3, VARCHAR 15, TEXT/BLOB 252, YEAR 13, DECIMAL 246,
# ENUM/SET 254, TIMESTAMP 17, GEOMETRY 255; utf8mb4_0900_ai_ci = 255, binary = None.
EXPECTED = {
    "8.0_sakila_actor": (
        [
            ("actor_id", 2, True, None, None, None, None, True),
            ("first_name", 15, False, 255, None, None, None, True),
            ("last_name", 15, False, 255, None, None, None, True),
            ("last_update", 17, False, None, None, None, None, True),
        ],
        ((0, 0),),
    ),
    "8.0_sakila_address": (
        [
            ("address_id", 2, True, None, None, None, None, True),
            ("address", 15, False, 255, None, None, None, True),
            ("address2", 15, False, 255, None, None, None, True),
            ("district", 15, False, 255, None, None, None, True),
            ("city_id", 2, True, None, None, None, None, True),
            ("postal_code", 15, False, 255, None, None, None, True),
            ("phone", 15, False, 255, None, None, None, True),
            ("location", 255, False, None, None, None, 0, True),
            ("last_update", 17, False, None, None, None, None, True),
        ],
        ((0, 0),),
    ),
    "8.0_sakila_film": (
        [
            ("film_id", 2, True, None, None, None, None, True),
            ("title", 15, False, 255, None, None, None, True),
            ("description", 252, False, 255, None, None, None, True),
            ("release_year", 13, False, None, None, None, None, True),
            ("language_id", 1, True, None, None, None, None, True),
            ("original_language_id", 1, True, None, None, None, None, True),
            ("rental_duration", 1, True, None, None, None, None, True),
            ("rental_rate", 246, False, None, None, None, None, True),
            ("length", 2, True, None, None, None, None, True),
            ("replacement_cost", 246, False, None, None, None, None, True),
            ("rating", 254, False, 255, ("G", "PG", "PG-13", "R", "NC-17"), None, None, True),
            (
                "special_features",
                254,
                False,
                255,
                None,
                ("Trailers", "Commentaries", "Deleted Scenes", "Behind the Scenes"),
                None,
                True,
            ),
            ("last_update", 17, False, None, None, None, None, True),
        ],
        ((0, 0),),
    ),
    "8.0_sakila_film_text": (
        [  # FTS_DOC_ID, DB_TRX_ID, DB_ROLL_PTR are InnoDB's: not in TABLE_MAP
            ("film_id", 2, True, None, None, None, None, True),
            ("title", 15, False, 255, None, None, None, True),
            ("description", 252, False, 255, None, None, None, True),
        ],
        ((0, 0),),
    ),
    "8.0_sakila_staff": (
        [
            ("staff_id", 1, True, None, None, None, None, True),
            ("first_name", 15, False, 255, None, None, None, True),
            ("last_name", 15, False, 255, None, None, None, True),
            ("address_id", 2, True, None, None, None, None, True),
            ("picture", 252, False, None, None, None, None, True),  # BLOB: binary
            ("email", 15, False, 255, None, None, None, True),
            ("store_id", 1, True, None, None, None, None, True),
            ("active", 1, False, None, None, None, None, True),
            ("username", 15, False, 255, None, None, None, True),
            ("password", 15, False, 46, None, None, None, True),  # utf8mb4_bin
            ("last_update", 17, False, None, None, None, None, True),
        ],
        ((0, 0),),
    ),
    "8.0_sys_sys_config": (
        [
            ("variable", 15, False, 255, None, None, None, True),
            ("value", 15, False, 255, None, None, None, True),
            ("set_time", 17, False, None, None, None, None, True),
            ("set_by", 15, False, 255, None, None, None, True),
        ],
        ((0, 0),),
    ),
    "8.0_sakila_fts_0000000000000451_config": (
        [
            ("key", 15, False, 8, None, None, None, True),  # latin1_swedish_ci
            ("value", 15, False, 8, None, None, None, True),
        ],
        ((0, 0),),
    ),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_table_schema_of_fixture_tables(name):
    table = _fixture_table(name)
    schema = table_schema(table, source=name)
    columns, pk = EXPECTED[name]
    assert (schema.db, schema.table) == (
        "sys" if "sys_config" in name else "sakila",
        name.split("_", 1)[1].removeprefix("sakila_").removeprefix("sys_"),
    )
    assert _cols(schema) == columns
    assert schema.primary_key == pk
    assert schema.source == name


def _col(name, dd_type, pos, **kw) -> Column:
    return Column(name=name, type=dd_type, ordinal_position=pos, **kw)


def test_hidden_invisible_virtual_prefix_keys_and_types_without_fixtures():
    # CREATE TABLE t (id BIGINT UNSIGNED, c CHAR(10) latin1, b BLOB, e ENUM('\xe9t\xe9','x') latin1,
    #   j JSON, d DATE, v VECTOR(3), g INT AS (id+1) VIRTUAL, inv INT INVISIBLE, INDEX ((id*2)),
    #   PRIMARY KEY (c(4), b(10), id)) -- plus InnoDB's DB_TRX_ID/DB_ROLL_PTR
    cols = (
        _col("id", 9, 1, is_unsigned=True),
        _col("c", 29, 2, char_length=10, collation_id=8),
        _col("b", 27, 3, char_length=65535, collation_id=63),
        _col("e", 22, 4, collation_id=8, elements=(ColumnTypeElement(b"\xe9t\xe9", 1), ColumnTypeElement(b"x", 2))),
        _col("j", 31, 5, collation_id=63),
        _col("d", 15, 6),
        _col("v", 32, 7, char_length=12, collation_id=63),
        _col("g", 4, 8, is_virtual=True, generation_expression_utf8="(`id` + 1)"),
        _col("inv", 4, 9, hidden=4),
        _col("DB_TRX_ID", 10, 11, hidden=2),
        _col("!hidden!i!0!0", 9, 10, hidden=3, is_virtual=True),
        _col("DB_ROLL_PTR", 9, 12, hidden=2),
    )
    pk = Index(
        name="PRIMARY",
        type=1,
        elements=(
            IndexElement(1, 4, 2, False, 1),
            IndexElement(2, 10, 2, False, 2),
            IndexElement(3, 8, 2, False, 0),
            IndexElement(4, 4294967295, 2, True, 9),
        ),
    )
    table = Table(name="t", schema_ref="db", engine="InnoDB", collation_id=8, columns=cols, indexes=(pk,))
    schema = table_schema(table)
    assert [(c.name, c.type_code, c.unsigned, c.collation_id, c.visible) for c in schema.columns] == [
        ("id", 8, True, None, True),
        ("c", 254, False, 8, True),
        ("b", 252, False, None, True),
        ("e", 254, False, 8, True),
        ("j", 245, False, None, True),
        ("d", 10, False, None, True),
        ("v", 242, False, None, True),
        ("g", 3, False, None, True),
        ("inv", 3, False, None, False),
        ("!hidden!i!0!0", 8, False, None, True),
    ]  # ordered by ordinal_position, SE-hidden left out
    assert schema.columns[3].enum_values == ("\u00e9t\u00e9", "x")  # latin1 decoded
    assert schema.columns[6].vector_dimensions == 3
    # c(4) of a latin1 CHAR(10) and b(10) of a BLOB are prefixes (in characters); id is whole
    assert schema.primary_key == ((1, 4), (2, 10), (0, 0))


def test_unique_not_null_key_is_the_primary_key_when_there_is_none():
    cols = (
        _col("a", 4, 1, is_nullable=True),
        _col("b", 4, 2),
        _col("c", 16, 3, char_length=40, collation_id=255),
        _col("DB_ROW_ID", 10, 4, hidden=2),
    )
    gen_pk = Index(name="PRIMARY", type=1, hidden=True, elements=(IndexElement(1, 4294967295, 2, True, 3),))
    u_null = Index(name="ua", type=2, ordinal_position=2, elements=(IndexElement(1, 4, 2, False, 0),))
    u_prefix = Index(name="uc", type=2, ordinal_position=3, elements=(IndexElement(1, 8, 2, False, 2),))
    u_ok = Index(name="ub", type=2, ordinal_position=4, elements=(IndexElement(1, 4, 2, False, 1),))
    t = Table(
        name="t",
        schema_ref="db",
        engine="InnoDB",
        collation_id=255,
        columns=cols,
        indexes=(gen_pk, u_null, u_prefix, u_ok),
    )
    assert table_schema(t).primary_key == ((1, 0),)
    assert (
        table_schema(
            Table(name="t", schema_ref="db", engine="InnoDB", collation_id=255, columns=cols, indexes=(gen_pk, u_null))
        ).primary_key
        == ()
    )


def _table_maps(path) -> list:
    return [
        ev.body for ev in read_events(open(path, "rb"), file=str(path)) if type(ev.body).__name__ == "TableMapEvent"
    ]


def test_matches_a_real_table_map_with_invisible_columns():
    # binlog-invisible-columns.000001 (MySQL 8.0.26, binlog_row_metadata=FULL):
    # CREATE TABLE t1 (f1 INT UNSIGNED INVISIBLE, f2 INT UNSIGNED INVISIBLE, f3 INT, f4 TEXT, f5 BLOB,
    #                  f6 BIGINT UNSIGNED INVISIBLE)
    tm = _table_maps(fixture_path("binlog", "rust_mysql_common", "binlog-invisible-columns.000001"))[0]
    cols = (
        _col("f1", 4, 1, is_unsigned=True, hidden=4, is_nullable=True),
        _col("f2", 4, 2, is_unsigned=True, hidden=4, is_nullable=True),
        _col("f3", 4, 3, is_nullable=True),
        _col("f4", 27, 4, collation_id=255, is_nullable=True),
        _col("f5", 27, 5, collation_id=63, is_nullable=True),
        _col("f6", 9, 6, is_unsigned=True, hidden=4, is_nullable=True),
        _col("DB_ROW_ID", 10, 7, hidden=2),
        _col("DB_TRX_ID", 10, 8, hidden=2),
        _col("DB_ROLL_PTR", 9, 9, hidden=2),
    )
    schema = table_schema(Table(name="t1", schema_ref="mysql", engine="InnoDB", collation_id=255, columns=cols))
    assert tuple(c.type_code for c in schema.columns) == tm.column_types == (3, 3, 3, 252, 252, 8)
    assert tuple(c.name for c in schema.columns) == tm.column_names
    assert tuple(c.visible for c in schema.columns) == tm.column_visibility
    numeric = [c for c in schema.columns if c.type_code in (3, 8)]
    assert tuple(c.unsigned for c in numeric) == tm.signedness
    assert tuple(c.collation_id or 63 for c in schema.columns if c.type_code == 252) == tm.column_charsets
    check_table_map(schema, tm.column_types)


def test_functional_index_column_is_in_the_table_map():
    # rpl_unfiltered_hidden_gcol.000001 (8.0.17): CREATE TABLE t (a INT, INDEX i((a+1))); ALTER TABLE t ADD b TEXT
    tm = _table_maps(fixture_path("binlog", "rust_mysql_common", "rpl_unfiltered_hidden_gcol.000001"))[0]
    cols = (
        _col("a", 4, 1, is_nullable=True),
        _col("!hidden!i!0!0", 9, 2, hidden=3, is_virtual=True, generation_expression_utf8="(`a` + 1)"),
        _col("b", 27, 3, collation_id=255, is_nullable=True),
        _col("DB_ROW_ID", 10, 4, hidden=2),
        _col("DB_TRX_ID", 10, 5, hidden=2),
        _col("DB_ROLL_PTR", 9, 6, hidden=2),
    )
    schema = table_schema(Table(name="t", schema_ref="test", engine="InnoDB", collation_id=255, columns=cols))
    assert tuple(c.type_code for c in schema.columns) == tm.column_types == (3, 8, 252)


def _noria_t1(types=(4, 27, 29, 4, 4)) -> Table:
    names = ("a", "b", "c", "d", "e")
    cols = tuple(
        _col(n, t, i + 1, is_unsigned=(n == "e"), collation_id=63 if n == "b" else 255)
        for i, (n, t) in enumerate(zip(names, types))
    )
    return Table(name="t1", schema_ref="noria", engine="InnoDB", collation_id=255, columns=cols)


def test_the_row_decoder_takes_names_from_the_sdi_when_table_map_has_none():
    path = fixture_path("binlog", "rust_mysql_common", "minimal_row_metadata.000001")  # binlog_row_metadata=MINIMAL
    ctx = DecodeContext(schema_provider=SdiSchemaProvider.from_tables([_noria_t1()]))
    events = list(read_events(open(path, "rb"), file=str(path), ctx=ctx))
    [layout] = ctx.tables.values()
    assert layout.table_map.column_names is None
    assert layout.column_names == ("a", "b", "c", "d", "e")
    rows = [ev.body.rows for ev in events if type(ev.body).__name__ == "WriteRowsEvent"]
    assert rows and rows[0][0][4] == 3230202323  # e: INT UNSIGNED beyond 2^31

    bad = DecodeContext(schema_provider=SdiSchemaProvider.from_tables([_noria_t1((4, 27, 29, 4, 9))]))
    with pytest.raises(SchemaMismatchError, match="at column 5 \\(`e`\\)"):
        list(read_events(open(path, "rb"), file=str(path), ctx=bad))


def test_provider_picks_the_version_that_fits():
    v1 = table_schema(_noria_t1((4, 27, 29, 4)[:4] + (4,)), "v1")
    v2 = table_schema(_noria_t1((4, 27, 29, 4, 9)), "v2")
    provider = SdiSchemaProvider([v1, v2])
    assert provider("noria", "t1", (3, 252, 254, 3, 8)).source == "v2"
    assert provider("noria", "t1", (3, 252, 254, 3, 3)).source == "v1"
    assert provider("NORIA", "T1", (3, 252, 254, 3, 3)).source == "v1"
    assert provider("noria", "other", (3,)) is None
    with pytest.raises(SchemaMismatchError, match=r"none of the 2 known definitions of `noria`.`t1`"):
        provider("noria", "t1", (3, 252))
    with pytest.raises(SchemaMismatchError, match="expected 5 columns, found 2 columns"):
        SdiSchemaProvider([v1])("noria", "t1", (3, 252))
    with pytest.raises(SchemaMismatchError, match="expected LONG, found VARCHAR"):
        check_table_map(v1, (3, 252, 254, 3, 15))
    assert isinstance(v1.columns[0], ColumnInfo)


def test_generator_sdi_and_table_maps_agree():
    """Contract with binlake.generate (written independently): the SDI it writes for a table maps to the very
    TABLE_MAP it emits for that table (types, names, signedness, primary key)."""
    import datetime as dt

    from binlake.generate.emit import table_map_event
    from binlake.generate.sdi_out import sdi_documents
    from binlake.generate.tables import base_tables

    for t in base_tables():
        doc, _ = sdi_documents(t, dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 1))
        schema = table_schema(parse_sdi_text(doc))
        tm = table_map_event(t)
        assert tuple(c.type_code for c in schema.columns) == tm.column_types, t.name
        assert tuple(c.name for c in schema.columns) == tm.column_names
        numeric = [c.unsigned for c in schema.columns if c.type_code in (1, 2, 3, 4, 5, 8, 9, 246)]
        assert tuple(numeric) == (tm.signedness or ())
        assert tuple(i for i, _ in schema.primary_key) == (tm.simple_primary_key or ())


def parse_sdi_text(doc):
    """Through JSON text and back, as the registry would read the generator's files."""
    from binlake.sdi import parse_sdi, to_json

    return parse_sdi(to_json(doc)).table
