"""Errors of ``binlake.lake``: Delta tables, engines and Spark sessions."""

from binlake.errors import BinlakeError


class LakeError(BinlakeError):
    """Base of the lake's errors."""


class DeltaEngineUnavailableError(LakeError):
    """The Delta engine asked for can not run in this Spark session (the message says why and what to do)."""


class DeltaTableNotFoundError(LakeError):
    """No Delta table (no ``_delta_log``) at the path."""


class SchemaConflictError(LakeError):
    """Source and target disagree on a column's type, or name a column in two spellings that differ in case."""


class MergeSourceError(LakeError):
    """The MERGE source is not what the CDC MERGE needs: a missing column or more than one change per key."""


class UnsupportedTableFeatureError(LakeError):
    """The table uses a Delta feature the embedded engine's Spark reader can not apply (use the spark engine)."""


class SparkJobFailed(LakeError):
    """A Spark job of a pipeline stage failed in the JVM or a Python worker (out of memory, a lost executor, a
    failed task); the message names the stage, the cause and what to change, and where the full trace is."""


class SparkStartFailed(LakeError):
    """Spark's driver did not start: its JVM exited at launch (a bad setting, no usable Java) or the SparkContext
    refused a setting; the message gives the JVM's own reason and where its output is."""


class BinlogGapError(LakeError):
    """A source's binlogs do not continue from what the lake holds: a file missing between two others, or a file
    that changed below the position already ingested. The source stops; a snapshot is the way forward."""


class GtidGapError(BinlogGapError):
    """A cluster member the source switches to does not continue the GTIDs the source holds without a hole
    (transactions the old primary had and this member never received, or purged before they were fetched)."""


class ErrantTransactionError(BinlogGapError):
    """A cluster member holds transactions that are not in the history the source followed (written on a
    replica and never on the primary, or a history that diverged from what the source holds)."""


class GapSnapshotMissingError(BinlogGapError):
    """The snapshot that filled a GTID gap at a cluster source's switch is no longer landed, and tables it was to
    seed are not seeded yet: they would miss the transactions only it held (the switch skipped them)."""


class LayoutMissingError(LakeError):
    """Bronze change rows name a table layout whose ``layout`` row is not in bronze."""


class PathUnusable(LakeError):
    """A folder a command needs is a file, can not be written (or read), or is on a full disk; found before any
    work starts."""
