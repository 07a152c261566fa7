#!/usr/bin/env python3
"""Summarises an Nsight Compute SASS source page (`ncu --page source --print-source sass --csv`, as
scripts/device_profile.sh writes it) per kernel: executed warp instructions by opcode, warp-stall
samples by reason, and the instructions with the most stall samples; with --loops N, the N loops (address ranges
closed by a backward branch) with the most samples: their share, instructions an iteration, stall reasons and
hottest instructions; with --range LO:HI (address suffixes as printed, hex), every instruction in that range in
address order with its samples, executions and top stall reasons (to read where the warps wait around a barrier).
Usage: ncu_sass_summary.py FILE.sass.csv [--kernel REGEX] [--top N] [--loops N] [--range LO:HI]"""
import argparse
import collections
import csv
import re
import sys


def sections(path):
    """Yields (kernel name, header, rows) for every kernel block of the CSV."""
    name, header, rows = None, None, []
    for r in csv.reader(open(path, newline="")):
        if r and r[0] == "Kernel Name":
            if header:
                yield name, header, rows
            name, header, rows = r[1], None, []
        elif r and r[0] == "Address":
            header = r
        elif header and len(r) == len(header):
            rows.append(r)
    if header:
        yield name, header, rows


SAMPLES = "Warp Stall Sampling (All Samples)"


def stall_columns(ix):
    """(reason, column index) of the page's per-reason stall sample columns."""
    return [(c[6:], i) for c, i in ix.items() if c.startswith("stall_") and "Not Issued" not in c]


def stall_reasons(rows, ix):
    """Stall samples by reason, summed over rows."""
    cols = stall_columns(ix)
    total = collections.Counter()
    for r in rows:
        for c, i in cols:
            total[c] += num(r[i])
    return total


def top_reasons(r, ix):
    """The row's two largest stall reasons, as "reason:samples" words."""
    reasons = sorted(((num(r[i]), c) for c, i in stall_columns(ix)), reverse=True)[:2]
    return " ".join(f"{c}:{v:.0f}" for v, c in reasons if v)


def num(s):
    try:
        return float(s.replace(",", ""))
    except ValueError:
        return 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--kernel", default=".")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--loops", type=int, default=0)
    ap.add_argument("--range", default=None, help="LO:HI, hex address suffixes (the last 5 digits printed)")
    o = ap.parse_args()
    rng = None
    if o.range:
        m = re.fullmatch(r"([0-9a-fA-F]+):([0-9a-fA-F]+)", o.range)
        if not m:
            ap.error("--range wants LO:HI in hex, e.g. c5d00:c7e90")
        rng = (int(m.group(1), 16), int(m.group(2), 16))
    seen = set()
    for name, h, rows in sections(o.file):
        if not re.search(o.kernel, name) or name in seen:
            continue  # ncu repeats a kernel's block once per profiled launch
        seen.add(name)
        ix = {c: i for i, c in enumerate(h)}
        executed = collections.Counter()
        total_inst = 0.0
        for r in rows:
            op = r[ix["Source"]].split()
            op = [t for t in op if not t.startswith("@")]
            opcode = op[0] if op else "?"
            n = num(r[ix["Instructions Executed"]])
            executed[opcode] += n
            total_inst += n
        stalls = stall_reasons(rows, ix)
        print(f"== {name[:150]}")
        print(f"   warp instructions executed: {total_inst:,.0f}")
        print("   by opcode: " + ", ".join(f"{k} {v / total_inst:.1%}" for k, v in executed.most_common(18)))
        st = sum(stalls.values()) or 1
        print("   stall samples: " + ", ".join(f"{k} {v / st:.1%}" for k, v in stalls.most_common(10)))
        hot = sorted(rows, key=lambda r: -num(r[ix[SAMPLES]]))[: o.top]
        samples = sum(num(r[ix[SAMPLES]]) for r in rows) or 1
        for r in hot:
            print(f"   {num(r[ix[SAMPLES]]) / samples:6.1%} {r[ix['Address']][-5:]} "
                  f"{r[ix['Source']].strip()[:60]:60} " + top_reasons(r, ix))
        if o.loops:
            print_loops(rows, ix, samples, o.loops)
        if rng:
            print_range(rows, ix, samples, rng)


def loops_of(rows, ix):
    """(first, last) row indices of every range closed by a backward branch (BRA to an address at or before it).
    A branch that runs less than half as often as the instruction it jumps back to does not close a loop: it is an
    out-of-line block returning into the code (ptxas puts e.g. an mbarrier wait's retry after the kernel's end), and
    the "range" it spans would swallow the real loops."""
    addr = [int(r[ix["Address"]], 16) for r in rows]
    row_at = {a: i for i, a in enumerate(addr)}
    found = set()
    for i, r in enumerate(rows):
        m = re.search(r"\bBRA(?:\.\w+)*\s+(0x[0-9a-fA-F]+)", r[ix["Source"]])
        runs = num(r[ix["Instructions Executed"]])  # (never-executed branches: divergence paths' jumps)
        target = int(m.group(1), 16) if m else None
        if runs > 0 and target is not None and target <= addr[i] and target in row_at:
            first = row_at[target]
            if runs >= 0.5 * num(rows[first][ix["Instructions Executed"]]):
                found.add((first, i))
    return sorted(found)


def print_range(rows, ix, samples, rng):
    """The instructions whose address suffix (last 5 hex digits) lies in rng, in address order."""
    lo, hi = rng
    body = [r for r in rows if lo <= int(r[ix["Address"]], 16) % 0x100000 <= hi]
    total = sum(num(r[ix[SAMPLES]]) for r in body)
    print(f"   range {lo:05x}..{hi:05x}: {len(body)} instructions, {total / samples:.1%} of the samples")
    for r in body:
        print(f"      {r[ix['Address']][-5:]} {num(r[ix[SAMPLES]]):6.0f} {num(r[ix['Instructions Executed']]):>10,.0f}  "
              f"{r[ix['Source']].strip()[:60]:60} " + top_reasons(r, ix))


def print_loops(rows, ix, samples, n):
    ranked = []
    for first, last in loops_of(rows, ix):
        body = rows[first:last + 1]
        ranked.append((sum(num(r[ix[SAMPLES]]) for r in body), first, last, body))
    ranked.sort(key=lambda t: -t[0])
    for total, first, last, body in ranked[:n]:
        trips = num(rows[last][ix["Instructions Executed"]])
        inst = sum(num(r[ix["Instructions Executed"]]) for r in body)
        reasons = stall_reasons(body, ix)
        rs = sum(reasons.values()) or 1
        print(f"   loop {rows[first][ix['Address']][-5:]}..{rows[last][ix['Address']][-5:]}: {total / samples:.1%} of the "
              f"samples, {inst / trips:.0f} warp instructions an iteration ({trips:,.0f} iterations); "
              + ", ".join(f"{k} {v / rs:.0%}" for k, v in reasons.most_common(4)))
        for r in sorted(body, key=lambda r: -num(r[ix[SAMPLES]]))[:6]:
            print(f"      {num(r[ix[SAMPLES]]) / (total or 1):6.1%} {r[ix['Address']][-5:]} {r[ix['Source']].strip()[:60]}")


if __name__ == "__main__":
    sys.exit(main())
