#!/usr/bin/env bash
# Writes the normalised PTX of GPU variant sources to a folder, to show that a refactor of kernel code
# leaves the compiled kernels unchanged (compare two snapshots with diff -r). Uses a configured cuda
# build's flags. Normalisation drops what changes without the code changing: .loc/.file lines, comments,
# the hash nvcc puts into names of unnamed namespaces, register and label numbering, function order.
#   scripts/ptx_snapshot.sh BUILD_DIR OUT_DIR problems/mla_decode/v11.hip [more .hip files]
set -euo pipefail
cd "$(dirname "$0")/.."
build=$1 out=$2; shift 2
mkdir -p "$out"
flags=$(sed -n 's/^CUDA_FLAGS = //p' "$build/CMakeFiles/harness_objs.dir/flags.make" | sed 's/--generate-code=[^ ]*//; s/-lineinfo//')
defs=$(sed -n 's/^CUDA_DEFINES = //p' "$build/CMakeFiles/harness_objs.dir/flags.make")
incs=$(tr '\n' ' ' < "$build/CMakeFiles/harness_objs.dir/includes_CUDA.rsp")
pids=()
for src in "$@"; do
  name=$(echo "$src" | tr '/' '_')
  # shellcheck disable=SC2086
  /usr/local/cuda/bin/nvcc $defs $incs $flags -arch=sm_90a -ptx -x cu "$src" -o "$out/$name.raw.ptx" &
  pids+=($!)
done
failed=0
for p in "${pids[@]}"; do wait "$p" || failed=1; done
(( failed == 0 )) || { echo "ptx_snapshot: nvcc failed (see above)" >&2; exit 1; }
for f in "$out"/*.raw.ptx; do
  # (non-greedy: a greedy file-name part would swallow the rest of a name up to the last hash)
  perl -ne 'next if /^\s*\.(loc|file)\b/; s@//.*$@@; s/[0-9]*_INTERNAL_[0-9a-f]+_[0-9]+_[A-Za-z0-9_]*?_[0-9a-f]{8}_[0-9]+/INTERNAL/g; s/[0-9]*_GLOBAL__N__[0-9a-f]+_[0-9]+_[A-Za-z0-9_]*?_[0-9a-f]{8}_[0-9]+/ANON/g; s/__nv_static_[0-9a-zA-Z_]+/STATIC/g; print' "$f" \
    | grep -v '^\s*$' | python3 -c '
import re, sys
# Virtual registers renumbered in order of first use within each function, declarations dropped:
# the same instructions then read the same however many registers the front end allocated.
out, names = [], {}
for line in sys.stdin:
    if line.startswith((".entry", ".func", ".visible", ".weak")):
        names = {}
    if re.match(r"\s*\.reg\s", line):
        continue
    line = re.sub(r"%(rd|r|f|fd|p|rs|h|hh)(\d+)", lambda m: "%" + m.group(1) + str(names.setdefault(m.group(0), len(names))), line)
    # Branch labels carry the function index ($L__BB<function>_<block>): drop it.
    out.append(re.sub(r"\$L__BB\d+_", "$L__BB_", line))
# Functions in name order, so that a change of instantiation order alone reads as no change.
text = "".join(out)
parts = re.split(r"\n(?=(?:\.visible\s+|\.weak\s+)?\.(?:entry|func)\b)", text)
head, funcs = parts[0], parts[1:]
key = lambda f: (re.search(r"\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([^\s(]+)", f) or re.search("", f)).group(0)
sys.stdout.write(head + "".join("\n" + f.rstrip("\n") for f in sorted(funcs, key=key)) + "\n")' > "${f%.raw.ptx}.ptx"
  rm "$f"
done
