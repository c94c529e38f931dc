"""Hand-written CDC cases shared by the embedded engine's Arrow tests and both engines' Spark contract tests.

Expected rows are worked out by hand from the MERGE rules (binlake.lake.delta.plan.MergeSpec), not by running
the code under test.
"""

from __future__ import annotations

COLUMNS = (("id", "long"), ("v", "string"), ("_binlake_seq", "long"), ("_binlake_op", "string"))
WIDE_COLUMNS = COLUMNS + (("note", "string"),)

# The table before the batch: four rows, all last changed at seq 10.
TARGET = [
    (1, "a", 10, "insert"),
    (2, "b", 10, "insert"),
    (3, "c", 10, "insert"),
    (4, "d", 10, "update"),
]

# One batch, already reduced to the last change per key.
BATCH = [
    (1, "A", 20, "update"),  # newer update: applied
    (2, "b", 20, "delete"),  # newer delete: row removed
    (3, "C", 5, "update"),  # older than the table's row: ignored
    (4, "d", 5, "delete"),  # older delete: ignored
    (5, "E", 20, "insert"),  # new key: inserted
    (6, "f", 20, "delete"),  # delete of a key the table never had: nothing
]

AFTER_BATCH = [
    (1, "A", 20, "update"),
    (3, "c", 10, "insert"),
    (4, "d", 10, "update"),
    (5, "E", 20, "insert"),
]
BATCH_COUNTS = {"inserted": 1, "updated": 1, "deleted": 1}

# The same batch with tombstones kept: the delete of 2 stays as a row, and so does the delete of unseen 6.
AFTER_BATCH_TOMBSTONES = [
    (1, "A", 20, "update"),
    (2, "b", 20, "delete"),
    (3, "c", 10, "insert"),
    (4, "d", 10, "update"),
    (5, "E", 20, "insert"),
    (6, "f", 20, "delete"),
]

# A batch that brings a new column: 1 changes and gets a note, 7 is new; the others keep NULL notes.
WIDE_BATCH = [
    (1, "A2", 30, "update", "first note"),
    (7, "g", 30, "insert", None),
]
AFTER_WIDE_BATCH = [
    (1, "A2", 30, "update", "first note"),
    (3, "c", 10, "insert", None),
    (4, "d", 10, "update", None),
    (5, "E", 20, "insert", None),
    (7, "g", 30, "insert", None),
]


def ddl(columns) -> str:
    """The columns as a Spark DDL schema string."""
    return ", ".join("`" + name.replace("`", "``") + f"` {kind}" for name, kind in columns)


def arrow_table(rows, columns=COLUMNS):
    import pyarrow as pa

    kinds = {"long": pa.int64(), "string": pa.string()}
    schema = pa.schema([(name, kinds[kind]) for name, kind in columns])
    return pa.Table.from_pylist([dict(zip(schema.names, row)) for row in rows], schema=schema)


def sorted_rows(rows) -> list[tuple]:
    return sorted((tuple(r) for r in rows), key=lambda r: r[0])
