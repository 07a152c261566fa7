#!/usr/bin/env bash
# Checks scripts/device_ab.sh end to end on the CPU build: a stand-in harness runs the real harness's cpu variant of
# mla_decode on a tiny custom shape once per requested variant (renaming the runs in its JSON to the requested names),
# and passes `compare` through, so the steps, the two benchmark orders, the comparison tables, the archive and the
# exit status are the real ones.
set -euo pipefail
source "$(dirname "$0")/lib/scratch.sh"
real=${HARNESS_BIN:-$root/build/cpu/harness}
[[ -x "$real" ]] || { echo "test_device_ab: no harness at $real (set HARNESS_BIN)"; exit 1; }
mkdir -p "$tmp/dir"
cat > "$tmp/dir/harness" <<EOF
#!/usr/bin/env bash
real="$real"
EOF
cat >> "$tmp/dir/harness" <<'EOF'
cmd=$1; shift
case $cmd in
  list) echo "harness (stand-in for test_device_ab)" ;;
  compare) exec "$real" compare "$@" ;;
  run)
    problem=$1; shift
    variants="" mode=test json="" shapes=()
    while (($#)); do
      case $1 in
        --variant) variants=$2; shift 2 ;;
        --shape) shapes+=("$2"); shift 2 ;;
        --mode) mode=$2; shift 2 ;;
        --json) json=$2; shift 2 ;;
        --shapes|--shape-set|--fresh) shift 2 ;;
        *) shift ;;
      esac
    done
    if ((${#shapes[@]})); then printf '%s|' "$mode" "${shapes[@]}" >> "$(dirname "$0")/shapes.log"; echo >> "$(dirname "$0")/shapes.log"; fi
    n=$(tr ',' '\n' <<< "$variants" | wc -l)
    cpus=$(yes cpu | head -n "$n" | paste -sd,)
    "$real" run mla_decode --variant "$cpus" --mode "$mode" --shape "bs=1 kv=32" --json "$json" || exit
    python3 - "$json" "$variants" <<'PY'
import json, sys
path, names = sys.argv[1], sys.argv[2].split(",")
doc = json.load(open(path))
for run, name in zip(doc["runs"], names):
    run["variant"] = name
json.dump(doc, open(path, "w"))
PY
    ;;
  *) exit 2 ;;
esac
EOF
chmod +x "$tmp/dir/harness"
fail() { echo "test_device_ab: $1"; echo "$out"; exit 1; }
out=$(OUT="$tmp/out" FRESH=1 TEST_SHAPES='bs=2 kv=100;bs=3 kv=70' "$root/scripts/device_ab.sh" "$tmp/dir" mla_decode \
  va vb,vc) || fail "exit status $?"
grep -qx '  test: rc 0 in [0-9]* s' <<< "$out" || fail "test step line"
# TEST_SHAPES: one more test-mode step on exactly those shapes
grep -qx '  test_custom: rc 0 in [0-9]* s' <<< "$out" || fail "custom shapes step line"
[[ $(cat "$tmp/dir/shapes.log") == "test|bs=2 kv=100|bs=3 kv=70|" ]] || fail "custom shapes: $(cat "$tmp/dir/shapes.log")"
grep -qx '  bench_base_last: rc 0 in [0-9]* s' <<< "$out" || fail "second order's step line"
for order in bench_base_first bench_base_last; do
  for v in vb vc; do
    grep -qx "== $order: $v against va" <<< "$out" || fail "$order / $v heading"
  done
done
[[ $(grep -c '^geometric-mean ratio B/A: ' <<< "$out") == 4 ]] || fail "four comparisons"
grep -q "#mla_decode:vc \[vc" <<< "$out" || fail "candidate named in the comparison"
# the last lines: one ratio a candidate for each order, the numbers of the comparisons above
[[ $(tail -3 <<< "$out" | sed -n 1p) == "geometric-mean time ratio candidate / va (base first, base last; < 1: faster):" ]] ||
  fail "summary heading last"
first=$(awk '/^== bench_base_first: vc/{f=1} f && /^geometric-mean ratio/{print $4; exit}' <<< "$out")
last=$(awk '/^== bench_base_last: vc/{f=1} f && /^geometric-mean ratio/{print $4; exit}' <<< "$out")
[[ $(tail -1 <<< "$out") == "  vc: $first $last" ]] || fail "summary line of vc ($first $last)"
tar tzf "$tmp/out/ab.tgz" > "$tmp/archive.txt"  # (not piped into grep -q: with pipefail, tar's SIGPIPE would fail it)
grep -qx 'ab/bench_base_last.json' "$tmp/archive.txt" || fail "archive"
[[ ! -d "$tmp/out/ab" ]] || fail "work folder left beside the archive"
# the base among the candidates, a folder without a harness and a missing argument are refused with status 2
for args in "$tmp/dir mla_decode va vb,va" "$tmp mla_decode va vb" "$tmp/dir mla_decode va"; do
  rc=0
  # shellcheck disable=SC2086
  OUT="$tmp/out2" "$root/scripts/device_ab.sh" $args 2>/dev/null || rc=$?
  [[ $rc == 2 ]] || fail "refused with exit status 2: $args (got $rc)"
done
echo "test_device_ab: ok"
