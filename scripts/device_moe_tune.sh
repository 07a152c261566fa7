#!/usr/bin/env bash
# On the GPU machine, from a carried folder holding a harness binary: moe_mxfp4 variants in test mode
# (every test shape) and benchmark mode (every benchmark shape), one archive of JSON and logs under
# $OUT, a table printed last.
#   scripts/device_moe_tune.sh DIR [test-variants] [bench-variants]   (defaults: v3,v4,v5 and v4,v5)
set -uo pipefail
cd "$(dirname "$0")/.."
dir=${1:?harness folder}
tv=${2:-v3,v4,v5}
bv=${3:-v4,v5}
out=${OUT:-/tmp/device_moe_tune}
source scripts/lib/unpack_harness.sh && require_harness "$dir"
work=$(mktemp -d)
h="$dir/harness"
nvidia-smi -L > "$work/device.txt" 2>&1
timeout ${TEST_TIMEOUT:-100} "$h" run moe_mxfp4 --variant "$tv" --mode test --json "$work/test.json" > "$work/test.log" 2>&1
echo "test rc $?" >&2
timeout ${BENCH_TIMEOUT:-150} "$h" run moe_mxfp4 --variant "$bv" --mode benchmark --json "$work/bench.json" \
  > "$work/bench.log" 2>&1
echo "benchmark rc $?" >&2
mkdir -p "$out" && tar -czf "$out/moe_tune.tgz" -C "$work" .
tail -5 "$work/test.log" "$work/bench.log"
python3 scripts/summarize_results.py "$work/test.json" "$work/bench.json"
