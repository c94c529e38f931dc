#!/usr/bin/env bash
# Set everything up, then run binlake's main job on the embedded default: generate a 2-day MySQL 8 sample (the
# two days ending yesterday, UTC)
# (binlogs with partial JSON and compressed transactions, SDI, ground truth), land each day's binlogs and load
# that day into a local Delta lake with local Spark and the embedded Delta engine, and validate it (truth/ holds the
# generator's own end-of-day state of every table, to compare with).
#   bash scripts/sample.sh [OUT_DIR]        (default: ./sample; rerunning it changes nothing)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
OUT=${1:-sample}
BL=.venv/bin/binlake
# ship hold|DAY: as a binlog shipper delivers a day's binlogs after that day, hold the later days' files of a new
# sample back in $OUT/shipping/, and land DAY's files before DAY's run (so each run ingests its own day)
ship() {
  .venv/bin/python - "$OUT" "$1" <<'PY'
import json, os, sys

out, what = sys.argv[1], sys.argv[2]
manifest = json.load(open(os.path.join(out, "manifest.json")))
landing, shipping = (os.path.join(out, folder, manifest["source"]) for folder in ("landing", "shipping"))
days = manifest["days"][1:] if what == "hold" else [d for d in manifest["days"] if d["date"] == what]
src, dst = (landing, shipping) if what == "hold" else (shipping, landing)
for day in days:
    prefix, first = day["first_binlog"].rsplit(".", 1)
    last = day["last_binlog"].rsplit(".", 1)[1]
    names = os.listdir(src) if os.path.isdir(src) else []
    for name in sorted(n for n in names if n.startswith(prefix + ".") and first <= n[len(prefix) + 1 :] <= last):
        os.makedirs(dst, exist_ok=True)
        os.rename(os.path.join(src, name), os.path.join(dst, name))
PY
}
if [ ! -f "$OUT/manifest.json" ]; then
  echo "== binlake generate: 2 days of a shop workload into $OUT/"
  "$BL" generate --out "$OUT" --seed 7 --days 2 --scale 0.02
  ship hold
fi
echo "== the first events and row changes of the first binlog"
first=$(ls "$OUT"/landing/*/mysql-bin.0* | head -n 1)
"$BL" events "$first" --format jsonl | head -n 5
"$BL" rows "$first" --format jsonl | head -n 3 | cut -c1-300
# the generated days (by default the two ending yesterday, UTC: today's scheduled DAG run finds recent data)
days=$(.venv/bin/python -c 'import json, sys; print(" ".join(d["date"] for d in json.load(open(sys.argv[1]))["days"]))' "$OUT/manifest.json")
for day in $days; do
  ship "$day"
  echo "== binlake run: the binlogs of $day landed; changes committed up to the end of $day"
  "$BL" run --landing "$OUT/landing" --lake "$OUT/lake" --end "$day" --validate
done
echo "Report: $OUT/lake/reports/quality/ ; tables: $OUT/lake/"
