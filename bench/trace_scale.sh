#!/usr/bin/env bash
# `kvplan trace` and `kvplan fleet --trace` on synthetic traces in the Azure format (CSV and JSON
# Lines, bench/trace_gen.py, seed 20231116) of 10k, 100k, 1M and 10M requests, against Python
# merely reading the same file: the csv module for CSV, json.loads per line for JSON Lines. For
# each: CPU time (user + sys, the median of the runs), wall time, and peak memory (maximum resident
# set size, as /usr/bin/time -v reports it), with the ratios the README quotes: kvplan / Python,
# time at 10 x the requests / time at 1 x, peak memory / file size. It also checks that a trace
# gives the same figures in either format.
#   usage: bench/trace_scale.sh <path to the kvplan binary> [dir] [runs] [sizes...]
#     dir: where the traces are written (kept, and reused when present; default: a temporary one)
#     runs: runs per timing (default 3); sizes default to 10000 100000 1000000 10000000
set -euo pipefail
kvplan=${1:?usage: bench/trace_scale.sh <path to the kvplan binary> [dir] [runs] [sizes...]}
kvplan=$(cd "$(dirname "$kvplan")" && pwd)/$(basename "$kvplan")
here=$(cd "$(dirname "$0")" && pwd)
dir=${2:-}
runs=${3:-3}
shift $(($# < 3 ? $# : 3))
sizes=("$@")
((${#sizes[@]})) || sizes=(10000 100000 1000000 10000000)
[[ -x /usr/bin/time ]] || { echo "needs /usr/bin/time (Debian package time)" >&2; exit 1; }
if [[ -z $dir ]]; then
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
fi
mkdir -p "$dir"

model=(--model llama-3-70b --gpu h100-sxm --tp 4)
py_csv='import csv, sys; n = sum(1 for _ in csv.reader(open(sys.argv[1], newline="")))'
py_jsonl='import json, sys; n = sum(1 for line in open(sys.argv[1]) if json.loads(line))'
results=$dir/results.tsv
: >"$results"

# One measurement: the median CPU seconds of $runs runs, that run's wall seconds, and the largest
# resident set over the runs (KiB). Output goes to $out.
measure() {
  local name=$1 out=$2
  shift 2
  local samples=()
  for ((r = 0; r < runs; ++r)); do
    /usr/bin/time -f '%U %S %e %M' -o "$dir/time.txt" "$@" >"$out"
    samples+=("$(awk '{ printf "%.3f %.3f %d\n", $1 + $2, $3, $4 }' "$dir/time.txt")")
  done
  printf '%s\n' "${samples[@]}" | sort -n | awk -v name="$name" '
    { cpu[NR] = $1; wall[NR] = $2; if ($3 > rss) rss = $3 }
    END { m = int((NR + 1) / 2); printf "%s\t%.3f\t%.3f\t%d\n", name, cpu[m], wall[m], rss }' \
    >>"$results"
}

for n in "${sizes[@]}"; do
  csv=$dir/trace-$n.csv
  jsonl=$dir/trace-$n.jsonl
  if [[ ! -s $csv || ! -s $jsonl ]]; then
    python3 "$here/trace_gen.py" "$n" "$csv" "$jsonl"
  fi
  for fmt in csv jsonl; do
    file=$dir/trace-$n.$fmt
    py=$py_csv
    [[ $fmt == jsonl ]] && py=$py_jsonl
    measure "$n $fmt python" /dev/null python3 -c "$py" "$file"
    measure "$n $fmt trace" "$dir/trace-$n-$fmt.json" "$kvplan" trace "$file" "${model[@]}" \
      --format json
    measure "$n $fmt fleet" "$dir/fleet-$n-$fmt.json" "$kvplan" fleet --trace "$file" \
      "${model[@]}" --rate 20 --tpot-ms 50 --epsilon 0.01 --format json
    printf "%s %s size\t%d\n" "$n" "$fmt" "$(stat -L -c %s "$file")" >>"$results"
  done
done

python3 - "$results" "$dir" "${sizes[@]}" <<'PY'
import json, sys
results, d, sizes = sys.argv[1], sys.argv[2], sys.argv[3:]
cpu, wall, rss, size = {}, {}, {}, {}
for line in open(results):
    name, *v = line.rstrip("\n").split("\t")
    if name.endswith(" size"):
        size[name[:-5]] = int(v[0])
    else:
        cpu[name], wall[name], rss[name] = float(v[0]), float(v[1]), int(v[2]) * 1024

def same_figures(n, what):
    # Everything but the file's name, and the notes (the Azure attribution follows the CSV header).
    a, b = (json.loads(open(f"{d}/{what}-{n}-{f}.json").read().replace(f"trace-{n}.{f}", "file"))
            for f in ("csv", "jsonl"))
    for j in (a, b):
        j.pop("notes", None)
    return a == b

print(f"{'requests':>10} {'format':6} {'file MB':>8} {'python s':>9} "
      f"{'trace s':>8} {'/python':>8} {'x10':>6} {'peak MB':>8} {'/file':>6}   "
      f"{'fleet s':>8} {'/python':>8} {'x10':>6} {'peak MB':>8} {'/file':>6}")
for fmt in ("csv", "jsonl"):
    prev = None
    for n in sizes:
        k = f"{n} {fmt}"
        row = f"{int(n):>10,} {fmt:6} {size[k] / 1e6:8.1f} {cpu[k + ' python']:9.3f}"
        for what in ("trace", "fleet"):
            t = cpu[f"{k} {what}"]
            # /usr/bin/time counts in 10 ms: a ratio needs the smaller time to be 0.1 s or more.
            before = cpu[f"{prev} {fmt} {what}"] if prev else 0
            grow = f"{t / before:6.2f}" if before >= 0.1 else f"{'-':>6}"
            row += (f" {t:8.3f} {t / cpu[k + ' python']:8.2f} {grow} "
                    f"{rss[f'{k} {what}'] / 1e6:8.1f} {rss[f'{k} {what}'] / size[k]:6.2f}  ")
        print(row)
        prev = n
print("CPU seconds (user + sys), median of the runs; /python: kvplan's time over Python's reading "
      "the same file; x10: over the time at a tenth of the requests (where that is 0.1 s or more); "
      "peak MB: largest resident set (/usr/bin/time -v's maximum resident set size), /file: over "
      "the file's size.")
for n in sizes:
    for what in ("trace", "fleet"):
        verdict = "same" if same_figures(n, what) else "DIFFERENT"
        print(f"{int(n):,} requests, kvplan {what}: CSV and JSON Lines give the {verdict} figures")
PY
