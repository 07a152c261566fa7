#!/usr/bin/env bash
# moe_mxfp4 on fresh inputs, one device call: the inputs that failed the fp8 paths (docs/perf.md, section "Session 10,
# fresh-seed failures": benchmark shape 5 with secret seeds 145 / 183, shape 6 with 2147483647 / 114 / 156), then a
# seed sweep (scripts/seed_sweep.sh) on the fp8 wgmma shapes 2 / 4 / 5 / 6, then benchmark mode. Logs under $OUT;
# a table of failures last; the sweep's per-seed files in $OUT/sweep.tgz. Exit 1 when a known input or a sweep seed
# fails (or the benchmark does), 2 on bad arguments.
#   scripts/device_moe_fresh.sh <harness> <known variants> <sweep variants> [first seed] [count] [sweep max s] [bench variants]
set -uo pipefail
cd "$(dirname "$0")/.."
if (( $# < 3 )); then
  echo "usage: $0 <harness> <known-input variants> <sweep variants> [first seed] [count] [sweep max s] [bench variants]" >&2
  exit 2
fi
h=$1 known=$2 sweep=$3 first=${4:-300} count=${5:-100} max_s=${6:-120} bench=${7:-}
out=${OUT:-$(mktemp -d)}
sweep_dir=$(mktemp -d)  # one log and results file a seed: packed into $out/sweep.tgz (the device tool returns few files)
mkdir -p "$out/known"
rc=0
declare -A shape_of=([145]=5 [183]=5 [2147483647]=6 [114]=6 [156]=6)
known_rows=()
for seed in 145 183 2147483647 114 156; do
  shp=${shape_of[$seed]}
  "$h" run moe_mxfp4 --variant "$known" --mode test --shape-set benchmark --shapes "$shp" --secret-seed "$seed" \
    --json "$out/known/seed_$seed.json" > "$out/known/seed_$seed.log" 2>&1
  st=$?
  (( st == 0 )) || rc=1
  known_rows+=("shape $shp secret $seed: exit $st ($(grep -c FAILED "$out/known/seed_$seed.log") FAIL lines)")
done
OUT="$sweep_dir" scripts/seed_sweep.sh "$h" moe_mxfp4 "$sweep" "$first" "$count" "$max_s" --shapes 2,4,5,6 \
  > "$out/sweep.txt" 2>&1 || rc=1
tar czf "$out/sweep.tgz" -C "$sweep_dir" . && rm -rf "$sweep_dir"
if [[ -n $bench ]]; then
  "$h" run moe_mxfp4 --variant "$bench" --mode benchmark --shape-set benchmark --json "$out/bench.json" \
    > "$out/bench.log" 2>&1 || rc=1
  tail -25 "$out/bench.log"
fi
echo "== known failing inputs ($known); per-variant verdicts in known/*.log"
for seed in 145 183 2147483647 114 156; do echo "-- secret $seed"; grep -E "^moe_mxfp4 / |^ *[0-9]+  |FAILED" "$out/known/seed_$seed.log" | cut -c1-140 | head -20; done
printf '%s\n' "${known_rows[@]}"
echo "== seed sweep ($sweep, shapes 2,4,5,6, seeds from $first)"
tail -15 "$out/sweep.txt"
exit $rc
