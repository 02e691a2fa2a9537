"""The classes for serving code: Model, Gpu, Deployment, ReplicaAnswer and Roofline give the
figures the command line gives for the same inputs, and refuse bad input with kvplan's message."""

import math
import pathlib

import pytest

import kvplan
from conftest import BUNDLED_MODELS, SOURCE_DIR, cli_json

# kvplan fit's keys that describe the run rather than the replica, and its sentences (the verdict
# line, the heading, the notes): the command line's rendering, not a figure.
NOT_FIGURES = {"command", "kvplan_version", "inputs", "explain", "verdict", "heading", "notes"}

# The layouts and engines each bundled model is evaluated under.
SETUPS = [
    ({"gpu": "h100-sxm"}, {"context": 8192, "concurrency": 16}),
    ({"gpu": "h200-sxm", "gpus": 4, "engine": "sglang"}, {"context": 32768, "concurrency": 64}),
    ({"gpu": "mi300x", "pp": 2, "engine": "trtllm", "kv_dtype": "fp8"},
     {"context": 4096, "concurrency": 100}),
    ({"gpu": "h100-sxm", "engine": "ideal", "kv_memory": "20GiB"},
     {"context": 131072, "concurrency": 2}),
    # A prompt / output split: the latency estimate's keys too.
    ({"gpu": "b200", "gpus": 2}, {"concurrency": 40, "prompt_tokens": 2000,
                                 "output_tokens": 500}),
]


def fit_args(deployment, demand):
    args = ["fit"]
    for k, v in {**deployment, **demand}.items():
        args += ["--" + k.replace("_", "-"), str(v)]
    return args


def assert_same_figures(answer, expected):
    # Every figure of fit's JSON is an attribute of the same value; a key fit's JSON leaves out is
    # None or, for the headroom or shortfall that is not given, 0.
    for key, value in expected.items():
        if key in NOT_FIGURES:
            continue
        assert getattr(answer, key) == value, key
    for key in ("fraction_bytes", "activation_bytes", "cuda_graph_bytes", "cuda_context_bytes",
                "comm_buffer_bytes", "num_gpu_blocks", "estimated_max_model_len", "tpot_seconds"):
        if key not in expected:
            assert getattr(answer, key) is None, key
    for key in ("headroom_bytes_per_gpu", "shortfall_bytes_per_gpu"):
        if key not in expected:
            assert getattr(answer, key) == 0, key


@pytest.mark.parametrize("model", BUNDLED_MODELS)
def test_evaluate_gives_fits_figures_on_every_bundled_model(model):
    for deployment, demand in SETUPS:
        # kvplan.fit from names, and a prepared Deployment, against the binary's JSON.
        expected = cli_json(*fit_args(deployment, demand), "--model", model)
        assert_same_figures(kvplan.fit(model=model, **deployment, **demand), expected)
        d = kvplan.Deployment(model, **deployment)
        answer = d.evaluate(**demand)
        assert_same_figures(answer, expected)
        # The same deployment asked again, about another demand and back: nothing carries over.
        d.evaluate(context=1, concurrency=1)
        assert_same_figures(d.evaluate(**demand), expected)


def test_the_answer_reads_like_fit():
    d = kvplan.Deployment("llama-3-70b", "h100-sxm", tp=4)
    a = d.evaluate(context="8k", concurrency=48)
    fit = kvplan.fit(model="llama-3-70b", gpu="h100-sxm", tp=4, context="8k", concurrency=48)
    assert a.max_concurrency == fit.max_concurrency == 61
    assert a and a.fits and a.starts and a.refusal == "none" and a.refusal_reason == ""
    assert repr(a) == ("<kvplan.ReplicaAnswer fits: 48 x 8,000 tokens on 4 x h100-sxm, "
                       "max_concurrency 61>")
    assert repr(d) == "<kvplan.Deployment llama-3-70b on 4 x h100-sxm (tp 4 x pp 1), KV bf16, vllm>"
    # The decode bound at the load: each replica's 48 sequences of 8,000 tokens.
    assert a.decode.batch == 48 and a.decode.context_tokens == 8000
    assert a.decode.tpot_seconds == a.tpot_seconds == fit.tpot_seconds
    # The context defaults to the model's limit, as --context does.
    assert d.evaluate().context_tokens == d.context_limit_tokens == 8192
    # 2,000 sequences over 4 replicas of tp 4: 500 each, more than one holds.
    many = kvplan.Deployment("llama-3-70b", "h100-sxm", tp=4, gpus=16).evaluate(8000, 2000)
    assert many.replicas == 4 and many.concurrency_per_replica == 500
    assert not many.fits and many.refusal == "none"
    assert many.total_max_concurrency == 4 * many.max_concurrency


def test_roofline_gives_the_cli_points():
    d = kvplan.Deployment("llama-3-70b", "h100-sxm", tp=4)
    roofline = d.roofline()
    expected = cli_json("roofline", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--tp", "4",
                        "--batch", "1,8,64", "--context", "1k,32k")["points"]
    for p in expected:
        point = roofline.point(p["batch"], p["context_tokens"])
        bound = roofline.decode(p["batch"], p["context_tokens"])
        for q in (point, bound):
            assert q.decode_step_seconds == p["decode_step_seconds"]
            assert q.tpot_seconds == p["tpot_seconds"]
            assert q.tokens_per_second == p["tokens_per_second"]
            assert q.tokens_per_second_per_gpu == p["tokens_per_second_per_gpu"]
            assert q.bound == p["bound"]
        assert bound.bytes_per_step == p["bytes_per_step"]
        assert bound.flops_per_step == p["flops_per_step"]
        prefill = roofline.prefill(p["context_tokens"])
        assert prefill.prefill_seconds == p["prefill_seconds"]
        assert prefill.prefill_bound == p["prefill_bound"]
    one = cli_json("roofline", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--tp", "4",
                   "--batch", "8", "--context", "8k")
    assert roofline.decode(8, "8k").all_reduce_seconds == one["all_reduce_seconds"]
    # fp8 matmuls: the peak the CLI reads for --compute-dtype fp8.
    fp8 = d.roofline("fp8").point(256, 1024)
    assert fp8.tpot_seconds == cli_json(
        "roofline", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--tp", "4", "--batch", "256",
        "--context", "1024", "--compute-dtype", "fp8")["tpot_seconds"]
    # Past the compute-bound batch the step is compute-bound, before it memory-bound.
    turn = roofline.compute_bound_batch(1024)
    assert roofline.point(turn, 1024).bound == "compute"
    assert roofline.point(turn - 1, 1024).bound == "memory"


def test_models_and_gpus_resolve_as_the_flags_do():
    assert sorted(kvplan.Model.bundled())[: len(BUNDLED_MODELS)] != []
    assert set(BUNDLED_MODELS) <= set(kvplan.Model.bundled())
    m = kvplan.Model("llama-3-70b")
    size = cli_json("size", "--model", "llama-3-70b", "--context", "8192")
    assert m.kv_bytes_per_token() == size["kv_bytes_per_token"]
    assert m.kv_bytes_per_sequence(8192) == size["kv_bytes_per_sequence"]
    assert m.num_params == size["inputs"]["params"]
    assert m.num_layers == 80 and m.id == "llama-3-70b"
    assert m.source == "bundled models/llama-3-70b.json"
    # A config.json by path, as str or pathlib.Path, or its folder.
    config = SOURCE_DIR / "configs" / "models" / "qwen3-8b.json"
    assert kvplan.Model(config).kv_bytes_per_token() == kvplan.Model(
        "qwen3-8b").kv_bytes_per_token()
    g = kvplan.Gpu("h100")
    assert g.id == "h100-sxm" and "h100" in g.aliases
    assert g.memory_bytes == cli_json("fit", "--model", "llama-3-8b", "--gpu",
                                      "h100")["gpu_memory_bytes"]
    # The CUDA runtime's total (81,090 MiB, configs/gpus/h100-sxm.json) beside the stated 80 GB.
    assert g.memory_bytes == 81_090 * 2**20
    assert g.memory_bytes_stated == g.memory_stated_bytes == 80 * 10**9
    assert g.memory_bandwidth_bytes_per_s == 3.35e12
    assert g.dense_flops_per_s("bf16") == 989.4e12
    assert set(kvplan.Gpu.bundled()) >= {"h100-sxm", "h200-sxm", "mi300x"}


def test_an_inline_model_is_the_plain_decoder_of_its_fields():
    # Llama-3-8B's shape: 32 layers of 8 KV heads of 128 dimensions. K and V (2) x 32 layers x 8
    # heads x 128 x 2 B (bf16) = 131,072 B per token, as the bundled config gives.
    m = kvplan.Model.from_fields(name="my-8b", num_hidden_layers=32, hidden_size=4096,
                                 num_attention_heads=32, num_key_value_heads=8,
                                 vocab_size=128256, intermediate_size=14336,
                                 max_position_embeddings=8192)
    assert m.kv_bytes_per_token() == 2 * 32 * 8 * 128 * 2 == 131072
    assert m.kv_bytes_per_token() == kvplan.Model("llama-3-8b").kv_bytes_per_token()
    assert m.kv_bytes_per_token("fp8") == 65536
    assert m.num_params == kvplan.Model("llama-3-8b").num_params
    # A sliding window of 4,096 keeps at most 4,096 tokens a layer: at 8,192 tokens, half.
    w = kvplan.Model.from_fields(num_hidden_layers=32, hidden_size=4096,
                                 num_attention_heads=32, num_key_value_heads=8,
                                 vocab_size=128256, intermediate_size=14336,
                                 sliding_window=4096)
    assert w.kv_bytes_per_sequence(8192) == m.kv_bytes_per_sequence(8192) // 2
    d = kvplan.Deployment(m, "h100-sxm")
    assert d.evaluate(8192, 8).max_concurrency == kvplan.Deployment(
        "llama-3-8b", "h100-sxm").evaluate(8192, 8).max_concurrency
    assert "my-8b" in repr(m)


def test_bad_models_and_gpus_raise_with_kvplans_message():
    with pytest.raises(kvplan.InvalidInputError, match=r"found 'llama-3-7b'; did you mean"):
        kvplan.Model("llama-3-7b")
    with pytest.raises(kvplan.InvalidInputError, match="found 'h1000'; did you mean 'h100'"):
        kvplan.Gpu("h1000")
    with pytest.raises(kvplan.InvalidInputError, match="nonexistent"):
        kvplan.Model(pathlib.Path("/nonexistent/config.json"))
    with pytest.raises(kvplan.InvalidModelError,
                       match="num_key_value_heads: expected a divisor of the 32 attention heads, "
                             "found 5"):
        kvplan.Model.from_fields(num_hidden_layers=2, hidden_size=64, num_attention_heads=32,
                                 num_key_value_heads=5, vocab_size=100, intermediate_size=128)
    with pytest.raises(kvplan.InvalidModelError, match="vocab_size"):
        kvplan.Model.from_fields(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                                 vocab_size=0, intermediate_size=128)
    with pytest.raises(kvplan.UsageError, match="mamba_cache_dtype: expected auto, bfloat16"):
        kvplan.Model("jamba-1.5-mini", mamba_cache_dtype="fp7")
    with pytest.raises(TypeError, match="model: expected an id or a path"):
        kvplan.Model(42)


def test_bad_deployments_and_demands_raise_with_kvplans_message():
    with pytest.raises(kvplan.InvalidLayoutError, match="tp"):
        kvplan.Deployment("llama-3-70b", "h100-sxm", tp=3)
    # The library's own refusal: its error type, its message.
    with pytest.raises(kvplan.InvalidLayoutError,
                       match="gpus: expected a multiple of the replica's 4 GPUs .*, found 6$"):
        kvplan.Deployment("llama-3-70b", "h100-sxm", tp=4, gpus=6)
    with pytest.raises(kvplan.InvalidInputError,
                       match="^engine vllm: block_size: expected one of vLLM's block sizes"):
        kvplan.Deployment("llama-3-8b", "h100-sxm", block_size=7)
    with pytest.raises(kvplan.UsageError, match="^gpu_memory_utilization: expected"):
        kvplan.Deployment("llama-3-8b", "h100-sxm", gpu_memory_utilization=1.5)
    with pytest.raises(kvplan.UsageError, match="^kv_memory: expected"):
        kvplan.Deployment("llama-3-8b", "h100-sxm", kv_memory="20")
    with pytest.raises(kvplan.UsageError, match="^engine: "):
        kvplan.Deployment("llama-3-8b", "h100-sxm", engine="vllmm")
    with pytest.raises(kvplan.UsageError, match="^kv_dtype: "):
        kvplan.Deployment("llama-3-8b", "h100-sxm", kv_dtype="fp9")
    with pytest.raises(TypeError, match="tp: expected an int .*, found bool"):
        kvplan.Deployment("llama-3-8b", "h100-sxm", tp=True)
    # An int kv_memory is bytes: 20 GiB either way.
    assert kvplan.Deployment("llama-3-8b", "h100-sxm", kv_memory=20 << 30).evaluate(
        8192, 1).kv_budget_bytes_per_gpu == 20 * 2**30
    d = kvplan.Deployment("llama-3-8b", "h100-sxm")
    with pytest.raises(kvplan.UsageError, match="^context: expected >= 1 tokens, found 0$"):
        d.evaluate(context=0)
    with pytest.raises(kvplan.UsageError, match="^concurrency: expected >= 1 sequences, found -3$"):
        d.evaluate(context=8192, concurrency=-3)
    with pytest.raises(kvplan.UsageError, match="^concurrency: expected at most 2\\^64 - 1"):
        d.evaluate(context=8192, concurrency=2**64)
    with pytest.raises(TypeError, match="^context: expected an int or a token count"):
        d.evaluate(context=8192.0)
    with pytest.raises(kvplan.UsageError, match="^context: expected"):
        d.evaluate(context="8q")
    # A demand no 64-bit count holds is refused, not wrapped.
    with pytest.raises(kvplan.SizeOverflowError):
        d.evaluate(context=2**63, concurrency=2**62)
    # Past the model's limit the engine refuses: an answer, not an error.
    a = d.evaluate(context=9000)
    assert not a.starts and a.refusal == "context_limit" and a.max_concurrency == 0
    assert kvplan.Deployment("llama-3-8b", "h100-sxm",
                             allow_long_context=True).evaluate(context=9000).starts
    with pytest.raises(kvplan.UsageError, match="compute_dtype"):
        d.roofline("fp9")
    assert math.isfinite(d.roofline().point(1).tpot_seconds)


def test_vllms_switches_override_the_releases_defaults():
    # Llama-4-Scout on 8 x H200 under v0.12 (hybrid manager off for chunked local attention by
    # default): with VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1 a sequence of 8,388,608
    # tokens keeps per GPU (8 KV heads / 8 ranks x 128 x 2 x 2 B = 512 B a token and layer) the 12
    # full layers' tokens and one 8,192-token chunk in each of the 36 chunked ones:
    # 12 x 8,388,608 x 512 + 36 x 8,192 x 512 = 51,690,602,496 B; off, every layer is full
    # (48 x 8,388,608 x 512 = 192 GiB) and vLLM refuses to start.
    scout = dict(tp=8, engine_version="0.12", gpu_memory_utilization=0.9, context=8388608)
    on = kvplan.fit("llama-4-scout-17b-16e-instruct", "h200-sxm", chunked_local_hybrid=True,
                    **scout)
    assert on.starts and on.kv_bytes_per_sequence_per_gpu == 51_690_602_496
    assert not kvplan.fit("llama-4-scout-17b-16e-instruct", "h200-sxm", **scout).starts
    # Llama-3-8B on an H100 under v0.9 without FlashInfer: the profile sorts its 1,024 rows of
    # 128,256 fp32 logits, 32 B each beside the logits and their fp32 copy (6 B), with the
    # forward's 8,192 x 4,096 x 2 B output: 1,024 x 128,256 x 38 + 67,108,864 = 5,057,806,336 B.
    sorted_ = kvplan.fit("llama-3-8b", "h100-sxm", engine_version="0.9", context=8192,
                         without_flashinfer=True)
    assert sorted_.activation_bytes == 5_057_806_336
    with pytest.raises(TypeError, match="^without_flashinfer: expected True, False or None"):
        kvplan.Deployment("llama-3-8b", "h100-sxm", without_flashinfer=1)
    # vLLM's alone: the library's refusal, in its words.
    with pytest.raises(kvplan.InvalidInputError,
                       match="^engine sglang: chunked_local_hybrid: expected engine vllm"):
        kvplan.Deployment("llama-3-8b", "h100-sxm", engine="sglang", chunked_local_hybrid=True)


def test_speculative_decoding_gives_fits_figures():
    # The drafter's layers share the model's cache, as --speculative-method says; a draft model
    # is a kvplan.Model or what its constructor takes.
    cases = [
        ("llama-3.1-8b", {"speculative_method": "eagle", "num_speculative_tokens": 3}),
        ("deepseek-v3", {"gpu": "h200-sxm", "tp": 8, "speculative_method": "mtp",
                         "num_speculative_tokens": 1}),
        ("llama-3.1-70b", {"tp": 4, "speculative_method": "draft_model",
                           "num_speculative_tokens": 4, "draft_model": "llama-3.1-8b"}),
        ("llama-3.1-8b", {"speculative_method": "ngram", "num_speculative_tokens": 5}),
    ]
    demand = {"context": 16384, "concurrency": 32, "prompt_tokens": 4000, "output_tokens": 1000}
    for model, kw in cases:
        deployment = {"gpu": "h100-sxm", **kw}
        expected = cli_json(*fit_args(deployment, demand), "--model", model)
        d = kvplan.Deployment(model, **deployment)
        assert d.speculative_method == kw["speculative_method"]
        assert_same_figures(d.evaluate(**demand), expected)
    # Llama-3.1-8B: 32 layers x 2 x 8 KV heads x 128 x 2 B = 131,072 B per token; EAGLE's one
    # decoder layer of the same shape adds 4,096 B.
    eagle = kvplan.Deployment("llama-3.1-8b", "h100-sxm", speculative_method="eagle",
                              num_speculative_tokens=3).evaluate(8192)
    assert eagle.drafter_layers == 1 and eagle.drafter_kv_bytes_per_token == 4096
    assert eagle.kv_bytes_per_token == 131072 + 4096
    drafted = kvplan.Deployment("llama-3.1-70b", "h100-sxm", tp=4,
                                speculative_method="draft_model", num_speculative_tokens=4,
                                draft_model=kvplan.Model("llama-3.1-8b")).evaluate(8192)
    # A draft model's weights are its own, as its checkpoint stores them.
    assert drafted.drafter_weight_bytes == kvplan.Deployment("llama-3.1-8b", "h100-sxm").evaluate(
        8192).weight_bytes


def test_the_estimate_is_fits_and_reads_as_an_object():
    d = kvplan.Deployment("llama-3-70b", "h100-sxm", tp=4)
    a = d.evaluate(concurrency=48, prompt_tokens=2000, output_tokens=500)
    fit = kvplan.fit(model="llama-3-70b", gpu="h100-sxm", tp=4, concurrency=48,
                     prompt_tokens=2000, output_tokens=500)
    # The context defaults to prompt + output, as --context does.
    assert a.context_tokens == fit.context_tokens == 2500
    assert a.estimate_basis == fit.estimate_basis == "family_fitted"
    e = a.estimate
    assert e.itl_seconds == a.itl_estimate_seconds == fit.itl_estimate_seconds
    assert e.ttft_seconds == fit.ttft_estimate_seconds
    assert e.tokens_per_second == fit.tokens_per_second_estimate
    assert e.bandwidth_fraction == fit.estimate_bandwidth_fraction
    # A closed loop of 48 clients, all running (the cache holds 201 of 2,500 tokens): none waits.
    assert e.concurrency == e.running == 48 and e.waiting == 0
    # No step beats the bound.
    assert e.itl_bound_seconds <= e.itl_seconds and e.ttft_bound_seconds <= e.ttft_seconds
    assert repr(e).startswith("<kvplan.LatencyEstimate 48 running, 0 waiting: ITL ")
    # Without the split, no estimate.
    plain = d.evaluate(context=2500, concurrency=48)
    assert plain.estimate is None and plain.estimate_basis is None
    assert plain.itl_estimate_seconds is None


def test_parallel_layouts_resolve_as_the_engine_places_them():
    # vLLM --data-parallel-size 2 of tp 4: two engines of 4 GPUs each, each its own cache of the
    # same budget as a lone tp 4 replica, so the replica holds twice the sequences.
    one = kvplan.Deployment("llama-3-70b", "h100-sxm", tp=4).evaluate(8192, 64)
    dp = kvplan.Deployment("llama-3-70b", "h100-sxm", tp=4, dp=2)
    assert (dp.dp, dp.replica_gpus, dp.gpus, dp.replicas) == (2, 8, 8, 1)
    assert repr(dp) == ("<kvplan.Deployment llama-3-70b on 8 x h100-sxm (dp 2 x tp 4 x pp 1), "
                        "KV bf16, vllm>")
    a = dp.evaluate(8192, 64)
    assert a.dp_ranks == 2 and a.concurrency_per_dp_rank == 32
    assert a.kv_budget_bytes_per_gpu == one.kv_budget_bytes_per_gpu
    assert a.dp_rank_max_concurrency == one.max_concurrency
    assert a.max_concurrency == 2 * one.max_concurrency
    # DeepSeek-V3's 256 routed experts: over ep 8 GPUs 32 whole experts each; without ep each
    # expert is split over the 8 tp ranks.
    ep = kvplan.Deployment("deepseek-v3", "h200-sxm", tp=8, ep=8).evaluate(32768, 16)
    assert ep.placement["expert_ep"] == 8 and ep.placement["experts_per_gpu"] == 32
    tp = kvplan.Deployment("deepseek-v3", "h200-sxm", tp=8).evaluate(32768, 16)
    assert tp.placement["expert_tp"] == 8 and tp.placement["experts_per_gpu"] == 256
    # dcp 8 splits each sequence's tokens over the 8 ranks that hold the same MLA latent: 61
    # layers x (512 + 64) x 2 B = 70,272 B per token; 32,768 tokens are 2,302,672,896 B on each
    # GPU at dcp 1 and 4,096 tokens' 287,834,112 B at dcp 8.
    for dcp, per_sequence in ((1, 2_302_672_896), (8, 287_834_112)):
        a = kvplan.Deployment("deepseek-v3", "h200-sxm", tp=8, dcp=dcp).evaluate(32768, 16)
        assert a.placement["dcp"] == dcp and a.kv_bytes_per_sequence_per_gpu == per_sequence


def test_bad_layouts_splits_and_drafters_raise_with_kvplans_message():
    with pytest.raises(kvplan.UsageError, match="^dp: expected >= 1 ranks, found 0$"):
        kvplan.Deployment("llama-3-70b", "h100-sxm", tp=4, dp=0)
    with pytest.raises(kvplan.InvalidLayoutError,
                       match="gpus: expected a multiple of the replica's 8 GPUs"):
        kvplan.Deployment("llama-3-70b", "h100-sxm", tp=4, dp=2, gpus=12)
    with pytest.raises(kvplan.InvalidLayoutError, match="dcp: expected at most tp / kv_heads"):
        kvplan.Deployment("llama-3-70b", "h100-sxm", tp=8, dcp=2)
    with pytest.raises(kvplan.UsageError,
                       match="^num_speculative_tokens: expected speculative_method as well"):
        kvplan.Deployment("llama-3.1-8b", "h100-sxm", num_speculative_tokens=3)
    with pytest.raises(kvplan.InvalidInputError, match="mtp_layers: expected multi-token"):
        kvplan.Deployment("llama-3.1-8b", "h100-sxm", speculative_method="mtp",
                          num_speculative_tokens=1)
    d = kvplan.Deployment("llama-3-70b", "h100-sxm", tp=4)
    with pytest.raises(kvplan.UsageError, match="^output_tokens: expected a token count beside"):
        d.evaluate(prompt_tokens=100)
    with pytest.raises(kvplan.UsageError,
                       match="^context: expected at least prompt_tokens \\+ output_tokens = 1100"):
        d.evaluate(context=1000, prompt_tokens=900, output_tokens=200)
    with pytest.raises(kvplan.UsageError, match="^prompt_tokens: expected >= 1 tokens, found 0$"):
        d.evaluate(prompt_tokens=0, output_tokens=5)


def test_a_calibration_profile_is_used_as_fit_uses_it(tmp_path):
    # kvplan calibrate fits the reserve of a vLLM log and writes it as a profile; profile= uses
    # it as --profile does: the measured reserve replaces the modelled activation and graphs.
    profile = tmp_path / "llama-3-8b.profile.json"
    log = SOURCE_DIR / "tests" / "data" / "logs" / "vllm-v0-llama-3.1-8b-rtx3090-20k.log"
    calibration = cli_json("calibrate", str(log), "--model", "llama-3-8b", "--write-profile",
                           str(profile))
    expected = cli_json("fit", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--context", "8192",
                        "--profile", str(profile))
    answer = kvplan.Deployment("llama-3-8b", "h100-sxm", profile=profile).evaluate(8192)
    assert_same_figures(answer, expected)
    assert answer.activation_bytes == calibration["reserve"] and answer.cuda_graph_bytes == 0
    with pytest.raises(kvplan.InvalidInputError, match="nothing-here.json"):
        kvplan.Deployment("llama-3-8b", "h100-sxm", profile=tmp_path / "nothing-here.json")


def test_a_shared_prefix_gives_fits_figures():
    # Llama-3-8B on one H100 under vLLM: 28,210 blocks of 16 tokens (2 MiB), 28,209 past the null
    # block (the CUDA total 85,029,027,840 B x 0.92 = 78,226,705,613 B, less weights 16,060,522,496
    # B and their rotary table 2,097,152 B, activation 2,465,726,464 B at vLLM's 16,384 tokens and
    # graphs 536,870,912 B, is 59,161,488,589 B / 2 MiB). A sequence of 8,192 tokens holds 512:
    # 1 + (28,209 - 512) / 512 = 55 at once. A 2,048-token system prompt is 128 blocks held once,
    # each sequence then 384 of its own: 1 + 27,697 / 384 = 73.
    args = dict(model="llama-3-8b", gpu="h100-sxm", context="8K", concurrency=64)
    expected = cli_json("fit", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--context", "8K",
                        "--concurrency", "64", "--shared-prefix", "2K")
    assert_same_figures(kvplan.fit(**args, shared_prefix_tokens="2K"), expected)
    d = kvplan.Deployment("llama-3-8b", "h100-sxm")
    a = d.evaluate("8K", 64, shared_prefix_tokens=2048)
    assert_same_figures(a, expected)
    assert a.shared_prefix_blocks == 128
    assert a.max_concurrency == 73 and a.max_concurrency_without_sharing == 55
    assert a.shared_prefix_concurrency_added == 18
    assert a.shared_prefix_blocks_saved == 63 * 128
    assert a.shared_prefix_bytes_saved == 63 * 128 * 2 * 2**20
    # None (the default) is no prefix: the figures without sharing.
    plain = d.evaluate("8K", 64)
    assert plain.max_concurrency == plain.max_concurrency_without_sharing == 55
    assert plain.shared_prefix_tokens == 0 and plain.shared_prefix_bytes_saved == 0
    with pytest.raises(kvplan.InvalidInputError, match="shared_prefix_tokens"):
        d.evaluate(4096, shared_prefix_tokens=5000)
    with pytest.raises(kvplan.UsageError, match="shared_prefix_tokens"):
        d.evaluate(4096, shared_prefix_tokens="lots")


def test_a_profile_estimate_is_of_its_gpu_and_compute_type(tmp_path):
    # A benchmark-only profile fitted on an L4 in bf16: its fractions are of that GPU's peaks, so
    # the library refuses it on an H100 (the one rule --profile follows too); on the L4 its four
    # parameters become the latency estimate's.
    profile = tmp_path / "l4.profile.json"
    profile.write_text('{"kvplan_profile": 1, "gpu": "l4", '
                       '"estimate_bandwidth_fraction": 0.62, "estimate_compute_fraction": 0.37, '
                       '"estimate_layer_overhead_seconds": 0.000123, '
                       '"estimate_all_reduce_latency_seconds": 0.000007, '
                       '"estimate_compute_dtype": "bf16"}')
    with pytest.raises(kvplan.InvalidInputError,
                       match="gpu: expected h100-sxm, the GPU deployed: .* found 'l4'"):
        kvplan.Deployment("llama-3-8b", "h100-sxm", profile=profile)
    a = kvplan.Deployment("llama-3-8b", "l4", profile=profile).evaluate(
        concurrency=4, prompt_tokens=1000, output_tokens=200)
    assert a.estimate_basis == "given"
    assert (a.estimate.bandwidth_fraction, a.estimate.compute_fraction) == (0.62, 0.37)


def test_deployment_kv_dtype_follows_the_checkpoint_as_the_cli_does():
    # Qwen3-235B-A22B-NVFP4's hf_quant_config.json names kv_cache_quant_algo FP8, so vLLM's
    # --kv-cache-dtype auto stores fp8_e4m3 (engine/checkpoint_kv.hpp): 94 layers x 4 KV heads x
    # 128 dims x K and V x 1 B = 96,256 B a token, half of bf16's 192,512 B. Left unset, kv_dtype
    # takes the same rule as the command line's default; given, it wins.
    folder = str(SOURCE_DIR / "tests" / "data" / "quantized" / "Qwen3-235B-A22B-NVFP4")
    dflt = kvplan.Deployment(folder, "b200", tp=4)
    assert dflt.kv_dtype == "fp8_e4m3"
    assert kvplan.Deployment(folder, "b200", tp=4, kv_dtype="bf16").kv_dtype == "bf16"
    # SGLang follows a ModelOpt FP8 cache too; the ideal profile keeps 16 bits.
    assert kvplan.Deployment(folder, "b200", tp=4, engine="sglang").kv_dtype == "fp8_e4m3"
    assert kvplan.Deployment(folder, "b200", tp=4, engine="ideal").kv_dtype == "bf16"
    # One answer: the module's concurrency is the CLI's for the same replica.
    cli = cli_json("fit", "--model", folder, "--gpu", "b200", "--tp", "4", "--context", "8k")
    assert kvplan.fit(folder, "b200", tp=4, context="8k").max_concurrency == cli["max_concurrency"]
