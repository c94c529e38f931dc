"""Delta tables behind one small interface with two engines (see docs/ARCHITECTURE.md, "Delta engines").

    engine = engine_for(spark)                      # "spark" when delta-spark can run in spark's JVM, else "rust"
    engine.append(path, df)                         # -> version
    result = engine.merge(path, changes, keys=["id"])   # CDC MERGE guarded by _binlake_seq -> MergeResult
    engine.read(spark, path)                        # -> DataFrame with the table's exact types

Importing this package imports neither pyspark nor deltalake.
"""

from binlake.lake.delta.engine import ENGINE_NAMES, DeltaEngine, engine_for, spark_engine_unavailable_reason
from binlake.lake.delta.plan import MergeResult, MergeSpec
from binlake.vocabulary import DELETE_OP, OP_COL, SEQ_COL

__all__ = [
    "DELETE_OP",
    "ENGINE_NAMES",
    "OP_COL",
    "SEQ_COL",
    "DeltaEngine",
    "MergeResult",
    "MergeSpec",
    "engine_for",
    "spark_engine_unavailable_reason",
]
