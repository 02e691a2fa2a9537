#pragma once

// A replica as flags describe it: model, GPU, layout, formats, engine and its knobs. fit, plan,
// roofline, compare and check all start here.

#include <cstdint>
#include <kvplan/budget.hpp>
#include <kvplan/engine.hpp>
#include <kvplan/gpu.hpp>
#include <string>
#include <vector>

#include "inputs.hpp"

namespace kvplan::cli {

struct ResolvedGpu {
    std::string id;      ///< the canonical id (h100-sxm)
    std::string source;  ///< the spec file
    GpuSpec spec{};
    std::vector<std::string> aliases{};
};

/// A bundled id or alias (case-insensitive), or a path to a spec JSON. Unknown ids and bad files
/// throw kvplan::InvalidInput (exit 3).
[[nodiscard]] ResolvedGpu resolve_gpu(const std::string& arg, const Context& ctx,
                                      std::string_view flag = "--gpu");

/// Every bundled GPU, sorted by id.
[[nodiscard]] std::vector<ResolvedGpu> bundled_gpus(const Context& ctx);

/// --gpu as a comma list of ids or spec paths, each resolved; empty: every bundled GPU.
[[nodiscard]] std::vector<ResolvedGpu> resolve_gpu_list(const std::string& flag,
                                                        const Context& ctx);

/// Engine knobs from flags: --block-size and --gpu-memory-utilization reach the engine's own
/// option (vLLM's block_size and gpu_memory_utilization, SGLang's page_size and
/// mem_fraction_static, TensorRT-LLM's tokens_per_block and free_gpu_memory_fraction).
struct EngineSetup {
    Engine engine = Engine::vllm;
    BudgetOptions budget{};
    EngineOptions options{};
    std::uint32_t block_size = 1;  ///< what the engine pages in
    bool block_size_given = false;
    bool utilization_given = false;
};
[[nodiscard]] EngineSetup engine_setup(const CommonOptions& o);

/// The fraction of memory the engine uses: utilization, mem_fraction_static (nullopt: SGLang's
/// heuristic) or free_gpu_memory_fraction.
[[nodiscard]] std::string engine_fraction_name(Engine e);

}  // namespace kvplan::cli
