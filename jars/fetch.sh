#!/usr/bin/env bash
# Put delta-spark's jars (jars/pom.xml) into a folder, verified against jars/SHA256SUMS.
#
#   jars/fetch.sh [--python PY] DEST   DEST ends up holding exactly the jars SHA256SUMS lists, each verified; Maven
#                                      (mvn -C: strict checksums) runs only when DEST does not hold them already.
#                                      With --python, first check that PY's pyspark and delta-spark are the versions
#                                      jars/pom.xml names.
#   jars/fetch.sh --resum              after changing jars/pom.xml: fetch into a scratch folder and rewrite
#                                      jars/SHA256SUMS from it (review the diff, then commit).
#
# Used by scripts/setup.sh (DEST = .jars) and docker/Dockerfile (the images' Spark). Errors are one line on stderr.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
sums="$here/SHA256SUMS"

die() { echo "jars: $*" >&2; exit 1; }
prop() { sed -n "s:.*<$1>\(.*\)</$1>.*:\1:p" "$here/pom.xml" | head -n1; }
listed() { grep -v '^#' "$sums" | awk 'NF { print $2 }' | sort; }
jars_in() { find "$1" -maxdepth 1 -name '*.jar' -printf '%f\n' | sort; }

# Fetch the pom's runtime jars with Maven into $1 (empty folder).
mvn_copy() {
    command -v mvn >/dev/null 2>&1 ||
        die "mvn is missing; install Maven (apt-get install -y maven) and rerun, or put the jars listed in $sums into the folder by hand"
    mvn -B -q -C -f "$here/pom.xml" dependency:copy-dependencies -DoutputDirectory="$1" 2>&1 |
        sed -e 's/\x1b\[[0-9;]*m//g' -e '/^$/d' >&2 ||
        die "Maven could not fetch delta-spark's jars from Maven Central (output above); check network access to it and rerun"
}

# 0 when folder $1 holds exactly the listed jars with the listed checksums.
verified() {
    [ -d "$1" ] || return 1
    [ "$(jars_in "$1")" = "$(listed)" ] || return 1
    (cd "$1" && grep -v '^#' "$sums" | sha256sum --quiet -c - >/dev/null 2>&1)
}

if [ "${1:-}" = "--resum" ]; then
    scratch=$(mktemp -d)
    trap 'rm -rf "$scratch"' EXIT
    mvn_copy "$scratch"
    { grep '^#' "$sums"; (cd "$scratch" && sha256sum -- *.jar); } > "$sums.new"
    mv "$sums.new" "$sums"
    echo "jars: rewrote $sums from $(jars_in "$scratch" | wc -l) jars; review the diff and commit it"
    exit 0
fi

PY=""
if [ "${1:-}" = "--python" ]; then PY="${2:?--python needs an interpreter}"; shift 2; fi
dest="${1:?usage: jars/fetch.sh [--python PY] DEST | --resum}"

if [ -n "$PY" ]; then
    have=$("$PY" -c 'from importlib.metadata import version as v
print(".".join(v("pyspark").split(".")[:2]), v("delta-spark"))') || die "$PY can not report its pyspark and delta-spark versions"
    want="$(prop spark.binary) $(prop delta.pip.version)"
    [ "$have" = "$want" ] || die "the venv has pyspark/delta-spark '$have' but jars/pom.xml is for '$want';" \
        "update spark.binary, delta.pip.version and delta.spark.version in jars/pom.xml, then run jars/fetch.sh --resum"
fi

verified "$dest" && exit 0

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
echo "jars: fetching delta-spark $(prop delta.spark.version) for Spark $(prop spark.binary) from Maven Central" >&2
mvn_copy "$scratch"
got=$(jars_in "$scratch")
[ "$got" = "$(listed)" ] || die "Maven delivered other jars than $sums lists ($(echo "$got" | tr '\n' ' ')); after changing" \
    "jars/pom.xml run jars/fetch.sh --resum"
bad=$(cd "$scratch" && grep -v '^#' "$sums" | sha256sum -c - 2>/dev/null | grep -v ': OK$' | cut -d: -f1 | tr '\n' ' ' || true)
[ -z "$bad" ] || die "SHA-256 mismatch for ${bad% } (not the jars $sums pins); do not use them: remove them from" \
    "$HOME/.m2/repository and rerun"
mkdir -p "$dest"
rm -f -- "$dest"/*.jar
cp -- "$scratch"/*.jar "$dest"/
verified "$dest" || die "could not install the verified jars into $dest"
echo "jars: $(listed | wc -l) verified jars in $dest" >&2
