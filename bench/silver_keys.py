"""Silver's rows of the touched keys, for a table keyed by a string (a SKU, a UUID): what a daily load pays to
join silver's current rows into the fold, as the table grows.

    python bench/silver_keys.py                    # 1M silver rows, 1000 touched keys
    python bench/silver_keys.py --rows 4000000 --touched 10000

A Parquet table of ``--rows`` rows (a VARCHAR key and 12 more columns of silver types) and ``--touched`` bronze
row keys of it; the fold records of those keys (``_keyed_silver`` then the exact semi-join on the row key, what
``base_records`` builds) are computed with the key cut first (``_key_prefilter``: row keys from the key column
alone, then a join on it) and, as the baseline in the same Spark session, without it (every row converted to
the bronze encoding in Python, as before). Each way runs twice, alternating, and the faster run counts. Prints
both times and the ratio, and checks both give the same records.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != BENCH_DIR]  # bench/json.py is not json


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="silver rows (default 1M)")
    parser.add_argument("--touched", type=int, default=1000, help="keys the batch touches (default 1000)")
    args = parser.parse_args(argv)

    from pyspark.sql import functions as F

    from binlake.lake.apply import RECORD_COLUMNS, _key_prefilter, _keyed_silver
    from binlake.lake.arrow import spark_ddl
    from binlake.lake.session import build_session

    spark = build_session("bench-silver-keys")
    work = Path(tempfile.mkdtemp(prefix="binlake-bench-silver-keys-"))
    print(f"bench: writing {args.rows:,} silver rows under {work} ...", file=sys.stderr)
    (
        spark.range(args.rows)
        .select(
            F.concat(F.lit("SKU-"), F.lpad(F.col("id").cast("string"), 10, "0")).alias("sku"),
            *[(F.col("id") * k).alias(f"n{k}") for k in range(1, 5)],
            *[F.concat(F.lit(f"text {k} "), F.col("id").cast("string")).alias(f"s{k}") for k in range(1, 5)],
            F.current_date().alias("d"),
            F.current_timestamp().alias("ts"),
            (F.col("id") / 7).cast("decimal(12,2)").alias("price"),
            F.lit(b"\x00\x01").alias("b"),
            F.col("id").alias("_binlake_seq"),
            F.lit("insert").alias("_binlake_op"),
        )
        .write.parquet(str(work / "silver"))
    )
    silver = spark.read.parquet(str(work / "silver"))
    step = max(1, args.rows // args.touched)
    touched = spark.createDataFrame(
        [("shop", "products", f'["SKU-{i:010d}"]') for i in range(0, args.rows, step)],
        "db string, table_name string, row_key string",
    ).cache()
    n_touched = touched.count()
    kinds = [(f.name, f.dataType.simpleString()) for f in silver.schema.fields]

    def records(frame):
        return frame.mapInArrow(
            _keyed_silver(kinds, {}, ["sku"], "shop", "products", False), spark_ddl(RECORD_COLUMNS)
        ).join(touched, ["db", "table_name", "row_key"], "left_semi")

    timings: dict[str, float] = {}
    got = {}
    ways = (
        ("whole table converted (before)", silver),
        (
            "cut to the touched keys (_key_prefilter)",
            _key_prefilter(silver, dict(kinds), {}, ["sku"], touched, "shop", "products"),
        ),
    )
    for _ in range(2):  # each way twice, alternating; the faster of its two runs (JVM warm-up)
        for name, frame in ways:
            started = time.perf_counter()
            got[name] = sorted(r["row_key"] for r in records(frame).select("row_key").collect())
            seconds = time.perf_counter() - started
            timings[name] = min(seconds, timings.get(name, seconds))
            print(f"bench: {name}: {len(got[name]):,} records in {seconds:.2f} s", file=sys.stderr)
    before, after = timings.values()
    if len(set(map(tuple, got.values()))) != 1 or len(next(iter(got.values()))) != n_touched:
        raise SystemExit("bench: FAILED: the two ways give different records")
    print(f"{args.rows:,} silver rows, {n_touched:,} touched keys (string key)")
    for name, seconds in timings.items():
        print(f"  {name:<42} {seconds:8.2f} s")
    print(f"  speed-up (before / after, same session)    {before / after:8.2f}x")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
