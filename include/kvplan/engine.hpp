#pragma once

// Engine profiles: how vLLM, SGLang and TensorRT-LLM turn GPU memory into a KV cache, beside an
// "ideal" profile that stores exactly the bytes of the context. Two steps per engine:
//
//   memory   which memory the engine's fraction applies to, and what it subtracts after it
//            (engine_memory);
//   cache    how the engine cuts that memory into blocks or token slots and what it reports
//            (vllm_kv_cache, sglang_kv_pool, trtllm_kv_cache, ideal_kv_cache).
//
// The cache step takes the KV memory per GPU as an input, so a figure an engine printed at start-up
// ("Available KV cache memory: 6.51 GiB") reproduces what it then reported. Each rule cites the
// engine source file it follows. Pipeline stages are never averaged: every engine takes the minimum
// over its ranks.
//
// vLLM: the v1 engine as of its current main branch (vllm/v1/core/kv_cache_utils.py,
// vllm/v1/kv_cache_interface.py). Where a printed figure changed across versions the older rule is
// an option: "GPU KV cache size" was num_blocks // num_groups x block_size from v0.10 to the v0.2x
// releases (VllmTokenReport::blocks_per_group) and is max_concurrency x max_model_len since vLLM
// PR #40694 (VllmTokenReport::concurrency_times_length, the default); the two agree for a model of
// one layer type whose max_model_len is a multiple of the block size.

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

#include "budget.hpp"
#include "capacity.hpp"
#include "detail/checked.hpp"
#include "dtype.hpp"
#include "gpu.hpp"
#include "kv_bytes.hpp"
#include "layout.hpp"
#include "model.hpp"
#include "units.hpp"

namespace kvplan {

/// A serving engine's accounting. Enumerators are spelled as on the command line.
enum class Engine : std::uint8_t { ideal, vllm, sglang, trtllm };

/// Every engine profile, for listings and loops.
inline constexpr std::array all_engines{Engine::ideal, Engine::vllm, Engine::sglang, Engine::trtllm};

/// The command-line spelling.
[[nodiscard]] constexpr std::string_view name(Engine e) noexcept {
    switch (e) {
        case Engine::ideal: return "ideal";
        case Engine::vllm: return "vllm";
        case Engine::sglang: return "sglang";
        case Engine::trtllm: return "trtllm";
    }
    return "?";
}

/// Parses a spelling; "tensorrt-llm" and "trt-llm" are accepted for trtllm.
[[nodiscard]] constexpr std::optional<Engine> parse_engine(std::string_view s) noexcept {
    for (Engine e : all_engines)
        if (s == name(e)) return e;
    if (s == "tensorrt-llm" || s == "trt-llm") return Engine::trtllm;
    return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// vLLM v1
// ---------------------------------------------------------------------------------------------

/// Which rule produces vLLM's "GPU KV cache size: N tokens" line.
enum class VllmTokenReport : std::uint8_t {
    concurrency_times_length,  ///< int(max_concurrency x max_model_len): current (vLLM PR #40694)
    blocks_per_group,          ///< num_blocks // num_groups x min block size: v0.10 to v0.2x
};

/// How vLLM caches the state of Mamba / linear-attention layers per request
/// (CacheConfig.mamba_cache_mode; MambaSpec.max_memory_usage_bytes in kv_cache_interface.py).
enum class MambaCacheMode : std::uint8_t {
    none,   ///< one state block per request (no prefix caching)
    align,  ///< two blocks per request, so prefix caching can keep the previous block's state
};

/// vLLM's knobs that shape the cache.
struct VllmOptions {
    std::uint64_t max_model_len = 0;  ///< 0: the model's max_position_embeddings
    std::uint32_t block_size = default_block_size;  ///< --block-size (CacheConfig default 16)
    /// nullopt: the reserve's figure in engine_report, else vLLM's default for the GPU; 8,192 when
    /// vllm_kv_cache is called without a GPU.
    std::optional<std::uint64_t> max_num_batched_tokens{};
    /// Batches in flight (VllmConfig.max_concurrent_batches, vllm/config/vllm.py): 2 with async
    /// scheduling at pp 1, pp under pipeline parallelism, 1 before async scheduling existed. 0:
    /// vLLM's current default (async scheduling on): 2 at pp 1, else pp.
    std::uint32_t concurrent_batches = 0;
    /// --disable-hybrid-kv-cache-manager unset: sliding layers keep only their window.
    bool hybrid_kv_cache_manager = true;
    /// Hybrid Mamba models with prefix caching (on by default) use align.
    MambaCacheMode mamba_cache_mode = MambaCacheMode::align;
    /// The attention backend's smallest kernel block size (vllm/platforms/interface.py,
    /// _align_hybrid_block_size; 16 for FlashAttention).
    std::uint32_t kernel_block_alignment = 16;
    VllmTokenReport token_report = VllmTokenReport::concurrency_times_length;
    /// Since v0.21 vLLM estimates CUDA graph memory and charges it to the KV budget
    /// (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS, default on); before, graphs had to fit in the
    /// (1 - gpu_memory_utilization) headroom.
    bool charge_cuda_graphs = true;
};

/// One kind of layer as vLLM's KV cache manager sees it: a KVCacheSpec and its groups.
struct VllmLayerKind {
    CacheKind kind = CacheKind::full_attention;  ///< sliding layers become full without the hybrid manager
    std::uint64_t window = 0;                    ///< sliding_window, for sliding layers
    std::uint32_t layers = 0;                    ///< layers of this kind in the whole model
    std::uint32_t groups = 0;                    ///< KV cache groups they form
    std::uint32_t padding_layers = 0;            ///< empty slots in the last group ("Add N padding layers")
    std::uint32_t block_size = 0;                ///< tokens per block (raised to unify page sizes)
    Bytes page{};                                ///< bytes of one block of one layer on a rank
    std::uint64_t blocks_per_request = 0;        ///< blocks one request of max_model_len takes per group
};

/// vLLM's KV cache on a replica: its groups, blocks, and the figures it prints.
struct VllmKvCache {
    Bytes available{};                ///< KV memory per GPU ("Available KV cache memory")
    std::uint64_t max_model_len = 0;
    std::uint64_t in_flight_tokens = 0;  ///< concurrent batches x max_num_batched_tokens
    std::uint32_t block_size = 0;     ///< attention block size in use (raised for Mamba hybrids)
    std::array<VllmLayerKind, max_cache_specs> kinds{};
    std::uint32_t num_kinds = 0;
    bool uniform_type = false;        ///< one group of every layer, pages of different sizes
    std::uint32_t num_groups = 0;     ///< KV cache groups
    std::uint32_t group_size = 0;     ///< layers per group over the whole model
    Bytes page{};                     ///< the common page of a layer (zero under uniform_type)
    std::uint32_t limiting_stage = 0; ///< the pipeline stage with the fewest blocks
    std::uint32_t stage_group_size = 0;  ///< layers per group on that stage
    Bytes bytes_per_block{};          ///< memory one block takes on that stage, over its layers
    std::uint64_t num_blocks = 0;     ///< blocks every worker gets (the least over stages)
    std::uint64_t blocks_per_request = 0;  ///< blocks one request of max_model_len takes
    double max_concurrency = 0.0;     ///< "Maximum concurrency for N tokens per request: X.XXx"
    std::uint64_t kv_cache_tokens = 0;  ///< "GPU KV cache size: N tokens"
    Bytes needed{};                   ///< KV memory one request of max_model_len needs (largest stage)
    bool enough_memory = false;       ///< vLLM starts; otherwise it raises with the estimate below
    std::uint64_t estimated_max_model_len = 0;  ///< "the estimated maximum model length is N"
    std::string_view refused{};       ///< non-empty: vLLM cannot build a cache for this model (why)
};

namespace detail {

struct VllmSetup {
    VllmKvCache c{};
    std::array<std::uint8_t, max_cache_specs> kind_of_spec{};  // core spec -> vLLM kind
    std::array<Bytes, max_cache_specs> per_token{};            // bytes per token (state: per request)
};

/// vLLM's page of one layer of `kind` at `block` tokens: per-token bytes x block size; a Mamba
/// state is one page (padded to the attention page).
[[nodiscard]] constexpr std::uint64_t vllm_blocks_for(const VllmLayerKind& k, std::uint64_t len,
                                                      std::uint64_t in_flight, MambaCacheMode mode) {
    switch (k.kind) {
        case CacheKind::full_attention:
        case CacheKind::mla_latent: return ceil_div(len, k.block_size);
        // SlidingWindowSpec: cdiv(min(window - 1 + in-flight tokens, max_model_len), block) + 1.
        case CacheKind::sliding_window:
            return ceil_div(std::min(k.window - 1 + in_flight, len), k.block_size) + 1;
        // ChunkedLocalAttentionSpec: cdiv(min(chunk + in-flight tokens, max_model_len), block),
        // no +1 (vllm/v1/kv_cache_interface.py, max_admission_blocks_per_request).
        case CacheKind::chunked_local:
            return ceil_div(std::min(k.window + in_flight, len), k.block_size);
        // MambaSpec: page x (1 + speculative blocks), or x (2 + ...) in align mode.
        case CacheKind::constant_state: return mode == MambaCacheMode::align ? 2 : 1;
        case CacheKind::shared:
        case CacheKind::mlp_only: return 0;
    }
    return 0;
}

/// Groups vLLM's layers as get_kv_cache_groups does (vllm/v1/core/kv_cache_utils.py).
[[nodiscard]] constexpr VllmSetup vllm_setup(const Model& m, KvFormat f, const Layout& l,
                                            const VllmOptions& o) {
    VllmSetup s;
    VllmKvCache& c = s.c;
    const LayerStack& L = m.layers();
    const std::uint32_t tp = l.tp();
    c.max_model_len = o.max_model_len != 0 ? o.max_model_len : m.config().max_position_embeddings;
    const std::uint32_t batches =
        o.concurrent_batches != 0 ? o.concurrent_batches : (l.pp() == 1 ? 2 : l.pp());
    c.in_flight_tokens = mul(batches, o.max_num_batched_tokens.value_or(8192), "in-flight tokens");

    // Distinct vLLM specs. Without the hybrid manager a sliding layer becomes a FullAttentionSpec
    // (unify_hybrid_kv_cache_specs), which vLLM regards as the same spec as a full layer.
    bool any_full = false, any_sliding = false;
    for (std::uint32_t k = 0; k < L.num_specs; ++k) {
        any_full = any_full || L.specs[k].kind == CacheKind::full_attention;
        any_sliding = any_sliding || L.specs[k].kind == CacheKind::sliding_window ||
                      L.specs[k].kind == CacheKind::chunked_local;
    }
    const bool demote_sliding = !o.hybrid_kv_cache_manager && any_full && any_sliding;
    for (std::uint32_t k = 0; k < L.num_specs; ++k) {
        const CacheSpec& spec = L.specs[k];
        s.kind_of_spec[k] = 0xff;
        // Shared and MLP-only layers get no KV cache spec (a KV-sharing layer's
        // kv_sharing_target_layer_name skips it in get_kv_cache_spec).
        if (spec.kind == CacheKind::shared || spec.kind == CacheKind::mlp_only ||
            L.layers_with_spec(k) == 0)
            continue;
        CacheKind kind = spec.kind;
        if ((kind == CacheKind::sliding_window || kind == CacheKind::chunked_local) &&
            demote_sliding)
            kind = CacheKind::full_attention;
        const Bytes per_token = spec.kind == CacheKind::constant_state ? layer_state_bytes(spec, tp)
                                                                       : layer_bytes_per_token(spec, f, tp);
        const std::uint64_t window =
            kind == CacheKind::sliding_window || kind == CacheKind::chunked_local ? spec.window : 0;
        std::uint32_t i = 0;
        while (i < c.num_kinds && !(c.kinds[i].kind == kind && c.kinds[i].window == window &&
                                    s.per_token[i] == per_token))
            ++i;
        if (i == c.num_kinds) {
            c.kinds[i].kind = kind;
            c.kinds[i].window = window;
            s.per_token[i] = per_token;
            ++c.num_kinds;
        }
        s.kind_of_spec[k] = static_cast<std::uint8_t>(i);
        c.kinds[i].layers += L.layers_with_spec(k);
    }

    // Mamba hybrids: the attention block grows until an attention page holds a Mamba state, and
    // the state page is padded to the attention page (vllm/platforms/interface.py,
    // _align_hybrid_block_size; formerly HybridAttentionMambaModelConfig in
    // vllm/model_executor/models/config.py).
    Bytes attn_token{}, state{};
    for (std::uint32_t i = 0; i < c.num_kinds; ++i) {
        if (c.kinds[i].kind == CacheKind::constant_state) state = std::max(state, s.per_token[i]);
        else attn_token = std::max(attn_token, s.per_token[i]);
    }
    c.block_size = o.block_size;
    if (!state.is_zero() && !attn_token.is_zero()) {
        const std::uint64_t align = std::max(o.kernel_block_alignment, o.block_size);
        const std::uint64_t needed =
            align * ceil_div(state.count(), mul(align, attn_token.count(), "a page"));
        if (needed > c.block_size) c.block_size = static_cast<std::uint32_t>(needed);
    }
    for (std::uint32_t i = 0; i < c.num_kinds; ++i) {
        VllmLayerKind& k = c.kinds[i];
        k.block_size = c.block_size;
        k.page = k.kind == CacheKind::constant_state
                     ? (attn_token.is_zero() ? s.per_token[i] : attn_token * c.block_size)
                     : s.per_token[i] * c.block_size;
    }

    // One type of layer needing the same token slots, pages of any size: one group
    // (UniformTypeKVCacheSpecs). Otherwise pages are unified by raising the block size of smaller
    // pages (unify_kv_cache_spec_page_size) and layers are split into groups of equal size.
    bool same_slots = c.num_kinds >= 1;
    for (std::uint32_t i = 1; i < c.num_kinds; ++i)
        same_slots = same_slots && c.kinds[i].kind == c.kinds[0].kind &&
                     c.kinds[i].kind != CacheKind::constant_state &&
                     c.kinds[i].window == c.kinds[0].window;
    c.uniform_type = c.num_kinds > 1 && same_slots;
    if (c.num_kinds == 1 || c.uniform_type) {
        c.num_groups = 1;
        c.group_size = 0;
        for (std::uint32_t i = 0; i < c.num_kinds; ++i) {
            c.kinds[i].groups = 1;
            c.group_size += c.kinds[i].layers;
        }
        c.page = c.num_kinds == 1 ? c.kinds[0].page : Bytes{};
        return s;
    }
    Bytes max_page{};
    for (std::uint32_t i = 0; i < c.num_kinds; ++i) max_page = std::max(max_page, c.kinds[i].page);
    for (std::uint32_t i = 0; i < c.num_kinds; ++i) {
        VllmLayerKind& k = c.kinds[i];
        if (k.page == max_page) continue;
        if (max_page.count() % k.page.count() != 0) {
            c.refused = "page sizes of the layer kinds do not divide the largest one "
                        "(unify_kv_cache_spec_page_size raises NotImplementedError)";
            return s;
        }
        k.block_size = static_cast<std::uint32_t>(k.block_size * (max_page.count() / k.page.count()));
        k.page = max_page;
    }
    c.page = max_page;
    // _get_kv_cache_groups_uniform_page_size: the group size is the fewest layers of a kind, or
    // the most when that is below 1.5x the fewest (less padding).
    std::uint32_t fewest = std::numeric_limits<std::uint32_t>::max(), most = 0;
    for (std::uint32_t i = 0; i < c.num_kinds; ++i) {
        fewest = std::min(fewest, c.kinds[i].layers);
        most = std::max(most, c.kinds[i].layers);
    }
    c.group_size = 2 * most < 3 * fewest ? most : fewest;
    for (std::uint32_t i = 0; i < c.num_kinds; ++i) {
        VllmLayerKind& k = c.kinds[i];
        k.groups = static_cast<std::uint32_t>(ceil_div(k.layers, c.group_size));
        k.padding_layers = k.groups * c.group_size - k.layers;
        c.num_groups += k.groups;
    }
    return s;
}

/// Layers of each vLLM kind on stage `st`.
[[nodiscard]] constexpr std::array<std::uint32_t, max_cache_specs> vllm_stage_layers(
    const Model& m, const Layout& l, const VllmSetup& s, std::uint32_t st) {
    std::array<std::uint32_t, max_cache_specs> n{};
    const Shard sh = l.stage(st);
    for (std::uint32_t i = sh.first_layer; i < shard_end(m, sh); ++i) {
        const std::uint8_t k = s.kind_of_spec[m.layers().spec_of_layer[i]];
        if (k != 0xff) ++n[k];
    }
    return n;
}

/// Memory one block takes on a stage: the sum of the layers' pages under one uniform-type group,
/// else the page times the most layers any group has there (groups take every n-th layer of a
/// kind, so a stage's share of a kind spreads evenly over its groups).
[[nodiscard]] constexpr std::pair<Bytes, std::uint32_t> vllm_stage_block(
    const VllmKvCache& c, const std::array<std::uint32_t, max_cache_specs>& n) {
    if (c.uniform_type || c.num_kinds == 1) {
        Bytes b{};
        std::uint32_t layers = 0;
        for (std::uint32_t i = 0; i < c.num_kinds; ++i) {
            b += c.kinds[i].page * n[i];
            layers += n[i];
        }
        return {b, layers};
    }
    std::uint32_t per_group = 0;
    for (std::uint32_t i = 0; i < c.num_kinds; ++i)
        per_group = std::max(per_group, static_cast<std::uint32_t>(ceil_div(n[i], c.kinds[i].groups)));
    return {c.page * per_group, per_group};
}

/// KV memory one request of `len` tokens needs on a stage (_max_memory_usage_bytes_from_groups:
/// group size x page x the blocks of every group, so padding layers count).
[[nodiscard]] constexpr Bytes vllm_stage_needed(const VllmKvCache& c,
                                                const std::array<std::uint32_t, max_cache_specs>& n,
                                                std::uint64_t len, MambaCacheMode mode) {
    if (c.uniform_type || c.num_kinds == 1) {
        Bytes b{};
        for (std::uint32_t i = 0; i < c.num_kinds; ++i)
            b += c.kinds[i].page * mul(n[i], vllm_blocks_for(c.kinds[i], len, c.in_flight_tokens, mode),
                                       "a block count");
        return b;
    }
    std::uint64_t blocks = 0;
    for (std::uint32_t i = 0; i < c.num_kinds; ++i)
        blocks = add(blocks,
                     mul(c.kinds[i].groups, vllm_blocks_for(c.kinds[i], len, c.in_flight_tokens, mode),
                         "a block count"),
                     "a block count");
    return vllm_stage_block(c, n).first * blocks;
}

}  // namespace detail

/// vLLM's KV cache for `m` under layout `l` when each stage's GPUs have `available[stage]` bytes
/// for it (one entry: the same on every stage). Reproduces "GPU KV cache size: N tokens",
/// "Maximum concurrency for N tokens per request: X.XXx" and, when one request of max_model_len
/// does not fit, the estimated maximum model length of vLLM's error.
[[nodiscard]] constexpr VllmKvCache vllm_kv_cache(const Model& m, KvFormat f, const Layout& l,
                                                  std::span<const Bytes> available,
                                                  const VllmOptions& o = {}) {
    KVPLAN_EXPECTS(available.size() == 1 || available.size() == l.pp());
    detail::VllmSetup s = detail::vllm_setup(m, f, l, o);
    VllmKvCache& c = s.c;
    const auto avail = [&](std::uint32_t st) { return available[available.size() == 1 ? 0 : st]; };
    c.available = avail(0);
    if (!c.refused.empty() || c.num_kinds == 0) {
        if (c.refused.empty()) c.refused = "no layer keeps a cache";
        return c;
    }
    if (c.max_model_len == 0) {
        c.refused = "max_model_len is unknown: give it";
        return c;
    }

    // Blocks one request of max_model_len takes (get_max_concurrency_for_kv_cache_config): the sum
    // over groups, or for one group of every layer the blocks of its layers.
    for (std::uint32_t i = 0; i < c.num_kinds; ++i) {
        VllmLayerKind& k = c.kinds[i];
        k.blocks_per_request = detail::vllm_blocks_for(k, c.max_model_len, c.in_flight_tokens,
                                                       o.mamba_cache_mode);
        c.blocks_per_request =
            c.uniform_type || c.num_kinds == 1
                ? std::max(c.blocks_per_request, k.blocks_per_request)
                : detail::add(c.blocks_per_request, detail::mul(k.groups, k.blocks_per_request, "blocks"),
                              "blocks");
    }

    // Per worker: num_blocks = available // bytes per block (get_kv_cache_config_from_groups),
    // then every worker takes the least (get_kv_cache_configs). The admission check runs per
    // worker first (_check_enough_kv_cache_memory).
    c.enough_memory = true;
    c.estimated_max_model_len = c.max_model_len;
    c.num_blocks = std::numeric_limits<std::uint64_t>::max();
    for (std::uint32_t st = 0; st < l.pp(); ++st) {
        const auto n = detail::vllm_stage_layers(m, l, s, st);
        const auto [block, per_group] = detail::vllm_stage_block(c, n);
        if (block.is_zero()) continue;
        const std::uint64_t blocks = avail(st) / block;
        if (blocks < c.num_blocks) {
            c.num_blocks = blocks;
            c.limiting_stage = st;
            c.stage_group_size = per_group;
            c.bytes_per_block = block;
        }
        const Bytes needed = detail::vllm_stage_needed(c, n, c.max_model_len, o.mamba_cache_mode);
        c.needed = std::max(c.needed, needed);
        if (avail(st).is_zero() || needed > avail(st)) {
            c.enough_memory = false;
            // _estimate_max_model_len_from_groups: the longest length in [1, max_model_len] whose
            // request fits, 0 if not even one token does.
            const auto fits = [&](std::uint64_t len) {
                return detail::vllm_stage_needed(c, n, len, o.mamba_cache_mode) <= avail(st);
            };
            std::uint64_t est = 0;
            if (!avail(st).is_zero() && fits(1)) {
                std::uint64_t lo = 1, hi = c.max_model_len;  // fits(lo), !fits(hi)
                while (hi - lo > 1) {
                    const std::uint64_t mid = lo + (hi - lo) / 2;
                    (fits(mid) ? lo : hi) = mid;
                }
                est = lo;
            }
            c.estimated_max_model_len = std::min(c.estimated_max_model_len, est);
        }
    }
    if (c.num_blocks == std::numeric_limits<std::uint64_t>::max()) c.num_blocks = 0;

    // _report_kv_cache_config.
    c.max_concurrency =
        static_cast<double>(c.num_blocks) / static_cast<double>(c.blocks_per_request);
    if (o.token_report == VllmTokenReport::concurrency_times_length) {
        c.kv_cache_tokens =
            static_cast<std::uint64_t>(c.max_concurrency * static_cast<double>(c.max_model_len));
    } else {
        std::uint32_t min_block = std::numeric_limits<std::uint32_t>::max();
        for (std::uint32_t i = 0; i < c.num_kinds; ++i) min_block = std::min(min_block, c.kinds[i].block_size);
        c.kv_cache_tokens = detail::mul(c.num_blocks / c.num_groups, min_block, "a token count");
    }
    return c;
}

/// vLLM's KV cache with the same KV memory on every GPU.
[[nodiscard]] constexpr VllmKvCache vllm_kv_cache(const Model& m, KvFormat f, const Layout& l,
                                                  Bytes available, const VllmOptions& o = {}) {
    return vllm_kv_cache(m, f, l, std::span<const Bytes>(&available, 1), o);
}

// ---------------------------------------------------------------------------------------------
// SGLang
// ---------------------------------------------------------------------------------------------

/// SGLang's knobs that shape the token pool.
struct SglangOptions {
    std::optional<double> mem_fraction_static{};  ///< nullopt: SGLang's heuristic
    std::optional<std::uint64_t> chunked_prefill_size{};  ///< nullopt: by GPU memory
    std::optional<std::uint32_t> cuda_graph_max_bs{};     ///< nullopt: by GPU memory and tp
    std::uint32_t page_size = 1;  ///< tokens per page (ServerArgs.page_size; 1 by default)
    /// Separate pools for sliding and full layers (SWAKVPool); off, a sliding layer holds a full
    /// context like any other.
    bool hybrid_swa_pool = false;
    double swa_full_tokens_ratio = 0.8;  ///< SWA pool tokens per full-pool token (server_args.py)
    std::optional<std::uint64_t> max_total_tokens{};  ///< --max-total-tokens caps the pool
};

/// SGLang's default mem_fraction_static and the reserve it rests on, in MiB as SGLang computes it
/// (python/sglang/srt/server_args.py, _handle_gpu_memory_settings, since SGLang PR #10975).
struct SglangMemFraction {
    std::uint64_t gpu_memory_mib = 0;        ///< nvidia-smi memory.total, MiB
    std::uint64_t chunked_prefill_size = 0;  ///< tokens
    std::uint32_t cuda_graph_max_bs = 0;
    double constant_mib = 512.0;             ///< fixed metadata
    double prefill_mib = 0.0;                ///< max(chunked_prefill_size, 2048) x 1.5
    double cuda_graph_mib = 0.0;             ///< cuda_graph_max_bs x 2
    double parallel_mib = 0.0;               ///< tp x pp / 8 x 1024
    double floor_mib = 0.0;                  ///< 10 GiB on GPUs above 60 GiB, else 0
    double reserved_mib = 0.0;               ///< max(sum of the above, floor)
    double fraction = 0.0;                   ///< round((gpu_mem - reserved) / gpu_mem, 3)
};

/// SGLang's default mem_fraction_static for `gpu` at tp x pp, with the chunked-prefill size and
/// CUDA-graph batch of its GPU-memory table unless `o` gives them.
[[nodiscard]] constexpr SglangMemFraction sglang_mem_fraction(const GpuSpec& gpu, std::uint32_t tp,
                                                              std::uint32_t pp,
                                                              const SglangOptions& o = {}) {
    SglangMemFraction r;
    r.gpu_memory_mib = gpu.memory_total.count() / MiB.bytes;
    const std::uint64_t g = r.gpu_memory_mib;
    // The table of _handle_gpu_memory_settings: (upper bound GiB, chunked prefill, graph bs for
    // tp < 4, graph bs for tp >= 4).
    std::uint64_t prefill = 16384;
    std::uint32_t bs = 512;
    if (g < 20 * 1024) { prefill = 2048; bs = 8; }
    else if (g < 35 * 1024) { prefill = 2048; bs = tp < 4 ? 24 : 80; }
    else if (g < 60 * 1024) { prefill = 4096; bs = tp < 4 ? 32 : 160; }
    else if (g < 160 * 1024) { prefill = 8192; bs = tp < 4 ? 256 : 512; }
    r.chunked_prefill_size = o.chunked_prefill_size.value_or(prefill);
    r.cuda_graph_max_bs = o.cuda_graph_max_bs.value_or(bs);
    r.prefill_mib = static_cast<double>(std::max<std::uint64_t>(r.chunked_prefill_size, 2048)) * 1.5;
    r.cuda_graph_mib = static_cast<double>(r.cuda_graph_max_bs) * 2.0;
    r.parallel_mib = static_cast<double>(tp) * static_cast<double>(pp) / 8.0 * 1024.0;
    r.floor_mib = g > 60 * 1024 ? 10.0 * 1024.0 : 0.0;
    r.reserved_mib =
        std::max(r.constant_mib + r.prefill_mib + r.cuda_graph_mib + r.parallel_mib, r.floor_mib);
    const double x = (static_cast<double>(g) - r.reserved_mib) / static_cast<double>(g);
    r.fraction = static_cast<double>(static_cast<std::int64_t>(x * 1000.0 + 0.5)) / 1000.0;
    return r;
}

/// SGLang's token pool on a replica.
struct SglangKvPool {
    Bytes available{};           ///< pool memory per GPU: the "rest" after weights within the fraction
    std::uint32_t limiting_stage = 0;
    std::uint32_t layers = 0;    ///< layers in a cell on that stage
    Bytes cell_size{};           ///< bytes of one token over those layers (get_cell_size_per_token)
    std::uint64_t max_total_num_tokens = 0;  ///< "max_total_num_tokens=" (the full pool when split)
    std::uint64_t swa_tokens = 0;  ///< sliding pool tokens under hybrid_swa_pool, else 0
    std::uint32_t page_size = 1;
    Bytes k_size{};              ///< "KV Cache is allocated. ... K size:" (MLA: the latent, "KV size")
    Bytes v_size{};              ///< "V size:" (zero for MLA)
    bool mamba_state_ignored = false;  ///< constant-state layers are not in the pool (their pool is not modelled)
};

/// SGLang's token pool for `m` under `l` with `available[stage]` bytes of pool memory per GPU
/// (profile_max_num_token in python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py,
/// formerly model_runner.py): tokens = available // cell_size, aligned down to the page, the least
/// over pipeline ranks.
[[nodiscard]] constexpr SglangKvPool sglang_kv_pool(const Model& m, KvFormat f, const Layout& l,
                                                    std::span<const Bytes> available,
                                                    const SglangOptions& o = {}) {
    KVPLAN_EXPECTS(available.size() == 1 || available.size() == l.pp());
    KVPLAN_EXPECTS(o.page_size >= 1);
    SglangKvPool p;
    p.page_size = o.page_size;
    p.available = available[0];
    p.max_total_num_tokens = std::numeric_limits<std::uint64_t>::max();
    for (std::uint32_t st = 0; st < l.pp(); ++st) {
        const Shard sh = l.stage(st);
        Bytes cell{}, k_row{}, v_row{};
        std::uint32_t layers = 0, swa_layers = 0;
        for (std::uint32_t i = sh.first_layer; i < detail::shard_end(m, sh); ++i) {
            const CacheSpec& spec = m.layer(i);
            if (spec.kind == CacheKind::constant_state) {
                p.mamba_state_ignored = true;
                continue;
            }
            if (spec.kind == CacheKind::shared || spec.kind == CacheKind::mlp_only) continue;
            cell += layer_bytes_per_token(spec, f, sh.tp);
            if (spec.kind == CacheKind::mla_latent) {
                k_row += layer_bytes_per_token(spec, f, sh.tp);
            } else {
                const std::uint64_t heads = kv_heads_per_rank(spec.kv_heads, sh.tp);
                k_row += vector_bytes(f, spec.k_head_dim) * heads;
                v_row += vector_bytes(f, spec.v_head_dim) * heads;
            }
            ++layers;
            swa_layers += spec.kind == CacheKind::sliding_window ? 1 : 0;
        }
        if (cell.is_zero()) continue;
        const Bytes avail = available[available.size() == 1 ? 0 : st];
        std::uint64_t tokens = avail / cell;
        std::uint64_t swa = 0;
        if (o.hybrid_swa_pool && swa_layers > 0 && swa_layers < layers) {
            // set_num_tokens_hybrid_swa: the same bytes, split so the sliding pool has
            // swa_full_tokens_ratio tokens per full-pool token.
            const double total = static_cast<double>(tokens) * layers;
            const auto full = static_cast<std::uint64_t>(
                total / (o.swa_full_tokens_ratio * swa_layers + (layers - swa_layers)));
            swa = static_cast<std::uint64_t>(static_cast<double>(full) * o.swa_full_tokens_ratio);
            tokens = full;
            swa = swa / o.page_size * o.page_size;
        }
        tokens = tokens / o.page_size * o.page_size;
        if (o.max_total_tokens) tokens = std::min(tokens, *o.max_total_tokens);
        if (tokens < p.max_total_num_tokens) {
            p.max_total_num_tokens = tokens;
            p.swa_tokens = swa;
            p.limiting_stage = st;
            p.layers = layers;
            p.cell_size = cell;
            // MHATokenToKVPool / MLATokenToKVPool allocate size + page_size rows per layer (one
            // padded page for dummy writes).
            p.k_size = k_row * (tokens + o.page_size);
            p.v_size = v_row * (tokens + o.page_size);
        }
    }
    if (p.max_total_num_tokens == std::numeric_limits<std::uint64_t>::max()) p.max_total_num_tokens = 0;
    return p;
}

/// SGLang's token pool with the same pool memory on every GPU.
[[nodiscard]] constexpr SglangKvPool sglang_kv_pool(const Model& m, KvFormat f, const Layout& l,
                                                    Bytes available, const SglangOptions& o = {}) {
    return sglang_kv_pool(m, f, l, std::span<const Bytes>(&available, 1), o);
}

/// Sequences of `context` tokens SGLang's pool holds at once (its pages, and under a hybrid SWA
/// pool the window in the sliding pool), as a ratio.
[[nodiscard]] constexpr double sglang_max_concurrency(const Model& m, const SglangKvPool& p,
                                                      std::uint64_t context) {
    KVPLAN_EXPECTS(context >= 1);
    const std::uint64_t per_seq = detail::ceil_div(context, p.page_size) * p.page_size;
    double c = static_cast<double>(p.max_total_num_tokens) / static_cast<double>(per_seq);
    if (p.swa_tokens != 0) {
        const std::uint64_t w = std::min(context, largest_window(m));
        const std::uint64_t swa_per_seq = detail::ceil_div(w, p.page_size) * p.page_size;
        c = std::min(c, static_cast<double>(p.swa_tokens) / static_cast<double>(swa_per_seq));
    }
    return c;
}

// ---------------------------------------------------------------------------------------------
// TensorRT-LLM
// ---------------------------------------------------------------------------------------------

/// TensorRT-LLM's knobs that shape the cache (tensorrt_llm/llmapi/llm_args.py, KvCacheConfig).
struct TrtllmOptions {
    double free_gpu_memory_fraction = 0.9;  ///< of the memory free after load (default 0.9)
    std::uint32_t tokens_per_block = 32;    ///< default 32 (64 in older engine builds)
    std::optional<std::uint64_t> max_tokens{};  ///< caps each pool's tokens
    std::uint64_t max_seq_len = 0;          ///< window of full-attention layers; 0: max_position_embeddings
    /// max_attention_window set per layer from the model: one pool per window size (VSWA). Unset,
    /// every layer is sized as full attention, as TensorRT-LLM does by default.
    bool variable_window = false;
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

/// TensorRT-LLM's KV cache for `m` under `l` with `available[stage]` bytes per GPU after the fraction
/// (BaseKVCacheManager::calculateMaxNumBlocks, cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp;
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
    const std::uint64_t max_seq = o.max_seq_len != 0 ? o.max_seq_len : m.config().max_position_embeddings;
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
            p.max_tokens = static_cast<std::uint64_t>(static_cast<double>(avail.count()) * p.share /
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
                                                      Bytes available, const TrtllmOptions& o = {}) {
    return trtllm_kv_cache(m, f, l, std::span<const Bytes>(&available, 1), o);
}

/// Sequences of `context` tokens TensorRT-LLM's pools hold at once: the least over windows of
/// blocks / ceil(min(context, window) / tokens_per_block) (KVCacheManager::getMaxCapacityBatchSize).
[[nodiscard]] constexpr double trtllm_max_concurrency(const TrtllmKvCache& c, std::uint64_t context) {
    KVPLAN_EXPECTS(context >= 1);
    double best = std::numeric_limits<double>::infinity();
    for (std::uint32_t k = 0; k < c.num_pools; ++k) {
        const std::uint64_t per_seq =
            detail::ceil_div(std::min(context, c.pools[k].window), c.tokens_per_block);
        best = std::min(best, static_cast<double>(c.pools[k].blocks) / static_cast<double>(per_seq));
    }
    return c.num_pools == 0 ? 0.0 : best;
}

// ---------------------------------------------------------------------------------------------
// Ideal
// ---------------------------------------------------------------------------------------------

/// The ideal cache: exactly the bytes of each sequence's context, windows applied, no blocks.
struct IdealKvCache {
    Bytes available{};
    std::uint32_t limiting_stage = 0;
    Bytes per_token{};                      ///< every growing layer, on the limiting stage
    std::optional<std::uint64_t> tokens{};  ///< available / per_token; nullopt: nothing grows
};

/// The ideal cache for `m` under `l` with `available[stage]` bytes per GPU.
[[nodiscard]] constexpr IdealKvCache ideal_kv_cache(const Model& m, KvFormat f, const Layout& l,
                                                    std::span<const Bytes> available) {
    KVPLAN_EXPECTS(available.size() == 1 || available.size() == l.pp());
    IdealKvCache c;
    c.available = available[0];
    bool first = true;
    for (std::uint32_t st = 0; st < l.pp(); ++st) {
        const Bytes avail = available[available.size() == 1 ? 0 : st];
        const auto t = tokens_that_fit(avail, m, f, l.stage(st));
        if (first || detail::min_bounded(c.tokens, t) != c.tokens) {
            c.tokens = first ? t : detail::min_bounded(c.tokens, t);
            c.limiting_stage = st;
            c.per_token = kv_bytes_per_token(m, f, l.stage(st));
        }
        first = false;
    }
    return c;
}

// ---------------------------------------------------------------------------------------------
// Memory: what each engine gives the cache
// ---------------------------------------------------------------------------------------------

/// Options of every profile, for the functions that take an Engine.
struct EngineOptions {
    VllmOptions vllm{};
    SglangOptions sglang{};
    TrtllmOptions trtllm{};
};

/// The KV memory an engine gives one GPU, term by term.
struct EngineMemory {
    Engine engine = Engine::ideal;
    Bytes memory_total{};    ///< the driver's total
    double fraction = 0.0;   ///< gpu_memory_utilization, mem_fraction_static or free_gpu_memory_fraction
    Bytes fraction_base{};   ///< what the fraction multiplies
    Bytes fraction_bytes{};  ///< fraction x base, rounded as the engine rounds it
    Bytes weights{};
    Bytes activation{};
    Bytes cuda_graphs{};
    Bytes cuda_context{};
    Bytes comm_buffers{};
    Bytes charged{};         ///< terms subtracted from fraction_bytes
    Bytes outside{};         ///< terms left to live outside fraction_bytes
    Bytes kv_memory{};       ///< fraction_bytes - charged (zero if negative)
    Bytes shortfall{};       ///< charged - fraction_bytes when the charged terms alone do not fit
    bool outside_fits = true;  ///< the outside terms fit in what the fraction leaves
};

/// The KV memory engine `e` gives a GPU of stage `stage` of `r`:
///   ideal   ceil(total x utilization) - weights - the whole reserve (the budget of budget.hpp);
///   vllm    ceil(total x gpu_memory_utilization) - weights - activation peak [- CUDA graphs]
///           (vllm/v1/worker/gpu_worker.py, determine_available_memory; vllm/v1/worker/utils.py,
///           request_memory): the CUDA context and NCCL buffers exist before vLLM's memory snapshot
///           and must fit beside the fraction;
///   sglang  mem_fraction_static x (memory free after distributed init) - weights
///           (model_runner_kv_cache_mixin.py): activations and graphs live in the rest;
///   trtllm  free_gpu_memory_fraction x (total - weights - activation peak - context, NCCL and
///           graphs), the memory free after the PyTorch backend's profiling run
///           (tensorrt_llm/_torch/pyexecutor/_util.py, KvCacheCreator).
[[nodiscard]] constexpr EngineMemory engine_memory(Engine e, const Replica& r, const Layout& l,
                                                   std::uint32_t stage, const BudgetOptions& b = {},
                                                   const EngineOptions& eo = {}) {
    EngineMemory em;
    em.engine = e;
    em.memory_total = r.gpu.memory_total;
    // vLLM profiles a forward of its own max_num_batched_tokens.
    ReserveOptions ro = b.reserve;
    if (e == Engine::vllm && !ro.max_num_batched_tokens)
        ro.max_num_batched_tokens = eo.vllm.max_num_batched_tokens;
    const Reserve res = reserve_on_rank(r, l, stage, ro);
    em.weights = weight_bytes_per_rank(r.model, l, stage, r.weights).total();
    em.activation = res.activation.bytes;
    em.cuda_graphs = res.cuda_graphs.bytes;
    em.cuda_context = res.cuda_context.bytes;
    em.comm_buffers = res.comm_buffers.bytes;
    switch (e) {
        case Engine::ideal:
            em.fraction = b.utilization;
            em.fraction_base = em.memory_total;
            em.fraction_bytes = detail::scale_up(em.memory_total, b.utilization);
            em.charged = em.weights + res.total();
            break;
        case Engine::vllm:
            em.fraction = b.utilization;
            em.fraction_base = em.memory_total;
            em.fraction_bytes = detail::scale_up(em.memory_total, b.utilization);
            em.charged = em.weights + em.activation + (eo.vllm.charge_cuda_graphs ? em.cuda_graphs : Bytes{});
            em.outside = em.cuda_context + em.comm_buffers +
                         (eo.vllm.charge_cuda_graphs ? Bytes{} : em.cuda_graphs);
            break;
        case Engine::sglang:
            em.fraction = eo.sglang.mem_fraction_static
                              ? *eo.sglang.mem_fraction_static
                              : sglang_mem_fraction(r.gpu, l.tp(), l.pp(), eo.sglang).fraction;
            em.fraction_base = detail::saturating_sub(em.memory_total, em.cuda_context + em.comm_buffers);
            em.fraction_bytes = detail::scale_down(em.fraction_base, em.fraction);
            em.charged = em.weights;
            em.outside = em.activation + em.cuda_graphs;
            break;
        case Engine::trtllm:
            // The fraction is a float in TensorRT-LLM (0.9 is 0.899999976, as its logs print).
            em.fraction = static_cast<double>(static_cast<float>(eo.trtllm.free_gpu_memory_fraction));
            em.fraction_base = detail::saturating_sub(
                em.memory_total,
                em.weights + em.activation + em.cuda_context + em.comm_buffers + em.cuda_graphs);
            em.fraction_bytes = detail::scale_down(em.fraction_base, em.fraction);
            break;
    }
    em.kv_memory = detail::saturating_sub(em.fraction_bytes, em.charged);
    em.shortfall = detail::saturating_sub(em.charged, em.fraction_bytes);
    // vLLM checks at start-up that the free memory covers total x utilization; SGLang's activations
    // and graphs live in (1 - fraction) of what was free; TensorRT-LLM needs the weights and the
    // profiled peak to fit at all.
    em.outside_fits = e == Engine::trtllm
                          ? em.weights + em.activation + em.cuda_context + em.comm_buffers +
                                    em.cuda_graphs <= em.memory_total
                          : em.outside <= detail::saturating_sub(
                                              e == Engine::sglang ? em.fraction_base : em.memory_total,
                                              em.fraction_bytes);
    return em;
}

/// What one engine makes of a replica, in the same terms for every engine.
struct EngineCapacity {
    Engine engine = Engine::ideal;
    Bytes kv_memory{};  ///< per GPU of the limiting stage
    std::optional<std::uint64_t> tokens{};  ///< the KV tokens the engine reports (nullopt: nothing grows)
    std::uint64_t context = 0;               ///< tokens per sequence the concurrency is for
    double max_concurrency = 0.0;            ///< sequences of `context` at once
    bool starts = true;                      ///< the engine accepts the configuration
};

/// Every figure of one engine on a replica: the memory per stage, the cache, and the summary.
struct EngineReport {
    EngineCapacity summary{};
    std::array<EngineMemory, max_pipeline_stages> memory{};  ///< per stage (when computed)
    std::uint32_t num_stages = 0;
    VllmKvCache vllm{};
    SglangKvPool sglang{};
    TrtllmKvCache trtllm{};
    IdealKvCache ideal{};
    /// The memory of the stages in use.
    [[nodiscard]] constexpr std::span<const EngineMemory> stage_memory() const noexcept {
        return {memory.data(), num_stages};
    }
};

namespace detail {

/// The cache step of `e` given the KV memory per stage.
constexpr void engine_cache(EngineReport& rep, Engine e, const Replica& r, const Layout& l,
                            std::span<const Bytes> kv, std::uint64_t context,
                            const BudgetOptions& b, const EngineOptions& eo) {
    EngineCapacity& s = rep.summary;
    s.engine = e;
    s.context = context;
    switch (e) {
        case Engine::ideal: {
            rep.ideal = ideal_kv_cache(r.model, r.kv, l, kv);
            s.kv_memory = rep.ideal.available;
            s.tokens = rep.ideal.tokens;
            double best = std::numeric_limits<double>::infinity();
            for (std::uint32_t st = 0; st < l.pp(); ++st) {
                const Bytes per_seq = kv_bytes_per_sequence(r.model, r.kv, context, l.stage(st));
                if (per_seq.is_zero()) continue;
                best = std::min(best, static_cast<double>(kv[kv.size() == 1 ? 0 : st].count()) /
                                          static_cast<double>(per_seq.count()));
            }
            s.max_concurrency = best;
            break;
        }
        case Engine::vllm: {
            VllmOptions o = eo.vllm;
            if (o.max_model_len == 0) o.max_model_len = context;
            if (!o.max_num_batched_tokens)
                o.max_num_batched_tokens = b.reserve.max_num_batched_tokens.value_or(
                    vllm_batch_defaults(r.gpu).max_num_batched_tokens);
            rep.vllm = vllm_kv_cache(r.model, r.kv, l, kv, o);
            s.kv_memory = rep.vllm.available;
            s.tokens = rep.vllm.kv_cache_tokens;
            s.context = rep.vllm.max_model_len;
            s.max_concurrency = rep.vllm.max_concurrency;
            s.starts = rep.vllm.enough_memory && rep.vllm.refused.empty();
            break;
        }
        case Engine::sglang:
            rep.sglang = sglang_kv_pool(r.model, r.kv, l, kv, eo.sglang);
            s.kv_memory = rep.sglang.available;
            s.tokens = rep.sglang.max_total_num_tokens;
            s.max_concurrency = sglang_max_concurrency(r.model, rep.sglang, context);
            s.starts = rep.sglang.max_total_num_tokens > 0;
            break;
        case Engine::trtllm: {
            TrtllmOptions o = eo.trtllm;
            if (o.max_seq_len == 0) o.max_seq_len = context;
            rep.trtllm = trtllm_kv_cache(r.model, r.kv, l, kv, o);
            s.kv_memory = rep.trtllm.available;
            std::uint64_t least = std::numeric_limits<std::uint64_t>::max();
            for (std::uint32_t k = 0; k < rep.trtllm.num_pools; ++k)
                least = std::min(least, rep.trtllm.pools[k].tokens);
            s.tokens = rep.trtllm.num_pools == 0 ? 0 : least;
            s.max_concurrency = trtllm_max_concurrency(rep.trtllm, context);
            s.starts = rep.trtllm.num_pools > 0 && s.max_concurrency >= 1.0;
            break;
        }
    }
}

}  // namespace detail

/// Engine `e` on replica `r` for sequences of `context` tokens (vLLM's max_model_len and
/// TensorRT-LLM's max_seq_len unless set in `eo`): the KV memory it gives each stage
/// (engine_memory), or `b.kv_memory_per_gpu` when given, and the cache it builds in it.
[[nodiscard]] constexpr EngineReport engine_report(Engine e, const Replica& r, std::uint64_t context,
                                                   const BudgetOptions& b = {},
                                                   const EngineOptions& eo = {}) {
    KVPLAN_EXPECTS(context >= 1);
    const Layout l = r.layout();
    EngineReport rep;
    rep.num_stages = l.pp();
    std::array<Bytes, max_pipeline_stages> kv{};
    bool fits = true;
    for (std::uint32_t st = 0; st < l.pp(); ++st) {
        rep.memory[st] = engine_memory(e, r, l, st, b, eo);
        kv[st] = b.kv_memory_per_gpu ? *b.kv_memory_per_gpu : rep.memory[st].kv_memory;
        fits = fits && (b.kv_memory_per_gpu || (rep.memory[st].shortfall.is_zero() &&
                                                rep.memory[st].outside_fits));
    }
    detail::engine_cache(rep, e, r, l, std::span<const Bytes>(kv.data(), l.pp()), context, b, eo);
    rep.summary.starts = rep.summary.starts && fits;
    return rep;
}

}  // namespace kvplan
