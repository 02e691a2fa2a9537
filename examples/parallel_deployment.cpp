// DeepSeek-V3 on 8 x H200 the way it is served: tensor parallelism against attention data
// parallelism with expert parallelism, the command lines that start each engine as sized, and the
// search over every layout of up to 8 GPUs.

// The one file of this program that compiles the config.json import.
#define KVPLAN_HF_CONFIG_IMPLEMENTATION
#include <cstdio>
#include <exception>
#include <kvplan/gpu_spec.hpp>
#include <kvplan/hf_config.hpp>
#include <kvplan/plan.hpp>
#include <string>

int main() {
    using namespace kvplan;
    const std::string dir = KVPLAN_CONFIG_DIR;
    try {
        const Model model = load_bundled_model(dir, "deepseek-v3");  // its fp8 checkpoint
        const GpuSpec h200 = load_gpu_spec(dir + "/gpus/h200-sxm.json").spec;
        const Demand demand{.context = 8000, .concurrency = 256};

        // vllm serve -tp 8: every GPU holds the whole MLA latent of every sequence.
        const ReplicaAnswer tp8 =
            evaluate({.model = model, .gpu = h200, .parallel = {.tp = 8}}, demand);
        // vllm serve -dp 8 --enable-expert-parallel: 8 engines, each its own sequences, and 32 of
        // the 256 experts on each GPU.
        const Deployment dpep{.model = model, .gpu = h200, .parallel = {.dp = 8, .ep = 8}};
        const ReplicaAnswer a = evaluate(dpep, demand);
        for (const ReplicaAnswer* r : {&tp8, &a})
            std::printf(
                "%-14s %4llu sequences of 8000 tokens, %6.2f GiB weights and %5.2f GiB KV "
                "per GPU\n",
                r == &tp8 ? "tp 8:" : "dp 8 x ep 8:",
                static_cast<unsigned long long>(r->max_concurrency), r->weights_per_gpu.in(GiB),
                r->kv_budget.in(GiB));

        // The command line of each engine, its layout restated in its flags and evaluated its way.
        for (const EngineCommand& c :
             serve_commands(dpep, demand, {.model = "deepseek-ai/DeepSeek-V3"}))
            std::printf("%s\n", c.command ? c.command->line().c_str() : c.refused.c_str());
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
}
