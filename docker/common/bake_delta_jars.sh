#!/usr/bin/env bash
# Install delta-spark's jars into the image's Spark at build time and prove they work, offline.
#
#   bake_delta_jars.sh JARDIR   JARDIR holds the jars the delta-jars stage fetched with Maven (jars/pom.xml). Check
#                               them against jars/SHA256SUMS and check that the venv's pyspark and delta-spark are
#                               the versions jars/pom.xml names (jars/fetch.sh; no download here), copy them into
#                               $SPARK_HOME/jars, then a local Spark (spark-submit, no jar options) writes and MERGEs
#                               a Delta table and binlake's engine_for(spark) picks delta-spark.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
jardir="${1:?usage: bake_delta_jars.sh JARDIR}"
: "${SPARK_HOME:?set SPARK_HOME to the Spark of the installed pyspark}"
: "${BINLAKE_SRC:=/opt/binlake/src}"
export SPARK_LOCAL_IP=127.0.0.1

bash "$BINLAKE_SRC/jars/fetch.sh" --python python "$jardir"
cp -- "$jardir"/*.jar "$SPARK_HOME/jars/"
echo "bake_delta_jars: installed $(find "$jardir" -name '*.jar' | wc -l) verified jars into $SPARK_HOME/jars"
compgen -G "$SPARK_HOME/jars/delta-spark_*.jar" >/dev/null || {
    echo "bake_delta_jars: no delta-spark_*.jar in $jardir" >&2; exit 1; }

spark-submit --master 'local[1]' \
    --conf spark.ui.enabled=false \
    --conf spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension \
    --conf spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog \
    "$here/delta_warmup.py"
