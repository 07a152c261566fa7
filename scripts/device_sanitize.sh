#!/usr/bin/env bash
# compute-sanitizer over variants in test mode, from a carried GPU build (the device machine has compute-sanitizer;
# the CPU machine does not): each tool runs `harness run PROBLEM --variant V --mode test --no-isolate` once on the
# test shapes and once on the benchmark shapes (`--shape-set benchmark`: the shapes that take the large-batch
# paths), so the inputs' generator, the GPU reference and the variant's kernels all run under the tool.
#   scripts/device_sanitize.sh DIR PROBLEM VARIANTS [SHAPE_SETS]
#     DIR         holds the harness binary (harness, or harness.gz: unpacked in place)
#     VARIANTS    comma-separated (each sanitized on its own)
#     SHAPE_SETS  comma-separated among test, benchmark (default: test,benchmark)
# Environment: TOOLS (default "memcheck racecheck synccheck initcheck"), SHAPES (benchmark shape indices, default
# all), TIMEOUT_S (a run's limit, default 240), DEADLINE_S (default 540: runs that would start later are skipped),
# PRINT_LIMIT (errors printed a run, default 20; the distinct code sites are counted among the printed ones).
# Output: $OUT/sanitize/<problem>_<variant>_<set>_<tool>.log and, where errors were printed, .sites (count, site);
# one line per run last: the tool's summary, the distinct sites and the harness's exit status (1: a verdict failed
# under the tool; 124: timed out).
# Known: initcheck reports moe v54's 32-row down (moe_wide27::down_run's load_act) copying its tile's padding rows of
# the requantized activations, rows no gate_up block writes; their products land in output columns that are never
# stored (docs/perf.md, session 18, calls 5-7). v72 zero-fills those rows instead.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
dir=${1:?usage: scripts/device_sanitize.sh DIR PROBLEM VARIANTS [SHAPE_SETS]}
problem=${2:?problem} variants=${3:?variants} sets=${4:-test,benchmark}
source scripts/lib/unpack_harness.sh && require_harness "$dir"
out=${OUT:-/tmp/device_sanitize}/sanitize
mkdir -p "$out"
san=$(command -v compute-sanitizer || { [[ -x /usr/local/cuda/bin/compute-sanitizer ]] && echo /usr/local/cuda/bin/compute-sanitizer; })
[[ -n "$san" ]] || { echo "device_sanitize: compute-sanitizer not found" >&2; exit 1; }
start=$(date +%s)
rows=()
IFS=, read -ra vlist <<< "$variants"
IFS=, read -ra slist <<< "$sets"
for v in "${vlist[@]}"; do
  for set in "${slist[@]}"; do
    case "$set" in
      test) shape_args=() ;;
      benchmark) shape_args=(--shape-set benchmark --shapes "${SHAPES:-all}") ;;
      *) echo "device_sanitize: unknown shape set '$set' (test, benchmark)" >&2; exit 2 ;;
    esac
    for tool in ${TOOLS:-memcheck racecheck synccheck initcheck}; do
      label="$problem $v $set $tool"
      if (( $(date +%s) - start > ${DEADLINE_S:-540} )); then rows+=("$label: SKIPPED (deadline)"); continue; fi
      log="$out/${problem}_${v}_${set}_${tool}.log"
      t0=$(date +%s)
      timeout -k 10 "${TIMEOUT_S:-240}" "$san" --tool "$tool" --print-limit "${PRINT_LIMIT:-20}" --error-exitcode 0 \
        "$dir/harness" run "$problem" --variant "$v" --mode test --no-isolate "${shape_args[@]}" > "$log" 2>&1
      rc=$?
      summary=$(grep -E '(ERROR SUMMARY: [0-9]+ errors?$|RACECHECK SUMMARY)' "$log" | tail -1 | sed 's/^=* *//')
      # a printed error's site: its kind, "at ... in FILE:LINE" and the first device frame's FILE:LINE (the caller of
      # an inlined helper)
      awk '/^=+ [A-Z][a-z]+ / && !/SUMMARY/ {kind = $0; sub(/^=+ /, "", kind); at = ""; next}
           /^=+ +at / {at = $NF; next}
           /Device Frame:/ && at != "" {print kind " at " at " <- " $NF; at = ""}' "$log" |
        sort | uniq -c | sort -rn > "${log%.log}.sites"
      sites=$(wc -l < "${log%.log}.sites")
      [[ $sites -gt 0 ]] || rm -f "${log%.log}.sites"
      rows+=("$label: ${summary:-no summary}; $sites distinct sites; harness rc $rc; $(( $(date +%s) - t0 )) s")
    done
  done
done
echo "device_sanitize ($problem):"
printf '  %s\n' "${rows[@]}"
