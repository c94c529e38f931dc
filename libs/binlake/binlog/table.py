"""A table's row layout, built once per TABLE_MAP_EVENT: column names, attributes and value decoders.

TABLE_MAP optional metadata (``binlog_row_metadata=FULL``) gives names, signedness, charsets and ENUM/SET
values; whatever it lacks comes from a :data:`~binlake.binlog.schema.SchemaProvider` (SDI), else columns are
named ``@1..@n``, integers are read as signed and CHAR/VARCHAR as UTF-8 text, BLOBs as bytes (and
:attr:`TableLayout.assumptions` says so). Mirrors ``Table_map_event::Optional_metadata_fields`` and
``table_def`` (sql/rpl_utility.cc).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from binlake.binlog import constants as C
from binlake.binlog.columns import STRUCT_CODES, Decoder, column_decoder, string_real_type
from binlake.binlog.errors import BinlogError, SchemaMismatchError
from binlake.binlog.events import ABSENT, DefaultCharset, TableMapEvent
from binlake.binlog.schema import SchemaProvider, TableSchema
from binlake.binlog.values import collation_codec


@dataclass(frozen=True, slots=True)
class Column:
    index: int
    name: str
    type_code: int  # as in TABLE_MAP
    real_type: int  # after the STRING metadata trick (ENUM/SET/STRING), else type_code
    metadata: int
    nullable: bool
    unsigned: bool
    collation_id: Optional[int]
    enum_values: Optional[tuple[str, ...]] = None
    set_values: Optional[tuple[str, ...]] = None
    geometry_type: Optional[int] = None
    visible: bool = True
    vector_dimensions: Optional[int] = None

    @property
    def is_json(self) -> bool:
        return self.type_code == C.MYSQL_TYPE_JSON

    @property
    def fsp(self) -> int:
        if self.type_code in (C.MYSQL_TYPE_TIME2, C.MYSQL_TYPE_DATETIME2, C.MYSQL_TYPE_TIMESTAMP2):
            return self.metadata
        return 0


OLD_TEMPORAL_TYPES = frozenset({C.MYSQL_TYPE_TIME, C.MYSQL_TYPE_DATETIME, C.MYSQL_TYPE_TIMESTAMP})


def real_type(type_code: int, meta: int) -> int:
    if type_code == C.MYSQL_TYPE_STRING:
        return string_real_type(meta)[0]
    return type_code


def _expand_charsets(
    default: Optional[DefaultCharset], per_column: Optional[tuple[int, ...]], count: int
) -> Optional[list[int]]:
    if per_column is not None:
        return list(per_column) if len(per_column) == count else None
    if default is not None:
        out = [default.default_collation] * count
        for idx, coll in default.overrides:
            if 0 <= idx < count:
                out[idx] = coll
        return out
    return None


def _failing_decoder(error: BinlogError) -> Decoder:
    def dec(buf: bytes, pos: int) -> tuple[Any, int]:
        raise error

    return dec


@dataclass(slots=True)
class TableLayout:
    """Everything needed to decode rows of one table id: the TABLE_MAP, columns and one decoder per column.

    ``image_plans`` caches, per columns-present bitmap, the decoders of the present columns and their indexes.
    """

    table_map: TableMapEvent
    columns: tuple[Column, ...]
    decoders: tuple[Decoder, ...]
    json_columns: tuple[int, ...]
    assumptions: tuple[str, ...] = ()
    schema_source: str = ""
    column_names: tuple[str, ...] = ()
    decode_hint: str = ""  # added to row decoding errors (what may explain them)
    image_plans: dict[bytes, "ImagePlan"] = field(default_factory=dict)

    @property
    def db(self) -> str:
        return self.table_map.db

    @property
    def table(self) -> str:
        return self.table_map.table

    def plan(self, present: bytes) -> "ImagePlan":
        """How to decode an image with this columns-present bitmap (cached per bitmap)."""
        got = self.image_plans.get(present)
        if got is None:
            n = min(len(self.columns), len(present) * 8)
            idx = tuple(i for i in range(n) if present[i >> 3] & (1 << (i & 7)))
            decs = tuple(self.decoders[i] for i in idx)
            indexes = None if len(idx) == len(self.columns) else idx
            got = ImagePlan(
                decs,
                indexes,
                len(self.columns),
                (len(decs) + 7) >> 3,
                compile_as_dict(self.column_names, indexes),
                tuple(self.column_names[i] for i in (indexes if indexes is not None else range(len(self.columns)))),
            )
            self.image_plans[present] = got
        return got


MAX_NULL_PATTERNS = 256


@dataclass(frozen=True, slots=True)
class ImagePlan:
    """How to decode an image with one columns-present bitmap: the present columns' decoders, their indexes
    (None: all columns present), the NULL bitmap's size, ``as_dict(image)`` (the present columns by name), and
    per NULL pattern a compiled reader (``compile_reader``)."""

    decoders: tuple[Decoder, ...]
    indexes: Optional[tuple[int, ...]]
    width: int
    null_bytes: int
    as_dict: Callable[[tuple], dict[str, Any]]
    names: tuple[str, ...]  # of the present columns
    readers: dict[int, Callable[[bytes, int], tuple[tuple, int]]] = field(default_factory=dict)
    dict_readers: dict[int, Callable[[bytes, int], tuple[dict, int]]] = field(default_factory=dict)

    def reader(self, nulls: int) -> Callable[[bytes, int], tuple[tuple, int]]:
        fn = self.readers.get(nulls)
        if fn is None:
            fn = compile_reader(self.decoders, nulls, self.indexes, self.width)
            if len(self.readers) < MAX_NULL_PATTERNS:
                self.readers[nulls] = fn
        return fn

    def dict_reader(self, nulls: int) -> Callable[[bytes, int], tuple[dict, int]]:
        """Like :meth:`reader`, the image as ``{name: value}`` of the present columns (what RowChange holds)."""
        fn = self.dict_readers.get(nulls)
        if fn is None:
            fn = compile_reader(self.decoders, nulls, self.indexes, self.width, self.names)
            if len(self.dict_readers) < MAX_NULL_PATTERNS:
                self.dict_readers[nulls] = fn
        return fn


def compile_reader(
    decs: tuple[Decoder, ...],
    nulls: int,
    indexes: Optional[tuple[int, ...]],
    width: int,
    names: Optional[tuple[str, ...]] = None,
) -> Callable[[bytes, int], tuple[Any, int]]:
    """A function reading the values of one image with a given NULL pattern: ``read(buf, pos) -> (row, pos)``.

    Generated once per (columns-present bitmap, NULL pattern): runs of fixed-size numeric columns become one
    ``Struct.unpack_from``, short strings are read inline, other columns call their decoder; the row comes back
    as one tuple of ``width`` values (ABSENT where a column is not in the image), or, given the present
    columns' ``names``, as a dict of them."""
    env: dict[str, Any] = {"ABSENT": ABSENT}
    body: list[str] = []
    values_of: list[str] = []  # the variable of each present column's value
    run: list[str] = []
    fmt = ""

    def flush() -> None:
        nonlocal fmt
        if fmt:
            st = struct.Struct("<" + fmt)
            env[f"S{len(env)}"] = st.unpack_from
            body.append(f"{', '.join(run)}, = S{len(env) - 1}(buf, pos)")
            body.append(f"pos += {st.size}")
            run.clear()
            fmt = ""

    for k, dec in enumerate(decs):
        v = f"v{k}"
        values_of.append(v)
        if nulls >> k & 1:
            flush()
            body.append(f"{v} = None")
            continue
        code = STRUCT_CODES.get(dec)
        if code is not None:
            fmt += code
            run.append(v)
            continue
        flush()
        source = getattr(dec, "inline", None)
        if source is not None:
            statements, objects = source
            body += [line.format(v=v, k=k) for line in statements]
            env.update({f"{name}{k}": obj for name, obj in objects.items()})
        else:
            env[f"D{k}"] = dec
            body.append(f"{v}, pos = D{k}(buf, pos)")
    flush()
    if names is not None:
        items = "".join(f"{name!r}: {v}, " for name, v in zip(names, values_of))
        body.append(f"return {{{items}}}, pos")
    elif indexes is None:
        body.append(f"return ({''.join(x + ', ' for x in values_of)}), pos")
    else:
        slots = ["ABSENT"] * width
        for i, v in zip(indexes, values_of):
            slots[i] = v
        body.append(f"return ({''.join(x + ', ' for x in slots)}), pos")
    source = "def read(buf, pos):\n" + "".join("    " + line.replace("\n", "\n    ") + "\n" for line in body)
    exec(compile(source, "<binlake row reader>", "exec"), env)
    return env["read"]


def compile_as_dict(names: tuple[str, ...], indexes: Optional[tuple[int, ...]]) -> Callable[[tuple], dict]:
    """``as_dict(image) -> {name: value}`` for the columns ``indexes`` (None: all) of an image: one dict display
    with constant keys, faster than ``dict(zip(names, image))``."""
    if not names:
        return lambda v: {}
    cols = range(len(names)) if indexes is None else indexes
    unpack = "".join(f"v{i}, " for i in range(len(names)))
    items = "".join(f"{names[i]!r}: v{i}, " for i in cols)
    env: dict[str, Any] = {}
    exec(compile(f"def as_dict(v):\n    {unpack}= v\n    return {{{items}}}\n", "<binlake image dict>", "exec"), env)
    return env["as_dict"]


def build_layout(
    tm: TableMapEvent, schema_provider: Optional[SchemaProvider] = None, *, mariadb: bool = False
) -> TableLayout:
    """Combine a TABLE_MAP with (when its optional metadata is incomplete) a schema provider's answer.

    ``mariadb``: the TABLE_MAP comes from MariaDB, whose charset metadata numbers GEOMETRY columns among the
    character columns (MySQL numbers VECTOR columns instead)."""
    n = tm.column_count
    types = tm.column_types
    metas = tm.column_metadata
    reals = [real_type(t, m) for t, m in zip(types, metas)]
    assumptions: list[str] = []

    schema: Optional[TableSchema] = None
    old_temporals = [i for i in range(n) if types[i] in OLD_TEMPORAL_TYPES]
    need_schema = (
        tm.column_names is None
        or tm.signedness is None
        or (tm.default_charset is None and tm.column_charsets is None)
        or bool(old_temporals)
    )
    if need_schema and schema_provider is not None:
        schema = schema_provider(tm.db, tm.table, types)
        if schema is not None and len(schema.columns) != n:
            raise SchemaMismatchError(
                f"schema of `{tm.db}`.`{tm.table}` from {schema.source or 'the schema provider'} does not fit "
                f"the TABLE_MAP",
                expected=f"{n} columns",
                found=f"{len(schema.columns)} columns",
            )
    sc = schema.columns if schema is not None else None

    # names
    if tm.column_names is not None and len(tm.column_names) == n:
        names = list(tm.column_names)
    elif sc is not None:
        names = [c.name for c in sc]
    else:
        names = [f"@{i + 1}" for i in range(n)]
        assumptions.append("column names unknown: named @1..@n")

    # signedness: one bit per numeric column
    numeric = [i for i in range(n) if types[i] in C.NUMERIC_TYPES]
    unsigned = [False] * n
    if tm.signedness is not None:
        for k, i in enumerate(numeric):
            if k < len(tm.signedness):
                unsigned[i] = tm.signedness[k]
    elif sc is not None:
        unsigned = [c.unsigned for c in sc]
    elif numeric:
        assumptions.append("signedness unknown: integers read as signed")

    # charsets: character columns and ENUM/SET columns are counted separately
    numbered = C.MARIADB_CHARSET_NUMBERED_TYPES if mariadb else C.CHARSET_NUMBERED_TYPES
    binary_numbered = numbered - C.CHARACTER_TYPES  # numbered, but binary: no collation of their own
    char_cols = [i for i in range(n) if reals[i] in numbered]
    enum_set_cols = [i for i in range(n) if reals[i] in C.ENUM_SET_TYPES]
    collations: list[Optional[int]] = [None] * n
    got = _expand_charsets(tm.default_charset, tm.column_charsets, len(char_cols))
    if got is None and tm.column_charsets is not None:  # a writer that did not count them
        char_cols = [i for i in char_cols if reals[i] not in binary_numbered]
        got = _expand_charsets(None, tm.column_charsets, len(char_cols))
    if got is not None:
        for i, coll in zip(char_cols, got):
            if reals[i] not in binary_numbered:
                collations[i] = coll
    elif sc is not None:
        for i in char_cols:
            if reals[i] not in binary_numbered:
                collations[i] = sc[i].collation_id if sc[i].collation_id is not None else C.BINARY_COLLATION_ID
    else:
        char_cols = [i for i in char_cols if reals[i] not in binary_numbered]
        blobs = {
            i for i in char_cols if reals[i] not in (C.MYSQL_TYPE_STRING, C.MYSQL_TYPE_VARCHAR, C.MYSQL_TYPE_VAR_STRING)
        }
        for i in char_cols:
            collations[i] = C.BINARY_COLLATION_ID if i in blobs else 45  # utf8mb4_general_ci
        if char_cols:
            assumptions.append("charsets unknown: CHAR/VARCHAR read as UTF-8, BLOB/TEXT as bytes")
    got = _expand_charsets(tm.enum_and_set_default_charset, tm.enum_and_set_column_charsets, len(enum_set_cols))
    if got is not None:
        for i, coll in zip(enum_set_cols, got):
            collations[i] = coll

    enum_values: list[Optional[tuple[str, ...]]] = [None] * n
    set_values: list[Optional[tuple[str, ...]]] = [None] * n
    enum_cols = [i for i in range(n) if reals[i] == C.MYSQL_TYPE_ENUM]
    set_cols = [i for i in range(n) if reals[i] == C.MYSQL_TYPE_SET]
    if tm.enum_str_values is not None and len(tm.enum_str_values) == len(enum_cols):
        for i, vals in zip(enum_cols, tm.enum_str_values):
            enum_values[i] = vals
    elif sc is not None:
        for i in enum_cols:
            enum_values[i] = sc[i].enum_values
    if tm.set_str_values is not None and len(tm.set_str_values) == len(set_cols):
        for i, vals in zip(set_cols, tm.set_str_values):
            set_values[i] = vals
    elif sc is not None:
        for i in set_cols:
            set_values[i] = sc[i].set_values

    geometry: list[Optional[int]] = [None] * n
    if tm.geometry_types is not None:
        for i, g in zip([i for i in range(n) if types[i] == C.MYSQL_TYPE_GEOMETRY], tm.geometry_types):
            geometry[i] = g
    dims: list[Optional[int]] = [None] * n
    if tm.vector_dimensionality is not None:
        for i, d in zip([i for i in range(n) if types[i] == C.MYSQL_TYPE_VECTOR], tm.vector_dimensionality):
            dims[i] = d
    visible = (
        list(tm.column_visibility)
        if tm.column_visibility is not None and len(tm.column_visibility) == n
        else [True] * n
    )

    # TIME/DATETIME/TIMESTAMP (not the *2 types): MariaDB's 5.3 format with fractional digits is only decodable
    # with the digits from a schema; without them the classic MySQL formats are assumed
    hires = [0] * n
    hint = ""
    if old_temporals:
        if sc is not None:
            for i in old_temporals:
                hires[i] = sc[i].fsp or 0
        else:
            hint = (
                "TIME/DATETIME/TIMESTAMP columns are read in the classic format; MariaDB's 5.3 format "
                "(mysql56_temporal_format=OFF) with fractional seconds needs their digits from a schema "
                "(ColumnInfo.fsp)"
            )
            assumptions.append(hint)

    columns = []
    decoders = []
    for i in range(n):
        col = Column(
            i,
            names[i],
            types[i],
            reals[i],
            metas[i],
            tm.nullable(i) if i // 8 < len(tm.null_bits) else True,
            unsigned[i],
            collations[i],
            enum_values[i],
            set_values[i],
            geometry[i],
            visible[i],
            dims[i],
        )
        columns.append(col)
        codec = collation_codec(collations[i]) if reals[i] in C.CHARACTER_TYPES else None
        try:
            dec = column_decoder(
                types[i],
                metas[i],
                unsigned=unsigned[i],
                codec=codec,
                enum_values=enum_values[i],
                set_values=set_values[i],
                hires_fsp=hires[i],
            )
        except BinlogError as exc:
            dec = _failing_decoder(exc)
        decoders.append(dec)
    return TableLayout(
        tm,
        tuple(columns),
        tuple(decoders),
        tuple(i for i in range(n) if types[i] == C.MYSQL_TYPE_JSON),
        tuple(assumptions),
        schema.source if schema is not None else "",
        tuple(names),
        hint,
    )
