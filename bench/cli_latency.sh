#!/usr/bin/env bash
# A whole CLI call, process start to exit: `kvplan fit` on a bundled config (import the model,
# load the GPU spec, evaluate, report), timed by hyperfine without a shell in between, side by side
# with `python3 -c pass` (starting an interpreter, the floor of any Python tool) and /bin/true (the
# cost of starting any process on this machine at this moment). Runs are interleaved by hyperfine
# command by command, so compare ratios from one run of this script.
#   usage: bench/cli_latency.sh <path to the kvplan binary> [runs] [python]
#     runs default 300; python defaults to /usr/bin/python3 (Debian's), else the python3 on PATH
set -euo pipefail
kvplan=${1:?usage: bench/cli_latency.sh <path to the kvplan binary> [runs] [python]}
runs=${2:-300}
python=${3:-}
if [[ -z $python ]]; then
  if [[ -x /usr/bin/python3 ]]; then python=/usr/bin/python3; else python=$(command -v python3); fi
fi
command -v hyperfine >/dev/null || { echo "needs hyperfine" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(fit --model llama-3-70b --gpu h100-sxm --gpus 4 --tp 4 --context 8k --concurrency 48)
"$kvplan" "${args[@]}" >/dev/null  # fails loudly if the command does not run
hyperfine -N --warmup 20 --runs "$runs" --export-json "$tmp/t.json" \
    "$kvplan ${args[*]}" "$python -c pass" /bin/true >/dev/null
"$python" - "$tmp/t.json" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))["results"]
def name(r):
    return "kvplan fit" if "kvplan" in r["command"] else r["command"]
for r in results:
    cpu = (r["user"] + r["system"]) * 1e3
    print(f"{name(r):24s} {len(r['times'])} runs: median {r['median'] * 1e3:6.2f} ms wall, "
          f"min {min(r['times']) * 1e3:6.2f} ms, mean CPU (user + sys) {cpu:5.2f} ms")
kv, py = results[0]["median"], results[1]["median"]
print(f"python3 -c pass / kvplan fit (medians): {py / kv:.1f} x")
PY
