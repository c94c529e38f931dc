"""The MariaDB 10.11 workload: tables over every column type, and the statements run against them.

Each column is declared once here with its SQL type and a ``kind`` that the oracles (``normalize.py``,
``mariadb_binlog_text.py``) use to bring values to one comparable form. Nothing here knows binlake.

Statements cover multi-row INSERTs with type extremes and NULLs, UPDATEs (incl. primary-key changes and
multi-row), DELETEs, one transaction over several tables, and an ALTER TABLE in the middle of the stream that
moves columns (after it, TABLE_MAP column positions differ: :class:`SchemaEpoch` records where).
"""

from __future__ import annotations

from dataclasses import dataclass, field

DB = "lake"


@dataclass(frozen=True, slots=True)
class Column:
    """One column: its name, SQL type and the value kind the oracles compare it as.

    kinds: int, decimal, float, double, bit, year, date, time, datetime, timestamp, char (text, trailing spaces
    not significant), text, binary (``fixed`` = BINARY(n) width, 0 = variable), enum, set, json, geometry,
    inet4, inet6, uuid.
    """

    name: str
    sql: str
    kind: str
    bits: int = 0  # integer width in bits (int kind)
    unsigned: bool = False
    fixed: int = 0  # BINARY(n) width
    members: tuple[str, ...] = ()  # ENUM/SET members in definition order
    charset: str = "utf8mb4"  # text kinds: the column's character set


@dataclass(frozen=True, slots=True)
class Table:
    name: str
    columns: tuple[Column, ...]

    def column(self, name: str) -> Column:
        for col in self.columns:
            if col.name == name:
                return col
        raise KeyError(name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


def _ints() -> tuple[Column, ...]:
    cols = [Column("id", "INT NOT NULL PRIMARY KEY", "int", 32)]
    for sql, bits in (("TINYINT", 8), ("SMALLINT", 16), ("MEDIUMINT", 24), ("INT", 32), ("BIGINT", 64)):
        short = sql.lower()
        cols.append(Column(f"{short}_s", sql, "int", bits))
        cols.append(Column(f"{short}_u", f"{sql} UNSIGNED", "int", bits, unsigned=True))
    cols.append(Column("bool_c", "BOOLEAN", "int", 8))
    cols.append(Column("zf", "INT(6) UNSIGNED ZEROFILL", "int", 32, unsigned=True))
    return tuple(cols)


INT_EXTREMES = {
    8: (-128, 127, 255),
    16: (-32768, 32767, 65535),
    24: (-8388608, 8388607, 16777215),
    32: (-2147483648, 2147483647, 4294967295),
    64: (-9223372036854775808, 9223372036854775807, 18446744073709551615),
}

ENUM_BIG = tuple(f"v{i:03d}" for i in range(300))  # > 255 members: 2-byte ENUM storage
SET_SMALL = ("x", "y", "zé")
SET_BIG = tuple(f"s{i:02d}" for i in range(64))  # 64 members: 8-byte SET storage

T_INT = Table("t_int", _ints())
T_NUM = Table(
    "t_num",
    (
        Column("id", "INT NOT NULL PRIMARY KEY", "int", 32),
        Column("d1_0", "DECIMAL(1,0)", "decimal"),
        Column("d5_2", "DECIMAL(5,2)", "decimal"),
        Column("d9_9", "DECIMAL(9,9)", "decimal"),
        Column("d10_4", "DECIMAL(10,4) UNSIGNED", "decimal"),
        Column("d18_0", "DECIMAL(18,0)", "decimal"),
        Column("d19_10", "DECIMAL(19,10)", "decimal"),
        Column("d38_17", "DECIMAL(38,17)", "decimal"),
        Column("d65_0", "DECIMAL(65,0)", "decimal"),
        Column("d65_30", "DECIMAL(65,30)", "decimal"),
        Column("f", "FLOAT", "float"),
        Column("f_md", "FLOAT(7,3)", "float"),
        Column("dbl", "DOUBLE", "double"),
        Column("dbl_md", "DOUBLE(12,5)", "double"),
    ),
)
T_BIT = Table(
    "t_bit",
    (
        Column("id", "INT NOT NULL PRIMARY KEY", "int", 32),
        *(Column(f"b{n}", f"BIT({n})", "bit", n) for n in (1, 2, 7, 8, 9, 16, 17, 31, 33, 63, 64)),
    ),
)
T_TIME = Table(
    "t_time",
    (
        Column("id", "INT NOT NULL PRIMARY KEY", "int", 32),
        Column("y", "YEAR", "year"),
        Column("dt", "DATE", "date"),
        *(Column(f"tm{p}", f"TIME({p})", "time") for p in (0, 1, 3, 6)),
        *(Column(f"dtm{p}", f"DATETIME({p})", "datetime") for p in range(7)),
        *(Column(f"ts{p}", f"TIMESTAMP({p}) NULL DEFAULT NULL", "timestamp") for p in range(7)),
    ),
)
T_STR = Table(
    "t_str",
    (
        Column("id", "INT NOT NULL PRIMARY KEY", "int", 32),
        Column("c_u", "CHAR(10) CHARACTER SET utf8mb4", "char"),
        Column("c_u255", "CHAR(255) CHARACTER SET utf8mb4", "char"),
        Column("vc_u", "VARCHAR(300) CHARACTER SET utf8mb4", "text"),
        Column("c_l", "CHAR(10) CHARACTER SET latin1", "char", charset="latin1"),
        Column("vc_l", "VARCHAR(20) CHARACTER SET latin1", "text", charset="latin1"),
        Column("c_bin", "CHAR(6) CHARACTER SET binary", "binary", fixed=6),
        Column("vc_bin", "VARCHAR(40) CHARACTER SET binary", "binary"),
        Column("c_ucs2", "CHAR(4) CHARACTER SET ucs2", "char", charset="ucs2"),
        Column("vc_utf16", "VARCHAR(10) CHARACTER SET utf16", "text", charset="utf16"),
        Column("bin8", "BINARY(8)", "binary", fixed=8),
        Column("vbin", "VARBINARY(300)", "binary"),
    ),
)
T_LOB = Table(
    "t_lob",
    (
        Column("id", "INT NOT NULL PRIMARY KEY", "int", 32),
        Column("tb", "TINYBLOB", "binary"),
        Column("b", "BLOB", "binary"),
        Column("mb", "MEDIUMBLOB", "binary"),
        Column("lb", "LONGBLOB", "binary"),
        Column("tt", "TINYTEXT", "text"),
        Column("tx", "TEXT", "text"),
        Column("mt", "MEDIUMTEXT CHARACTER SET latin1", "text", charset="latin1"),
        Column("lt", "LONGTEXT", "text"),
        Column("e", "ENUM('a','b','ç')", "enum", members=("a", "b", "ç")),
        Column("e_big", "ENUM(" + ",".join(f"'{m}'" for m in ENUM_BIG) + ")", "enum", members=ENUM_BIG),
        Column("s", "SET('x','y','zé')", "set", members=SET_SMALL),
        Column("s_big", "SET(" + ",".join(f"'{m}'" for m in SET_BIG) + ")", "set", members=SET_BIG),
        Column("j", "JSON", "json"),
    ),
)
T_GEO = Table(
    "t_geo",
    (
        Column("id", "INT NOT NULL PRIMARY KEY", "int", 32),
        Column("g", "GEOMETRY", "geometry"),
        Column("p", "POINT", "geometry"),
        Column("ls", "LINESTRING", "geometry"),
        Column("pg", "POLYGON", "geometry"),
        Column("gc", "GEOMETRYCOLLECTION", "geometry"),
        Column("ip6", "INET6", "inet6"),
        Column("ip4", "INET4", "inet4"),
        Column("u", "UUID", "uuid"),
    ),
)
# Created while the server writes MariaDB 5.3's temporal formats (mysql56_temporal_format=OFF): the binlog then
# carries MYSQL_TYPE_TIME/DATETIME/TIMESTAMP (11/12/7) with fractional digits instead of the *2 types.
T_OLD_TIME = Table(
    "t_old_time",
    (
        Column("id", "INT NOT NULL PRIMARY KEY", "int", 32),
        Column("tm0", "TIME", "time"),
        Column("tm3", "TIME(3)", "time"),
        Column("tm6", "TIME(6)", "time"),
        Column("dtm0", "DATETIME", "datetime"),
        Column("dtm4", "DATETIME(4)", "datetime"),
        Column("ts0", "TIMESTAMP NULL DEFAULT NULL", "timestamp"),
        Column("ts2", "TIMESTAMP(2) NULL DEFAULT NULL", "timestamp"),
    ),
)

TABLES = (T_INT, T_NUM, T_BIT, T_TIME, T_STR, T_LOB, T_GEO, T_OLD_TIME)

# The mid-stream DDL: a column added in the middle of t_int, after which positions of later columns shift.
ALTER_T_INT = f"ALTER TABLE {DB}.t_int ADD COLUMN added VARCHAR(8) NOT NULL DEFAULT 'dflt' AFTER tinyint_s"
ADDED_COLUMN = Column("added", "VARCHAR(8) NOT NULL DEFAULT 'dflt'", "text")
T_INT_AFTER_ALTER = Table("t_int", (T_INT.columns[0], T_INT.columns[1], ADDED_COLUMN, *T_INT.columns[2:]))


def _create(table: Table) -> str:
    cols = ", ".join(f"`{c.name}` {c.sql}" for c in table.columns)
    return f"CREATE TABLE {DB}.{table.name} ({cols}) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"


def _insert(table: Table, rows: list[tuple[str, ...]]) -> str:
    values = ", ".join("(" + ", ".join(row) + ")" for row in rows)
    return f"INSERT INTO {DB}.{table.name} ({', '.join('`' + n + '`' for n in table.names)}) VALUES {values}"


def _int_rows() -> list[tuple[str, ...]]:
    def row(pk: int, pick: int) -> tuple[str, ...]:
        vals = [str(pk)]
        for bits in (8, 16, 24, 32, 64):
            lo, hi, uhi = INT_EXTREMES[bits]
            vals += [str((lo, hi, 0, -1)[pick]), str((0, uhi, 1, uhi - 1)[pick])]
        vals += [("0", "1", "1", "0")[pick], ("0", "4294967295", "42", "123456")[pick]]
        return tuple(vals)

    rows = [row(1, 0), row(2, 1), row(3, 2), row(4, 3)]
    rows.append(("5",) + ("NULL",) * (len(T_INT.columns) - 1))
    return rows


def _num_rows() -> list[tuple[str, ...]]:
    return [
        (
            "1",
            "9",
            "999.99",
            "0.999999999",
            "999999.9999",
            "999999999999999999",
            "-123456789.0123456789",
            "-123456789012345678901.12345678901234567",
            "9" * 65,
            "-" + "9" * 35 + "." + "9" * 30,
            "3.40282e38",
            "1234.125",
            "1.7976931348623157e308",
            "-1234567.12345",
        ),
        (
            "2",
            "-9",
            "-999.99",
            "-0.000000001",
            "0.0001",
            "-999999999999999999",
            "0.0000000001",
            "0.00000000000000001",
            "-" + "9" * 65,
            "0.000000000000000000000000000001",
            "-1.17549e-38",
            "-9999.999",
            "-2.2250738585072014e-308",
            "0.00001",
        ),
        ("3", "0", "0.00", "0.000000000", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0"),
        (
            "4",
            "-1",
            "-0.5",
            "0.5",
            "1.5",
            "-1",
            "1.5",
            "-100.00000000000000001",
            "12345678901234567890123456789012345678901234567890123456789012345",
            "12345678901234567890123456789012345.123456789012345678901234567890",
            "0.1",
            "0.125",
            "0.1",
            "-0.5",
        ),
        ("5",) + ("NULL",) * (len(T_NUM.columns) - 1),
    ]


def _bit_rows() -> list[tuple[str, ...]]:
    widths = [c.bits for c in T_BIT.columns[1:]]
    return [
        ("1",) + tuple(f"b'{'1' * n}'" for n in widths),
        ("2",) + tuple("b'0'" for _ in widths),
        ("3",) + tuple(f"b'{('10' * n)[:n]}'" for n in widths),
        ("4",) + ("NULL",) * len(widths),
    ]


def _time_rows() -> list[tuple[str, ...]]:
    fsp_dt = (
        "'2024-02-29 23:59:59'",
        "'2024-02-29 23:59:59.9'",
        "'1000-01-01 00:00:00.01'",
        "'9999-12-31 23:59:59.999'",
        "'2024-02-29 12:34:56.1234'",
        "'1970-01-01 00:00:00.00001'",
        "'9999-12-31 23:59:59.999999'",
    )
    fsp_ts = (
        "'1970-01-01 00:00:01'",
        "'2038-01-19 03:14:07.9'",
        "'2024-02-29 12:34:56.12'",
        "'2000-01-01 00:00:00.999'",
        "'1999-12-31 23:59:59.1234'",
        "'2024-06-30 23:59:59.99999'",
        "'2038-01-19 03:14:07.999999'",
    )
    return [
        (
            "1",
            "1901",
            "'1000-01-01'",
            "'-838:59:59'",
            "'-838:59:59.9'",
            "'-00:00:00.001'",
            "'838:59:59.999999'",
            *fsp_dt,
            *fsp_ts,
        ),
        (
            "2",
            "2155",
            "'9999-12-31'",
            "'25:00:00'",
            "'100:00:00.5'",
            "'-12:34:56.789'",
            "'-00:00:01.000001'",
            "'0000-00-00 00:00:00'",
            "'2000-01-01 00:00:00.0'",
            "'2000-01-01 00:00:00.10'",
            "'2000-01-01 00:00:00.100'",
            "'2000-01-01 00:00:00.1000'",
            "'2000-01-01 00:00:00.00000'",
            "'2000-01-01 00:00:00.000001'",
            "'0000-00-00 00:00:00'",
            "'2024-02-29 00:00:00.1'",
            "'2024-02-29 00:00:00.01'",
            "'2024-02-29 00:00:00.001'",
            "'2024-02-29 00:00:00.0001'",
            "'2024-02-29 00:00:00.00001'",
            "'2024-02-29 00:00:00.000001'",
        ),
        (
            "3",
            "0",
            "'0000-00-00'",
            "'00:00:00'",
            "'-00:00:00.1'",
            "'00:00:00.000'",
            "'-838:59:59.000000'",
            "'2024-00-00 00:00:00'",
            "'2024-01-00 00:00:00.5'",
            "'0001-01-01 00:00:00.25'",
            "'2024-02-29 00:00:00.125'",
            "'2024-02-29 00:00:00.9999'",
            "'2024-02-29 00:00:00.99999'",
            "'2024-02-29 00:00:00.999999'",
            *fsp_ts,
        ),
        (
            "4",
            "2024",
            "'2024-00-00'",
            "'-01:00:00'",
            "'23:59:59.9'",
            "'24:00:00.5'",
            "'-00:00:00.000001'",
            *fsp_dt,
            *fsp_ts,
        ),
        ("5",) + ("NULL",) * (len(T_TIME.columns) - 1),
    ]


def _str_rows() -> list[tuple[str, ...]]:
    long_u = "'" + "ü€😀" * 90 + "'"  # 270 chars, 1 + 3 + 4 bytes each
    return [
        (
            "1",
            "'abc'",
            "'" + "😀" * 255 + "'",
            long_u,
            "'Ünïcödé'",
            "'ÿ£'",
            "X'00FF00'",
            "X'00'",
            "'ab'",
            "'😀x'",
            "X'0102'",
            "X'" + "ab" * 300 + "'",
        ),
        (
            "2",
            "''",
            "'trailing  '",
            "'  lead and trail  '",
            "'a b  '",
            "''",
            "''",
            "''",
            "''",
            "''",
            "X'0000000000000000'",
            "''",
        ),
        (
            "3",
            "'ten chars!'",
            "'x'",
            "'quote '' back\\\\slash \\n newline \\t tab'",
            "'é'",
            "'x\\0y'",
            "X'FFFFFFFFFFFF'",
            "X'5C275C'",
            "'Ω'",
            "'\\0'",
            "X'FF'",
            "X'00'",
        ),
        ("4",) + ("NULL",) * (len(T_STR.columns) - 1),
    ]


def _lob_rows() -> list[tuple[str, ...]]:
    return [
        (
            "1",
            "X'00FF'",
            "X'" + "0102" * 1000 + "'",
            "REPEAT(X'ABCDEF', 30000)",
            "REPEAT(X'00', 70000)",
            "'tiny ü'",
            "REPEAT('tëxt ', 200)",
            "REPEAT('latin ÿ', 10000)",
            "REPEAT('long 😀 ', 20000)",
            "'ç'",
            "'v299'",
            "'x,zé'",
            "'" + ",".join(SET_BIG) + "'",
            '\'{"a": [1, 2.5, "ü", null, true], "b": {"c": "d"}}\'',
        ),
        ("2", "''", "''", "''", "''", "''", "''", "''", "''", "'a'", "'v000'", "''", "''", "'[]'"),
        (
            "3",
            "X'FF'",
            "'text in blob'",
            "X'00'",
            "'x'",
            "'\\0'",
            "'\\\\'",
            "'é'",
            "'\\n'",
            "'b'",
            "'v255'",
            "'y'",
            "'s00,s07,s08,s31,s32,s63'",
            "'\"just a string\"'",
        ),
        ("4",) + ("NULL",) * (len(T_LOB.columns) - 1),
    ]


def _geo_rows() -> list[tuple[str, ...]]:
    return [
        (
            "1",
            "ST_GeomFromText('POINT(1 2)')",
            "ST_GeomFromText('POINT(-1.5 1e300)')",
            "ST_GeomFromText('LINESTRING(0 0, 1 1, 2 0)')",
            "ST_GeomFromText('POLYGON((0 0, 4 0, 4 4, 0 4, 0 0), (1 1, 2 1, 2 2, 1 1))')",
            "ST_GeomFromText('GEOMETRYCOLLECTION(POINT(1 1), LINESTRING(0 0, 1 1))')",
            "'2001:db8::ff00:42:8329'",
            "'192.168.0.1'",
            "'123e4567-e89b-12d3-a456-426614174000'",
        ),
        (
            "2",
            "ST_GeomFromText('POLYGON((0 0, 1 0, 1 1, 0 0))', 4326)",
            "ST_GeomFromText('POINT(0 0)')",
            "ST_GeomFromText('LINESTRING(1 1, 2 2)')",
            "ST_GeomFromText('POLYGON((0 0, 1 0, 1 1, 0 0))')",
            "ST_GeomFromText('GEOMETRYCOLLECTION EMPTY')",
            "'::'",
            "'0.0.0.0'",
            "'ffffffff-ffff-ffff-ffff-ffffffffffff'",
        ),
        (
            "3",
            "NULL",
            "NULL",
            "NULL",
            "NULL",
            "NULL",
            "'::ffff:1.2.3.4'",
            "'255.255.255.255'",
            "'00000000-0000-0000-0000-000000000001'",
        ),
        ("4",) + ("NULL",) * (len(T_GEO.columns) - 1),
    ]


def _old_time_rows() -> list[tuple[str, ...]]:
    return [
        (
            "1",
            "'-838:59:59'",
            "'-12:34:56.789'",
            "'838:59:59.999999'",
            "'1000-01-01 00:00:00'",
            "'9999-12-31 23:59:59.9999'",
            "'1970-01-01 00:00:01'",
            "'2038-01-19 03:14:07.99'",
        ),
        (
            "2",
            "'25:00:00'",
            "'-00:00:00.001'",
            "'-00:00:00.000001'",
            "'0000-00-00 00:00:00'",
            "'2024-02-29 12:34:56.0001'",
            "'2024-02-29 12:34:56'",
            "'2000-01-01 00:00:00.01'",
        ),
        ("3",) + ("NULL",) * (len(T_OLD_TIME.columns) - 1),
    ]


@dataclass(frozen=True, slots=True)
class SchemaEpoch:
    """Column order of ``table`` for row events at binlog positions >= ``from_pos`` in ``binlog`` (a file name)."""

    table: str
    binlog: str
    from_pos: int
    columns: tuple[Column, ...]


@dataclass
class WorkloadResult:
    epochs: list[SchemaEpoch] = field(default_factory=list)

    def columns_at(self, table: str, binlog: str, pos: int, binlog_order: list[str]) -> tuple[Column, ...]:
        """The column list of ``table`` as it was for a row event at (binlog, pos)."""
        key = (binlog_order.index(binlog), pos)
        chosen: tuple[Column, ...] | None = None
        for epoch in self.epochs:
            if epoch.table == table and (binlog_order.index(epoch.binlog), epoch.from_pos) <= key:
                chosen = epoch.columns
        if chosen is None:
            raise KeyError(f"no schema epoch for {table} at {binlog}:{pos}")
        return chosen


def statements_before_alter() -> list[str]:
    sql = [f"CREATE DATABASE {DB} CHARACTER SET utf8mb4"]
    sql += [_create(t) for t in TABLES if t is not T_OLD_TIME]
    sql += ["SET GLOBAL mysql56_temporal_format=OFF", _create(T_OLD_TIME), "SET GLOBAL mysql56_temporal_format=ON"]
    sql += [
        _insert(T_INT, _int_rows()),
        _insert(T_NUM, _num_rows()),
        _insert(T_BIT, _bit_rows()),
        _insert(T_TIME, _time_rows()),
        _insert(T_STR, _str_rows()),
        _insert(T_LOB, _lob_rows()),
        _insert(T_GEO, _geo_rows()),
        # updates: single row, several rows in one statement, to and from NULL, and primary-key changes
        f"UPDATE {DB}.t_int SET int_u = 4294967295, bigint_s = -9223372036854775808 WHERE id = 3",
        f"UPDATE {DB}.t_int SET id = id + 100 WHERE id IN (1, 2)",
        f"UPDATE {DB}.t_num SET d65_30 = -d65_30, f = -f, dbl = NULL WHERE id <= 2",
        f"UPDATE {DB}.t_num SET dbl = 2.5, d5_2 = 1.05 WHERE id = 5",
        f"UPDATE {DB}.t_bit SET b64 = b'1000000000000000000000000000000000000000000000000000000000000001', "
        f"b1 = NULL WHERE id = 1",
        f"UPDATE {DB}.t_time SET tm6 = '-838:59:58.999999', dtm6 = '1001-02-03 04:05:06.070809', "
        f"ts3 = '2030-01-01 00:00:00.5' WHERE id IN (1, 2)",
        f"UPDATE {DB}.t_str SET id = 40, vc_u = CONCAT(vc_u, '✓') WHERE id = 4",
        f"UPDATE {DB}.t_str SET c_l = 'Ä', vbin = X'C3A9' WHERE id = 1",
        f"UPDATE {DB}.t_lob SET lt = 'short now', e = 'a', s = 'x,y,zé', j = '{{\"k\": 1}}' WHERE id = 1",
        f"UPDATE {DB}.t_lob SET mb = REPEAT(X'01', 100), e_big = 'v123' WHERE id IN (2, 3)",
        f"UPDATE {DB}.t_geo SET p = ST_GeomFromText('POINT(3 4)'), ip6 = NULL WHERE id = 2",
        f"DELETE FROM {DB}.t_int WHERE id = 4",
        f"DELETE FROM {DB}.t_time WHERE id IN (3, 5)",
        f"DELETE FROM {DB}.t_geo WHERE id = 4",
        # one transaction over several tables
        "BEGIN",
        f"INSERT INTO {DB}.t_num (id, d5_2, f) VALUES (6, -1.01, 0.25), (7, 2.02, -0.75)",
        f"UPDATE {DB}.t_str SET c_u = 'in txn' WHERE id = 2",
        f"DELETE FROM {DB}.t_bit WHERE id = 4",
        f"UPDATE {DB}.t_lob SET id = 30, tt = 'moved' WHERE id = 3",
        "COMMIT",
    ]
    return sql


def statements_after_alter() -> list[str]:
    return [
        f"INSERT INTO {DB}.t_int (id, tinyint_s, added, int_u, bigint_u) VALUES (6, 1, 'new', 7, 18446744073709551615)",
        f"UPDATE {DB}.t_int SET added = 'upd', smallint_s = -1 WHERE id = 3",
        f"UPDATE {DB}.t_int SET id = 7 WHERE id = 6",
        f"DELETE FROM {DB}.t_int WHERE id = 5",
        f"INSERT INTO {DB}.t_time (id, ts6, dtm0) VALUES (9, '2001-09-09 01:46:40.000001', '2001-09-09 01:46:40')",
        f"UPDATE {DB}.t_bit SET b9 = b'100000000' WHERE id = 3",
    ]


def statements_old_temporal() -> list[str]:
    """Row changes of T_OLD_TIME: run in a binlog file of their own (mariadb-binlog stops at their first row
    event: it can not print MariaDB 5.3's TIME/DATETIME/TIMESTAMP column formats)."""
    return [
        "FLUSH BINARY LOGS",
        _insert(T_OLD_TIME, _old_time_rows()),
        f"UPDATE {DB}.t_old_time SET tm3 = '-00:00:00.5', dtm4 = '2024-01-01 00:00:00.1234' WHERE id = 1",
        f"DELETE FROM {DB}.t_old_time WHERE id = 3",
    ]


def run_workload(server) -> WorkloadResult:  # server: tests.mariadb_server.MariaDBServer
    """Run the workload on ``server`` (a fresh one: the reconstruction starts from empty tables)."""
    result = WorkloadResult()
    first = server.current_binlog().name
    for table in TABLES:
        result.epochs.append(SchemaEpoch(table.name, first, 0, table.columns))
    conn = server.connect()
    try:
        cur = conn.cursor()
        cur.execute("SET SESSION sql_mode = 'STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION'")
        for stmt in statements_before_alter():
            cur.execute(stmt)
        cur.execute(ALTER_T_INT)
        cur.execute("SHOW MASTER STATUS")
        binlog, pos = cur.fetchone()[:2]
        result.epochs.append(SchemaEpoch("t_int", binlog, int(pos), T_INT_AFTER_ALTER.columns))
        for stmt in statements_after_alter() + statements_old_temporal():
            cur.execute(stmt)
    finally:
        conn.close()
    return result


def final_tables() -> dict[str, Table]:
    """The tables as they are at the end of the workload (after the ALTER)."""
    tables = {t.name: t for t in TABLES}
    tables["t_int"] = T_INT_AFTER_ALTER
    return tables
