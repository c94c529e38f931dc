"""What every step of apply is handed: the job's :class:`ApplyContext` and the :class:`Segment` it works on (a
stretch of the batch without DDL inside). Both are frozen: a step that leaves tables out makes a new segment."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Collection

from binlake.lake.apply.batch import TableId
from binlake.lake.apply.scan import BatchInfo
from binlake.lake.table_names import in_tables

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from binlake.lake.delta import DeltaEngine
    from binlake.lake.layout import LakeLayout
    from binlake.lake.options import RunOptions


@dataclass(frozen=True)
class ApplyContext:
    """One apply job: where it reads and writes, its options and its run id."""

    spark: "SparkSession"
    engine: "DeltaEngine"
    lake: "LakeLayout"
    opts: "RunOptions"
    run_id: str


@dataclass(frozen=True)
class Segment:
    """A stretch of the batch without DDL inside: its bronze rows after the checkpoint ``after_seq`` and their
    scan. ``info.last`` is the segment's last row, its checkpoint, whichever tables are left out."""

    rows: "DataFrame"
    info: BatchInfo
    after_seq: int

    def without(self, tables: Collection[TableId]) -> "Segment":
        """The segment without the rows and the scan of ``tables`` (tables of the segment)."""
        if not tables:
            return self
        kept = {t: ti for t, ti in self.info.tables.items() if t not in tables}
        gone = sum(self.info.tables[t].changes for t in tables)
        info = dataclasses.replace(self.info, tables=kept, changes=self.info.changes - gone)
        return Segment(self.rows.filter(~in_tables(tables)), info, self.after_seq)
