#pragma once

// A KV block pool described by value, as vLLM's v1 engine accounts it, and the blocks one request
// holds in it.
//
// vLLM keeps one pool of blocks with block 0 reserved as the null block
// (vllm/v1/core/block_pool.py, BlockPool: get_num_free_blocks() is num_gpu_blocks - 1 when nothing
// runs). The layers are split into KV-cache groups (vllm/v1/core/kv_cache_utils.py,
// get_kv_cache_groups); every group keeps its own block table per request and draws on the one pool
// (vllm/v1/core/kv_cache_coordinator.py). How many blocks a table holds follows the group's manager
// (vllm/v1/core/single_type_kv_cache_manager.py):
//   full            FullAttentionManager: ceil(tokens / block) until the request ends;
//   sliding_window  SlidingWindowManager: blocks wholly before the window are freed and replaced
//                   by the null block (remove_skipped_blocks, get_num_skipped_tokens =
//                   processed - window + 1), so a decoding table stops growing;
//   chunked_local   ChunkedLocalAttentionManager: blocks before the current attention chunk are
//                   freed (get_num_skipped_tokens = processed // chunk x chunk);
//   state           MambaManager: one block of running state; in "align" mode (prefix caching) a
//                   step that enters a new block takes a second, and the next step frees the old.
// The pool here is the same: one count of free blocks, groups of a kind counted once with their
// multiplicity, and the per-group rule below. It holds no block ids and never allocates.

#include <cstddef>
#include <cstdint>

#include "../detail/checked.hpp"
#include "../detail/enum_table.hpp"
#include "../error.hpp"
#include "../fixed_array.hpp"

namespace kvplan {

/// How a KV-cache group holds a request's blocks, after the vLLM manager named.
enum class BlockGroupKind : std::uint8_t {
    full,            ///< FullAttentionManager (MLA too): every block until the request ends
    sliding_window,  ///< SlidingWindowManager: only the blocks the window still reaches
    chunked_local,   ///< ChunkedLocalAttentionManager: only the blocks of the current chunk
    state,           ///< MambaManager: a fixed running state (Mamba, linear attention)
};

/// Each kind's spelling, used in messages.
inline constexpr FixedArray<detail::EnumName<BlockGroupKind>, 4> block_group_kind_names{{
    {BlockGroupKind::full, "full"},
    {BlockGroupKind::sliding_window, "sliding_window"},
    {BlockGroupKind::chunked_local, "chunked_local"},
    {BlockGroupKind::state, "state"},
}};

/// The spelling used in messages.
[[nodiscard]] constexpr const char* name(BlockGroupKind k) noexcept {
    return detail::enum_name(block_group_kind_names, k);
}

/// Kinds of group one pool describes (a model has a few: full, sliding windows, a state).
inline constexpr std::size_t max_block_groups = 8;

/// `count` KV-cache groups of one kind: each keeps its own block table of the same length, so a
/// request holds `count` times the blocks of one table.
struct BlockGroup {
    BlockGroupKind kind = BlockGroupKind::full;
    std::uint32_t count = 1;        ///< KV-cache groups of this kind
    std::uint32_t block_size = 16;  ///< tokens per block (vLLM's --block-size, or raised)
    std::uint64_t span = 0;         ///< sliding_window: the window; chunked_local: the chunk
    /// sliding_window, chunked_local: the most blocks vLLM's whole-prompt check counts for one
    /// table (SlidingWindowSpec / ChunkedLocalAttentionSpec .max_admission_blocks_per_request in
    /// vllm/v1/kv_cache_interface.py); 0: no cap.
    std::uint64_t admission_cap = 0;
    /// state: vLLM's mamba_cache_mode "align", used with prefix caching (block_size is then the
    /// attention block); otherwise the state is one block whatever the length.
    bool align = false;
    /// state: blocks kept beside it for speculative decoding, one per speculative token
    /// (MambaSpec.num_speculative_blocks, vllm/v1/kv_cache_interface.py).
    std::uint32_t extra_blocks = 0;
};

/// A block pool: its size, the null block, its groups and the scheduler's admission knobs.
struct BlockPoolSpec {
    std::uint64_t num_blocks = 0;  ///< blocks in the pool, the null block included (num_gpu_blocks)
    bool null_block = true;        ///< one block is reserved as the null block (vLLM); SGLang: none
    FixedArray<BlockGroup, max_block_groups> groups{};
    std::uint32_t num_groups = 0;
    std::uint64_t max_model_len = 0;  ///< a request's slots never exceed it; 0: no limit
    /// Free blocks a new request must leave while others run (watermark_blocks =
    /// int(watermark x num_gpu_blocks) in KVCacheManager, vllm/v1/core/kv_cache_manager.py;
    /// vLLM's default watermark is 0).
    std::uint64_t watermark_blocks = 0;
    /// Before its first step a request's whole prompt must fit, windows capped
    /// (scheduler_reserve_full_isl in vllm/config/scheduler.py, default on; full_sequence_must_fit
    /// in KVCacheManager.allocate_slots).
    bool full_sequence_must_fit = true;

    /// Blocks requests can hold: all but the null block.
    [[nodiscard]] constexpr std::uint64_t usable_blocks() const noexcept {
        return null_block && num_blocks > 0 ? num_blocks - 1 : num_blocks;
    }
};

namespace detail {

template <class... Found>
[[noreturn]] inline void bad_pool_field(TextRef field, const char* expected,
                                        const Found&... found) {
    throw_field_error<InvalidInput>("block pool", field, expected, text(found...));
}

inline Message pool_group_field(std::uint32_t i, const char* field) {
    return text("groups[", i, "].", field);
}

}  // namespace detail

/// Refuses a pool no engine could have: InvalidInput names the field, what was expected and what
/// was found. During constant evaluation the throw is a compile error.
constexpr void validate(const BlockPoolSpec& s) {
    if (s.num_groups == 0 || s.num_groups > max_block_groups)
        detail::bad_pool_field("num_groups", "1 to 8 groups", s.num_groups);
    if (s.usable_blocks() == 0)
        detail::bad_pool_field("num_blocks", "at least one block besides the null block",
                               s.num_blocks);
    for (std::uint32_t i = 0; i < s.num_groups; ++i) {
        const BlockGroup& g = s.groups[i];
        if (g.count == 0) detail::bad_pool_field(detail::pool_group_field(i, "count"), ">= 1", 0);
        if (g.block_size == 0)
            detail::bad_pool_field(detail::pool_group_field(i, "block_size"), ">= 1 token", 0);
        const bool windowed =
            g.kind == BlockGroupKind::sliding_window || g.kind == BlockGroupKind::chunked_local;
        if (windowed && g.span == 0)
            detail::bad_pool_field(detail::pool_group_field(i, "span"),
                                   "a window or chunk of >= 1 token", 0);
    }
}

/// Tokens of a request that the group's attention no longer reads once `processed` tokens are
/// computed (get_num_skipped_tokens of the group's manager); 0 for full and state groups.
[[nodiscard]] constexpr std::uint64_t skipped_tokens(const BlockGroup& g,
                                                     std::uint64_t processed) noexcept {
    switch (g.kind) {
        case BlockGroupKind::sliding_window:
            return processed + 1 > g.span ? processed + 1 - g.span : 0;
        case BlockGroupKind::chunked_local:
            return processed / g.span * g.span;
        case BlockGroupKind::full:
        case BlockGroupKind::state:
            return 0;
    }
    return 0;
}

/// Blocks one table of group `g` holds for a request after a step that gives it `tokens` slots,
/// `processed` of them computed before the step (at a request's first step: its prefix-cache
/// hit). The table is ceil(tokens / block) long; the blocks wholly skipped are null
/// (remove_skipped_blocks, or add_local_computed_blocks at a first step). A state holds one block,
/// in align mode two on a step that enters a new block (the previous state is freed a step later).
/// Precondition: processed < tokens.
[[nodiscard]] constexpr std::uint64_t group_blocks(const BlockGroup& g, std::uint64_t tokens,
                                                   std::uint64_t processed) {
    KVPLAN_EXPECTS(processed < tokens);
    if (g.kind == BlockGroupKind::state)
        return (g.align && processed > 0 &&
                        detail::ceil_div(tokens, g.block_size) >
                            detail::ceil_div(processed, g.block_size)
                    ? 2
                    : 1) +
               g.extra_blocks;
    return detail::ceil_div(tokens, g.block_size) - skipped_tokens(g, processed) / g.block_size;
}

/// A prompt prefix that requests share through prefix caching (the hash-keyed cached blocks of
/// vllm/v1/core/block_pool.py, each with a reference count). Its full-attention blocks are held
/// once while any request that uses it runs; they are the request's table up to `tokens`. Windowed
/// and state groups keep no shared blocks: vLLM pads what the window left with null blocks, and
/// the pool charges the blocks still inside the window to the request, as vLLM does when they are
/// cached but no running request holds them (touching an evictable block takes it off the free
/// queue). Owned by the caller, one per distinct prefix; admit and release update it.
struct SharedPrefix {
    std::uint64_t tokens = 0;   ///< prompt tokens it covers: a multiple of every group's block size
    std::uint32_t holders = 0;  ///< running requests that use it
    std::uint64_t blocks = 0;   ///< blocks it holds while holders > 0
    /// Its blocks are in the cache: a request computed them and they were not evicted since. A
    /// request that finds it cached computes only the rest of its prompt.
    bool cached = false;
};

/// One request's share of a pool, owned by the caller (one small struct per request, filled by
/// BlockPool::admit, updated by grow, cleared by release).
struct RequestBlocks {
    std::uint64_t prompt = 0;   ///< prompt tokens
    std::uint64_t max_new = 0;  ///< tokens it may generate (the request's max_tokens)
    /// Tokens with a slot after its last step (vLLM's num_computed_tokens once the step ran).
    std::uint64_t tokens = 0;
    std::uint64_t chunk = 0;         ///< prompt tokens scheduled per prefill step
    SharedPrefix* prefix = nullptr;  ///< the prefix it shares, if any
    FixedArray<std::uint64_t, max_block_groups> held{};  ///< its own blocks per group (x count)
    std::uint64_t committed = 0;  ///< blocks reserved for it (AdmitPolicy::no_preemption)
    std::uint64_t steady = 0;     ///< the most it holds once its prompt is in (no_preemption)
    bool running = false;         ///< admitted and not yet released

    /// Blocks it holds, the shared prefix's excluded.
    [[nodiscard]] constexpr std::uint64_t blocks() const noexcept {
        std::uint64_t n = 0;
        for (std::uint64_t b : held) n += b;
        return n;
    }

    /// Tokens later steps may still give a slot: prompt + max_new - 1 - tokens (the last output
    /// token is sampled, never written to the cache). Precondition: admitted.
    [[nodiscard]] constexpr std::uint64_t tokens_left() const noexcept {
        return prompt + max_new - 1 - tokens;
    }

    /// The tokens of its next step as an admission under AdmitPolicy::no_preemption reserved for
    /// it: the admission's chunk until the prompt is in (the last one shorter), then one token.
    [[nodiscard]] constexpr std::uint64_t next_step() const noexcept {
        if (tokens >= prompt) return 1;
        return prompt - tokens < chunk ? prompt - tokens : chunk;
    }
};

}  // namespace kvplan
