#!/usr/bin/env bash
# Nsight Compute profile of one variant's kernels on chosen benchmark shapes, from a carried GPU build
# (the device machine has ncu; the CPU machine does not), then text reports: the details page of every
# kernel and the SASS source page (per-instruction warp-stall samples) of the kernels matching
# SASS_KERNELS. ncu flushes the caches before every replayed pass (cold L2).
#   scripts/device_profile.sh DIR PROBLEM VARIANT SHAPES [KERNELS [SKIP COUNT]]
#     DIR      holds the harness binary (harness, or harness.gz: unpacked in place)
#     SHAPES   comma-separated benchmark shape indices
#     KERNELS  ncu kernel-name regex (function base names), default: every kernel
#     Without SKIP/COUNT: `harness run --mode profile` under `ncu --profile-from-start off`: exactly the
#       kernels of one call per shape (the harness opens the profiler range around that call only).
#     With SKIP/COUNT (the older way): benchmark mode, skip SKIP matching launches (the warm-up call's,
#       reference kernels included), profile the next COUNT.
# Environment: SET (ncu section set, default full), SASS_KERNELS (regex, default KERNELS),
# DEADLINE_S (default 300): shapes that would start after this many seconds are skipped.
# Output under $OUT/profile/<problem>_<variant>_s<shape>.{details,sass}.txt; one line per kernel last.
set -uo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: scripts/device_profile.sh DIR PROBLEM VARIANT SHAPES [KERNELS [SKIP COUNT]]}
problem=${2:?problem} variant=${3:?variant} shapes=${4:?shapes} kernels=${5:-.*} skip=${6:-} count=${7:-}
source scripts/lib/unpack_harness.sh && require_harness "$dir"
if [[ -n "$skip" ]]; then
  [[ -n "$count" ]] || { echo "device_profile: SKIP needs COUNT" >&2; exit 2; }
  select_args=(--launch-skip "$skip" --launch-count "$count" --kill on)
  run_mode=benchmark
else
  select_args=(--profile-from-start off)
  run_mode=profile
fi
out=${OUT:-/tmp/device_profile}/profile
mkdir -p "$out"
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[[ -n "$ncu" ]] || { echo "device_profile: ncu not found" >&2; exit 1; }
start=$(date +%s)
IFS=, read -ra list <<< "$shapes"
for s in "${list[@]}"; do
  if (( $(date +%s) - start > ${DEADLINE_S:-300} )); then echo "shape $s: SKIPPED (deadline)"; continue; fi
  base="$out/${problem}_${variant}_s$s"
  "$ncu" --clock-control none --set "${SET:-full}" --kernel-name-base function -k "regex:$kernels" \
    "${select_args[@]}" -f -o "$base" \
    "$dir/harness" run "$problem" --variant "$variant" --mode "$run_mode" --shapes "$s" --no-isolate \
    > "$base.run.log" 2>&1
  "$ncu" --import "$base.ncu-rep" --page details > "$base.details.txt" 2>&1
  "$ncu" --import "$base.ncu-rep" --page source --print-source sass --csv \
    -k "regex:${SASS_KERNELS:-$kernels}" > "$base.sass.csv" 2>&1
  "$ncu" --import "$base.ncu-rep" --page raw --csv \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,launch__grid_size \
    > "$base.raw.csv" 2>&1
  rm -f "$base.ncu-rep"
  echo "== $problem $variant shape $s"
  python3 - "$base.raw.csv" <<'EOF'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
if hdr is None:
    print("  no kernels profiled:", " ".join(open(sys.argv[1]).read().split()[:40])); sys.exit()
h = rows[hdr]
def col(r, name): return r[h.index(name)] if name in h else "?"
for r in rows[hdr + 2:]:
    if len(r) != len(h): continue
    print(f"  {col(r,'Kernel Name')[:40]:40} {col(r,'gpu__time_duration.sum'):>10} ns  read {col(r,'dram__bytes_read.sum'):>12}"
          f"  write {col(r,'dram__bytes_write.sum'):>12}  sm% {col(r,'sm__throughput.avg.pct_of_peak_sustained_elapsed'):>6}"
          f"  regs {col(r,'launch__registers_per_thread')}  grid {col(r,'launch__grid_size')}")
EOF
done
