// The engines' command lines for what kvplan sized (plan/commands.hpp).

#include <catch2/catch.hpp>
#include <kvplan/gpu_spec.hpp>
#include <kvplan/plan.hpp>
#include <string>

#include "support/bundled_models.hpp"

using namespace kvplan;
using namespace kvplan::testing;

namespace {

GpuSpec gpu(const std::string& id) {
    return load_gpu_spec(config_dir / "gpus" / (id + ".json")).spec;
}

}  // namespace

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
                 .gpu = gpu("h200-sxm"),
                 .parallel = {.tp = 1, .dp = 16, .ep = 16, .redundant_experts = 32},
                 .kv = KvDtype::fp8_e4m3,
                 .serving = {.memory_fraction = 0.9, .max_sequences = 256}};
    const ReplicaAnswer a = evaluate(d, {.context = 8192, .concurrency = 4096});
    CHECK(a.placement.experts_per_gpu == 18);
    const ServeCommand c = serve_command(a, {.model = "deepseek-ai/DeepSeek-V3"});
    CHECK(c.line() ==
          "vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 1 --data-parallel-size 16 "
          "--enable-expert-parallel --enable-eplb "
          "--eplb-config '{\"num_redundant_experts\": 32}' --gpu-memory-utilization 0.9 "
          "--max-model-len 8192 --max-num-seqs 256 --kv-cache-dtype fp8_e4m3 --block-size 16");
    // Past the model's limit, allowed: the environment variable vLLM reads (Llama-3-8B: 8,192).
    Deployment l{.model = bundled("llama-3-8b"),
                 .gpu = gpu("h100-sxm"),
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
                       .gpu = gpu("h200-sxm"),
                       .parallel = {.tp = 8, .dp = 8, .ep = 8},
                       .serving = {.engine = Engine::sglang, .max_sequences = 512}};
    const ServeCommand c = serve_command(evaluate(d, {.context = 8000, .concurrency = 256}),
                                         {.model = "/models/dsv3"});
    CHECK(c.line() ==
          "python -m sglang.launch_server --model-path /models/dsv3 --tp-size 8 --dp-size 8 "
          "--enable-dp-attention --ep-size 8 --mem-fraction-static 0.769 --context-length 8000 "
          "--max-running-requests 512 --kv-cache-dtype bf16 --page-size 1");
}

TEST_CASE("both engines' lines for one deployment, each evaluated its own way", "[commands]") {
    // The vLLM deployment dp 8 x ep 8 restated for SGLang (tp 8, dp 8, ep 8): the same GPUs, but
    // SGLang keeps the embedding whole and splits the dense MLP and LM head 8 ways, and reserves
    // more for its graphs under dp attention, so it holds other figures. A cap of 128 per vLLM
    // dp rank is 1,024 shared by SGLang's.
    const Model m = bundled("deepseek-v3");
    const Deployment d{.model = m,
                       .gpu = gpu("h200-sxm"),
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
    const Deployment dcp{.model = m, .gpu = gpu("h200-sxm"), .parallel = {.tp = 8, .dcp = 8}};
    const std::vector<EngineCommand> only = serve_commands(dcp, {.context = 8000}, {.model = "m"});
    CHECK(only[0].command);
    CHECK_FALSE(only[1].command);
    CHECK_THAT(only[1].refused, Catch::Contains("cannot state this layout"));
    // Neither the ideal profile nor TensorRT-LLM has a command line here.
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
                       .gpu = gpu("h200-sxm"),
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
