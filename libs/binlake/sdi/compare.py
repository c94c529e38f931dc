"""Structured schema diff of two versions of a table (WL#7069 CR-03 comparison, CR-06 identity).

Columns are matched by name; a dropped and an added column with the same definition are a rename (preferring the
same position). Columns hidden by the storage engine (DB_TRX_ID, DB_ROLL_PTR, ...) are engine internals and are
not compared. Indexes, foreign keys and check constraints are matched by name; their columns are compared by
name, not by position, so adding a column does not show up as a change of every index.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Any

from binlake.sdi import dd_types
from binlake.sdi.canonical import canonical, definitions_equal
from binlake.sdi.model import Column, ForeignKey, Index, Table

COLUMN_TYPE_ATTRS = (
    "type",
    "column_type_utf8",
    "is_unsigned",
    "is_zerofill",
    "char_length",
    "numeric_precision",
    "numeric_scale",
    "datetime_precision",
    "collation_id",
    "elements",
    "srs_id",
)
COLUMN_OTHER_ATTRS = (
    "is_nullable",
    "is_auto_increment",
    "is_virtual",
    "hidden",
    "has_no_default",
    "default_value_null",
    "default_value",
    "default_value_utf8",
    "default_option",
    "update_option",
    "comment",
    "generation_expression_utf8",
    "is_explicit_collation",
    "engine_attribute",
    "secondary_engine_attribute",
)
TABLE_ATTRS = (
    "schema_ref",
    "name",
    "engine",
    "collation_id",
    "row_format",
    "comment",
    "options",
    "hidden",
    "engine_attribute",
    "secondary_engine_attribute",
    "partition_type",
    "partition_expression_utf8",
    "default_partitioning",
    "subpartition_type",
    "subpartition_expression_utf8",
    "default_subpartitioning",
    "tablespace_ref",
)


@dataclass(frozen=True, slots=True)
class Change:
    """One attribute that differs: its SDI member name and the old and new (canonical) values."""

    attribute: str
    old: Any
    new: Any


@dataclass(frozen=True, slots=True)
class ObjectChange:
    """A column, index or foreign key present in both versions whose attributes differ."""

    name: str
    changes: tuple[Change, ...]


@dataclass(frozen=True, slots=True)
class TableDiff:
    """Differences from ``old`` to ``new``; ``equal`` is CR-03 equality of the definitions."""

    old_identity: tuple[str, str, str]
    new_identity: tuple[str, str, str]
    equal: bool
    table_changes: tuple[Change, ...] = ()
    columns_added: tuple[str, ...] = ()
    columns_dropped: tuple[str, ...] = ()
    columns_renamed: tuple[tuple[str, str], ...] = ()
    columns_retyped: tuple[ObjectChange, ...] = ()
    columns_modified: tuple[ObjectChange, ...] = ()
    columns_reordered: tuple[str, ...] = ()
    indexes_added: tuple[str, ...] = ()
    indexes_dropped: tuple[str, ...] = ()
    indexes_changed: tuple[ObjectChange, ...] = ()
    foreign_keys_added: tuple[str, ...] = ()
    foreign_keys_dropped: tuple[str, ...] = ()
    foreign_keys_changed: tuple[ObjectChange, ...] = ()
    check_constraints_added: tuple[str, ...] = ()
    check_constraints_dropped: tuple[str, ...] = ()
    check_constraints_changed: tuple[ObjectChange, ...] = ()
    notes: tuple[str, ...] = field(default=())

    @property
    def same_table(self) -> bool:
        """CR-06: schema, table name and engine are the same."""
        return self.old_identity == self.new_identity

    def to_dict(self) -> dict[str, Any]:
        def conv(v: Any) -> Any:
            if isinstance(v, (Change, ObjectChange)):
                return {k: conv(getattr(v, k)) for k in v.__slots__}
            if isinstance(v, tuple):
                return [conv(x) for x in v]
            return v

        return {k: conv(getattr(self, k)) for k in self.__slots__}

    def render(self) -> str:
        """Human-readable summary, one change per line."""
        o, n = ".".join(self.old_identity[:2]), ".".join(self.new_identity[:2])
        head = f"{o}" if o == n else f"{o} -> {n}"
        if self.equal:
            return f"{head}: definitions are equal\n"
        lines = [f"{head}:"]
        for c in self.table_changes:
            lines.append(f"  table {c.attribute}: {c.old!r} -> {c.new!r}")
        for label, names in (
            ("column added", self.columns_added),
            ("column dropped", self.columns_dropped),
            ("column moved", self.columns_reordered),
            ("index added", self.indexes_added),
            ("index dropped", self.indexes_dropped),
            ("foreign key added", self.foreign_keys_added),
            ("foreign key dropped", self.foreign_keys_dropped),
            ("check constraint added", self.check_constraints_added),
            ("check constraint dropped", self.check_constraints_dropped),
        ):
            lines.extend(f"  {label}: {name}" for name in names)
        lines.extend(f"  column renamed: {a} -> {b}" for a, b in self.columns_renamed)
        for label, items in (
            ("column retyped", self.columns_retyped),
            ("column modified", self.columns_modified),
            ("index changed", self.indexes_changed),
            ("foreign key changed", self.foreign_keys_changed),
            ("check constraint changed", self.check_constraints_changed),
        ):
            for item in items:
                detail = "; ".join(f"{c.attribute}: {c.old!r} -> {c.new!r}" for c in item.changes)
                lines.append(f"  {label}: {item.name}: {detail}")
        lines.extend(f"  note: {note}" for note in self.notes)
        return "\n".join(lines) + "\n"


def _attr(col: Column, name: str) -> Any:
    return col.element_names if name == "elements" else canonical(getattr(col, name))


def _changes(old: Any, new: Any, attrs: tuple[str, ...], get: Any) -> tuple[Change, ...]:
    return tuple(Change(a, get(old, a), get(new, a)) for a in attrs if get(old, a) != get(new, a))


def _user_columns(table: Table) -> list[Column]:
    return [c for c in table.columns if c.hidden != dd_types.HT_HIDDEN_SE]


def _moved(order: list[int]) -> set[int]:
    """Items of ``order`` (new positions listed in old order) outside one longest increasing subsequence."""
    tails: list[int] = []
    tail_idx: list[int] = []
    prev = [-1] * len(order)
    for i, pos in enumerate(order):
        k = bisect_left(tails, pos)
        if k == len(tails):
            tails.append(pos)
            tail_idx.append(i)
        else:
            tails[k], tail_idx[k] = pos, i
        prev[i] = tail_idx[k - 1] if k else -1
    keep, i = set(), tail_idx[-1] if tail_idx else -1
    while i >= 0:
        keep.add(i)
        i = prev[i]
    return set(range(len(order))) - keep


def _diff_columns(old: Table, new: Table) -> tuple[dict[str, Any], dict[str, str]]:
    """Column changes, and the old -> new name mapping of the columns present in both."""
    old_cols, new_cols = _user_columns(old), _user_columns(new)
    new_names = {c.name for c in new_cols}
    old_names = {c.name for c in old_cols}
    pairs = {c.name: c.name for c in old_cols if c.name in new_names}  # old name -> new name
    dropped = [c for c in old_cols if c.name not in new_names]
    added = [c for c in new_cols if c.name not in old_names]
    signature = COLUMN_TYPE_ATTRS + COLUMN_OTHER_ATTRS
    old_pos = {c.name: i for i, c in enumerate(old_cols)}
    new_pos = {c.name: i for i, c in enumerate(new_cols)}
    for d in list(dropped):
        candidates = [a for a in added if not _changes(d, a, signature, _attr)]
        if candidates:
            best = min(candidates, key=lambda a: abs(new_pos[a.name] - old_pos[d.name]))
            pairs[d.name] = best.name
            dropped.remove(d)
            added.remove(best)
    old_by, new_by = {c.name: c for c in old_cols}, {c.name: c for c in new_cols}
    retyped, modified = [], []
    for o_name in (c.name for c in old_cols if c.name in pairs):
        o, n = old_by[o_name], new_by[pairs[o_name]]
        if t := _changes(o, n, COLUMN_TYPE_ATTRS, _attr):
            retyped.append(ObjectChange(n.name, t))
        if m := _changes(o, n, COLUMN_OTHER_ATTRS, _attr):
            modified.append(ObjectChange(n.name, m))
    common = [c.name for c in old_cols if c.name in pairs]
    moved = _moved([new_pos[pairs[name]] for name in common])
    return {
        "columns_added": tuple(c.name for c in added),
        "columns_dropped": tuple(c.name for c in dropped),
        "columns_renamed": tuple((o, n) for o, n in pairs.items() if o != n),
        "columns_retyped": tuple(retyped),
        "columns_modified": tuple(modified),
        "columns_reordered": tuple(pairs[common[i]] for i in sorted(moved)),
    }, pairs


def _col_name(table: Table, opx: int, renames: dict[str, str]) -> str:
    name = table.columns[opx].name if 0 <= opx < len(table.columns) else f"#{opx}"
    return renames.get(name, name)


def _index_view(table: Table, idx: Index, renames: dict[str, str]) -> dict[str, Any]:
    return {
        "type": idx.type,
        "algorithm": idx.algorithm,
        "is_visible": idx.is_visible,
        "hidden": idx.hidden,
        "is_generated": idx.is_generated,
        "comment": idx.comment,
        "options": idx.options,
        "engine_attribute": idx.engine_attribute,
        "elements": [
            (_col_name(table, e.column_opx, renames), e.length, e.order) for e in idx.elements if not e.hidden
        ],
    }


def _fk_view(table: Table, fk: ForeignKey, renames: dict[str, str]) -> dict[str, Any]:
    return {
        "columns": [_col_name(table, e.column_opx, renames) for e in fk.elements],
        "referenced_table": (fk.referenced_table_schema_name, fk.referenced_table_name),
        "referenced_columns": [e.referenced_column_name for e in fk.elements],
        "update_rule": fk.update_rule,
        "delete_rule": fk.delete_rule,
        "match_option": fk.match_option,
        "unique_constraint_name": fk.unique_constraint_name,
    }


def _diff_named(old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]) -> tuple[tuple, tuple, tuple]:
    added = tuple(k for k in new if k not in old)
    dropped = tuple(k for k in old if k not in new)
    changed = []
    for name in (k for k in new if k in old):
        attrs = tuple(dict.fromkeys((*old[name], *new[name])))
        if ch := _changes(old[name], new[name], attrs, lambda v, a: v.get(a)):
            changed.append(ObjectChange(name, ch))
    return added, dropped, tuple(changed)


def diff_tables(old: Table, new: Table) -> TableDiff:
    """The schema diff from ``old`` to ``new``."""
    if definitions_equal(old, new):
        return TableDiff(old.identity, new.identity, True)
    column_diff, renames = _diff_columns(old, new)  # old columns are named by their new names below
    idx_a, idx_d, idx_c = _diff_named(
        {i.name: _index_view(old, i, renames) for i in old.indexes},
        {i.name: _index_view(new, i, {}) for i in new.indexes},
    )
    fk_a, fk_d, fk_c = _diff_named(
        {f.name: _fk_view(old, f, renames) for f in old.foreign_keys},
        {f.name: _fk_view(new, f, {}) for f in new.foreign_keys},
    )
    cc_a, cc_d, cc_c = _diff_named(
        {c.name: {"state": c.state, "check_clause_utf8": c.check_clause_utf8} for c in old.check_constraints},
        {c.name: {"state": c.state, "check_clause_utf8": c.check_clause_utf8} for c in new.check_constraints},
    )
    table_changes = list(_changes(old, new, TABLE_ATTRS, lambda t, a: getattr(t, a)))
    if canonical(old.partitions) != canonical(new.partitions):
        table_changes.append(Change("partitions", [p.name for p in old.partitions], [p.name for p in new.partitions]))
    diff = TableDiff(
        old.identity,
        new.identity,
        False,
        table_changes=tuple(table_changes),
        **column_diff,
        indexes_added=idx_a,
        indexes_dropped=idx_d,
        indexes_changed=idx_c,
        foreign_keys_added=fk_a,
        foreign_keys_dropped=fk_d,
        foreign_keys_changed=fk_c,
        check_constraints_added=cc_a,
        check_constraints_dropped=cc_d,
        check_constraints_changed=cc_c,
    )
    if not any(getattr(diff, k) for k in diff.__slots__ if k not in ("old_identity", "new_identity", "equal")):
        note = "definitions differ only in members this diff does not itemize (e.g. engine-hidden columns)"
        diff = TableDiff(old.identity, new.identity, False, notes=(note,))
    return diff
