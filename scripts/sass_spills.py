#!/usr/bin/env python3
"""Where a kernel's register spills sit, from `cuobjdump -sass` output (no profiler needed).

ptxas -v says how many bytes a kernel spills, not where: a spill before the main loop costs one store and one load per
block, a spill inside it costs every iteration. For each kernel whose mangled name matches KERNEL_REGEX this prints its
local-memory instructions (LDL / STL) and matrix instructions (HGMMA, QGMMA, IGMMA, HMMA, IMMA) as runs in program
order, then each loop (a backward branch and its target) that holds local-memory instructions, with the loops nested in
it (an outer loop's spills are paid once an outer iteration).

  cuobjdump -sass BINARY > all.sass      # on a machine with the CUDA tools (the GPU machine here)
  python3 scripts/sass_spills.py all.sass 'gate_up|down_xr'
"""
import argparse
import re
import sys

FUNC = re.compile(r'Function : (\S+)')
INSTR = re.compile(r'/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;')
LOCAL = re.compile(r'\b(LDL|STL)(\.\S+)?\b')
MATRIX = re.compile(r'\b([HQI]GMMA|HMMA|IMMA)\.\S+')
BRANCH = re.compile(r'\bBRA(?:\.\S+)?\s+(?:`?\(?)(0x[0-9a-f]+)')


def parse(lines, pattern):
    """{kernel: [(address, instruction text)]} for the kernels matching pattern, in file order."""
    kernels, cur = {}, None
    for line in lines:
        m = FUNC.search(line)
        if m:
            cur = m.group(1) if pattern.search(m.group(1)) else None
            if cur:
                kernels[cur] = []
            continue
        if cur:
            m = INSTR.search(line)
            if m:
                kernels[cur].append((int(m.group(1), 16), m.group(2)))
    return kernels


def runs(instrs):
    """Consecutive local-memory or matrix instructions of one kind, as [kind, first address, last address, count]."""
    out = []
    for addr, text in instrs:
        m, loc = MATRIX.search(text), LOCAL.search(text)
        kind = m.group(0) if m else loc.group(1) if loc else None
        if kind is None:
            continue
        if out and out[-1][0] == kind:
            out[-1][2], out[-1][3] = addr, out[-1][3] + 1
        else:
            out.append([kind, addr, addr, 1])
    return out


def loops(instrs):
    """(start, end) of every backward branch's range: the branch at end jumps back to start. Without execution counts
    an out-of-line block that jumps back into the code (ptxas puts e.g. an mbarrier wait's retry after the kernel's end;
    scripts/ncu_sass_summary.py tells those apart by their counts) also closes a range: it shows as an outer loop."""
    found = []
    for addr, text in instrs:
        m = BRANCH.search(text)
        if m and int(m.group(1), 16) < addr:  # (a branch to itself: the end-of-kernel padding)
            found.append((int(m.group(1), 16), addr))
    return found


def report(name, instrs):
    lines = [name]
    local = [(a, m.group(1)) for a, t in instrs if (m := LOCAL.search(t))]
    kinds = [k for _, k in local]
    lines.append(f'   local memory: {kinds.count("STL")} STL, {kinds.count("LDL")} LDL')
    for kind, a, b, n in runs(instrs):
        lines.append(f'   {kind:36s} {a:06x}..{b:06x} x{n}')
    found = loops(instrs)
    for start, end in found:
        inside = [a for a, _ in local if start <= a <= end]
        if inside:
            mma = sum(1 for a, t in instrs if start <= a <= end and MATRIX.search(t))
            inner = sum(1 for s, e in found if start <= s and e <= end and (s, e) != (start, end))
            lines.append(f'   loop {start:06x}..{end:06x}: {len(inside)} local-memory instructions, {mma} matrix'
                         + (f' ({inner} loops inside it)' if inner else ''))
    return '\n'.join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('sass', help='cuobjdump -sass output')
    ap.add_argument('kernel', nargs='?', default='.', help='regular expression on the mangled kernel names')
    args = ap.parse_args()
    try:
        with open(args.sass, errors='replace') as f:
            kernels = parse(f, re.compile(args.kernel))
    except (OSError, re.error) as e:
        sys.exit(f'sass_spills: {e}')
    if not kernels:
        sys.exit(f'sass_spills: no kernel matches {args.kernel!r} in {args.sass}')
    print('\n'.join(report(name, instrs) for name, instrs in kernels.items()))


if __name__ == '__main__':
    main()
