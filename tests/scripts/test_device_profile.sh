#!/usr/bin/env bash
# Checks scripts/device_profile.sh with a stand-in ncu (the CPU machine has none): DIR's harness.gz is unpacked and
# run under ncu in profile mode on the asked shape, the raw page becomes one line a kernel, and a folder without a
# harness is refused with status 2.
set -euo pipefail
source "$(dirname "$0")/lib/scratch.sh"
mkdir -p "$tmp/bin" "$tmp/dir"
# The stand-in: a profiling run records its command line and runs the program; --import prints canned pages.
cat > "$tmp/bin/ncu" <<'NCU'
#!/usr/bin/env bash
if [[ $1 == --import ]]; then
  if [[ " $* " == *" --page raw "* ]]; then
    echo '"ID","Kernel Name","gpu__time_duration.sum","dram__bytes_read.sum","dram__bytes_write.sum","sm__throughput.avg.pct_of_peak_sustained_elapsed","launch__registers_per_thread","launch__grid_size"'
    echo '"","","nsecond","Mbyte","Mbyte","%","register/thread",""'
    echo '"0","void k<1>()","45824","151.65","2.26","29.97","225","128"'
  else
    echo "page"
  fi
  exit 0
fi
printf '%s\n' "$@" > "$NCU_ARGS"
for ((i = 1; i <= $#; i++)); do [[ ${!i} == -o ]] && { j=$((i + 1)); touch "${!j}.ncu-rep"; }; done
while [[ $# -gt 0 && $1 != */harness ]]; do shift; done
exec "$@"
NCU
chmod +x "$tmp/bin/ncu"
printf '#!/bin/sh\nexit 0\n' | gzip -c > "$tmp/dir/harness.gz"
out=$(PATH="$tmp/bin:$PATH" NCU_ARGS="$tmp/args" OUT="$tmp/out" "$root/scripts/device_profile.sh" "$tmp/dir" \
  mla_decode v26 3 dims5)
fail() { echo "test_device_profile: $1"; echo "$out"; exit 1; }
[[ -x "$tmp/dir/harness" ]] || fail "harness.gz not unpacked"
grep -qx -- "--profile-from-start" "$tmp/args" || fail "not a profiler-range run"
tr '\n' ' ' < "$tmp/args" | grep -q -- "/harness run mla_decode --variant v26 --mode profile --shapes 3 " ||
  fail "harness command line: $(tr '\n' ' ' < "$tmp/args")"
grep -qx '== mla_decode v26 shape 3' <<< "$out" || fail "shape header"
grep -qE '^  void k<1>\(\) +45824 ns  read +151.65  write +2.26  sm% +29.97  regs 225  grid 128$' <<< "$out" ||
  fail "kernel line"
mkdir -p "$tmp/empty"
set +e
err=$(PATH="$tmp/bin:$PATH" OUT="$tmp/out" "$root/scripts/device_profile.sh" "$tmp/empty" mla_decode v26 3 2>&1)
rc=$?
set -e
(( rc == 2 )) || fail "no harness: status $rc, not 2"
[[ $err == "device_profile: no harness binary in $tmp/empty (harness or harness.gz)" ]] || fail "no harness message: $err"
echo "test_device_profile: ok"
