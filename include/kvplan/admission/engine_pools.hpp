#pragma once

// Block pools from the engine profiles of kvplan/engine.hpp, so the pool a scheduler admits into
// is the one the engine builds at start-up: vLLM's groups and block count come from
// vllm_kv_cache (its get_kv_cache_groups model), SGLang's pages from sglang_kv_pool. Planning
// tier: this header includes engine.hpp; the pool and admission headers stay core-lean.

#include <cstdint>

#include "../engine.hpp"
#include "block_pool.hpp"

namespace kvplan {

/// vLLM's pool for the cache `c` that vllm_kv_cache built with options `o`: c.num_blocks blocks,
/// the null block, max_model_len, and one BlockGroup per kind of layer with its KV-cache groups.
/// Sliding windows carry the cap of vLLM's whole-prompt check, the kind's blocks per request
/// (SlidingWindowSpec.max_admission_blocks_per_request: cdiv(min(window - 1 + in-flight tokens,
/// max_model_len), block) + 1). Mamba states follow o.mamba_cache_mode. One group of every layer
/// (UniformTypeKVCacheSpecs) is one table. Precondition: vLLM can build the cache
/// (c.refused is empty).
[[nodiscard]] constexpr BlockPoolSpec vllm_block_pool(const VllmKvCache& c,
                                                      const VllmOptions& o = {}) {
    KVPLAN_EXPECTS(c.refused.empty() && c.num_kinds >= 1);
    BlockPoolSpec s;
    s.num_blocks = c.num_blocks;
    s.null_block = true;
    s.max_model_len = c.max_model_len;
    const std::uint32_t kinds = c.uniform_type ? 1 : c.num_kinds;
    for (std::uint32_t i = 0; i < kinds; ++i) {
        const VllmLayerKind& k = c.kinds[i];
        BlockGroup& g = s.groups[i];
        g.count = c.uniform_type ? 1 : k.groups;
        g.block_size = k.block_size;
        switch (k.kind) {
            case CacheKind::full_attention:
            case CacheKind::mla_latent:
            case CacheKind::shared:
                g.kind = BlockGroupKind::full;
                break;
            case CacheKind::sliding_window:
                g.kind = BlockGroupKind::sliding_window;
                g.span = k.window;
                g.admission_cap = k.blocks_per_request;
                break;
            case CacheKind::constant_state:
                g.kind = BlockGroupKind::state;
                g.align = o.mamba_cache_mode == MambaCacheMode::align;
                break;
        }
    }
    s.num_groups = kinds;
    return s;
}

/// SGLang's token pool `p` as a block pool: one table of pages of p.page_size tokens, every page
/// allocatable (python/sglang/srt/mem_cache/allocator.py: the free pages are 1 to
/// max_total_num_tokens / page_size, page 0 being padding outside the count, so no null block is
/// subtracted). SGLang admits by its own rule (PrefillAdder in
/// python/sglang/srt/managers/schedule_policy.py reserves new_token_ratio times the tokens each
/// running request may still generate, clipped); AdmitPolicy::no_preemption reserves all of them.
/// Precondition: no separate sliding-window pool (p.swa_tokens == 0).
[[nodiscard]] constexpr BlockPoolSpec sglang_block_pool(const SglangKvPool& p) {
    KVPLAN_EXPECTS(p.swa_tokens == 0 && p.page_size >= 1);
    BlockPoolSpec s;
    s.num_blocks = p.max_total_num_tokens / p.page_size;
    s.null_block = false;
    s.full_sequence_must_fit = false;
    s.groups[0] = BlockGroup{.kind = BlockGroupKind::full, .count = 1, .block_size = p.page_size};
    s.num_groups = 1;
    return s;
}

}  // namespace kvplan
