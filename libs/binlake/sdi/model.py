"""The typed model of SDI JSON (WL#7069): header, Table (columns, indexes, foreign keys, check constraints,
partitions), Tablespace and Schema, as frozen dataclasses.

Each class mirrors one ``dd::*_impl::serialize()`` in ``sql/dd/impl/types/``; attribute names are the JSON member
names. Every object remembers the order of the members it was read with (``json_keys``) and the members this
model does not know (``extra``), so :func:`binlake.sdi.writer.to_json` writes a document back byte for byte.
Binary values (``default_value``, ENUM/SET element ``name``, ``check_clause``) are base64 in JSON and ``bytes``
here. ``*_SPEC`` tables say, per member, its JSON kind and whether FR-03 requires it.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any, Iterator

from binlake.sdi import dd_types
from binlake.sdi.charsets import decode_text
from binlake.sdi.errors import SdiFormatError

Extra = tuple[tuple[str, Any], ...]


def parse_properties(text: str) -> dict[str, str]:
    """``dd::Properties`` text ``k1=v1;k2=v2;`` as a dict (``Properties_impl::parse_properties``; ``\\`` escapes)."""
    out: dict[str, str] = {}
    key, buf, esc, in_value = "", [], False, False
    for ch in text:
        if esc:
            buf.append(ch)
            esc = False
        elif ch == "\\":
            esc = True
        elif ch == "=" and not in_value:
            key, buf, in_value = "".join(buf), [], True
        elif ch == ";":
            if in_value or buf:
                out[key if in_value else "".join(buf)] = "".join(buf) if in_value else ""
            key, buf, in_value = "", [], False
        else:
            buf.append(ch)
    if in_value or buf:
        out[key if in_value else "".join(buf)] = "".join(buf) if in_value else ""
    return out


# ------------------------------------------------------------------------------------------------ model classes


@dataclass(frozen=True, slots=True)
class ColumnTypeElement:
    """One ENUM/SET member (``Column_type_element_impl``): ``name`` is the raw value in the column's charset."""

    name: bytes
    index: int
    json_keys: tuple[str, ...] = ()
    extra: Extra = ()


@dataclass(frozen=True, slots=True)
class Column:
    """``Column_impl::serialize``. ``type`` is ``dd::enum_column_types`` (see :mod:`binlake.sdi.dd_types`)."""

    name: str
    type: int
    is_nullable: bool = False
    is_zerofill: bool = False
    is_unsigned: bool = False
    is_auto_increment: bool = False
    is_virtual: bool = False
    hidden: int = dd_types.HT_VISIBLE
    ordinal_position: int = 0
    char_length: int = 0
    numeric_precision: int = 0
    numeric_scale: int = 0
    numeric_scale_null: bool = True
    datetime_precision: int = 0
    datetime_precision_null: int = 1
    has_no_default: bool = False
    default_value_null: bool = True
    srs_id_null: bool = True
    srs_id: int = 0
    default_value: bytes = b""
    default_value_utf8_null: bool = True
    default_value_utf8: str = ""
    default_option: str = ""
    update_option: str = ""
    comment: str = ""
    generation_expression: str = ""
    generation_expression_utf8: str = ""
    options: str = ""
    se_private_data: str = ""
    engine_attribute: str = ""
    secondary_engine_attribute: str = ""
    column_key: int = 1
    column_type_utf8: str = ""
    elements: tuple[ColumnTypeElement, ...] = ()
    collation_id: int = 0
    is_explicit_collation: bool = False
    json_keys: tuple[str, ...] = ()
    extra: Extra = ()

    @property
    def type_name(self) -> str:
        return dd_types.COLUMN_TYPE_NAMES.get(self.type, f"UNKNOWN_{self.type}")

    @property
    def is_generated(self) -> bool:
        return bool(self.generation_expression_utf8 or self.generation_expression)

    @property
    def element_names(self) -> tuple[str, ...]:
        """ENUM/SET members as text, in ``index`` order, decoded with the column's character set."""
        ordered = sorted(self.elements, key=lambda e: e.index)
        return tuple(decode_text(e.name, self.collation_id) for e in ordered)

    def options_map(self) -> dict[str, str]:
        return parse_properties(self.options)


@dataclass(frozen=True, slots=True)
class IndexElement:
    """``Index_element_impl``: ``column_opx`` is the 0-based position in ``Table.columns``; ``length`` in bytes."""

    ordinal_position: int
    length: int
    order: int
    hidden: bool
    column_opx: int
    json_keys: tuple[str, ...] = ()
    extra: Extra = ()


@dataclass(frozen=True, slots=True)
class Index:
    """``Index_impl::serialize``; ``type`` is ``dd::Index::enum_index_type``."""

    name: str
    type: int
    hidden: bool = False
    is_generated: bool = False
    ordinal_position: int = 0
    comment: str = ""
    options: str = ""
    se_private_data: str = ""
    algorithm: int = 0
    is_algorithm_explicit: bool = False
    is_visible: bool = True
    engine: str = ""
    engine_attribute: str = ""
    secondary_engine_attribute: str = ""
    elements: tuple[IndexElement, ...] = ()
    tablespace_ref: str = ""
    json_keys: tuple[str, ...] = ()
    extra: Extra = ()


@dataclass(frozen=True, slots=True)
class ForeignKeyElement:
    """``Foreign_key_element_impl``: ``column_opx`` indexes ``Table.columns``."""

    column_opx: int
    ordinal_position: int
    referenced_column_name: str
    json_keys: tuple[str, ...] = ()
    extra: Extra = ()


@dataclass(frozen=True, slots=True)
class ForeignKey:
    """``Foreign_key_impl::serialize``; rules are ``dd::Foreign_key::enum_rule`` (see ``FK_RULE_NAMES``)."""

    name: str
    referenced_table_schema_name: str
    referenced_table_name: str
    match_option: int = 1
    update_rule: int = 1
    delete_rule: int = 1
    unique_constraint_name: str = ""
    referenced_table_catalog_name: str = "def"
    elements: tuple[ForeignKeyElement, ...] = ()
    json_keys: tuple[str, ...] = ()
    extra: Extra = ()


@dataclass(frozen=True, slots=True)
class CheckConstraint:
    """``Check_constraint_impl::serialize``."""

    name: str
    state: int = 1
    check_clause: bytes = b""
    check_clause_utf8: str = ""
    json_keys: tuple[str, ...] = ()
    extra: Extra = ()


@dataclass(frozen=True, slots=True)
class PartitionValue:
    """``Partition_value_impl::serialize``."""

    max_value: bool = False
    null_value: bool = False
    list_num: int = 0
    column_num: int = 0
    value_utf8: str = ""
    json_keys: tuple[str, ...] = ()
    extra: Extra = ()


@dataclass(frozen=True, slots=True)
class PartitionIndex:
    """``Partition_index_impl::serialize``: ``index_opx`` indexes ``Table.indexes``."""

    index_opx: int
    options: str = ""
    se_private_data: str = ""
    tablespace_ref: str = ""
    json_keys: tuple[str, ...] = ()
    extra: Extra = ()


@dataclass(frozen=True, slots=True)
class Partition:
    """``Partition_impl::serialize`` (subpartitions nest)."""

    name: str
    parent_partition_id: int = 0
    number: int = 0
    se_private_id: int = 0
    description_utf8: str = ""
    engine: str = ""
    comment: str = ""
    options: str = ""
    se_private_data: str = ""
    values: tuple[PartitionValue, ...] = ()
    indexes: tuple[PartitionIndex, ...] = ()
    subpartitions: tuple["Partition", ...] = ()
    tablespace_ref: str = ""
    json_keys: tuple[str, ...] = ()
    extra: Extra = ()


@dataclass(frozen=True, slots=True)
class Table:
    """``Abstract_table_impl`` + ``Table_impl::serialize``: a table and everything strongly related (IR-03)."""

    name: str
    schema_ref: str
    engine: str
    collation_id: int
    columns: tuple[Column, ...] = ()
    mysql_version_id: int = 0
    created: int = 0
    last_altered: int = 0
    hidden: int = 1
    options: str = ""
    se_private_id: int = 0
    last_checked_for_upgrade_version_id: int = 0
    comment: str = ""
    se_private_data: str = ""
    engine_attribute: str = ""
    secondary_engine_attribute: str = ""
    row_format: int = 0
    partition_type: int = 0
    partition_expression: str = ""
    partition_expression_utf8: str = ""
    default_partitioning: int = 0
    subpartition_type: int = 0
    subpartition_expression: str = ""
    subpartition_expression_utf8: str = ""
    default_subpartitioning: int = 0
    indexes: tuple[Index, ...] = ()
    foreign_keys: tuple[ForeignKey, ...] = ()
    check_constraints: tuple[CheckConstraint, ...] = ()
    partitions: tuple[Partition, ...] = ()
    tablespace_ref: str = ""
    json_keys: tuple[str, ...] = ()
    extra: Extra = ()

    @property
    def identity(self) -> tuple[str, str, str]:
        """Table identity (WL#7069 CR-06): schema name, table name and owning engine."""
        return (self.schema_ref, self.name, self.engine)

    def column(self, name: str) -> Column | None:
        for col in self.columns:
            if col.name == name:
                return col
        return None


@dataclass(frozen=True, slots=True)
class TablespaceFile:
    """``Tablespace_file_impl::serialize``."""

    ordinal_position: int
    filename: str
    se_private_data: str = ""
    json_keys: tuple[str, ...] = ()
    extra: Extra = ()


@dataclass(frozen=True, slots=True)
class Tablespace:
    """``Tablespace_impl::serialize``."""

    name: str
    engine: str
    comment: str = ""
    options: str = ""
    se_private_data: str = ""
    engine_attribute: str = ""
    files: tuple[TablespaceFile, ...] = ()
    json_keys: tuple[str, ...] = ()
    extra: Extra = ()


@dataclass(frozen=True, slots=True)
class Schema:
    """A schema SDI (WL#7069 ``Schema := {name, default_collation, created, last_altered}``)."""

    name: str
    default_collation_id: int = 0
    created: int = 0
    last_altered: int = 0
    json_keys: tuple[str, ...] = ()
    extra: Extra = ()


DdObject = Table | Tablespace | Schema


@dataclass(frozen=True, slots=True)
class SdiHeader:
    """The members around ``dd_object`` (``generic_serialize`` in ``sql/dd/impl/sdi.cc``)."""

    mysqld_version_id: int
    dd_version: int
    sdi_version: int
    dd_object_type: str


@dataclass(frozen=True, slots=True)
class SdiDocument:
    """One SDI JSON document: header, typed object, and the exact text it was read from (``raw``, may be "")."""

    header: SdiHeader
    obj: DdObject
    raw: str = field(default="", compare=False)
    source: str = field(default="", compare=False)
    json_keys: tuple[str, ...] = ()
    extra: Extra = ()

    @property
    def table(self) -> Table | None:
        return self.obj if isinstance(self.obj, Table) else None


# --------------------------------------------------------------------------------------- member specifications
# (json member, kind, required).  kinds: int, bool, str, b64, or a class for a list of that class.

_N, _B, _S, _B64 = "int", "bool", "str", "b64"

SPECS: dict[type, tuple[tuple[str, Any, bool], ...]] = {
    ColumnTypeElement: (("name", _B64, True), ("index", _N, True)),
    Column: (
        ("name", _S, True),
        ("type", _N, True),
        ("is_nullable", _B, True),
        ("is_zerofill", _B, False),
        ("is_unsigned", _B, True),
        ("is_auto_increment", _B, False),
        ("is_virtual", _B, False),
        ("hidden", _N, True),
        ("ordinal_position", _N, True),
        ("char_length", _N, True),
        ("numeric_precision", _N, True),
        ("numeric_scale", _N, True),
        ("numeric_scale_null", _B, False),
        ("datetime_precision", _N, True),
        ("datetime_precision_null", _N, False),
        ("has_no_default", _B, False),
        ("default_value_null", _B, True),
        ("srs_id_null", _B, False),
        ("srs_id", _N, False),
        ("default_value", _B64, True),
        ("default_value_utf8_null", _B, False),
        ("default_value_utf8", _S, False),
        ("default_option", _S, False),
        ("update_option", _S, False),
        ("comment", _S, False),
        ("generation_expression", _S, False),
        ("generation_expression_utf8", _S, False),
        ("options", _S, False),
        ("se_private_data", _S, False),
        ("engine_attribute", _S, False),
        ("secondary_engine_attribute", _S, False),
        ("column_key", _N, False),
        ("column_type_utf8", _S, True),
        ("elements", ColumnTypeElement, True),
        ("collation_id", _N, True),
        ("is_explicit_collation", _B, False),
    ),
    IndexElement: (
        ("ordinal_position", _N, True),
        ("length", _N, True),
        ("order", _N, True),
        ("hidden", _B, True),
        ("column_opx", _N, True),
    ),
    Index: (
        ("name", _S, True),
        ("hidden", _B, True),
        ("is_generated", _B, False),
        ("ordinal_position", _N, True),
        ("comment", _S, False),
        ("options", _S, False),
        ("se_private_data", _S, False),
        ("type", _N, True),
        ("algorithm", _N, False),
        ("is_algorithm_explicit", _B, False),
        ("is_visible", _B, False),
        ("engine", _S, False),
        ("engine_attribute", _S, False),
        ("secondary_engine_attribute", _S, False),
        ("elements", IndexElement, True),
        ("tablespace_ref", _S, False),
    ),
    ForeignKeyElement: (("column_opx", _N, True), ("ordinal_position", _N, True), ("referenced_column_name", _S, True)),
    ForeignKey: (
        ("name", _S, True),
        ("match_option", _N, False),
        ("update_rule", _N, False),
        ("delete_rule", _N, False),
        ("unique_constraint_name", _S, False),
        ("referenced_table_catalog_name", _S, False),
        ("referenced_table_schema_name", _S, True),
        ("referenced_table_name", _S, True),
        ("elements", ForeignKeyElement, True),
    ),
    CheckConstraint: (
        ("name", _S, True),
        ("state", _N, False),
        ("check_clause", _B64, False),
        ("check_clause_utf8", _S, False),
    ),
    PartitionValue: (
        ("max_value", _B, False),
        ("null_value", _B, False),
        ("list_num", _N, False),
        ("column_num", _N, False),
        ("value_utf8", _S, False),
    ),
    PartitionIndex: (
        ("options", _S, False),
        ("se_private_data", _S, False),
        ("index_opx", _N, True),
        ("tablespace_ref", _S, False),
    ),
    Partition: (
        ("name", _S, True),
        ("parent_partition_id", _N, False),
        ("number", _N, False),
        ("se_private_id", _N, False),
        ("description_utf8", _S, False),
        ("engine", _S, False),
        ("comment", _S, False),
        ("options", _S, False),
        ("se_private_data", _S, False),
        ("values", PartitionValue, False),
        ("indexes", PartitionIndex, False),
        ("subpartitions", Partition, False),
        ("tablespace_ref", _S, False),
    ),
    Table: (
        ("name", _S, True),
        ("mysql_version_id", _N, False),
        ("created", _N, False),
        ("last_altered", _N, False),
        ("hidden", _N, False),
        ("options", _S, False),
        ("columns", Column, True),
        ("schema_ref", _S, True),
        ("se_private_id", _N, False),
        ("engine", _S, True),
        ("last_checked_for_upgrade_version_id", _N, False),
        ("comment", _S, False),
        ("se_private_data", _S, False),
        ("engine_attribute", _S, False),
        ("secondary_engine_attribute", _S, False),
        ("row_format", _N, False),
        ("partition_type", _N, False),
        ("partition_expression", _S, False),
        ("partition_expression_utf8", _S, False),
        ("default_partitioning", _N, False),
        ("subpartition_type", _N, False),
        ("subpartition_expression", _S, False),
        ("subpartition_expression_utf8", _S, False),
        ("default_subpartitioning", _N, False),
        ("indexes", Index, True),
        ("foreign_keys", ForeignKey, False),
        ("check_constraints", CheckConstraint, False),
        ("partitions", Partition, False),
        ("collation_id", _N, True),
        ("tablespace_ref", _S, False),
    ),
    TablespaceFile: (("ordinal_position", _N, True), ("filename", _S, True), ("se_private_data", _S, False)),
    Tablespace: (
        ("name", _S, True),
        ("comment", _S, False),
        ("options", _S, False),
        ("se_private_data", _S, False),
        ("engine", _S, True),
        ("engine_attribute", _S, False),
        ("files", TablespaceFile, True),
    ),
    Schema: (
        ("name", _S, True),
        ("default_collation_id", _N, False),
        ("created", _N, False),
        ("last_altered", _N, False),
    ),
}

OBJECT_TYPES: dict[str, type] = {"Table": Table, "Tablespace": Tablespace, "Schema": Schema}
HEADER_KEYS = ("mysqld_version_id", "dd_version", "sdi_version", "dd_object_type", "dd_object")

# ------------------------------------------------------------------------------------------------------ reading

MAX_JSON_DEPTH = 64  # SDI nests about 8 deep (ibd2sdi output included); deeper is hostile
MAX_INT_DIGITS = 20  # rapidjson's largest integers are 64-bit: at most 20 digits


class _JsonLimit(Exception):
    pass


def _bounded_int(text: str) -> int:
    if len(text) - text.startswith("-") > MAX_INT_DIGITS:
        raise _JsonLimit(
            f"integer of {len(text)} characters, more than a 64-bit integer ({MAX_INT_DIGITS} digits): {text[:24]}..."
        )
    return int(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise _JsonLimit(f"number {text[:24]} is out of a double's range")
    return value


def _no_constant(name: str) -> Any:
    raise _JsonLimit(f"{name} is not JSON")


def load_json(text: str | bytes, source: str = "") -> Any:
    """``json.loads`` for SDI text with the limits of what MySQL writes (rapidjson ``Document::Parse``): integers
    of at most 64 bits, finite doubles, no NaN/Infinity, nesting at most MAX_JSON_DEPTH; anything else is an
    SdiFormatError."""
    try:
        data = json.loads(text, parse_int=_bounded_int, parse_float=_finite_float, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise SdiFormatError(source, "$", f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except _JsonLimit as exc:
        raise SdiFormatError(source, "$", f"invalid SDI JSON: {exc}") from None
    except RecursionError:
        raise SdiFormatError(source, "$", f"JSON nested more than {MAX_JSON_DEPTH} levels deep") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise SdiFormatError(source, "$", f"invalid JSON ({exc.__class__.__name__.lower()}: {exc})"[:200]) from None
    level: list[Any] = [data]
    for _depth in range(MAX_JSON_DEPTH + 1):
        nxt: list[Any] = []
        for item in level:
            if isinstance(item, dict):
                nxt.extend(v for v in item.values() if isinstance(v, (dict, list)))
            elif isinstance(item, list):
                nxt.extend(v for v in item if isinstance(v, (dict, list)))
        if not nxt:
            return data
        level = nxt
    raise SdiFormatError(source, "$", f"JSON nested more than {MAX_JSON_DEPTH} levels deep")


def _type_error(source: str, path: str, expected: str, value: Any) -> SdiFormatError:
    return SdiFormatError(source, path, f"expected {expected}, found {type(value).__name__} {value!r:.60}")


def _convert(kind: Any, value: Any, source: str, path: str) -> Any:
    if kind in (_N, _B):
        # rapidjson writes bools and ints distinctly, but SDIs of different versions disagree on some members
        # (e.g. datetime_precision_null); both are kept as written so the writer reproduces them.
        if not isinstance(value, int):
            raise _type_error(source, path, "a number or boolean", value)
        return value
    if kind == _S:
        if not isinstance(value, str):
            raise _type_error(source, path, "a string", value)
        return value
    if kind == _B64:
        if not isinstance(value, str):
            raise _type_error(source, path, "a base64 string", value)
        try:
            return base64.b64decode(value.replace("\n", ""), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise SdiFormatError(source, path, f"invalid base64 ({exc})") from None
    if not isinstance(value, list):
        raise _type_error(source, path, f"an array of {kind.__name__}", value)
    return tuple(_parse_object(kind, item, source, f"{path}[{i}]") for i, item in enumerate(value))


def _parse_object(cls: type, data: Any, source: str, path: str) -> Any:
    if not isinstance(data, dict):
        raise _type_error(source, path, f"a {cls.__name__} object", data)
    spec = SPECS[cls]
    known = {key for key, _, _ in spec}
    kwargs: dict[str, Any] = {}
    for key, kind, required in spec:
        if key in data:
            kwargs[key] = _convert(kind, data[key], source, f"{path}.{key}")
        elif required:
            raise SdiFormatError(source, f"{path}.{key}", f"required {cls.__name__} member is missing (FR-03)")
    extra = tuple((k, v) for k, v in data.items() if k not in known)
    return cls(**kwargs, json_keys=tuple(data), extra=extra)


def parse_sdi_object(data: Any, source: str = "") -> SdiDocument:
    """An :class:`SdiDocument` from an already parsed JSON value (``raw`` stays empty)."""
    if not isinstance(data, dict):
        raise _type_error(source, "$", "an SDI object", data)
    for key in HEADER_KEYS:
        if key not in data:
            raise SdiFormatError(source, key, "required SDI header member is missing (FR-03)")
    obj_type = data["dd_object_type"]
    cls = OBJECT_TYPES.get(obj_type) if isinstance(obj_type, str) else None
    if cls is None:
        raise SdiFormatError(source, "dd_object_type", f"expected one of {sorted(OBJECT_TYPES)}, found {obj_type!r}")
    header = SdiHeader(
        mysqld_version_id=_convert(_N, data["mysqld_version_id"], source, "mysqld_version_id"),
        dd_version=_convert(_N, data["dd_version"], source, "dd_version"),
        sdi_version=_convert(_N, data["sdi_version"], source, "sdi_version"),
        dd_object_type=obj_type,
    )
    obj = _parse_object(cls, data["dd_object"], source, "dd_object")
    extra = tuple((k, v) for k, v in data.items() if k not in HEADER_KEYS)
    return SdiDocument(header=header, obj=obj, source=source, json_keys=tuple(data), extra=extra)


def parse_sdi(text: str | bytes, source: str = "") -> SdiDocument:
    """Parse one SDI JSON document (as stored in a tablespace or a ``.sdi`` file); keeps the text in ``raw``."""
    if isinstance(text, (bytes, bytearray, memoryview)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SdiFormatError(source, "$", f"SDI is not UTF-8 at byte {exc.start}") from None
    data = load_json(text, source)
    doc = parse_sdi_object(data, source)
    return SdiDocument(doc.header, doc.obj, text, source, doc.json_keys, doc.extra)


def iter_members(obj: Any) -> Iterator[tuple[str, Any]]:
    """(JSON member, value) pairs of a model object, in the order it was read (or spec order), extras included."""
    spec = SPECS[type(obj)]
    extra = dict(obj.extra)
    keys = obj.json_keys or tuple(key for key, _, _ in spec) + tuple(extra)
    kinds = {key: kind for key, kind, _ in spec}
    for key in keys:
        if key in kinds:
            yield key, getattr(obj, key)
        elif key in extra:
            yield key, extra[key]
