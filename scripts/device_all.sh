#!/usr/bin/env bash
# One device call that checks the whole product on the GPU machine, from a carried GPU build:
# engine tests and every planted faulty variant (scripts/device_engine_check.sh), both problems'
# variants in test, benchmark and leaderboard mode, and the exported submissions
# (scripts/device_export.sh; its variables such as SAME_INPUTS pass through); tables printed last.
# With OUT set, every log and JSON ends up in one archive, $OUT/device_all.tgz, and nothing else is
# left in $OUT (the device tool returns few files): a caller that packs $OUT again must not overwrite
# that archive (session 14's final call lost its JSON that way).
#   scripts/device_all.sh DIR      DIR holds harness (or harness.gz), tests/harness_tests, tests/harness_planted and
#                                  (optionally) submissions/<problem>__<variant>.py (else every GPU
#                                  variant is exported on the device)
# Environment: DEADLINE_S (default 420): steps that would start after this many seconds are skipped
# and say so; MLA_TEST / MOE_TEST, MLA_BENCH / MOE_BENCH: variants in test / benchmark mode (default
# gpu: every GPU variant of the build); MLA_LB / MOE_LB: variants in leaderboard mode (and graph/hot
# for mla; default: the best variants, v35 / v82), MLA_LB_SHAPES / MOE_LB_SHAPES (default 0,3,7 / 0,3); EXPORT_S: seconds for the export step; STEPS: comma-separated step names to run (default
# all: mla_test moe_test mla_bench moe_bench export mla_leaderboard moe_leaderboard mla_graph mla_hot
# engine_check sanitize); SANITIZE_TOOLS: compute-sanitizer tools of the sanitize step (default memcheck synccheck).
set -uo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: scripts/device_all.sh DIR}
source scripts/lib/unpack_harness.sh && unpack_harness "$dir"
out=${OUT:-/tmp/device_all}
mkdir -p "$out"
deadline=${DEADLINE_S:-420}
start=$(date +%s)
h="$dir/harness"
mla_best=${MLA_LB:-v35} moe_best=${MOE_LB:-v82}  # the best variants (leaderboard, graph and hot steps)
summary=()

wanted() { [[ ",${STEPS:-all}," == *",all,"* || ",${STEPS:-}," == *",$1,"* ]]; }
step() {  # step NAME LIMIT_S COMMAND...: runs with a time limit unless the deadline has passed
  local name=$1 limit=$2; shift 2
  wanted "$name" || return 0
  local now=$(( $(date +%s) - start ))
  if (( now + 10 > deadline )); then summary+=("$name: SKIPPED (deadline)"); return; fi
  (( limit > deadline - now )) && limit=$(( deadline - now ))
  local t0=$(date +%s)
  timeout "$limit" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  summary+=("$name: rc $rc in $(( $(date +%s) - t0 )) s")
  echo "== $name rc $rc" >&2
}

{ nvidia-smi -L; "$h" list 2>/dev/null | head -1; date -u; } > "$out/device.txt" 2>&1  # the binary names its commit

# In order of what matters most, so a short lease still gets the correctness and main timings.
step mla_test 90 "$h" run mla_decode --variant "${MLA_TEST:-gpu}" --mode test --json "$out/mla_test.json"
step moe_test 90 "$h" run moe_mxfp4 --variant "${MOE_TEST:-gpu}" --mode test --json "$out/moe_test.json"
step mla_bench 150 "$h" run mla_decode --variant "${MLA_BENCH:-gpu}" --mode benchmark --json "$out/mla_bench.json"
step moe_bench 150 "$h" run moe_mxfp4 --variant "${MOE_BENCH:-gpu}" --mode benchmark --json "$out/moe_bench.json"
# Not the official method: graph replay and hot caches, for launch-bound shapes.
step mla_graph 40 "$h" run mla_decode --variant "$mla_best" --mode benchmark --shapes 0,1,2 --graph --json "$out/mla_graph.json"
step mla_hot 40 "$h" run mla_decode --variant "$mla_best" --mode benchmark --shapes 0,1,2 --hot --json "$out/mla_hot.json"
OUT=$out PLANTED_TIMEOUT=15 step engine_check 240 scripts/device_engine_check.sh "$dir"

if [[ -x "$h" ]]; then  # exports the build's GPU variants itself unless DIR/submissions exists
  MLA_HARNESS_JSON=${MLA_HARNESS_JSON:-$out/mla_bench.json} MOE_HARNESS_JSON=${MOE_HARNESS_JSON:-$out/moe_bench.json} \
  CHECK_MAX_S=${CHECK_MAX_S:-0.5} HARNESS_TIMEOUT=${HARNESS_TIMEOUT:-150} step export "${EXPORT_S:-330}" scripts/device_export.sh "$dir"
fi
step mla_leaderboard 40 "$h" run mla_decode --variant "$mla_best" --mode leaderboard --shapes "${MLA_LB_SHAPES:-0,3,7}" --json "$out/mla_leaderboard.json"
step moe_leaderboard 60 "$h" run moe_mxfp4 --variant "$moe_best" --mode leaderboard --shapes "${MOE_LB_SHAPES:-0,3}" --json "$out/moe_leaderboard.json"
# compute-sanitizer over the best variants, test and benchmark shapes (scripts/device_sanitize.sh; ~30 s for these tools)
# shellcheck disable=SC2016
OUT=$out TOOLS=${SANITIZE_TOOLS:-memcheck synccheck} TIMEOUT_S=60 step sanitize 150 \
  bash -c 'scripts/device_sanitize.sh "$0" mla_decode "$1"; scripts/device_sanitize.sh "$0" moe_mxfp4 "$2"' "$dir" "$mla_best" "$moe_best"

results=()
for n in mla_test moe_test mla_bench moe_bench mla_leaderboard moe_leaderboard mla_graph mla_hot; do
  [[ -s "$out/$n.json" ]] && results+=("$out/$n.json")
done
: > "$out/summary.txt"
(( ${#results[@]} )) && python3 scripts/summarize_results.py "${results[@]}" > "$out/summary.txt" 2>&1
tail -n 16 "$out/engine_check.log" >> "$out/summary.txt" 2>/dev/null
grep "largest moe" "$out/gpu_engine_tests.log" >> "$out/summary.txt" 2>/dev/null
grep -A8 "^device_sanitize" "$out/sanitize.log" >> "$out/summary.txt" 2>/dev/null
tail -n 40 "$out/export.log" 2>/dev/null > "$out/export_tail.txt"
cat "$out/summary.txt"
cat "$out/export_tail.txt"
printf '%s\n' "${summary[@]}" | tee "$out/steps.txt"
# The device tool returns at most 8 files: everything travels as one archive.
if [[ -n "${OUT:-}" ]]; then
  tar czf /tmp/device_all.tgz -C "$out" . && find "$out" -mindepth 1 -delete && mv /tmp/device_all.tgz "$out/"
fi
