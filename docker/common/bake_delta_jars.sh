#!/usr/bin/env bash
# Bake delta-spark's jars into the image's Spark at build time, through Spark's own package mechanism.
#
#   bake_delta_jars.sh PACKAGE OUTDIR   resolve PACKAGE (io.delta:delta-spark_<spark x.y>_2.13:<delta-spark>) and its
#                                       dependencies with `spark-submit --packages` (Ivy), keep the jars Spark does
#                                       not ship in OUTDIR and in $SPARK_HOME/jars, then verify as below
#   bake_delta_jars.sh --verify-only    offline check of the jars already in $SPARK_HOME/jars: a local Spark writes
#                                       and MERGEs a Delta table, and binlake's engine_for(spark) picks delta-spark
#
# PACKAGE must name the installed pyspark's major.minor and the installed delta-spark version, or the build stops.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export SPARK_LOCAL_IP=127.0.0.1
: "${SPARK_HOME:?set SPARK_HOME to the Spark of the installed pyspark}"

warmup() {
    spark-submit --master 'local[1]' \
        --conf spark.ui.enabled=false \
        --conf spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension \
        --conf spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog \
        "$@" "$here/delta_warmup.py"
}

if [ "${1:-}" = "--verify-only" ]; then
    warmup
    exit 0
fi
package="${1:?usage: bake_delta_jars.sh PACKAGE OUTDIR | --verify-only}"
outdir="${2:?usage: bake_delta_jars.sh PACKAGE OUTDIR | --verify-only}"

installed=$(python -c 'from importlib.metadata import version as v
print("io.delta:delta-spark_%s_2.13:%s" % (".".join(v("pyspark").split(".")[:2]), v("delta-spark")))')
if [ "$installed" != "$package" ]; then
    echo "bake_delta_jars: $package does not match the installed pyspark and delta-spark ($installed);" \
         "set DELTA_SPARK_PACKAGE in docker/Dockerfile to $installed" >&2
    exit 1
fi

ivy=$(mktemp -d)
trap 'rm -rf "$ivy"' EXIT
echo "bake_delta_jars: resolving $package with spark-submit --packages"
warmup --packages "$package" --conf "spark.jars.ivy=$ivy"

# Ivy retrieves <org>_<module>-<rev>.jar; install them as <module>-<rev>.jar (the name binlake.lake.session looks
# for: delta-spark_*.jar), skipping modules Spark already ships (e.g. antlr4-runtime) so one version stays.
mkdir -p "$outdir"
for jar in "$ivy"/jars/*.jar; do
    name=$(basename "$jar")
    name=${name#*_}
    module=${name%-*}
    if compgen -G "$SPARK_HOME/jars/$module-[0-9]*.jar" >/dev/null; then
        echo "bake_delta_jars: $name: Spark ships $module already, not added"
        continue
    fi
    cp "$jar" "$outdir/$name"
    cp "$jar" "$SPARK_HOME/jars/$name"
    echo "bake_delta_jars: added $name"
done
compgen -G "$SPARK_HOME/jars/delta-spark_*.jar" >/dev/null || {
    echo "bake_delta_jars: no delta-spark_*.jar was resolved for $package" >&2; exit 1; }

echo "bake_delta_jars: verifying the baked jars without --packages"
warmup
