#!/usr/bin/env bash
# What including kvplan adds to a translation unit: the median time of `g++ -std=c++20 -c` on a TU
# that includes the core (<kvplan/core.hpp>, what serving code includes) and one that includes all
# of the standard-library-only planning (<kvplan/kvplan.hpp>), each against an empty TU and against
# a TU of just the standard headers it pulls in (the part of the cost that is the standard
# library's). The TUs are compiled in turn, round after round, so load drift hits all alike.
#   usage: bench/compile_cost.sh [rounds] [compiler]     (defaults: 15, g++)
set -euo pipefail
declare -A wall cpu
rounds=${1:-15}
cxx=${2:-g++}
include_dir="$(cd "$(dirname "$0")/../include" && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

printf 'int main() { return 0; }\n' >"$tmp/empty.cpp"
for h in core kvplan; do
    printf '#include <kvplan/%s.hpp>\nint main() { return 0; }\n' "$h" >"$tmp/$h.cpp"
    # The standard headers kvplan's own headers include, and nothing of kvplan.
    "$cxx" -std=c++20 -I"$include_dir" -MM "$tmp/$h.cpp" | tr ' \\' '\n\n' | grep '\.hpp$' |
        xargs grep -h '^#include <' | sort -u >"$tmp/${h}_std.cpp"
    printf 'int main() { return 0; }\n' >>"$tmp/${h}_std.cpp"
done

ms() {  # "wall cpu" in ms of compiling $1 (cpu: user + sys, steadier on a busy machine)
    /usr/bin/time -f "%e %U %S" -o "$tmp/time" "$cxx" -std=c++20 -I"$include_dir" -c "$1" \
        -o "$tmp/out.o"
    awk '{printf "%d %d\n", $1 * 1000, ($2 + $3) * 1000}' "$tmp/time"
}
median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

tus=(empty core_std core kvplan_std kvplan)
for tu in "${tus[@]}"; do : >"$tmp/t.$tu"; done
for ((i = 0; i < rounds; i++)); do
    for tu in "${tus[@]}"; do ms "$tmp/$tu.cpp" >>"$tmp/t.$tu"; done
done
for tu in "${tus[@]}"; do
    wall[$tu]=$(cut -d' ' -f1 "$tmp/t.$tu" | median)
    cpu[$tu]=$(cut -d' ' -f2 "$tmp/t.$tu" | median)
done

echo "compiler: $("$cxx" --version | head -1); median of ${rounds} rounds"
row() { printf '%-48s %10s %10s\n' "$1" "$2" "$3"; }
row "" "wall ms" "cpu ms"
row "empty TU" "${wall[empty]}" "${cpu[empty]}"
for h in core kvplan; do
    row "TU including <kvplan/$h.hpp>" "${wall[$h]}" "${cpu[$h]}"
    row "  added by <kvplan/$h.hpp>" "$((wall[$h] - wall[empty]))" "$((cpu[$h] - cpu[empty]))"
    row "    of which its $(grep -c '^#include' "$tmp/${h}_std.cpp") standard headers" \
        "$((wall[${h}_std] - wall[empty]))" "$((cpu[${h}_std] - cpu[empty]))"
    row "    of which kvplan's own code" "$((wall[$h] - wall[${h}_std]))" \
        "$((cpu[$h] - cpu[${h}_std]))"
done
