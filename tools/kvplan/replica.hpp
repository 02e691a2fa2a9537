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

}  // namespace kvplan::cli
