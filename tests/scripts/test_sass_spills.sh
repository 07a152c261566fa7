#!/usr/bin/env bash
# Checks scripts/sass_spills.py on made-up cuobjdump SASS: a reload inside the inner loop (a backward branch's range) is
# reported with the loop's matrix instruction count, the outer loop with its spills and the loop nested in it, and
# kernels whose names do not match are left out.
set -euo pipefail
source "$(dirname "$0")/lib/scratch.sh"
sass="$tmp/all.sass"
i() { printf '        /*%04x*/                   %s ;     /* 0x0000000000000000 */\n' "$1" "$2"; }
{
  echo '	code for sm_90a'
  echo '		Function : _Z8gate_upv'
  i 0x0000 'LDC R1, c[0x0][0x28]'
  i 0x0010 'STL.64 [R1], R10'
  i 0x0020 'MOV R2, RZ'
  i 0x0030 'QGMMA.64x160x32.F32.E4M3.E4M3 R24, R88, gdesc[UR4], R24, gsb0'
  i 0x0040 'QGMMA.64x160x32.F32.E4M3.E4M3 R104, R92, gdesc[UR4], R104, gsb0'
  i 0x0050 '@P0 LDL.LU.64 R250, [R1]'
  i 0x0060 '@P1 BRA 0x30'
  i 0x0070 'LDL.64 R22, [R1]'
  i 0x0078 '@P2 BRA 0x10'
  i 0x0080 'EXIT'
  echo '		Function : _Z7combinev'
  i 0x0000 'STL [R1], R3'
  i 0x0010 'EXIT'
} > "$sass"
out=$(python3 "$root/scripts/sass_spills.py" "$sass" 'gate_up')
fail() { echo "test_sass_spills: $1"; echo "$out"; exit 1; }
grep -q '^_Z8gate_upv$' <<< "$out" || fail "kernel name"
! grep -q combine <<< "$out" || fail "unmatched kernel listed"
grep -q '^   local memory: 1 STL, 2 LDL$' <<< "$out" || fail "counts"
grep -qE '^   QGMMA\.64x160x32\.F32\.E4M3\.E4M3 +000030\.\.000040 x2$' <<< "$out" || fail "matrix run"
grep -q '^   loop 000030..000060: 1 local-memory instructions, 2 matrix$' <<< "$out" || fail "loop line"
grep -q '^   loop 000010..000078: 3 local-memory instructions, 2 matrix (1 loops inside it)$' <<< "$out" || fail "outer loop"
[[ $(grep -c '^   loop ' <<< "$out") == 2 ]] || fail "two loops"
if python3 "$root/scripts/sass_spills.py" "$sass" 'nothing_like_this' 2>/dev/null; then fail "no match accepted"; fi
echo "test_sass_spills: ok"
