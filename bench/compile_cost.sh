#!/usr/bin/env bash
# What including the core umbrella header adds to a translation unit: the median wall time of
# `g++ -std=c++20 -c` on a TU that includes <kvplan/kvplan.hpp>, against an empty TU and against a
# TU of just the standard headers the core includes (the part of the cost that is the standard
# library's). The three are compiled in turn, round after round, so load drift hits all alike.
#   usage: bench/compile_cost.sh [rounds] [compiler]     (defaults: 15, g++)
set -euo pipefail
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

ms() {  # wall time in ms of compiling $1
    local t0 t1
    t0=$(date +%s%N)
    "$cxx" -std=c++20 -I"$include_dir" -c "$1" -o "$tmp/out.o"
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000000))
}
median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

: >"$tmp/t.empty" && : >"$tmp/t.std" && : >"$tmp/t.umbrella"
for ((i = 0; i < rounds; i++)); do
    for tu in empty std umbrella; do ms "$tmp/$tu.cpp" >>"$tmp/t.$tu"; done
done
empty=$(median <"$tmp/t.empty")
std=$(median <"$tmp/t.std")
umbrella=$(median <"$tmp/t.umbrella")
echo "compiler: $("$cxx" --version | head -1); median of ${rounds} rounds, wall time"
echo "empty TU:                               ${empty} ms"
echo "TU of the core's $(grep -c '^#include' "$tmp/std.cpp") standard headers:     ${std} ms"
echo "TU including <kvplan/kvplan.hpp>:       ${umbrella} ms"
echo "added by <kvplan/kvplan.hpp>:           $((umbrella - empty)) ms"
echo "  of which the standard library:        $((std - empty)) ms"
echo "  of which kvplan's own code:           $((umbrella - std)) ms"
