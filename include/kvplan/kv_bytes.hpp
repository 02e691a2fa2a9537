#pragma once

// The exact size of the cache: per token, per sequence, for the whole model or one rank.
//   full / sliding attention: kv_heads x (K vector + V vector) per layer per token
//                             (2 x kv_heads x head_dim x dtype bytes when K and V dims agree);
//   MLA latent: one vector of kv_lora_rank + qk_rope_head_dim values per layer per token, no x2,
//               the same on every TP rank (the latent is not split by heads); in fp8_ds_mla the
//               RoPE part stays bf16; plus, with a sparse-attention indexer (DeepSeek-V3.2), its
//               key: index_head_dim fp8 values and one fp32 scale per 128, whatever the KV dtype
//               (vLLM's DeepseekV32IndexerCache, vllm/model_executor/models/deepseek_v2.py:
//               128 + 4 = 132 B per token per layer);
//   indexed full attention (MiniMax-M3's block-sparse layers, vLLM's MiniMaxM3SparseAttention in
//               vllm/models/minimax_m3/nvidia/model.py): the GQA K and V, plus the indexer's key
//               of index_head_dim values per token in bf16 whatever the KV dtype (vLLM's
//               MiniMaxM3IndexerCache, vllm/models/minimax_m3/common/indexer.py, stores
//               attention_config.indexer_kv_dtype, "bf16" by default: 128 x 2 = 256 B per token per
//               layer); index_k is one head replicated on every TP rank, so the key is not split;
//   compressed MLA (DeepSeek-V4, vLLM's DeepseekV4Attention in vllm/model_executor/models/
//               deepseek_v4.py): every layer keeps its last `window` latents (DeepseekV4SWACache);
//               a layer of compress_ratio r also keeps one latent per r tokens, written when a
//               group of r fills (floor(T / r) at length T), each with an indexer key when the
//               layer has an indexer (r = 4); the compressors' fp32 state is a fixed amount per
//               sequence. In fp8_ds_mla a V4 latent is 584 B: 448 fp8 values, 7 one-byte UE8M0
//               scales (one per 64) and a pad byte, then 64 bf16 RoPE values
//               (vllm/v1/kv_cache_interface.py, model_version "deepseek_v4"). Per token a pool
//               grows by (latent + key) / r bytes, which is not whole for r = 128: the rate is
//               rounded up to the byte, and the bytes of a sequence are exact;
//   sliding window: tokens beyond the window are not kept;
//   chunked local: a token attends within its chunk of C tokens, so a layer holds the chunk of
//               the last token, (T - 1) mod C + 1 tokens at length T, and held a whole chunk of C
//               each time one filled; a sequence of T tokens is sized at that peak, min(T, C),
//               which is what memory must provide (vLLM's ChunkedLocalAttentionSpec frees the
//               blocks of finished chunks: vllm/v1/core/single_type_kv_cache_manager.py);
//   constant state: fixed bytes per sequence, split evenly across TP ranks (as Mamba heads are);
//   shared and MLP-only layers: nothing.

#include <cstdint>

#include "detail/checked.hpp"
#include "dtype.hpp"
#include "fixed_array.hpp"
#include "layout.hpp"
#include "model.hpp"
#include "units.hpp"

namespace kvplan {

/// Bytes of a sparse-attention indexer's key per token: `index_head_dim` fp8 values and one fp32
/// scale per 128 (0 when there is no indexer).
[[nodiscard]] constexpr Bytes indexer_key_bytes(std::uint32_t index_head_dim) {
    return vector_bytes(KvDtype::fp8_ds_mla, index_head_dim);
}

/// Bytes of the indexer key one layer of `spec` caches per token, on every TP rank alike: an MLA
/// layer's (DeepSeek-V3.2) in fp8 with its scales, a full-attention layer's (MiniMax-M3) in bf16;
/// 0 without an indexer.
[[nodiscard]] constexpr Bytes index_key_bytes(const CacheSpec& spec) {
    if (spec.index_head_dim == 0) return {};
    if (spec.kind == CacheKind::full_attention)
        return vector_bytes(KvDtype::bf16, spec.index_head_dim);
    return indexer_key_bytes(spec.index_head_dim);
}

/// Bytes of one MLA latent per token in `f`: fp8_ds_mla keeps the RoPE part in bf16.
[[nodiscard]] constexpr Bytes mla_latent_bytes(const CacheSpec& spec, KvFormat f) {
    if (f.dtype == KvDtype::fp8_ds_mla && is_compressed_mla(spec))
        // DeepSeek-V4's layout: one UE8M0 byte per 64 fp8 values, and one pad byte.
        return Bytes::exactly(std::uint64_t{spec.kv_lora_rank} + spec.kv_lora_rank / 64 + 1) +
               vector_bytes(KvDtype::bf16, spec.qk_rope_head_dim);
    if (f.dtype == KvDtype::fp8_ds_mla)
        return vector_bytes(f, spec.kv_lora_rank) +
               vector_bytes(KvDtype::bf16, spec.qk_rope_head_dim);
    return vector_bytes(f, std::uint64_t{spec.kv_lora_rank} + spec.qk_rope_head_dim);
}

/// Bytes of one entry of a compressed MLA layer's pool: a latent and, with an indexer, its key.
[[nodiscard]] constexpr Bytes compressed_entry_bytes(const CacheSpec& spec, KvFormat f) {
    return mla_latent_bytes(spec, f) + indexer_key_bytes(spec.index_head_dim);
}

/// Bytes one layer of `spec` adds per token on a rank of TP degree `tp` (0 for constant-state,
/// shared and MLP-only layers, which do not grow).
[[nodiscard]] constexpr Bytes layer_bytes_per_token(const CacheSpec& spec, KvFormat f,
                                                    std::uint32_t tp = 1) {
    switch (spec.kind) {
        case CacheKind::full_attention:
        case CacheKind::sliding_window:
        case CacheKind::chunked_local:
            return (vector_bytes(f, spec.k_head_dim) + vector_bytes(f, spec.v_head_dim)) *
                       kv_heads_per_rank(spec.kv_heads, tp) +
                   index_key_bytes(spec);
        case CacheKind::mla_latent:
            if (is_compressed_mla(spec))
                return spec.compress_ratio == 0
                           ? Bytes{}
                           : Bytes::exactly(detail::ceil_div(
                                 compressed_entry_bytes(spec, f).count(), spec.compress_ratio));
            return mla_latent_bytes(spec, f) + index_key_bytes(spec);
        case CacheKind::constant_state:
        case CacheKind::shared:
        case CacheKind::mlp_only:
            return {};
    }
    return {};
}

/// Tokens a layer of `spec` keeps for a sequence of `tokens`: the window caps a sliding layer, the
/// chunk a chunked one (its peak: see the header comment).
[[nodiscard]] constexpr std::uint64_t tokens_kept(const CacheSpec& spec,
                                                  std::uint64_t tokens) noexcept {
    switch (spec.kind) {
        case CacheKind::full_attention:
        case CacheKind::mla_latent:
            return tokens;
        case CacheKind::sliding_window:
        case CacheKind::chunked_local:
            return (tokens < spec.window ? tokens : spec.window);
        case CacheKind::constant_state:
        case CacheKind::shared:
        case CacheKind::mlp_only:
            return 0;
    }
    return 0;
}

/// Tokens a chunked-local layer of chunk `chunk` holds right at length `tokens`: the tokens of the
/// last token's chunk, (tokens - 1) mod chunk + 1 (0 for an empty sequence).
[[nodiscard]] constexpr std::uint64_t chunk_tokens_now(std::uint64_t chunk,
                                                       std::uint64_t tokens) noexcept {
    return tokens == 0 ? 0 : (tokens - 1) % chunk + 1;
}

/// The fixed per-sequence state of one layer on a TP rank (zero unless constant_state).
[[nodiscard]] constexpr Bytes layer_state_bytes(const CacheSpec& spec, std::uint32_t tp = 1) {
    if (spec.kind != CacheKind::constant_state) return {};
    return Bytes::exactly(detail::ceil_div(spec.state_bytes.count(), tp));
}

/// The bytes one layer holds per sequence whatever its length, once past its window: the
/// constant state, and for a compressed MLA layer its full window of latents and its
/// compressors' state (the same on every TP rank, as the latent is).
[[nodiscard]] constexpr Bytes layer_fixed_bytes(const CacheSpec& spec, KvFormat f,
                                                std::uint32_t tp = 1) {
    if (is_compressed_mla(spec)) return mla_latent_bytes(spec, f) * spec.window + spec.state_bytes;
    return layer_state_bytes(spec, tp);
}

/// Bytes one layer holds for one sequence of `tokens`.
[[nodiscard]] constexpr Bytes layer_bytes_per_sequence(const CacheSpec& spec, KvFormat f,
                                                       std::uint64_t tokens, std::uint32_t tp = 1) {
    if (is_compressed_mla(spec)) {
        // Exact: the window's latents so far, the pool's whole entries, the compressors' state.
        const std::uint64_t in_window = tokens < spec.window ? tokens : spec.window;
        const std::uint64_t entries = spec.compress_ratio == 0 ? 0 : tokens / spec.compress_ratio;
        return mla_latent_bytes(spec, f) * in_window + compressed_entry_bytes(spec, f) * entries +
               spec.state_bytes;
    }
    return layer_bytes_per_token(spec, f, tp) * tokens_kept(spec, tokens) +
           layer_state_bytes(spec, tp);
}

namespace detail {

[[nodiscard]] constexpr std::uint32_t shard_end(const Model& m, const Shard& s) noexcept {
    return (s.end_layer < m.num_layers() ? s.end_layer : m.num_layers());
}

/// Layers of each spec in the shard. Sizing calls this on every evaluation, so it avoids a
/// per-layer histogram: one spec needs no count at all, and otherwise each spec's count is a
/// compare-and-add over the layer bytes, which compilers vectorize.
[[nodiscard]] constexpr FixedArray<std::uint64_t, max_cache_specs> layers_per_spec(
    const Model& m, const Shard& s) noexcept {
    const LayerStack& L = m.layers();
    const std::uint32_t first = s.first_layer, end = shard_end(m, s);
    FixedArray<std::uint64_t, max_cache_specs> count{};
    if (first >= end) return count;
    if (L.num_specs == 1) {
        count[0] = end - first;
        return count;
    }
    for (std::uint32_t k = 0; k < L.num_specs; ++k) {
        std::uint32_t c = 0;
        for (std::uint32_t i = first; i < end; ++i) c += L.spec_of_layer[i] == k ? 1 : 0;
        count[k] = c;
    }
    return count;
}

/// Sum of fn(spec) x (layers of that spec in the shard), grouping layers by spec.
template <class Fn>
[[nodiscard]] constexpr Bytes sum_over_shard(const Model& m, const Shard& s, Fn fn) {
    const LayerStack& L = m.layers();
    const FixedArray<std::uint64_t, max_cache_specs> count = layers_per_spec(m, s);
    Bytes total{};
    for (std::uint32_t k = 0; k < L.num_specs; ++k)
        if (count[k] != 0) total += fn(L.specs[k]) * count[k];
    return total;
}

}  // namespace detail

/// KV bytes per token of context: the whole model by default, or what one rank holds of a token it
/// keeps (under decode context parallelism a rank keeps one token in dcp of full attention and
/// MLA, and every token of the other layers). Counts every layer that grows with context (sliding
/// layers included, up to their window).
[[nodiscard]] constexpr Bytes kv_bytes_per_token(const Model& m, KvFormat f, const Shard& s = {}) {
    return detail::sum_over_shard(
        m, s, [&](const CacheSpec& spec) { return layer_bytes_per_token(spec, f, s.tp); });
}

/// KV bytes per token of the layers that never stop growing (full attention and MLA): the slope of
/// bytes per sequence beyond every window and chunk.
[[nodiscard]] constexpr Bytes unbounded_bytes_per_token(const Model& m, KvFormat f,
                                                        const Shard& s = {}) {
    return detail::sum_over_shard(m, s, [&](const CacheSpec& spec) {
        return spec.kind == CacheKind::sliding_window || spec.kind == CacheKind::chunked_local
                   ? Bytes{}
                   : layer_bytes_per_token(spec, f, s.tp);
    });
}

/// Bytes of one sequence of `tokens`: windows cap sliding layers, constant state is added once.
/// Under decode context parallelism (s.dcp > 1) a rank holds its share of the tokens,
/// ceil(tokens / dcp), in full-attention and MLA layers, and the whole window or state in the
/// others (tokens_on_rank).
[[nodiscard]] constexpr Bytes kv_bytes_per_sequence(const Model& m, KvFormat f,
                                                    std::uint64_t tokens, const Shard& s = {}) {
    return detail::sum_over_shard(m, s, [&](const CacheSpec& spec) {
        return layer_bytes_per_sequence(spec, f, tokens_on_rank(spec.kind, tokens, s), s.tp);
    });
}

/// The largest window (or attention chunk) of the model, 0 if it has no sliding or chunked layer:
/// past it, only full-attention and MLA layers grow.
[[nodiscard]] constexpr std::uint64_t largest_window(const Model& m) noexcept {
    std::uint64_t w = 0;
    for (std::uint32_t k = 0; k < m.layers().num_specs; ++k)
        if (m.layers().specs[k].kind == CacheKind::sliding_window ||
            m.layers().specs[k].kind == CacheKind::chunked_local)
            if (m.layers().specs[k].window > w) w = m.layers().specs[k].window;
    return w;
}

/// The stage whose ranks hold the most bytes for sequences of `tokens`: it sets the capacity of the
/// whole replica under pipeline parallelism.
[[nodiscard]] constexpr std::uint32_t busiest_stage(const Model& m, KvFormat f, const Layout& l,
                                                    std::uint64_t tokens) {
    std::uint32_t best = 0;
    Bytes most{};
    for (std::uint32_t st = 0; st < l.pp(); ++st) {
        const Bytes b = kv_bytes_per_sequence(m, f, tokens, l.stage(st));
        if (b > most) {
            most = b;
            best = st;
        }
    }
    return best;
}

}  // namespace kvplan
