#!/usr/bin/env bash
# Set everything up, then run binlake's main job on the embedded default: generate a 2-day MySQL 8 sample (the
# two days ending yesterday, UTC)
# (binlogs with partial JSON and compressed transactions, SDI, ground truth), load it day by day into a local
# Delta lake with local Spark and the embedded Delta engine, and validate it (truth/ holds the
# generator's own end-of-day state of every table, to compare with).
#   bash scripts/sample.sh [OUT_DIR]        (default: ./sample; rerunning it changes nothing)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
OUT=${1:-sample}
BL=.venv/bin/binlake
if [ ! -f "$OUT/manifest.json" ]; then
  echo "== binlake generate: 2 days of a shop workload into $OUT/"
  "$BL" generate --out "$OUT" --seed 7 --days 2 --scale 0.02
fi
echo "== the first events and row changes of the first binlog"
first=$(ls "$OUT"/landing/*/mysql-bin.0* | head -n 1)
"$BL" events "$first" --format jsonl | head -n 5
"$BL" rows "$first" --format jsonl | head -n 3 | cut -c1-300
# the generated days (by default the two ending yesterday, UTC: today's scheduled DAG run finds recent data)
days=$(.venv/bin/python -c 'import json, sys; print(" ".join(d["date"] for d in json.load(open(sys.argv[1]))["days"]))' "$OUT/manifest.json")
for day in $days; do
  echo "== binlake run: changes committed up to the end of $day"
  "$BL" run --landing "$OUT/landing" --lake "$OUT/lake" --end "$day" --validate
done
echo "Report: $OUT/lake/reports/quality/ ; tables: $OUT/lake/"
