"""The per-table fold: a table's changes in binlog order, reduced to the last state per key (pure Python).

This is the CDC reduction of Delta's MERGE recipe and APPLY CHANGES: changes are taken in the total order
(file sequence, position, row index); the last change per key wins; deletes leave tombstones (so an older,
late change can not resurrect a row); an update that changes the primary key deletes the old key and writes
the new one. Partial JSON updates (PARTIAL_UPDATE_ROWS) are resolved with ``apply_json_diffs`` against the
current document: the row's state earlier in the batch, else its silver value, else the before image. A diff
that is REJECTED or ERROR goes to quarantine; the column keeps its last good value and later diffs to that
column in the batch are quarantined too until a full value arrives (never a guessed document).

Idempotence: a change whose ordering key is not newer than the key's state (``_binlake_seq`` in silver) is
already applied and is skipped, so re-folding after a crash (silver merged, checkpoint not yet written) is a
no-op for the keys that were merged.

Tables without a primary key: the identity of a row is all its values (NULL and absent alike); silver holds
one row per distinct value tuple with its multiplicity ``_binlake_count``. An insert adds one, a delete
removes one (a delete of a row silver does not hold is quarantined), an update is a delete of the before image
and an insert of the after image. A tuple whose count falls to 0 stays as a tombstone.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional, Sequence

from binlake.mysqljson import DiffOp, JsonDiff, JsonError, apply_json_diffs, parse_path, parse_text, to_text
from binlake.vocabulary import DELETE_OP, KEY_CHANGE_OP, SEQ_COL

DELETE = DELETE_OP
_MISSING = object()


@dataclass(frozen=True, slots=True)
class Change:
    """One row change of bronze, decoded: images in the ``binlake rows`` JSON encoding."""

    seq: int
    order: tuple[int, int, int]  # (file sequence, position, row index): the exact total order
    op: str
    before: Optional[dict[str, Any]]
    after: Optional[dict[str, Any]]
    diffs: Optional[dict[str, list]] = None
    commit_ts: int = 0
    binlog_file: str = ""
    gtid: Optional[str] = None
    split: str = ""  # "old"/"new": the two halves of a key-changing update (see fold_key)
    key: Optional[str] = field(default=None, compare=False)  # row_key's text of the key it touches, known
    # to the caller for a change that keeps its row's key (the fold then does not encode it again)
    after_text: Optional[str] = field(default=None, compare=False)  # ``after`` as bronze's JSON text


@dataclass(slots=True)
class RowState:
    values: dict[str, Any]
    seq: int
    op: str  # insert | update | delete (tombstone)
    count: int = 1  # multiplicity (tables without a primary key)
    text: Optional[str] = field(default=None, compare=False)  # ``values`` as JSON text, when known

    def encoded(self) -> str:
        return self.text if self.text is not None else compact_json(self.values)

    @property
    def live(self) -> bool:
        return self.op != DELETE


@dataclass
class FoldResult:
    rows: dict[str, RowState] = field(default_factory=dict)  # the touched keys' final states
    quarantine: list[dict[str, Any]] = field(default_factory=list)
    history: list[tuple[str, RowState, int]] = field(default_factory=list)  # (key, state after, commit ts)
    stats: Counter = field(default_factory=Counter)


# bronze's JSON text (images, keys, layouts) and the fold's values: compact, not ASCII-escaped; built once
compact_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_encode_sorted = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode


def row_key(values: dict[str, Any], pk: Optional[Sequence[str]]) -> str:
    """The identity of a row: its primary key values, or (no primary key) all its non-NULL values."""
    if pk:
        return compact_json([values.get(c) for c in pk])
    return _encode_sorted({k: v for k, v in values.items() if v is not None})


def _diffs(items: list[dict[str, Any]]) -> list[JsonDiff]:
    return [
        JsonDiff(DiffOp[d["op"]], parse_path(d["path"]), None if d["value"] is None else parse_text(d["value"]))
        for d in items
    ]


class _Folder:
    def __init__(self, pk: Optional[Sequence[str]], base: dict[str, RowState], history: bool) -> None:
        self.pk = tuple(pk) if pk else None
        self.base = base
        self.state: dict[str, RowState] = {}
        self.out = FoldResult()
        self.keep_history = history
        self.poisoned: dict[tuple[str, str], int] = {}  # (key, JSON column) -> seq of the rejected diff

    def get(self, key: str) -> Optional[RowState]:
        got = self.state.get(key)
        return got if got is not None else self.base.get(key)

    def applied_before(self, key: str, cur: Optional[RowState], ch: Change) -> bool:
        """Whether silver (an earlier batch) already holds this change. Only silver's state is compared by
        ``_binlake_seq``: inside the batch the exact (file, pos, row) order rules, because the packed seq of
        rows past 4095 in one event (or one compressed transaction) saturates and ties."""
        if cur is not None and key not in self.state and cur.seq >= ch.seq:
            self.out.stats["already_applied"] += 1
            return True
        return False

    def put(self, key: str, st: RowState, ch: Change) -> None:
        self.state[key] = st
        if self.keep_history:
            self.out.history.append((key, RowState(dict(st.values), st.seq, st.op, st.count), ch.commit_ts))

    def quarantine(
        self,
        ch: Change,
        column: Optional[str],
        status: str,
        reason: str,
        document: Optional[str] = None,
        diffs: Optional[list] = None,
    ) -> None:
        _file_seq, pos, row = ch.order
        self.out.quarantine.append(
            {
                SEQ_COL: ch.seq,
                "binlog_file": ch.binlog_file,
                "pos": pos,
                "row": row,
                "column_name": column or "",
                "status": status,
                "reason": reason,
                "document": document,
                "diffs": None if diffs is None else json.dumps(diffs, ensure_ascii=False),
                "gtid": ch.gtid,
            }
        )
        self.out.stats["quarantined"] += 1

    # -- JSON diffs ------------------------------------------------------------------------------------------
    def resolve_json(self, ch: Change, key: str, base: Optional[dict[str, Any]], new: dict[str, Any]) -> None:
        for col, items in (ch.diffs or {}).items():
            doc: Any = base.get(col, _MISSING) if base is not None else _MISSING
            if doc is _MISSING:
                doc = (ch.before or {}).get(col, _MISSING)
            if (key, col) in self.poisoned:
                self.quarantine(
                    ch,
                    col,
                    "SKIPPED",
                    f"an earlier diff of this column (seq "
                    f"{self.poisoned[key, col]}) was rejected; waiting for a full value",
                    None if doc is _MISSING else doc,
                    items,
                )
                if doc is not _MISSING:
                    new[col] = doc
                continue
            if doc is _MISSING:
                self.quarantine(
                    ch,
                    col,
                    "REJECTED",
                    "no base document: the row is neither in silver nor earlier "
                    "in the batch, and the before image lacks the column",
                    None,
                    items,
                )
                self.poisoned[key, col] = ch.seq
                continue
            try:
                result = apply_json_diffs(None if doc is None else parse_text(doc), _diffs(items))
            except JsonError as exc:
                self.quarantine(ch, col, "ERROR", f"diff or document does not parse: {exc}", doc, items)
                self.poisoned[key, col] = ch.seq
                new[col] = doc
                continue
            if result.ok:
                new[col] = to_text(result.document)
                self.out.stats["json_diffs_applied"] += len(items)
            else:
                where = f"diff {result.failed_index}" if result.failed_index is not None else "document"
                self.quarantine(ch, col, result.status.name, f"{where}: {result.reason}", doc, items)
                self.poisoned[key, col] = ch.seq
                new[col] = doc

    def heal(self, key: str, after: Optional[dict[str, Any]]) -> None:
        if self.poisoned and after:
            for col in after:
                self.poisoned.pop((key, col), None)

    def step(self, ch: Change) -> None:
        (self.apply_pk if self.pk else self.apply_no_pk)(ch)

    # -- tables with a primary key ---------------------------------------------------------------------------
    def apply_pk(self, ch: Change) -> None:
        pk = self.pk
        if ch.split:
            self.apply_split(ch)
            return
        if ch.op == "insert":
            key = ch.key or row_key(ch.after or {}, pk)
            cur = self.get(key)
            if self.applied_before(key, cur, ch):
                return
            self.heal(key, ch.after)
            self.put(key, RowState(dict(ch.after or {}), ch.seq, "insert", text=ch.after_text), ch)
            self.out.stats["insert"] += 1
            return
        key = ch.key or row_key(ch.before or {}, pk)
        cur = self.get(key)
        if self.applied_before(key, cur, ch):
            return
        base = cur.values if cur is not None and cur.live else None
        if ch.op == DELETE:
            self.put(key, RowState(dict(base if base is not None else ch.before or {}), ch.seq, DELETE), ch)
            self.out.stats["delete"] += 1
            return
        if base is None:
            self.out.stats["update_without_base"] += 1
        new = dict(base) if base is not None else dict(ch.before or {})
        if base is not None and ch.before:
            new.update((k, v) for k, v in ch.before.items() if k not in base)
        new.update(ch.after or {})
        self.heal(key, ch.after)
        self.resolve_json(ch, key, base, new)
        new_key = key if ch.key else row_key(new, pk)
        if new_key != key:
            self.put(key, RowState(dict(base if base is not None else ch.before or {}), ch.seq, DELETE), ch)
            self.out.stats[KEY_CHANGE_OP] += 1
            for col in list(self.poisoned):
                if col[0] == key:
                    self.poisoned[new_key, col[1]] = self.poisoned.pop(col)
        whole = ch.after_text is not None and not ch.diffs and len(new) == len(ch.after or ())  # new == after
        self.put(new_key, RowState(new, ch.seq, "update", text=ch.after_text if whole else None), ch)
        self.out.stats["update"] += 1

    def apply_split(self, ch: Change) -> None:
        """One half of a key-changing update whose after image holds the whole row (no partial JSON): "old"
        leaves a tombstone at the old key, "new" writes the row at the new key; each half folds in its own
        key's group, so keys fold independently."""
        full = {**(ch.before or {}), **(ch.after or {})}
        if ch.split == "old":
            key = ch.key or row_key(ch.before or {}, self.pk)
            cur = self.get(key)
            if self.applied_before(key, cur, ch):
                return
            base = cur.values if cur is not None and cur.live else None
            self.put(key, RowState(dict(base if base is not None else ch.before or {}), ch.seq, DELETE), ch)
            self.out.stats[KEY_CHANGE_OP] += 1
            return
        key = ch.key or row_key(full, self.pk)
        cur = self.get(key)
        if self.applied_before(key, cur, ch):
            return
        self.heal(key, ch.after)
        self.put(key, RowState(full, ch.seq, "update"), ch)
        self.out.stats["update"] += 1

    # -- tables without a primary key ------------------------------------------------------------------------
    def apply_no_pk(self, ch: Change) -> None:
        if ch.split == "new":  # the insert half of an update that changed the row's identity
            new = {**(ch.before or {}), **(ch.after or {})}
            self.out.stats["update"] += 1
            key = row_key(new, None)
            cur = self.get(key)
            if self.applied_before(key, cur, ch):
                return
            count = cur.count if cur is not None and cur.live else 0
            self.put(key, RowState(new, ch.seq, "insert" if not count else "update", count + 1), ch)
            return
        if ch.op in (DELETE, "update"):
            key = row_key(ch.before or {}, None)
            cur = self.get(key)
            if self.applied_before(key, cur, ch):
                return
            if cur is None or not cur.live or cur.count <= 0:
                self.quarantine(
                    ch,
                    None,
                    "MISSING_ROW",
                    "delete or update of a row (without primary key) that silver does not hold",
                    json.dumps(ch.before, ensure_ascii=False),
                )
                if ch.op == DELETE:
                    return
            else:
                left = cur.count - 1
                self.put(key, RowState(cur.values, ch.seq, "update" if left else DELETE, left), ch)
            if ch.op == DELETE or ch.split == "old":
                self.out.stats[DELETE_OP if ch.op == DELETE else KEY_CHANGE_OP] += 1
                return
            new = dict(ch.before or {})
            new.update(ch.after or {})
            self.resolve_json(ch, key, None, new)
            self.out.stats["update"] += 1
        else:
            new = dict(ch.after or {})
            self.out.stats["insert"] += 1
            if self.applied_before(row_key(new, None), self.get(row_key(new, None)), ch):
                return
        key = row_key(new, None)
        cur = self.get(key)
        count = cur.count if cur is not None and cur.live else 0
        self.put(key, RowState(new, ch.seq, "insert" if not count else "update", count + 1), ch)


def fold_table(
    changes: Iterable[Change], base: dict[str, RowState], pk: Optional[Sequence[str]], *, history: bool = False
) -> FoldResult:
    """Fold one table's changes (any order; sorted here by ``Change.order``) onto ``base``: the silver states
    of the keys the changes touch (keys as :func:`row_key`). Returns the final state of every key that changed,
    quarantine records, optional SCD2 history rows and counters."""
    return fold_sorted(sorted(changes, key=lambda c: c.order), base, pk, history=history)


def fold_sorted(
    changes: Iterable[Change], base: dict[str, RowState], pk: Optional[Sequence[str]], *, history: bool = False
) -> FoldResult:
    """:func:`fold_table` of changes already in ``Change.order`` (streamed: nothing but the key states is
    held)."""
    folder = _Folder(pk, base, history)
    for ch in changes:
        folder.step(ch)
    folder.out.rows = folder.state
    if history:  # one version per key and change: the key's state after the whole change
        last = {(key, st.seq): (key, st, ts) for key, st, ts in folder.out.history}
        folder.out.history = list(last.values())
    return folder.out
