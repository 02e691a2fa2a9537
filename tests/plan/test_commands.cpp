// The engines' command lines for what kvplan sized (plan/commands.hpp).

#include <catch2/catch.hpp>
#include <kvplan/gpu_spec.hpp>
#include <kvplan/plan.hpp>
#include <string>

#include "support/bundled_models.hpp"

using namespace kvplan;
using namespace kvplan::testing;

TEST_CASE("a layout is restated in each engine's flags for the same GPUs", "[commands]") {
    // vLLM dp 8 x tp 1 with expert parallelism is SGLang's tp 8, dp 8, ep 8 and TensorRT-LLM's tp 8
    // with attention dp and moe_expert_parallel_size 8.
    const ParallelConfig v{.tp = 1, .dp = 8, .ep = 8};
    const auto s = translate_parallel(v, ParallelRules::sglang);
    REQUIRE(s);
    CHECK(s->tp == 8);
    CHECK(s->dp == 8);
    CHECK(s->ep == 8);
    CHECK(s->rules == ParallelRules::sglang);
    const auto t = translate_parallel(v, ParallelRules::trtllm);
    REQUIRE(t);
    CHECK(t->tp == 8);
    CHECK(t->dp == 8);
    // And back: SGLang tp 8 with dp 2 is attention groups of 4, vLLM's tp 4 x dp 2.
    const auto back = translate_parallel(
        {.tp = 8, .dp = 2, .ep = 8, .rules = ParallelRules::sglang}, ParallelRules::vllm);
    REQUIRE(back);
    CHECK(back->tp == 4);
    CHECK(back->dp == 2);
    CHECK(back->ep == 8);
    // What the other engine cannot say: vLLM spreads experts over all of dp x tp or none;
    // decode context parallelism is vLLM's here; TensorRT-LLM's attention dp has no attention tp.
    CHECK_FALSE(translate_parallel({.tp = 8, .ep = 2, .rules = ParallelRules::sglang},
                                   ParallelRules::vllm));
    CHECK_FALSE(translate_parallel({.tp = 8, .dcp = 8}, ParallelRules::sglang));
    CHECK_FALSE(translate_parallel({.tp = 2, .dp = 4}, ParallelRules::trtllm));
}

TEST_CASE("vLLM's command line states what kvplan assumed", "[commands]") {
    // DeepSeek-V3 fp8 on 16 x H200: dp 16, expert parallelism with 32 redundant experts (EPLB:
    // (256 + 32) / 16 = 18 per GPU), 4,096 sequences of 8,192 tokens, fp8 KV, --max-num-seqs and
    // the memory fraction given.
    const Model m = bundled("deepseek-v3");
    Deployment d{.model = m,
                 .gpu = bundled_gpu("h200-sxm"),
                 .parallel = {.tp = 1, .dp = 16, .ep = 16, .redundant_experts = 32},
                 .kv = KvDtype::fp8_e4m3,
                 .serving = {.memory_fraction = 0.9, .max_sequences = 256}};
    const ReplicaAnswer a = evaluate(d, {.context = 8192, .concurrency = 4096});
    CHECK(a.placement.experts_per_gpu == 18);
    // 16 GPUs are two nodes of 8: dp ranks of one GPU, 8 on each node (--data-parallel-size-local
    // 8), the second starting at rank 8 and headless. --block-size 64: none was given, but
    // FlashMLA's dense kernel runs on Hopper and vLLM forces a multiple of 64
    // (vllm/platforms/cuda.py, check_and_update_config); the command states the pool kvplan sized.
    CHECK(a.nodes == 2);
    CHECK(a.serving.block_size == 64);
    const std::vector<ServeCommand> nodes =
        serve_node_commands(a, {.model = "deepseek-ai/DeepSeek-V3"});
    REQUIRE(nodes.size() == 2);
    CHECK(serve_command(a, {.model = "deepseek-ai/DeepSeek-V3"}).line() == nodes[0].line());
    CHECK(nodes[0].line() ==
          "vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 1 --data-parallel-size 16 "
          "--data-parallel-size-local 8 --data-parallel-address HEAD_NODE_IP "
          "--enable-expert-parallel --enable-eplb "
          "--eplb-config '{\"num_redundant_experts\": 32}' --gpu-memory-utilization 0.9 "
          "--max-model-len 8192 --max-num-seqs 256 --kv-cache-dtype fp8_e4m3 --block-size 64");
    CHECK(nodes[1].line() ==
          "vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 1 --data-parallel-size 16 "
          "--data-parallel-size-local 8 --data-parallel-start-rank 8 "
          "--data-parallel-address HEAD_NODE_IP --headless --enable-expert-parallel --enable-eplb "
          "--eplb-config '{\"num_redundant_experts\": 32}' --gpu-memory-utilization 0.9 "
          "--max-model-len 8192 --max-num-seqs 256 --kv-cache-dtype fp8_e4m3 --block-size 64");
    // Past the model's limit, allowed: the environment variable vLLM reads (Llama-3-8B: 8,192).
    Deployment l{.model = bundled("llama-3-8b"),
                 .gpu = bundled_gpu("h100-sxm"),
                 .serving = {.block_size = 32, .allow_long_context = true}};
    const ServeCommand lc = serve_command(evaluate(l, {.context = 16384}), {.model = "x"});
    CHECK(lc.line() ==
          "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 vllm serve x --tensor-parallel-size 1 "
          "--gpu-memory-utilization 0.92 --max-model-len 16384 --max-num-seqs 1024 "
          "--kv-cache-dtype bfloat16 --block-size 32");
}

TEST_CASE("SGLang's command line states its own layout and fraction", "[commands]") {
    // SGLang on 8 x H200 at tp 8, dp 8, ep 8: its fraction for dp attention is 0.769
    // (test_deployments.cpp derives it), the cap given shared by the dp ranks.
    const Model m = bundled("deepseek-v3");
    const Deployment d{.model = m,
                       .gpu = bundled_gpu("h200-sxm"),
                       .parallel = {.tp = 8, .dp = 8, .ep = 8},
                       .serving = {.engine = Engine::sglang, .max_sequences = 512}};
    const ServeCommand c = serve_command(evaluate(d, {.context = 8000, .concurrency = 256}),
                                         {.model = "/models/dsv3"});
    CHECK(c.line() ==
          "python -m sglang.launch_server --model-path /models/dsv3 --tp-size 8 --dp-size 8 "
          "--enable-dp-attention --ep-size 8 --mem-fraction-static 0.769 --context-length 8000 "
          "--max-running-requests 512 --kv-cache-dtype bf16");
}

TEST_CASE("a command loads the weights kvplan assumed", "[commands]") {
    // Qwen3-235B-A22B's checkpoint is bf16; sized with FP8 weights, the command must quantize at
    // load (--quantization fp8 in both engines), or vLLM loads 2 bytes a parameter.
    const Model m = bundled("qwen3-235b-a22b");
    Deployment d{.model = m,
                 .gpu = bundled_gpu("h200-sxm"),
                 .parallel = {.tp = 4},
                 .weights = WeightOptions{.format = WeightFormat::fp8}};
    const std::vector<EngineCommand> fp8 = serve_commands(d, {.context = 8192}, {.model = "q"});
    REQUIRE(fp8[0].command);
    REQUIRE(fp8[1].command);
    CHECK_THAT(fp8[0].command->line(), Catch::Contains(" --quantization fp8 "));
    CHECK_THAT(fp8[1].command->line(), Catch::Contains(" --quantization fp8 "));
    // The checkpoint's own format: no flag.
    d.weights.reset();
    const std::vector<EngineCommand> own = serve_commands(d, {.context = 8192}, {.model = "q"});
    REQUIRE(own[0].command);
    CHECK_THAT(own[0].command->line(), !Catch::Contains("--quantization"));
    // INT4 is no format either engine makes at load: no command, and why.
    d.weights = WeightOptions{.format = WeightFormat::int4};
    const std::vector<EngineCommand> int4 = serve_commands(d, {.context = 8192}, {.model = "q"});
    CHECK_FALSE(int4[0].command);
    CHECK_THAT(int4[0].refused, Catch::Contains("int4 weights over a bf16 checkpoint"));
}

TEST_CASE("a replica over two nodes gets one command per node", "[commands]") {
    // Llama-3.1-405B at tp 16 on H100s of 8 per node: two nodes. vLLM: --nnodes 2, --node-rank,
    // --master-addr, the second node headless; SGLang: --nnodes 2, --node-rank, --dist-init-addr.
    const Model m = bundled("llama-3.1-405b");
    const Deployment d{.model = m, .gpu = bundled_gpu("h100-sxm"), .parallel = {.tp = 16}};
    const std::vector<EngineCommand> c = serve_commands(d, {.context = 8192}, {.model = "m"});
    REQUIRE(c[0].command);
    REQUIRE(c[0].node_commands.size() == 2);
    CHECK_THAT(c[0].node_commands[0].line(),
               Catch::StartsWith("vllm serve m --tensor-parallel-size 16 --nnodes 2 --node-rank 0 "
                                 "--master-addr HEAD_NODE_IP --gpu-memory-utilization"));
    CHECK_THAT(c[0].node_commands[1].line(),
               Catch::StartsWith("vllm serve m --tensor-parallel-size 16 --nnodes 2 --node-rank 1 "
                                 "--master-addr HEAD_NODE_IP --headless --gpu-memory-utilization"));
    CHECK(c[0].command->line() == c[0].node_commands[0].line());
    REQUIRE(c[1].command);
    REQUIRE(c[1].node_commands.size() == 2);
    CHECK_THAT(c[1].node_commands[1].line(),
               Catch::Contains("--tp-size 16 --nnodes 2 --node-rank 1 "
                               "--dist-init-addr HEAD_NODE_IP:5000"));
    // One node: one command, no node flags.
    const Deployment one{.model = bundled("llama-3-8b"), .gpu = bundled_gpu("h100-sxm")};
    const std::vector<EngineCommand> o = serve_commands(one, {.context = 8192}, {.model = "m"});
    CHECK(o[0].node_commands.empty());
    CHECK_THAT(o[0].command->line(), !Catch::Contains("--nnodes"));
}

TEST_CASE("a vLLM release before multi-node multiprocessing spans nodes through Ray",
          "[commands]") {
    // vLLM PR #23691 (first released in v0.11.1, counted from v0.12) brought --nnodes,
    // --node-rank, --master-addr and --headless for one engine over several nodes; before, the
    // engine ran on a Ray cluster: `ray start --head` on the first node, `ray start --address` on
    // the others, `vllm serve ... --distributed-executor-backend ray` on the head alone
    // (docs/serving/parallelism_scaling.md). Llama-3.1-405B at tp 8 x pp 2 on H100s, 8 a node:
    // two nodes.
    const Model m = bundled("llama-3.1-405b");
    Deployment d{.model = m, .gpu = bundled_gpu("h100-sxm"), .parallel = {.tp = 8, .pp = 2}};
    d.serving.engine_version = EngineVersion{0, 11};
    const Engine vllm[] = {Engine::vllm};
    std::vector<EngineCommand> c = serve_commands(d, {.context = 8192}, {.model = "m"}, vllm);
    REQUIRE(c[0].command);
    REQUIRE(c[0].node_commands.size() == 2);
    // v0.11's fraction is 0.9 (engine/release.hpp).
    CHECK_THAT(c[0].node_commands[0].line(),
               Catch::StartsWith("ray start --head --port=6379 && vllm serve m "
                                 "--tensor-parallel-size 8 --pipeline-parallel-size 2 "
                                 "--distributed-executor-backend ray --gpu-memory-utilization 0.9 "
                                 "--max-model-len 8192 --max-num-seqs "));
    CHECK(c[0].node_commands[1].line() == "ray start --address=HEAD_NODE_IP:6379 --block");
    CHECK(c[0].node_commands[1].argv.front() == "ray");
    CHECK(c[0].command->line() == c[0].node_commands[0].line());
    for (const ServeCommand& n : c[0].node_commands) {
        CHECK_THAT(n.line(), !Catch::Contains("--nnodes"));
        CHECK_THAT(n.line(), !Catch::Contains("--headless"));
    }
    // The address given is the Ray head's.
    c = serve_commands(d, {.context = 8192}, {.model = "m", .head_address = "10.0.0.1"}, vllm);
    CHECK(c[0].node_commands[1].line() == "ray start --address=10.0.0.1:6379 --block");
    // v0.12: one `vllm serve` per node, no Ray.
    d.serving.engine_version = EngineVersion{0, 12};
    c = serve_commands(d, {.context = 8192}, {.model = "m"}, vllm);
    REQUIRE(c[0].node_commands.size() == 2);
    CHECK(c[0].node_commands[0].before.empty());
    CHECK_THAT(c[0].node_commands[0].line(),
               Catch::StartsWith("vllm serve m --tensor-parallel-size 8 --pipeline-parallel-size "
                                 "2 --nnodes 2 --node-rank 0 --master-addr HEAD_NODE_IP "
                                 "--gpu-memory-utilization 0.9 "));
    CHECK_THAT(c[0].node_commands[1].line(),
               Catch::Contains("--nnodes 2 --node-rank 1 --master-addr HEAD_NODE_IP --headless"));
    // One node under an old release: no Ray.
    const Deployment one{.model = bundled("llama-3-8b"),
                         .gpu = bundled_gpu("h100-sxm"),
                         .serving = {.engine_version = EngineVersion{0, 10}}};
    c = serve_commands(one, {.context = 8192}, {.model = "m"}, vllm);
    CHECK(c[0].node_commands.empty());
    CHECK_THAT(c[0].command->line(), Catch::StartsWith("vllm serve m "));
}

TEST_CASE("vLLM spreads dp ranks over nodes from v0.9 and refuses it before", "[commands]") {
    // vLLM PR #15977 brought --headless ("a new `--headless` option for `vllm serve` to run on
    // secondary nodes") with --data-parallel-size-local, --data-parallel-start-rank and
    // --data-parallel-address; the v0.9.0 release notes (2025-05-15) list it ("DP: Decouple engine
    // process management and comms (#15977)"). A v0.8 `vllm serve` has no flag that starts dp
    // ranks on a second node: the command is refused, naming the flag and the release.
    CHECK_FALSE(vllm_multinode_data_parallel(EngineVersion{0, 8}));
    CHECK(vllm_multinode_data_parallel(EngineVersion{0, 9}));
    CHECK(vllm_multinode_data_parallel(vllm_newest_release));
    // DeepSeek-V3 at dp 16 x tp 1 on H200s, 8 a node: two nodes of 8 dp ranks each, the second
    // starting at rank 8 x 1 = 8.
    Deployment d{.model = bundled("deepseek-v3"),
                 .gpu = bundled_gpu("h200-sxm"),
                 .parallel = {.tp = 1, .dp = 16, .ep = 16}};
    d.serving.engine_version = EngineVersion{0, 9};
    const ReplicaAnswer v9 = evaluate(d, {.context = 8192});
    REQUIRE(v9.nodes == 2);
    const std::vector<ServeCommand> nodes = serve_node_commands(v9, {.model = "m"});
    REQUIRE(nodes.size() == 2);
    CHECK_THAT(nodes[0].line(),
               Catch::StartsWith("vllm serve m --tensor-parallel-size 1 --data-parallel-size 16 "
                                 "--data-parallel-size-local 8 --data-parallel-address "
                                 "HEAD_NODE_IP --enable-expert-parallel "));
    CHECK_THAT(nodes[1].line(),
               Catch::StartsWith("vllm serve m --tensor-parallel-size 1 --data-parallel-size 16 "
                                 "--data-parallel-size-local 8 --data-parallel-start-rank 8 "
                                 "--data-parallel-address HEAD_NODE_IP --headless "
                                 "--enable-expert-parallel "));
    // v0.8: sized as before, no command.
    d.serving.engine_version = EngineVersion{0, 8};
    const ReplicaAnswer v8 = evaluate(d, {.context = 8192});
    REQUIRE(v8.nodes == 2);
    CHECK_THROWS_WITH(serve_node_commands(v8, {.model = "m"}),
                      Catch::Contains("--headless") &&
                          Catch::Contains("vLLM v0.9 or later for dp ranks over nodes") &&
                          Catch::Contains("found dp 16 over 2 nodes under v0.8"));
    const Engine vllm[] = {Engine::vllm};
    const std::vector<EngineCommand> c = serve_commands(d, {.context = 8192}, {.model = "m"}, vllm);
    REQUIRE(c.size() == 1);
    CHECK_FALSE(c[0].command);
    CHECK_THAT(c[0].refused, Catch::Contains("vLLM v0.9 or later for dp ranks over nodes"));
    // One node at dp 8 needs none of those flags: v0.8 states it.
    d.parallel = {.tp = 1, .dp = 8, .ep = 8};
    const ReplicaAnswer one = evaluate(d, {.context = 8192});
    REQUIRE(one.nodes == 1);
    CHECK_THAT(serve_command(one, {.model = "m"}).line(),
               !Catch::Contains("--headless") && !Catch::Contains("--data-parallel-size-local"));
}

TEST_CASE("the environment a vLLM answer depends on is in its command", "[commands]") {
    // Llama-4-Scout's chunked local attention: kvplan assumes vLLM's hybrid manager, which
    // VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE switches (its default has been 0 and 1).
    const Model m = bundled("llama-4-scout-17b-16e-instruct");
    Deployment d{.model = m, .gpu = bundled_gpu("h100-sxm"), .parallel = {.tp = 4}};
    const ReplicaAnswer a = evaluate(d, {.context = 8192});
    CHECK(a.serving.options.vllm.hybrid_kv_cache_manager);
    CHECK_THAT(
        serve_command(a, {.model = "m"}).line(),
        Catch::StartsWith("VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1 vllm serve"));
    // v0.10's default is 0 (PR #21761): kvplan sizes the chunked layers as full, and the command
    // keeps that default.
    d.serving.engine_version = EngineVersion{0, 10};
    const ReplicaAnswer old = evaluate(d, {.context = 8192});
    CHECK_FALSE(old.serving.options.vllm.hybrid_kv_cache_manager);
    CHECK_THAT(serve_command(old, {.model = "m"}).line(), Catch::StartsWith("vllm serve"));
    // Llama-4-Scout: 12 full and 36 chunked layers of 8 KV heads of 128; without the hybrid
    // manager the chunked ones are full attention too: one kind, not two.
    CHECK(a.report.vllm.num_kinds == 2);
    CHECK(old.report.vllm.num_kinds == 1);
    // The variable set on a release whose default is 0 (VllmConfig.__post_init__,
    // vllm/config/vllm.py, reads it): the hybrid manager on, and the command says so.
    d.serving.chunked_local_hybrid = true;
    const ReplicaAnswer set = evaluate(d, {.context = 8192});
    CHECK(set.serving.options.vllm.hybrid_kv_cache_manager);
    CHECK(set.report.vllm.num_kinds == 2);
    CHECK_THAT(
        serve_command(set, {.model = "m"}).line(),
        Catch::StartsWith("VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1 vllm serve"));
    // And unset (=0) where the default is 1.
    d.serving.engine_version.reset();
    d.serving.chunked_local_hybrid = false;
    CHECK_FALSE(evaluate(d, {.context = 8192}).serving.options.vllm.hybrid_kv_cache_manager);
    // Not an SGLang knob.
    d.serving.engine = Engine::sglang;
    d.serving.chunked_local_hybrid = true;
    CHECK_THROWS_AS(evaluate(d, {.context = 8192}), InvalidInput);
}

TEST_CASE("vLLM v0.12 starts Llama-4-Scout at 8,388,608 tokens once the hybrid manager is on",
          "[commands][vllm]") {
    // The published start on eight H200s (tests/data/startup_logs/vllm/llama-4-scout-h200-tp8-
    // 8m.log) set VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1. vLLM's start check then
    // needs, per GPU (8 KV heads / 8 ranks x 128 x 2 x 2 B = 512 B a token and layer), the 12 full
    // layers' 8,388,608 tokens and the 36 chunked layers' chunk plus batched tokens, 8,192 + 8,192
    // (ChunkedLocalAttentionSpec.max_memory_usage_bytes, vllm/v1/kv_cache_interface.py):
    // 12 x 8,388,608 x 512 + 36 x 16,384 x 512 = 51,841,597,440 B (48.28 GiB), under the 89.71 GiB
    // the log gives the cache; without it every layer is full, 48 x 8,388,608 x 512 = 192 GiB, and
    // v0.12 refuses. Once running, a sequence keeps one chunk in each chunked layer:
    // 12 x 8,388,608 x 512 + 36 x 8,192 x 512 = 51,690,602,496 B.
    const Model m = bundled("llama-4-scout-17b-16e-instruct");
    Deployment d{.model = m, .gpu = bundled_gpu("h200-sxm"), .parallel = {.tp = 8}};
    d.serving.engine_version = EngineVersion{0, 12};
    d.serving.memory_fraction = 0.9;
    const Demand want{.context = 8'388'608};
    const ReplicaAnswer off = evaluate(d, want);
    CHECK_FALSE(off.report.summary.starts);
    d.serving.chunked_local_hybrid = true;
    const ReplicaAnswer on = evaluate(d, want);
    CHECK(on.report.summary.starts);
    CHECK(on.kv_per_sequence.count() == 51'690'602'496ULL);
    CHECK(on.dp_rank_admitted == 1);
}

TEST_CASE("both engines' lines for one deployment, each evaluated its own way", "[commands]") {
    // The vLLM deployment dp 8 x ep 8 restated for SGLang (tp 8, dp 8, ep 8): the same GPUs, but
    // SGLang keeps the embedding whole and splits the dense MLP and LM head 8 ways, and reserves
    // more for its graphs under dp attention, so it holds other figures. A cap of 128 per vLLM
    // dp rank is 1,024 shared by SGLang's.
    const Model m = bundled("deepseek-v3");
    const Deployment d{.model = m,
                       .gpu = bundled_gpu("h200-sxm"),
                       .parallel = {.tp = 1, .dp = 8, .ep = 8},
                       .serving = {.max_sequences = 128}};
    const std::vector<EngineCommand> lines =
        serve_commands(d, {.context = 8000, .concurrency = 256}, {.model = "m"});
    REQUIRE(lines.size() == 2);
    REQUIRE(lines[0].command);
    REQUIRE(lines[1].command);
    CHECK(lines[0].answer->dp_rank_sequence_cap == 128);
    CHECK(lines[1].answer->replica.parallel.rules == ParallelRules::sglang);
    CHECK(lines[1].answer->replica_gpus == 8);
    CHECK(lines[1].answer->dp_rank_sequence_cap == 128);  // 1,024 // 8
    CHECK_THAT(lines[1].command->line(), Catch::Contains("--max-running-requests 1024"));
    CHECK(lines[1].answer->weights_per_gpu != lines[0].answer->weights_per_gpu);
    // decode context parallelism has no SGLang line here.
    const Deployment dcp{
        .model = m, .gpu = bundled_gpu("h200-sxm"), .parallel = {.tp = 8, .dcp = 8}};
    const std::vector<EngineCommand> only = serve_commands(dcp, {.context = 8000}, {.model = "m"});
    CHECK(only[0].command);
    CHECK_FALSE(only[1].command);
    CHECK_THAT(only[1].refused, Catch::Contains("cannot state this layout"));
    // The ideal profile has no command line.
    Deployment ideal = d;
    ideal.serving = {.engine = Engine::ideal};
    CHECK_THROWS_AS(serve_command(evaluate(ideal, {.context = 8000})), InvalidInput);
}

TEST_CASE("the engines' flag names a command line takes are the ones their lines print",
          "[commands]") {
    // vLLM tp 2 x dp 4 with expert parallelism and dcp 2 over 2 stages; SGLang's restatement
    // (tp 8, dp 4, ep 8, no dcp) without dcp.
    const Model m = bundled("deepseek-v3");
    const Deployment v{.model = m,
                       .gpu = bundled_gpu("h200-sxm"),
                       .parallel = {.tp = 2, .pp = 2, .dp = 4, .ep = 8, .dcp = 2}};
    Deployment s = v;
    s.parallel = {.tp = 8, .pp = 2, .dp = 4, .ep = 8, .redundant_experts = 32};
    s.serving.engine = Engine::sglang;
    const std::string vl = serve_command(evaluate(v, {.context = 8000})).line();
    const std::string sl = serve_command(evaluate(s, {.context = 8000})).line();
    for (const ParallelFlag& f : engine_parallel_flags) {
        INFO(f.flag);
        if (std::string(f.flag) == "--expert-parallel-size") continue;  // SGLang's alias
        CHECK_THAT(f.engine == Engine::vllm ? vl : sl, Catch::Contains(f.flag));
    }
}

TEST_CASE("a command serving LoRA adapters asks for the slots kvplan charged", "[commands][lora]") {
    // Llama-3-70B on 4 x H100 with 4 adapter slots of rank 16: vLLM's LoRAConfig flags, SGLang's
    // per-batch slots; the slots (854,589,440 B a GPU, tests/budget/test_budget.cpp) leave less KV.
    Deployment d{
        .model = bundled("llama-3-70b"), .gpu = bundled_gpu("h100-sxm"), .parallel = {.tp = 4}};
    const ReplicaAnswer plain = evaluate(d, {.context = 8192});
    d.serving.reserve.lora = {.max_loras = 4, .max_lora_rank = 16};
    const ReplicaAnswer a = evaluate(d, {.context = 8192});
    CHECK(a.kv_budget + Bytes::exactly(854'589'440) == plain.kv_budget);
    CHECK_THAT(serve_command(a, {.model = "m"}).line(),
               Catch::EndsWith("--enable-lora --max-loras 4 --max-lora-rank 16"));
    d.serving.engine = Engine::sglang;
    CHECK_THAT(serve_command(evaluate(d, {.context = 8192}), {.model = "m"}).line(),
               Catch::EndsWith("--enable-lora --max-loras-per-batch 4 --max-lora-rank 16"));
    d.serving.reserve.lora.fully_sharded = true;
    CHECK_THROWS_AS(serve_command(evaluate(d, {.context = 8192}), {.model = "m"}), InvalidInput);
}

TEST_CASE("a vLLM command pages in the block its attention backend forces", "[commands][backend]") {
    // DeepSeek-R1 (MLA, qk_nope_head_dim 128) on 8 x H200 with a bf16 cache: FLASH_ATTN_MLA, and
    // FlashMLA's dense kernel on Hopper makes vLLM force 16 up to 64 (vllm/platforms/cuda.py,
    // check_and_update_config). The command says --block-size 64; Llama-3-8B on the same GPU
    // keeps FLASH_ATTN and vLLM's 16, and its command says no block size.
    const ReplicaAnswer r1 = evaluate(
        {.model = bundled("deepseek-r1"), .gpu = bundled_gpu("h200-sxm"), .parallel = {.tp = 8}},
        {.context = 32768});
    REQUIRE(r1.serving.backend);
    CHECK(r1.serving.backend->backend == VllmAttentionBackend::flash_attn_mla);
    CHECK(r1.serving.backend->forced);
    CHECK(r1.serving.block_size == 64);
    CHECK_THAT(serve_command(r1, {.model = "x"}).line(), Catch::EndsWith(" --block-size 64"));
    const ReplicaAnswer l = evaluate(
        {.model = bundled("llama-3-8b"), .gpu = bundled_gpu("h200-sxm")}, {.context = 8192});
    CHECK(l.serving.block_size == 16);
    CHECK_THAT(serve_command(l, {.model = "x"}).line(), !Catch::Contains("--block-size"));
}

TEST_CASE("host memory for KV is vLLM's --kv-offloading-size per engine", "[commands][tiers]") {
    // 100 GiB of host DRAM per replica: one engine of tp 2 takes it whole (vLLM shares it over
    // its tp x pp ranks, vllm/config/vllm.py); at dp 2 each of the two engines takes 100 / 2 = 50
    // GiB. The native backend is vLLM's own CPU offloading (OffloadingConnector).
    const Bytes host = 100 * GiB;
    const ReplicaAnswer one = evaluate(
        {.model = bundled("llama-3-8b"), .gpu = bundled_gpu("h100-sxm"), .parallel = {.tp = 2}},
        {.context = 8192});
    CHECK_THAT(serve_command(one, {.model = "x", .kv_offloading = host}).line(),
               Catch::EndsWith(" --kv-offloading-size 100 --kv-offloading-backend native"));
    const ReplicaAnswer two = evaluate({.model = bundled("llama-3-8b"),
                                        .gpu = bundled_gpu("h100-sxm"),
                                        .parallel = {.tp = 1, .dp = 2}},
                                       {.context = 8192});
    CHECK_THAT(serve_command(two, {.model = "x", .kv_offloading = host}).line(),
               Catch::Contains(" --kv-offloading-size 50 --kv-offloading-backend native"));
    // None given: no offloading flag.
    CHECK_THAT(serve_command(one, {.model = "x"}).line(), !Catch::Contains("offloading"));
}

TEST_CASE("SGLang's and TensorRT-LLM's host KV tiers, per rank in their own units",
          "[commands][tiers]") {
    // Llama-3-8B at tp 2 on H100s: a token on a rank is 32 layers x 4 KV heads x 128 x 2 (K, V)
    // x 2 B = 65,536 B, SGLang's host pool's size_per_token as its device pool's cell.
    const Deployment d{.model = bundled("llama-3-8b"),
                       .gpu = bundled_gpu("h100-sxm"),
                       .parallel = {.tp = 2},
                       .serving = {.engine = Engine::sglang}};
    const ReplicaAnswer sg = evaluate(d, {.context = 8192});
    const std::uint64_t device = sg.report.sglang.max_total_num_tokens;
    CHECK(sg.report.sglang.largest_cell.count() == 65'536);
    // 400 GiB for the replica: 429,496,729,600 B / 2 ranks = 214.7 GB, 214 whole GB a rank
    // (--hicache-size is an int of GB, python/sglang/srt/server_args.py); 214e9 // 65,536 =
    // 3,265,380 tokens, larger than the device pool.
    const SglangHostCache big = sglang_host_cache(sg.report.sglang, 2, 400 * GiB);
    CHECK(big.gb_per_rank == 214);
    CHECK(big.host_tokens == 3'265'380);
    CHECK(big.host_tokens > device);
    CHECK_THAT(serve_command(sg, {.model = "x", .kv_offloading = 400 * GiB}).line(),
               Catch::EndsWith(" --kv-cache-dtype bf16 --enable-hierarchical-cache --hicache-size "
                               "214"));
    // 100 GiB: 53 GB a rank, 53e9 // 65,536 = 808,715 tokens, no larger than the device pool
    // (the H100's pool at tp 2 is over 900,000 tokens), which SGLang's releases assert against
    // (memory_pool_host.py): no command, the least size named, ceil((device + 1) x 65,536 / 1e9)
    // GB a rank.
    const SglangHostCache small = sglang_host_cache(sg.report.sglang, 2, 100 * GiB);
    CHECK(small.host_tokens == 808'715);
    REQUIRE(device > 900'000);
    const std::uint64_t least = ((device + 1) * 65'536 + 999'999'999) / 1'000'000'000;
    CHECK(small.least_gb_per_rank == least);
    CHECK_FALSE(small.starts());
    CHECK_THROWS_WITH(
        serve_command(sg, {.model = "x", .kv_offloading = 100 * GiB}),
        Catch::Contains("kv_offloading: expected a host pool larger than the device pool's " +
                        std::to_string(device) + " tokens per rank") &&
            Catch::Contains("--hicache-size " + std::to_string(least) + ", " +
                            std::to_string(2 * least) +
                            " GB of host memory for the replica's 2 ranks") &&
            Catch::EndsWith("found 100 GiB: --hicache-size 53 holds 808715 tokens of 65536 B"));
    // Less than a whole GB a rank is no hierarchical cache at all (hicache_size 0 takes the
    // ratio instead): 1.5 GiB over 2 ranks is 0.8 GB.
    CHECK(sglang_host_cache(sg.report.sglang, 2, Bytes::exactly(1'610'612'736)).gb_per_rank == 0);
    CHECK_THROWS_AS(
        serve_command(sg, {.model = "x", .kv_offloading = Bytes::exactly(1'610'612'736)}),
        InvalidInput);
    // TensorRT-LLM: KvCacheConfig.host_cache_size, bytes per rank in the YAML
    // (tensorrt_llm/llmapi/llm_args.py): 100 GiB over tp 2 = 53,687,091,200 B each.
    Deployment t = d;
    t.serving.engine = Engine::trtllm;
    const ServeCommand trt =
        serve_command(evaluate(t, {.context = 8192}), {.model = "x", .kv_offloading = 100 * GiB});
    CHECK(trt.extra_options == "{kv_cache_config: {host_cache_size: 53687091200}}");
    CHECK_THAT(trt.line(), Catch::EndsWith("--extra_llm_api_options extra_llm_api_options.yaml"));
}

TEST_CASE("the printed --kv-cache-dtype is the one the vLLM release lists",
          "[commands][kv_dtype]") {
    // vllm/config/cache.py, CacheDType (engine/kv_dtype_names.hpp cites each release line):
    // nvfp4 from v0.20 (PR #40177, April 2026), on Blackwell only.
    Deployment d{.model = bundled("llama-3-8b"), .gpu = bundled_gpu("b200"), .kv = KvDtype::nvfp4};
    const auto line = [&](std::optional<EngineVersion> v) {
        d.serving.engine_version = v;
        return serve_command(evaluate(d, {.context = 8192}), {.model = "m"}).line();
    };
    CHECK_THAT(line(std::nullopt), Catch::Contains("--kv-cache-dtype nvfp4"));
    CHECK_THAT(line(EngineVersion{0, 20}), Catch::Contains("--kv-cache-dtype nvfp4"));
    // v0.19 has no such name: `vllm serve` exits at argument parsing. The input is valid (v0.20
    // takes it), so the answer is DOES NOT START with the release that brought the name, and no
    // command line for v0.19.
    d.serving.engine_version = EngineVersion{0, 19};
    const ReplicaAnswer old = evaluate(d, {.context = 8192});
    CHECK(old.verdict == Verdict::does_not_start);
    CHECK(old.refusal == Refusal::kv_dtype);
    CHECK(old.kv_dtype_check.rule == KvDtypeRule::release_too_old);
    CHECK(old.kv_dtype_check.since == EngineVersion{0, 20});
    CHECK(old.max_concurrency == 0);
    CHECK(old.max_context == std::optional<std::uint64_t>(0));
    CHECK(refusal_text(old) ==
          "vLLM v0.19 does not know --kv-cache-dtype nvfp4, which came in v0.20 "
          "(vllm/config/cache.py, CacheDType): the release exits at argument parsing; "
          "--engine-version 0.20 or later starts");
    const std::vector<EngineCommand> old_commands =
        serve_commands(d, {.context = 8192}, {.model = "m"});
    CHECK(!old_commands.front().command);
    // The note says why, in the refusal's own words.
    CHECK(old_commands.front().refused ==
          "vllm does not start this deployment: vLLM v0.19 does not know --kv-cache-dtype "
          "nvfp4, which came in v0.20 (vllm/config/cache.py, CacheDType): the release exits at "
          "argument parsing; --engine-version 0.20 or later starts");
    // nvfp4_4over6 and the per-token-head types under their vLLM names.
    d.kv = KvDtype::nvfp4_4over6;
    CHECK_THAT(line(std::nullopt), Catch::Contains("--kv-cache-dtype nvfp4_4over6"));
    d.kv = KvDtype::fp8_per_token_head;
    CHECK_THAT(line(std::nullopt), Catch::Contains("--kv-cache-dtype fp8_per_token_head"));
    d.kv = KvDtype::int8;
    CHECK_THAT(line(EngineVersion{0, 20}), Catch::Contains("--kv-cache-dtype int8_per_token_head"));
    d.kv = KvDtype::int4;
    CHECK_THAT(line(std::nullopt), Catch::Contains("--kv-cache-dtype int4_per_token_head"));
    // bfloat16 is a name from v0.11 (beside fp8_ds_mla, with DeepSeek-V3.2); before, a 16-bit
    // cache is "auto", the checkpoint's own 16-bit dtype, the same bytes.
    d.kv = KvDtype::bf16;
    CHECK_THAT(line(EngineVersion{0, 11}), Catch::Contains("--kv-cache-dtype bfloat16"));
    CHECK_THAT(line(EngineVersion{0, 10}), Catch::Contains("--kv-cache-dtype auto"));
    // No vLLM release has an MXFP4 cache: sized, refused at start-up (below), no command.
    d.kv = KvDtype::mxfp4;
    d.serving.engine_version.reset();
    CHECK_THROWS_AS(serve_command(evaluate(d, {.context = 8192}), {.model = "m"}), InvalidInput);
    // An NVFP4 cache on Hopper: no FP4 tensor cores (kv_support.hpp).
    d.kv = KvDtype::nvfp4;
    d.gpu = bundled_gpu("h100-sxm");
    CHECK_THROWS_WITH(evaluate(d, {.context = 8192}),
                      Catch::StartsWith("GPU 'h100-sxm' (hopper, compute capability 9.0): "
                                        "kv_dtype: expected a KV dtype it can hold (vLLM's NVFP4 "
                                        "KV cache needs compute capability 10.x"));
    // vLLM refuses an nvfp4 cache for any model with MLA layers (vllm/config/vllm.py,
    // VllmConfig.validate_nvfp4_kv_cache_with_mla), on Blackwell too: a start-up refusal, with
    // the dtype its message proposes. DeepSeek-V3's 61 MLA layers of a 512 + 64 latent: fp8
    // 576 x 61 = 35,136 B = 34.31 KiB a token; nvfp4_4over6 (e2m1 and an e4m3 scale per 16)
    // 576 x 0.5625 x 61 = 19,764 B = 19.30 KiB.
    Deployment mla{.model = bundled("deepseek-v3"),
                   .gpu = bundled_gpu("b200"),
                   .parallel = {.tp = 8},
                   .kv = KvDtype::nvfp4_4over6};
    const ReplicaAnswer nvfp4_mla = evaluate(mla, {.context = 8192});
    CHECK(nvfp4_mla.refusal == Refusal::kv_dtype);
    CHECK(nvfp4_mla.kv_dtype_check.rule == KvDtypeRule::nvfp4_with_mla);
    CHECK(nvfp4_mla.kv_dtype_check.mla_layers == 61);
    CHECK(nvfp4_mla.kv_per_token.count() == 19'764);
    CHECK(refusal_text(nvfp4_mla) ==
          "vLLM refuses an nvfp4_4over6 KV cache for a model with MLA layers (61 here; "
          "vllm/config/vllm.py, VllmConfig.validate_nvfp4_kv_cache_with_mla); --kv-dtype "
          "fp8_e4m3 (34.31 KiB per token against 19.30 KiB) starts");
    // Under a release before the name, argument parsing refuses first, and no newer release
    // takes it with MLA: the dtype is the change, not the release.
    mla.kv = KvDtype::nvfp4;
    mla.serving.engine_version = EngineVersion{0, 19};
    const ReplicaAnswer both = evaluate(mla, {.context = 8192});
    CHECK(both.kv_dtype_check.rule == KvDtypeRule::release_too_old);
    CHECK(!both.kv_dtype_check.newer_release_starts);
    CHECK_THAT(refusal_text(both),
               Catch::Contains("every release that names it refuses it with MLA (61 MLA layers)") &&
                   Catch::EndsWith("--kv-dtype fp8_e4m3 (34.31 KiB per token against 19.30 KiB) "
                                   "starts"));
    mla.serving.engine_version.reset();
    mla.kv = KvDtype::fp8_e4m3;
    CHECK(evaluate(mla, {.context = 8192}).starts());
    // SGLang has no such rule: its fp4_e2m1 cache with MLA is sized and starts.
    mla.kv = KvDtype::nvfp4;
    mla.serving.engine = Engine::sglang;
    CHECK(evaluate(mla, {.context = 8192}).refusal != Refusal::kv_dtype);
    // SGLang names NVFP4's layout fp4_e2m1 (python/sglang/srt/server_args.py).
    d.gpu = bundled_gpu("b200");
    d.serving.engine = Engine::sglang;
    CHECK_THAT(serve_command(evaluate(d, {.context = 8192}), {.model = "m"}).line(),
               Catch::Contains("--kv-cache-dtype fp4_e2m1"));
}

TEST_CASE("SGLang's command names the MoE runner backend the weights assumed", "[commands]") {
    // DeepSeek-V4-Pro on eight B200s under SGLang: with --moe-runner-backend marlin its MXFP4
    // experts are held as Marlin's MoE holds them (engine/sglang_weights.hpp), and the command
    // says so; under the default ("auto") it names no backend.
    Deployment d{
        .model = bundled("deepseek-v4-pro"), .gpu = bundled_gpu("b200"), .parallel = {.tp = 8}};
    d.serving.engine = Engine::sglang;
    const ReplicaAnswer automatic = evaluate(d, {.context = 8192});
    REQUIRE(automatic.starts());
    CHECK_THAT(serve_command(automatic, {.model = "m"}).line(),
               !Catch::Contains("--moe-runner-backend"));
    d.serving.tuning.sglang.moe_runner_backend = SglangMoeRunnerBackend::marlin;
    const ReplicaAnswer marlin = evaluate(d, {.context = 8192});
    REQUIRE(marlin.starts());
    CHECK(marlin.weights_per_gpu != automatic.weights_per_gpu);
    CHECK_THAT(serve_command(marlin, {.model = "m"}).line(),
               Catch::Contains("--moe-runner-backend marlin"));
}

TEST_CASE("a KV dtype no release of the engine names does not start, with those it takes",
          "[commands][kv_dtype]") {
    // Llama-3-8B, 32 layers x 8 KV heads x 128: mxfp4 (e2m1 and an e8m0 scale per 32) is
    // 64 + 4 B a vector, 32 x 8 x 68 x 2 = 34,816 B a token; fp8_e4m3 32 x 8 x 128 x 2 =
    // 65,536 B (64.00 KiB). The MI355X (CDNA4) holds MXFP4 (kv_support.hpp), but vLLM's
    // CacheDType (vllm/config/cache.py) has no mxfp4 in any release.
    Deployment d{
        .model = bundled("llama-3-8b"), .gpu = bundled_gpu("mi355x"), .kv = KvDtype::mxfp4};
    const ReplicaAnswer v = evaluate(d, {.context = 8192});
    CHECK(v.verdict == Verdict::does_not_start);
    CHECK(v.refusal == Refusal::kv_dtype);
    CHECK(v.kv_dtype_check.rule == KvDtypeRule::no_engine_name);
    CHECK(v.kv_per_token.count() == 34'816);
    CHECK(v.max_concurrency == 0);
    // What vLLM takes on CDNA4 for a model without MLA: no NVFP4 (Blackwell's), no fp8_ds_mla.
    CHECK(v.kv_dtype_check.kv_dtype_accepted(KvDtype::fp8_e4m3));
    CHECK(v.kv_dtype_check.kv_dtype_accepted(KvDtype::int4));
    CHECK_FALSE(v.kv_dtype_check.kv_dtype_accepted(KvDtype::nvfp4));
    CHECK_FALSE(v.kv_dtype_check.kv_dtype_accepted(KvDtype::fp8_ds_mla));
    CHECK(refusal_text(v) ==
          "vLLM has no mxfp4 KV cache in any release: its cache dtypes (vllm/config/cache.py, "
          "CacheDType) do not list it; on this GPU it takes fp16, bf16, fp8_e4m3, fp8_e5m2, int8, "
          "int4, fp8_per_token_head; --kv-dtype fp8_e4m3 (64.00 KiB per token against 34.00 KiB) "
          "starts");
    CHECK(!serve_commands(d, {.context = 8192}, {.model = "m"}).front().command);
    // SGLang's --kv-cache-dtype choices (python/sglang/srt/server_args.py: auto, fp8_e5m2,
    // fp8_e4m3, bf16, bfloat16, fp4_e2m1, the last NVFP4's bytes, Blackwell's): no mxfp4 either.
    d.serving.engine = Engine::sglang;
    const ReplicaAnswer s = evaluate(d, {.context = 8192});
    CHECK(s.refusal == Refusal::kv_dtype);
    CHECK_THAT(refusal_text(s),
               Catch::StartsWith("SGLang has no mxfp4 KV cache in any release: its cache dtypes "
                                 "(python/sglang/srt/server_args.py, --kv-cache-dtype choices) do "
                                 "not list it; on this GPU it takes bf16, fp8_e4m3, fp8_e5m2;"));
    // Nor its int8 (vLLM's int8_per_token_head: 32 x 8 x (128 + 4) x 2 = 67,584 B a token).
    d.kv = KvDtype::int8;
    const ReplicaAnswer s8 = evaluate(d, {.context = 8192});
    CHECK(s8.kv_dtype_check.rule == KvDtypeRule::no_engine_name);
    CHECK(s8.kv_per_token.count() == 67'584);
    CHECK(s8.kv_dtype_check.starts_with == KvDtype::fp8_e4m3);
    d.kv = KvDtype::fp8_e4m3;
    CHECK(evaluate(d, {.context = 8192}).refusal != Refusal::kv_dtype);
    // TensorRT-LLM's KvCacheConfig.dtype (tensorrt_llm/llmapi/llm_args.py: auto, fp8, nvfp4) on
    // a B200: mxfp4 refused, nvfp4 among those it takes.
    d.gpu = bundled_gpu("b200");
    d.serving.engine = Engine::trtllm;
    d.kv = KvDtype::mxfp4;
    const ReplicaAnswer t = evaluate(d, {.context = 8192});
    CHECK(t.kv_dtype_check.rule == KvDtypeRule::no_engine_name);
    CHECK_THAT(refusal_text(t),
               Catch::Contains("on this GPU it takes fp16, bf16, fp8_e4m3, nvfp4;"));
    d.kv = KvDtype::nvfp4;
    CHECK(evaluate(d, {.context = 8192}).refusal != Refusal::kv_dtype);
    // A 32-bit cache needs no name ("auto" over a float32 model): not this rule.
    d.kv = KvDtype::fp32;
    CHECK(evaluate(d, {.context = 8192}).kv_dtype_check.rule == KvDtypeRule::none);
    // The GPU's own limit stays invalid input: MXFP4 on an H100 has no FP4 hardware.
    d.gpu = bundled_gpu("h100-sxm");
    d.kv = KvDtype::mxfp4;
    d.serving.engine = Engine::vllm;
    CHECK_THROWS_AS(evaluate(d, {.context = 8192}), InvalidInput);
}

TEST_CASE("TensorRT-LLM's command states what kvplan assumed, in trtllm-serve's flags",
          "[commands][trtllm]") {
    // Llama-3-70B on 4 x H100 at 8,000 tokens with fp8 KV, blocks of 64 tokens and a cap of 64
    // sequences: trtllm-serve's options (tensorrt_llm/commands/serve.py) carry tp 4, the
    // fraction 0.9 (KvCacheConfig's default, the one evaluate() took), max_seq_len = the context
    // and max_batch_size = the cap; the KV dtype and the block size have no option and go in the
    // YAML --extra_llm_api_options names (KvCacheConfig.dtype "fp8", tokens_per_block 64).
    const Model m = bundled("llama-3-70b");
    Deployment d{.model = m,
                 .gpu = bundled_gpu("h100-sxm"),
                 .parallel = {.tp = 4},
                 .kv = KvDtype::fp8_e4m3,
                 .serving = {.engine = Engine::trtllm, .block_size = 64, .max_sequences = 64}};
    const ServeCommand c = serve_command(evaluate(d, {.context = 8000}), {.model = "m"});
    CHECK(c.line() ==
          "trtllm-serve m --backend pytorch --tp_size 4 --kv_cache_free_gpu_memory_fraction 0.9 "
          "--max_seq_len 8000 --max_batch_size 64 --extra_llm_api_options "
          "extra_llm_api_options.yaml");
    CHECK(c.extra_options == "{kv_cache_config: {dtype: fp8, tokens_per_block: 64}}");
    CHECK(c.launcher_nodes == 1);
    // The defaults alone (bf16 KV: "auto", blocks of 32, the cap of 2,048): no YAML, no cap.
    d.kv = KvDtype::bf16;
    d.serving = {.engine = Engine::trtllm};
    const ServeCommand plain = serve_command(evaluate(d, {.context = 8000}), {.model = "m"});
    CHECK(plain.line() ==
          "trtllm-serve m --backend pytorch --tp_size 4 --kv_cache_free_gpu_memory_fraction 0.9 "
          "--max_seq_len 8000");
    CHECK(plain.extra_options.empty());
    // Beside vLLM's and SGLang's when TensorRT-LLM is the deployment's engine, after them.
    const std::vector<EngineCommand> all = serve_commands(d, {.context = 8000}, {.model = "m"});
    REQUIRE(all.size() == 3);
    CHECK(all[2].engine == Engine::trtllm);
    REQUIRE(all[2].command);
    CHECK(all[2].command->line() == plain.line());
    // FP8 weights over the bf16 checkpoint: vLLM and SGLang quantize at load, TensorRT-LLM's
    // PyTorch backend loads the checkpoint's own format, so it has no command for them.
    d.weights = WeightOptions{.format = WeightFormat::fp8};
    CHECK_THROWS_AS(serve_command(evaluate(d, {.context = 8000})), InvalidInput);
    // An NVFP4 cache on Blackwell is KvCacheConfig.dtype "nvfp4" (its block scales are buffers of
    // their own, kv_cache_manager_v2.py); fp8_e5m2 has no KvCacheConfig.dtype.
    Deployment b{.model = m,
                 .gpu = bundled_gpu("b200"),
                 .parallel = {.tp = 4},
                 .kv = KvDtype::nvfp4,
                 .serving = {.engine = Engine::trtllm}};
    CHECK(serve_command(evaluate(b, {.context = 8000}), {.model = "m"}).extra_options ==
          "{kv_cache_config: {dtype: nvfp4}}");
    b.kv = KvDtype::fp8_e5m2;
    CHECK_THROWS_AS(serve_command(evaluate(b, {.context = 8000}), {.model = "m"}), InvalidInput);
}

TEST_CASE("TensorRT-LLM over two nodes is one command for an MPI launcher, attention dp in YAML",
          "[commands][trtllm]") {
    // Llama-3.1-405B at tp 16 on H100s of 8 a node: 16 / 8 = 2 nodes, one trtllm-serve line for
    // all 16 ranks (MPI starts them), not one per node as vLLM and SGLang need.
    const Deployment big{.model = bundled("llama-3.1-405b"),
                         .gpu = bundled_gpu("h100-sxm"),
                         .parallel = {.tp = 16},
                         .serving = {.engine = Engine::trtllm}};
    const std::vector<ServeCommand> nodes =
        serve_node_commands(evaluate(big, {.context = 8000}), {.model = "m"});
    REQUIRE(nodes.size() == 1);
    CHECK(nodes[0].launcher_nodes == 2);
    CHECK(nodes[0].launcher_ranks == 16);  // tp 16 x pp 1, the replica's GPUs
    CHECK_THAT(nodes[0].line(), Catch::Contains("--tp_size 16 "));
    // DeepSeek-V3 tp 8 with attention dp 8 and ep 8 (TensorRT-LLM's tp counts every GPU of the
    // stage): --ep_size 8 and enable_attention_dp, a TorchLlmArgs field with no option.
    Deployment ds{.model = bundled("deepseek-v3"),
                  .gpu = bundled_gpu("h200-sxm"),
                  .parallel = {.tp = 8, .dp = 8, .ep = 8}};
    ds.parallel.rules = ParallelRules::trtllm;
    ds.serving.engine = Engine::trtllm;
    const ServeCommand c = serve_command(evaluate(ds, {.context = 8000}), {.model = "m"});
    CHECK_THAT(c.line(), Catch::Contains("--tp_size 8 --ep_size 8 "));
    CHECK(c.extra_options == "{enable_attention_dp: true}");
}
