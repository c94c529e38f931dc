"""Reading a large table bounded by a batch's key range: a MERGE into silver (the spark engine) and the fold's
read of silver's touched keys skip the files whose key statistics lie outside the lowest and highest integer key
the batch holds (a superset of the rows they need: the result is the same)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from binlake.lake.delta.plan import quote_spark

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

KEY_RANGE_MIN_ROWS = 1_000_000  # a table of at least this many rows (its log's statistics) is read bounded


def key_ranges(data: DataFrame, keys: Sequence[str]) -> dict[str, tuple[int, int]]:
    """key -> (lowest, highest) value in ``data`` of each of ``keys`` that is an integer column (one Spark job;
    integers only: they come back to the driver and go out again as literals exactly)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ByteType, IntegerType, LongType, ShortType

    integral = (ByteType, IntegerType, LongType, ShortType)
    ints = [k for k in keys if isinstance(data.schema[k].dataType, integral)]
    if not ints:
        return {}
    [bounds] = data.agg(*[f(F.col(quote_spark(k))) for k in ints for f in (F.min, F.max)]).collect()
    return {k: (bounds[2 * i], bounds[2 * i + 1]) for i, k in enumerate(ints) if bounds[2 * i] is not None}
