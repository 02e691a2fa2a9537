#pragma once

// vLLM's KV cache layout for DeepSeek-V4 (its main branch). Each layer registers several caches,
// each a KVCacheSpec of its own (vllm/model_executor/layers/deepseek_v4_attention.py,
// deepseek_compressor.py, vllm/v1/attention/backends/mla/sparse_swa.py), every page padded up to
// a multiple of 576 B (alignment=576, _apply_alignment_padding in vllm/v1/kv_cache_interface.py):
//   window   DeepseekV4SWACache, every layer: SlidingWindowMLASpec of 64 tokens a block (fixed,
//            "the C4A KV block shape [256//4, head_dim]"), 584 B a token in fp8_ds_mla
//            (model_version "deepseek_v4": 448 fp8 NoPE, 128 B of bf16 RoPE, 8 scale bytes);
//   pool     DeepseekV4MLAAttention at compress_ratio r > 1: MLAAttentionSpec of the cache block
//            B, storage_block_size B / r entries of 584 B;
//   keys     DeepseekV4IndexerCache at r = 4: MLAAttentionSpec of block B, B / 4 entries of
//            index_head_dim + 4 B per 128 (its fp8 values and fp32 scale; no cache dtype);
//   state    CompressorStateCache of the pool's compressor: SlidingWindowMLASpec, fp32, head
//            2 x coff x head_dim (kv and score state; coff 2 at r = 4, else 1), window coff x r,
//            block 4 at r = 4 and 8 at r = 128 (fixed so that its page matches a pool page);
//   istate   the indexer's CompressorStateCache at r = 4: the same of index_head_dim.
// vLLM sets the cache block B to the DEEPSEEK_SPARSE_SWA backend's preferred 256
// (DeepseekSparseSWABackend.get_preferred_block_size; vllm/platforms/interface.py logs "Setting
// kv cache block size to 256 for DEEPSEEK_SPARSE_SWA backend").
//
// Grouping (vllm/v1/core/kv_cache_planning.py, group_and_unify_kv_cache_specs and
// _get_kv_cache_groups_uniform_groups): every MLAAttentionSpec (pools and keys) forms the full-MLA
// group; the SlidingWindowMLASpecs form one group per (block size, window). A group's "layer
// tuples" are its most frequent count of one page size (UniformTypeKVCacheSpecs.
// get_num_layer_tuples); vLLM picks T by _approximate_gcd over the groups' counts (the value from
// the full-MLA group's count up to the largest that pads least, ties to the larger), pads every
// sliding page up to the smallest full-MLA page that holds it, and splits each sliding group into
// cdiv(layers per page size, T) groups taking every n-th layer tuple. The pool
// (_get_kv_cache_config_deepseek_v4) then puts one block of every group in one slot of
// sum(full-MLA page sizes) x (the longest page-size bucket of any group) bytes: num_blocks =
// available // that. A request takes cdiv(max_model_len, B) blocks of the full-MLA group and each
// sliding group's SlidingWindowSpec count (get_max_concurrency_for_kv_cache_config sums them).

#include <algorithm>
#include <array>
#include <cstdint>
#include <string_view>

#include "../detail/checked.hpp"
#include "../dtype.hpp"
#include "../kv_bytes.hpp"
#include "../layout.hpp"
#include "../model.hpp"
#include "../units.hpp"
#include "../weights/tensors.hpp"

namespace kvplan {

/// Why vLLM refuses DeepSeek-V4 under decode context parallelism (dcp > 1). Every V4 layer keeps
/// its sliding window (DeepseekV4SWACache) and every compressed layer its compressor state as a
/// SlidingWindowMLASpec, a SlidingWindowSpec whose max_memory_usage_bytes asserts
/// decode_context_parallel_size == 1 ("DCP not support sliding window.",
/// vllm/v1/kv_cache_interface.py); vLLM reaches it while checking that a max_model_len request
/// fits (_max_memory_usage_bytes_from_groups), so no pool is planned. The pools and indexer keys
/// (MLAAttentionSpec, a FullAttentionSpec: cdiv(max_model_len, dcp) tokens a rank) would split;
/// the windows and states cannot.
inline constexpr std::string_view vllm_deepseek_v4_dcp_refusal =
    "vLLM does not run DeepSeek-V4 with --decode-context-parallel-size above 1: its window and "
    "compressor-state caches are SlidingWindowMLASpecs, whose max_memory_usage_bytes asserts "
    "decode_context_parallel_size == 1 (\"DCP not support sliding window.\", "
    "vllm/v1/kv_cache_interface.py)";

/// The cache block vLLM uses for DeepSeek-V4: DEEPSEEK_SPARSE_SWA's preferred size.
inline constexpr std::uint32_t vllm_deepseek_v4_block_size = 256;
/// FlashMLA's page alignment for DeepSeek-V4's caches (alignment=576).
inline constexpr std::uint64_t vllm_deepseek_v4_alignment = 576;

/// The caches vLLM registers for DeepSeek-V4 layers, in the order a layer registers them.
enum class VllmV4Cache : std::uint8_t {
    keys4,    ///< the indexer's keys (r = 4)
    istate4,  ///< the indexer compressor's state (r = 4)
    window,   ///< the sliding window of latents (every layer)
    pool4,    ///< the ratio-4 compressed pool
    state4,   ///< the ratio-4 compressor's state
    pool128,  ///< the ratio-128 compressed pool
    state128  ///< the ratio-128 compressor's state
};
inline constexpr std::size_t vllm_v4_caches = 7;

/// One kind of cache: its spec's block, window (0: an MLAAttentionSpec of the full-MLA group) and
/// page before and after padding to the full-MLA page that holds it.
struct VllmV4Spec {
    std::uint32_t layers = 0;  ///< caches of this kind in the model (0: none)
    std::uint32_t block = 0;   ///< tokens a block (KVCacheSpec.block_size)
    std::uint64_t window = 0;  ///< sliding_window; 0 for the full-MLA group
    Bytes page{};              ///< page_size_bytes (576-aligned)
    Bytes padded_page{};       ///< the page after unification (the full-MLA group's own page)
    std::uint32_t group = 0;   ///< 0: full MLA; else the sliding group's index
};

/// One of vLLM's group kinds: the full-MLA group (index 0) or a sliding one, split `groups` ways.
struct VllmV4Group {
    std::uint32_t block = 0;
    std::uint64_t window = 0;
    std::uint32_t layers = 0;  ///< caches in the group over every split
    std::uint32_t tuples = 0;  ///< get_num_layer_tuples before the split
    std::uint32_t groups = 1;  ///< KV cache groups it becomes
    Bytes tuple_page{};        ///< one block of one layer tuple: its distinct padded pages
};

/// vLLM's layout of DeepSeek-V4's caches.
struct VllmV4Layout {
    std::array<VllmV4Spec, vllm_v4_caches> specs{};
    std::array<VllmV4Group, max_cache_specs> groups{};
    std::uint32_t num_groups = 0;     ///< group kinds (full MLA first)
    std::uint32_t target_tuples = 0;  ///< _approximate_gcd's T
    Bytes tuple_bytes{};              ///< sum of the full-MLA group's distinct page sizes
    std::string_view refused{};
};

namespace detail {

[[nodiscard]] constexpr std::uint64_t v4_align(std::uint64_t bytes) {
    return mul(ceil_div(bytes, vllm_deepseek_v4_alignment), vllm_deepseek_v4_alignment, "a page");
}

/// The caches a layer of compress ratio `ratio` registers, in order; returns how many.
[[nodiscard]] constexpr std::uint32_t v4_layer_caches(std::uint32_t ratio,
                                                      std::array<VllmV4Cache, 5>& out) noexcept {
    if (ratio == 4) {
        out = {VllmV4Cache::keys4, VllmV4Cache::istate4, VllmV4Cache::window, VllmV4Cache::pool4,
               VllmV4Cache::state4};
        return 5;
    }
    if (ratio == 128) {
        out[0] = VllmV4Cache::window;
        out[1] = VllmV4Cache::pool128;
        out[2] = VllmV4Cache::state128;
        return 3;
    }
    out[0] = VllmV4Cache::window;
    return 1;
}

/// _approximate_gcd: the d in [lower, max(values)] that pads `values` up to multiples of d
/// least, the larger on ties; `lower` when it exceeds every value.
[[nodiscard]] constexpr std::uint32_t v4_approximate_gcd(const std::uint32_t* values,
                                                         std::uint32_t n, std::uint32_t lower) {
    std::uint32_t top = 0;
    for (std::uint32_t i = 0; i < n; ++i) top = std::max(top, values[i]);
    const std::uint32_t first = std::max<std::uint32_t>(1, lower);
    if (first > top) return first;
    std::uint32_t best = first;
    std::uint64_t best_pad = ~0ULL;
    for (std::uint32_t d = first; d <= top; ++d) {
        std::uint64_t pad = 0;
        for (std::uint32_t i = 0; i < n; ++i) pad += (d - values[i] % d) % d;
        if (pad < best_pad || (pad == best_pad && d > best)) {
            best_pad = pad;
            best = d;
        }
    }
    return best;
}

}  // namespace detail

/// vLLM's layout of DeepSeek-V4 model `m` (its compressed MLA layers) with cache block `block`.
[[nodiscard]] constexpr VllmV4Layout vllm_deepseek_v4_layout(
    const Model& m, std::uint32_t block = vllm_deepseek_v4_block_size) {
    using detail::v4_align;
    VllmV4Layout p;
    const LayerStack& L = m.layers();
    // Every compressed layer shares the latent's shape and window; the pages come from the spec
    // of each ratio.
    std::array<VllmV4Spec, vllm_v4_caches>& s = p.specs;
    for (std::uint32_t i = 0; i < L.num_layers; ++i) {
        const CacheSpec& spec = L[i];
        if (!is_compressed_mla(spec)) continue;
        const std::uint32_t r = spec.compress_ratio <= 1 ? 1 : spec.compress_ratio;
        if (r != 1 && (block % r != 0)) {
            p.refused = "the cache block must be a multiple of DeepSeek-V4's compress ratios";
            return p;
        }
        // One latent: 584 B in fp8_ds_mla for V4's 448 + 64 (MLAAttentionSpec, "deepseek_v4").
        const std::uint64_t latent = mla_latent_bytes(spec, KvFormat{KvDtype::fp8_ds_mla}).count();
        const std::uint64_t head = std::uint64_t{spec.kv_lora_rank} + spec.qk_rope_head_dim;
        std::array<VllmV4Cache, 5> caches{};
        const std::uint32_t n = detail::v4_layer_caches(r, caches);
        for (std::uint32_t c = 0; c < n; ++c) {
            VllmV4Spec& e = s[static_cast<std::size_t>(caches[c])];
            ++e.layers;
            switch (caches[c]) {
                case VllmV4Cache::window:
                    e.block = 64;
                    e.window = spec.window;
                    e.page = Bytes::exactly(v4_align(detail::mul(64, latent, "a page")));
                    break;
                case VllmV4Cache::pool4:
                case VllmV4Cache::pool128:
                    e.block = block;
                    e.page = Bytes::exactly(v4_align(detail::mul(block / r, latent, "a page")));
                    break;
                case VllmV4Cache::keys4:
                    e.block = block;
                    e.page = Bytes::exactly(v4_align(detail::mul(
                        block / 4, indexer_key_bytes(spec.index_head_dim).count(), "a page")));
                    break;
                case VllmV4Cache::state4:
                case VllmV4Cache::state128:
                case VllmV4Cache::istate4: {
                    const std::uint64_t dim =
                        caches[c] == VllmV4Cache::istate4 ? spec.index_head_dim : head;
                    const std::uint64_t coff = r == 4 ? 2 : 1;
                    e.block = r == 4 ? 4 : 8;
                    e.window = coff * r;
                    e.page = Bytes::exactly(v4_align(
                        detail::mul(detail::mul(e.block, 2 * coff * dim, "a page"), 4, "a page")));
                    break;
                }
            }
        }
    }

    // The full-MLA group: its distinct page sizes and their most frequent count.
    std::array<Bytes, vllm_v4_caches> full_pages{};
    std::array<std::uint32_t, vllm_v4_caches> full_counts{};
    std::uint32_t num_full = 0;
    for (const VllmV4Spec& e : s) {
        if (e.layers == 0 || e.window != 0) continue;
        std::uint32_t j = 0;
        while (j < num_full && full_pages[j] != e.page) ++j;
        if (j == num_full) full_pages[num_full++] = e.page;
        full_counts[j] += e.layers;
    }
    if (num_full == 0) {
        p.refused =
            "vLLM's DeepSeek-V4 allocator needs a compressed layer (group_and_unify_kv_cache_specs "
            "asserts MLA specs)";
        return p;
    }
    VllmV4Group& full = p.groups[0];
    full.block = block;
    for (std::uint32_t j = 0; j < num_full; ++j) {
        p.tuple_bytes += full_pages[j];
        full.tuples = std::max(full.tuples, full_counts[j]);
    }
    full.tuple_page = p.tuple_bytes;
    p.num_groups = 1;

    // The sliding groups, one per (block, window); their order changes no figure.
    for (VllmV4Spec& e : s) {
        if (e.layers == 0) continue;
        if (e.window == 0) {
            e.padded_page = e.page;
            continue;
        }
        std::uint32_t g = 1;
        while (g < p.num_groups &&
               !(p.groups[g].block == e.block && p.groups[g].window == e.window))
            ++g;
        if (g == p.num_groups) {
            if (p.num_groups == max_cache_specs) {
                p.refused = "more DeepSeek-V4 cache groups than kvplan holds";
                return p;
            }
            p.groups[g].block = e.block;
            p.groups[g].window = e.window;
            ++p.num_groups;
        }
        e.group = g;
        p.groups[g].layers += e.layers;
        // The smallest full-MLA page that holds it (vLLM asserts one does).
        Bytes to{};
        for (std::uint32_t j = 0; j < num_full; ++j)
            if (full_pages[j] >= e.page && (to.is_zero() || full_pages[j] < to)) to = full_pages[j];
        if (to.is_zero()) {
            p.refused =
                "a DeepSeek-V4 sliding page exceeds every compressed page "
                "(_get_kv_cache_groups_uniform_groups asserts)";
            return p;
        }
        e.padded_page = to;
    }
    for (const VllmV4Spec& e : s)
        if (e.layers != 0 && e.window == 0) full.layers += e.layers;

    // Each sliding group: its tuples before padding (most frequent count of one page), and
    // after padding every page size must have the same layer count (vLLM asserts it).
    std::array<std::uint32_t, max_cache_specs> per_size{};
    for (std::uint32_t g = 1; g < p.num_groups; ++g) {
        std::array<Bytes, vllm_v4_caches> own{}, padded{};
        std::array<std::uint32_t, vllm_v4_caches> own_n{}, padded_n{};
        std::uint32_t n_own = 0, n_padded = 0;
        for (const VllmV4Spec& e : s) {
            if (e.layers == 0 || e.window == 0 || e.group != g) continue;
            std::uint32_t j = 0;
            while (j < n_own && own[j] != e.page) ++j;
            if (j == n_own) own[n_own++] = e.page;
            own_n[j] += e.layers;
            j = 0;
            while (j < n_padded && padded[j] != e.padded_page) ++j;
            if (j == n_padded) padded[n_padded++] = e.padded_page;
            padded_n[j] += e.layers;
        }
        for (std::uint32_t j = 0; j < n_own; ++j)
            p.groups[g].tuples = std::max(p.groups[g].tuples, own_n[j]);
        for (std::uint32_t j = 0; j < n_padded; ++j) {
            if (padded_n[j] != padded_n[0]) {
                p.refused =
                    "a DeepSeek-V4 sliding group has unequal layers per page size "
                    "(_get_kv_cache_groups_uniform_groups asserts)";
                return p;
            }
            p.groups[g].tuple_page += padded[j];
        }
        per_size[g] = padded_n[0];
    }
    std::array<std::uint32_t, max_cache_specs> counts{};
    for (std::uint32_t g = 0; g < p.num_groups; ++g) counts[g] = p.groups[g].tuples;
    p.target_tuples = detail::v4_approximate_gcd(counts.data(), p.num_groups, counts[0]);
    for (std::uint32_t g = 1; g < p.num_groups; ++g)
        p.groups[g].groups =
            static_cast<std::uint32_t>(detail::ceil_div(per_size[g], p.target_tuples));
    return p;
}

/// The layer tuples of the pool on the layers [first, end) of `m` (a pipeline stage's; the
/// longest page-size bucket of any group projected to them, _get_kv_cache_config_deepseek_v4):
/// the full-MLA group's buckets count their caches there; a sliding group split n ways gives its
/// k-th layer tuple (k-th cache of a page size, in registration order) to split k mod n.
[[nodiscard]] constexpr std::uint32_t vllm_deepseek_v4_tuples(const Model& m, const VllmV4Layout& p,
                                                              std::uint32_t first,
                                                              std::uint32_t end) {
    const LayerStack& L = m.layers();
    std::uint32_t most = 0;
    // Buckets: (group, padded page); a cache kind belongs to one.
    for (std::size_t a = 0; a < vllm_v4_caches; ++a) {
        const VllmV4Spec& ea = p.specs[a];
        if (ea.layers == 0) continue;
        bool seen = false;
        for (std::size_t b = 0; b < a; ++b)
            seen = seen || (p.specs[b].layers != 0 && p.specs[b].group == ea.group &&
                            p.specs[b].padded_page == ea.padded_page);
        if (seen) continue;
        const std::uint32_t splits = p.groups[ea.group].groups;
        std::array<std::uint32_t, max_layers * 2> per_split{};
        std::uint32_t k = 0;
        for (std::uint32_t i = 0; i < L.num_layers; ++i) {
            const CacheSpec& spec = L[i];
            if (!is_compressed_mla(spec)) continue;
            std::array<VllmV4Cache, 5> caches{};
            const std::uint32_t n =
                detail::v4_layer_caches(spec.compress_ratio <= 1 ? 1 : spec.compress_ratio, caches);
            for (std::uint32_t c = 0; c < n; ++c) {
                const VllmV4Spec& e = p.specs[static_cast<std::size_t>(caches[c])];
                if (e.group != ea.group || e.padded_page != ea.padded_page) continue;
                if (i >= first && i < end) ++per_split[k % splits];
                ++k;
            }
        }
        for (std::uint32_t x = 0; x < splits && x < per_split.size(); ++x)
            most = std::max(most, per_split[x]);
    }
    return most;
}

/// The bytes of DeepSeek-V4's tid2eid tables a GPU of stage `stage` of `m` under `l` holds less
/// under vLLM than its checkpoint stores. vLLM's DeepseekV4MoE builds gate.tid2eid of a hash-routed
/// layer (the first num_hash_layers, vocab x num_experts_per_tok, replicated on every rank) as
/// int32, int64 only under the deep_gemm_mega_moe MoE backend, which kvplan does not model
/// (vllm/model_executor/models/deepseek_v4.py: hash_indices_dtype); the loader copies the
/// checkpoint's int64 entries into it. DeepSeek-V4-Flash and -Pro (3 hash layers, a vocabulary of
/// 129,280, 6 experts a token): 3 x 129,280 x 6 x 4 B = 9,308,160 B on every GPU of the stage that
/// holds the first three layers. Zero for any other model.
[[nodiscard]] constexpr Bytes vllm_hash_table_narrowing(const Model& m, const Layout& l,
                                                        std::uint32_t stage) {
    constexpr std::uint64_t loaded_entry_bytes = 4;  // torch.int32
    const ModelConfig& c = m.config();
    if (c.moe.hash_layers == 0) return {};
    const Shard s = l.stage(stage);
    std::uint64_t layers = 0;
    for (std::uint32_t i = s.first_layer; i < detail::shard_end(m, s); ++i)
        if (m.has_mlp(i) && c.moe.is_hash_layer(i)) ++layers;
    const std::uint64_t entries = detail::mul(detail::mul(layers, c.vocab_size, "tid2eid"),
                                              c.moe.experts_per_token, "tid2eid");
    return Bytes::exactly(
        detail::mul(entries, detail::hash_table_entry_bytes - loaded_entry_bytes, "tid2eid"));
}

}  // namespace kvplan
