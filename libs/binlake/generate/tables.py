"""The generator's tables: column definitions with their binlog (TABLE_MAP) and data-dictionary (SDI) types.

One :class:`ColumnDef` carries everything the three outputs need: the DDL text (QUERY events), the binlog type
code and metadata (TABLE_MAP, ``Table_map_log_event``), and the ``dd::enum_column_types`` code, collation and
lengths (SDI, WL#7069). Table versions are immutable: an ``ALTER TABLE`` or ``RENAME TABLE`` makes a new
:class:`TableDef` with ``version + 1`` and a new TABLE_MAP table id (MySQL opens the changed table anew).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

# MySQL field types as written in TABLE_MAP (enum_field_types).
MYSQL_TYPE_TINY = 1
MYSQL_TYPE_SHORT = 2
MYSQL_TYPE_LONG = 3
MYSQL_TYPE_FLOAT = 4
MYSQL_TYPE_DOUBLE = 5
MYSQL_TYPE_LONGLONG = 8
MYSQL_TYPE_INT24 = 9
MYSQL_TYPE_DATE = 10
MYSQL_TYPE_YEAR = 13
MYSQL_TYPE_VARCHAR = 15
MYSQL_TYPE_BIT = 16
MYSQL_TYPE_TIMESTAMP2 = 17
MYSQL_TYPE_DATETIME2 = 18
MYSQL_TYPE_TIME2 = 19
MYSQL_TYPE_JSON = 245
MYSQL_TYPE_NEWDECIMAL = 246
MYSQL_TYPE_ENUM = 247
MYSQL_TYPE_SET = 248
MYSQL_TYPE_BLOB = 252
MYSQL_TYPE_STRING = 254

# dd::enum_column_types (the "type" of an SDI column).
DD_TYPE = {
    "tinyint": 2,
    "smallint": 3,
    "int": 4,
    "float": 5,
    "double": 6,
    "timestamp": 18,
    "bigint": 9,
    "mediumint": 10,
    "date": 11,
    "year": 14,
    "varchar": 16,
    "varbinary": 16,
    "bit": 17,
    "datetime": 19,
    "time": 20,
    "decimal": 21,
    "enum": 22,
    "set": 23,
    "mediumtext": 25,
    "mediumblob": 25,
    "text": 27,
    "blob": 27,
    "char": 29,
    "binary": 29,
    "json": 31,
}

UTF8MB4_0900_AI_CI = 255
LATIN1_SWEDISH_CI = 8
BINARY_COLLATION = 63
_MAXLEN = {UTF8MB4_0900_AI_CI: 4, LATIN1_SWEDISH_CI: 1, BINARY_COLLATION: 1}


@dataclass(frozen=True, slots=True)
class ColumnDef:
    """One column: ``sql`` is the type as ``SHOW CREATE TABLE`` / SDI ``column_type_utf8`` spell it."""

    name: str
    sql: str  # "int unsigned", "varchar(120)", "enum('a','b')", ...
    type_code: int  # TABLE_MAP type (ENUM/SET/CHAR/BINARY are MYSQL_TYPE_STRING there)
    nullable: bool = True
    unsigned: bool = False
    collation_id: int | None = None  # None for non-character columns
    length: int = 0  # characters (char/varchar) or bytes (binary/varbinary) or bits (bit)
    precision: int = 0  # decimal precision
    scale: int = 0  # decimal scale
    fsp: int = 0  # fractional seconds precision of time types
    blob_pack_length: int = 0  # 1..4 for blob/text/json
    elements: tuple[str, ...] = ()  # enum / set values
    auto_increment: bool = False
    default_sql: str | None = None  # the DEFAULT clause's literal as written ("'manual'", "7"); None: none

    @property
    def base_type(self) -> str:
        return self.sql.split("(", 1)[0].split(" ", 1)[0]

    @property
    def real_type(self) -> int:
        """The type the row image is encoded with (ENUM/SET/CHAR behind TABLE_MAP's MYSQL_TYPE_STRING)."""
        if self.base_type == "enum":
            return MYSQL_TYPE_ENUM
        if self.base_type == "set":
            return MYSQL_TYPE_SET
        return self.type_code

    @property
    def max_bytes(self) -> int:
        """Byte length of a char/varchar/binary/varbinary value at its declared maximum."""
        return self.length * _MAXLEN.get(self.collation_id or BINARY_COLLATION, 1)

    @property
    def is_blob(self) -> bool:
        """BLOB/TEXT/JSON: what binlog_row_image=NOBLOB leaves out when unchanged."""
        return self.type_code in (MYSQL_TYPE_BLOB, MYSQL_TYPE_JSON)

    @property
    def ddl(self) -> str:
        parts = [f"`{self.name}`", self.sql]
        if self.collation_id == LATIN1_SWEDISH_CI:
            parts.append("CHARACTER SET latin1")
        parts.append("NULL" if self.nullable else "NOT NULL")
        if self.default_sql is not None:
            parts.append(f"DEFAULT {self.default_sql}")
        if self.auto_increment:
            parts.append("AUTO_INCREMENT")
        return " ".join(parts)


@dataclass(frozen=True, slots=True)
class TableDef:
    """One version of a table. ``primary_key`` holds column names; empty means no primary key."""

    db: str
    name: str
    columns: tuple[ColumnDef, ...]
    primary_key: tuple[str, ...]
    version: int = 1
    table_id: int = 0  # the TABLE_MAP table id (changes with each version, as MySQL reopens it)
    pk_indexes: tuple[int, ...] = field(init=False, compare=False, default=())  # primary key column indexes

    def __post_init__(self) -> None:
        names = [c.name for c in self.columns]
        object.__setattr__(self, "pk_indexes", tuple(names.index(n) for n in self.primary_key))

    @property
    def qualified(self) -> str:
        return f"{self.db}.{self.name}"

    def index(self, column: str) -> int:
        for i, col in enumerate(self.columns):
            if col.name == column:
                return i
        raise KeyError(column)

    def create_sql(self) -> str:
        lines = [c.ddl for c in self.columns]
        if self.primary_key:
            lines.append("PRIMARY KEY (" + ", ".join(f"`{n}`" for n in self.primary_key) + ")")
        body = ",\n  ".join(lines)
        return (
            f"CREATE TABLE `{self.name}` (\n  {body}\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 "
            "COLLATE=utf8mb4_0900_ai_ci"
        )

    def evolve(
        self, table_id: int, columns: tuple[ColumnDef, ...] | None = None, name: str | None = None
    ) -> "TableDef":
        """The next version: other columns and/or another name, read through a new TABLE_MAP table id."""
        return replace(
            self,
            name=name or self.name,
            columns=self.columns if columns is None else columns,
            version=self.version + 1,
            table_id=table_id,
        )

    def add_column(self, column: ColumnDef, table_id: int) -> tuple["TableDef", str]:
        """The next version with ``column`` appended, and the ALTER statement that makes it."""
        return self.evolve(table_id, self.columns + (column,)), f"ALTER TABLE `{self.name}` ADD COLUMN {column.ddl}"


def int_col(name: str, sql: str, code: int, **kw) -> ColumnDef:
    return ColumnDef(name, sql, code, unsigned=sql.endswith("unsigned"), **kw)


def char_col(name: str, kind: str, length: int, collation: int = UTF8MB4_0900_AI_CI, **kw) -> ColumnDef:
    code = MYSQL_TYPE_VARCHAR if kind.startswith("var") else MYSQL_TYPE_STRING
    coll = BINARY_COLLATION if kind.endswith("binary") else collation
    return ColumnDef(name, f"{kind}({length})", code, collation_id=coll, length=length, **kw)


def _enum(name: str, kind: str, values: tuple[str, ...], **kw) -> ColumnDef:
    quoted = ",".join(f"'{v}'" for v in values)
    return ColumnDef(
        name, f"{kind}({quoted})", MYSQL_TYPE_STRING, collation_id=UTF8MB4_0900_AI_CI, elements=values, **kw
    )


def _blob(name: str, sql: str, pack_length: int, **kw) -> ColumnDef:
    coll = BINARY_COLLATION if sql.endswith("blob") else UTF8MB4_0900_AI_CI
    code = MYSQL_TYPE_JSON if sql == "json" else MYSQL_TYPE_BLOB
    return ColumnDef(name, sql, code, collation_id=None if sql == "json" else coll, blob_pack_length=pack_length, **kw)


def time_col(name: str, kind: str, fsp: int, **kw) -> ColumnDef:
    code = {"datetime": MYSQL_TYPE_DATETIME2, "timestamp": MYSQL_TYPE_TIMESTAMP2, "time": MYSQL_TYPE_TIME2}[kind]
    return ColumnDef(name, f"{kind}({fsp})" if fsp else kind, code, fsp=fsp, **kw)


TIERS = ("bronze", "silver", "gold", "platinum")
CONSENTS = ("newsletter", "sms", "beta", "vip")
ORDER_STATUSES = ("new", "paid", "shipped", "delivered", "cancelled")
DB = "shop"


def base_tables() -> tuple[TableDef, ...]:
    """Version 1 of every table of the workload (``shop`` database)."""
    customers = TableDef(
        DB,
        "customers",
        (
            int_col("id", "int unsigned", MYSQL_TYPE_LONG, nullable=False, auto_increment=True),
            char_col("email", "varchar", 120, nullable=False),
            char_col("full_name", "varchar", 100),
            char_col("country", "char", 2, nullable=False),
            ColumnDef("birth_date", "date", MYSQL_TYPE_DATE),
            time_col("signup_at", "datetime", 6, nullable=False),
            time_col("last_login", "timestamp", 3),
            ColumnDef("balance", "decimal(12,2)", MYSQL_TYPE_NEWDECIMAL, nullable=False, precision=12, scale=2),
            ColumnDef("score", "double", MYSQL_TYPE_DOUBLE),
            _enum("tier", "enum", TIERS, nullable=False),
            _enum("consents", "set", CONSENTS, nullable=False),
            int_col("is_active", "tinyint(1)", MYSQL_TYPE_TINY, nullable=False),
            _blob("notes", "text", 2),
            _blob("avatar", "blob", 2),
        ),
        ("id",),
        table_id=101,
    )
    products = TableDef(
        DB,
        "products",
        (
            int_col("sku", "bigint", MYSQL_TYPE_LONGLONG, nullable=False),
            char_col("title", "varchar", 200, nullable=False),
            ColumnDef("price", "decimal(10,2)", MYSQL_TYPE_NEWDECIMAL, nullable=False, precision=10, scale=2),
            ColumnDef("weight_kg", "float", MYSQL_TYPE_FLOAT),
            int_col("stock", "mediumint", MYSQL_TYPE_INT24, nullable=False),
            int_col("min_age", "tinyint unsigned", MYSQL_TYPE_TINY),
            ColumnDef("release_year", "year", MYSQL_TYPE_YEAR),
            char_col("warehouse", "binary", 4, nullable=False),
            char_col("thumbnail", "varbinary", 64),
            _blob("attributes", "json", 4),
            ColumnDef("bit_flags", "bit(10)", MYSQL_TYPE_BIT, nullable=False, length=10),
            time_col("updated_at", "timestamp", 0, nullable=False),
        ),
        ("sku",),
        table_id=102,
    )
    orders = TableDef(
        DB,
        "orders",
        (
            int_col("order_id", "bigint unsigned", MYSQL_TYPE_LONGLONG, nullable=False),
            int_col("customer_id", "int unsigned", MYSQL_TYPE_LONG, nullable=False),
            _enum("status", "enum", ORDER_STATUSES, nullable=False),
            ColumnDef("total", "decimal(14,4)", MYSQL_TYPE_NEWDECIMAL, nullable=False, precision=14, scale=4),
            int_col("qty", "smallint unsigned", MYSQL_TYPE_SHORT, nullable=False),
            time_col("placed_at", "datetime", 0, nullable=False),
            time_col("ship_window", "time", 2),
            _blob("doc", "json", 4, nullable=False),
            _blob("remarks", "mediumtext", 3),
        ),
        ("order_id",),
        table_id=103,
    )
    audit_log = TableDef(
        DB,
        "audit_log",
        (
            time_col("at_ts", "timestamp", 6, nullable=False),
            char_col("actor", "varchar", 32, nullable=False),
            char_col("action", "char", 8, LATIN1_SWEDISH_CI, nullable=False),
            int_col("amount", "bigint", MYSQL_TYPE_LONGLONG),
            ColumnDef("delta", "double", MYSQL_TYPE_DOUBLE),
            char_col("payload", "varbinary", 255),
            time_col("duration", "time", 0),
            int_col("small_code", "smallint", MYSQL_TYPE_SHORT),
        ),
        (),
        table_id=104,
    )
    return customers, products, orders, audit_log


# The column ALTER TABLE adds to `customers` in the middle of the stream.
LOYALTY_POINTS = int_col("loyalty_points", "int", MYSQL_TYPE_LONG)
TABLE_NAMES = tuple(t.name for t in base_tables())
