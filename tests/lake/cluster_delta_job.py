"""A Spark application for tests/lake/test_spark_cluster.py: binlake's default Delta engine writes a table and
MERGEs a batch into it. Takes the table's path; prints ENGINE, MASTER and MERGE lines. Passes nothing about
Delta to Spark: the jars and SQL extension must come from the venv's Spark configuration."""

from __future__ import annotations

import sys

from binlake.lake.delta import engine_for
from binlake.lake.session import build_session


def main(path: str) -> None:
    spark = build_session("binlake-cluster-delta-check")
    engine = engine_for(spark)
    print("ENGINE", engine.name)
    print("MASTER", spark.sparkContext.master)
    engine.append(
        path,
        spark.range(0, 1000, numPartitions=8).selectExpr(
            "id", "cast(id as string) as v", "1L as _binlake_seq", "'insert' as _binlake_op"
        ),
    )
    # 990..999: even ids deleted, odd ids updated; 1000..1009 inserted
    batch = spark.range(990, 1010, numPartitions=4).selectExpr(
        "id",
        "concat('new-', id) as v",
        "2L as _binlake_seq",
        "case when id % 2 = 0 and id < 1000 then 'delete' else 'update' end as _binlake_op",
    )
    result = engine.merge(path, batch, ["id"])
    print("MERGE", result.version, result.inserted, result.updated, result.deleted)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
