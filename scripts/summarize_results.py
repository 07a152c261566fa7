#!/usr/bin/env python3
"""Prints one compact table per harness results file: variant, shape, status, time, % of the
bandwidth ceiling, mean / floor, official mismatches and strict error. Usage: summarize_results.py FILE..."""
import json
import sys


def num(x, f):
    return "-" if x is None else f.format(x)


for path in sys.argv[1:]:
    try:
        doc = json.load(open(path))
    except Exception as e:  # a missing file means the step did not run or crashed
        print(f"{path}: unreadable ({e})")
        continue
    print(f"\n{path.split('/')[-1]}  mode={doc.get('runs', [{}])[0].get('mode', '?')}")
    for run in doc.get("runs", []):
        print(f"  {run.get('variant')}: {run.get('status')} {run.get('reason') or ''} score {num((run.get('score_ns') or 0) / 1e3, '{:.1f}')} us")
        for s in run.get("shapes", []):
            off, st = s.get("official") or {}, s.get("strict") or {}
            mean = s.get("mean_ns")
            floor = s.get("floor_ns") or 0
            xfloor = mean / floor if mean and floor > 0 else None
            print(f"    {s.get('label', '?'):42s} {s.get('status', '?'):6s} "
                  f"{num(mean / 1e3 if mean else None, '{:9.1f}')} us  {num(s.get('pct_bandwidth'), '{:5.1f}')}%BW  {num(xfloor, '{:5.2f}')}x floor  "
                  f"runs {s.get('runs', '-')}  mism {off.get('mismatches', '-')}  relL2 {num(st.get('rel_l2'), '{:.2e}')}  "
                  f"maxabs {num(st.get('max_abs'), '{:.2e}')}  {s.get('reason') or ''}")
