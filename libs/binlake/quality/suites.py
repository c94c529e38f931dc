"""The expectation suites, built by factory functions (GX 1.x ``ExpectationSuite`` objects).

* :func:`table_suite` -- one per silver table, generated from its definition (:mod:`binlake.quality.rules`)
  plus the hand-written additions of :data:`HAND_WRITTEN`;
* the pipeline suites, each checking one frame of :mod:`binlake.quality.frames`: :func:`bronze_order_suite`,
  :func:`bronze_sequence_suite`, :func:`bronze_ops_suite`, :func:`reconciliation_suite`,
  :func:`quarantine_suite`, :func:`registry_suite`.

Every expectation carries ``severity`` (``critical`` = error level: the run fails; ``warning``: reported only)
and ``meta`` = ``{"rule": ..., "why": ...}`` saying where it comes from. GX is imported inside the functions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from binlake.lake.layout import silver_name
from binlake.quality.names import gx_name
from binlake.quality.rules import ERROR, WARNING, Rule, table_rules
from binlake.sdi.model import Table
from binlake.vocabulary import BRONZE_OPS as BRONZE_OP_NAMES
from binlake.vocabulary import SEQ_COL

if TYPE_CHECKING:
    from great_expectations import ExpectationSuite
    from great_expectations.expectations import Expectation

SEVERITY = {ERROR: "critical", WARNING: "warning"}

# suite names (also the GX data asset names of the frames they check)
BRONZE_ORDER = "bronze.binlog_events"
BRONZE_SEQUENCE = "bronze.row_sequence"
BRONZE_OPS = "bronze.ops"
RECONCILIATION = "silver.reconciliation"
QUARANTINE = "meta.quarantine"
REGISTRY = "meta.schema_registry"
TEMPORALS = "silver.invalid_temporals"
PIPELINE_SUITES = (BRONZE_ORDER, BRONZE_SEQUENCE, BRONZE_OPS, RECONCILIATION, QUARANTINE, REGISTRY, TEMPORALS)


def silver_table_name(db: str, table: str) -> str:
    """``silver.<folder>``: the suite (and asset) name of a silver table, named by its silver folder
    (``silver.<db>__<table>`` for plain names, ``~XX``-escaped otherwise; see :mod:`binlake.quality.names`)."""
    return f"silver.{silver_name(db, table)}"


def _expectation(kind: str, columns: tuple[str, ...], params: dict[str, Any], level: str, why: str) -> "Expectation":
    import great_expectations.expectations as gxe

    common: dict[str, Any] = {"severity": SEVERITY[level], "meta": {"rule": kind, "why": why}}
    columns = tuple(gx_name(c) for c in columns)  # the names the checked frame's columns get (runner)
    column = columns[0] if columns else None
    if kind == "column_exists":
        return gxe.ExpectColumnToExist(column=column, **common)
    if kind == "not_null":
        return gxe.ExpectColumnValuesToNotBeNull(column=column, **common)
    if kind == "unique":
        return gxe.ExpectColumnValuesToBeUnique(column=column, **common)
    if kind == "compound_unique":
        return gxe.ExpectCompoundColumnsToBeUnique(column_list=list(columns), **params, **common)
    if kind == "in_set":
        return gxe.ExpectColumnValuesToBeInSet(column=column, **params, **common)
    if kind == "not_in_set":
        return gxe.ExpectColumnValuesToNotBeInSet(column=column, **params, **common)
    if kind in ("set_members", "regex"):
        return gxe.ExpectColumnValuesToMatchRegex(column=column, **params, **common)
    if kind == "max_length":
        return gxe.ExpectColumnValueLengthsToBeBetween(column=column, min_value=0, **params, **common)
    if kind == "between":
        return gxe.ExpectColumnValuesToBeBetween(column=column, **params, **common)
    if kind == "json":
        return gxe.ExpectColumnValuesToBeJsonParseable(column=column, **common)
    if kind == "row_count":
        return gxe.ExpectTableRowCountToBeBetween(**params, **common)
    raise ValueError(f"unknown rule kind {kind!r}")


def expectation_of(rule: Rule) -> "Expectation":
    """The GX expectation of one rule."""
    return _expectation(rule.kind, rule.columns, dict(rule.params), rule.level, rule.why)


def _suite(name: str, rules: list[Rule]) -> "ExpectationSuite":
    import great_expectations as gx

    suite = gx.ExpectationSuite(name=name)
    for rule in rules:
        suite.add_expectation(expectation_of(rule))
    return suite


# ------------------------------------------------------------------------------------------- silver tables


def _shop_customers() -> list[Rule]:
    return [
        Rule(
            "regex",
            ("email",),
            (("regex", r"^[^@\s]+@[^@\s]+\.[^@\s]+$"),),
            WARNING,
            "hand-written: an e-mail address has one @ and a domain",
        )
    ]


def _shop_orders() -> list[Rule]:
    return [
        Rule("regex", ("doc",), (("regex", r"^\s*\{"),), WARNING, "hand-written: an order document is a JSON object")
    ]


HAND_WRITTEN: dict[tuple[str, str], Callable[[], list[Rule]]] = {
    ("shop", "customers"): _shop_customers,
    ("shop", "orders"): _shop_orders,
}
"""Rules a table needs beyond what its definition implies, by (db, table)."""


def table_rules_with_extras(table: Table) -> list[Rule]:
    extra = HAND_WRITTEN.get((table.schema_ref, table.name))
    return table_rules(table) + (extra() if extra is not None else [])


def table_suite(table: Table) -> "ExpectationSuite":
    """The suite of the silver table of ``table`` (its live rows: tombstones are not checked)."""
    return _suite(silver_table_name(table.schema_ref, table.name), table_rules_with_extras(table))


# ----------------------------------------------------------------------------------------- pipeline suites


def bronze_order_suite() -> "ExpectationSuite":
    """Bronze change and DDL rows: the ordering key (source, file sequence, position, row index) is unique."""
    return _suite(
        BRONZE_ORDER,
        [
            Rule(
                "compound_unique",
                ("source", "file_seq", "pos", "row"),
                (),
                ERROR,
                "the ordering key is the total order of one source's changes: a repeat means a change was "
                "ingested twice",
            ),
            Rule("not_null", (SEQ_COL,), (), ERROR, "every change has its packed ordering key"),
        ],
    )


def bronze_sequence_suite() -> "ExpectationSuite":
    """Per rows event (source, file, position): the row indices are exactly 0 .. n-1 (no gap)."""
    return _suite(
        BRONZE_SEQUENCE,
        [
            Rule(
                "between",
                ("missing_rows",),
                (("min_value", 0), ("max_value", 0)),
                ERROR,
                "a rows event's rows are numbered 0..n-1 (counting on across a TRANSACTION_PAYLOAD); "
                "missing_rows = max(row) + 1 - distinct rows: a row was lost between decode and bronze",
            ),
        ],
    )


def bronze_ops_suite() -> "ExpectationSuite":
    """Counts by operation of this run's bronze rows (the counts themselves go to the report). A run that
    ingested nothing is no warning: a backfill of days already ingested and a quiet source both ingest nothing,
    and a fetch that stalled is the freshness check's to find."""
    return _suite(
        BRONZE_OPS,
        [
            Rule("in_set", ("op",), (("value_set", list(BRONZE_OP_NAMES)),), ERROR, "bronze's operations"),
            Rule(
                "not_in_set",
                ("op",),
                (("value_set", ["error"]),),
                WARNING,
                "undecodable stretches of binlog (they are quarantined with their reason)",
            ),
        ],
    )


def reconciliation_suite() -> "ExpectationSuite":
    """Per silver table: live rows = inserts - deletes in bronze (updates, also of the key, change no count)."""
    return _suite(
        RECONCILIATION,
        [
            Rule(
                "between",
                ("difference",),
                (("min_value", 0), ("max_value", 0)),
                ERROR,
                "silver live rows - (bronze inserts - bronze deletes), over all applied runs",
            ),
        ],
    )


def quarantine_suite(max_share: float) -> "ExpectationSuite":
    """This run's quarantined changes stay within ``max_share`` of its bronze changes."""
    return _suite(
        QUARANTINE,
        [
            Rule(
                "between",
                ("quarantined_share",),
                (("min_value", 0), ("max_value", max_share)),
                ERROR,
                f"quarantined / bronze changes of the run at most {max_share:g}",
            ),
        ],
    )


def registry_suite() -> "ExpectationSuite":
    """Every schema registry version has a complete SDI: the WL#7069 FR-03 header and a parseable table."""
    header = [
        Rule("not_null", (c,), (), ERROR, f"SDI header member {c} (FR-03)")
        for c in ("mysqld_version_id", "dd_version", "sdi_version", "engine")
    ]
    return _suite(
        REGISTRY,
        header
        + [
            Rule("in_set", ("dd_object_type",), (("value_set", ["Table"]),), ERROR, "FR-03: DO type is Table"),
            Rule(
                "in_set",
                ("sdi_parses",),
                (("value_set", [True]),),
                ERROR,
                "the SDI has every member the model requires",
            ),
            Rule(
                "in_set", ("column_count_matches",), (("value_set", [True]),), ERROR, "column_count = the SDI's columns"
            ),
            Rule("compound_unique", ("db", "table_name", "version"), (), ERROR, "one row per table version"),
            Rule("not_null", ("origin",), (), WARNING, "where the definition came from"),
        ],
    )


def temporals_suite() -> "ExpectationSuite":
    """Per silver table and column: the zero or invalid dates (MySQL stores ``0000-00-00`` and, under a relaxed
    sql_mode, dates like ``2024-02-30``) this run wrote as NULL in a typed column; their text stays in bronze."""
    return _suite(
        TEMPORALS,
        [
            Rule(
                "between",
                ("nulled",),
                (("min_value", 0), ("max_value", 0)),
                WARNING,
                "zero or invalid dates of the run, NULL in silver's typed column (raw text in bronze)",
            ),
        ],
    )


def pipeline_suites(max_quarantine_share: float) -> list["ExpectationSuite"]:
    return [
        bronze_order_suite(),
        bronze_sequence_suite(),
        bronze_ops_suite(),
        reconciliation_suite(),
        quarantine_suite(max_quarantine_share),
        registry_suite(),
        temporals_suite(),
    ]
