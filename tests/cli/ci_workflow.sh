#!/usr/bin/env bash
# Runs the check step of examples/ci/kvplan-check.yml in a scratch repository, as GitHub Actions
# would: a pull request that changes configs under paths with a space and a non-ASCII name, and
# that loosens the policy in the same change. Every changed config must be checked, under the
# base branch's policy. Usage: ci_workflow.sh <kvplan binary> <source dir> <scratch dir>
set -euo pipefail
kvplan_exe=$1 src=$2 scratch=$3

rm -rf "$scratch" && mkdir -p "$scratch/bin" "$scratch/repo" "$scratch/tmp"
ln -s "$kvplan_exe" "$scratch/bin/kvplan"
export PATH="$scratch/bin:$PATH" RUNNER_TEMP="$scratch/tmp"

# The step's script: the block under "run: |" of the step that runs kvplan, de-indented, with
# the base revision GitHub would substitute.
awk '/- name: Check every changed config.json against the policy/ {step = 1; next}
     step && /^      - name:/ {exit}
     step && /^        run: \|/ {body = 1; next}
     body {sub(/^          /, ""); print}' "$src/examples/ci/kvplan-check.yml" \
    | sed 's/\${{ github.event.pull_request.base.sha }}/$BASE/' > "$scratch/step.sh"
grep -q 'kvplan "${args\[@\]}"' "$scratch/step.sh" || { echo "no kvplan step found"; exit 1; }

cd "$scratch/repo"
git init -q
git config user.email ci@example.com
git config user.name ci
base_config="$src/examples/ci/pr/base/our-70b/config.json"
head_config="$src/examples/ci/pr/our-70b/config.json"  # num_key_value_heads 8 -> 16
mkdir -p serving "our 70b" "modèle" plain
cp "$src/examples/ci/policy.json" serving/policy.json
for d in "our 70b" "modèle" plain; do cp "$base_config" "$d/config.json"; done
git add -A && git commit -qm base
BASE=$(git rev-parse HEAD)
export BASE

# The pull request: every config changed, one of them with twice the KV heads (which fails the
# base policy), and the policy loosened to a requirement every config meets.
for d in "our 70b" "modèle" plain; do cp "$head_config" "$d/config.json"; done
cat > serving/policy.json <<'POLICY'
{"schema": "kvplan-policy/1", "replica": {"gpu": "h100-sxm", "tp": 4},
 "requirements": [{"name": "loose", "kind": "max_kv_bytes_per_token", "GiB": 1}]}
POLICY
git add -A && git commit -qm head

status=0
bash -e ../step.sh > ../log.txt 2>&1 || status=$?
# Judged by the base policy: the doubled KV heads fail it (exit 1); the pull request's loose
# policy would have passed them all.
[ "$status" = 1 ] || { cat ../log.txt; echo "expected exit 1, got $status"; exit 1; }
# Every changed config was checked: three JUnit reports, naming each path whole.
n=$(ls kvplan-*.xml | wc -l)
[ "$n" = 3 ] || { echo "expected 3 JUnit reports, found $n"; exit 1; }
for d in "our 70b" "modèle" plain; do
    grep -l -F "kvplan check ./$d/config.json" kvplan-*.xml > /dev/null ||
        { echo "no report for $d"; exit 1; }
done
echo "ok: 3 configs checked under the base policy"
