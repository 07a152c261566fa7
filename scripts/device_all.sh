#!/usr/bin/env bash
# One device call that checks the whole product on the GPU machine, from a carried GPU build:
# engine tests, the escaped-work planted variant, both problems' variants in test, benchmark and
# leaderboard mode, and the exported submissions; logs and JSON under $OUT, tables printed last.
#   scripts/device_all.sh DIR      DIR holds harness, tests/harness_tests, tests/harness_planted and
#                                  (optionally) submissions/<problem>__<variant>.py
# Environment: DEADLINE_S (default 420): steps that would start after this many seconds are skipped
# and say so; MLA_BENCH / MOE_BENCH: variants timed in benchmark mode.
set -uo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: scripts/device_all.sh DIR}
out=${OUT:-/tmp/device_all}
mkdir -p "$out"
deadline=${DEADLINE_S:-420}
start=$(date +%s)
h="$dir/harness"
summary=()

step() {  # step NAME LIMIT_S COMMAND...: runs with a time limit unless the deadline has passed
  local name=$1 limit=$2; shift 2
  local now=$(( $(date +%s) - start ))
  if (( now + 10 > deadline )); then summary+=("$name: SKIPPED (deadline)"); return; fi
  (( limit > deadline - now )) && limit=$(( deadline - now ))
  local t0=$(date +%s)
  timeout "$limit" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  summary+=("$name: rc $rc in $(( $(date +%s) - t0 )) s")
  echo "== $name rc $rc" >&2
}

{ nvidia-smi -L; git rev-parse --short HEAD 2>/dev/null; date -u; } > "$out/device.txt" 2>&1

# In order of what matters most, so a short lease still gets the correctness and main timings.
step mla_test 60 "$h" run mla_decode --variant "${MLA_TEST:-reference,v1,v2,v3,v4,v5,v6,v7}" --mode test --json "$out/mla_test.json"
step moe_test 70 "$h" run moe_mxfp4 --variant "${MOE_TEST:-reference,v1,v2,v3}" --mode test --json "$out/moe_test.json"
step mla_bench 80 "$h" run mla_decode --variant "${MLA_BENCH:-v2,v3,v5,v6,v7}" --mode benchmark --json "$out/mla_bench.json"
step moe_bench 70 "$h" run moe_mxfp4 --variant "${MOE_BENCH:-v2,v3}" --mode benchmark --json "$out/moe_bench.json"
if [[ -d "$dir/submissions" ]]; then
  MLA_TIME=v3 MOE_TIME=v3 MLA_BENCH=0,3,7 MOE_BENCH=0,3 CHECK_MAX_S=3 HARNESS_TIMEOUT=40 \
    step export 200 scripts/device_export.sh "$dir"
fi
step mla_leaderboard 25 "$h" run mla_decode --variant v3 --mode leaderboard --json "$out/mla_leaderboard.json"
step moe_leaderboard 25 "$h" run moe_mxfp4 --variant v3 --mode leaderboard --shapes 0,3 --json "$out/moe_leaderboard.json"
step planted_escape 25 "$dir/tests/harness_planted" run mla_decode --variant planted_escape_queue --mode benchmark \
  --shapes 0 --timeout 20 --json "$out/planted_escape.json"
step gpu_engine_tests 40 "$dir/tests/harness_tests" "gpu engine*"

python3 scripts/summarize_results.py "$out"/mla_test.json "$out"/moe_test.json "$out"/mla_bench.json \
  "$out"/moe_bench.json "$out"/mla_leaderboard.json "$out"/moe_leaderboard.json "$out"/planted_escape.json \
  > "$out/summary.txt" 2>&1
tail -n 40 "$out/export.log" 2>/dev/null > "$out/export_tail.txt"
cat "$out/summary.txt"
cat "$out/export_tail.txt"
printf '%s\n' "${summary[@]}" | tee "$out/steps.txt"
# The device tool returns at most 8 files: everything travels as one archive.
if [[ -n "${OUT:-}" ]]; then
  tar czf /tmp/device_all.tgz -C "$out" . && find "$out" -mindepth 1 -delete && mv /tmp/device_all.tgz "$out/"
fi
