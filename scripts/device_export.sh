#!/usr/bin/env bash
# On the GPU machine (torch + nvcc there): exported submissions of the GPU variants, each checked and
# timed through scripts/export_check.py (official input tuple, torch reference from the spec, cache
# flush + GPU-side wait before each timed call), next to the same variant timed by the harness
# (`harness run --mode benchmark`); logs and JSON under $OUT; a table printed last:
# problem, variant, export verdict, export mean us, harness mean us, ratio (per benchmark shape and
# geometric mean).
#   scripts/device_export.sh [dir]   dir holds `harness` (a GPU build; statically linked runtime) and
#                                    optionally submissions/<problem>__<variant>.py, made with `harness
#                                    export` (any build can export); without it, the GPU variants of the
#                                    build are exported there first. Default dir build/export-dev.
# export_check.py compiles all files in parallel first (the official compile step; each one's time is
# logged). Environment: SKIP_GOLDEN (skip the torch reference's golden and smoke checks); EXPORT_SHAPES
# (test,benchmark by default); MLA_TIME / MOE_TIME: variants timed (default: all exported); MLA_BENCH_SHAPES / MOE_BENCH_SHAPES and
# MLA_TEST_SHAPES / MOE_TEST_SHAPES: shape indices (default: all); CHECK_MAX_S: seconds of timed calls per shape
# in export_check; HARNESS_TIMEOUT: seconds for each harness run; MLA_HARNESS_JSON / MOE_HARNESS_JSON:
# a benchmark results file of all shapes already made by the harness (then it is not run again).
set -uo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build/export-dev}
out=${OUT:-/tmp/device_export}
mkdir -p "$out"
subs="$dir/submissions"
source scripts/lib/unpack_harness.sh && unpack_harness "$dir"
h="$dir/harness"
export PYTHONUNBUFFERED=1
# A fresh extension cache per run: a run killed while torch held its build lock left the next run
# waiting on that lock for its whole time limit (seen on the H200, 2026-11-29).
export TORCH_EXTENSIONS_DIR=${TORCH_EXTENSIONS_DIR:-$(mktemp -d /tmp/torch_ext.XXXXXX)}
{ nvidia-smi -L 2>/dev/null; python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)';
  nvcc --version 2>/dev/null | tail -1; "$h" list 2>/dev/null | head -1; } > "$out/device.txt" 2>&1
cat "$out/device.txt" >&2

if [[ ! -d "$subs" ]]; then
  # Export the GPU variants compiled into the carried build (the ones the harness times next to them; `--variant
  # gpu` would export every variant of the tree: 67 files took session 11's export step past its time limit).
  built=$("$h" list 2>/dev/null | awk '/^[a-z_0-9]+: /{p=substr($1,1,length($1)-1)}
                                      $2=="gpu" && $3=="available" && $1!="reference" {print p, $1}')
  [[ -n "$built" ]] || { echo "device_export: no GPU variant in $h's list" >&2; exit 1; }
  mkdir -p "$subs"
  while read -r p v; do
    "$h" export "$p" --variant "$v" -o "$subs/" --source-dir . >> "$out/export_$p.log" 2>&1 \
      || { echo "harness export $p $v failed: $(tail -1 "$out/export_$p.log")" >&2; exit 1; }
  done <<< "$built"
  echo "exported $(ls "$subs" | wc -l) submissions into $subs" >&2
fi
names() { ls "$subs"/"$1"__*.py 2>/dev/null | sed "s|.*/$1__||; s|\.py$||" | paste -sd, -; }
MLA_ALL=$(names mla_decode)
MOE_ALL=$(names moe_mxfp4)
MLA_TIME=${MLA_TIME:-$MLA_ALL}
MOE_TIME=${MOE_TIME:-$MOE_ALL}

if [[ -z "${SKIP_GOLDEN:-}" ]]; then
echo "== golden and smoke checks of the torch reference" >&2
timeout 120 python3 scripts/export_check.py --golden tests/data/golden > "$out/golden.log" 2>&1
echo "golden rc $? ($(tail -1 "$out/golden.log"))" >&2
timeout 60 python3 scripts/export_check.py --smoke > "$out/smoke.log" 2>&1
echo "smoke rc $? ($(tail -1 "$out/smoke.log"))" >&2
fi

bench() {  # problem, variants, benchmark indices
  local given=$4
  if [[ -n "$given" && -s "$given" ]]; then cp "$given" "$out/harness_$1.json"; echo "harness $1: from $given" >&2; return; fi
  [ -x "$h" ] || { echo "no harness binary at $h" >&2; return; }
  timeout ${HARNESS_TIMEOUT:-150} "$h" run "$1" --variant "$2" --mode benchmark --shapes "${3:-all}" \
    --json "$out/harness_$1.json" > "$out/harness_$1.log" 2>&1
  echo "harness $1 rc $?" >&2
}
# SAME_INPUTS (e.g. "moe_mxfp4=4"): these benchmark shapes are also timed by the harness on the very
# inputs export_check drew (harness run --inputs), so both sides time identical data.
inputs=$(mktemp -d /tmp/export_inputs.XXXXXX)
# Every file of both problems in one process: all compile at once, then each is checked and timed.
timed=$( (echo "$MLA_TIME" | tr , '\n' | sed '/^$/d; s/^/mla_decode__/'; echo "$MOE_TIME" | tr , '\n' | sed '/^$/d; s/^/moe_mxfp4__/') | paste -sd, -)
timeout ${CHECK_TIMEOUT:-400} python3 scripts/export_check.py "$subs"/*.py --time "$timed" --max-s "${CHECK_MAX_S:-1.0}" \
  --shapes "${EXPORT_SHAPES:-test,benchmark}" \
  --test-index "mla_decode=${MLA_TEST_SHAPES:-};moe_mxfp4=${MOE_TEST_SHAPES:-}" --bench-index "mla_decode=${MLA_BENCH_SHAPES:-};moe_mxfp4=${MOE_BENCH_SHAPES:-}" \
  --json "$out/export_{problem}.json" ${SAME_INPUTS:+--dump-inputs "$inputs" --dump-index "$SAME_INPUTS"} \
  > "$out/export_check.log" 2>&1
echo "export_check rc $?" >&2
[ -n "$MLA_TIME" ] && bench mla_decode "$MLA_TIME" "${MLA_BENCH_SHAPES:-}" "${MLA_HARNESS_JSON:-}"
[ -n "$MOE_TIME" ] && bench moe_mxfp4 "$MOE_TIME" "${MOE_BENCH_SHAPES:-}" "${MOE_HARNESS_JSON:-}"
for d in "$inputs"/*_benchmark_*; do
  [ -d "$d" ] || continue
  n=$(basename "$d"); p=${n%%_benchmark_*}; i=${n##*_benchmark_}
  v=$([[ $p == mla_decode ]] && echo "$MLA_TIME" || echo "$MOE_TIME")
  timeout ${HARNESS_TIMEOUT:-150} "$h" run "$p" --variant "$v" --mode benchmark --shapes "$i" --inputs "$d" \
    --json "$out/same_inputs_${p}_$i.json" > "$out/same_inputs_${p}_$i.log" 2>&1
  echo "harness $p shape $i on export_check's inputs rc $?" >&2
done
rm -rf "$inputs"

python3 - "$out" <<'PY'
import json, math, os, sys
out = sys.argv[1]

def load(name):
    try:
        return json.load(open(os.path.join(out, name)))
    except Exception:
        return None

print(f"\n{'problem':10s} {'variant':10s} {'shape':34s} {'export':7s} {'export us':>10s} {'harness us':>10s} {'ratio':>6s}")
for p in ("mla_decode", "moe_mxfp4"):
    ex, hr = load(f"export_{p}.json"), load(f"harness_{p}.json")
    if not ex:
        print(f"{p:10s} no export_check results")
        continue
    harness = {}
    for r in (hr or {}).get("runs", []):
        harness[r.get("variant")] = [s.get("mean_ns") for s in r.get("shapes", [])]
    by_sub = {}
    for row in ex["results"]:
        by_sub.setdefault(row["submission"], []).append(row)
    for sub, rows in sorted(by_sub.items()):
        v = sub.split("__", 1)[-1]
        verdict = "pass" if all(r["ok"] for r in rows) else "FAIL"
        bench = [r for r in rows if r["mode"] == "benchmark"]
        hs = harness.get(v, [])
        ratios = []
        for i, r in enumerate(bench):
            e = r.get("mean_us")
            hm = hs[i] / 1e3 if i < len(hs) and hs[i] else None
            ratio = e / hm if e and hm else None
            if ratio:
                ratios.append(ratio)
            if e or not r["ok"]:
                print(f"{p:10s} {v:10s} {r['shape'][:34]:34s} {'pass' if r['ok'] else 'FAIL':7s} "
                      f"{'-' if e is None else f'{e:10.1f}':>10s} {'-' if hm is None else f'{hm:10.1f}':>10s} "
                      f"{'-' if ratio is None else f'{ratio:6.3f}':>6s}")
        fails = [r for r in rows if not r["ok"]]
        g = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else None
        worst = max(ratios) if ratios else None
        print(f"{p:10s} {v:10s} {'== all shapes':34s} {verdict:7s} {'':>10s} {'':>10s} "
              f"{'-' if g is None else f'{g:6.3f}':>6s}  geomean ratio; worst {'-' if worst is None else f'{worst:.3f}'};"
              f" {len(rows) - len(fails)}/{len(rows)} checks pass" + (f"; first failure: {fails[0].get('reason', '')}" if fails else ""))

same = sorted(f for f in os.listdir(out) if f.startswith("same_inputs_") and f.endswith(".json"))
if same:
    print("\nthe same inputs on both sides (harness run --inputs on export_check's tensors):")
    print(f"{'problem':10s} {'variant':10s} {'shape':34s} {'export us':>10s} {'harness us':>10s} {'ratio':>6s}")
for f in same:
    hr = load(f)
    p = f[len("same_inputs_"):-len(".json")].rsplit("_", 1)[0]
    ex = load(f"export_{p}.json") or {"results": []}
    for r in (hr or {}).get("runs", []):
        for s in r.get("shapes", []):
            rows = [x for x in ex["results"] if x["mode"] == "benchmark" and x.get("index") == s["index"]
                    and x["submission"] == f"{p}__{r['variant']}"]
            e = rows[0].get("mean_us") if rows else None
            hm = s.get("mean_ns", 0) / 1e3 or None
            ratio = e / hm if e and hm else None
            print(f"{p:10s} {r['variant']:10s} {s['label'][:34]:34s} {'-' if e is None else f'{e:10.1f}':>10s} "
                  f"{'-' if hm is None else f'{hm:10.1f}':>10s} {'-' if ratio is None else f'{ratio:6.3f}':>6s}"
                  f"  ({r['status']}, inputs {s.get('inputs_digest', '')})")
PY
