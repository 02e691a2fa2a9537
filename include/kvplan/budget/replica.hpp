#pragma once

// A serving replica (a model on the GPUs of one parallel layout, of one type, its weight and KV
// formats) and the workload it must serve.

#include <cstdint>

#include "../dtype.hpp"
#include "../gpu.hpp"
#include "../layout.hpp"
#include "../model.hpp"
#include "../paging.hpp"
#include "../weights.hpp"

namespace kvplan {

/// A serving replica: a model on the GPUs of one parallel layout, all of one type, its weight
/// format and its KV format.
struct Replica {
    Model model;
    GpuSpec gpu{};              ///< every GPU of the replica is of this type
    ParallelConfig parallel{};  ///< tp x pp, and dp, ep, dcp under the rules it names
    WeightOptions weights{};    ///< weight format (and expert format, overrides)
    KvFormat kv{};              ///< KV cache element type and scales

    /// The layout checked against the model; throws InvalidLayout.
    [[nodiscard]] constexpr Layout layout() const { return Layout(model, parallel); }
    /// GPUs in the replica: tp x pp, times dp under vLLM's rules (replica_gpus).
    [[nodiscard]] constexpr std::uint32_t gpus() const noexcept {
        return static_cast<std::uint32_t>(replica_gpus(parallel));
    }
};

/// What a replica must serve: sequences of the p95 context length, that many at once, paged in
/// blocks of block_size tokens (1: unpaged).
struct Workload {
    std::uint64_t context = 0;      ///< p95 tokens per sequence, prompt and output together
    std::uint64_t concurrency = 1;  ///< sequences resident at once
    std::uint32_t block_size = default_block_size;
};

}  // namespace kvplan
