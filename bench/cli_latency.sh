#!/usr/bin/env bash
# A whole CLI call, process start to exit: `kvplan fit` on a bundled config (import, budget,
# report), timed by hyperfine without a shell in between.
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
    "$kvplan ${args[*]}" >/dev/null
python3 - "$tmp/t.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
t = sorted(r["times"])
print(f"kvplan fit, {len(t)} runs: median {r['median'] * 1e3:.2f} ms, "
      f"min {t[0] * 1e3:.2f} ms, p90 {t[int(0.9 * (len(t) - 1))] * 1e3:.2f} ms")
PY
