// Load a Hugging Face config.json and a GPU spec JSON, then print the KV budget of one GPU.
//
//   example_load_and_budget [CONFIG_JSON_OR_FOLDER GPU_JSON]
//
// Without arguments it reads the bundled Llama-3-70B config and the H100 SXM spec.

// The one file of this program that compiles the config.json import.
#define KVPLAN_HF_CONFIG_IMPLEMENTATION
#include <cstdio>
#include <exception>
#include <kvplan/budget.hpp>
#include <kvplan/gpu_spec.hpp>
#include <kvplan/hf_config.hpp>
#include <string>

int main(int argc, char** argv) {
    using namespace kvplan;
    const std::string dir = KVPLAN_CONFIG_DIR;
    const std::string config = argc > 2 ? argv[1] : dir + "/models/llama-3-70b.json";
    const std::string gpu_file = argc > 2 ? argv[2] : dir + "/gpus/h100-sxm.json";
    try {
        const Model model = load_hf_config(config);
        const GpuSpecFile gpu = load_gpu_spec(gpu_file);
        // Four GPUs in tensor parallel, 32 sequences of 8,192 tokens, vLLM's defaults otherwise.
        const Replica r{.model = model, .gpu = gpu.spec, .parallel = {.tp = 4}};
        const Workload w{.context = 8192, .concurrency = 32};
        const ReplicaBudget b = replica_budget(r, w);
        const StageBudget& s = b.stages[b.limiting_stage];
        std::printf("%s on 4 x %s (tp 4)\n", model.name().c_str(), gpu.spec.name.c_str());
        std::printf("  GPU memory          %10.2f GiB (driver total)\n", s.memory_total.in(GiB));
        std::printf("  usable x %.2f       %10.2f GiB\n", b.utilization, s.usable.in(GiB));
        std::printf("  - weights           %10.2f GiB\n", s.weights.in(GiB));
        std::printf("  - reserve           %10.2f GiB\n", s.reserve.total().in(GiB));
        std::printf("  = KV budget         %10.2f GiB per GPU\n", s.kv_budget.in(GiB));
        std::printf("  KV per token        %10llu B per GPU\n",
                    static_cast<unsigned long long>(s.kv_per_token.count()));
        std::printf("  32 x 8192 tokens:   %s, %llu sequences fit\n",
                    b.fits ? "fits" : "does not fit",
                    static_cast<unsigned long long>(b.max_concurrency));
    } catch (const Error& e) {
        // Bad data: the message names the file, the field, the expected and the found.
        std::fprintf(stderr, "%s\n", e.what());
        return 3;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 3;
    }
    return 0;
}
