"""Arrow helpers of the lake: Spark DDL strings and the streamed Arrow form of a Spark DataFrame that the embedded
Delta engine writes from (silver types as Arrow types and small tables from rows: ``binlake.binlog.silver_types``).

``ArrowSource`` is what the embedded (delta-rs) engine writes: an in-memory Arrow table (small writes:
checkpoints, the registry), or a Spark DataFrame that executors wrote as Parquet files into a staging folder,
read back batch by batch (bounded memory) and cast to the Arrow form of the DataFrame's Delta schema.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Optional, Sequence

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.dataset as ds
    from pyspark.sql import DataFrame

BATCH_ROWS = 64 * 1024  # rows per Arrow batch read from a staged DataFrame


def spark_ddl(columns: Sequence[tuple[str, str]]) -> str:
    """A Spark DDL schema string (``a bigint, b string``) with quoted names."""
    return ", ".join(f"`{n.replace('`', '``')}` {k}" for n, k in columns)


def delta_arrow_schema(spark_schema: Any) -> "pa.Schema":
    """The Arrow form of a Spark StructType under Delta's type mapping (timestamps in UTC, exact decimals)."""
    import pyarrow as pa
    from deltalake import Schema

    return pa.schema(Schema.from_json(spark_schema.json()).to_arrow())


class ArrowSource:
    """Rows to write, as Arrow batches: an in-memory table, or a staged Spark DataFrame (see module doc)."""

    def __init__(
        self,
        schema: "pa.Schema",
        table: Optional["pa.Table"] = None,
        dataset: Optional["ds.Dataset"] = None,
        staged: Optional[Path] = None,
        filter: Any = None,
    ) -> None:
        self.schema, self._table, self._dataset, self._staged, self._filter = schema, table, dataset, staged, filter

    @classmethod
    def of_table(cls, table: "pa.Table") -> "ArrowSource":
        return cls(table.schema, table=table)

    @classmethod
    def stage(cls, df: "DataFrame", staging_root: str) -> "ArrowSource":
        """Have Spark's executors write ``df`` as Parquet under ``staging_root`` (no row reaches the driver)."""
        import pyarrow.dataset as ds

        from binlake.lake.owned import scratch_folder

        # never through a link: Spark's overwrite and release()'s rmtree would delete where it points
        folder = scratch_folder(
            staging_root or tempfile.gettempdir(), "binlake-staging", uuid.uuid4().hex, check_base=bool(staging_root)
        )
        df.write.mode("overwrite").parquet(str(folder))
        files = sorted(str(p) for p in folder.glob("*.parquet"))
        return cls(delta_arrow_schema(df.schema), dataset=ds.dataset(files, format="parquet"), staged=folder)

    @property
    def names(self) -> list[str]:
        return self.schema.names

    def where(self, expression: Any) -> "ArrowSource":
        """The rows matching a pyarrow dataset expression (applied while streaming)."""
        both = expression if self._filter is None else self._filter & expression
        return ArrowSource(self.schema, self._table, self._dataset, None, both)

    def _scan(self) -> "ds.Dataset":
        import pyarrow.dataset as ds

        return ds.dataset(self._table) if self._dataset is None else self._dataset

    def batches(
        self, columns: Optional[Sequence[str]] = None, max_rows: int = BATCH_ROWS
    ) -> Iterator["pa.RecordBatch"]:
        import pyarrow as pa

        schema = self.schema if columns is None else pa.schema([self.schema.field(c) for c in columns])
        for batch in self._scan().to_batches(columns=list(schema.names), filter=self._filter, batch_size=max_rows):
            if batch.num_rows:
                yield pa.RecordBatch.from_arrays(
                    [batch.column(i).cast(f.type) for i, f in enumerate(schema)], schema=schema
                )

    def reader(self) -> "pa.RecordBatchReader":
        import pyarrow as pa

        return pa.RecordBatchReader.from_batches(self.schema, self.batches())

    def tables(self, max_rows: int) -> Iterator["pa.Table"]:
        """The rows as tables of at most ``max_rows`` rows (bounded MERGE batches)."""
        import pyarrow as pa

        pending: list = []
        count = 0
        for batch in self.batches(max_rows=max_rows):
            if count + batch.num_rows > max_rows and pending:
                yield pa.Table.from_batches(pending, schema=self.schema)
                pending, count = [], 0
            pending.append(batch)
            count += batch.num_rows
        if pending:
            yield pa.Table.from_batches(pending, schema=self.schema)

    def column(self, columns: Sequence[str]) -> "pa.Table":
        """Only these columns, all rows (e.g. the MERGE keys, to check them for duplicates)."""
        import pyarrow as pa

        return pa.Table.from_batches(
            list(self.batches(columns)), schema=pa.schema([self.schema.field(c) for c in columns])
        )

    def count(self) -> int:
        return self._scan().count_rows(filter=self._filter)

    def release(self) -> None:
        if self._staged is not None:
            shutil.rmtree(self._staged, ignore_errors=True)
            self._staged = None
