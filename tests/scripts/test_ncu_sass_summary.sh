#!/usr/bin/env bash
# Checks scripts/ncu_sass_summary.py's loop finding on a made-up SASS source page: a loop closed by its backward
# branch is reported with its instructions an iteration, and an out-of-line block that jumps back into the loop (as
# ptxas places an mbarrier wait's retry after the kernel's end) is not taken for a loop around it.
set -euo pipefail
source "$(dirname "$0")/lib/scratch.sh"
csv="$tmp/k.sass.csv"
row() { echo "\"0x7f00000000$1\",\"$2\",\"$3\",\"$4\",\"$5\",\"$6\""; }
{
  echo '"Kernel Name","void k()"'
  echo '"Address","Source","Instructions Executed","Warp Stall Sampling (All Samples)","stall_wait","stall_long_sb"'
  row 00 "MOV R1, R2" 10 1 1 0
  row 10 "@!P0 BRA 0x7f0000000100" 1000 5 0 5
  row 20 "IADD3 R1, R1, 0x1, RZ" 1000 50 40 10
  row 30 "LDS R2, [R1]" 1000 30 10 20
  row 40 "@P1 BRA 0x7f0000000010" 1000 2 1 1
  row 50 "EXIT" 10 1 1 0
  row 60 "SYNCS.PHASECHK.TRANS64 P0, [R3], RZ" 12 3 0 3
  row 70 "BRA 0x7f0000000020" 12 0 0 0
} > "$csv"
out=$(python3 "$root/scripts/ncu_sass_summary.py" "$csv" --top 3 --loops 5)
fail() { echo "test_ncu_sass_summary: $1"; echo "$out"; exit 1; }
grep -q '^   warp instructions executed: 4,044$' <<< "$out" || fail "instruction count"
[[ $(grep -c '^   loop ' <<< "$out") == 1 ]] || fail "exactly one loop expected (the retry block's jump back is none)"
grep -qE '^   loop 00010\.\.00040: .* 4 warp instructions an iteration \(1,000 iterations\)' <<< "$out" || fail "loop line"
# --range: the instructions between two addresses, in order, with their samples and executions
out=$(python3 "$root/scripts/ncu_sass_summary.py" "$csv" --top 1 --range 00020:00030)
grep -q '^   range 00020\.\.00030: 2 instructions, 87\.0% of the samples$' <<< "$out" || fail "range line"
[[ $(grep -c '^      000[23]0 ' <<< "$out") == 2 ]] || fail "range rows"
grep -qE '^      00020 +50 +1,000  IADD3 R1, R1, 0x1, RZ +wait:40 long_sb:10$' <<< "$out" || fail "range row"
if python3 "$root/scripts/ncu_sass_summary.py" "$csv" --range 20-30 2>/dev/null; then fail "bad range accepted"; fi
echo "test_ncu_sass_summary: ok"
