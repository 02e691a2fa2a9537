// Plan a replica: does Llama-3-70B in bf16 on 4 x H100 (tp 4) hold 48 sequences of 8,192 tokens,
// what would vLLM print for its cache, and how fast can decode possibly go?

#include <cstdio>
#include <string>

#include <kvplan/kvplan.hpp>

int main() {
    using namespace kvplan;
    // NVIDIA H100 SXM5 80GB: the driver reports 81,559 MiB; 3.35 TB/s; 989.4 dense bf16 TFLOP/s;
    // NVLink 450 GB/s one way (configs/gpus/h100-sxm.json).
    GpuSpec h100;
    h100.memory_total = 81'559 * MiB;
    h100.memory_bandwidth = 3.35 * TB_per_s;
    h100.set_dense(ComputeDtype::bf16, 989.4 * TFLOP_per_s);
    h100.scale_up_bandwidth = 450.0 * GB_per_s;

    const Replica r{.model = presets::llama_3_70b, .gpu = h100, .parallel = {.tp = 4}};
    const Workload w{.context = 8192, .concurrency = 48};

    const ReplicaBudget b = replica_budget(r, w);
    const StageBudget& s = b.stages[b.limiting_stage];
    std::printf("usable %.2f GiB - weights %.2f GiB - reserve %.2f GiB = KV budget %.2f GiB per GPU\n",
                s.usable.in(GiB), s.weights.in(GiB), s.reserve.total().in(GiB), s.kv_budget.in(GiB));
    std::printf("48 x 8192 tokens need %.2f GiB: %s, %llu sequences fit\n", s.kv_needed.in(GiB),
                b.fits ? "fits" : "does not fit", static_cast<unsigned long long>(b.max_concurrency));

    const EngineReport v = engine_report(Engine::vllm, r, w.context);
    std::printf("vLLM: GPU KV cache size: %llu tokens; maximum concurrency for %llu tokens: %.2fx\n",
                static_cast<unsigned long long>(v.vllm.kv_cache_tokens),
                static_cast<unsigned long long>(v.vllm.max_model_len), v.vllm.max_concurrency);

    const DecodeBound d = decode_bound(r, w.concurrency, w.context);
    std::printf("decode: >= %.2f ms per step (%s-bound), <= %.0f tokens/s per GPU\n", d.step.in(milliseconds),
                std::string(name(d.bound)).c_str(), d.tokens_per_s_per_gpu);
}
