"""kvplan.size(), fit(), roofline(), plan() and disagg(): one library call each, from typed
arguments, giving the figures the command line prints for the same inputs; and the library's
errors as Python's exception types."""

import csv
import json
import math
import pathlib

import pytest

import kvplan
from conftest import BUNDLED_MODELS, SOURCE_DIR, cli, cli_json

SIZE_KEYS = ("kv_bytes_per_token", "kv_bytes_per_token_per_gpu", "kv_bytes_per_sequence",
             "kv_bytes_per_sequence_per_gpu", "kv_bytes_total", "kv_bytes_total_per_gpu")


@pytest.mark.parametrize("model", BUNDLED_MODELS)
def test_size_gives_the_cli_figures_on_every_bundled_model(model):
    for args, kwargs in [
        (["--context", "8192"], {"context": 8192}),
        (["--context", "32k", "--concurrency", "16", "--kv-dtype", "fp8", "--pp", "2"],
         {"context": "32k", "concurrency": 16, "kv_dtype": "fp8", "pp": 2}),
    ]:
        expected = cli_json("size", "--model", model, *args)
        s = kvplan.size(model, **kwargs)
        for key in SIZE_KEYS:
            assert getattr(s, key) == expected[key], (model, key)


def test_size_is_the_formula():
    # Llama-3-70B: 80 layers x 8 KV heads x 128 dims x 2 (K and V) x 2 bytes (bf16) = 327,680 B
    # a token; 8,192 tokens = 2,684,354,560 B; tp 4 splits the 8 heads two a GPU: 81,920 B.
    s = kvplan.size("llama-3-70b", context=8192, tp=4, concurrency=3)
    assert s.kv_bytes_per_token == 80 * 8 * 128 * 2 * 2 == 327_680
    assert s.kv_bytes_per_sequence == 327_680 * 8192 == 2_684_354_560
    assert s.kv_bytes_per_token_per_gpu == 327_680 // 4
    assert s.kv_bytes_total == 3 * 2_684_354_560
    assert s.model.id == "llama-3-70b" and s.context_tokens == 8192
    # A config by path reads as the bundled id does.
    config = SOURCE_DIR / "configs" / "models" / "qwen3-8b.json"
    assert (kvplan.size(pathlib.Path(config), context=4096).kv_bytes_per_sequence ==
            kvplan.size("qwen3-8b", context=4096).kv_bytes_per_sequence)
    with pytest.raises(kvplan.InvalidLayoutError):
        kvplan.size("llama-3-70b", tp=3)


def test_fit_from_names_is_the_headline():
    # Llama-3-70B on 4 x H100 SXM at 8,000 tokens: 61 sequences (README), whether the model and
    # GPU are named or given as objects.
    a = kvplan.fit(model="llama-3-70b", gpu="h100-sxm", tp=4, context="8k", concurrency=48)
    assert a.fits and a.max_concurrency == 61
    assert kvplan.fit(kvplan.Model("llama-3-70b"), kvplan.Gpu("h100"), tp=4, context=8000,
                      concurrency=48).max_concurrency == 61
    # The answer reads as a Deployment's: its longest contexts searched on first read.
    d = kvplan.Deployment("llama-3-70b", "h100-sxm", tp=4)
    assert a.max_context == d.evaluate(8000, 48).max_context
    assert a.serve_command().startswith("vllm serve ")


def test_kv_dtype_keyword_takes_the_engines_names():
    # Llama-3-8B: 32 layers x 8 KV heads x (128 e4m3 values + one fp32 scale) x 2 (K and V) =
    # 67,584 B a token under vLLM's fp8_per_token_head and int8_per_token_head
    # (vllm/v1/kv_cache_interface.py, AttentionSpec.page_size_bytes); nvfp4_4over6 keeps NVFP4's
    # 64 + 8 B a head: 32 x 8 x 72 x 2 = 36,864 B.
    for name, per_token in [("fp8_per_token_head", 67_584), ("int8_per_token_head", 67_584),
                            ("nvfp4_4over6", 36_864), ("fp4_e2m1", 36_864)]:
        assert kvplan.size("llama-3-8b", context=8192, kv_dtype=name).kv_bytes_per_token == \
            per_token
    # The printed command names the dtype as the release lists it. v0.19 has no nvfp4 name
    # (vllm/config/cache.py, CacheDType: from v0.20): the engine refuses at start-up, an answer.
    a = kvplan.fit(model="llama-3-8b", gpu="b200", context=8192, kv_dtype="nvfp4")
    assert "--kv-cache-dtype nvfp4" in a.serve_command()
    old = kvplan.fit(model="llama-3-8b", gpu="b200", context=8192, kv_dtype="nvfp4",
                     engine_version="0.19")
    assert not old.starts and old.refusal == "kv_dtype"
    assert old.refusal_reason.endswith("--engine-version 0.20 or later starts")
    with pytest.raises(kvplan.InvalidInputError, match="kv_dtype"):
        old.serve_command()
    # nvfp4 with MLA (DeepSeek-V3's 61 layers): vllm/config/vllm.py refuses it, fp8 starts.
    mla = kvplan.fit(model="deepseek-v3", gpu="b200", tp=8, context=8192, kv_dtype="nvfp4")
    assert mla.refusal == "kv_dtype"
    assert "MLA layers (61 here" in mla.refusal_reason
    assert kvplan.fit(model="deepseek-v3", gpu="b200", tp=8, context=8192,
                      kv_dtype="fp8").starts
    # mxfp4 on an MI355X: CDNA4 holds it, but no vLLM release names it (CacheDType); fp8_e4m3,
    # 32 x 8 x 128 x 2 = 65,536 B a token against 32 x 8 x (64 + 4) x 2 = 34,816 B, starts.
    mx = kvplan.fit(model="llama-3-8b", gpu="mi355x", context=8192, kv_dtype="mxfp4")
    assert not mx.starts and mx.refusal == "kv_dtype"
    assert mx.refusal_reason.startswith(
        "the engine does not start: vLLM has no mxfp4 KV cache in any release")
    assert mx.refusal_reason.endswith(
        "--kv-dtype fp8_e4m3 (64.00 KiB per token against 34.00 KiB) starts")


def test_trtllm_serve_command_comes_with_its_yaml():
    # Llama-3-70B on 4 x H100 with fp8 KV in blocks of 64: trtllm-serve has no flag for either, so
    # its line names extra_llm_api_options.yaml, whose YAML sets KvCacheConfig's dtype "fp8" and
    # tokens_per_block 64 (tensorrt_llm/llmapi/llm_args.py), the text kvplan fit prints.
    a = kvplan.fit("llama-3-70b", "h100-sxm", tp=4, context=8000, kv_dtype="fp8",
                   engine="trtllm", block_size=64)
    assert a.serve_command().endswith(" --extra_llm_api_options extra_llm_api_options.yaml")
    assert a.extra_llm_api_options() == "{kv_cache_config: {dtype: fp8, tokens_per_block: 64}}"
    _, out, _ = cli("fit", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--tp", "4",
                    "--context", "8000", "--kv-dtype", "fp8", "--engine", "trtllm",
                    "--block-size", "64")
    assert ("TensorRT-LLM extra_llm_api_options.yaml (the file --extra_llm_api_options names): "
            + a.extra_llm_api_options()) in out
    # bf16 KV ("auto") at the default block: nothing for the YAML, and no file named.
    b = kvplan.fit("llama-3-70b", "h100-sxm", tp=4, context=8000, engine="trtllm")
    assert b.extra_llm_api_options() == ""
    assert "--extra_llm_api_options" not in b.serve_command()
    # vLLM takes every knob as a flag.
    assert kvplan.fit("llama-3-70b", "h100-sxm", tp=4, context=8000).extra_llm_api_options() == ""


def test_roofline_gives_the_cli_point():
    expected = cli_json("roofline", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--tp", "4",
                        "--batch", "8", "--context", "8k")
    b = kvplan.roofline(model="llama-3-70b", gpu="h100-sxm", tp=4, batch=8, context="8k")
    for key in ("decode_step_seconds", "tpot_seconds", "tokens_per_second", "bytes_per_step",
                "flops_per_step", "bound", "all_reduce_seconds"):
        assert getattr(b, key) == expected[key], key


CANDIDATE_KEYS = ("gpu", "gpus", "tp", "pp", "dp", "ep", "dcp", "kv_dtype")
ANSWER_KEYS = ("kv_budget_bytes_per_gpu", "kv_tokens_capacity", "max_concurrency",
               "tpot_seconds")


@pytest.mark.parametrize("args,kwargs", [
    (["--gpu", "h100-sxm,h200-sxm", "--context", "8k", "--concurrency", "64"],
     {"gpu": ["h100-sxm", "h200-sxm"], "context": "8k", "concurrency": 64}),
    (["--gpu", "h200-sxm", "--context", "32k", "--concurrency", "16", "--rank", "fastest",
      "--kv-dtype", "bf16,fp8"],
     {"gpu": "h200-sxm", "context": "32k", "concurrency": 16, "rank": "fastest",
      "kv_dtype": ["bf16", "fp8"]}),
])
def test_plan_gives_the_cli_candidates(args, kwargs):
    for model in ("llama-3-70b", "qwen3-235b-a22b"):
        expected = cli_json("plan", "--model", model, *args)
        p = kvplan.plan(model, **kwargs)
        assert p.found == expected["found"]
        assert len(p.fits) >= len(expected["candidates"])
        for c, e in zip(p.fits, expected["candidates"]):
            for key in CANDIDATE_KEYS:
                assert getattr(c, key) == e[key], (model, key)
            for key in ANSWER_KEYS:
                assert getattr(c.answer, key) == e[key], (model, key)
        if not p.found:
            assert p.best is None and not expected["candidates"]
            continue
        # A candidate is a deployment to ask again.
        best = p.best.deployment.evaluate(kwargs["context"], kwargs["concurrency"])
        assert best.max_concurrency == expected["candidates"][0]["max_concurrency"]


def test_disagg_gives_the_cli_pools():
    expected = cli_json("disagg", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--rate", "10",
                        "--prompt-tokens", "2000", "--output-tokens", "500", "--ttft-ms", "500",
                        "--tpot-ms", "50")
    p = kvplan.disagg("llama-3-70b", "h100-sxm", rate=10, prompt_tokens=2000, output_tokens=500,
                      ttft_ms=500, tpot_ms=50)
    for key in ("disaggregated_gpus", "aggregated_gpus", "disaggregated_smaller",
                "kv_transfer_bytes_per_gpu", "kv_transfer_seconds"):
        assert getattr(p, key) == expected[key], key
    assert [q.pool for q in p.pools] == [q["pool"] for q in expected["pools"]]
    for q, e in zip(p.pools, expected["pools"]):
        for key in ("gpu", "tp", "pp", "dp", "ep", "dcp", "kv_dtype", "sequences_per_replica",
                    "replicas", "gpus", "ttft_seconds", "tpot_seconds"):
            assert getattr(q, key) == e[key], (q.pool, key)
    with pytest.raises(kvplan.UsageError, match="^latency: expected"):
        kvplan.disagg("llama-3-70b", rate=1, prompt_tokens=1, output_tokens=1, ttft_ms=1,
                      tpot_ms=1, latency="fast")


def test_disagg_takes_the_engine_version_as_the_cli_does():
    # vLLM v0.10 sizes its fraction at 0.9 of the GPU where the newest release takes 0.92
    # (engine/release.hpp): the decode pool holds fewer sequences, as kvplan disagg
    # --engine-version 0.10 says, and the keyword is not ignored.
    args = ("--model", "llama-3-70b", "--gpu", "h100-sxm", "--rate", "10", "--prompt-tokens",
            "2000", "--output-tokens", "500", "--ttft-ms", "500", "--tpot-ms", "50")
    old = cli_json("disagg", *args, "--engine-version", "0.10")
    new = cli_json("disagg", *args)
    assert old["inputs"]["engine_version"] == "0.10"
    kw = dict(rate=10, prompt_tokens=2000, output_tokens=500, ttft_ms=500, tpot_ms=50)
    p_old = kvplan.disagg("llama-3-70b", "h100-sxm", engine_version="0.10", **kw)
    p_new = kvplan.disagg("llama-3-70b", "h100-sxm", **kw)
    for p, e in ((p_old, old), (p_new, new)):
        assert [(q.pool, q.sequences_per_replica, q.replicas) for q in p.pools] == \
            [(q["pool"], q["sequences_per_replica"], q["replicas"]) for q in e["pools"]]
    decode = [q.sequences_per_replica for q in p_old.pools if q.pool == "decode"]
    assert decode and decode != [q.sequences_per_replica for q in p_new.pools if q.pool == "decode"]


AZURE = SOURCE_DIR / "tests" / "data" / "traces" / "azure-conv-2023-first1000.csv"
DISAGG_ARGS = ("--model", "llama-3-70b", "--gpu", "h100-sxm", "--rate", "10", "--ttft-ms", "500",
               "--tpot-ms", "50")
DISAGG_KW = dict(rate=10, ttft_ms=500, tpot_ms=50)


def nearest_rank(values, p):
    """The p-th nearest-rank percentile: sorted(values)[ceil(p / 100 x n) - 1]."""
    ordered = sorted(values)
    return ordered[math.ceil(p / 100 * len(ordered)) - 1]


def pools_of(p):
    return [(q.pool, q.gpu, q.tp, q.sequences_per_replica, q.replicas, q.gpus) for q in p.pools]


def cli_pools(e):
    return [(q["pool"], q["gpu"], q["tp"], q["sequences_per_replica"], q["replicas"], q["gpus"])
            for q in e["pools"]]


def test_disagg_reads_a_traces_lengths_at_a_percentile_as_the_cli_does():
    # The trace's prompts and outputs, each at its own nearest-rank percentile (lengths_at): the
    # p50 prompt and the p50 output of the 1,000 requests, not one request's pair.
    with open(AZURE) as f:
        rows = list(csv.DictReader(f))
    prompts = [int(r["ContextTokens"]) for r in rows]
    outputs = [int(r["GeneratedTokens"]) for r in rows]
    assert len(rows) == 1000
    for pct, text in ((50, "50"), (95, "95"), ("max", "max")):
        at = max if pct == "max" else (lambda v, p=pct: nearest_rank(v, p))
        expected = cli_json("disagg", *DISAGG_ARGS, "--trace", str(AZURE), "--percentile", text)
        p = kvplan.disagg("llama-3-70b", "h100-sxm", trace=AZURE, percentile=pct, **DISAGG_KW)
        assert (p.prompt_tokens, p.output_tokens) == (at(prompts), at(outputs)), pct
        assert (p.prompt_tokens, p.output_tokens) == (
            expected["inputs"]["prompt_tokens"], expected["inputs"]["output_tokens"])
        assert p.trace_requests == 1000
        assert pools_of(p) == cli_pools(expected), pct
        assert p.kv_transfer_bytes_per_gpu == expected["kv_transfer_bytes_per_gpu"]
    # The default is p95, as --percentile's; the numbers given read no trace.
    assert kvplan.disagg("llama-3-70b", "h100-sxm", trace=AZURE, **DISAGG_KW).prompt_tokens == \
        nearest_rank(prompts, 95)
    plain = kvplan.disagg("llama-3-70b", "h100-sxm", prompt_tokens=2000, output_tokens=500,
                          **DISAGG_KW)
    assert (plain.prompt_tokens, plain.output_tokens, plain.trace_requests) == (2000, 500, None)
    # Refused as the flags are: both sources, a percentile or a unit without a trace, a
    # percentile the library does not spell.
    with pytest.raises(kvplan.UsageError, match="^trace: expected a trace or prompt_tokens"):
        kvplan.disagg("llama-3-70b", "h100-sxm", trace=AZURE, prompt_tokens=1, **DISAGG_KW)
    with pytest.raises(kvplan.UsageError, match="^percentile: expected trace as well"):
        kvplan.disagg("llama-3-70b", "h100-sxm", prompt_tokens=1, output_tokens=1, percentile=50,
                      **DISAGG_KW)
    with pytest.raises(kvplan.UsageError, match="^time_unit: expected trace as well"):
        kvplan.disagg("llama-3-70b", "h100-sxm", prompt_tokens=1, output_tokens=1,
                      time_unit="ms", **DISAGG_KW)
    with pytest.raises(kvplan.UsageError, match="^percentile: expected 50, 95, 99 or 'max'"):
        kvplan.disagg("llama-3-70b", "h100-sxm", trace=AZURE, percentile=90, **DISAGG_KW)
    with pytest.raises(kvplan.UsageError, match="^prompt_tokens: expected prompt_tokens and"):
        kvplan.disagg("llama-3-70b", "h100-sxm", **DISAGG_KW)


def test_disagg_moves_the_kv_over_the_link_the_cli_names():
    args = (*DISAGG_ARGS, "--prompt-tokens", "2000", "--output-tokens", "500")
    kw = dict(prompt_tokens=2000, output_tokens=500, **DISAGG_KW)
    ndr = kvplan.disagg("llama-3-70b", "h100-sxm", **kw)
    # The same bytes a decode GPU pulls, over 25 GB/s (25 x 10^9 B/s) instead of NDR's 50.
    slow = kvplan.disagg("llama-3-70b", "h100-sxm", link="25GB/s", **kw)
    expected = cli_json("disagg", *args, "--link", "25GB/s")
    assert slow.kv_transfer_bytes_per_gpu == ndr.kv_transfer_bytes_per_gpu
    assert slow.kv_transfer_seconds == pytest.approx(slow.kv_transfer_bytes_per_gpu / 25e9)
    assert ndr.kv_transfer_seconds == pytest.approx(ndr.kv_transfer_bytes_per_gpu / 50e9)
    assert slow.kv_transfer_seconds == expected["kv_transfer_seconds"]
    assert (slow.link, expected["inputs"]["link"]) == ("the given link", "the given link")
    assert pools_of(slow) == cli_pools(expected)
    # node: the H100 SXM spec's node-to-node figure, 50 GB/s a GPU (one ConnectX-7 each).
    node = kvplan.disagg("llama-3-70b", "h100-sxm", link="node", **kw)
    assert node.kv_transfer_seconds == pytest.approx(node.kv_transfer_bytes_per_gpu / 50e9)
    assert node.link == cli_json("disagg", *args, "--link", "node")["inputs"]["link"]
    # The H100 PCIe spec states none: the library's refusal names the field; the CLI's usage
    # error names --link before the same words.
    with pytest.raises(kvplan.InvalidInputError, match="node.GB_per_s_per_direction"):
        kvplan.disagg("llama-3-70b", "h100-pcie", link="node", **kw)
    code, _, err = cli("disagg", *[a if a != "h100-sxm" else "h100-pcie" for a in args],
                       "--link", "node", check=False)
    assert code == 2 and "--link: GPU 'h100-pcie': node.GB_per_s_per_direction" in err
    with pytest.raises(kvplan.UsageError, match="^link: expected ib-ndr, ib-hdr, node or"):
        kvplan.disagg("llama-3-70b", "h100-sxm", link="5", **kw)


def test_disagg_takes_the_experts_format_and_refuses_a_drafter():
    # Qwen3-30B-A3B's routed experts in fp8 where the rest stay bf16: the pools the CLI's
    # --expert-dtype gives, and not the bf16 checkpoint's.
    args = ("--model", "qwen3-30b-a3b", "--gpu", "h100-sxm", "--rate", "20", "--prompt-tokens",
            "2000", "--output-tokens", "500", "--ttft-ms", "500", "--tpot-ms", "30",
            "--max-gpus", "2")
    kw = dict(rate=20, prompt_tokens=2000, output_tokens=500, ttft_ms=500, tpot_ms=30, max_gpus=2)
    fp8 = kvplan.disagg("qwen3-30b-a3b", "h100-sxm", expert_dtype="fp8", **kw)
    plain = kvplan.disagg("qwen3-30b-a3b", "h100-sxm", **kw)
    assert pools_of(fp8) == cli_pools(cli_json("disagg", *args, "--expert-dtype", "fp8"))
    assert pools_of(plain) == cli_pools(cli_json("disagg", *args))
    assert pools_of(fp8) != pools_of(plain)
    # A drafter: plan_disaggregated's refusal, the flag named by the CLI (exit 2).
    with pytest.raises(kvplan.InvalidInputError,
                       match="speculation: expected none \\(the pools are sized without a drafter"):
        kvplan.disagg("llama-3-70b", "h100-sxm", prompt_tokens=2000, output_tokens=500,
                      speculative_method="eagle", num_speculative_tokens=3, **DISAGG_KW)
    code, _, err = cli("disagg", *DISAGG_ARGS, "--prompt-tokens", "2000", "--output-tokens", "500",
                       "--speculative-method", "eagle", "--num-speculative-tokens", "3",
                       check=False)
    assert code == 2 and err.startswith("kvplan: error: --speculative-method: expected no "
                                        "speculative decoding (the pools are sized without")


def test_fleet_and_trace_take_the_gpus_deployed_as_the_cli_does():
    # tests/plan/test_plan_fleet.cpp's replica: Llama-3.1-70B at tp 4 on H100 SXM, 20 requests/s
    # of 2,000 + 500 tokens, batch 86 and a stay of 25.230 s, 6 replicas. 16 GPUs are 4 replicas,
    # serving 4 x 86 / 25.230 = 13.635 requests/s: short.
    kw = dict(tp=4, rate=20, tpot_ms=50, ttft_ms=1000, prompt_tokens=2000, output_tokens=500)
    args = ("--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "4", "--rate", "20",
            "--tpot-ms", "50", "--ttft-ms", "1000", "--prompt-tokens", "2000",
            "--output-tokens", "500")
    f = kvplan.fleet("llama-3.1-70b", "h100-sxm", gpus=16, **kw)
    assert (f.batch, f.replicas, f.gpus_given, f.replicas_given) == (86, 6, 16, 4)
    assert f.given_serves is False
    assert f.rate_given_serves == pytest.approx(13.635, rel=1e-4)
    expected = cli_json("fleet", *args, "--gpus", "16")
    for key in ("gpus_given", "replicas_given", "rate_given_serves"):
        assert getattr(f, key) == expected[key], key
    assert expected["given_serves_rate"] is False
    six = kvplan.fleet("llama-3.1-70b", "h100-sxm", gpus=24, **kw)
    assert (six.replicas_given, six.given_serves) == (6, True)
    assert kvplan.fleet("llama-3.1-70b", "h100-sxm", **kw).gpus_given is None
    with pytest.raises(kvplan.InvalidLayoutError, match="gpus: expected a multiple"):
        kvplan.fleet("llama-3.1-70b", "h100-sxm", gpus=6, **kw)
    # trace: the Azure trace's replay peaks at 10,019,143,680 B a GPU on Llama-3-70B at tp 4 (its
    # blocks in flight at once); with 4 GiB = 4,294,967,296 B of KV a GPU the peak needs
    # ceil(10,019,143,680 / 4,294,967,296) = ceil(2.33) = 3 replicas, arrivals split evenly: 12
    # GPUs (3 replicas of 4) hold it, 8 do not.
    kw = dict(tp=4, kv_memory="4GiB")
    t = kvplan.trace(AZURE, "llama-3-70b", **kw)
    assert t.concurrency.peak_kv_bytes == 10_019_143_680
    assert t.on_replica.replicas_for_peak == 3 == math.ceil(10_019_143_680 / 2**32)
    assert t.replicas_given is None and t.given_holds_peak is None
    for gpus, replicas, holds in ((8, 2, False), (12, 3, True)):
        a = kvplan.trace(AZURE, "llama-3-70b", gpus=gpus, **kw)
        assert (a.replicas_given, a.given_holds_peak) == (replicas, holds)
        expected = cli_json("trace", str(AZURE), "--model", "llama-3-70b", "--tp", "4",
                            "--kv-memory", "4GiB", "--gpus", str(gpus))
        assert (expected["replicas_given"], expected["given_holds_peak"]) == (replicas, holds)
    with pytest.raises(kvplan.UsageError, match="^gpus: expected a gpu or kv_memory"):
        kvplan.trace(AZURE, "llama-3-70b", tp=4, gpus=4)
    # Speculative decoding: the library's refusal, as the CLI's after its flag (exit 2).
    spec = dict(speculative_method="ngram", num_speculative_tokens=3)
    with pytest.raises(kvplan.InvalidInputError,
                       match="speculation: expected none \\(the fleet is sized without a drafter"):
        kvplan.fleet("llama-3.1-70b", "h100-sxm", tp=4, rate=20, tpot_ms=50, prompt_tokens=2000,
                     output_tokens=500, **spec)
    with pytest.raises(kvplan.InvalidInputError,
                       match="speculation: expected none \\(the replay holds each request's KV"):
        kvplan.trace(AZURE, "llama-3-70b", "h100-sxm", tp=4, **spec)
    code, _, err = cli("fleet", *args, "--speculative-method", "ngram",
                       "--num-speculative-tokens", "3", check=False)
    assert code == 2 and "--speculative-method: expected no speculative decoding (the fleet" in err


def test_diff_models_speculative_decoding_as_the_cli_does():
    # An EAGLE head is one decoder layer of the model's shape, its KV in the same pool
    # (plan/speculation.hpp): each revision's replica holds it, as fit's does.
    kw = dict(context="8k", concurrency=8, speculative_method="eagle", num_speculative_tokens=3)
    d = kvplan.diff("llama-3-8b", "llama-3-8b", "h100-sxm", **kw)
    fit = kvplan.fit("llama-3-8b", "h100-sxm", **kw)
    plain = kvplan.fit("llama-3-8b", "h100-sxm", context="8k", concurrency=8)
    assert d.new_answer.max_concurrency == fit.max_concurrency < plain.max_concurrency
    assert d.new_answer.kv_budget_bytes_per_gpu == fit.kv_budget_bytes_per_gpu
    expected = cli_json("diff", "llama-3-8b", "llama-3-8b", "--gpu", "h100-sxm", "--context",
                        "8k", "--concurrency", "8", "--speculative-method", "eagle",
                        "--num-speculative-tokens", "3")
    rows = {r["figure"]: r for r in expected["effects"]}
    assert rows["max_concurrency"]["new"] == fit.max_concurrency
    # Without a GPU the budget is not sized: refused as --speculative-method is.
    with pytest.raises(kvplan.UsageError, match="^speculative_method: expected a gpu as well"):
        kvplan.diff("llama-3-8b", "llama-3-8b", speculative_method="eagle",
                    num_speculative_tokens=3)


def test_library_errors_raise_their_python_types():
    # Each by the library's exception type, with the library's message.
    with pytest.raises(kvplan.InvalidInputError, match="found 'llama-3-7b'; did you mean") as e:
        kvplan.fit(model="llama-3-7b", gpu="h100")
    assert e.value.exit_code == 3 and isinstance(e.value, ValueError)
    with pytest.raises(kvplan.InvalidLayoutError, match="tp"):
        kvplan.fit(model="llama-3-70b", gpu="h100", tp=3)
    with pytest.raises(kvplan.SizeOverflowError):
        kvplan.fit(model="llama-3-8b", gpu="h100", context=2**63, concurrency=2**62)
    with pytest.raises(kvplan.InvalidInputError, match="nonexistent"):
        kvplan.size(model="/nonexistent/config.json")
    # Arguments the module refuses before the library sees them.
    with pytest.raises(kvplan.UsageError, match="^context: expected a token count") as e:
        kvplan.fit(model="llama-3-8b", gpu="h100", context="-5")
    assert e.value.exit_code == 2
    with pytest.raises(kvplan.UsageError, match="^plan: |^rank: expected"):
        kvplan.plan("llama-3-8b", rank="cheapest")
    with pytest.raises(TypeError, match="tp: expected an int"):
        kvplan.fit(model="llama-3-8b", gpu="h100", tp=True)
    with pytest.raises(TypeError, match="context: expected an int or a token count"):
        kvplan.fit(model="llama-3-8b", gpu="h100", context={"tokens": 8})
    with pytest.raises(TypeError):
        kvplan.fit(model="llama-3-8b", gpu="h100", conccurency=4)


def test_the_module_binds_the_library_alone():
    # No command line in the module: no flag runner, no JSON.
    for name in ("run", "describe"):
        assert not hasattr(kvplan._kvplan, name)
    assert kvplan.models() == kvplan.Model.bundled() and "llama-3-70b" in kvplan.models()
    assert kvplan.gpus() == kvplan.Gpu.bundled() and "h100-sxm" in kvplan.gpus()


def test_fleet_gives_the_cli_fleet():
    # kvplan::plan_fleet from typed arguments: the replicas, the batch and what binds it.
    for extra, kwargs in [
        ([], {}),
        (["--ttft-ms", "300", "--prompt-tokens", "50:1000,95:4000"],
         {"ttft_ms": 300, "prompt_tokens": "50:1000,95:4000"}),
    ]:
        args = ["--model", "llama-3-70b", "--gpu", "h100-sxm", "--tp", "4", "--rate", "20",
                "--tpot-ms", "30", "--output-tokens", "500"]
        if "--prompt-tokens" not in extra:
            args += ["--prompt-tokens", "2000"]
        expected = cli_json("fleet", *args, *extra)
        f = kvplan.fleet("llama-3-70b", "h100-sxm", tp=4, rate=20, tpot_ms=30,
                         **{"prompt_tokens": 2000, "output_tokens": 500, **kwargs})
        for key in ("replicas", "gpus", "batch", "batch_tpot", "binding", "in_flight"):
            assert getattr(f, key) == expected[key], key
        assert f.tpot_seconds == expected["tpot_at_batch"]
        assert f.kv_budget_bytes_per_gpu == expected["kv_budget_per_gpu"]
    with pytest.raises(kvplan.UsageError, match="^size_by: expected"):
        kvplan.fleet("llama-3-70b", "h100-sxm", rate=1, tpot_ms=30, prompt_tokens=1,
                     output_tokens=1, size_by="guess")


def test_compare_is_the_formula():
    # Llama-3-70B on 4 x H100 SXM at 8,000 tokens, two KV dtypes. A token: 80 layers x 8 KV heads
    # x 128 dims x 2 (K and V) x 2 bytes (bf16) = 327,680 B, 163,840 B at fp8's 1 byte; tp 4 holds
    # two heads a GPU: a quarter. 8,000 tokens fill 500 of vLLM's 16-token blocks exactly.
    bf16, fp8 = kvplan.compare("llama-3-70b", "h100-sxm", tp=4, context="8k",
                               kv_dtype=["bf16", "fp8"])
    assert [r.size.kv_bytes_per_token for r in (bf16, fp8)] == [327_680, 163_840]
    assert [r.size.kv_bytes_per_token_per_gpu for r in (bf16, fp8)] == [81_920, 40_960]
    assert bf16.size.kv_bytes_per_sequence == 327_680 * 8000
    # vLLM's "fp8" is e4m3.
    assert (bf16.model.id, bf16.gpu.id, fp8.size.kv_dtype) == ("llama-3-70b", "h100-sxm",
                                                               "fp8_e4m3")
    for row, per_token in ((bf16, 81_920), (fp8, 40_960)):
        a = row.answer
        assert a.kv_bytes_per_sequence_per_gpu == 500 * 16 * per_token
        # vLLM's blocks: the budget in blocks of 16 tokens; past the null block it holds back,
        # each sequence takes 500 of them.
        blocks = a.kv_budget_bytes_per_gpu // (16 * per_token)
        assert a.num_gpu_blocks == blocks
        assert a.max_concurrency == (blocks - 1) // 500
    # The KV dtype leaves the weights and the reserve, so the budget, as they were; fp8 holds
    # twice the blocks, and bf16's is the README's 61.
    assert bf16.answer.kv_budget_bytes_per_gpu == fp8.answer.kv_budget_bytes_per_gpu
    assert bf16.answer.max_concurrency == 61
    # Without a GPU, sizes alone.
    (sized,) = kvplan.compare("llama-3-70b", context=8000)
    assert sized.gpu is None and sized.answer is None
    assert sized.size.kv_bytes_per_sequence == 327_680 * 8000
    with pytest.raises(kvplan.UsageError, match="^kv_dtype: expected at least one value"):
        kvplan.compare("llama-3-70b", kv_dtype=[])
    with pytest.raises(kvplan.InvalidLayoutError):
        kvplan.compare(["llama-3-8b", "llama-3-70b"], "h100-sxm", tp=3)


def test_compare_gives_the_cli_rows():
    args = ["--model", "llama-3-8b,qwen3-8b", "--gpu", "h100-sxm,l40s", "--kv-dtype", "bf16,fp8",
            "--context", "16k", "--concurrency", "8"]
    expected = cli_json("compare", *args)["rows"]
    rows = kvplan.compare(["llama-3-8b", "qwen3-8b"], ["h100-sxm", "l40s"],
                          kv_dtype=["bf16", "fp8"], context="16k", concurrency=8)
    assert len(rows) == len(expected) == 8
    for row, e in zip(rows, expected):
        assert (row.model.id, row.gpu.id, row.size.kv_dtype) == (e["model"], e["gpu"],
                                                                 e["kv_dtype"])
        for key in ("kv_bytes_per_token", "kv_bytes_per_token_per_gpu", "kv_bytes_per_sequence"):
            assert getattr(row.size, key) == e[key], key
        a = row.answer
        # On a GPU the row's weights are the engine's once loaded, as fit's are.
        assert a.weight_bytes_per_gpu == e["weight_bytes_per_gpu"]
        assert a.kv_budget_bytes_per_gpu == e["kv_budget_bytes_per_gpu"]
        assert a.total_max_concurrency == e["max_concurrency"]
        assert a.max_context == e["max_context"]
        assert a.fits == e["fits"]
        assert a.tpot_seconds == pytest.approx(e["tpot_seconds"], rel=1e-12)


TRACE = "arrival,prompt_tokens,output_tokens\n0,100,20\n1,200,40\n2,1000,100\n3,50,10\n"


def test_trace_is_the_formula(tmp_path):
    # Four requests of 120, 240, 1,100 and 60 tokens (prompt + output) on Llama-3-8B: 32 layers
    # x 8 KV heads x 128 dims x 2 (K and V) x 2 bytes = 131,072 B a token.
    path = tmp_path / "trace.csv"
    path.write_text(TRACE)
    t = kvplan.trace(path, "llama-3-8b")
    assert t.requests == 4 and t.block_size == 16
    # Nearest rank of 60, 120, 240, 1,100: p50 the 2nd (ceil(0.5 x 4)), p95 and p99 the 4th.
    total = t.total_tokens
    assert (total.p50, total.p95, total.p99, total.max) == (120, 1100, 1100, 1100)
    assert (t.mean_prompt_tokens, t.mean_output_tokens, t.mean_total_tokens) == (337.5, 42.5, 380)
    assert t.kv.exact.p50 == 120 * 131_072
    # In 16-token blocks: 120 -> 128 tokens, 1,100 -> 69 blocks = 1,104 tokens.
    assert (t.kv.paged.p50, t.kv.paged.max) == (128 * 131_072, 1104 * 131_072)
    # Waste against max_model_len (the model's 8,192 positions) reserved for each request.
    assert t.max_model_len == 8192
    assert t.waste.used_bytes == (120 + 240 + 1100 + 60) * 131_072
    assert t.waste.paged_bytes == (128 + 240 + 1104 + 64) * 131_072
    assert t.waste.contiguous_bytes == 4 * 8192 * 131_072
    # Arrivals 1 s apart: 3 arrivals over 3 s, 1 a second. Each stays ttft 0.5 s + output x
    # 50 ms: 1.5, 2.5, 5.5 and 1 s, in flight over [0, 1.5), [1, 3.5), [2, 7.5), [3, 4); at
    # t = 3 three of them, holding 240 + 1,104 + 64 tokens of blocks.
    c = t.concurrency
    assert c.arrival_span_seconds == 3 and c.rate_per_second == 1
    assert c.mean_time_in_system_seconds == pytest.approx(0.5 + 42.5 * 0.05)
    assert c.littles_law == pytest.approx(2.625)
    assert c.peak_requests == 3
    assert c.peak_kv_bytes == (240 + 1104 + 64) * 131_072
    assert t.on_replica is None and t.smallest is None  # no GPU, no KV memory
    with pytest.raises(kvplan.UsageError, match="^time_unit: expected 's', 'ms' or 'us'"):
        kvplan.trace(path, "llama-3-8b", time_unit="h")
    with pytest.raises(kvplan.InvalidInputError, match="nothing-here.csv"):
        kvplan.trace(tmp_path / "nothing-here.csv", "llama-3-8b")


def test_trace_gives_the_cli_figures():
    path = SOURCE_DIR / "tests" / "data" / "traces" / "azure-conv-2023-first1000.csv"
    expected = cli_json("trace", str(path), "--model", "llama-3-70b", "--gpu", "h100-sxm",
                        "--tp", "4", "--kv-dtype", "fp8", "--ttft-ms", "300", "--tpot-ms", "40")
    t = kvplan.trace(path, "llama-3-70b", "h100-sxm", tp=4, kv_dtype="fp8", ttft_ms=300,
                     tpot_ms=40)
    assert t.requests == expected["requests"]
    assert (t.max_model_len, t.block_size) == (expected["inputs"]["max_model_len"],
                                               expected["inputs"]["block_size"])
    rows = {r["quantity"]: r for r in expected["distribution"]}
    for quantity, p, mean in [("prompt tokens", t.prompt_tokens, t.mean_prompt_tokens),
                              ("generated tokens", t.output_tokens, t.mean_output_tokens),
                              ("total tokens", t.total_tokens, t.mean_total_tokens),
                              ("KV, whole model", t.kv.exact, t.kv.mean_exact),
                              (f"KV in blocks, per GPU (stage {t.busiest_stage})",
                               t.kv_per_gpu.paged, t.kv_per_gpu.mean_paged)]:
        e = rows[quantity]
        assert (p.p50, p.p95, p.p99, p.max) == (e["p50"], e["p95"], e["p99"], e["max"]), quantity
        assert mean == pytest.approx(e["mean"], rel=1e-12), quantity
    assert t.waste.used_bytes == expected["kv_used_per_gpu"]
    assert t.waste.paged_bytes == expected["kv_paged_per_gpu"]
    assert t.waste.contiguous_bytes == expected["kv_contiguous_per_gpu"]
    assert 100 * t.waste.paged_waste_fraction == pytest.approx(expected["paged_waste_fraction"])
    c = t.concurrency
    assert c.arrival_span_seconds == pytest.approx(expected["arrival_span"], rel=1e-12)
    assert c.rate_per_second == pytest.approx(expected["arrival_rate"], rel=1e-12)
    assert c.littles_law == pytest.approx(expected["littles_law_in_flight"], rel=1e-12)
    assert (c.peak_requests, c.p95_requests) == (expected["replay_peak_requests"],
                                                 expected["replay_p95_requests"])
    assert c.peak_kv_bytes == expected["replay_peak_kv_per_gpu"]
    on = t.on_replica
    assert on.kv_budget_bytes_per_gpu == expected["kv_budget_per_gpu"]
    assert on.holds_peak == expected["holds_peak"]
    assert on.replicas_for_peak == expected["replicas_for_peak"]
    smallest = expected["smallest_replica_for_peak"]
    assert (t.smallest.tp, t.smallest.pp) == (smallest["tp"], smallest["pp"])
    assert t.smallest.kv_budget_bytes_per_gpu == smallest["kv_budget_per_gpu_bytes"]


# calibrate, check and diff ------------------------------------------------------------------

LOG = SOURCE_DIR / "tests" / "data" / "logs" / "vllm-v0-llama-3.1-8b-rtx3090-20k.log"
BENCH = SOURCE_DIR / "tests" / "data" / "vllm_bench_serve"
POLICY = SOURCE_DIR / "examples" / "ci" / "policy.json"
OUR_70B = SOURCE_DIR / "examples" / "ci" / "pr" / "our-70b"
BASE_70B = SOURCE_DIR / "examples" / "ci" / "pr" / "base" / "our-70b"


def test_calibrate_from_a_log_is_the_reserve_formula():
    c = kvplan.calibrate(LOG, model="llama-3-8b")
    log = c.log
    assert c.bench is None and c.weight_dtype == "bf16"
    # The log's "total_gpu_memory (23.58GiB)": 23.58 x 2^30 = 25,318,832,209.9 -> 25,318,832,210 B,
    # at its utilization 0.9: ceil(25,318,832,210 x 0.9) = 22,786,948,989 B usable.
    assert log.memory_total_source == "log" and log.utilization_source == "log"
    assert log.memory_total_bytes == round(23.58 * 2**30) == 25_318_832_210
    assert log.gpu_memory_utilization == 0.9
    assert log.usable_bytes == 25_318_832_210 * 9 // 10 == 22_786_948_989
    # The reserve is what the weights and the KV memory leave of it.
    assert log.reserve_bytes == log.usable_bytes - log.weights_bytes - log.available_kv_bytes
    assert log.started and log.consistent and log.kv_shortfall_bytes == 0
    # Llama-3-8B's 8,030,261,248 parameters (its model card) x 2 B (bf16), and vLLM's rotary
    # cos/sin table beside them, 8,192 positions x 128 x 2 B = 2,097,152 B.
    assert log.modelled_weights_bytes == 8_030_261_248 * 2 + 8192 * 128 * 2 == 16_062_619_648
    # V0 charges no CUDA graphs: the modelled reserve is the activation peak alone.
    assert not log.graphs_charged
    assert log.modelled_reserve_bytes == log.modelled_activation_bytes
    # The log's 1,952 blocks reproduced from the measured KV memory.
    assert log.logged_gpu_blocks == log.reproduced_gpu_blocks == 1952
    # The errors are the library's: 100 x (modelled - measured) / measured, measured the base.
    reserve = log.reserve_bytes
    assert log.reserve_error_percent == pytest.approx(
        100 * (log.modelled_reserve_bytes - reserve) / reserve, rel=1e-12)
    assert log.kv_error_percent == pytest.approx(
        100 * (log.modelled_kv_bytes - log.available_kv_bytes) / log.available_kv_bytes, rel=1e-12)


def test_calibrate_gives_the_cli_figures(tmp_path):
    expected = cli_json("calibrate", str(LOG), "--model", "llama-3-8b")
    log = kvplan.calibrate(str(LOG), model="llama-3-8b").log
    for key, value in [("memory_total", log.memory_total_bytes),
                       ("gpu_memory_utilization", log.gpu_memory_utilization),
                       ("usable", log.usable_bytes), ("weights", log.weights_bytes),
                       ("available_kv", log.available_kv_bytes), ("reserve", log.reserve_bytes),
                       ("modelled_weights", log.modelled_weights_bytes),
                       ("modelled_reserve", log.modelled_reserve_bytes),
                       ("modelled_kv", log.modelled_kv_bytes)]:
        assert value == expected[key], key
    # One benchmark: the fractions fitted on its TPOT and TTFT, and the profile written.
    bench = BENCH / "nim-llama-3.3-70b-fp8-2xh100-5000-500-c25.json"
    args = ["--model", "llama-3-70b", "--gpu", "h100-sxm", "--tp", "2", "--weight-dtype", "fp8",
            "--kv-dtype", "fp8"]
    expected = cli_json("calibrate", "--bench", str(bench), *args)
    c = kvplan.calibrate(bench=bench, model="llama-3-70b", gpu="h100-sxm", tp=2,
                         weight_dtype="fp8", kv_dtype="fp8")
    b = c.bench
    assert c.log is None and b.compute_dtype == expected["compute_dtype"] == "fp8"
    assert (b.bandwidth_fraction, b.compute_fraction) == (expected["bandwidth_fraction"],
                                                          expected["compute_fraction"])
    assert b.layer_overhead_seconds == expected["layer_overhead"]
    assert b.all_reduce_latency_seconds == expected["all_reduce_latency"]
    assert b.rms_log_error == expected["rms_log_error"]
    (f,) = b.figures
    # The file's 250 requests of 1,250,000 input and 125,000 output tokens at max_concurrency 25:
    # 5,000 prompt and 500 output tokens each, 25 in flight; its mean_tpot_ms 38.75.
    assert (f.concurrency, f.prompt_tokens, f.output_tokens) == (25, 5000, 500)
    assert f.measured_tpot_seconds == expected["measured_tpot"] == 0.03875
    assert f.after.itl_seconds == expected["tpot_estimate"]
    assert f.before.itl_seconds == expected["tpot_estimate_before"]
    assert f.after.itl_bound_seconds == expected["tpot_bound"]
    assert f.after.ttft_seconds == expected["ttft_estimate"]
    assert f.after.bandwidth_fraction == b.bandwidth_fraction
    assert json.loads(c.profile_json) == expected["profile"]
    c.write_profile(tmp_path / "profile.json")
    assert (tmp_path / "profile.json").read_text() == c.profile_json


def test_calibrate_on_several_loads_fits_the_fixed_costs():
    benches = [BENCH / f"nim-llama-3.3-70b-fp8-2xh100-5000-500-c{n}.json" for n in (1, 25, 100)]
    args = ["--model", "llama-3-70b", "--gpu", "h100-sxm", "--tp", "2", "--weight-dtype", "fp8",
            "--kv-dtype", "fp8"]
    expected = cli_json("calibrate", *[a for b in benches for a in ("--bench", str(b))], *args)
    b = kvplan.calibrate(bench=benches, model="llama-3-70b", gpu="h100-sxm", tp=2,
                         weight_dtype="fp8", kv_dtype="fp8").bench
    assert [f.concurrency for f in b.figures] == [1, 25, 100]
    assert b.layer_overhead_seconds == expected["layer_overhead"]
    assert b.all_reduce_latency_seconds == expected["all_reduce_latency"]
    assert b.median_tpot_error == pytest.approx(expected["median_tpot_error"], rel=1e-12)
    # The median of three is the middle one: 100 x |estimate / measured - 1| of each load.
    errors = sorted(abs(f.after.itl_seconds / f.measured_tpot_seconds - 1) for f in b.figures)
    assert b.median_tpot_error == pytest.approx(100 * errors[1], rel=1e-12)
    # Each load's own error, in percent, signed: below the measurement is negative.
    for f in b.figures:
        assert f.tpot_error == pytest.approx(
            100 * (f.after.itl_seconds / f.measured_tpot_seconds - 1), rel=1e-9)
        assert f.ttft_error == pytest.approx(
            100 * (f.after.ttft_seconds / f.measured_ttft_seconds - 1), rel=1e-9)
    assert sorted(abs(f.tpot_error) for f in b.figures)[1] == pytest.approx(b.median_tpot_error)


def test_calibrate_refuses_what_it_cannot_fit():
    with pytest.raises(kvplan.UsageError, match="^log: expected a vLLM start-up log"):
        kvplan.calibrate(model="llama-3-8b")
    bench = BENCH / "nim-llama-3.3-70b-fp8-2xh100-5000-500-c25.json"
    with pytest.raises(kvplan.UsageError, match="^gpu: expected the GPU the benchmark ran on"):
        kvplan.calibrate(bench=bench, model="llama-3-70b")
    with pytest.raises(kvplan.UsageError, match="^block_size: expected a start-up log as well"):
        kvplan.calibrate(bench=bench, model="llama-3-70b", gpu="h100", block_size=32)
    with pytest.raises(kvplan.InvalidInputError, match="open-loop-rate-4.json"):
        kvplan.calibrate(bench=BENCH / "open-loop-rate-4.json", model="llama-3-8b", gpu="h100")
    with pytest.raises(kvplan.InvalidInputError, match="nonexistent.log"):
        kvplan.calibrate("/nonexistent.log", model="llama-3-8b")


def test_diff_is_the_formula():
    # The pull request doubles num_key_value_heads of Llama-3-70B (8 -> 16) and bumps
    # transformers_version. KV per token: 80 layers x 8 heads x 128 dims x 2 (K, V) x 2 B =
    # 327,680 B, twice that with 16 heads; the weights grow by k_proj and v_proj's 8 more heads:
    # 2 x 8,192 x (8 x 128) x 80 layers x 2 B = 2,684,354,560 B.
    d = kvplan.diff(BASE_70B, OUR_70B, context=8000)
    assert [(c.path, c.before, c.after) for c in d.config_changes] == [
        ("num_key_value_heads", "8", "16"),
        ("transformers_version", '"4.40.0.dev0"', '"4.44.0"')]
    assert d.context_tokens == 8000
    assert d.old_size.kv_bytes_per_token == 80 * 8 * 128 * 2 * 2 == 327_680
    assert d.new_size.kv_bytes_per_token == 2 * 327_680
    assert d.old_size.kv_bytes_per_sequence == 327_680 * 8000
    assert d.new_weight_bytes - d.old_weight_bytes == 2 * 8192 * 8 * 128 * 80 * 2
    assert d.old_answer is None and d.new_answer is None
    with pytest.raises(kvplan.UsageError, match="^tp: expected a gpu as well"):
        kvplan.diff(BASE_70B, OUR_70B, tp=4)


def test_diff_gives_the_cli_effects():
    expected = cli_json("diff", str(BASE_70B), str(OUR_70B), "--gpu", "h100-sxm", "--tp", "4",
                        "--context", "8000", "--concurrency", "32")
    d = kvplan.diff(str(BASE_70B), str(OUR_70B), "h100-sxm", tp=4, context=8000, concurrency=32)
    effects = {e["figure"]: (e["old"], e["new"]) for e in expected["effects"]}
    assert effects["kv_bytes_per_token"] == (d.old_size.kv_bytes_per_token,
                                             d.new_size.kv_bytes_per_token)
    assert effects["kv_bytes_per_sequence"] == (d.old_size.kv_bytes_per_sequence,
                                                d.new_size.kv_bytes_per_sequence)
    assert effects["weight_bytes"] == (d.old_weight_bytes, d.new_weight_bytes)
    old, new = d.old_answer, d.new_answer
    assert effects["kv_budget_bytes_per_gpu"] == (old.kv_budget_bytes_per_gpu,
                                                  new.kv_budget_bytes_per_gpu)
    # The headline's 61 (1 + (30,597 - 1 - 500) / 500 blocks of Llama-3-70B at tp 4, derived in
    # tests/plan/test_evaluate.cpp) against 30 once 16 KV heads double every sequence.
    assert effects["max_concurrency"] == (old.max_concurrency, new.max_concurrency) == (61, 30)
    assert effects["tpot_seconds"] == (old.tpot_seconds, new.tpot_seconds)
    assert effects["verdict"] == ("fits", "does_not_fit") and old.fits and not new.fits
    # 8,000 tokens are 500 blocks of 16; a GPU of tp 4 keeps 655,360 / 4 = 163,840 B a token of
    # the new config: 1,310,720,000 B a sequence, which the budget holds 30 times.
    assert new.max_concurrency == new.kv_budget_bytes_per_gpu // (500 * 16 * 163_840)
    assert [(c.path, c.before, c.after) for c in d.config_changes] == [
        (c["field"], c["old"], c["new"]) for c in expected["config_changes"]]


def test_check_gives_the_cli_outcomes():
    args = ["--policy", str(POLICY), "--model", str(OUR_70B), "--baseline", str(BASE_70B)]
    expected = cli_json("check", *args)
    r = kvplan.check(POLICY, model=OUR_70B, baseline=BASE_70B)
    assert not r and not r.passed and (r.failed, r.skipped) == (expected["failed_count"],
                                                                expected["skipped_count"])
    assert len(r.outcomes) == len(expected["requirements"]) == 8 * 2
    for o, e in zip(r.outcomes, expected["requirements"]):
        assert (o.requirement, o.replica, o.status, o.kind, o.figure, o.unit, o.path,
                o.line) == (e["name"], e["replica"], e["status"], e["kind"], e["figure"],
                            e["unit"], e["path"], e["line"])
        assert (o.measured, o.baseline, o.change_percent) == (e["measured"], e["baseline"],
                                                              e["change_percent"])
    # KV bytes per token: 16 KV heads against 8, 655,360 B against 327,680 B (+100 %), over the
    # policy's 320 KiB = 327,680 B on both replicas.
    kv = [i for i, o in enumerate(r.outcomes) if o.kind == "max_kv_bytes_per_token"]
    assert [(r.outcomes[i].measured, r.outcomes[i].baseline, r.outcomes[i].change_percent,
             r.outcomes[i].status) for i in kv] == [
        (655_360, 327_680, 100.0, "failed")] * 2
    # The changed field that moves the figures is num_key_value_heads, on line 17 of the
    # config; transformers_version moves none.
    assert r.changed_fields == 2
    changes = {c.path: c for c in r.config_changes}
    assert changes["num_key_value_heads"].line == 17
    assert (changes["num_key_value_heads"].before, changes["num_key_value_heads"].after) == (
        "8", "16")
    assert changes["transformers_version"].moves == []
    assert set(changes["num_key_value_heads"].moves) >= set(kv)
    assert expected["notes"] == [f"{OUR_70B / 'config.json'}:17: num_key_value_heads changed "
                                 "from 8 to 16"]


def test_check_without_a_baseline_skips_the_regressions():
    # The policy's own model, Llama-3-70B: every requirement met on both fleets, its 3
    # max_regression requirements x 2 replicas skipped.
    r = kvplan.check(str(POLICY))
    assert r and r.passed and (r.failed, r.skipped) == (0, 6)
    assert r.model.id == "llama-3-70b" and [g.id for g in r.gpus] == ["h100-sxm", "h200-sxm"]
    assert r.config_changes is None and r.baseline is None
    # Min concurrency on the H100 fleet: the headline's 61 sequences of 8,000 tokens (derived in
    # tests/plan/test_evaluate.cpp), the policy's 32 met.
    first = r.outcomes[0]
    assert first.kind == "min_concurrency" and first.measured == 61 and first.status == "passed"
    with pytest.raises(kvplan.InvalidInputError, match="nonexistent.json"):
        kvplan.check("/nonexistent.json")


def test_every_function_stores_the_cache_the_checkpoint_names_as_the_cli_does(tmp_path):
    # Qwen3-235B-A22B-NVFP4's hf_quant_config.json names kv_cache_quant_algo FP8: vLLM's
    # --kv-cache-dtype auto stores fp8_e4m3 (engine/checkpoint_kv.hpp), 94 layers x 4 KV heads x
    # 128 dims x K and V x 1 B = 96,256 B a token (bf16's 192,512 B halved). Left without
    # kv_dtype, each function resolves it in the library, as each command does.
    folder = str(SOURCE_DIR / "tests" / "data" / "quantized" / "Qwen3-235B-A22B-NVFP4")
    per_token = 94 * 4 * 128 * 2 * 1
    assert per_token == 96_256
    # size names no engine: vLLM's newest release, as kvplan size.
    s = kvplan.size(folder, context="8k")
    assert (s.kv_dtype, s.kv_bytes_per_token) == ("fp8_e4m3", per_token)
    assert s.kv_bytes_per_token == cli_json("size", "--model", folder, "--context", "8k")[
        "kv_bytes_per_token"]
    fit = cli_json("fit", "--model", folder, "--gpu", "b200", "--tp", "4", "--context", "8k")
    rows = kvplan.compare(folder, "b200", tp=4, context="8k")
    assert [(r.size.kv_dtype, r.size.kv_bytes_per_token) for r in rows] == [
        ("fp8_e4m3", per_token)]
    assert rows[0].answer.max_concurrency == fit["max_concurrency"]
    # plan's best fit at 64 sequences of 8k tokens on B200s: the CLI's.
    best = kvplan.plan(folder, "b200", context="8k", concurrency=64).best
    cli_best = cli_json("plan", "--model", folder, "--gpu", "b200", "--context", "8k",
                        "--concurrency", "64")["candidates"][0]
    assert (best.kv_dtype, best.gpus, best.answer.max_concurrency) == (
        "fp8_e4m3", cli_best["gpus"], cli_best["max_concurrency"])
    # diff against the same config without hf_quant_config.json: bf16's 192,512 B against the
    # folder's 96,256 B, each model at its own auto, as kvplan diff.
    d = kvplan.diff("qwen3-235b-a22b", folder, "b200", tp=4, context="8k")
    assert (d.old_size.kv_bytes_per_token, d.new_size.kv_bytes_per_token) == (
        2 * per_token, per_token)
    effects = {r["figure"]: r for r in cli_json(
        "diff", "qwen3-235b-a22b", folder, "--gpu", "b200", "--tp", "4", "--context",
        "8k")["effects"]}
    assert d.new_answer.max_concurrency == effects["max_concurrency"]["new"]
    assert d.new_answer.max_concurrency == fit["max_concurrency"]
    # A check policy without kv_dtype: the same cache and concurrency.
    policy = SOURCE_DIR / "tests" / "data" / "cli" / "policy_checkpoint_kv.json"
    c = kvplan.check(str(policy), model=folder)
    measured = {o.figure: o.measured for o in c.outcomes}
    assert measured == {"kv_bytes_per_token": per_token,
                        "max_concurrency": fit["max_concurrency"]}


def test_a_benchmark_run_reaches_the_estimate_as_the_flags_give_it():
    # Llama-3-8B on one H100, 16 clients of 1,000 in / 200 out (all 16 run: the KV holds 375).
    # sglang.bench_serving's default lengths (length_spread 1) over 64 requests sent at once:
    # kvplan fit --length-spread 1 --num-prompts 64, the same library call, the same figures.
    load = dict(concurrency=16, prompt_tokens=1000, output_tokens=200)
    args = ("--model", "llama-3-8b", "--gpu", "h100-sxm", "--concurrency", "16",
            "--prompt-tokens", "1000", "--output-tokens", "200")
    keys = ("itl_estimate_seconds", "tpot_estimate_seconds", "ttft_estimate_seconds",
            "ttft_first_wave_estimate_seconds", "tokens_per_second_estimate",
            "tokens_per_second_bound", "itl_bound_seconds", "ttft_bound_seconds")
    expected = cli_json("fit", *args, "--length-spread", "1", "--num-prompts", "64")
    a = kvplan.fit("llama-3-8b", "h100-sxm", **load, length_spread=1, num_prompts=64)
    d = kvplan.Deployment("llama-3-8b", "h100-sxm").evaluate(**load, length_spread=1,
                                                             num_prompts=64)
    p = kvplan.plan("llama-3-8b", "h100-sxm", **load, max_gpus=1, length_spread=1,
                    num_prompts=64).best.answer
    for key in keys:
        assert getattr(a, key) == expected[key], key
        assert getattr(d, key) == expected[key], key
        assert getattr(p, key) == expected[key], key
    assert a.estimate.tokens_per_second_bound == expected["tokens_per_second_bound"]
    assert a.estimate.ttft_first_wave_seconds == expected["ttft_first_wave_estimate_seconds"]
    # The run's first 16 of 32 requests queue for prefill together: C / N = half of what a run
    # of 16 (N = C) adds; whole rounds of fixed lengths keep the steady state's TPOT.
    steady = kvplan.fit("llama-3-8b", "h100-sxm", **load)
    n16 = kvplan.fit("llama-3-8b", "h100-sxm", **load, num_prompts=16)
    n32 = kvplan.fit("llama-3-8b", "h100-sxm", **load, num_prompts=32)
    assert steady.ttft_first_wave_estimate_seconds == 0
    assert n32.ttft_first_wave_estimate_seconds == pytest.approx(
        n16.ttft_first_wave_estimate_seconds / 2, rel=1e-12)
    assert n32.tpot_estimate_seconds == steady.tpot_estimate_seconds
    with pytest.raises(kvplan.UsageError, match="^num_prompts: expected prompt_tokens"):
        kvplan.fit("llama-3-8b", "h100-sxm", num_prompts=64)
    with pytest.raises(kvplan.UsageError, match="^length_spread"):
        kvplan.fit("llama-3-8b", "h100-sxm", **load, length_spread=1.5)


def test_fixed_lengths_reach_the_estimate_as_the_flag_gives_them():
    # Llama-3-8B on one H100, a budget of 8,192 tokens, 8 clients of exactly 2,048 + 257: a
    # cycle's 16,384 prompt tokens pass the budget, so each prompt's chunk rides in a full step
    # (test_evaluate.cpp): TTFT's prefill grows. kvplan fit --fixed-lengths, the same library
    # call, the same figures.
    load = dict(concurrency=8, prompt_tokens=2048, output_tokens=257, max_num_batched_tokens=8192)
    args = ("--model", "llama-3-8b", "--gpu", "h100-sxm", "--concurrency", "8",
            "--prompt-tokens", "2048", "--output-tokens", "257",
            "--max-num-batched-tokens", "8192")
    keys = ("itl_estimate_seconds", "tpot_estimate_seconds", "ttft_estimate_seconds",
            "ttft_prefill_estimate_seconds", "tokens_per_second_estimate")
    expected = cli_json("fit", *args, "--fixed-lengths")
    a = kvplan.fit("llama-3-8b", "h100-sxm", **load, fixed_lengths=True)
    d = kvplan.Deployment("llama-3-8b", "h100-sxm", max_num_batched_tokens=8192).evaluate(
        concurrency=8, prompt_tokens=2048, output_tokens=257, fixed_lengths=True)
    p = kvplan.plan("llama-3-8b", "h100-sxm", **load, max_gpus=1, fixed_lengths=True).best.answer
    for key in keys:
        assert getattr(a, key) == expected[key], key
        assert getattr(d, key) == expected[key], key
        assert getattr(p, key) == expected[key], key
    drawn = kvplan.fit("llama-3-8b", "h100-sxm", **load)
    assert a.ttft_prefill_estimate_seconds > drawn.ttft_prefill_estimate_seconds
    # Fixed lengths take no spread (the library's refusal), and need the split.
    with pytest.raises(kvplan.UsageError,
                       match="^length_spread: expected 0 with fixed_lengths"):
        kvplan.fit("llama-3-8b", "h100-sxm", **load, fixed_lengths=True, length_spread=0.5)
    with pytest.raises(kvplan.UsageError, match="^fixed_lengths: expected prompt_tokens"):
        kvplan.fit("llama-3-8b", "h100-sxm", fixed_lengths=True)
