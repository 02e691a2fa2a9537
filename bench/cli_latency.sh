#!/usr/bin/env bash
# A whole CLI call, process start to exit: `kvplan fit` on a bundled config (import the model,
# load the GPU specs, budget, report), timed by hyperfine without a shell in between, beside
# /bin/true (the cost of starting any process on this machine at this moment).
#   usage: bench/cli_latency.sh <path to the kvplan binary> [runs]     (runs default 300)
set -euo pipefail
kvplan=${1:?usage: bench/cli_latency.sh <path to the kvplan binary> [runs]}
runs=${2:-300}
command -v hyperfine >/dev/null || { echo "needs hyperfine" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(fit --model llama-3-70b --gpu h100-sxm --gpus 4 --tp 4 --context 8k --concurrency 48)
"$kvplan" "${args[@]}" >/dev/null  # fails loudly if the command does not run
hyperfine -N --warmup 20 --runs "$runs" --export-json "$tmp/t.json" \
    "$kvplan ${args[*]}" /bin/true >/dev/null
python3 - "$tmp/t.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    name = "kvplan fit" if "kvplan" in r["command"] else r["command"]
    cpu = (r["user"] + r["system"]) * 1e3
    print(f"{name:12s} {len(r['times'])} runs: median {r['median'] * 1e3:6.2f} ms wall, "
          f"min {min(r['times']) * 1e3:6.2f} ms, mean CPU (user + sys) {cpu:5.2f} ms")
PY
