#pragma once

// Whose parallel flags a layout is stated in, by engine, and the GPUs a replica takes under them:
// vLLM's --data-parallel-size starts dp engines of tp x pp GPUs each (vllm/config/parallel.py,
// world_size_across_dp); SGLang's --dp-size with --enable-dp-attention and TensorRT-LLM's
// enable_attention_dp split the tp GPUs into attention groups, adding none.

#include <cstdint>

#include "../layout.hpp"
#include "kind.hpp"

namespace kvplan {

/// The parallel rules of engine `e`: whose flags a ParallelConfig's dp and ep are (the ideal
/// profile takes vLLM's).
[[nodiscard]] constexpr ParallelRules parallel_rules(Engine e) noexcept {
    switch (e) {
        case Engine::sglang:
            return ParallelRules::sglang;
        case Engine::trtllm:
            return ParallelRules::trtllm;
        case Engine::ideal:
        case Engine::vllm:
            return ParallelRules::vllm;
    }
    return ParallelRules::vllm;
}

/// GPUs of one replica of tp x pp with dp attention ranks under engine `e`'s rules: dp x tp x pp
/// for vLLM (and the ideal profile), tp x pp for SGLang and TensorRT-LLM.
[[nodiscard]] constexpr std::uint64_t replica_gpus(Engine e, std::uint32_t tp, std::uint32_t pp,
                                                   std::uint32_t dp) noexcept {
    ParallelConfig p;
    p.tp = tp;
    p.pp = pp;
    p.dp = dp;
    p.rules = parallel_rules(e);
    return replica_gpus(p);
}

}  // namespace kvplan
