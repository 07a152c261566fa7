#!/usr/bin/env bash
# On the GPU machine, from a carried build dir: moe_mxfp4 variants through the harness, test mode
# then benchmark mode, logs and JSON under $OUT, a table printed last (mean us against the weight-byte
# floor and the MI355X reference time of the spec).
#   scripts/device_moe.sh [build-dir] [variants]   (defaults: build/moe-cuda, reference,v1,v2,v3)
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/moe-cuda}
variants=${2:-reference,v1,v2,v3}
out=${OUT:-/tmp/device_moe}
mkdir -p "$out"
h="$build/harness"
{ nvidia-smi -L 2>/dev/null || rocm-smi --showproductname 2>/dev/null; "$h" list 2>/dev/null | head -1; } > "$out/device.txt"

echo "== test mode" >&2
timeout ${TEST_TIMEOUT:-200} "$h" run moe_mxfp4 --variant "$variants" --mode test --json "$out/moe_test.json" \
  > "$out/moe_test.log" 2>&1
echo "test rc $?" >&2
echo "== benchmark mode" >&2
timeout ${BENCH_TIMEOUT:-280} "$h" run moe_mxfp4 --variant "$variants" --mode benchmark --json "$out/moe_bench.json" \
  > "$out/moe_bench.log" 2>&1
echo "benchmark rc $?" >&2

python3 scripts/summarize_results.py "$out/moe_test.json" "$out/moe_bench.json"
