#!/usr/bin/env bash
# Checks scripts/device_sanitize.sh's reading of compute-sanitizer's output, with a stand-in compute-sanitizer that
# prints canned reports (the CPU machine has no sanitizer): the summary line, the distinct sites (kind, helper line,
# caller line) and the harness's exit status reported per run.
set -euo pipefail
source "$(dirname "$0")/lib/scratch.sh"
mkdir -p "$tmp/bin" "$tmp/dir"
# The stand-in: memcheck finds three errors at two sites (two through one inlined helper), racecheck none; the
# harness's exit status is 1 (a verdict failed) under memcheck.
cat > "$tmp/bin/compute-sanitizer" <<'SAN'
#!/usr/bin/env bash
tool=$2
echo "========= COMPUTE-SANITIZER"
if [[ $tool == memcheck ]]; then
  for t in 1 2; do
    echo "========= Invalid __global__ read of size 16 bytes"
    echo "=========     at void helper<(int)16>(void *, const void *)+0x1a0 in helper.h:17"
    echo "=========     by thread ($t,0,0) in block (0,0,0)"
    echo "=========         Device Frame: void kernel_a()+0x200 in kernel_a.h:42"
    echo "=========         Device Frame: void outer()+0x10 in outer.h:7"
  done
  echo "========= Invalid __shared__ write of size 4 bytes"
  echo "=========     at void kernel_b()+0x30 in kernel_b.h:9"
  echo "=========         Device Frame: void kernel_b()+0x30 in kernel_b.h:9"
  echo "========= ERROR SUMMARY: 3 errors"
  exit 1
fi
echo "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"
SAN
chmod +x "$tmp/bin/compute-sanitizer"
# DIR holds the harness gzip'd, as carried to the device machine: the script unpacks it before the first run.
printf '#!/bin/sh\nexit 0\n' | gzip -c > "$tmp/dir/harness.gz"
out=$(PATH="$tmp/bin:$PATH" OUT="$tmp/out" TOOLS="memcheck racecheck" "$root/scripts/device_sanitize.sh" "$tmp/dir" \
  moe_mxfp4 v54 test)
fail() { echo "test_device_sanitize: $1"; echo "$out"; exit 1; }
grep -qx '  moe_mxfp4 v54 test memcheck: ERROR SUMMARY: 3 errors; 2 distinct sites; harness rc 1; [0-9]* s' <<< "$out" ||
  fail "memcheck line"
grep -qx '  moe_mxfp4 v54 test racecheck: RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings); 0 distinct sites; harness rc 0; [0-9]* s' <<< "$out" ||
  fail "racecheck line"
sites="$tmp/out/sanitize/moe_mxfp4_v54_test_memcheck.sites"
[[ -f "$sites" && ! -f "$tmp/out/sanitize/moe_mxfp4_v54_test_racecheck.sites" ]] || fail "sites files"
grep -qE '^ +2 Invalid __global__ read of size 16 bytes at helper.h:17 <- kernel_a.h:42$' "$sites" || fail "helper site"
grep -qE '^ +1 Invalid __shared__ write of size 4 bytes at kernel_b.h:9 <- kernel_b.h:9$' "$sites" || fail "direct site"
[[ -x "$tmp/dir/harness" ]] || fail "harness.gz not unpacked"
# a folder without a harness is refused (status 2), as is an unknown shape set
mkdir -p "$tmp/empty"
set +e
PATH="$tmp/bin:$PATH" OUT="$tmp/out" "$root/scripts/device_sanitize.sh" "$tmp/empty" moe_mxfp4 v54 test 2>/dev/null
rc=$?
set -e
(( rc == 2 )) || fail "no harness: status $rc, not 2"
if PATH="$tmp/bin:$PATH" OUT="$tmp/out" "$root/scripts/device_sanitize.sh" "$tmp/dir" moe_mxfp4 v54 tests 2>/dev/null; then
  fail "unknown shape set accepted"
fi
echo "test_device_sanitize: ok"
