"""The generator's logical model: a deterministic stream of transactions over the shop tables, and the state
those transactions leave behind.

:class:`Workload` owns one ``random.Random(seed)`` and the current rows of every table; iterating
:meth:`Workload.days` yields, per day, the transactions in commit order. Each row change carries the full
before and after rows (in the table version's column order), the columns the statement assigned, and for
partially updated JSON columns the list of :class:`~binlake.generate.jsondocs.Edit` that MySQL would log as a
JSON diff vector. The state is updated with plain Python operations as changes are made, so it is the ground
truth (:meth:`Workload.truth`); nothing here reads a binlog. With ``GenerateConfig.ddl`` the extra tables of
:mod:`binlake.generate.schema_changes` join the stream and its plan's DDL runs between the transactions.
"""

from __future__ import annotations

import datetime as dt
import functools
import random
from collections import Counter
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any, Iterator

from binlake.generate import jsondocs
from binlake.generate import schema_changes as sc
from binlake.generate.config import GenerateConfig
from binlake.generate.tables import CONSENTS, LOYALTY_POINTS, ORDER_STATUSES, TIERS, TableDef, base_tables
from binlake.generate.values import ModelValues

INSERT, UPDATE, DELETE = "insert", "update", "delete"


@dataclass(frozen=True, slots=True)
class RowChange:
    before: tuple | None
    after: tuple | None
    assigned: frozenset[int] = frozenset()  # column indexes an UPDATE's SET clause names
    edits: tuple[tuple[int, tuple[jsondocs.Edit, ...]], ...] = ()  # (JSON column index, its edits)


@dataclass(frozen=True, slots=True)
class Statement:
    table: TableDef
    kind: str  # insert / update / delete
    changes: tuple[RowChange, ...]


@dataclass(frozen=True, slots=True)
class Transaction:
    gno: int  # GTID sequence number (1-based, gap-free)
    commit_time_us: int  # commit timestamp, microseconds since the epoch
    statements: tuple[Statement, ...] = ()
    ddl: str | None = None  # a DDL transaction holds one statement and no rows
    ddl_db: str = ""
    new_table: TableDef | None = None  # the table version a DDL creates
    ends: str = ""  # the qualified name a DROP or RENAME takes away
    compressed: bool = False


@dataclass
class _TableState:
    table: TableDef
    rows: dict[Any, tuple] = field(default_factory=dict)  # primary key -> row; no-PK tables: serial -> row
    keys: list = field(default_factory=list)  # keys in insertion order, for cheap random picks
    next_id: int = 1  # AUTO_INCREMENT of the extra tables


class _Random(random.Random):
    """``random.Random`` with a cheaper ``randrange`` (a scaled ``random()``: uniform enough for a workload,
    and the generator's hottest call). Deterministic per seed like its base."""

    def randrange(self, start: int, stop: int | None = None, step: int = 1) -> int:
        if stop is None:
            return int(self.random() * start)
        return start + int(self.random() * (stop - start))


class Workload:
    """Deterministic generator of transactions; the ground truth state is :meth:`table_rows`."""

    def __init__(self, config: GenerateConfig) -> None:
        self.config = config
        self.rng = _Random(config.seed)
        self.v = ModelValues(self.rng)
        tables = {t.name: t for t in base_tables() if t.name in config.tables}
        self.state = {name: _TableState(t) for name, t in tables.items()}
        self.gno = 0
        self.next_customer = 1
        self.next_sku = 100_000
        self.next_order = 1
        self.audit_serial = 0
        self.next_table_id = 200
        # DDL (config.ddl): the extra tables by their first name (None while dropped), the plan's migrations by
        # the run's transaction index they precede, names no table holds any more, and the truth of blocked tables
        self.extra: dict[str, _TableState | None] = {}
        self.migrations: dict[int, tuple[sc.Step, ...]] = {}
        self.gone: dict[str, TableDef] = {}
        self.frozen: dict[str, tuple[TableDef, list[tuple]]] = {}
        self.blocked: dict[str, int] = {}  # qualified name -> GTID number of the blocking DDL
        self.blocked_changes: Counter = Counter()  # qualified name -> row changes logged after the block
        if config.ddl:
            for t in sc.extra_tables():
                self.state[t.name] = self.extra[t.name] = _TableState(t)
            total = config.days * config.transactions_per_day
            self.migrations = {(k + 1) * total // (len(sc.PLAN) + 1): m for k, m in enumerate(sc.PLAN)}
        self.items: list[dict] | None = None  # shared order lines, made on the first order
        self.shared_parts: dict = {}  # shared small sub-documents of orders
        upper = 0
        self._actions: list[tuple[int, Any]] = []  # (cumulative weight, statement maker)
        for table, name, weight in self._ACTIONS:
            if table in self.state:
                upper += weight
                self._actions.append((upper, getattr(self, name)))
        for name in self.extra:
            for make, weight in ((self._extra_insert, 4), (self._extra_update, 4), (self._extra_delete, 2)):
                upper += weight
                self._actions.append((upper, functools.partial(make, name)))

    # -- public -------------------------------------------------------------------------------------------------
    def truth(self) -> list[tuple[TableDef, list[tuple]]]:
        """(table, rows) of every table name the run has seen, as its truth file holds them now: the live rows;
        for a table blocked by a change no widening covers, its rows and columns as of that change; for a name
        no table holds any more (dropped, renamed away), no rows."""
        live = [self.frozen.get(name) or (st.table, list(st.rows.values())) for name, st in self.state.items()]
        return live + [(t, []) for t in self.gone.values()]

    def days(self) -> Iterator[tuple[int, dt.date, Iterator[Transaction]]]:
        for day in range(self.config.days):
            yield day, self.config.date_of(day), self._day(day)

    # -- one day ------------------------------------------------------------------------------------------------
    def _day(self, day: int) -> Iterator[Transaction]:
        cfg = self.config
        n = cfg.transactions_per_day
        alter_at = n // 2 if day == cfg.effective_alter_day and "customers" in self.state else -1
        seeds = [name for name in ("customers", "products") if name in self.state]
        planned = sum(len(m) for i, m in self.migrations.items() if i // n == day)  # the plan's DDL today
        count = (
            n
            + (alter_at >= 0)
            + planned
            + (2 + len(self.state) + self._seed_batches * len(seeds) + len(self.extra) if day == 0 else 0)
        )
        # commit timestamps: evenly spread over the day, microsecond resolution, deterministic
        start_us = int(dt.datetime.combine(cfg.date_of(day), dt.time(), dt.timezone.utc).timestamp()) * 1_000_000
        step = 86_400_000_000 // (count + 1)
        clock = iter(range(start_us + step, start_us + 86_400_000_000, step))
        if day == 0:
            yield self._ddl(next(clock), "CREATE DATABASE `shop` /*!40100 DEFAULT CHARACTER SET utf8mb4 */", "")
            for st in self.state.values():
                yield self._ddl(next(clock), st.table.create_sql(), st.table.db, st.table)
            for name in seeds:
                for _ in range(self._seed_batches):
                    make = self._new_customer if name == "customers" else self._new_product
                    yield self._txn(next(clock), [self._insert(name, [make() for _ in range(50)])])
            for name, st in self.extra.items():
                rows = [self._extra_row(name, st) for _ in range(self._extra_seed_rows)]
                yield self._txn(next(clock), [self._insert(name, rows)])
        for i in range(n):
            if i == alter_at:
                yield self._alter_customers(next(clock))
            for statement in self.migrations.get(day * n + i, ()):
                yield self._schema_change(statement, next(clock))
            yield self._random_transaction(next(clock))

    @property
    def _seed_batches(self) -> int:
        """Initial bulk inserts of 50 rows per event, so that the first day starts with data."""
        return max(1, int(20 * self.config.scale**0.5))

    @property
    def _extra_seed_rows(self) -> int:
        return max(8, int(400 * self.config.scale**0.5))

    def _txn(self, ts: int, statements: list[Statement]) -> Transaction:
        self.gno += 1
        compressed = self.rng.random() < self.config.compression_share
        for s in statements:
            if s.table.name in self.frozen:
                self.blocked_changes[s.table.qualified] += len(s.changes)
        return Transaction(self.gno, ts, tuple(statements), compressed=compressed)

    def _ddl(self, ts: int, sql: str, db: str, table: TableDef | None = None, ends: str = "") -> Transaction:
        self.gno += 1
        return Transaction(self.gno, ts, ddl=sql, ddl_db=db, new_table=table, ends=ends)

    def _schema_change(self, step: sc.Step, ts: int) -> Transaction:
        """Run one statement of the DDL plan on the model; its DDL transaction."""
        if isinstance(step, sc.CreateTable):
            old = self.gone.pop(step.table, None)
            t = replace(step.definition, version=old.version + 1 if old else 1, table_id=self._table_id())
            self.state[t.name] = self.extra[t.name] = _TableState(t)
            return self._ddl(ts, t.create_sql(), t.db, t)
        st = self.state[step.table]
        old = st.table
        if isinstance(step, sc.Truncate):
            st.rows.clear()
            st.keys.clear()
            st.next_id = 1  # InnoDB's TRUNCATE restarts AUTO_INCREMENT
            return self._ddl(ts, step.sql(), old.db)
        if isinstance(step, sc.DropTable):
            del self.state[old.name]
            self.extra = {k: (None if v is st else v) for k, v in self.extra.items()}
            self.gone[old.name] = old
            return self._ddl(ts, step.sql(), old.db, ends=old.qualified)
        new, sql, convert = step.apply(old, self._table_id())
        txn = self._ddl(ts, sql, new.db, new, ends=old.qualified if new.name != old.name else "")
        if isinstance(step, sc.Alter) and step.blocks:
            self.frozen[old.name] = (old, list(st.rows.values()))
            self.blocked[old.qualified] = txn.gno
        st.table = new
        if convert is not None:
            st.rows = {k: convert(r) for k, r in st.rows.items()}
        if new.name != old.name:
            del self.state[old.name]
            self.state[new.name] = st
            self.gone[old.name] = old
        return txn

    def _alter_customers(self, ts: int) -> Transaction:
        st = self.state["customers"]
        new, sql = st.table.add_column(LOYALTY_POINTS, self._table_id())
        st.table = new
        st.rows = {k: row + (None,) for k, row in st.rows.items()}  # ADD COLUMN ... NULL: existing rows NULL
        return self._ddl(ts, sql, new.db, new)

    def _table_id(self) -> int:
        self.next_table_id += 1
        return self.next_table_id

    def _random_transaction(self, ts: int) -> Transaction:
        statements: list[Statement] = []
        for _ in range(1 + (self.rng.random() < 0.3) + (self.rng.random() < 0.1)):
            stmt = self._random_statement()
            if stmt is not None:
                statements.append(stmt)
        if not statements:
            statements.append(self._fallback_insert())
        return self._txn(ts, statements)

    # (table, statement maker, weight): the statement mix of one transaction
    _ACTIONS = (
        ("orders", "_insert_orders", 20),
        ("orders", "_edit_order", 38),
        ("orders", "_delete_orders", 4),
        ("products", "_edit_attributes", 9),
        ("products", "_reprice", 7),
        ("products", "_insert_product", 2),
        ("products", "_resku", 1),
        ("customers", "_insert_customers", 5),
        ("customers", "_touch_customer", 8),
        ("customers", "_delete_customer", 1),
        ("audit_log", "_audit_insert", 4),
        ("audit_log", "_audit_update", 2),
        ("audit_log", "_audit_delete", 2),
    )

    def _random_statement(self) -> Statement | None:
        actions = self._actions
        roll = self.rng.randrange(actions[-1][0])
        for upper, make in actions:
            if roll < upper:
                return make()
        return None

    def _fallback_insert(self) -> Statement:
        """An insert into the first table, for a transaction whose random statements all found no rows."""
        name = next(iter(self.state))
        return getattr(
            self,
            {
                "customers": "_insert_customers",
                "products": "_insert_product",
                "orders": "_insert_orders",
                "audit_log": "_audit_insert",
            }[name],
        )()

    # -- statements ---------------------------------------------------------------------------------------------
    def _key(self, table: TableDef, row: tuple) -> Any:
        pk = table.pk_indexes
        if not pk:
            self.audit_serial += 1
            return self.audit_serial
        return row[pk[0]] if len(pk) == 1 else tuple(row[i] for i in pk)

    def _insert(self, name: str, rows: list[tuple]) -> Statement:
        st = self.state[name]
        for row in rows:
            key = self._key(st.table, row)
            st.rows[key] = row
            st.keys.append(key)
        return Statement(st.table, INSERT, tuple(RowChange(None, row) for row in rows))

    def _pick(self, name: str, n: int = 1) -> list[Any]:
        """Up to ``n`` distinct live keys of a table, chosen at random."""
        st = self.state[name]
        picked: list[Any] = []
        for _ in range(n * 3):
            if len(picked) == n or not st.keys:
                break
            i = self.rng.randrange(len(st.keys))
            key = st.keys[i]
            if key not in st.rows:  # deleted or re-keyed: drop lazily
                st.keys[i] = st.keys[-1]
                st.keys.pop()
                continue
            if key not in picked:
                picked.append(key)
        return picked

    def _update(self, name: str, changes: list[tuple[Any, tuple, frozenset[int], tuple]]) -> Statement | None:
        """changes: (old key, new row, assigned columns, edits per JSON column)."""
        st = self.state[name]
        out = []
        for key, new_row, assigned, edits in changes:
            old_row = st.rows.pop(key)
            new_key = key if st.table.primary_key == () else self._key(st.table, new_row)
            st.rows[new_key] = new_row
            if new_key != key:
                st.keys.append(new_key)
            out.append(RowChange(old_row, new_row, assigned, edits))
        return Statement(st.table, UPDATE, tuple(out)) if out else None

    def _delete(self, name: str, keys: list[Any]) -> Statement | None:
        st = self.state[name]
        rows = [st.rows.pop(k) for k in keys]
        return Statement(st.table, DELETE, tuple(RowChange(r, None) for r in rows)) if rows else None

    # customers
    def _new_customer(self) -> tuple:
        v, rng = self.v, self.rng
        cid = self.next_customer
        self.next_customer += 1
        row = (
            cid,
            f"user{cid}@example.{('com', 'org', 'de', 'fr')[cid % 4]}",
            v.maybe(0.9, v.name),
            v.country(),
            v.maybe(0.7, v.date),
            v.datetime(6),
            v.maybe(0.5, v.timestamp, 3),
            v.decimal(12, 2),
            v.maybe(0.8, v.double),
            TIERS[rng.randrange(4)],
            v.set_of(CONSENTS),
            rng.randrange(2),
            v.maybe(0.3, v.text, 200),
            v.maybe(0.1, v.blob, 300),
        )
        if len(self.state["customers"].table.columns) > len(row):
            row += (v.maybe(0.5, v.int32),)
        return row

    def _insert_customers(self) -> Statement:
        return self._insert("customers", [self._new_customer() for _ in range(1 + self.rng.randrange(2))])

    def _touch_customer(self) -> Statement | None:
        keys = self._pick("customers", 1 + (self.rng.random() < 0.2) * 2)
        st, v = self.state["customers"], self.v
        t = st.table
        changes = []
        for key in keys:
            row = list(st.rows[key])
            assigned = {t.index("last_login"), t.index("balance")}
            row[t.index("last_login")] = v.maybe(0.95, v.timestamp, 3)
            row[t.index("balance")] = v.decimal(12, 2)
            if self.rng.random() < 0.3:
                assigned.add(t.index("score"))
                row[t.index("score")] = v.maybe(0.7, v.double)
            if self.rng.random() < 0.2:
                assigned.add(t.index("notes"))
                row[t.index("notes")] = v.maybe(0.6, v.text, 100)
            if len(t.columns) > 14 and self.rng.random() < 0.5:
                assigned.add(14)
                row[14] = v.maybe(0.8, v.int32)
            changes.append((key, tuple(row), frozenset(assigned), ()))
        return self._update("customers", changes)

    def _delete_customer(self) -> Statement | None:
        return self._delete("customers", self._pick("customers"))

    # products
    def _new_product(self) -> tuple:
        v, rng = self.v, self.rng
        sku = self.next_sku
        self.next_sku += 1 + rng.randrange(3)
        return (
            sku,
            v.title(),
            v.decimal(10, 2),
            v.maybe(0.8, v.float32),
            rng.randrange(-100, 8_000_000),
            v.maybe(0.5, rng.randrange, 0, 256),
            v.maybe(0.7, rng.randrange, 1901, 2156),
            v.binary(4),
            v.maybe(0.4, v.blob, 64),
            v.maybe(0.9, jsondocs.product_attributes, rng),
            rng.randrange(1024),
            v.timestamp(0),
        )

    def _insert_product(self) -> Statement:
        return self._insert("products", [self._new_product()])

    def _edit_attributes(self) -> Statement | None:
        keys = self._pick("products")
        st = self.state["products"]
        t = st.table
        changes = []
        for key in keys:
            row = list(st.rows[key])
            ai = t.index("attributes")
            doc = row[ai]
            edits: tuple = ()
            if doc is not None and self.rng.random() < self.config.partial_share:
                doc, made = jsondocs.attribute_edits(self.rng, doc)
                edits = ((ai, tuple(made)),)
            else:
                doc = self.v.maybe(0.9, jsondocs.product_attributes, self.rng)
            row[ai] = doc
            row[t.index("updated_at")] = self.v.timestamp(0)
            changes.append((key, tuple(row), frozenset({ai, t.index("updated_at")}), edits))
        return self._update("products", changes)

    def _reprice(self) -> Statement | None:
        keys = self._pick("products", 2 + self.rng.randrange(4))
        st = self.state["products"]
        t = st.table
        changes = []
        for key in keys:
            row = list(st.rows[key])
            row[t.index("price")] = self.v.decimal(10, 2)
            row[t.index("stock")] = self.rng.randrange(-100, 8_000_000)
            row[t.index("bit_flags")] = self.rng.randrange(1024)
            assigned = frozenset({t.index("price"), t.index("stock"), t.index("bit_flags")})
            changes.append((key, tuple(row), assigned, ()))
        return self._update("products", changes)

    def _resku(self) -> Statement | None:
        """An UPDATE that changes the primary key (products.sku)."""
        keys = self._pick("products")
        st = self.state["products"]
        changes = []
        for key in keys:
            new_sku = self.next_sku
            self.next_sku += 1
            row = (new_sku,) + st.rows[key][1:]
            changes.append((key, row, frozenset({0}), ()))
        return self._update("products", changes)

    # orders
    def _new_order_row(self) -> tuple:
        v, rng = self.v, self.rng
        oid = self.next_order
        self.next_order += 1
        cust = rng.randrange(1, max(2, self.next_customer))
        doc = jsondocs.order_document(rng, cust, self.config.json_size, self._item_pool(), self.shared_parts)
        total = sum(Decimal(str(i["price"])) * i["qty"] for i in doc["items"]).quantize(Decimal("0.0001"))
        return (
            oid,
            cust,
            "new",
            total,
            sum(i["qty"] for i in doc["items"]),
            v.datetime(0),
            v.maybe(0.5, v.time, 2),
            doc,
            v.maybe(0.2, v.text, 400),
        )

    def _item_pool(self) -> list[dict]:
        if self.items is None:
            self.items = jsondocs.item_pool(self.rng)
        return self.items

    def _insert_orders(self) -> Statement:
        return self._insert("orders", [self._new_order_row() for _ in range(1 + (self.rng.random() < 0.1))])

    def _edit_order(self) -> Statement | None:
        keys = self._pick("orders", 1 + (self.rng.random() < 0.15))
        st = self.state["orders"]
        t = st.table
        di, si = t.index("doc"), t.index("status")
        changes = []
        for key in keys:
            row = list(st.rows[key])
            edits: tuple = ()
            if self.rng.random() < self.config.partial_share:
                doc, made = jsondocs.order_edits(self.rng, row[di], 4)
                edits = ((di, tuple(made)),)
            else:
                doc = jsondocs.order_document(
                    self.rng, row[1], self.config.json_size, self._item_pool(), self.shared_parts
                )
            row[di] = doc
            row[si] = ORDER_STATUSES[self.rng.randrange(len(ORDER_STATUSES))]
            changes.append((key, tuple(row), frozenset({di, si}), edits))
        return self._update("orders", changes)

    def _delete_orders(self) -> Statement | None:
        return self._delete("orders", self._pick("orders", 1 + self.rng.randrange(3)))

    # audit_log (no primary key)
    def _audit_row(self) -> tuple:
        v, rng = self.v, self.rng
        return (
            v.timestamp(6),
            v.word(),
            ("login", "logout", "refund", "export")[rng.randrange(4)],
            v.maybe(0.8, rng.randrange, -(2**63), 2**63),
            v.maybe(0.5, v.double),
            v.maybe(0.6, v.blob, 40),
            v.maybe(0.5, v.time, 0),
            v.maybe(0.7, rng.randrange, -32768, 32768),
        )

    def _audit_insert(self) -> Statement:
        return self._insert("audit_log", [self._audit_row() for _ in range(1 + self.rng.randrange(4))])

    def _audit_update(self) -> Statement | None:
        keys = self._pick("audit_log")
        st = self.state["audit_log"]
        changes = []
        for key in keys:
            row = list(st.rows[key])
            row[3] = self.v.maybe(0.8, self.rng.randrange, -(2**63), 2**63)
            row[6] = self.v.maybe(0.5, self.v.time, 0)
            changes.append((key, tuple(row), frozenset({3, 6}), ()))
        return self._update("audit_log", changes)

    def _audit_delete(self) -> Statement | None:
        return self._delete("audit_log", self._pick("audit_log"))

    # the extra tables of the DDL plan (``name``: a table's first name), whatever their columns are now
    def _extra_row(self, name: str, st: _TableState) -> tuple:
        row = []
        for c in st.table.columns:
            if c.auto_increment:
                row.append(st.next_id)
                st.next_id += 1
            else:
                row.append(sc.column_value(self.v, name, c))
        return tuple(row)

    def _extra_insert(self, name: str) -> Statement | None:
        st = self.extra[name]
        if st is None:
            return None
        if not st.table.primary_key and self.rng.random() < 0.25:
            again = self._pick(st.table.name)  # an equal row once more: no primary key
            if again:
                return self._insert(st.table.name, [st.rows[again[0]]])
        return self._insert(st.table.name, [self._extra_row(name, st) for _ in range(1 + self.rng.randrange(2))])

    def _extra_update(self, name: str) -> Statement | None:
        st = self.extra[name]
        if st is None:
            return None
        t = st.table
        free = [i for i, c in enumerate(t.columns) if i not in t.pk_indexes and not c.auto_increment]
        changes = []
        for key in self._pick(t.name, 1 + (self.rng.random() < 0.2)):
            row = list(st.rows[key])
            assigned = frozenset(free[self.rng.randrange(len(free))] for _ in range(2))
            for i in assigned:
                row[i] = sc.column_value(self.v, name, t.columns[i])
            if tuple(row) != st.rows[key]:  # MySQL logs no row an UPDATE leaves as it was
                changes.append((key, tuple(row), assigned, ()))
        return self._update(t.name, changes)

    def _extra_delete(self, name: str) -> Statement | None:
        st = self.extra[name]
        return None if st is None else self._delete(st.table.name, self._pick(st.table.name))
