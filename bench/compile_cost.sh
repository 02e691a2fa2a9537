#!/usr/bin/env bash
# What including kvplan adds to a translation unit: the median time of `g++ -std=c++20 -c` on a TU
# that includes the core (<kvplan/core.hpp>, what serving code includes) and one that includes all
# of the standard-library-only planning (<kvplan/kvplan.hpp>), each against an empty TU and against
# a TU of just the standard headers it pulls in (the part of the cost that is the standard
# library's). Then the JSON import at -O0 and -O2: a TU that includes only <nlohmann/json.hpp>,
# one that includes <kvplan/hf_config.hpp> and loads a model through it, and the one TU of a
# program that defines KVPLAN_HF_CONFIG_IMPLEMENTATION and so compiles the import itself. The TUs
# are compiled in turn, round after round, so load drift hits all alike.
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

printf '#include <nlohmann/json.hpp>\nint main() { return 0; }\n' >"$tmp/nlohmann.cpp"
cat >"$tmp/hf_use.cpp" <<'EOF2'
#include <kvplan/hf_config.hpp>
int main(int argc, char** argv) {
    return argc > 1 ? static_cast<int>(kvplan::load_hf_config(argv[1]).num_layers()) : 0;
}
EOF2
{ printf '#define KVPLAN_HF_CONFIG_IMPLEMENTATION\n'; cat "$tmp/hf_use.cpp"; } >"$tmp/hf_impl.cpp"

ms() {  # "wall cpu" in ms of compiling $1 with flags $2 (cpu: user + sys, steadier when busy)
    /usr/bin/time -f "%e %U %S" -o "$tmp/time" "$cxx" -std=c++20 ${2:-} -I"$include_dir" -c "$1" \
        -o "$tmp/out.o"
    awk '{printf "%d %d\n", $1 * 1000, ($2 + $3) * 1000}' "$tmp/time"
}
median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

tus=(empty core_std core kvplan_std kvplan)
json_tus=(nlohmann hf_use hf_impl)
runs=("${tus[@]}")
for tu in "${json_tus[@]}"; do runs+=("$tu@-O0" "$tu@-O2"); done
for run in "${runs[@]}"; do : >"$tmp/t.$run"; done
for ((i = 0; i < rounds; i++)); do
    for run in "${runs[@]}"; do
        tu=${run%@*}
        flags=""
        [[ $run == *@* ]] && flags=${run#*@}
        ms "$tmp/$tu.cpp" "$flags" >>"$tmp/t.$run"
    done
done
for run in "${runs[@]}"; do
    wall[$run]=$(cut -d' ' -f1 "$tmp/t.$run" | median)
    cpu[$run]=$(cut -d' ' -f2 "$tmp/t.$run" | median)
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

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f x", a / b}'; }
for o in -O0 -O2; do
    row "JSON import, g++ $o" "wall ms" "cpu ms"
    row "  TU including only <nlohmann/json.hpp>" "${wall[nlohmann@$o]}" "${cpu[nlohmann@$o]}"
    row "  TU including <kvplan/hf_config.hpp>, loading" "${wall[hf_use@$o]}" "${cpu[hf_use@$o]}"
    row "    against nlohmann's own include (cpu)" "" "$(ratio "${cpu[hf_use@$o]}" "${cpu[nlohmann@$o]}")"
    row "  the one TU with KVPLAN_HF_CONFIG_IMPLEMENTATION" "${wall[hf_impl@$o]}" "${cpu[hf_impl@$o]}"
done
