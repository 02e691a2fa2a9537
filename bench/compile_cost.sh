#!/usr/bin/env bash
# What including the core umbrella header adds to a translation unit: the median wall time of
# `g++ -std=c++20 -c` on a TU that includes <kvplan/kvplan.hpp>, against an empty TU and against a
# TU of just the standard headers the core includes (the part of the cost that is the standard
# library's). The three are compiled in turn, round after round, so load drift hits all alike.
#   usage: bench/compile_cost.sh [rounds] [compiler]     (defaults: 15, g++)
set -euo pipefail
declare -A wall cpu
rounds=${1:-15}
cxx=${2:-g++}
include_dir="$(cd "$(dirname "$0")/../include" && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

printf 'int main() { return 0; }\n' >"$tmp/empty.cpp"
printf '#include <kvplan/kvplan.hpp>\nint main() { return 0; }\n' >"$tmp/umbrella.cpp"
"$cxx" -std=c++20 -I"$include_dir" -MM "$tmp/umbrella.cpp" | tr ' \\' '\n\n' | grep '\.hpp$' |
    xargs grep -h '^#include <' | sort -u >"$tmp/std.cpp"
printf 'int main() { return 0; }\n' >>"$tmp/std.cpp"

ms() {  # "wall cpu" in ms of compiling $1 (cpu: user + sys, steadier on a busy machine)
    /usr/bin/time -f "%e %U %S" -o "$tmp/time" "$cxx" -std=c++20 -I"$include_dir" -c "$1" \
        -o "$tmp/out.o"
    awk '{printf "%d %d\n", $1 * 1000, ($2 + $3) * 1000}' "$tmp/time"
}
median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

for tu in empty std umbrella; do : >"$tmp/t.$tu"; done
for ((i = 0; i < rounds; i++)); do
    for tu in empty std umbrella; do ms "$tmp/$tu.cpp" >>"$tmp/t.$tu"; done
done
echo "compiler: $("$cxx" --version | head -1); median of ${rounds} rounds"
printf '%-40s %10s %10s\n' "" "wall ms" "cpu ms"
for tu in empty std umbrella; do
    wall[$tu]=$(cut -d' ' -f1 "$tmp/t.$tu" | median)
    cpu[$tu]=$(cut -d' ' -f2 "$tmp/t.$tu" | median)
done
row() { printf '%-40s %10s %10s\n' "$1" "$2" "$3"; }
row "empty TU" "${wall[empty]}" "${cpu[empty]}"
row "TU of the core's $(grep -c '^#include' "$tmp/std.cpp") standard headers" "${wall[std]}" "${cpu[std]}"
row "TU including <kvplan/kvplan.hpp>" "${wall[umbrella]}" "${cpu[umbrella]}"
row "added by <kvplan/kvplan.hpp>" "$((wall[umbrella] - wall[empty]))" \
    "$((cpu[umbrella] - cpu[empty]))"
row "  of which the standard library" "$((wall[std] - wall[empty]))" "$((cpu[std] - cpu[empty]))"
row "  of which kvplan's own code" "$((wall[umbrella] - wall[std]))" \
    "$((cpu[umbrella] - cpu[std]))"
