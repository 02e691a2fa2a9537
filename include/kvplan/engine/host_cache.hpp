#pragma once

// Host memory for KV, the tier below the GPU's pool, as each engine's command takes it. kvplan's
// figure is the host DRAM of one replica (kvplan fit --host-kv); each engine sizes its tier per
// process, one per GPU:
//
//   vLLM      --kv-offloading-size in GiB per engine, split over its tp x pp ranks
//             (vllm/config/cache.py, CacheConfig.kv_offloading_size; the command in
//             plan/commands.hpp divides it over the dp engines).
//   SGLang    --enable-hierarchical-cache with --hicache-size, an int of GB (10^9 B) per rank
//             (python/sglang/srt/server_args.py, the Hierarchical cache fields, read at commit
//             001067fffe33427bee0ed2f007fb7551a1d76b44). Each rank's HostKVCache holds
//             hicache_size x 10^9 // size_per_token tokens, size_per_token being the device
//             pool's cell (the MHA host pool's K and V per layer, the MLA one's latent), the least
//             over pipeline ranks (sync_fixed_hicache_size), aligned to the page
//             (python/sglang/srt/mem_cache/memory_pool_host.py, HostKVCache.__init__; now
//             mem_cache/pool_host/base.py). The released lines' memory_pool_host.py asserts that
//             the host pool is larger than the device pool ("The host memory should be larger than
//             the device memory with the current protocol"); main's pool_host/base.py (commit
//             712c06178f7f56e9f8d10b011ff4312f1270f8cf) logs a warning instead. A command that
//             fails on the releases people run is not printed.
//   TensorRT-LLM  KvCacheConfig.host_cache_size, bytes per rank in the YAML
//             (tensorrt_llm/llmapi/llm_args.py: "Size of the host cache in bytes"); each rank's
//             KV cache manager takes it whole as its secondary pool
//             (tensorrt_llm/_torch/pyexecutor/resource_manager.py: host_cache_size //
//             bytes per token // tokens_per_block blocks).

#include <cstdint>

#include "../detail/checked.hpp"
#include "../units.hpp"
#include "sglang.hpp"

namespace kvplan {

/// SGLang's host KV pool per rank for a replica's host memory.
struct SglangHostCache {
    std::uint32_t ranks = 1;        ///< the replica's GPUs, one host pool each (tp x pp)
    std::uint64_t gb_per_rank = 0;  ///< --hicache-size: whole GB of the replica's bytes per rank
    Bytes cell{};                   ///< bytes of one token on the fullest stage's ranks
    std::uint64_t page_size = 1;
    std::uint64_t host_tokens = 0;    ///< gb_per_rank x 10^9 // cell, aligned down to the page
    std::uint64_t device_tokens = 0;  ///< the device pool (max_total_num_tokens)
    /// The least --hicache-size whose pool is larger than the device pool.
    std::uint64_t least_gb_per_rank = 0;

    /// The host pool SGLang's released lines accept: at least 1 GB, larger than the device pool.
    [[nodiscard]] constexpr bool starts() const noexcept {
        return gb_per_rank > 0 && host_tokens > device_tokens;
    }
};

/// SGLang's host pool per rank when a replica of `ranks` GPUs, whose device pool is `pool`, has
/// `host` bytes of host memory for KV (see the header comment). The page alignment is taken down,
/// the count every release reaches (some align up by a page).
[[nodiscard]] constexpr SglangHostCache sglang_host_cache(const SglangKvPool& pool,
                                                          std::uint32_t ranks, Bytes host) {
    SglangHostCache h;
    h.ranks = ranks == 0 ? 1 : ranks;
    h.gb_per_rank = (host / h.ranks).count() / 1'000'000'000;
    h.cell = pool.largest_cell.is_zero() ? pool.cell_size : pool.largest_cell;
    h.page_size = pool.page_size == 0 ? 1 : pool.page_size;
    h.device_tokens = pool.max_total_num_tokens;
    if (h.cell.is_zero()) return h;
    const std::uint64_t cell = h.cell.count();
    h.host_tokens = detail::mul(h.gb_per_rank, 1'000'000'000, "a host cache size") / cell /
                    h.page_size * h.page_size;
    // The least whole page past the device pool, in whole GB.
    const std::uint64_t needed = (h.device_tokens / h.page_size + 1) * h.page_size;
    h.least_gb_per_rank =
        detail::ceil_div(detail::mul(needed, cell, "a host cache size"), 1'000'000'000);
    return h;
}

/// TensorRT-LLM's KvCacheConfig.host_cache_size for a replica of `ranks` GPUs with `host` bytes
/// of host memory for KV: each rank's share.
[[nodiscard]] constexpr Bytes trtllm_host_cache_size(std::uint32_t ranks, Bytes host) {
    return host / (ranks == 0 ? 1 : ranks);
}

}  // namespace kvplan
