#!/usr/bin/env bash
# The MI355X regression job (called by .github/workflows/mi355x-regression.yml; runs the same by hand).
#   scripts/ci_regression.sh <problem> <shard i/n> [baseline]
#       builds the hip preset for gfx950, runs `harness ci` on the problem's variants of this shard
#       against the baseline leaderboard (default leaderboard.json), records every run into a
#       per-job leaderboard for the merge step. Exit code: harness ci's (0 ok, 2 usage, 3 failed
#       check or crash, 4 slowdown).
#   scripts/ci_regression.sh --merge <artifacts-dir> [baseline]
#       merges the baseline with every per-job leaderboard under <artifacts-dir> and writes an HTML
#       report (cpu preset build: the merge needs no GPU).
# Outputs go under $CI_OUT (default ci-results). The markdown summary is appended to
# $GITHUB_STEP_SUMMARY when set, else printed. Extra `harness run` arguments: $CI_RUN_ARGS.
# $HARNESS_BIN: use this harness binary instead of building one (local runs, tests).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
out_root=${CI_OUT:-ci-results}
summary=${GITHUB_STEP_SUMMARY:-}

# Prints the path of a harness binary: $HARNESS_BIN, or a fresh build of the preset.
harness_binary() {  # preset, extra cmake args...
  local preset=$1
  shift
  if [[ -n "${HARNESS_BIN:-}" ]]; then echo "$HARNESS_BIN"; return 0; fi
  cmake --preset "$preset" "$@" >&2 && cmake --build --preset "$preset" -j"$(nproc)" --target harness >&2 &&
    echo "build/$preset/harness"
}

if [[ "${1:-}" == "--merge" ]]; then
  artifacts=${2:?usage: $0 --merge <artifacts-dir> [baseline]}
  baseline=${3:-leaderboard.json}
  h=$(harness_binary cpu -DHARNESS_BUILD_TESTS=OFF) || exit 2
  mkdir -p "$out_root"
  mapfile -t boards < <(find "$artifacts" -name leaderboard.json -type f | sort)
  "$h" leaderboard merge "$baseline" "${boards[@]}" -o "$out_root/leaderboard.json" || exit $?
  "$h" report -o "$out_root/report.html" --leaderboard "$out_root/leaderboard.json" \
    --title "MI355X regression $(git rev-parse --short HEAD 2>/dev/null)" || exit $?
  "$h" leaderboard --file "$out_root/leaderboard.json"
  exit 0
fi

problem=${1:?usage: $0 <problem> <shard i/n> [baseline]}
shard=${2:-1/1}
baseline=${3:-leaderboard.json}
job_dir="$out_root/${problem}-shard-${shard/\//-of-}"
mkdir -p "$job_dir/json"

h=$(harness_binary hip -DHARNESS_HIP_ARCH="${HARNESS_HIP_ARCH:-gfx950}" -DHARNESS_BUILD_TESTS=OFF) || exit 2
{ rocm-smi --showproductname 2>/dev/null || true; git rev-parse HEAD 2>/dev/null; } > "$job_dir/device.txt"

local_summary="$job_dir/summary.md"
"$h" ci --baseline "$baseline" --problems "$problem" --shard "$shard" --summary "$local_summary" \
  --json-dir "$job_dir/json" --run-args "${CI_RUN_ARGS:-}"
rc=$?

# Every run, passing or not, goes into this job's leaderboard (failures land in history only).
for f in "$job_dir"/json/*.json; do
  [[ -f "$f" ]] && "$h" leaderboard record "$f" --file "$job_dir/leaderboard.json" >/dev/null
done
if [[ -n "$summary" ]]; then cat "$local_summary" >> "$summary"; else cat "$local_summary"; fi
exit $rc
