"""kvplan from Python, binding overhead included: one call from names, and one evaluation of a
prepared deployment.

A kvplan.Deployment is prepared once (as serving code holds one per replica type); each timed
call is `deployment.evaluate(context, concurrency)` and the read of the figures an admission or
autoscaling decision uses (fits, max_concurrency, tpot_seconds), at contexts and concurrencies
that change from call to call so that nothing is served from a cache. CPU time
(time.process_time), best of `repeats` runs of `number` calls each, per call, per deployment; the
worst deployment is the figure. Then kvplan.fit() from names (the model and GPU named by id, read
once and kept, every keyword converted, the deployment built and prepared, one evaluation), the
first read of max_context (a search over the engine's cache, done on read), and an evaluation with
a prompt / output split, which adds the latency estimate. Targets: fit from names under 20 us, a
prepared evaluation under 3 us; LLM-Viewer's whole analysis of one model and GPU (its
analyze(), 49 us as issue 24 measured it, not measured here) is printed beside them.

  usage: PYTHONPATH=build/python python3 bench/python_evaluate.py [number] [repeats]
"""

import sys
import time
import timeit

import kvplan

DEPLOYMENTS = [
    ("llama-3-70b", "h100-sxm", {"tp": 4}),
    ("llama-3.1-8b", "h100-sxm", {}),
    ("gpt-oss-120b", "h100-sxm", {}),
    ("qwen3-235b-a22b", "h200-sxm", {"tp": 8, "kv_dtype": "fp8"}),
    ("deepseek-v3", "h200-sxm", {"tp": 8, "engine": "sglang"}),
    ("gemma-3-27b", "l40s", {"tp": 2, "gpus": 8}),
    ("jamba-1.5-mini", "a100-sxm4-80gb", {"engine": "trtllm"}),
    ("deepseek-v3", "h200-sxm", {"tp": 8, "ep": 8, "dcp": 8}),
    ("llama-3-70b", "h100-sxm", {"tp": 4, "dp": 2}),
    ("llama-3.1-8b", "h100-sxm", {"speculative_method": "eagle", "num_speculative_tokens": 3}),
    ("deepseek-v3", "h200-sxm", {"tp": 8, "speculative_method": "mtp",
                                 "num_speculative_tokens": 1}),
]

# Demands that vary call to call: contexts of 2k to 16k tokens, 1 to 64 sequences.
DEMANDS = [(2000 + 997 * (i % 15), 1 + (i * 7) % 64) for i in range(64)]


def per_call(fn, number, repeats):
    timer = timeit.Timer(fn, timer=time.process_time)
    return min(timer.repeat(repeat=repeats, number=number)) / number


def main():
    number = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    print(f"kvplan {kvplan.__version__}, Python {sys.version.split()[0]}: CPU time per call, "
          f"best of {repeats} x {number} calls")
    worst = 0.0
    for model, gpu, kw in DEPLOYMENTS:
        d = kvplan.Deployment(model, gpu, **kw)
        demands = iter(DEMANDS * (number // len(DEMANDS) + 2) * (repeats + 1))

        def evaluate():
            context, concurrency = next(demands)
            a = d.evaluate(context, concurrency)
            return a.fits, a.max_concurrency, a.tpot_seconds

        t = per_call(evaluate, number, repeats)
        worst = max(worst, t)
        print(f"  evaluate  {model:18s} {gpu:15s} {str(kw):40s} {t * 1e6:6.2f} us")
    print(f"one replica evaluation, the worst deployment: {worst * 1e6:.2f} us")

    d = kvplan.Deployment("llama-3-70b", "h100-sxm", tp=4)
    search = per_call(lambda: d.evaluate(8000, 48).max_context, number // 10, repeats)
    print(f"  evaluate + first read of max_context (llama-3-70b): {search * 1e6:.2f} us")
    splits = iter([(1000 + 97 * (i % 31), 100 + 37 * (i % 17)) for i in range(64)] *
                  (number // 64 + 2) * (repeats + 1))

    def estimate():
        prompt, output = next(splits)
        a = d.evaluate(concurrency=48, prompt_tokens=prompt, output_tokens=output)
        return a.estimate.itl_seconds

    latency = per_call(estimate, number, repeats)
    print(f"  evaluate with the latency estimate (llama-3-70b, prompt / output given): "
          f"{latency * 1e6:.2f} us")
    fits = iter(DEMANDS * (number // len(DEMANDS) + 2) * (repeats + 1))

    def fit():
        context, concurrency = next(fits)
        a = kvplan.fit(model="llama-3-70b", gpu="h100-sxm", tp=4, context=context,
                       concurrency=concurrency)
        return a.fits, a.max_concurrency, a.tpot_seconds

    fit()  # the model and GPU read once, as a serving process would at start
    one_call = per_call(fit, number // 4, repeats)
    headline = per_call(lambda: kvplan.fit(model="llama-3-70b", gpu="h100-sxm", tp=4,
                                           context="8k", concurrency=48).max_concurrency,
                        number // 4, repeats)
    print(f"  kvplan.fit(model=..., gpu=..., tp=4, context, concurrency), names resolved once: "
          f"{one_call * 1e6:.2f} us (the headline call, context='8k': {headline * 1e6:.2f} us)")
    print(f"kvplan.fit from names: {max(one_call, headline) * 1e6:.2f} us (target 20 us); "
          f"a prepared Deployment.evaluate: {worst * 1e6:.2f} us (target 3 us); "
          f"LLM-Viewer's whole analysis: 49 us")


main()
