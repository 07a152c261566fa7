#!/usr/bin/env bash
# One device call that measures candidate variants against a base variant, the way every kernel change is judged:
# the candidates in test mode (test shapes, then the benchmark shapes on fresh inputs), benchmark mode in two orders
# (base first, then candidates first: the order effect shows in the spread), optionally an ncu profile of each, then
# `harness compare` of base and each candidate for both orders. Logs and JSON in one archive, $OUT/ab.tgz; the
# comparison tables printed last, then one line a candidate: its geometric-mean time ratio to the base in each order.
#   scripts/device_ab.sh DIR PROBLEM BASE CANDIDATES
#     DIR         holds the harness binary (harness, or harness.gz: unpacked in place)
#     CANDIDATES  comma-separated variants
# Environment: SHAPES (benchmark shape indices, default all), SHAPE_ARGS (replaces `--shapes SHAPES`, e.g.
# '--shape "bs=8 kv=512"'), FRESH (fresh inputs a benchmark shape in test mode, default 1; 0: that check is skipped),
# TEST_SHAPES (shapes of your own for one more test-mode step, ';'-separated, e.g. 'bs=32 kv=7000;bs=250 kv=1000':
# short last tiles and other corners the test and benchmark shapes miss),
# PROFILE_SHAPES / PROFILE_KERNELS (scripts/device_profile.sh on these shapes and kernels, default none / every kernel),
# DEADLINE_S (default 480: steps that would start later are skipped and say so), RUN_TIMEOUT_S (a step's limit, 150).
# Exit status: 0 when every step ran and passed, 1 when a step failed or was skipped, 2 on bad arguments.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
usage="usage: scripts/device_ab.sh DIR PROBLEM BASE CANDIDATES"
(( $# == 4 )) || { echo "$usage" >&2; exit 2; }
dir=$1 problem=$2 base=$3 cands=$4
source scripts/lib/unpack_harness.sh && require_harness "$dir"
h="$dir/harness"
[[ ",$cands," != *",$base,"* ]] || { echo "device_ab: the base $base is also a candidate" >&2; exit 2; }
IFS=, read -ra cand_list <<< "$cands"
reversed=$(printf '%s\n' "${cand_list[@]}" | tac | paste -sd,)
out=${OUT:-/tmp/device_ab}
work="$out/ab"
mkdir -p "$work"
if [[ -n "${SHAPE_ARGS:-}" ]]; then eval "shape_args=($SHAPE_ARGS)"; else shape_args=(--shapes "${SHAPES:-all}"); fi
deadline=${DEADLINE_S:-480} start=$(date +%s) failed=0 summary=()

step() {  # step NAME COMMAND...: with RUN_TIMEOUT_S unless the deadline has passed; output in $work/NAME.log
  local name=$1; shift
  if (( $(date +%s) - start + 10 > deadline )); then summary+=("$name: SKIPPED (deadline)"); failed=1; return; fi
  local t0=$(date +%s)
  timeout "${RUN_TIMEOUT_S:-150}" "$@" > "$work/$name.log" 2>&1
  local rc=$?
  (( rc == 0 )) || failed=1
  summary+=("$name: rc $rc in $(( $(date +%s) - t0 )) s")
}

{ nvidia-smi -L 2>/dev/null; "$h" list 2>/dev/null | head -1; date -u; } > "$work/device.txt"
step test "$h" run "$problem" --variant "$cands" --mode test --json "$work/test.json"
if [[ -n "${TEST_SHAPES:-}" ]]; then
  IFS=';' read -ra custom <<< "$TEST_SHAPES"
  custom_args=()
  for c in "${custom[@]}"; do custom_args+=(--shape "$c"); done
  step test_custom "$h" run "$problem" --variant "$cands" --mode test "${custom_args[@]}" --json "$work/test_custom.json"
fi
if (( ${FRESH:-1} > 0 )); then
  step test_benchmark_shapes "$h" run "$problem" --variant "$cands" --mode test --shape-set benchmark \
    "${shape_args[@]}" --fresh "${FRESH:-1}" --json "$work/test_benchmark_shapes.json"
fi
step bench_base_first "$h" run "$problem" --variant "$base,$cands" --mode benchmark "${shape_args[@]}" \
  --json "$work/bench_base_first.json"
step bench_base_last "$h" run "$problem" --variant "$reversed,$base" --mode benchmark "${shape_args[@]}" \
  --json "$work/bench_base_last.json"
if [[ -n "${PROFILE_SHAPES:-}" ]]; then
  for v in "$base" "${cand_list[@]}"; do
    OUT="$work" step "profile_$v" scripts/device_profile.sh "$dir" "$problem" "$v" "$PROFILE_SHAPES" "${PROFILE_KERNELS:-.*}"
  done
fi

{
  echo "device_ab: $problem, base $base, candidates $cands ($(head -2 "$work/device.txt" | paste -sd' '))"
  printf '  %s\n' "${summary[@]}"
  for name in test test_benchmark_shapes; do
    [[ -f "$work/$name.log" ]] && grep -E "^[a-z_0-9]+ / |^score \(|FAIL" "$work/$name.log" | sed "s/^/  $name: /"
  done
  declare -A ratio
  for order in bench_base_first bench_base_last; do
    [[ -f "$work/$order.json" ]] || continue
    for v in "${cand_list[@]}"; do
      echo
      echo "== $order: $v against $base"
      "$h" compare "$work/$order.json#$problem:$base" "$work/$order.json#$problem:$v" > "$work/cmp.txt" 2>&1
      cat "$work/cmp.txt"
      ratio[$v,$order]=$(sed -n 's/^geometric-mean ratio B\/A: \([0-9.]*\).*/\1/p' "$work/cmp.txt")
    done
  done
  for v in "$base" "${cand_list[@]}"; do
    [[ -f "$work/profile_$v.log" ]] && { echo; cat "$work/profile_$v.log"; }
  done
  echo
  echo "geometric-mean time ratio candidate / $base (base first, base last; < 1: faster):"
  for v in "${cand_list[@]}"; do
    echo "  $v: ${ratio[$v,bench_base_first]:--} ${ratio[$v,bench_base_last]:--}"
  done
} > "$out/ab.txt" 2>&1
tar czf "$out/ab.tgz" -C "$out" ab ab.txt && rm -rf "$work"
cat "$out/ab.txt"
exit "$failed"
