"""The keywords the command line's flags have in Python: each changes the figure its flag changes, by
the same amount, and a knob the engine refuses raises the library's refusal."""

import inspect

import pytest

import kvplan
from conftest import SOURCE_DIR, cli, cli_json

HEADLINE = dict(model="llama-3-70b", gpu="h100-sxm", tp=4, context="8k", concurrency=48)
HEADLINE_ARGS = ("--model", "llama-3-70b", "--gpu", "h100-sxm", "--tp", "4", "--context", "8k",
                 "--concurrency", "48")

# vLLM's newest release charges, per GPU of Llama-3-70B at tp 4 on an H100 SXM, CUDA graphs of
# 256 captured batch sizes x 2 MiB = 536,870,912 B (budget/reserve.hpp) and FlashInfer's all-reduce
# fusion workspace: 2 MiB fused / (8,192 hidden x 2 B) = 128 tokens; buffers of 4 x 128 x 8,192 x
# 2 B = 8 MiB, 4 x 256 x 4 B = 4 KiB and 3 x 8 MiB = 24 MiB, each with its 2,048 B pad rounded up
# to 2 MiB: 10 + 2 + 26 = 38 MiB = 39,845,888 B (engine/allreduce_fusion.hpp). --enforce-eager
# captures no graph and compiles no fusion pass: both go back to the cache.
GRAPHS = 256 * 2 * 2**20
FUSION = (10 + 2 + 26) * 2**20
assert (GRAPHS, FUSION) == (536_870_912, 39_845_888)
EAGER_FREES = GRAPHS + FUSION  # 576,716,800 B = 550 MiB a GPU
# A block of 16 tokens on a GPU holds 80 layers x 2 (K and V) x 8 KV heads / 4 x 128 x 2 B x 16 =
# 1,310,720 B; a sequence of 8,000 tokens is ceil(8,000 / 16) = 500 blocks = 655,360,000 B, more
# than the 550 MiB eager frees: at most one sequence more.
BLOCK = 80 * 2 * (8 // 4) * 128 * 2 * 16
assert BLOCK == 1_310_720


def held(kv_budget):
    """Sequences of 8,000 tokens vLLM holds in `kv_budget` bytes a GPU: whole blocks, 500 each."""
    return kv_budget // BLOCK // 500


def test_enforce_eager_gives_the_cache_its_graphs_and_fusion_workspace():
    normal = kvplan.fit(**HEADLINE)
    eager = kvplan.fit(**HEADLINE, enforce_eager=True)
    assert (normal.cuda_graph_bytes, normal.fusion_workspace_bytes) == (GRAPHS, FUSION)
    assert eager.cuda_graph_bytes == 0 and not eager.fusion_workspace_bytes
    assert eager.kv_budget_bytes_per_gpu - normal.kv_budget_bytes_per_gpu == EAGER_FREES
    # The headline's room for 61, and 62 eager: each the whole blocks of its budget, 500 a
    # sequence.
    assert (normal.max_concurrency, eager.max_concurrency) == (61, 62)
    assert normal.max_concurrency == held(normal.kv_budget_bytes_per_gpu)
    assert eager.max_concurrency == held(eager.kv_budget_bytes_per_gpu)
    # The CLI's figures, one answer.
    expected = cli_json("fit", *HEADLINE_ARGS, "--enforce-eager")
    for key in ("kv_budget_bytes_per_gpu", "cuda_graph_bytes", "max_concurrency",
                "num_gpu_blocks"):
        assert getattr(eager, key) == expected[key], key
    # A prepared deployment is the same, and vLLM's command carries the flag.
    d = kvplan.Deployment("llama-3-70b", "h100-sxm", tp=4, enforce_eager=True)
    a = d.evaluate("8k", 48)
    assert a.kv_budget_bytes_per_gpu == eager.kv_budget_bytes_per_gpu
    assert "--enforce-eager" in a.serve_command()
    assert "--enforce-eager" not in normal.serve_command()


def test_enforce_eager_under_another_engine_is_the_librarys_refusal():
    # The CLI's usage error names its flag before the library's words; Python raises those words.
    code, _, err = cli("fit", *HEADLINE_ARGS, "--engine", "sglang", "--enforce-eager", check=False)
    assert code == 2
    words = "engine sglang: enforce_eager: expected engine vllm (--enforce-eager is vLLM's), " \
            "found sglang"
    assert err.strip().endswith(words)
    for call in (lambda: kvplan.fit(**HEADLINE, engine="sglang", enforce_eager=True),
                 lambda: kvplan.Deployment("llama-3-70b", "h100-sxm", tp=4, engine="trtllm",
                                           enforce_eager=True),
                 lambda: kvplan.plan("llama-3-70b", "h100-sxm", engine="sglang",
                                     enforce_eager=True),
                 lambda: kvplan.compare("llama-3-70b", "h100-sxm", tp=4, engine="sglang",
                                        enforce_eager=True)):
        with pytest.raises(kvplan.InvalidInputError, match="enforce_eager: expected engine vllm"):
            call()
    with pytest.raises(kvplan.InvalidInputError, match="^" + words.replace("(", r"\(")
                       .replace(")", r"\)")):
        kvplan.fit(**HEADLINE, engine="sglang", enforce_eager=True)


def test_enforce_eager_moves_every_functions_budget_as_the_clis():
    # compare: the replica's row, 550 MiB a GPU more, as kvplan compare --enforce-eager.
    rows = [kvplan.compare("llama-3-70b", "h100-sxm", tp=4, context="8k", enforce_eager=e)[0]
            for e in (False, True)]
    budgets = [r.answer.kv_budget_bytes_per_gpu for r in rows]
    assert budgets[1] - budgets[0] == EAGER_FREES
    cli_rows = cli_json("compare", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--tp", "4",
                        "--context", "8k", "--enforce-eager")["rows"]
    assert rows[1].answer.max_concurrency == cli_rows[0]["max_concurrency"]
    # plan: the 4-GPU candidate holds one sequence more, as kvplan plan --enforce-eager.
    args = ("--model", "llama-3-70b", "--gpu", "h100-sxm", "--context", "8k", "--concurrency",
            "48")
    for eager in (False, True):
        best = kvplan.plan("llama-3-70b", "h100-sxm", context="8k", concurrency=48,
                           enforce_eager=eager).best
        expected = cli_json("plan", *args, *(["--enforce-eager"] if eager else []))
        assert (best.gpus, best.tp, best.answer.max_concurrency) == (4, 4, 62 if eager else 61)
        assert best.answer.max_concurrency == expected["candidates"][0]["max_concurrency"]
    # trace: the replay's KV budget on the replica.
    trace = SOURCE_DIR / "tests" / "data" / "traces" / "azure-conv-2023-first1000.csv"
    t = [kvplan.trace(trace, "llama-3-70b", "h100-sxm", tp=4, enforce_eager=e).on_replica
         for e in (False, True)]
    assert t[1].kv_budget_bytes_per_gpu - t[0].kv_budget_bytes_per_gpu == EAGER_FREES
    # diff: each revision's answer.
    d = [kvplan.diff("llama-3-70b", "llama-3-70b", "h100-sxm", tp=4, context="8k",
                     concurrency=48, enforce_eager=e).new_answer for e in (False, True)]
    assert (d[0].max_concurrency, d[1].max_concurrency) == (61, 62)
    # fleet and disagg take it: the fleet's replicas are the eager ones.
    f = kvplan.fleet("llama-3-70b", "h100-sxm", tp=4, rate=4, tpot_ms=50, prompt_tokens=2000,
                     output_tokens=500, enforce_eager=True)
    expected = cli_json("fleet", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--tp", "4",
                        "--rate", "4", "--tpot-ms", "50", "--prompt-tokens", "2000",
                        "--output-tokens", "500", "--enforce-eager")
    assert f.replicas == expected["replicas"]
    p = kvplan.disagg("llama-3-70b", "h100-sxm", rate=10, prompt_tokens=2000, output_tokens=500,
                      ttft_ms=500, tpot_ms=50, enforce_eager=True)
    expected = cli_json("disagg", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--rate", "10",
                        "--prompt-tokens", "2000", "--output-tokens", "500", "--ttft-ms", "500",
                        "--tpot-ms", "50", "--enforce-eager")
    assert [(q.pool, q.sequences_per_replica, q.replicas) for q in p.pools] == \
        [(q["pool"], q["sequences_per_replica"], q["replicas"]) for q in expected["pools"]]


def test_calibrate_models_an_eager_start():
    # Llama-3-8B on one GPU: no fusion workspace at tp 1, so eager leaves out the 512 MiB of
    # graphs alone from the modelled terms.
    log = SOURCE_DIR / "tests" / "data" / "logs" / "vllm-v0-llama-3.1-8b-rtx3090-20k.log"
    normal = kvplan.calibrate(log, model="llama-3-8b").log
    eager = kvplan.calibrate(log, model="llama-3-8b", enforce_eager=True).log
    assert (normal.modelled_cuda_graph_bytes, eager.modelled_cuda_graph_bytes) == (GRAPHS, 0)
    with pytest.raises(kvplan.UsageError, match="^enforce_eager: expected a start-up log"):
        kvplan.calibrate(bench=SOURCE_DIR / "tests" / "data" / "vllm_bench_serve" / "x.json",
                         model="llama-3-8b", gpu="h100-sxm", enforce_eager=True)


# Qwen3-235B-A22B-NVFP4's hf_quant_config.json names kv_cache_quant_algo FP8: vLLM's auto stores
# fp8_e4m3 from v0.14 and bf16 before (engine/checkpoint_kv.hpp): 94 layers x 4 KV heads x 128 x
# K and V x 1 B = 96,256 B a token, or 192,512 B under --engine-version 0.13.
NVFP4 = str(SOURCE_DIR / "tests" / "data" / "quantized" / "Qwen3-235B-A22B-NVFP4")
FP8_TOKEN = 94 * 4 * 128 * 2
assert FP8_TOKEN == 96_256


def test_engine_version_reaches_roofline_trace_and_diff():
    # roofline: at tp 4 a GPU reads one KV head of each layer per token, 94 x 128 x 2 x (2 - 1) B =
    # 24,064 B more in bf16; 8,000 tokens of one sequence, 192,512,000 B more a step.
    new = kvplan.roofline(NVFP4, "b200", tp=4, context="8k")
    old = kvplan.roofline(NVFP4, "b200", tp=4, context="8k", engine_version="0.13")
    assert old.bytes_per_step - new.bytes_per_step == 8000 * 94 * 128 * 2
    expected = cli_json("roofline", "--model", NVFP4, "--gpu", "b200", "--tp", "4", "--context",
                        "8k", "--engine-version", "0.13")
    assert old.bytes_per_step == expected["bytes_per_step"]
    assert old.tpot_seconds == expected["tpot_seconds"]
    # diff: the size each revision's cache has under that release.
    d = kvplan.diff("qwen3-235b-a22b", NVFP4, context="8k", engine_version="0.13")
    assert (d.old_size.kv_bytes_per_token, d.new_size.kv_bytes_per_token) == (
        2 * FP8_TOKEN, 2 * FP8_TOKEN)
    d = kvplan.diff("qwen3-235b-a22b", NVFP4, context="8k")
    assert d.new_size.kv_bytes_per_token == FP8_TOKEN
    # trace: each request's KV, the whole model, doubles.
    trace = SOURCE_DIR / "tests" / "data" / "traces" / "azure-conv-2023-first1000.csv"
    new = kvplan.trace(trace, NVFP4)
    old = kvplan.trace(trace, NVFP4, engine_version="0.13")
    assert old.kv.mean_exact == 2 * new.kv.mean_exact
    assert old.waste.used_bytes == 2 * new.waste.used_bytes
    expected = cli_json("trace", str(trace), "--model", NVFP4, "--engine-version", "0.13")
    assert old.waste.used_bytes == expected["kv_used_per_gpu"]
    # TensorRT-LLM has no release table, and SGLang's has no 0.13: the library's refusals.
    with pytest.raises(kvplan.InvalidInputError, match="engine_version: expected engine vllm or"):
        kvplan.roofline("llama-3-8b", "h100-sxm", engine="trtllm", engine_version="0.13")
    with pytest.raises(kvplan.InvalidInputError, match="expected an SGLang release from 0.4 to"):
        kvplan.roofline("llama-3-8b", "h100-sxm", engine="sglang", engine_version="0.13")


def test_engine_version_names_sglang_releases_as_the_cli_does():
    # SGLang's 0.4 line picks mem_fraction_static by tp: 0.81 at tp 8 (engine/sglang_release.hpp);
    # the newest release, 0.5.20, by GPU memory: 0.818 for an H100 at tp 8. The answer names the
    # release, as fit's JSON does.
    old = kvplan.fit("llama-3-70b", "h100-sxm", tp=8, context="8k", engine="sglang",
                     engine_version="0.4.3.post4")
    new = kvplan.fit("llama-3-70b", "h100-sxm", tp=8, context="8k", engine="sglang")
    assert old.engine_version == "0.4.3"
    assert new.engine_version == "0.5.20"
    cli = cli_json("fit", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--tp", "8", "--context",
                   "8k", "--engine", "sglang", "--engine-version", "0.4.3.post4")
    assert cli["engine_version"] == "0.4.3"
    assert old.kv_budget_bytes_per_gpu == cli["kv_budget_bytes_per_gpu"]
    assert old.kv_budget_bytes_per_gpu < new.kv_budget_bytes_per_gpu
    # 0.4.8 to 0.5.2 ran SGLang PR #7054's reserve: (9.5 + 8 / 2) GiB of an H100's 81,559 MiB at
    # tp 8, 0.831, above 0.818, as the CLI gives it.
    mid = kvplan.fit("llama-3-70b", "h100-sxm", tp=8, context="8k", engine="sglang",
                     engine_version="0.4.9")
    cli_mid = cli_json("fit", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--tp", "8",
                       "--context", "8k", "--engine", "sglang", "--engine-version", "0.4.9")
    assert mid.engine_version == "0.4.9"
    assert mid.kv_budget_bytes_per_gpu == cli_mid["kv_budget_bytes_per_gpu"]
    assert mid.kv_budget_bytes_per_gpu > new.kv_budget_bytes_per_gpu
    # 0.4.7's tag ran the tp table and 0.4.7.post1 the reserve, one release to kvplan: a fraction
    # must be given.
    with pytest.raises(kvplan.InvalidInputError, match="0.4.7.post1"):
        kvplan.fit("llama-3-70b", "h100-sxm", tp=8, context="8k", engine="sglang",
                   engine_version="0.4.7")
    assert kvplan.fit("llama-3-70b", "h100-sxm", tp=8, context="8k", engine="sglang",
                      engine_version="0.4.7", gpu_memory_utilization=0.9).engine_version == "0.4.7"


def test_calibrate_takes_the_release_as_the_cli_does():
    # A log naming no release: engine_version= is --engine-version. gpt-oss-20b at tp 2 on an
    # H100 loads 143,130,624 B less under v0.13's triton_kernels than under v0.19's
    # (tests/calibrate/test_calibrate_replica.cpp derives it).
    log = SOURCE_DIR / "tests" / "data" / "startup_logs" / "vllm" / "gpt-oss-20b-h100-tp2-8k.log"
    args = dict(model="gpt-oss-20b", gpu="h100-sxm", tp=2)
    v13 = kvplan.calibrate(str(log), engine_version="0.13", **args)
    v19 = kvplan.calibrate(str(log), engine_version="0.19", **args)
    assert (v13.engine_version, v13.engine_version_source) == ("0.13", "given")
    assert v19.log.modelled_weights_bytes - v13.log.modelled_weights_bytes == 143_130_624
    newest = kvplan.calibrate(str(log), **args)
    assert newest.engine_version_source == "newest"
    expected = cli_json("calibrate", str(log), "--model", "gpt-oss-20b", "--gpu", "h100-sxm",
                        "--tp", "2", "--engine-version", "0.13")
    assert expected["inputs"]["engine_version"] == "0.13"
    assert expected["engine_version_source"] == "given"


# Flags a keyword of another name or another object takes, or that change no figure of the answer.
ELSEWHERE = {
    # Rendering: the answer objects carry the figures.
    "--help", "--format", "--explain", "--plot",
    # Calibration.write_profile(path).
    "--write-profile",
    # kvplan.Model(source, model_type=..., mamba_cache_dtype=..., mamba_ssm_cache_dtype=...) and
    # Model.from_fields(...) (a Model goes wherever a model does).
    "--model-type", "--mamba-cache-dtype", "--mamba-ssm-cache-dtype", "--layers", "--hidden-size",
    "--heads", "--kv-heads", "--head-dim", "--vocab", "--intermediate-size", "--experts",
    "--experts-per-token", "--expert-intermediate-size", "--window", "--max-position-embeddings",
    # ep=dp x tp states the same layout.
    "--enable-expert-parallel",
}

# The flags of a command that no keyword of its function takes yet, each a figure the Python
# answer cannot move: listed so that a new flag comes with its keyword or its line here.
REPLICA_EXTRAS = {"--max-loras", "--max-lora-rank", "--fully-sharded-loras", "--max-cpu-loras",
                  "--lora-target-modules", "--limit-mm-per-prompt", "--skip-mm-profiling"}
SPECULATION = {"--speculative-method", "--num-speculative-tokens", "--draft-model"}
NOT_YET = {
    "fit": set(),
    "compare": set(),
    "plan": set(),
    # kvplan.disagg takes the speculative keywords and raises plan_disaggregated's refusal.
    "disagg": set(),
    # kvplan.fleet and kvplan.trace take the speculative keywords and raise the library's refusal.
    "fleet": set(),
    "trace": set(),
    "diff": set(),
    # calibrate reads vLLM's log: --engine is vllm or refused, and with it --lora-target-modules
    # (SGLang's flag). Every other flag has its keyword: what calibrate does not model (--gpus,
    # the speculative flags, --allow-long-context, --chunked-local-hybrid, --without-flashinfer)
    # both refuse through the library (calibration_refusal).
    "calibrate": {"--engine", "--lora-target-modules"},
}
# kvplan.roofline's answer is the decode bound alone (kvplan roofline also shows what the cache
# holds, and the estimate): the budget's knobs move none of its figures.
ROOFLINE_BOUND_ONLY = {"--gpus", "--redundant-experts", "--block-size", "--gpu-memory-utilization",
                       "--kv-memory", "--max-num-seqs", "--max-num-batched-tokens",
                       "--num-gpu-blocks-override", "--allow-long-context", "--enforce-eager",
                       "--chunked-local-hybrid", "--without-flashinfer", "--profile",
                       "--prompt-tokens", "--output-tokens", "--length-spread",
                       "--num-prompts", "--fixed-lengths"} | REPLICA_EXTRAS | SPECULATION
NOT_YET["roofline"] = ROOFLINE_BOUND_ONLY


# Flags whose keyword is spelled otherwise: plan's --no-dp is dp=False.
RENAMED = {"--no-dp": "dp", "--no-ep": "ep", "--no-dcp": "dcp"}


def flags_of(command):
    """Each long flag of `kvplan <command> --help`, with its other spellings: a list of sets."""
    _, out, _ = cli(command, "--help")
    flags = []
    for line in out.splitlines():
        words = line.strip().split(" ")[0]
        if not words.startswith("-"):
            continue
        names = {n for n in words.split(",") if n.startswith("--")}
        if names:
            flags.append(names)
    return flags


@pytest.mark.parametrize("command", sorted(NOT_YET))
def test_every_flag_has_its_keyword_or_says_why_not(command):
    fn = kvplan.Deployment if command == "fit" else getattr(kvplan, command)
    keywords = set(inspect.signature(fn).parameters)
    if command == "fit":
        keywords |= set(inspect.signature(kvplan.Deployment.evaluate).parameters)
        assert keywords - {"self"} <= set(inspect.signature(kvplan.fit).parameters)
    missing = []
    for names in flags_of(command):
        if names & ELSEWHERE or names & NOT_YET[command]:
            continue
        spelled = {RENAMED.get(n, n[2:].replace("-", "_")) for n in names}
        if not spelled & keywords:
            missing.append(sorted(names)[0])
    assert missing == [], f"kvplan {command}: flags without a keyword"
    # Nothing listed as missing that has since been bound.
    bound = {f for f in NOT_YET[command] if f[2:].replace("-", "_") in keywords}
    assert bound == set(), f"kvplan.{command} takes these now: drop them from NOT_YET"


def test_lora_slots_images_and_redundant_experts_move_the_budget_as_the_flags():
    # 4 LoRA slots of rank 16 on Llama-3-70B at tp 4: 854,589,440 B a GPU (tests/budget/
    # test_budget.cpp), out of the KV budget byte for byte; max_cpu_loras is host memory.
    plain = kvplan.fit("llama-3-70b", "h100-sxm", tp=4, context="8k")
    lora = kvplan.fit("llama-3-70b", "h100-sxm", tp=4, context="8k", max_loras=4,
                      max_lora_rank=16, max_cpu_loras=32)
    assert lora.lora_bytes == 854_589_440
    assert plain.kv_budget_bytes_per_gpu - lora.kv_budget_bytes_per_gpu == 854_589_440
    assert "--max-loras 4 --max-lora-rank 16 --max-cpu-loras 32" in lora.serve_command()
    with pytest.raises(kvplan.UsageError, match=r"^max_cpu_loras: expected at least max_loras"):
        kvplan.fit("llama-3-70b", "h100-sxm", tp=4, max_loras=4, max_cpu_loras=2)
    with pytest.raises(kvplan.UsageError, match="^max_lora_rank: expected max_loras as well"):
        kvplan.fit("llama-3-70b", "h100-sxm", tp=4, max_lora_rank=8)
    with pytest.raises(kvplan.UsageError, match="^lora_target_modules: expected engine 'sglang'"):
        kvplan.fit("llama-3-70b", "h100-sxm", tp=4, max_loras=4, lora_target_modules="q_proj")
    # SGLang's targets: only their stacks are charged, as kvplan fit --lora-target-modules.
    args = ("--model", "llama-3-70b", "--gpu", "h100-sxm", "--tp", "4", "--context", "8k",
            "--engine", "sglang", "--max-loras", "4", "--lora-target-modules", "q_proj,v_proj")
    sglang = kvplan.fit("llama-3-70b", "h100-sxm", tp=4, context="8k", engine="sglang",
                        max_loras=4, lora_target_modules="q_proj,v_proj")
    assert sglang.lora_bytes == cli_json("fit", *args)["lora_bytes"]
    # Gemma-3-27B on an H100: vLLM profiles 16,384 tokens, 64 images of 256 tokens, each token a
    # 5,376-wide bf16 vector: 64 x 256 x 5,376 x 2 = 176,160,768 B of encoder outputs, which
    # limit_mm_per_prompt=0 (or {'image': 0}) and skip_mm_profiling give back to the cache.
    on = kvplan.fit("gemma-3-27b", "h100-sxm", context="8k")
    assert on.encoder_cache_bytes == 64 * 256 * 5376 * 2 == 176_160_768
    for off in (dict(limit_mm_per_prompt=0), dict(limit_mm_per_prompt={"image": 0}),
                dict(skip_mm_profiling=True)):
        a = kvplan.fit("gemma-3-27b", "h100-sxm", context="8k", **off)
        assert a.encoder_cache_bytes == 0, off
        assert a.kv_budget_bytes_per_gpu - on.kv_budget_bytes_per_gpu == 176_160_768, off
    with pytest.raises(kvplan.UsageError, match="^limit_mm_per_prompt: expected"):
        kvplan.fit("gemma-3-27b", "h100-sxm", limit_mm_per_prompt={"video": 1})
    with pytest.raises(kvplan.UsageError, match="^skip_mm_profiling: expected engine 'vllm'"):
        kvplan.fit("gemma-3-27b", "h100-sxm", engine="sglang", skip_mm_profiling=True)
    # EPLB's redundant experts: Qwen3-30B-A3B's 128 experts and 32 copies over ep 2, 80 a GPU
    # where there were 64. One expert is 3 x 2,048 hidden x 768 wide x 2 B = 9,437,184 B, so 16
    # more in each of the 48 layers add 7,247,757,312 B a GPU, as kvplan fit --redundant-experts.
    plain = kvplan.fit("qwen3-30b-a3b", "h100-sxm", tp=2, ep=2, context="8k")
    eplb = kvplan.fit("qwen3-30b-a3b", "h100-sxm", tp=2, ep=2, context="8k", redundant_experts=32)
    assert (eplb.placement["physical_experts"], eplb.placement["experts_per_gpu"]) == (160, 80)
    assert eplb.weight_bytes_per_gpu - plain.weight_bytes_per_gpu == 16 * 48 * 9_437_184
    expected = cli_json("fit", "--model", "qwen3-30b-a3b", "--gpu", "h100-sxm", "--tp", "2",
                        "--ep", "2", "--context", "8k", "--redundant-experts", "32")
    assert eplb.weight_bytes_per_gpu == expected["weight_bytes_per_gpu"]
    with pytest.raises(kvplan.InvalidLayoutError, match="redundant_experts"):
        kvplan.fit("llama-3-8b", "h100-sxm", redundant_experts=1)


def test_calibrate_says_where_the_memory_total_came_from():
    # The log's "total_gpu_memory (23.58GiB)" without a GPU; with gpu="l40s" the spec's CUDA
    # runtime total, memory.runtime_total_bytes = 47,695,527,936 B (configs/gpus/l40s.json).
    log = SOURCE_DIR / "tests" / "data" / "logs" / "vllm-v0-llama-3.1-8b-rtx3090-20k.log"
    assert kvplan.calibrate(log, model="llama-3-8b").log.memory_total_source == "log"
    c = kvplan.calibrate(log, model="llama-3-8b", gpu="l40s", gpu_memory_utilization=0.5).log
    assert (c.memory_total_source, c.memory_total_bytes) == ("gpu_spec", 47_695_527_936)
    assert c.utilization_source == "given"


def test_calibrate_takes_the_replica_keywords_as_the_cli_does():
    log = str(SOURCE_DIR / "tests" / "data" / "logs" / "vllm-v0-llama-3.1-8b-rtx3090-20k.log")
    args = (log, "--model", "llama-3-8b")
    plain = kvplan.calibrate(log, model="llama-3-8b").log
    # LoRA: 4 slots of rank 16 on Llama-3-8B. A slot's stacks in a layer: A is 16 x the input
    # widths of q, k, v, o, gate and up (4,096 each) and down (14,336), 16 x 38,912; B is 16 x
    # the output widths 4,096 + 1,024 + 1,024 + 4,096 + 2 x 14,336 + 4,096 = 16 x 43,008:
    # 1,310,720 bf16 values, 2,621,440 B; x 32 layers x 4 slots = 335,544,320 B, allocated with
    # the weights, out of the modelled KV memory. The measured reserve is the log's, unmoved.
    kw = dict(max_loras=4, max_lora_rank=16, max_cpu_loras=8)
    lora = kvplan.calibrate(log, model="llama-3-8b", **kw).log
    assert plain.modelled_kv_bytes - lora.modelled_kv_bytes == 32 * 4 * 2_621_440 == 335_544_320
    assert lora.reserve_bytes == plain.reserve_bytes
    expected = cli_json("calibrate", *args, "--max-loras", "4", "--max-lora-rank", "16",
                        "--max-cpu-loras", "8")
    assert lora.modelled_kv_bytes == expected["modelled_kv"]
    # At tp 1 fully sharded stacks are the same bytes, as kvplan calibrate --fully-sharded-loras.
    sharded = kvplan.calibrate(log, model="llama-3-8b", fully_sharded_loras=True, **kw).log
    assert sharded.modelled_kv_bytes == lora.modelled_kv_bytes
    # vLLM's --num-gpu-blocks-override replaces the profiled block count
    # (vllm/v1/core/kv_cache_utils.py, get_num_blocks): the log's 1,952 reproduced as 100.
    override = kvplan.calibrate(log, model="llama-3-8b", num_gpu_blocks_override=100).log
    assert (plain.reproduced_gpu_blocks, override.reproduced_gpu_blocks) == (1952, 100)
    expected = cli_json("calibrate", *args, "--num-gpu-blocks-override", "100")
    assert expected["gpu_blocks"] == "1,952 / 100"
    # A vision model's encoder outputs: Gemma-3-27B on an H100 profiles 64 images of 256 tokens,
    # each token a 5,376-wide bf16 vector, 64 x 256 x 5,376 x 2 = 176,160,768 B, which
    # limit_mm_per_prompt=0 or skip_mm_profiling give back to the modelled KV memory.
    gemma = str(SOURCE_DIR / "tests" / "data" / "startup_logs" / "vllm" / "gemma-3-27b-h100-8k.log")
    on = kvplan.calibrate(gemma, model="gemma-3-27b", gpu="h100-sxm").log
    for off in (dict(limit_mm_per_prompt=0), dict(skip_mm_profiling=True)):
        a = kvplan.calibrate(gemma, model="gemma-3-27b", gpu="h100-sxm", **off).log
        assert a.modelled_kv_bytes - on.modelled_kv_bytes == 176_160_768, off
    expected = cli_json("calibrate", gemma, "--model", "gemma-3-27b", "--gpu", "h100-sxm",
                        "--limit-mm-per-prompt", "0")
    assert expected["modelled_kv"] == on.modelled_kv_bytes + 176_160_768
    # expert_dtype: Qwen3-235B-A22B's routed experts in fp8 at tp 4 on H100s. 94 layers x 128
    # experts x 3 x 4,096 x 1,536 = 227,096,395,776 parameters, a quarter a GPU, one byte each
    # instead of two, beside a float32 scale per tensor that every rank holds (94 x 128 x 3 x 4 B
    # = 144,384 B): 56,774,098,944 - 144,384 = 56,773,954,560 B less, as fit sizes them.
    qwen = str(SOURCE_DIR / "tests" / "data" / "startup_logs" / "vllm" /
               "qwen3-235b-a22b-fp8-h100-tp4.log")
    replica = dict(model="qwen3-235b-a22b", gpu="h100-sxm", tp=4)
    bf16 = kvplan.calibrate(qwen, **replica).log
    fp8 = kvplan.calibrate(qwen, **replica, expert_dtype="fp8").log
    assert bf16.modelled_weights_bytes - fp8.modelled_weights_bytes == \
        227_096_395_776 // 4 - 94 * 128 * 3 * 4 == 56_773_954_560
    assert fp8.modelled_weights_bytes == kvplan.fit(**replica, context="8k",
                                                    expert_dtype="fp8").weight_bytes_per_gpu
    expected = cli_json("calibrate", qwen, "--model", "qwen3-235b-a22b", "--gpu", "h100-sxm",
                        "--tp", "4", "--expert-dtype", "fp8")
    assert expected["modelled_weights"] == fp8.modelled_weights_bytes
    assert expected["inputs"]["weights"] == "bf16, experts fp8"


def test_calibrate_refuses_what_it_does_not_model_as_the_cli_does():
    # One refusal, the library's (calibration_refusal), named as the keyword or as the flag: exit
    # 2 and a UsageError, never a figure quietly left out.
    log = str(SOURCE_DIR / "tests" / "data" / "logs" / "vllm-v0-llama-3.1-8b-rtx3090-20k.log")
    drafter = "expected no speculative decoding"
    defaults = "expected no vLLM default overridden with calibrate"
    for keyword, value, flag, expected in (
            ("gpus", 2, ["--gpus", "2"], "expected one replica"),
            ("speculative_method", "ngram", ["--speculative-method", "ngram"], drafter),
            ("num_speculative_tokens", 3, ["--num-speculative-tokens", "3"], drafter),
            ("draft_model", "llama-3-8b", ["--draft-model", "llama-3-8b"], drafter),
            ("allow_long_context", True, ["--allow-long-context"],
             "expected no context-limit override"),
            ("chunked_local_hybrid", True, ["--chunked-local-hybrid", "1"], defaults),
            ("without_flashinfer", False, ["--without-flashinfer", "0"], defaults)):
        with pytest.raises(kvplan.UsageError, match=f"^{keyword}: {expected}"):
            kvplan.calibrate(log, model="llama-3-8b", **{keyword: value})
        code, _, err = cli("calibrate", log, "--model", "llama-3-8b", *flag, check=False)
        assert code == 2 and f"{flag[0]}: {expected}" in err, err
    # Without a log, what shapes only a log's cache: the LoRA slots and the encoder outputs too.
    bench = str(SOURCE_DIR / "tests" / "data" / "vllm_bench_serve" /
                "nim-llama-3.3-70b-fp8-2xh100-5000-500-c1.json")
    replica = dict(model="llama-3-70b", gpu="h100-sxm", tp=2)
    for keyword, value, flag in (("max_loras", 4, ["--max-loras", "4"]),
                                 ("num_gpu_blocks_override", 10,
                                  ["--num-gpu-blocks-override", "10"]),
                                 ("skip_mm_profiling", True, ["--skip-mm-profiling"])):
        with pytest.raises(kvplan.UsageError,
                           match=f"^{keyword}: expected a start-up log as well"):
            kvplan.calibrate(bench=bench, **replica, **{keyword: value})
        code, _, err = cli("calibrate", "--bench", bench, "--model", "llama-3-70b", "--gpu",
                           "h100-sxm", "--tp", "2", *flag, check=False)
        assert code == 2 and f"{flag[0]}: expected a start-up log as well" in err, err


def test_a_call_gives_back_no_reference_it_did_not_take():
    # Each function builds its argument list with None for the keywords it leaves out; a None
    # given back once too often per call would free it after some thousands of calls (a cache
    # filled or emptied on the way moves it by one or two, where such a bug moves it by 100).
    import sys
    calls = (lambda: kvplan.fit("llama-3-8b", "h100-sxm", context="8k"),
             lambda: kvplan.compare("llama-3-8b", "h100-sxm", context="8k"),
             lambda: kvplan.roofline("llama-3-8b", "h100-sxm"),
             lambda: kvplan.fleet("llama-3-8b", "h100-sxm", rate=1, tpot_ms=50, prompt_tokens=100,
                                  output_tokens=10))
    for call in calls:
        call()
        before = sys.getrefcount(None)
        for _ in range(100):
            call()
        assert abs(sys.getrefcount(None) - before) <= 5


def test_the_searches_take_the_budgets_knobs():
    # plan within 8 GiB of KV per GPU: Llama-3-8B's sequence of 8,192 tokens is 512 blocks of
    # 16 x 32 layers x 2 x 8 KV heads x 128 x 2 B = 1 GiB, and vLLM's 4,095 blocks of the 4,096
    # (one held back) hold 7, the CLI's nearest miss.
    p = kvplan.plan("llama-3-8b", "h100-sxm", context=8192, concurrency=64, max_gpus=1,
                    kv_memory="8GiB")
    assert not p.found and p.nearest_misses[0].answer.max_concurrency == 7
    assert p.nearest_misses[0].answer.kv_budget_bytes_per_gpu == 8 * 2**30
    expected = cli_json("plan", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--context", "8192",
                        "--concurrency", "64", "--max-gpus", "1", "--kv-memory", "8GiB")
    assert not expected["found"]
    # num_gpu_blocks_override: 1,025 blocks hold two sequences of 512 blocks.
    p = kvplan.plan("llama-3-8b", "h100-sxm", context=8192, concurrency=64, max_gpus=1,
                    num_gpu_blocks_override=1025)
    assert p.nearest_misses[0].answer.max_concurrency == 2
    # Past Llama-3-70B's limit of 8,192 tokens nothing starts, unless allowed, as the flag says.
    assert kvplan.plan("llama-3-70b", "h200-sxm", context="16k").refused.answer.refusal == \
        "context_limit"
    long = kvplan.plan("llama-3-70b", "h200-sxm", context="16k", allow_long_context=True)
    cli_long = cli_json("plan", "--model", "llama-3-70b", "--gpu", "h200-sxm", "--context", "16k",
                        "--allow-long-context")["candidates"][0]
    assert (long.best.gpus, long.best.answer.max_concurrency) == (
        cli_long["gpus"], cli_long["max_concurrency"])
    # fleet and disagg read the KV memory given as kvplan fleet and kvplan disagg do.
    kw = dict(rate=4, tpot_ms=50, prompt_tokens=2000, output_tokens=500)
    f = kvplan.fleet("llama-3-8b", "h100-sxm", kv_memory="8GiB", **kw)
    expected = cli_json("fleet", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--rate", "4",
                        "--tpot-ms", "50", "--prompt-tokens", "2000", "--output-tokens", "500",
                        "--kv-memory", "8GiB")
    assert f.replicas == expected["replicas"]
    d = kvplan.disagg("llama-3-70b", "h100-sxm", rate=10, prompt_tokens=2000, output_tokens=500,
                      ttft_ms=500, tpot_ms=50, max_num_seqs=16)
    expected = cli_json("disagg", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--rate", "10",
                        "--prompt-tokens", "2000", "--output-tokens", "500", "--ttft-ms", "500",
                        "--tpot-ms", "50", "--max-num-seqs", "16")
    assert [(q.pool, q.sequences_per_replica, q.replicas) for q in d.pools] == \
        [(q["pool"], q["sequences_per_replica"], q["replicas"]) for q in expected["pools"]]
    assert all(q.sequences_per_replica <= 16 for q in d.pools if q.pool == "decode")


def test_an_unknown_keyword_is_a_type_error_naming_it():
    # Every function reads its keywords through one table: a misspelt one is named, with the
    # keyword it is nearest to, as Python names it.
    calls = {"fit": (kvplan.fit, ("llama-3-8b", "h100-sxm")),
             "Deployment.__init__": (kvplan.Deployment, ("llama-3-8b", "h100-sxm")),
             "compare": (kvplan.compare, ("llama-3-8b",)),
             "plan": (kvplan.plan, ("llama-3-8b",)),
             "roofline": (kvplan.roofline, ("llama-3-8b", "h100-sxm")),
             "diff": (kvplan.diff, ("llama-3-8b", "llama-3-8b"))}
    for name, (fn, args) in calls.items():
        with pytest.raises(TypeError, match=rf"^{name}\(\) got an unexpected keyword argument "
                           r"'kv_dtpye' \(did you mean 'kv_dtype'\?\)$"):
            fn(*args, kv_dtpye="fp8")
    with pytest.raises(TypeError, match=r"^fit\(\) takes 2 positional arguments but 3 were given"):
        kvplan.fit("llama-3-8b", "h100-sxm", 4)
    with pytest.raises(TypeError, match=r"^fit\(\) missing required argument 'gpu'"):
        kvplan.fit("llama-3-8b")
    with pytest.raises(TypeError, match=r"^fit\(\) got multiple values for argument 'model'"):
        kvplan.fit("llama-3-8b", "h100-sxm", model="llama-3-70b")
    with pytest.raises(TypeError, match=r"^fleet\(\) missing required argument 'rate'"):
        kvplan.fleet("llama-3-8b", "h100-sxm", tpot_ms=50, prompt_tokens=100, output_tokens=10)
    # A switch reads as pybind11 read a bool (None is False), anything else names the keyword.
    assert kvplan.fit("llama-3-8b", "h100-sxm", enforce_eager=None).cuda_graph_bytes == GRAPHS
    with pytest.raises(TypeError, match="^enforce_eager: expected True or False, found str"):
        kvplan.fit("llama-3-8b", "h100-sxm", enforce_eager="yes")
    # One table, one signature text: each keyword's default is the same in every function.
    defaults = {}
    for fn in (kvplan.fit, kvplan.Deployment.__init__, kvplan.compare, kvplan.roofline,
               kvplan.trace, kvplan.diff, kvplan.fleet, kvplan.calibrate):
        for p in inspect.signature(fn).parameters.values():
            if p.name in ("tp", "pp", "engine", "kv_dtype", "max_loras", "enforce_eager"):
                defaults.setdefault(p.name, set()).add(repr(p.default))
    assert defaults == {"tp": {"1"}, "pp": {"1"}, "engine": {"'vllm'"}, "kv_dtype": {"None"},
                        "max_loras": {"None"}, "enforce_eager": {"False"}}


# 4 LoRA slots of rank 16 on Llama-3-70B at tp 4: 854,589,440 B a GPU (tests/budget/
# test_budget.cpp), charged with the weights.
LORA = 854_589_440
LORA_KW = dict(max_loras=4, max_lora_rank=16)
LORA_ARGS = ("--max-loras", "4", "--max-lora-rank", "16")


def test_lora_slots_reach_every_function_with_a_budget():
    # compare: the row's budget, and the CLI's row (59 sequences where the headline has 61).
    rows = [kvplan.compare("llama-3-70b", "h100-sxm", tp=4, context="8k", **kw)[0].answer
            for kw in ({}, LORA_KW)]
    assert rows[1].lora_bytes == LORA
    assert rows[0].kv_budget_bytes_per_gpu - rows[1].kv_budget_bytes_per_gpu == LORA
    expected = cli_json("compare", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--tp", "4",
                        "--context", "8k", *LORA_ARGS)["rows"][0]
    assert (rows[1].kv_budget_bytes_per_gpu, rows[1].max_concurrency) == (
        expected["kv_budget_bytes_per_gpu"], expected["max_concurrency"]) and \
        rows[1].max_concurrency == 59
    # trace: the replay's replica.
    trace = SOURCE_DIR / "tests" / "data" / "traces" / "azure-conv-2023-first1000.csv"
    t = [kvplan.trace(trace, "llama-3-70b", "h100-sxm", tp=4, **kw).on_replica
         for kw in ({}, LORA_KW)]
    assert t[0].kv_budget_bytes_per_gpu - t[1].kv_budget_bytes_per_gpu == LORA
    assert t[1].kv_budget_bytes_per_gpu == cli_json(
        "trace", str(trace), "--model", "llama-3-70b", "--gpu", "h100-sxm", "--tp", "4",
        *LORA_ARGS)["kv_budget_per_gpu"]
    # diff: each revision's answer.
    d = kvplan.diff("llama-3-70b", "llama-3-70b", "h100-sxm", tp=4, context="8k", **LORA_KW)
    assert d.new_answer.lora_bytes == LORA and d.new_answer.max_concurrency == 59
    # fleet: the budget its batch is sized in, as kvplan fleet's kv_budget_per_gpu.
    kw = dict(tp=4, rate=4, tpot_ms=50, prompt_tokens=2000, output_tokens=500)
    f = [kvplan.fleet("llama-3-70b", "h100-sxm", **kw, **x) for x in ({}, LORA_KW)]
    assert f[0].kv_budget_bytes_per_gpu - f[1].kv_budget_bytes_per_gpu == LORA
    assert f[1].kv_budget_bytes_per_gpu == cli_json(
        "fleet", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--tp", "4", "--rate", "4",
        "--tpot-ms", "50", "--prompt-tokens", "2000", "--output-tokens", "500",
        *LORA_ARGS)["kv_budget_per_gpu"]
    # plan: the 4-GPU replica holds 59 of the 48 asked, as kvplan plan --max-loras.
    best = kvplan.plan("llama-3-70b", "h100-sxm", context="8k", concurrency=48, **LORA_KW).best
    assert (best.gpus, best.answer.lora_bytes, best.answer.max_concurrency) == (4, LORA, 59)
    expected = cli_json("plan", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--context", "8k",
                        "--concurrency", "48", *LORA_ARGS)["candidates"][0]
    assert best.answer.kv_budget_bytes_per_gpu == expected["kv_budget_bytes_per_gpu"]
    # disagg: its pools, as the CLI's.
    kw = dict(rate=10, prompt_tokens=2000, output_tokens=500, ttft_ms=500, tpot_ms=50)
    p = kvplan.disagg("llama-3-70b", "h100-sxm", **kw, **LORA_KW)
    expected = cli_json("disagg", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--rate", "10",
                        "--prompt-tokens", "2000", "--output-tokens", "500", "--ttft-ms", "500",
                        "--tpot-ms", "50", *LORA_ARGS)
    assert [(q.pool, q.sequences_per_replica, q.replicas) for q in p.pools] == \
        [(q["pool"], q["sequences_per_replica"], q["replicas"]) for q in expected["pools"]]
    # The library's refusal, from every function: vLLM wraps every layer whatever is targeted.
    with pytest.raises(kvplan.UsageError, match="^lora_target_modules: expected engine 'sglang'"):
        kvplan.compare("llama-3-70b", "h100-sxm", max_loras=4, lora_target_modules="q_proj")


def test_the_engines_switches_reach_compare_trace_and_diff():
    # Gemma-3-27B's 64 profiled images of 256 tokens, 5,376 wide in bf16: 176,160,768 B that
    # limit_mm_per_prompt=0 gives back to the cache (test above).
    on, off = (kvplan.compare("gemma-3-27b", "h100-sxm", context="8k", **kw)[0].answer
               for kw in ({}, dict(limit_mm_per_prompt=0)))
    assert off.kv_budget_bytes_per_gpu - on.kv_budget_bytes_per_gpu == 64 * 256 * 5376 * 2
    d = kvplan.diff("gemma-3-27b", "gemma-3-27b", "h100-sxm", context="8k", skip_mm_profiling=True)
    assert d.new_answer.encoder_cache_bytes == 0
    # Llama-3-8B under v0.9 without FlashInfer: 1,024 x 128,256 x 38 + 67,108,864 =
    # 5,057,806,336 B of activations (test_classes.py derives it).
    kw = dict(engine_version="0.9", context=8192, without_flashinfer=True)
    assert kvplan.compare("llama-3-8b", "h100-sxm", **kw)[0].answer.activation_bytes == \
        5_057_806_336
    assert kvplan.diff("llama-3-8b", "llama-3-8b", "h100-sxm", **kw).new_answer \
        .activation_bytes == 5_057_806_336
    # Llama-4-Scout with the hybrid manager on for chunked local attention: 12 full layers of
    # 8,388,608 tokens and 36 chunks of 8,192, 512 B a token and layer per GPU: 51,690,602,496 B.
    scout = dict(tp=8, engine_version="0.12", gpu_memory_utilization=0.9, context=8388608,
                 chunked_local_hybrid=True)
    row = kvplan.compare("llama-4-scout-17b-16e-instruct", "h200-sxm", **scout)[0].answer
    assert row.kv_bytes_per_sequence_per_gpu == 12 * 8388608 * 512 + 36 * 8192 * 512 == \
        51_690_602_496
    # num_gpu_blocks_override: 1,025 blocks of 16 tokens hold two sequences of 8,192 tokens (512
    # blocks each, the null block held back), in diff as in plan.
    d = kvplan.diff("llama-3-8b", "llama-3-8b", "h100-sxm", context=8192, concurrency=4,
                    num_gpu_blocks_override=1025)
    assert d.new_answer.max_concurrency == 2
    # trace: the replica's budget, as kvplan trace --num-gpu-blocks-override.
    trace = SOURCE_DIR / "tests" / "data" / "traces" / "azure-conv-2023-first1000.csv"
    t = kvplan.trace(trace, "llama-3-8b", "h100-sxm", num_gpu_blocks_override=1025)
    expected = cli_json("trace", str(trace), "--model", "llama-3-8b", "--gpu", "h100-sxm",
                        "--num-gpu-blocks-override", "1025")
    assert t.on_replica.kv_budget_bytes_per_gpu == expected["kv_budget_per_gpu"]
    # expert_dtype: Qwen3-30B-A3B's experts in fp8, the rest bf16, as kvplan compare and kvplan
    # diff size them (one answer with fit's).
    fit = kvplan.fit("qwen3-30b-a3b", "h100-sxm", context="8k", expert_dtype="fp8")
    row = kvplan.compare("qwen3-30b-a3b", "h100-sxm", context="8k", expert_dtype="fp8")[0]
    assert row.answer.weight_bytes_per_gpu == fit.weight_bytes_per_gpu
    expected = cli_json("compare", "--model", "qwen3-30b-a3b", "--gpu", "h100-sxm", "--context",
                        "8k", "--expert-dtype", "fp8")["rows"][0]
    assert row.answer.weight_bytes_per_gpu == expected["weight_bytes_per_gpu"]
    assert row.answer.weight_bytes_per_gpu < kvplan.fit(
        "qwen3-30b-a3b", "h100-sxm", context="8k").weight_bytes_per_gpu
    d = kvplan.diff("qwen3-30b-a3b", "qwen3-30b-a3b", "h100-sxm", context="8k", expert_dtype="fp8")
    assert d.new_answer.weight_bytes_per_gpu == fit.weight_bytes_per_gpu


def test_prefix_hit_rate_is_a_share_of_the_prompt():
    # 40 % of a 2,000-token prompt is 800 tokens, 50 blocks of 16 held once, as kvplan fit
    # --prefix-hit-rate 0.4 (the library's shared_prefix_of_hit_rate).
    split = dict(prompt_tokens=2000, output_tokens=500)
    a = kvplan.fit(**HEADLINE, **split, prefix_hit_rate=0.4)
    assert (a.shared_prefix_tokens, a.shared_prefix_blocks) == (800, 800 // 16)
    same = kvplan.fit(**HEADLINE, **split, shared_prefix_tokens=800)
    assert a.max_concurrency == same.max_concurrency
    expected = cli_json("fit", *HEADLINE_ARGS, "--prompt-tokens", "2000", "--output-tokens",
                        "500", "--prefix-hit-rate", "0.4")
    assert (a.max_concurrency, a.shared_prefix_blocks_saved) == (
        expected["max_concurrency"], expected["shared_prefix_blocks_saved"])
    d = kvplan.Deployment("llama-3-70b", "h100-sxm", tp=4)
    assert d.evaluate("8k", 48, **split, prefix_hit_rate=0.4).max_concurrency == a.max_concurrency
    # plan searches with it, as kvplan plan --prefix-hit-rate.
    best = kvplan.plan("llama-3-70b", "h100-sxm", context="8k", concurrency=48, **split,
                       prefix_hit_rate=0.4, rank="gpus").best
    expected = cli_json("plan", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--context", "8k",
                        "--concurrency", "48", "--prompt-tokens", "2000", "--output-tokens", "500",
                        "--prefix-hit-rate", "0.4", "--rank", "gpus")["candidates"][0]
    assert (best.gpus, best.answer.max_concurrency) == (expected["gpus"],
                                                         expected["max_concurrency"])
    with pytest.raises(kvplan.UsageError, match="^prefix_hit_rate: expected shared_prefix_tokens "
                                                "or prefix_hit_rate, not both"):
        kvplan.fit(**HEADLINE, **split, prefix_hit_rate=0.4, shared_prefix_tokens=800)
    with pytest.raises(kvplan.UsageError, match="^prefix_hit_rate: expected prompt_tokens"):
        kvplan.fit(**HEADLINE, prefix_hit_rate=0.4)
    with pytest.raises(kvplan.UsageError, match=r"^prefix_hit_rate: expected a share in \[0, 1\]"):
        kvplan.fit(**HEADLINE, **split, prefix_hit_rate=1.5)


def test_plan_takes_redundant_experts_and_fleet_epsilon():
    # Qwen3-30B-A3B's 128 experts and 32 copies over ep 2: 16 more experts a GPU in each of 48
    # layers, 9,437,184 B each (test above), out of the expert-parallel candidate's budget.
    args = dict(context="8k", concurrency=64)
    p = kvplan.plan("qwen3-30b-a3b", "h100-sxm", **args, redundant_experts=32)
    by_layout = {(c.tp, c.dp, c.ep): c.answer for c in p.fits if c.gpus == 2}
    assert by_layout[(2, 1, 1)].kv_budget_bytes_per_gpu - \
        by_layout[(2, 1, 2)].kv_budget_bytes_per_gpu == 16 * 48 * 9_437_184
    assert by_layout[(2, 1, 2)].placement["physical_experts"] == 160
    expected = cli_json("plan", "--model", "qwen3-30b-a3b", "--gpu", "h100-sxm", "--context", "8k",
                        "--concurrency", "64", "--redundant-experts", "32")["candidates"]
    assert [(c.gpus, c.tp, c.dp, c.ep, c.answer.max_concurrency) for c in p.fits[:5]] == \
        [(c["gpus"], c["tp"], c["dp"], c["ep"], c["max_concurrency"]) for c in expected[:5]]
    # fleet's epsilon: the largest batch whose KV passes the budget with probability 1 %, as
    # kvplan fleet --epsilon 0.01. Every request here is 2,500 tokens, ceil(2,500 / 16) = 157
    # blocks of 1,310,720 B = 205,783,040 B, so the batch is what the headline's budget of
    # 40,104,660,173 B a GPU holds: 194.
    kw = dict(tp=4, rate=4, tpot_ms=50, prompt_tokens=2000, output_tokens=500)
    f = kvplan.fleet("llama-3-70b", "h100-sxm", **kw, epsilon=0.01)
    expected = cli_json("fleet", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--tp", "4",
                        "--rate", "4", "--tpot-ms", "50", "--prompt-tokens", "2000",
                        "--output-tokens", "500", "--epsilon", "0.01")
    assert f.batch_kv_overflow == expected["batch_kv_overflow"] == 194
    assert kvplan.fleet("llama-3-70b", "h100-sxm", **kw).batch_kv_overflow is None
    with pytest.raises(kvplan.UsageError, match=r"^epsilon: expected a probability in \(0, 1\)"):
        kvplan.fleet("llama-3-70b", "h100-sxm", **kw, epsilon=1)


def test_kv_tiers_beside_the_gpus():
    # 256 GiB of host DRAM beside the headline's replica: a sequence of 8,000 tokens is 500 blocks
    # of 1,310,720 B on each of the 4 GPUs, 2,621,440,000 B, so 274,877,906,944 B hold 104 of
    # them; each GPU brings its 655,360,000 B back over its own PCIe at 64 GB/s, 10.24 ms.
    a = kvplan.fit(**HEADLINE, host_kv="256GiB")
    [host] = a.kv_tiers
    assert (host["tier"], host["size_bytes"], host["sequences"]) == ("host", 256 * 2**30, 104)
    assert 256 * 2**30 // (4 * 500 * BLOCK) == 104
    assert host["link_bytes_per_second"] == 64e9
    assert host["back_seconds"] == pytest.approx(500 * BLOCK / 64e9) == 0.01024
    # The CLI's rows, one answer (the recompute bound is the prefill bound of one prompt).
    assert a.kv_tiers == cli_json("fit", *HEADLINE_ARGS, "--host-kv", "256GiB")["kv_tiers"]
    assert kvplan.fit(**HEADLINE).kv_tiers == []
    # vLLM's own flag: a number of GiB, the same tier, and its command carries it.
    b = kvplan.fit(**HEADLINE, kv_offloading_size=256)
    assert b.kv_tiers == a.kv_tiers
    assert "--kv-offloading-size 256 --kv-offloading-backend native" in b.serve_command()
    assert "--kv-offloading-size" not in kvplan.fit(**HEADLINE).serve_command()
    # NVMe and a remote store beside it, as kvplan fit prints them; evaluate takes them too.
    tiers = dict(host_kv="256GiB", nvme_kv="2TB", remote_kv="10TB")
    c = kvplan.fit(**HEADLINE, **tiers)
    assert [t["tier"] for t in c.kv_tiers] == ["host", "nvme", "remote"]
    assert c.kv_tiers == cli_json("fit", *HEADLINE_ARGS, "--host-kv", "256GiB", "--nvme-kv",
                                  "2TB", "--remote-kv", "10TB")["kv_tiers"]
    d = kvplan.Deployment("llama-3-70b", "h100-sxm", tp=4)
    assert d.evaluate("8k", 48, **tiers).kv_tiers == c.kv_tiers
    with pytest.raises(kvplan.UsageError, match="^kv_offloading_size: expected host_kv or "
                                                "kv_offloading_size, not both"):
        kvplan.fit(**HEADLINE, host_kv="1GiB", kv_offloading_size=1)
    with pytest.raises(kvplan.UsageError, match="^host_kv: expected a replica that starts"):
        kvplan.fit("llama-3-70b", "h100-sxm", context="8k", host_kv="256GiB")


def test_compare_takes_speculative_decoding():
    # EAGLE on Llama-3-70B: one drafter layer, 2 x 8 KV heads x 128 x 2 B = 4,096 B a token more
    # in the cache, and the row's budget and sequences as kvplan compare --speculative-method.
    spec = dict(speculative_method="eagle", num_speculative_tokens=3)
    row = kvplan.compare("llama-3-70b", "h100-sxm", tp=4, context="8k", **spec)[0].answer
    assert (row.drafter_layers, row.drafter_kv_bytes_per_token) == (1, 2 * 8 * 128 * 2)
    assert row.max_concurrency == kvplan.fit(**HEADLINE, **spec).max_concurrency
    expected = cli_json("compare", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--tp", "4",
                        "--context", "8k", "--speculative-method", "eagle",
                        "--num-speculative-tokens", "3")["rows"][0]
    assert (row.kv_budget_bytes_per_gpu, row.max_concurrency) == (
        expected["kv_budget_bytes_per_gpu"], expected["max_concurrency"])
    with pytest.raises(kvplan.UsageError, match="^num_speculative_tokens: expected "
                                                "speculative_method as well"):
        kvplan.compare("llama-3-70b", "h100-sxm", num_speculative_tokens=3)


def test_fleet_sizes_a_trace():
    # The Azure conversation trace's lengths instead of percentiles, as kvplan fleet --trace: the
    # headline's budget of 40,104,660,173 B a GPU holds 118 requests of the trace's 95th
    # percentile (259 blocks of 1,310,720 B), and the TPOT target binds first.
    trace = SOURCE_DIR / "tests" / "data" / "traces" / "azure-conv-2023-first1000.csv"
    f = kvplan.fleet("llama-3-70b", "h100-sxm", tp=4, rate=4, tpot_ms=50, trace=trace)
    expected = cli_json("fleet", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--tp", "4",
                        "--rate", "4", "--tpot-ms", "50", "--trace", str(trace))
    assert (f.replicas, f.batch, f.batch_kv, f.in_flight) == (
        expected["replicas"], expected["batch"], expected["batch_kv_at_percentile"],
        expected["in_flight"])
    assert f.batch_kv == 40_104_660_173 // (259 * BLOCK) == 118
    kw = dict(rate=4, tpot_ms=50)
    with pytest.raises(kvplan.UsageError, match="^trace: expected a trace, or both prompt_tokens "
                                                "and output_tokens, found neither"):
        kvplan.fleet("llama-3-70b", "h100-sxm", **kw)
    with pytest.raises(kvplan.UsageError, match="^trace: expected a trace or prompt_tokens and "
                                                "output_tokens, not both"):
        kvplan.fleet("llama-3-70b", "h100-sxm", **kw, trace=trace, prompt_tokens=2000,
                     output_tokens=500)
    with pytest.raises(kvplan.UsageError, match="^time_unit: expected trace as well"):
        kvplan.fleet("llama-3-70b", "h100-sxm", **kw, prompt_tokens=2000, output_tokens=500,
                     time_unit="ms")


def test_the_searches_and_fleet_take_a_calibration_profile(tmp_path):
    # The profile fitted on a benchmark of Llama-3.3-70B in fp8 on 2 x H100 (test_functions.py
    # checks it is kvplan calibrate's): its fractions time the steps of plan's estimate ranking,
    # fleet's batch and disagg's pools, as --profile does on the command line.
    bench = SOURCE_DIR / "tests" / "data" / "vllm_bench_serve" / \
        "nim-llama-3.3-70b-fp8-2xh100-5000-500-c25.json"
    profile = tmp_path / "profile.json"
    kvplan.calibrate(bench=bench, model="llama-3-70b", gpu="h100-sxm", tp=2, weight_dtype="fp8",
                     kv_dtype="fp8").write_profile(profile)
    split = dict(prompt_tokens=2000, output_tokens=500)
    split_args = ("--prompt-tokens", "2000", "--output-tokens", "500")
    args = ("--model", "llama-3-70b", "--gpu", "h100-sxm", "--weight-dtype", "fp8")
    for given in (False, True):
        kw = dict(profile=profile) if given else {}
        extra = ("--profile", str(profile)) if given else ()
        best = kvplan.plan("llama-3-70b", "h100-sxm", context="8k", concurrency=32,
                           weight_dtype="fp8", **split, **kw).best
        expected = cli_json("plan", *args, "--context", "8k", "--concurrency", "32", *split_args,
                            *extra)["candidates"][0]
        assert (best.gpus, best.answer.tokens_per_second_per_gpu_estimate) == (
            expected["gpus"], expected["tokens_per_second_per_gpu_estimate"])
        f = kvplan.fleet("llama-3-70b", "h100-sxm", tp=2, weight_dtype="fp8", rate=4, tpot_ms=50,
                         **split, **kw)
        expected = cli_json("fleet", *args, "--tp", "2", "--rate", "4", "--tpot-ms", "50",
                            *split_args, *extra)
        assert (f.batch, f.tpot_seconds) == (expected["batch"], expected["tpot_at_batch"])
        assert f.batch == (82 if given else 78)
        p = kvplan.disagg("llama-3-70b", "h100-sxm", weight_dtype="fp8", rate=10, ttft_ms=500,
                          tpot_ms=50, **split, **kw)
        expected = cli_json("disagg", *args, "--rate", "10", "--ttft-ms", "500", "--tpot-ms", "50",
                            *split_args, *extra)
        assert [(q.pool, q.sequences_per_replica, q.replicas) for q in p.pools] == \
            [(q["pool"], q["sequences_per_replica"], q["replicas"]) for q in expected["pools"]]
    # A calibration is of one GPU: a search over several refuses it, as kvplan plan does.
    with pytest.raises(kvplan.UsageError, match="^gpu: expected one GPU beside profile"):
        kvplan.plan("llama-3-70b", ["h100-sxm", "h200-sxm"], context="8k", profile=profile)


PRICES = SOURCE_DIR / "configs" / "prices" / "example.json"
# The example price file's US$ per GPU-hour.
PRICE = {"h100-sxm": 3.0, "h200-sxm": 3.8}
PLAN_LOAD = dict(context=3000, concurrency=64, prompt_tokens=2000, output_tokens=1000)
PLAN_LOAD_ARGS = ("--context", "3000", "--concurrency", "64", "--prompt-tokens", "2000",
                  "--output-tokens", "1000")
ROW_KEYS = ("gpu", "gpus", "tp", "pp", "dp", "ep", "dcp", "kv_dtype")


def same_rows(fits, rows):
    """Python's candidates and the CLI's rows name the same replicas with the same figures."""
    assert len(fits) == len(rows)
    for c, r in zip(fits, rows):
        assert tuple(getattr(c, k) for k in ROW_KEYS) == tuple(r[k] for k in ROW_KEYS)
        assert c.answer.max_concurrency == r["max_concurrency"]
        assert c.answer.tokens_per_second_per_gpu_estimate == \
            r["tokens_per_second_per_gpu_estimate"]
        assert c.answer.tpot_estimate_seconds == r["tpot_estimate_seconds"]
        assert c.dollars_per_gpu_hour == r.get("dollars_per_gpu_hour")
        assert c.dollars_per_million_output_tokens == r.get("dollars_per_million_output_tokens")


def test_plan_ranks_by_cost_under_targets_and_charts_the_front_as_the_cli():
    # Llama-3-70B on H100s and H200s for 64 clients, 2,000 tokens in and 1,000 out, priced by the
    # example file, under a 40 ms TPOT target, with the Pareto front: kvplan plan --prices
    # --rank cost --tpot-ms 40 --pareto, one answer (plan/review.hpp, review_plan).
    p = kvplan.plan("llama-3-70b", ["h100-sxm", "h200-sxm"], **PLAN_LOAD, prices=PRICES,
                    rank="cost", tpot_ms=40, pareto=True)
    expected = cli_json("plan", "--model", "llama-3-70b", "--gpu", "h100-sxm,h200-sxm",
                        *PLAN_LOAD_ARGS, "--prices", str(PRICES), "--rank", "cost", "--tpot-ms",
                        "40", "--pareto")
    assert p.ranking == "cost"
    same_rows(p.fits, expected["candidates"])
    same_rows(p.pareto, expected["pareto"])
    # Five layouts fit; the two-H200 replica's TPOT estimate (about 46 ms at 64 clients) passes
    # the target and is left out, as the CLI's note counts it.
    assert (p.fitting, p.over_tpot, p.over_ttft, p.without_price) == (5, 1, 0, 0)
    assert "left out of 5 that fit: 0 miss the TTFT target, 1 the TPOT target, 0 have no " \
           "estimate, 0 no price" in expected["notes"]
    for c in p.fits:
        # $ per million output tokens = $/GPU-hour / (output tokens/s per GPU x 3,600 s) x 10^6.
        rate = c.answer.tokens_per_second_per_gpu_estimate
        assert c.dollars_per_gpu_hour == PRICE[c.gpu]
        assert c.dollars_per_million_output_tokens == pytest.approx(
            PRICE[c.gpu] / (rate * 3600) * 1e6, rel=1e-12)
        assert c.answer.tpot_estimate_seconds <= 0.040
    costs = [c.dollars_per_million_output_tokens for c in p.fits]
    assert costs == sorted(costs)
    # The cheapest is the headline's replica: 40,104,660,173 B a GPU hold 30,597 blocks of
    # 1,310,720 B; a request of 3,000 tokens takes ceil(3,000 / 16) = 188 of them, and vLLM holds
    # 1 + (30,597 - 1 - 188) // 188 = 162 (the null block held back).
    best = p.best
    assert (best.gpu, best.gpus, best.tp) == ("h100-sxm", 4, 4)
    assert best.answer.kv_budget_bytes_per_gpu // BLOCK == 30_597
    assert best.answer.max_concurrency == 1 + (30_597 - 1 - 188) // 188 == 162
    # Along the front a lower TPOT costs tokens/s per GPU.
    front = [(c.answer.tpot_estimate_seconds, c.answer.tokens_per_second_per_gpu_estimate)
             for c in p.pareto]
    assert front == sorted(front)
    # Without a review the fits are the search's, unpriced, and nothing is counted out.
    plain = kvplan.plan("llama-3-70b", ["h100-sxm", "h200-sxm"], **PLAN_LOAD)
    assert plain.ranking == "estimate" and plain.pareto == []
    assert plain.best.dollars_per_million_output_tokens is None and plain.over_tpot == 0


def test_plan_targets_leave_out_what_misses_them_as_the_cli():
    # A TTFT target of 1 ms: no estimate meets it, so no replica is ranked and every fit is
    # counted against it, as kvplan plan --ttft-ms 1 says "NO REPLICA meets the targets".
    p = kvplan.plan("llama-3-70b", "h100-sxm", **PLAN_LOAD, ttft_ms=1)
    expected = cli_json("plan", "--model", "llama-3-70b", "--gpu", "h100-sxm", *PLAN_LOAD_ARGS,
                        "--ttft-ms", "1")
    assert p.fits == [] and p.best is None
    assert p.over_ttft == p.fitting > 0
    assert expected["candidates"] == []
    assert expected["verdict"].startswith(f"NO REPLICA meets the targets: {p.fitting} fit")


def test_plan_refuses_a_review_it_cannot_take_in_the_librarys_words():
    # The library's plan_review_problem, spelled as Python's keywords (the CLI spells its flags).
    with pytest.raises(kvplan.UsageError, match=r"^rank: expected prices beside cost"):
        kvplan.plan("llama-3-8b", "h100-sxm", **PLAN_LOAD, rank="cost")
    with pytest.raises(kvplan.UsageError, match="^pareto: expected prompt_tokens and "
                                                "output_tokens beside it"):
        kvplan.plan("llama-3-8b", "h100-sxm", context="8k", pareto=True)
    with pytest.raises(kvplan.UsageError, match="^tpot_ms: expected prompt_tokens"):
        kvplan.plan("llama-3-8b", "h100-sxm", context="8k", tpot_ms=40)
    with pytest.raises(kvplan.UsageError, match="^rank: expected estimate or cost beside prices, "
                                                "ttft_ms or tpot_ms"):
        kvplan.plan("llama-3-8b", "h100-sxm", **PLAN_LOAD, tpot_ms=40, rank="gpus")
    with pytest.raises(kvplan.UsageError, match="^rank: expected 'estimate'"):
        kvplan.plan("llama-3-8b", "h100-sxm", rank="cheapest")
    code, _, err = cli("plan", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--context", "8k",
                       "--tpot-ms", "40", check=False)
    assert code == 2 and "--tpot-ms: expected --prompt-tokens and --output-tokens beside it" in err


def test_plan_takes_expert_dtype_and_speculative_decoding_as_fit():
    # Qwen3-30B-A3B's experts in fp8, the rest bf16, on one H100: the candidate's weights are
    # fit's, byte for byte, and the CLI's (kvplan plan --expert-dtype fp8 needs no
    # --weight-dtype).
    kw = dict(context="8k", concurrency=48, max_gpus=1)
    p = kvplan.plan("qwen3-30b-a3b", "h100-sxm", **kw, expert_dtype="fp8")
    fit = kvplan.fit("qwen3-30b-a3b", "h100-sxm", context="8k", concurrency=48, expert_dtype="fp8")
    expected = cli_json("plan", "--model", "qwen3-30b-a3b", "--gpu", "h100-sxm", "--context", "8k",
                        "--concurrency", "48", "--max-gpus", "1", "--expert-dtype", "fp8")
    assert p.best.answer.weight_bytes_per_gpu == fit.weight_bytes_per_gpu
    assert p.best.answer.max_concurrency == fit.max_concurrency == \
        expected["candidates"][0]["max_concurrency"]
    assert expected["candidates"][0]["weights"] == "bf16, experts fp8"
    # bf16 experts do not fit 48 sequences on one H100.
    assert not kvplan.plan("qwen3-30b-a3b", "h100-sxm", **kw).found
    # A list of weight formats, as kvplan plan --weight-dtype fp8,checkpoint: Llama-3-70B's
    # 35,280,928,768 B a GPU at tp 4 become 18,168,170,688 B in fp8, about half: the embedding
    # and head (2 x 128,256 x 8,192 x 2 B / 4 = 1,050,673,152 B a GPU) stay 16-bit. The rows are
    # the CLI's, in its order.
    p = kvplan.plan("llama-3-70b", "h100-sxm", context="8k", concurrency=48,
                    weight_dtype=["fp8", None])
    expected = cli_json("plan", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--context", "8k",
                        "--concurrency", "48", "--weight-dtype", "fp8,checkpoint")["candidates"]
    assert [(c.gpus, c.answer.max_concurrency) for c in p.fits] == \
        [(r["gpus"], r["max_concurrency"]) for r in expected]
    assert [c.answer.weight_bytes_per_gpu for c in p.fits[:2]] == [18_168_170_688, 35_280_928_768]
    # EAGLE on Llama-3-70B: one drafter layer, 2 x 8 KV heads x 128 x 2 B = 4,096 B a token, a
    # quarter a GPU at tp 4: a block of 16 tokens is 1,310,720 + 16 x 1,024 = 1,327,104 B a GPU.
    spec = dict(speculative_method="eagle", num_speculative_tokens=3)
    best = kvplan.plan("llama-3-70b", "h100-sxm", context="8k", concurrency=48, **spec).best
    blocks = best.answer.kv_budget_bytes_per_gpu // (BLOCK + 16 * 1024)
    assert (best.gpus, best.answer.drafter_layers) == (4, 1)
    assert best.answer.max_concurrency == 1 + (blocks - 1 - 500) // 500 == 59
    assert best.answer.max_concurrency == kvplan.fit(**HEADLINE, **spec).max_concurrency
    expected = cli_json("plan", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--context", "8k",
                        "--concurrency", "48", "--speculative-method", "eagle",
                        "--num-speculative-tokens", "3")["candidates"][0]
    assert (best.answer.kv_budget_bytes_per_gpu, best.answer.max_concurrency) == (
        expected["kv_budget_bytes_per_gpu"], expected["max_concurrency"])
    # A draft model is read as fit reads it: Qwen3-0.6B drafting for Qwen3-32B at tp 4.
    draft = dict(speculative_method="draft_model", draft_model="qwen3-0.6b",
                 num_speculative_tokens=3)
    best = kvplan.plan("qwen3-32b", "h100-sxm", context="8k", concurrency=48, **draft).best
    fit = kvplan.fit("qwen3-32b", "h100-sxm", tp=4, context="8k", concurrency=48, **draft)
    expected = cli_json("plan", "--model", "qwen3-32b", "--gpu", "h100-sxm", "--context", "8k",
                        "--concurrency", "48", "--speculative-method", "draft_model",
                        "--draft-model", "qwen3-0.6b", "--num-speculative-tokens", "3")
    assert (best.gpus, best.answer.max_concurrency) == (4, fit.max_concurrency)
    assert best.answer.max_concurrency == expected["candidates"][0]["max_concurrency"]
    with pytest.raises(kvplan.UsageError, match="^num_speculative_tokens: expected "
                                                "speculative_method as well"):
        kvplan.plan("llama-3-70b", "h100-sxm", num_speculative_tokens=3)
