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

/// The engine whose start-up the rules `e` follow: parallel_rules' inverse on the engines that
/// start.
[[nodiscard]] constexpr Engine engine_of(ParallelRules e) noexcept {
    switch (e) {
        case ParallelRules::vllm:
            return Engine::vllm;
        case ParallelRules::sglang:
            return Engine::sglang;
        case ParallelRules::trtllm:
            return Engine::trtllm;
    }
    return Engine::vllm;
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

/// vLLM's --enable-expert-parallel: the routed experts spread over every GPU of the dp x tp
/// attention ranks, so the expert-parallel degree is dp x tp (vllm/model_executor/layers/
/// fused_moe/config.py, FusedMoEParallelConfig.make: tp flattened across dp, then ep_size =
/// that tp_size).
[[nodiscard]] constexpr std::uint64_t vllm_expert_parallel_size(std::uint32_t dp,
                                                                std::uint32_t tp) noexcept {
    return std::uint64_t{dp} * tp;
}

/// The replicas `gpus` GPUs make of replicas of `per_replica` GPUs each: gpus / per_replica, or
/// 0 when `gpus` is not a whole number of replicas (or `per_replica` is 0).
[[nodiscard]] constexpr std::uint64_t replica_count(std::uint64_t gpus,
                                                    std::uint64_t per_replica) noexcept {
    if (per_replica == 0 || gpus % per_replica != 0) return 0;
    return gpus / per_replica;
}

}  // namespace kvplan
