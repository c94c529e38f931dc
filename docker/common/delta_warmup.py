"""Build-time check of a Spark with delta-spark (run by bake_delta_jars.sh through spark-submit, master local[1]).

Writes a Delta table, MERGEs into it, reads it back, and checks that binlake picks its delta-spark engine in this
session (``binlake.lake.delta.engine_for(spark, "spark")``). Any failure fails the image build.
"""

from __future__ import annotations

import sys
import tempfile


def main() -> int:
    from delta.tables import DeltaTable
    from pyspark.sql import SparkSession

    from binlake.lake.delta import engine_for

    spark = SparkSession.builder.appName("binlake-delta-warmup").getOrCreate()
    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/warmup"
        spark.range(3).write.format("delta").save(path)
        (
            DeltaTable.forPath(spark, path)
            .alias("t")
            .merge(spark.range(2, 5).alias("s"), "t.id = s.id")
            .whenNotMatchedInsertAll()
            .execute()
        )
        rows = spark.read.format("delta").load(path).count()
    engine = engine_for(spark, "spark").name
    spark.stop()
    if rows != 5 or engine != "spark":
        print(
            f"delta_warmup: expected 5 rows and the spark engine, got {rows} rows and engine {engine}", file=sys.stderr
        )
        return 1
    print("delta_warmup: delta-spark works (write, MERGE, read) and binlake picks the spark engine")
    return 0


if __name__ == "__main__":
    sys.exit(main())
