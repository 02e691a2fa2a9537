// Plan a replica: does Llama-3-70B in bf16 on 4 x H100 (tp 4) hold 48 sequences of 8,192 tokens
// under vLLM, what would vLLM print for its cache, and how fast can decode possibly go? One call
// to evaluate() answers all three.

#include <cstdio>
#include <kvplan/kvplan.hpp>
#include <string>

int main() {
    using namespace kvplan;
    // NVIDIA H100 SXM5 80GB: the driver reports 81,559 MiB; 3.35 TB/s; 989.4 dense bf16 TFLOP/s;
    // NVLink 450 GB/s one way (configs/gpus/h100-sxm.json).
    GpuSpec h100;
    h100.id = "h100-sxm";
    h100.memory_total = 81'559 * MiB;
    h100.memory_bandwidth = 3.35 * TB_per_s;
    h100.set_dense(ComputeDtype::bf16, 989.4 * TFLOP_per_s);
    h100.scale_up_bandwidth = 450.0 * GB_per_s;

    const Deployment d{.model = presets::llama_3_70b, .gpu = h100, .parallel = {.tp = 4}};
    const ReplicaAnswer a = evaluate(d, {.context = 8192, .concurrency = 48});

    const EngineMemory& m = a.memory();
    std::printf(
        "%.2f GiB x %.2f - weights %.2f GiB - charged %.2f GiB = KV budget %.2f GiB per GPU\n",
        m.memory_total.in(GiB), m.fraction, m.weights.in(GiB), (m.charged - m.weights).in(GiB),
        a.kv_budget.in(GiB));
    std::printf("48 x 8192 tokens need %.2f GiB: %s, %llu sequences fit\n", a.kv_needed.in(GiB),
                a.fits() ? "fits" : "does not fit",
                static_cast<unsigned long long>(a.max_concurrency));
    std::printf(
        "vLLM: GPU KV cache size: %llu tokens; maximum concurrency for %llu tokens: %.2fx\n",
        static_cast<unsigned long long>(a.report.vllm.kv_cache_tokens),
        static_cast<unsigned long long>(a.report.vllm.max_model_len), a.max_concurrency_ratio);
    std::printf("decode: >= %.2f ms per token (%s-bound), <= %.0f tokens/s per GPU\n",
                a.decode->tpot.in(milliseconds), std::string(name(a.decode->bound)).c_str(),
                a.decode->tokens_per_s_per_gpu);
}
