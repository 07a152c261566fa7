#!/usr/bin/env bash
# What the cache flush costs a variant, shape by shape: benchmark mode three ways (the official flush, --clean-flush,
# --hot), then a table of the means and their differences: dirty = official - clean (the flush's dirty lines written
# back during the call), cold = clean - hot (the call's cold misses).
#   scripts/device_flush_cost.sh DIR PROBLEM VARIANT [SHAPES]   DIR holds the harness binary (or harness.gz); SHAPES default all
# JSON and logs under $OUT/flush_cost (default /tmp/flush_cost).
set -uo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: scripts/device_flush_cost.sh DIR PROBLEM VARIANT [SHAPES]}
problem=${2:?problem} variant=${3:?variant} shapes=${4:-all}
source scripts/lib/unpack_harness.sh && require_harness "$dir"
out=${OUT:-/tmp}/flush_cost
mkdir -p "$out"
rc=0
for how in official clean hot; do
  extra=()
  [[ $how == clean ]] && extra=(--clean-flush)
  [[ $how == hot ]] && extra=(--hot)
  base="$out/${problem}_${variant}_$how"
  "$dir/harness" run "$problem" --variant "$variant" --mode benchmark --shapes "$shapes" "${extra[@]}" \
    --json "$base.json" > "$base.log" 2>&1 || { echo "$how: harness exit $? (see $base.log)"; rc=1; }
done
python3 - "$out/${problem}_${variant}" <<'PY'
import json, sys
runs = {}
for how in ("official", "clean", "hot"):
    try:
        runs[how] = {(s["index"], s["label"]): s.get("mean_ns")
                     for s in json.load(open(f"{sys.argv[1]}_{how}.json"))["runs"][0]["shapes"]}
    except (OSError, ValueError, KeyError, IndexError) as e:
        print(f"{how}: no results ({e})"); sys.exit(1)
print(f"{'#':>2} {'shape':52} {'official':>9} {'clean':>9} {'hot':>9} {'dirty':>7} {'cold':>7}  (us)")
for key, o in runs["official"].items():
    c, h = runs["clean"].get(key), runs["hot"].get(key)
    name = f"{key[0]:2} {key[1][:52]:52}"
    if not (o and c and h):
        print(f"{name} not timed in every run"); continue
    print(f"{name} {o/1e3:9.2f} {c/1e3:9.2f} {h/1e3:9.2f} {(o-c)/1e3:7.2f} {(c-h)/1e3:7.2f}")
PY
exit $(( rc || $? ))
