#pragma once

// vLLM's KV cache: how the v1 engine cuts its KV memory into blocks, groups its layers, and what it
// reports at start-up. The v1 engine as of its current main branch (vllm/v1/core/kv_cache_utils.py,
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

#include "../admission/admission.hpp"
#include "../admission/block_pool.hpp"
#include "../capacity.hpp"
#include "../detail/checked.hpp"
#include "../dtype.hpp"
#include "../kv_bytes.hpp"
#include "../layout.hpp"
#include "../model.hpp"
#include "../paging.hpp"
#include "../units.hpp"
#include "release.hpp"
#include "vllm_deepseek_v4.hpp"

namespace kvplan {

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
    std::uint64_t max_model_len = 0;                ///< 0: the model's max_position_embeddings
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
    /// The v0.8 releases' V1 worker charged every byte in use outside PyTorch after the profile
    /// run (the CUDA context, loaded kernels, communication buffers) to the KV budget; since
    /// v0.9.2 only what the profile adds is (engine/release.hpp, vllm_charges_non_torch_in_use).
    bool charge_non_torch_in_use = false;
    /// Through v0.10 the communication buffers were charged too: the memory snapshot preceded the
    /// distributed groups (engine/release.hpp, vllm_charges_comm_buffers).
    bool charge_comm_buffers = false;
    /// From v0.11 NCCL's NVLS buffers are first connected by the profile run's large all-reduces,
    /// so they are part of the charged increase (engine/nccl.hpp, vllm_profile_connects_nvls).
    bool charge_nvls_buffers = true;
    /// Through v0.22 the profile's logits all-gather creates PyTorch's own NCCL communicator of the
    /// tensor-parallel group inside the charged increase (engine/nccl.hpp,
    /// vllm_logits_gather_opens_torch_nccl); off for the newest release, which gathers through
    /// pynccl (vLLM PR #40996).
    bool charge_logits_gather_communicator = false;
    /// How the release's FlashInfer rounds the all-reduce fusion workspace that the profile run
    /// allocates at tp > 1 (engine/allreduce_fusion.hpp); none: no workspace (vLLM without
    /// FlashInfer, or a release before v0.17).
    FusionWorkspaceRounding fusion_workspace = FusionWorkspaceRounding::allocation;
    /// The release turns the fusion off at pp > 1 or dp > 1 (vllm_fusion_needs_single_stage).
    bool fusion_single_stage_only = false;
    /// --num-gpu-blocks-override: the pool's block count, whatever the memory
    /// (CacheConfig.num_gpu_blocks_override; vllm/v1/core/kv_cache_planning.py).
    std::optional<std::uint64_t> num_gpu_blocks_override{};
    /// --max-num-seqs: sequences the scheduler runs at once; nullopt: vLLM's default for the GPU
    /// (vllm_batch_defaults), 1,024 when no GPU is known.
    std::optional<std::uint32_t> max_num_seqs{};
    /// The prompt of a max_model_len request, for what the scheduler admits (the rest is
    /// generated); 0: all but one token.
    std::uint64_t prompt_tokens = 0;
    /// Speculative tokens per step (--speculative-config num_speculative_tokens): a Mamba state
    /// keeps a block for each (MambaSpec.num_speculative_blocks). The drafter's own layers are
    /// the model's (plan/speculation.hpp appends them).
    std::uint32_t num_speculative_tokens = 0;
};

/// One kind of layer as vLLM's KV cache manager sees it: a KVCacheSpec and its groups.
struct VllmLayerKind {
    CacheKind kind =
        CacheKind::full_attention;     ///< sliding layers become full without the hybrid manager
    std::uint64_t window = 0;          ///< sliding_window, for sliding layers
    std::uint32_t layers = 0;          ///< layers of this kind in the whole model
    std::uint32_t groups = 0;          ///< KV cache groups they form
    std::uint32_t padding_layers = 0;  ///< empty slots in the last group ("Add N padding layers")
    std::uint32_t block_size = 0;      ///< tokens per block (raised to unify page sizes; x dcp)
    Bytes page{};                      ///< bytes of one block of one layer on a rank
    Bytes unpadded_page{};             ///< the page before padding to the largest one
    std::uint32_t speculative_blocks = 0;  ///< a state's blocks for speculative tokens
    std::uint64_t blocks_per_request = 0;  ///< blocks one request of max_model_len takes per group
};

/// vLLM's KV cache on a replica: its groups, blocks, and the figures it prints.
struct VllmKvCache {
    Bytes available{};  ///< KV memory per GPU ("Available KV cache memory")
    std::uint64_t max_model_len = 0;
    std::uint64_t in_flight_tokens = 0;  ///< concurrent batches x max_num_batched_tokens
    std::uint32_t block_size = 0;        ///< attention block size in use (raised for Mamba hybrids)
    /// Decode context parallelism: each rank holds one token in dcp, and a kind's block_size
    /// counts the tokens of a logical block (block_size x dcp) while its page holds block_size.
    std::uint32_t dcp = 1;
    std::array<VllmLayerKind, max_cache_specs> kinds{};
    std::uint32_t num_kinds = 0;
    bool uniform_type = false;           ///< one group of every layer, pages of different sizes
    std::uint32_t num_groups = 0;        ///< KV cache groups
    std::uint32_t group_size = 0;        ///< layers per group over the whole model
    Bytes page{};                        ///< the common page of a layer (zero under uniform_type)
    std::uint32_t limiting_stage = 0;    ///< the pipeline stage with the fewest blocks
    std::uint32_t stage_group_size = 0;  ///< layers per group on that stage
    Bytes bytes_per_block{};             ///< memory one block takes on that stage, over its layers
    std::uint64_t num_blocks = 0;        ///< blocks every worker gets (the least over stages)
    bool blocks_overridden = false;      ///< num_blocks is --num-gpu-blocks-override
    /// Blocks requests can take: num_blocks less the null block the pool holds back
    /// (vllm/v1/core/block_pool.py, BlockPool: block 0 is the null block).
    std::uint64_t usable_blocks = 0;
    std::uint64_t blocks_per_request = 0;  ///< blocks one request of max_model_len takes
    double max_concurrency = 0.0;       ///< "Maximum concurrency for N tokens per request: X.XXx"
    std::uint64_t kv_cache_tokens = 0;  ///< "GPU KV cache size: N tokens"
    Bytes needed{};              ///< KV memory one request of max_model_len needs (largest stage)
    bool enough_memory = false;  ///< vLLM starts; otherwise it raises with the estimate below
    std::uint64_t estimated_max_model_len = 0;  ///< "the estimated maximum model length is N"
    std::string_view refused{};  ///< non-empty: vLLM cannot build a cache for this model (why)
    /// What the scheduler admits, from the admission core on this pool (vllm_block_pool,
    /// request_need, in kvplan/admission/): requests of max_model_len tokens (VllmOptions::
    /// prompt_tokens of prompt) held at once when each running one holds its decoding blocks
    /// (blocks_held) and the last admitted its peak (blocks_to_admit): 1 + (usable_blocks -
    /// blocks_to_admit) / blocks_held, before the max_num_seqs cap. Sliding windows hold far less
    /// than the logged figure reserves for them, so a hybrid admits more than it logs.
    std::uint64_t blocks_held = 0;
    std::uint64_t blocks_to_admit = 0;
    std::uint64_t admitted = 0;
    bool sliding_fell_back = false;  ///< sliding layers allocated as full (MLA beside them)
    /// DeepSeek-V4's packed pool (engine/vllm_deepseek_v4.hpp): kinds[0] is the full-MLA group,
    /// the others its sliding groups; page is one block of a layer tuple over every group's page
    /// size, group_size the layer tuples a block holds (stage_group_size on the limiting stage).
    bool deepseek_v4 = false;
};

namespace detail {

struct VllmSetup {
    VllmKvCache c{};
    std::array<std::uint8_t, max_cache_specs> kind_of_spec{};  // core spec -> vLLM kind
    std::array<Bytes, max_cache_specs> per_token{};  // bytes per token (state: per request)
    std::array<CacheSpec, max_cache_specs> shape{};  // a kind's heads on a rank and head sizes
    VllmV4Layout v4{};                               // DeepSeek-V4's layout (c.deepseek_v4)
};

/// What a layer's KVCacheSpec holds beside its kind and window: its KV heads on a rank of TP
/// degree `tp` and its head sizes (AttentionSpec.num_kv_heads, head_size, head_size_v; MLA's
/// latent and RoPE sizes; a state's bytes).
[[nodiscard]] constexpr CacheSpec vllm_spec_shape(const CacheSpec& spec, std::uint32_t tp) {
    CacheSpec s = spec;
    s.kind = CacheKind::full_attention;
    s.window = 0;
    if (spec.kv_heads != 0) s.kv_heads = kv_heads_per_rank(spec.kv_heads, tp);
    return s;
}

/// vLLM's page of one layer of `kind` at `block` tokens: per-token bytes x block size; a Mamba
/// state is one page (padded to the attention page).
[[nodiscard]] constexpr std::uint64_t vllm_blocks_for(const VllmLayerKind& k, std::uint64_t len,
                                                      std::uint64_t in_flight,
                                                      MambaCacheMode mode) {
    switch (k.kind) {
        case CacheKind::full_attention:
        case CacheKind::mla_latent:
            return ceil_div(len, k.block_size);
        // SlidingWindowSpec: cdiv(min(window - 1 + in-flight tokens, max_model_len), block) + 1.
        case CacheKind::sliding_window:
            return ceil_div(std::min(k.window - 1 + in_flight, len), k.block_size) + 1;
        // ChunkedLocalAttentionSpec: cdiv(min(chunk + in-flight tokens, max_model_len), block),
        // no +1 (vllm/v1/kv_cache_interface.py, max_admission_blocks_per_request).
        case CacheKind::chunked_local:
            return ceil_div(std::min(k.window + in_flight, len), k.block_size);
        // MambaSpec: page x (1 + speculative blocks), or x (2 + ...) in align mode.
        case CacheKind::constant_state:
            return (mode == MambaCacheMode::align ? 2 : 1) + k.speculative_blocks;
        case CacheKind::shared:
        case CacheKind::mlp_only:
            return 0;
    }
    return 0;
}

/// DeepSeek-V4's groups as vLLM's kinds: the full-MLA group (an MLA kind of the cache block, one
/// group) and each sliding group (a sliding kind of its block and window, split as vLLM splits
/// it). Pages are those of one layer tuple; the pool's block is c.page x c.group_size.
[[nodiscard]] constexpr VllmSetup vllm_setup_deepseek_v4(const Model& m, VllmSetup s) {
    VllmKvCache& c = s.c;
    s.v4 = vllm_deepseek_v4_layout(m);
    if (!s.v4.refused.empty()) {
        c.refused = s.v4.refused;
        return s;
    }
    c.deepseek_v4 = true;
    c.block_size = vllm_deepseek_v4_block_size;
    s.kind_of_spec.fill(0xff);
    c.num_kinds = s.v4.num_groups;
    for (std::uint32_t g = 0; g < s.v4.num_groups; ++g) {
        const VllmV4Group& grp = s.v4.groups[g];
        VllmLayerKind& k = c.kinds[g];
        k.kind = g == 0 ? CacheKind::mla_latent : CacheKind::sliding_window;
        k.window = grp.window;
        k.layers = grp.layers;
        k.groups = grp.groups;
        k.block_size = grp.block;
        k.page = grp.tuple_page;
        // Before padding: the group's own distinct page sizes.
        std::array<Bytes, vllm_v4_caches> seen{};
        std::uint32_t n = 0;
        for (const VllmV4Spec& e : s.v4.specs) {
            if (e.layers == 0 || e.group != g) continue;
            std::uint32_t j = 0;
            while (j < n && seen[j] != e.page) ++j;
            if (j == n) {
                seen[n++] = e.page;
                k.unpadded_page += e.page;
            }
        }
        c.num_groups += grp.groups;
    }
    c.page = s.v4.tuple_bytes;
    c.group_size = vllm_deepseek_v4_tuples(m, s.v4, 0, m.num_layers());
    return s;
}

/// `sliding_as_full`: allocate sliding layers as full attention (vLLM's fallback when MLA pages and
/// sliding pages cannot be unified).
[[nodiscard]] constexpr VllmSetup vllm_setup_blocks(const Model& m, KvFormat f, const Layout& l,
                                                    const VllmOptions& o, bool sliding_as_full) {
    VllmSetup s;
    VllmKvCache& c = s.c;
    const LayerStack& L = m.layers();
    const std::uint32_t tp = l.attention_tp();
    c.max_model_len = o.max_model_len != 0 ? o.max_model_len : m.config().max_position_embeddings;
    const std::uint32_t batches =
        o.concurrent_batches != 0 ? o.concurrent_batches : (l.pp() == 1 ? 2 : l.pp());
    c.in_flight_tokens = mul(batches, o.max_num_batched_tokens.value_or(8192), "in-flight tokens");

    // DeepSeek-V4: up to five caches a layer, grouped and packed by vLLM's own rules
    // (engine/vllm_deepseek_v4.hpp).
    for (std::uint32_t k = 0; k < L.num_specs; ++k)
        if (is_compressed_mla(L.specs[k]) && L.layers_with_spec(k) != 0)
            return vllm_setup_deepseek_v4(m, s);
    // Distinct vLLM specs. Without the hybrid manager a sliding layer becomes a FullAttentionSpec
    // (unify_hybrid_kv_cache_specs), which vLLM regards as the same spec as a full layer.
    bool any_full = false, any_sliding = false;
    for (std::uint32_t k = 0; k < L.num_specs; ++k) {
        any_full = any_full || L.specs[k].kind == CacheKind::full_attention;
        any_sliding = any_sliding || L.specs[k].kind == CacheKind::sliding_window ||
                      L.specs[k].kind == CacheKind::chunked_local;
    }
    const bool demote_sliding =
        sliding_as_full || (!o.hybrid_kv_cache_manager && any_full && any_sliding);
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
        const Bytes per_token = spec.kind == CacheKind::constant_state
                                    ? layer_state_bytes(spec, tp)
                                    : layer_bytes_per_token(spec, f, tp);
        const std::uint64_t window =
            kind == CacheKind::sliding_window || kind == CacheKind::chunked_local ? spec.window : 0;
        // One kind per distinct KVCacheSpec: vLLM groups layers by spec equality
        // (vllm/v1/core/kv_cache_utils.py, _get_kv_cache_groups_uniform_page_size groups the
        // layers of each spec), so equal bytes per token in another shape (8 heads of 128 beside
        // 4 of 256) are another kind.
        const CacheSpec shape = vllm_spec_shape(spec, tp);
        std::uint32_t i = 0;
        while (i < c.num_kinds && !(c.kinds[i].kind == kind && c.kinds[i].window == window &&
                                    s.per_token[i] == per_token && s.shape[i] == shape))
            ++i;
        if (i == c.num_kinds) {
            c.kinds[i].kind = kind;
            c.kinds[i].window = window;
            s.per_token[i] = per_token;
            s.shape[i] = shape;
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
        if (c.kinds[i].kind == CacheKind::constant_state)
            state = std::max(state, s.per_token[i]);
        else
            attn_token = std::max(attn_token, s.per_token[i]);
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
        if (k.kind == CacheKind::constant_state) k.speculative_blocks = o.num_speculative_tokens;
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
        for (std::uint32_t i = 0; i < c.num_kinds; ++i) c.kinds[i].unpadded_page = c.kinds[i].page;
        return s;
    }
    // _unify_kv_cache_spec_page_size (vllm/v1/core/kv_cache_planning.py): a smaller page grows
    // its block size when it divides the largest; a Mamba page, or an attention page that does not
    // divide, is padded up to it (page_size_padded). MLA cannot be padded: vLLM then allocates the
    // sliding layers beside it as full attention (_try_get_full_allocation_fallback_groups), or
    // raises.
    Bytes max_page{};
    for (std::uint32_t i = 0; i < c.num_kinds; ++i) max_page = std::max(max_page, c.kinds[i].page);
    for (std::uint32_t i = 0; i < c.num_kinds; ++i) {
        VllmLayerKind& k = c.kinds[i];
        k.unpadded_page = k.page;
        if (k.page == max_page || k.kind == CacheKind::constant_state) {
            k.page = max_page;
            continue;
        }
        if (max_page.count() % k.page.count() == 0) {
            k.block_size =
                static_cast<std::uint32_t>(k.block_size * (max_page.count() / k.page.count()));
        } else if (k.kind == CacheKind::mla_latent) {
            c.refused =
                "the MLA layers' page does not divide the largest page and MLA cannot be "
                "padded (_unify_kv_cache_spec_page_size raises NotImplementedError)";
            return s;
        }
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

/// vllm_setup_blocks, then decode context parallelism: each rank's block still holds block_size
/// tokens of its share, so the scheduler counts a request's blocks of full attention and MLA in
/// units of block_size x dcp tokens (vllm/v1/core/single_type_kv_cache_manager.py;
/// FullAttentionSpec.max_memory_usage_bytes takes cdiv(max_model_len, dcp) tokens). A hybrid's
/// sliding-window and Mamba groups stay at dcp 1 (dcp_splits): their blocks hold block_size
/// tokens, the window or the state whole on every rank. Sliding layers allocated as full
/// (sliding_as_full) are full-attention groups and split.
[[nodiscard]] constexpr VllmSetup vllm_setup(const Model& m, KvFormat f, const Layout& l,
                                             const VllmOptions& o, bool sliding_as_full = false) {
    VllmSetup s = vllm_setup_blocks(m, f, l, o, sliding_as_full);
    s.c.dcp = l.dcp();
    if (s.c.deepseek_v4 && l.dcp() > 1) {
        s.c.refused = vllm_deepseek_v4_dcp_refusal;
        return s;
    }
    if (l.dcp() > 1)
        for (std::uint32_t i = 0; i < s.c.num_kinds; ++i)
            if (dcp_splits(s.c.kinds[i].kind)) s.c.kinds[i].block_size *= l.dcp();
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
        per_group =
            std::max(per_group, static_cast<std::uint32_t>(ceil_div(n[i], c.kinds[i].groups)));
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
            b += c.kinds[i].page * mul(n[i],
                                       vllm_blocks_for(c.kinds[i], len, c.in_flight_tokens, mode),
                                       "a block count");
        return b;
    }
    std::uint64_t blocks = 0;
    for (std::uint32_t i = 0; i < c.num_kinds; ++i)
        blocks =
            add(blocks,
                mul(c.kinds[i].groups, vllm_blocks_for(c.kinds[i], len, c.in_flight_tokens, mode),
                    "a block count"),
                "a block count");
    return vllm_stage_block(c, n).first * blocks;
}

/// Blocks one request of `len` tokens takes over every group
/// (get_max_concurrency_for_kv_cache_config: the sum over groups, or for one group of every layer
/// the most its layers need).
[[nodiscard]] constexpr std::uint64_t vllm_request_blocks(const VllmKvCache& c, std::uint64_t len,
                                                          MambaCacheMode mode) {
    std::uint64_t blocks = 0;
    for (std::uint32_t i = 0; i < c.num_kinds; ++i) {
        const VllmLayerKind& k = c.kinds[i];
        const std::uint64_t b = vllm_blocks_for(k, len, c.in_flight_tokens, mode);
        blocks = c.uniform_type || c.num_kinds == 1
                     ? std::max(blocks, b)
                     : add(blocks, mul(k.groups, b, "a block count"), "a block count");
    }
    return blocks;
}

}  // namespace detail

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
            case CacheKind::mlp_only:  // neither keeps a vLLM kind: never reached
                g.kind = BlockGroupKind::full;
                break;
            case CacheKind::sliding_window:
                g.kind = BlockGroupKind::sliding_window;
                g.span = k.window;
                g.admission_cap = k.blocks_per_request;
                break;
            case CacheKind::chunked_local:
                g.kind = BlockGroupKind::chunked_local;
                g.span = k.window;
                g.admission_cap = k.blocks_per_request;
                break;
            case CacheKind::constant_state:
                g.kind = BlockGroupKind::state;
                g.align = o.mamba_cache_mode == MambaCacheMode::align;
                g.extra_blocks = k.speculative_blocks;
                break;
        }
    }
    s.num_groups = kinds;
    return s;
}

/// vLLM's KV cache for `m` under layout `l` when each stage's GPUs have `available[stage]` bytes
/// for it (one entry: the same on every stage). Reproduces "GPU KV cache size: N tokens",
/// "Maximum concurrency for N tokens per request: X.XXx" and, when one request of max_model_len
/// does not fit, the estimated maximum model length of vLLM's error; and what its scheduler then
/// admits (VllmKvCache::admitted).
[[nodiscard]] constexpr VllmKvCache vllm_kv_cache(const Model& m, KvFormat f, const Layout& l,
                                                  std::span<const Bytes> available,
                                                  const VllmOptions& o = {}) {
    KVPLAN_EXPECTS(available.size() == 1 || available.size() == l.pp());
    detail::VllmSetup s = detail::vllm_setup(m, f, l, o);
    if (!s.c.refused.empty() && m.layers().layers_of_kind(CacheKind::sliding_window) > 0) {
        s = detail::vllm_setup(m, f, l, o, true);
        s.c.sliding_fell_back = true;
    }
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
    for (std::uint32_t i = 0; i < c.num_kinds; ++i)
        c.kinds[i].blocks_per_request = detail::vllm_blocks_for(
            c.kinds[i], c.max_model_len, c.in_flight_tokens, o.mamba_cache_mode);
    c.blocks_per_request = detail::vllm_request_blocks(c, c.max_model_len, o.mamba_cache_mode);

    // Per worker: num_blocks = available // bytes per block (get_kv_cache_config_from_groups),
    // then every worker takes the least (get_kv_cache_configs).
    c.num_blocks = std::numeric_limits<std::uint64_t>::max();
    for (std::uint32_t st = 0; st < l.pp(); ++st) {
        const auto n = detail::vllm_stage_layers(m, l, s, st);
        // DeepSeek-V4: a slot of every full-MLA page size per layer tuple on the stage.
        const auto stage_block = [&]() -> std::pair<Bytes, std::uint32_t> {
            if (!c.deepseek_v4) return detail::vllm_stage_block(c, n);
            const Shard sh = l.stage(st);
            const std::uint32_t t =
                vllm_deepseek_v4_tuples(m, s.v4, sh.first_layer, detail::shard_end(m, sh));
            return {c.page * t, t};
        };
        const auto [block, per_group] = stage_block();
        if (block.is_zero()) continue;
        const std::uint64_t blocks = avail(st) / block;
        if (blocks < c.num_blocks) {
            c.num_blocks = blocks;
            c.limiting_stage = st;
            c.stage_group_size = per_group;
            c.bytes_per_block = block;
        }
        // _max_memory_usage_bytes_from_groups: for DeepSeek-V4 every group's pages at the
        // stage's slot size.
        c.needed = std::max(
            c.needed, c.deepseek_v4
                          ? block * c.blocks_per_request
                          : detail::vllm_stage_needed(c, n, c.max_model_len, o.mamba_cache_mode));
    }
    if (c.num_blocks == std::numeric_limits<std::uint64_t>::max()) c.num_blocks = 0;
    if (o.num_gpu_blocks_override) {
        c.num_blocks = *o.num_gpu_blocks_override;
        c.blocks_overridden = true;
    }
    c.usable_blocks = c.num_blocks > 0 ? c.num_blocks - 1 : 0;

    // The start-up check (_check_enough_kv_cache_memory over (num_blocks - 1) whole blocks, since
    // vLLM PR #47272): one request of max_model_len must fit in the usable blocks; when it does
    // not, the error names the longest length that does (_estimate_max_model_len_from_groups,
    // over the same usable blocks), 0 if not even one token does.
    const auto fits = [&](std::uint64_t len) {
        return detail::vllm_request_blocks(c, len, o.mamba_cache_mode) <= c.usable_blocks;
    };
    c.enough_memory = c.usable_blocks > 0 && fits(c.max_model_len);
    c.estimated_max_model_len = c.max_model_len;
    if (!c.enough_memory) {
        std::uint64_t est = 0;
        if (c.usable_blocks > 0 && fits(1)) {
            std::uint64_t lo = 1, hi = c.max_model_len;  // fits(lo), !fits(hi)
            while (hi - lo > 1) {
                const std::uint64_t mid = lo + (hi - lo) / 2;
                (fits(mid) ? lo : hi) = mid;
            }
            est = lo;
        }
        c.estimated_max_model_len = est;
    }

    // The log line (get_kv_cache_capacity / _report_kv_cache_config): the null block is not
    // subtracted there.
    c.max_concurrency =
        static_cast<double>(c.num_blocks) / static_cast<double>(c.blocks_per_request);
    if (o.token_report == VllmTokenReport::concurrency_times_length) {
        // A double at or past 2^64 has no integer to convert to (the conversion is undefined,
        // and printed 0 for an override of 2^64 - 1 blocks).
        const double tokens = c.max_concurrency * static_cast<double>(c.max_model_len);
        if (!(tokens < 18446744073709551616.0))
            throw OverflowError(
                detail::text("size overflow: vLLM's KV token count (", c.num_blocks, " blocks",
                             c.blocks_overridden ? ", --num-gpu-blocks-override" : "",
                             ") exceeds 2^64 - 1 tokens"));
        c.kv_cache_tokens = static_cast<std::uint64_t>(tokens);
    } else {
        std::uint32_t min_block = std::numeric_limits<std::uint32_t>::max();
        for (std::uint32_t i = 0; i < c.num_kinds; ++i)
            min_block = std::min(min_block, c.kinds[i].block_size);
        c.kv_cache_tokens = detail::mul(c.num_blocks / c.num_groups, min_block, "a token count");
    }
    if (c.enough_memory) {
        // The admission core on this pool: a request of max_model_len tokens, its prompt in
        // chunks of max_num_batched_tokens (vLLM's chunked prefill).
        const std::uint64_t len = c.max_model_len;
        const std::uint64_t prompt =
            o.prompt_tokens != 0 ? std::min(o.prompt_tokens, len) : (len > 1 ? len - 1 : 1);
        const std::uint64_t new_tokens = len > prompt ? len - prompt + 1 : 1;
        const RequestNeed need = request_need(vllm_block_pool(c, o), prompt, new_tokens, 0,
                                              o.max_num_batched_tokens.value_or(8192));
        c.blocks_to_admit = need.peak;
        c.blocks_held = need.steady;
        if (need.peak <= c.usable_blocks)
            c.admitted = need.steady == 0 ? c.usable_blocks / need.peak
                                          : 1 + (c.usable_blocks - need.peak) / need.steady;
    }
    return c;
}

/// vLLM's KV cache with the same KV memory on every GPU.
[[nodiscard]] constexpr VllmKvCache vllm_kv_cache(const Model& m, KvFormat f, const Layout& l,
                                                  Bytes available, const VllmOptions& o = {}) {
    return vllm_kv_cache(m, f, l, std::span<const Bytes>(&available, 1), o);
}

}  // namespace kvplan
