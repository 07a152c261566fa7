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
{ nvidia-smi -L 2>/dev/null || rocm-smi --showproductname 2>/dev/null; git rev-parse --short HEAD 2>/dev/null; } > "$out/device.txt"

echo "== test mode" >&2
timeout "${TEST_TIMEOUT:-280}" "$h" run mla_decode --variant "$variants" --mode test --json "$out/mla_test.json" > "$out/mla_test.log" 2>&1
echo "test rc $?" >&2
echo "== benchmark mode" >&2
timeout "${BENCH_TIMEOUT:-280}" "$h" run mla_decode --variant "$bench_variants" --mode benchmark --json "$out/mla_bench.json" > "$out/mla_bench.log" 2>&1
echo "benchmark rc $?" >&2

python3 - "$out/mla_test.json" "$out/mla_bench.json" <<'PY'
import json, sys

def shapes(doc):
    runs = doc.get("runs", []) if isinstance(doc, dict) else doc
    for r in runs:
        for s in r.get("shapes", []):
            yield r.get("variant", "?"), r.get("status", "?"), s

def fmt(x, f):
    return "-" if x is None else f.format(x)

for path in sys.argv[1:]:
    try:
        doc = json.load(open(path))
    except Exception as e:
        print(f"{path}: unreadable ({e})")
        continue
    print(f"\n{path}")
    print(f"{'variant':10s} {'shape':16s} {'status':7s} {'mean us':>9s} {'%BW':>6s} {'official':>9s} {'relL2':>9s} {'maxabs':>9s}  reason")
    for v, st, s in shapes(doc):
        off, strict = s.get("official") or {}, s.get("strict") or {}
        mean = s.get("mean_ns")
        print(f"{v:10s} {s.get('label', '?'):16s} {s.get('status', st):7s} {fmt(mean and mean / 1e3, '{:9.2f}')} "
              f"{fmt(s.get('pct_bandwidth'), '{:6.1f}')} {fmt(off.get('fraction'), '{:9.4f}')} "
              f"{fmt(strict.get('rel_l2'), '{:9.2e}')} {fmt(strict.get('max_abs'), '{:9.2e}')}  {s.get('reason', '')[:60]}")
PY
