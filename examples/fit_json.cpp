// `kvplan fit --format json` from code, in one call: evaluate() answers for a deployment and a
// demand, and every figure the CLI prints is a field of that answer.
//
//   example_fit_json MODEL GPU TP CONTEXT CONCURRENCY [SHARED_PREFIX]
//
// MODEL and GPU are bundled ids (configs/models, configs/gpus); SHARED_PREFIX, the tokens of a
// system prompt every request starts with (fit --shared-prefix). Prints the figures under fit's
// JSON keys; a test runs it beside the CLI and compares every one.

// The one file of this program that compiles the config.json import.
#define KVPLAN_HF_CONFIG_IMPLEMENTATION
#include <cstdint>
#include <cstdio>
#include <exception>
#include <kvplan/gpu_spec.hpp>
#include <kvplan/hf_config.hpp>
#include <kvplan/plan.hpp>
#include <nlohmann/json.hpp>
#include <string>

int main(int argc, char** argv) {
    using namespace kvplan;
    if (argc != 6 && argc != 7) {
        std::fprintf(stderr, "usage: %s MODEL GPU TP CONTEXT CONCURRENCY [SHARED_PREFIX]\n",
                     argv[0]);
        return 2;
    }
    try {
        const std::string dir = KVPLAN_CONFIG_DIR;
        const Deployment d{
            .model = load_bundled_model(dir, argv[1]),
            .gpu = GpuRegistry::load(dir).find_file(argv[2])->spec,
            .parallel = {.tp = static_cast<std::uint32_t>(std::stoul(argv[3]))},
        };
        const Demand demand{.context = std::stoull(argv[4]),
                            .concurrency = std::stoull(argv[5]),
                            .shared_prefix_tokens = argc == 7 ? std::stoull(argv[6]) : 0};

        const ReplicaAnswer a = evaluate(d, demand);  // the one call

        const EngineMemory& m = a.memory();
        nlohmann::ordered_json j;
        j["fits"] = a.fits();
        j["gpu_memory_bytes"] = m.memory_total.count();
        j["fraction_bytes"] = m.fraction_bytes.count();
        j["weight_bytes_per_gpu"] = m.weights.count();
        j["activation_bytes"] = m.activation.count();
        j["cuda_graph_bytes"] = m.cuda_graphs.count();
        j["cuda_context_bytes"] = m.cuda_context.count();
        j["comm_buffer_bytes"] = m.comm_buffers.count();
        j["kv_budget_bytes_per_gpu"] = a.kv_budget.count();
        j["kv_bytes_per_sequence_per_gpu"] = a.kv_per_sequence.count();
        j["kv_bytes_needed_per_gpu"] = a.kv_needed.count();
        if (a.shortfall.is_zero())
            j["headroom_bytes_per_gpu"] = a.headroom.count();
        else
            j["shortfall_bytes_per_gpu"] = a.shortfall.count();
        if (a.kv_tokens) j["kv_tokens_capacity"] = *a.kv_tokens;
        j["num_gpu_blocks"] = a.report.vllm.num_blocks;
        j["max_concurrency"] = a.max_concurrency;
        j["max_concurrency_ratio"] = a.max_concurrency_ratio;
        j["sequence_cap"] = a.sequence_cap;
        j["admitted_sequences"] = a.admitted;
        j["shared_prefix_tokens"] = a.demand.shared_prefix_tokens;
        j["shared_prefix_blocks"] = a.shared_prefix_blocks;
        j["shared_prefix_blocks_saved"] = a.shared_prefix_blocks_saved;
        j["shared_prefix_bytes_saved"] = a.shared_prefix_bytes_saved.count();
        j["max_concurrency_without_sharing"] = a.max_concurrency_without_sharing;
        j["shared_prefix_concurrency_added"] = a.shared_prefix_concurrency_added();
        j["max_context"] = a.max_context ? nlohmann::json(*a.max_context) : nlohmann::json();
        j["longest_single_context"] =
            a.longest_single_context ? nlohmann::json(*a.longest_single_context) : nlohmann::json();
        j["context_limit_tokens"] = a.limit.tokens;
        if (a.decode) j["tpot_seconds"] = a.decode->tpot.in(seconds);
        std::printf("%s\n", j.dump(2).c_str());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 3;
    }
}
