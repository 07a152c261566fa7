#!/usr/bin/env bash
# On the GPU machine, from a carried build dir: mla_decode variants through the harness, test mode
# then benchmark mode, logs and JSON under $OUT, a table printed last.
#   scripts/device_mla.sh [build-dir] [variants] [benchmark-variants]
#   (defaults: build/mla-kernels-cuda, reference,v1,...,v7, the same list; the directory must
#   hold the harness binary). TEST_TIMEOUT / BENCH_TIMEOUT: seconds per mode (default 280).
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/mla-kernels-cuda}
variants=${2:-reference,v1,v2,v3,v4,v5,v6,v7}
bench_variants=${3:-$variants}
out=${OUT:-/tmp/device_mla}
mkdir -p "$out"
h="$build/harness"
{ nvidia-smi -L 2>/dev/null || rocm-smi --showproductname 2>/dev/null; "$h" list 2>/dev/null | head -1; } > "$out/device.txt"

echo "== test mode" >&2
timeout "${TEST_TIMEOUT:-280}" "$h" run mla_decode --variant "$variants" --mode test --json "$out/mla_test.json" > "$out/mla_test.log" 2>&1
echo "test rc $?" >&2
echo "== benchmark mode" >&2
timeout "${BENCH_TIMEOUT:-280}" "$h" run mla_decode --variant "$bench_variants" --mode benchmark --json "$out/mla_bench.json" > "$out/mla_bench.log" 2>&1
echo "benchmark rc $?" >&2

python3 scripts/summarize_results.py "$out/mla_test.json" "$out/mla_bench.json"
