#pragma once

// Paged allocation (PagedAttention): each layer's cache lives in fixed blocks of `block_size`
// tokens, so a sequence wastes at most the unused tail of its last block per layer. Compared here
// with a contiguous reservation of max_model_len per sequence, and with prefix sharing, where
// sequences that share a prompt prefix hold its full blocks once.

#include <cstdint>

#include "detail/checked.hpp"
#include "fixed_array.hpp"
#include "kv_bytes.hpp"
#include "model.hpp"

namespace kvplan {

/// vLLM's default block size in tokens.
inline constexpr std::uint32_t default_block_size = 16;

/// A run of block indices [first, end) of one layer's page table.
struct BlockRange {
    std::uint64_t first = 0;
    std::uint64_t end = 0;
    [[nodiscard]] constexpr std::uint64_t count() const noexcept { return end - first; }
};

/// Blocks that hold `tokens` tokens: ceil(tokens / block_size).
[[nodiscard]] constexpr std::uint64_t blocks_for(std::uint64_t tokens, std::uint32_t block_size) {
    KVPLAN_EXPECTS(block_size != 0);
    return detail::ceil_div(tokens, block_size);
}

/// The most blocks a chunked-local layer of chunk `chunk` held over a sequence of `tokens`: each
/// chunk k covers positions [k x chunk, (k + 1) x chunk), cut at `tokens` for the last one, and
/// holds the blocks those positions touch (vLLM frees the blocks before the current chunk:
/// ChunkedLocalAttentionManager in vllm/v1/core/single_type_kv_cache_manager.py). When block_size
/// divides chunk that is min(ceil(tokens / block_size), chunk / block_size).
[[nodiscard]] constexpr std::uint64_t peak_chunk_blocks(std::uint64_t chunk, std::uint64_t tokens,
                                                        std::uint32_t block_size) {
    KVPLAN_EXPECTS(block_size != 0 && chunk != 0);
    if (tokens <= chunk) return blocks_for(tokens, block_size);
    const std::uint64_t last = (tokens - 1) / chunk;             // the chunk of the last token
    const auto span = [&](std::uint64_t k, std::uint64_t end) {  // blocks of [k chunk, end)
        return (end - 1) / block_size - k * chunk / block_size + 1;
    };
    std::uint64_t most = span(last, tokens);
    // Full chunks differ only by where they start within a block, which repeats every
    // block_size / gcd(chunk, block_size) chunks: that many suffice.
    std::uint64_t a = chunk, b = block_size;
    while (b != 0) {
        const std::uint64_t t = a % b;
        a = b;
        b = t;
    }
    const std::uint64_t period = block_size / a;
    for (std::uint64_t k = 0; k < last && k < period; ++k) {
        const std::uint64_t n = span(k, (k + 1) * chunk);
        if (n > most) most = n;
    }
    return most;
}

/// The blocks a layer of `spec` holds for a sequence of `tokens`, blocks aligned to position 0.
/// A sliding layer keeps positions [tokens - window, tokens): the blocks that cover them, which is
/// ceil(window / block_size) or one more when the window straddles a block boundary. A chunked
/// layer is sized at its peak, as kv_bytes.hpp sizes it: peak_chunk_blocks, ending at the last
/// block.
[[nodiscard]] constexpr BlockRange held_blocks(const CacheSpec& spec, std::uint64_t tokens,
                                               std::uint32_t block_size) {
    KVPLAN_EXPECTS(block_size != 0);
    switch (spec.kind) {
        case CacheKind::full_attention:
        case CacheKind::mla_latent:
            return {0, blocks_for(tokens, block_size)};
        case CacheKind::sliding_window:
            if (tokens <= spec.window) return {0, blocks_for(tokens, block_size)};
            return {(tokens - spec.window) / block_size, (tokens - 1) / block_size + 1};
        case CacheKind::chunked_local: {
            const std::uint64_t end = blocks_for(tokens, block_size);
            return {end - peak_chunk_blocks(spec.window, tokens, block_size), end};
        }
        case CacheKind::constant_state:
        case CacheKind::shared:
        case CacheKind::mlp_only:
            return {};
    }
    return {};
}

/// One sequence's paged footprint on a shard.
struct PagedUse {
    std::uint64_t blocks = 0;  ///< layer blocks held, summed over layers
    Bytes reserved{};          ///< bytes of those blocks, plus constant state
    Bytes used{};              ///< bytes actually filled (kv_bytes_per_sequence)
    [[nodiscard]] constexpr Bytes waste() const { return reserved - used; }
};

namespace detail {

// Grouped by spec (blocks_of depends on the spec alone): the work is per distinct layer shape,
// not per layer. Every term is non-negative, so a grouped product overflows only when the
// per-layer sum would.
template <class BlocksOf>
[[nodiscard]] constexpr PagedUse paged_sum(const Model& m, KvFormat f, const Shard& s,
                                           std::uint32_t block_size, BlocksOf blocks_of) {
    PagedUse u;
    const LayerStack& L = m.layers();
    const FixedArray<std::uint64_t, max_cache_specs> count = layers_per_spec(m, s);
    for (std::uint32_t k = 0; k < L.num_specs; ++k) {
        if (count[k] == 0) continue;
        const CacheSpec& spec = L.specs[k];
        const std::uint64_t n = blocks_of(spec);
        u.blocks = add(u.blocks, mul(n, count[k], "a block count"), "a block count");
        u.reserved += (layer_bytes_per_token(spec, f, s.tp) * mul(n, block_size, "a block count") +
                       layer_fixed_bytes(spec, f, s.tp)) *
                      count[k];
    }
    return u;
}

}  // namespace detail

/// One sequence of `tokens` in blocks of `block_size` tokens.
[[nodiscard]] constexpr PagedUse paged_sequence(const Model& m, KvFormat f, std::uint64_t tokens,
                                                std::uint32_t block_size, const Shard& s = {}) {
    PagedUse u = detail::paged_sum(m, f, s, block_size, [&](const CacheSpec& spec) {
        // A rank's share under dcp, of the layers dcp splits.
        return held_blocks(spec, tokens_on_rank(spec.kind, tokens, s), block_size).count();
    });
    u.used = kv_bytes_per_sequence(m, f, tokens, s);
    return u;
}

/// Bytes of one block of `block_size` tokens across every layer of the shard (a block table entry
/// as an engine with one block per token range for all layers allocates it).
[[nodiscard]] constexpr Bytes bytes_per_block(const Model& m, KvFormat f, std::uint32_t block_size,
                                              const Shard& s = {}) {
    return kv_bytes_per_token(m, f, s) * block_size;
}

/// One sequence under a contiguous reservation of `max_model_len` tokens, as engines before
/// paging allocated: the reservation is made up front, whatever the sequence then uses.
struct ContiguousUse {
    Bytes reserved{};  ///< kv_bytes_per_sequence(max_model_len)
    Bytes used{};      ///< kv_bytes_per_sequence(tokens)
    [[nodiscard]] constexpr Bytes waste() const { return reserved - used; }
};

/// A sequence of `tokens` (at most `max_model_len`) in a contiguous reservation.
[[nodiscard]] constexpr ContiguousUse contiguous_sequence(const Model& m, KvFormat f,
                                                          std::uint64_t tokens,
                                                          std::uint64_t max_model_len,
                                                          const Shard& s = {}) {
    KVPLAN_EXPECTS(tokens <= max_model_len);
    return {kv_bytes_per_sequence(m, f, max_model_len, s), kv_bytes_per_sequence(m, f, tokens, s)};
}

/// Paged footprint of sequences that share a prompt prefix.
struct SharedPrefixUse {
    std::uint64_t shared_blocks =
        0;                     ///< full prefix blocks per layer, held once: prefix / block_size
    std::uint64_t blocks = 0;  ///< layer blocks held by all the sequences together
    Bytes reserved{};          ///< bytes of those blocks, plus each sequence's constant state
    Bytes unshared{};          ///< bytes the same sequences would hold without sharing
    [[nodiscard]] constexpr Bytes saved() const { return unshared - reserved; }
};

/// `sequences` sequences of `tokens` each whose first `prefix_tokens` are one shared prompt. Only
/// full blocks are shared (a partial block is still being written by each sequence), and a sliding
/// layer shares them only while they are inside its window.
[[nodiscard]] constexpr SharedPrefixUse paged_shared_prefix(
    const Model& m, KvFormat f, std::uint64_t sequences, std::uint64_t prefix_tokens,
    std::uint64_t tokens, std::uint32_t block_size, const Shard& s = {}) {
    KVPLAN_EXPECTS(block_size != 0 && prefix_tokens <= tokens);
    SharedPrefixUse u;
    // Under decode context parallelism a rank pages its share of the prefix and of the tokens in
    // the layers dcp splits (full attention and MLA, whose figure shared_blocks gives), and all
    // of them in the others (tokens_on_rank).
    u.shared_blocks = tokens_on_rank(prefix_tokens, s) / block_size;
    if (sequences == 0) return u;
    for (std::uint32_t i = s.first_layer; i < detail::shard_end(m, s); ++i) {
        const CacheSpec& spec = m.layer(i);
        const std::uint64_t shared = tokens_on_rank(spec.kind, prefix_tokens, s) / block_size;
        const BlockRange r = held_blocks(spec, tokens_on_rank(spec.kind, tokens, s), block_size);
        const std::uint64_t shared_end = shared < r.end ? shared : r.end;
        const std::uint64_t overlap = r.first < shared ? shared_end - r.first : 0;
        const std::uint64_t each = r.count();
        const std::uint64_t held = detail::add(
            detail::mul(each - overlap, sequences, "a block count"), overlap, "a block count");
        const Bytes block = layer_bytes_per_token(spec, f, s.tp) * block_size;
        const Bytes state = layer_fixed_bytes(spec, f, s.tp) * sequences;
        u.blocks = detail::add(u.blocks, held, "a block count");
        u.reserved += block * held + state;
        u.unshared += block * detail::mul(each, sequences, "a block count") + state;
    }
    return u;
}

}  // namespace kvplan
