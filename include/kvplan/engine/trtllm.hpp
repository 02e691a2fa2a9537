#pragma once

// TensorRT-LLM's KV cache: block pools per attention window in the memory its fraction leaves.

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

#include "../detail/checked.hpp"
#include "../dtype.hpp"
#include "../kv_bytes.hpp"
#include "../layout.hpp"
#include "../model.hpp"
#include "../units.hpp"

namespace kvplan {

/// TensorRT-LLM's knobs that shape the cache (tensorrt_llm/llmapi/llm_args.py, KvCacheConfig).
struct TrtllmOptions {
    double free_gpu_memory_fraction = 0.9;      ///< of the memory free after load (default 0.9)
    std::uint32_t tokens_per_block = 32;        ///< default 32 (64 in older engine builds)
    std::optional<std::uint64_t> max_tokens{};  ///< caps each pool's tokens
    std::uint64_t max_seq_len = 0;  ///< window of full-attention layers; 0: max_position_embeddings
    /// max_attention_window set per layer from the model: one pool per window size (VSWA). Unset,
    /// every layer is sized as full attention, as TensorRT-LLM does by default.
    bool variable_window = false;
    /// max_batch_size: requests scheduled at once per rank (the BuildConfig default, 2,048).
    std::uint64_t max_batch_size = 2048;
};

/// One of TensorRT-LLM's block pools: the layers of one attention window.
struct TrtllmPool {
    std::uint64_t window = 0;      ///< attention window in tokens
    std::uint32_t layers = 0;      ///< layers on the limiting rank
    Bytes bytes_per_token{};       ///< over those layers (kvFactor 2, or 1 for MLA)
    double share = 1.0;            ///< of the primary memory (calculateWindowSizeToShare)
    std::uint64_t max_tokens = 0;  ///< floor(memory x share / bytes_per_token)
    std::uint64_t blocks = 0;      ///< ceil(max_tokens / tokens_per_block): "primary pool" blocks
    std::uint64_t tokens = 0;      ///< blocks x tokens_per_block: "(N)" of the MemUsageChange line
    Bytes allocated{};             ///< tokens x bytes_per_token: "Allocated X GiB"
};

/// TensorRT-LLM's KV cache on a replica.
struct TrtllmKvCache {
    Bytes available{};  ///< primary memory per GPU for the cache (after the fraction)
    std::uint32_t tokens_per_block = 32;
    std::uint32_t limiting_stage = 0;
    std::array<TrtllmPool, max_cache_specs> pools{};
    std::uint32_t num_pools = 0;
    bool mamba_state_ignored = false;  ///< constant-state layers are left to another manager
};

/// TensorRT-LLM's KV cache for `m` under `l` with `available[stage]` bytes per GPU after the
/// fraction (BaseKVCacheManager::calculateMaxNumBlocks,
/// cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp;
/// tensorrt_llm/_torch/pyexecutor/resource_manager.py). Block counts are the least over pipeline
/// ranks, per window.
[[nodiscard]] constexpr TrtllmKvCache trtllm_kv_cache(const Model& m, KvFormat f, const Layout& l,
                                                      std::span<const Bytes> available,
                                                      const TrtllmOptions& o = {}) {
    KVPLAN_EXPECTS(available.size() == 1 || available.size() == l.pp());
    KVPLAN_EXPECTS(o.tokens_per_block >= 1);
    TrtllmKvCache c;
    c.tokens_per_block = o.tokens_per_block;
    c.available = available[0];
    const std::uint64_t max_seq =
        o.max_seq_len != 0 ? o.max_seq_len : m.config().max_position_embeddings;
    bool first = true;
    for (std::uint32_t st = 0; st < l.pp(); ++st) {
        const Shard sh = l.stage(st);
        std::array<TrtllmPool, max_cache_specs> pools{};
        std::uint32_t n = 0;
        for (std::uint32_t i = sh.first_layer; i < detail::shard_end(m, sh); ++i) {
            const CacheSpec& spec = m.layer(i);
            if (spec.kind == CacheKind::constant_state) {
                c.mamba_state_ignored = true;
                continue;
            }
            if (spec.kind == CacheKind::shared || spec.kind == CacheKind::mlp_only) continue;
            const std::uint64_t w = o.variable_window && spec.kind == CacheKind::sliding_window
                                        ? std::min(spec.window, max_seq)
                                        : max_seq;
            std::uint32_t k = 0;
            while (k < n && pools[k].window != w) ++k;
            if (k == n) pools[n++].window = w;
            pools[k].layers += 1;
            pools[k].bytes_per_token += layer_bytes_per_token(spec, f, sh.tp);
        }
        if (n == 0) continue;
        // The memory split across windows: share_w = window_w x bytes_w / sum (window x bytes).
        double weight_sum = 0.0;
        for (std::uint32_t k = 0; k < n; ++k)
            weight_sum += static_cast<double>(pools[k].window) *
                          static_cast<double>(pools[k].bytes_per_token.count());
        const Bytes avail = available[available.size() == 1 ? 0 : st];
        for (std::uint32_t k = 0; k < n; ++k) {
            TrtllmPool& p = pools[k];
            p.share = n == 1 ? 1.0
                             : static_cast<double>(p.window) *
                                   static_cast<double>(p.bytes_per_token.count()) / weight_sum;
            p.max_tokens =
                static_cast<std::uint64_t>(static_cast<double>(avail.count()) * p.share /
                                           static_cast<double>(p.bytes_per_token.count()));
            if (o.max_tokens) p.max_tokens = std::min(p.max_tokens, *o.max_tokens);
            p.blocks = detail::ceil_div(p.max_tokens, o.tokens_per_block);
        }
        // Multi-rank: the least blocks per window over ranks (stage layouts agree on windows).
        bool fewer = first;
        if (!first) fewer = pools[0].blocks < c.pools[0].blocks;
        if (fewer) {
            c.pools = pools;
            c.num_pools = n;
            c.limiting_stage = st;
        }
        first = false;
    }
    for (std::uint32_t k = 0; k < c.num_pools; ++k) {
        TrtllmPool& p = c.pools[k];
        p.tokens = detail::mul(p.blocks, o.tokens_per_block, "a token count");
        p.allocated = p.bytes_per_token * p.tokens;
    }
    return c;
}

/// TensorRT-LLM's KV cache with the same memory on every GPU.
[[nodiscard]] constexpr TrtllmKvCache trtllm_kv_cache(const Model& m, KvFormat f, const Layout& l,
                                                      Bytes available,
                                                      const TrtllmOptions& o = {}) {
    return trtllm_kv_cache(m, f, l, std::span<const Bytes>(&available, 1), o);
}

/// Sequences of `context` tokens TensorRT-LLM's pools hold at once: the least over windows of
/// blocks / ceil(min(context, window) / tokens_per_block)
/// (KVCacheManager::getMaxCapacityBatchSize).
[[nodiscard]] constexpr double trtllm_max_concurrency(const TrtllmKvCache& c,
                                                      std::uint64_t context) {
    KVPLAN_EXPECTS(context >= 1);
    double best = std::numeric_limits<double>::infinity();
    for (std::uint32_t k = 0; k < c.num_pools; ++k) {
        const std::uint64_t per_seq =
            detail::ceil_div(std::min(context, c.pools[k].window), c.tokens_per_block);
        best =
            std::min(best, static_cast<double>(c.pools[k].blocks) / static_cast<double>(per_seq));
    }
    return c.num_pools == 0 ? 0.0 : best;
}

}  // namespace kvplan
