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
{ nvidia-smi -L 2>/dev/null || rocm-smi --showproductname 2>/dev/null; git rev-parse --short HEAD 2>/dev/null; } > "$out/device.txt"

echo "== test mode" >&2
timeout ${TEST_TIMEOUT:-200} "$h" run moe_mxfp4 --variant "$variants" --mode test --json "$out/moe_test.json" \
  > "$out/moe_test.log" 2>&1
echo "test rc $?" >&2
echo "== benchmark mode" >&2
timeout ${BENCH_TIMEOUT:-280} "$h" run moe_mxfp4 --variant "$variants" --mode benchmark --json "$out/moe_bench.json" \
  > "$out/moe_bench.log" 2>&1
echo "benchmark rc $?" >&2

python3 - "$out/moe_test.json" "$out/moe_bench.json" <<'PY'
import json, sys

def fmt(x, f):
    return "-" if x is None else f.format(x)

for path in sys.argv[1:]:
    try:
        doc = json.load(open(path))
    except Exception as e:
        print(f"{path}: unreadable ({e})")
        continue
    print(f"\n{path}")
    print(f"{'variant':10s} {'shape':44s} {'status':7s} {'mean us':>9s} {'%BW':>6s} {'mism':>6s} {'relL2':>9s} {'maxabs':>9s}  reason")
    for r in doc.get("runs", []):
        for s in r.get("shapes", []):
            off, strict = s.get("official") or {}, s.get("strict") or {}
            mean = s.get("mean_ns")
            print(f"{r.get('variant', '?'):10s} {s.get('label', '?')[:44]:44s} {s.get('status', '?'):7s} "
                  f"{fmt(mean and mean / 1e3, '{:9.1f}')} {fmt(s.get('pct_bandwidth'), '{:6.1f}')} "
                  f"{fmt(off.get('mismatches'), '{:6d}')} {fmt(strict.get('rel_l2'), '{:9.2e}')} "
                  f"{fmt(strict.get('max_abs'), '{:9.2e}')}  {str(s.get('reason', ''))[:50]}")
PY
