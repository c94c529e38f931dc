"""``apply_json_diffs`` (sql/json_diff.cc; WL#10570): apply a diff vector to a document, all or nothing.

Semantics of the DOM path of mysql-server's ``apply_json_diffs`` and ``seek_exact_path`` (no auto-wrapping,
no wildcards):

- a SQL NULL document (``None`` here), or a diff on the root path ``$``: REJECTED;
- REPLACE: the whole path must exist; the value there is replaced;
- INSERT: the parent must exist; into an object (member leg) the member must not exist yet, and is added at
  MySQL's key position; into an array (cell leg) the value goes in at the index as JSON_ARRAY_INSERT does
  (past the end appends, ``last-N`` beyond the start prepends); any other parent/leg pair: REJECTED;
- REMOVE: the parent must exist and hold the member / an in-bounds cell; REJECTED otherwise;
- a result nested deeper than 100 levels is an ERROR (``store_json`` fails after the last diff).

Diffs apply in order; on REJECTED or ERROR the input document is returned unchanged together with the index of
the failing diff and the reason. The input is never mutated: containers on the changed paths are copied once
per call (copy-on-write), so a whole vector costs O(document size) at most, with no re-parsing per diff.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from binlake.mysqljson.binary import JSON_DOCUMENT_MAX_DEPTH, key_sort_key, mysql_key_order
from binlake.mysqljson.cell import BinaryJson
from binlake.mysqljson.decoder import decode
from binlake.mysqljson.diff import DiffOp, JsonDiff, read_diffs
from binlake.mysqljson.errors import JsonError
from binlake.mysqljson.path import LegType, PathLeg


class ApplyStatus(enum.IntEnum):
    """``enum_json_diff_status``."""

    SUCCESS = 0
    ERROR = 1
    REJECTED = 2


@dataclass(frozen=True, slots=True)
class ApplyResult:
    """Outcome of :func:`apply_json_diffs`; ``document`` is the input unchanged unless SUCCESS."""

    status: ApplyStatus
    document: object
    failed_index: int | None = None
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.status == ApplyStatus.SUCCESS


class _Rejected(Exception):
    pass


_MISSING = object()


def apply_json_diffs(document: object, diffs: Sequence[JsonDiff] | bytes | bytearray | memoryview) -> ApplyResult:
    """Apply ``diffs`` to ``document`` exactly as mysql-server's ``apply_json_diffs``.

    ``document`` is a value of the package's value model, a :class:`BinaryJson`, raw binary JSON bytes, or
    ``None`` for SQL NULL (always REJECTED). ``diffs`` is a sequence of :class:`JsonDiff` or a raw diff vector
    (the cell after its 4-byte length); a corrupt vector or document gives ERROR.
    """
    if document is None:
        return ApplyResult(ApplyStatus.REJECTED, None, None, "cannot apply JSON diffs to a SQL NULL document")
    original = document
    try:
        if isinstance(document, BinaryJson):
            document = document.value
        elif isinstance(document, (bytes, bytearray, memoryview)):
            document = decode(document)
        if isinstance(diffs, (bytes, bytearray, memoryview)):
            diffs = read_diffs(diffs)
    except JsonError as exc:
        return ApplyResult(ApplyStatus.ERROR, original, None, str(exc))
    return _Applier(document).run(diffs, original)


class _Applier:
    def __init__(self, root: object) -> None:
        self.root = root
        self.owned: dict[int, object] = {}  # id -> container copied by this call (kept alive: ids stay unique)
        self.unsorted: dict[int, dict] = {}  # objects that received a member and need MySQL's key order again
        self.maybe_too_deep = False  # a diff put a value deep enough that the result may pass the depth limit

    def run(self, diffs: Sequence[JsonDiff], original: object) -> ApplyResult:
        for index, diff in enumerate(diffs):
            try:
                self.apply_one(diff)
            except _Rejected as exc:
                return ApplyResult(ApplyStatus.REJECTED, original, index, f"{_describe(diff)}: {exc}")
        if self.maybe_too_deep and _depth(self.root) > JSON_DOCUMENT_MAX_DEPTH:
            # Field_json::store_json fails after all diffs applied: ER_JSON_DOCUMENT_TOO_DEEP.
            reason = f"the result exceeds the maximum depth of {JSON_DOCUMENT_MAX_DEPTH}"
            return ApplyResult(ApplyStatus.ERROR, original, None, reason)
        for obj in self.unsorted.values():
            items = sorted(obj.items(), key=lambda item: key_sort_key(item[0]))
            obj.clear()
            obj.update(items)
        return ApplyResult(ApplyStatus.SUCCESS, self.root)

    def own(self, container):
        """A copy of ``container`` this call may mutate (the container itself if already copied)."""
        if id(container) in self.owned:
            return container
        copy = dict(container) if type(container) is dict else list(container)
        self.owned[id(copy)] = copy
        return copy

    def apply_one(self, diff: JsonDiff) -> None:
        legs = diff.path.legs
        if not legs:
            raise _Rejected("the root path '$' cannot be replaced, inserted or removed by a diff")
        op = diff.op
        value = None
        if op != DiffOp.REMOVE:
            if len(legs) + _depth(diff.value) > JSON_DOCUMENT_MAX_DEPTH:
                self.maybe_too_deep = True
            value = mysql_key_order(diff.value)  # as MySQL reads it from binary: members in key order
        parent = self.seek_parent(legs)
        last = legs[-1]
        kind = type(parent)
        if op == DiffOp.REPLACE:
            if kind is dict and last.type == LegType.MEMBER:
                if last.member not in parent:
                    raise _Rejected("path not found")
                parent[last.member] = value
                return
            if kind is list and last.type == LegType.ARRAY_CELL:
                position, within = last.index.position(len(parent))  # type: ignore[union-attr]
                if not within:
                    raise _Rejected(f"array index out of bounds (array has {len(parent)} elements)")
                parent[position] = value
                return
            raise _Rejected(_mismatch(parent, last))
        if op == DiffOp.INSERT:
            if kind is dict and last.type == LegType.MEMBER:
                if last.member in parent:
                    raise _Rejected("member already exists")
                parent[last.member] = value
                self.unsorted[id(parent)] = parent
                return
            if kind is list and last.type == LegType.ARRAY_CELL:
                position, _ = last.index.position(len(parent))  # type: ignore[union-attr]
                parent.insert(position, value)
                return
            raise _Rejected(_mismatch(parent, last))
        if kind is dict and last.type == LegType.MEMBER:
            if last.member not in parent:
                raise _Rejected("member not found")
            del parent[last.member]
            return
        if kind is list and last.type == LegType.ARRAY_CELL:
            position, within = last.index.position(len(parent))  # type: ignore[union-attr]
            if not within:
                raise _Rejected(f"array index out of bounds (array has {len(parent)} elements)")
            del parent[position]
            return
        raise _Rejected(_mismatch(parent, last))

    def seek_parent(self, legs: tuple[PathLeg, ...]):
        """``seek_exact_path`` over all legs but the last, copying each container on the way."""
        node = self.root
        if type(node) is dict or type(node) is list:
            node = self.root = self.own(node)
        for depth, leg in enumerate(legs[:-1]):
            kind = type(node)
            if kind is dict and leg.type == LegType.MEMBER:
                key = leg.member
                child = node.get(key, _MISSING)
                if child is _MISSING:
                    raise _Rejected(f"parent path not found at leg {depth + 1} ({leg})")
                if type(child) is dict or type(child) is list:
                    child = self.own(child)
                    node[key] = child
            elif kind is list and leg.type == LegType.ARRAY_CELL:
                position, within = leg.index.position(len(node))  # type: ignore[union-attr]
                if not within:
                    raise _Rejected(f"parent path not found at leg {depth + 1} ({leg}): index out of bounds")
                child = node[position]
                if type(child) is dict or type(child) is list:
                    child = self.own(child)
                    node[position] = child
            else:
                raise _Rejected(f"parent path not found at leg {depth + 1} ({leg}): {_mismatch(node, leg)}")
            node = child
        return node


def _mismatch(node: object, leg: PathLeg) -> str:
    kind = "an object" if type(node) is dict else "an array" if type(node) is list else "a scalar"
    return f"path leg {leg} does not apply to {kind}"


def _describe(diff: JsonDiff) -> str:
    return f"{diff.op.name} {diff.path}"


def _depth(value: object) -> int:
    """``Json_dom::depth``-like nesting of containers (0 for scalars)."""
    kind = type(value)
    if kind is dict:
        return 1 + max((_depth(item) for item in value.values()), default=0)  # type: ignore[attr-defined]
    if kind is list or kind is tuple:
        return 1 + max((_depth(item) for item in value), default=0)  # type: ignore[attr-defined]
    return 0
