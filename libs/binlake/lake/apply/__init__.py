"""The apply job: a source's unapplied bronze changes -> ``silver.<db>__<table>`` (CDC MERGE), the SCD2 history,
``meta.quarantine`` and ``meta.checkpoints``. Every step is a DataFrame computed by Spark's executors; the driver
plans, commits and reports (it holds per-table metadata and counters, never the changes).

1. **The batch**: the source's bronze rows after its checkpoint, up to the first change or DDL committed at or
   after the cutoff. This one commit-time rule decides what a run (a day) applies, inside files too.
2. **Scan**: tables, primary keys, column layouts, GTIDs, last position, undecodable stretches, and the tables
   whose key-changing updates depend on the old row (below): the sum of the scans the ingest recorded in the
   footers of the files wholly inside the batch (:mod:`.scan_footer`), and one pass over the rows of the
   others, aggregated per partition.
3. **Fold per key**: each change goes to the group of the row key it touches (a key-changing update whose
   after image holds the whole row becomes two halves: a tombstone at the old key, the row at the new key, so
   keys fold independently); silver's current row of every touched key joins its group. Groups are spread over
   partitions by (table, key) and sorted by the exact binlog order inside each, then folded one at a time by
   :mod:`binlake.pipeline.fold` (partial JSON diffs resolved against the key's current document). The keys that
   key-changing updates needing the old row (a MINIMAL after image, a partial JSON update) link fold together as
   one group, in order (a table without a primary key, or with more than :data:`.scan.MAX_KEY_LINKS` of them: the
   whole table).
4. **Write**: quarantine (insert-only MERGE), then per table the history and the silver MERGE guarded by
   ``_binlake_seq``, then the checkpoint. A crash between any two commits followed by a rerun converges: a
   change not newer than a row's ``_binlake_seq`` is already applied.

One module per step: :mod:`.batch`, :mod:`.scan`, the fold's records (:mod:`.records` from bronze,
:mod:`.silver_keys` from silver) and :mod:`.fold`, :mod:`.write`; :mod:`.ddl` splits the batch at its DDL
statements and :mod:`.job` runs the steps segment by segment.
"""

from binlake.lake.apply.job import ApplyReport, apply_job
from binlake.lake.apply.records import RECORD_COLUMNS
from binlake.lake.apply.silver_keys import _key_prefilter, _keyed_silver  # bench/silver_keys.py imports them here

__all__ = ["RECORD_COLUMNS", "ApplyReport", "_key_prefilter", "_keyed_silver", "apply_job"]
