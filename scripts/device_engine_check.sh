#!/usr/bin/env bash
# On the GPU machine: the engine's unit tests, then every planted faulty variant through
# `harness_planted run`, and a summary table (variant, expected, got, OK/FAIL) printed last.
#   scripts/device_engine_check.sh [build-dir]     (default build/gpu-engine-cuda; logs go to $OUT or /tmp)
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/gpu-engine-cuda}
out=${OUT:-/tmp/device_engine_check}
mkdir -p "$out"
planted_timeout=${PLANTED_TIMEOUT:-25}

{ nvidia-smi -L 2>/dev/null || rocm-smi --showproductname 2>/dev/null; "$build/harness" list 2>/dev/null | head -1; } \
  > "$out/device.txt"

echo "== engine unit tests" >&2
"$build/tests/harness_tests" "gpu engine*" > "$out/gpu_engine_tests.log" 2>&1
engine_rc=$?
tail -n 4 "$out/gpu_engine_tests.log" >&2

# variant | mode | expected reason (extended regex over "status: reason"; "^ok" for variants that must pass).
# The runner's escaped-work check runs after the timed calls of benchmark mode, hence that mode there.
expectations=(
  "planted_half_output|test|check failed"
  "planted_output_cache|test|check failed"
  "planted_mutate_input|test|input mutated"
  "planted_write_past_output|test|wrote past the output"
  "planted_escape_queue|benchmark|escaped"
  "planted_nan|test|check failed|NaN|nan"
  "planted_hang|test|timed out"
  "planted_fault|test|illegal|fault|crash|abort"
  "planted_slow|test|^ok"
  "planted_wrong|test|strict check failed"
)

reason_of() {  # "status: reason" of the first run in a results file
  python3 - "$1" <<'PY' 2>/dev/null || echo "no results file"
import json, sys
r = json.load(open(sys.argv[1]))["runs"][0]
print(f"{r['status']}: {r['reason']}".replace("\n", " ")[:110])
PY
}

rows=()
fails=0
for e in "${expectations[@]}"; do
  IFS='|' read -r v mode want <<<"$e"
  want=${e#*|*|}
  shapes=0,1 limit=$planted_timeout
  [[ $mode == benchmark ]] && shapes=0 limit=$((planted_timeout * 4))  # up to 1000 timed calls
  echo "== $v ($mode)" >&2
  timeout $((limit * 4 + 60)) "$build/tests/harness_planted" run mla_decode --variant "$v" --mode "$mode" \
    --shapes "$shapes" --timeout "$limit" --json "$out/$v.json" > "$out/$v.log" 2>&1
  got=$(reason_of "$out/$v.json")
  if [[ $got =~ $want ]]; then verdict=OK; else verdict=FAIL; fails=$((fails + 1)); fi
  rows+=("$v"$'\t'"$want"$'\t'"$got"$'\t'"$verdict")
done

echo "== planted_slow vs reference, benchmark mode, shape 0" >&2
timeout 90 "$build/tests/harness_planted" run mla_decode --variant reference,planted_slow --mode benchmark \
  --shapes 0 --json "$out/slow_vs_reference.json" > "$out/slow_vs_reference.log" 2>&1
python3 - "$out/slow_vs_reference.json" <<'PY' 2>/dev/null | tee "$out/slow_vs_reference.txt" >&2
import json, sys
for r in json.load(open(sys.argv[1]))["runs"]:
    s = r["shapes"][0]
    print(f"{r['variant']:14s} {r['status']:6s} mean {s['mean_ns'] / 1e3:9.2f} us  runs {s['runs']}  settle check {s.get('settle_check')}")
PY

echo
echo "engine unit tests: $([[ $engine_rc == 0 ]] && echo passed || echo "FAILED (rc $engine_rc)")"
printf '%-26s | %-38s | %-70s | %s\n' variant expected got result
for r in "${rows[@]}"; do
  IFS=$'\t' read -r v want got verdict <<<"$r"
  printf '%-26s | %-38s | %-70s | %s\n' "$v" "$want" "$got" "$verdict"
done
echo "planted: $(( ${#rows[@]} - fails )) of ${#rows[@]} as expected"
grep "^gpu-engine:" "$out/gpu_engine_tests.log"
cat "$out/slow_vs_reference.txt" 2>/dev/null
[[ $engine_rc == 0 && $fails == 0 ]]
