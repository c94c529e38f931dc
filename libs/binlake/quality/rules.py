"""What a table definition (SDI, WL#7069) promises about every row of its silver table, as plain rules.

Pure Python, no GX: :mod:`binlake.quality.suites` turns each :class:`Rule` into one GX expectation. The rules
mirror what MySQL itself enforces in strict mode:

* the primary key (``dd::Index::IT_PRIMARY``; compound keys too) is NOT NULL and unique; a UNIQUE index on whole
  columns is unique where all its parts are non-NULL (InnoDB allows repeated NULLs);
* a column with ``is_nullable = false`` holds no NULL;
* ENUM values are members (``Column.elements``); SET values are comma-joined members;
* CHAR/VARCHAR values are at most ``char_length / mbmaxlen`` characters (SDI stores the byte length);
* integers are within their width (``Field_tiny`` .. ``Field_longlong``, signed or unsigned), BIT(n) within
  ``0 .. 2^n-1``, DECIMAL(p,s) within ``±(10^(p-s) - 10^-s)``, unsigned FLOAT/DOUBLE/DECIMAL at least 0;
* JSON columns hold parseable JSON text.

Silver's column types follow ``binlake.binlog.silver_types``: integers are ``bigint`` (BIGINT UNSIGNED
``decimal(20,0)``), character/ENUM/SET/JSON columns ``string``, binary strings ``binary`` (not checked for
length here).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Optional

from binlake.sdi import dd_types as T
from binlake.sdi.charsets import BINARY_COLLATION_ID, charset_of
from binlake.sdi.model import Column, Table

ERROR = "error"
WARNING = "warning"

# (signed min, signed max, unsigned max) per integer type (Field_tiny::store ... Field_longlong::store)
INTEGER_RANGES: dict[int, tuple[int, int, int]] = {
    T.TINY: (-(1 << 7), (1 << 7) - 1, (1 << 8) - 1),
    T.SHORT: (-(1 << 15), (1 << 15) - 1, (1 << 16) - 1),
    T.INT24: (-(1 << 23), (1 << 23) - 1, (1 << 24) - 1),
    T.LONG: (-(1 << 31), (1 << 31) - 1, (1 << 32) - 1),
    T.LONGLONG: (-(1 << 63), (1 << 63) - 1, (1 << 64) - 1),
}
LENGTH_CHECKED_TYPES = frozenset({T.VARCHAR, T.STRING, T.VAR_STRING})


@dataclass(frozen=True, slots=True)
class Rule:
    """One promise about a table's rows. ``kind`` names the GX expectation it becomes (see ``suites``);
    ``params`` are that expectation's keyword arguments besides the column(s)."""

    kind: str  # not_null | unique | compound_unique | in_set | set_members |
    #                                          max_length | between | json | column_exists
    columns: tuple[str, ...]
    params: tuple[tuple[str, Any], ...] = ()
    level: str = ERROR
    why: str = ""  # the SDI fact the rule comes from, for reports

    @property
    def column(self) -> Optional[str]:
        return self.columns[0] if len(self.columns) == 1 else None

    def param(self, name: str) -> Any:
        return dict(self.params).get(name)


def silver_columns(table: Table) -> list[Column]:
    """The columns a silver table carries: every column MySQL logs (not the storage engine's hidden ones, not
    the SQL layer's hidden functional-index columns), in ordinal order."""
    cols = [c for c in table.columns if c.hidden not in (T.HT_HIDDEN_SE, T.HT_HIDDEN_SQL)]
    return sorted(cols, key=lambda c: c.ordinal_position)


def _index_columns(table: Table, index_type: int) -> list[tuple[tuple[str, ...], bool]]:
    """(column names, whole columns?) of the visible parts of each index of ``index_type``."""
    out = []
    for idx in sorted(table.indexes, key=lambda i: i.ordinal_position):
        if idx.type != index_type or idx.hidden:
            continue
        names, whole = [], True
        for e in sorted(idx.elements, key=lambda e: e.ordinal_position):
            if e.hidden or not 0 <= e.column_opx < len(table.columns):
                continue
            col = table.columns[e.column_opx]
            if col.hidden in (T.HT_HIDDEN_SE, T.HT_HIDDEN_SQL):  # functional index part: no silver column
                whole = False
                continue
            names.append(col.name)
            whole = whole and not _is_prefix(col, e.length)
        if names:
            out.append((tuple(names), whole))
    return out


def _is_prefix(col: Column, length: int) -> bool:
    """Whether an index part covers only a prefix of the column (``length`` is in bytes)."""
    if col.type in T.BLOB_TYPES or col.type in (T.JSON, T.GEOMETRY):
        return True
    return col.type in T.STRING_TYPES and length < col.char_length


def primary_key(table: Table) -> tuple[str, ...]:
    """The primary key's columns, () when the table has none."""
    keys = _index_columns(table, T.IT_PRIMARY)
    return keys[0][0] if keys else ()


def max_characters(col: Column) -> Optional[int]:
    """CHAR/VARCHAR length in characters (``char_length`` is bytes: characters x the charset's mbmaxlen)."""
    if col.type not in LENGTH_CHECKED_TYPES or col.collation_id == BINARY_COLLATION_ID:
        return None
    cs = charset_of(col.collation_id)
    return col.char_length // (cs.mbmaxlen if cs is not None else 1)


def numeric_range(col: Column) -> Optional[tuple[Optional[float], Optional[float], str]]:
    """(min, max, why) implied by a numeric type, None when the type implies nothing silver does not enforce."""
    unsigned = col.is_unsigned
    if col.type in INTEGER_RANGES:
        lo, hi, uhi = INTEGER_RANGES[col.type]
        if unsigned:
            return 0, uhi, f"{col.column_type_utf8}: 0 .. {uhi}"
        if col.type == T.LONGLONG:
            return None  # silver's bigint is exactly this range
        return lo, hi, f"{col.column_type_utf8}: {lo} .. {hi}"
    if col.type == T.BIT:
        hi = (1 << col.numeric_precision) - 1
        return 0, hi, f"{col.column_type_utf8}: 0 .. {hi}"
    if col.type in (T.NEWDECIMAL, T.DECIMAL):
        p, s = col.numeric_precision, col.numeric_scale
        bound = float(f"{'9' * (p - s) or '0'}.{'9' * s}") if p else None
        if bound is None:
            return None
        return (0 if unsigned else -bound), bound, f"{col.column_type_utf8}: |value| < 10^{p - s}"
    if col.type in (T.FLOAT, T.DOUBLE) and unsigned:
        return 0, None, f"{col.column_type_utf8}: not negative"
    return None


def _set_pattern(members: Iterable[str]) -> str:
    """A regex (Java and Python alike) for a SET value: '' or members joined by ',' (each at most once is not
    checked: MySQL never stores a member twice)."""
    alt = "|".join(_quote_regex(m) for m in members)
    return f"^$|^({alt})(,({alt}))*$"


def _quote_regex(text: str) -> str:
    return "".join("\\" + ch if ch in "\\.^$|?*+()[]{}-" else ch for ch in text)


def table_rules(table: Table) -> list[Rule]:
    """Every rule the definition implies: columns exist, then the keys, then per column in ordinal order."""
    rules: list[Rule] = []
    cols = silver_columns(table)
    for c in cols:
        rules.append(Rule("column_exists", (c.name,), why=f"column `{c.name}` of the table definition"))
    pk = primary_key(table)
    for name in pk:
        rules.append(Rule("not_null", (name,), why="PRIMARY KEY column"))
    if len(pk) == 1:
        rules.append(Rule("unique", pk, why="PRIMARY KEY"))
    elif pk:
        rules.append(Rule("compound_unique", pk, why="PRIMARY KEY (compound)"))
    for names, whole in _index_columns(table, T.IT_UNIQUE):
        if not whole:
            continue
        why = "UNIQUE index (NULLs may repeat)"
        rules.append(
            Rule("unique", names, why=why)
            if len(names) == 1
            else Rule("compound_unique", names, (("ignore_row_if", "any_value_is_missing"),), why=why)
        )
    for c in cols:
        if not c.is_nullable and c.name not in pk:
            rules.append(Rule("not_null", (c.name,), why="NOT NULL"))
        if c.type == T.ENUM:
            rules.append(Rule("in_set", (c.name,), (("value_set", list(c.element_names)),), why=c.column_type_utf8))
        elif c.type == T.SET:
            rules.append(
                Rule("set_members", (c.name,), (("regex", _set_pattern(c.element_names)),), why=c.column_type_utf8)
            )
        n = max_characters(c)
        if n is not None:
            rules.append(
                Rule("max_length", (c.name,), (("max_value", n),), why=f"{c.column_type_utf8}: at most {n} characters")
            )
        rng = numeric_range(c)
        if rng is not None:
            lo, hi, why = rng
            rules.append(Rule("between", (c.name,), (("min_value", lo), ("max_value", hi)), why=why))
        if c.type == T.JSON:
            rules.append(Rule("json", (c.name,), why="JSON column"))
    return rules
