#!/usr/bin/env bash
# Checks variants on many fresh inputs: `harness run --mode test` on the benchmark shapes once per secret seed
# (the ranked runs pair every shape seed with a secret one), then a table of failures per variant and shape.
# A variant that passes the fixed seeds can still fail a few percent of fresh inputs (docs/perf.md, section
# "Session 10, fresh-seed failures": moe v38 fails 4 of 123 seeds on shapes 5 / 6).
#
#   scripts/seed_sweep.sh <harness> <problem> <variants> [first seed] [count] [max seconds] [extra run options...]
#   e.g. on the GPU machine: scripts/seed_sweep.sh dist/harness moe_mxfp4 v38 100 200 110 --shapes 5,6
# Writes one results file per seed into $OUT (default: a temporary folder) and prints the table last; exits 1 when a
# seed failed (or left no results), 2 on a bad command line.
set -uo pipefail
if (( $# < 3 )); then
  echo "usage: $0 <harness> <problem> <variants> [first seed] [count] [max seconds] [run options...]" >&2
  exit 2
fi
harness=$1 problem=$2 variants=$3 first=${4:-1} count=${5:-100} max_s=${6:-300}
if [[ ! -x $harness ]]; then
  echo "seed_sweep: '$harness' is not an executable harness binary" >&2
  exit 2
fi
for n in "$first" "$count" "$max_s"; do
  [[ $n =~ ^[0-9]+$ ]] || { echo "seed_sweep: '$n' is not a whole number (first seed, count, max seconds)" >&2; exit 2; }
done
shift $(( $# < 6 ? $# : 6 ))
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
t0=$(date +%s)
for (( s = first; s < first + count; ++s )); do
  if (( $(date +%s) - t0 >= max_s )); then
    echo "stopped after $(( s - first )) seeds: $max_s s" >&2
    break
  fi
  "$harness" run "$problem" --variant "$variants" --mode test --shape-set benchmark --secret-seed "$s" "$@" \
    --json "$out/seed_$s.json" > "$out/seed_$s.log" 2>&1
done
python3 - "$out" <<'PY'
import glob, json, os, sys
runs, failed = {}, False
for log in sorted(glob.glob(os.path.join(sys.argv[1], 'seed_*.log'))):
    seed, path = os.path.basename(log)[5:-4], log[:-4] + '.json'
    try:
        data = json.load(open(path))
    except (OSError, ValueError):
        last = (open(log).read().strip().splitlines() or ['(empty log)'])[-1]
        print(f'seed {seed}: no results file: {last}')
        failed = True
        continue
    for run in data['runs']:
        for s in run['shapes']:
            key = (run['variant'], s['index'], s['label'])
            entry = runs.setdefault(key, {'seeds': 0, 'failed': [], 'max_abs': 0.0})
            entry['seeds'] += 1
            entry['max_abs'] = max(entry['max_abs'], s['strict']['max_abs'] or 0.0)
            if s['status'] != 'ok':
                failed = True
                entry['failed'].append(f"{seed} ({s['official']['mismatches']} mism)")
print(f"{'variant':8} {'#':>2}  {'shape':58} {'seeds':>5} {'failed':>6}  {'worst max abs':>13}  failing seeds")
for (variant, index, label), e in sorted(runs.items()):
    print(f"{variant:8} {index:>2}  {label[-58:]:58} {e['seeds']:>5} {len(e['failed']):>6}  {e['max_abs']:>13.4g}  "
          + ', '.join(e['failed'][:6]) + (' ...' if len(e['failed']) > 6 else ''))
sys.exit(1 if failed or not runs else 0)
PY
