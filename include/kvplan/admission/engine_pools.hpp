#pragma once

// Block pools from the engine profiles of kvplan/engine.hpp, so the pool a scheduler admits into
// is the one the engine builds at start-up: vLLM's (vllm_block_pool, in engine/vllm.hpp, from
// vllm_kv_cache's get_kv_cache_groups model), SGLang's pages from sglang_kv_pool. Planning
// tier: this header includes engine.hpp; the pool and admission headers stay core-lean.

#include <cstdint>

#include "../engine.hpp"
#include "block_pool.hpp"

namespace kvplan {

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
