#pragma once

// `kvplan size` as one library call: the KV bytes per token, per sequence and for every sequence,
// of the whole model and of the fullest GPU, the weights beside them, and the terms each figure
// sums (per kind of layer: the shape the formula reads and the bytes it gives), so that an
// explanation shows the figures the answer used and cannot drift from them. `kvplan compare` is
// this call over several models, KV dtypes and weight formats (plan/compare.hpp).

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "../dtype.hpp"
#include "../engine/kind.hpp"
#include "../engine/release.hpp"
#include "../engine/served_kv.hpp"
#include "../kv_bytes.hpp"
#include "../layout.hpp"
#include "../model.hpp"
#include "../paging.hpp"
#include "../units.hpp"
#include "../weights.hpp"

namespace kvplan {

/// What a size is asked of: sequences of `context` tokens, `concurrency` of them.
struct SizeRequest {
    /// Tokens per sequence; nullopt: the model's context limit (kvplan::context_limit).
    std::optional<std::uint64_t> context{};
    std::uint64_t concurrency = 1;
    /// Tokens per block: above 1, the paged figure of the fullest GPU is given too.
    std::uint32_t block_size = 1;
    /// The weight format; nullopt: the checkpoint's own (checkpoint_weights).
    std::optional<WeightOptions> weights{};
    /// The engine whose "auto" gives the KV format when none is given (served_kv), at its release
    /// (nullopt: vllm_newest_release). A size names no engine: vLLM's newest release by default.
    Engine engine = Engine::vllm;
    std::optional<EngineVersion> engine_version{};
};

/// One kind of layer's part of a figure on one shard: the cache shape the formula reads, the
/// layers of that kind the shard holds, and the bytes one such layer gives.
struct SizeTerm {
    CacheSpec spec{};            ///< the layer kind: heads, dims, window, latent, indexer, state
    std::uint32_t layers = 0;    ///< layers of this kind on the shard
    std::uint32_t kv_heads = 0;  ///< attention kinds: KV heads one rank holds (of spec.kv_heads)
    Bytes k_bytes{};             ///< attention kinds: one head's K vector of one token
    Bytes v_bytes{};             ///< attention kinds: one head's V vector of one token
    Bytes latent_bytes{};        ///< MLA: the latent of one token (kv_lora_rank + qk_rope_head_dim)
    Bytes indexer_bytes{};       ///< MLA with a sparse indexer: its key of one token
    Bytes per_token{};           ///< one layer, one token (layer_bytes_per_token)
    std::uint64_t tokens_kept = 0;  ///< of the sequence's tokens on the rank (windows cap them)
    Bytes state{};                  ///< one layer's fixed state per sequence on the rank
    Bytes per_sequence{};           ///< one layer, one sequence (layer_bytes_per_sequence)
    Bytes layers_per_token{};       ///< every layer of the kind, one token: layers x per_token
    Bytes layers_per_sequence{};  ///< every layer of the kind, one sequence: layers x per_sequence
};

/// A shard's figures and the terms they sum: per_token = sum of layers_per_token, per_sequence =
/// sum of layers_per_sequence.
struct SizeBreakdown {
    Shard shard{};
    /// The shard's layers of the model: first_layer to last_layer, both held (shard.end_layer may
    /// pass the model's count, as the whole model's shard does).
    std::uint32_t first_layer = 0;
    std::uint32_t last_layer = 0;
    std::uint32_t stage = 0;        ///< the pipeline stage of the shard (0 for the whole model)
    std::uint64_t tokens = 0;       ///< tokens of a sequence
    std::uint64_t tokens_held = 0;  ///< of them on one rank (ceil(tokens / dcp))
    std::vector<SizeTerm> terms{};  ///< one per kind of layer with layers on the shard
    Bytes per_token{};
    Bytes per_sequence{};
};

/// One kind of layer of the whole model, at TP 1 and on a rank of the layout's TP degree.
struct LayerKindSize {
    CacheSpec spec{};
    std::uint32_t layers = 0;   ///< layers of this kind in the model
    Bytes per_token{};          ///< one layer, one token, at TP 1
    Bytes per_token_per_gpu{};  ///< the same on one TP rank
    Bytes state{};              ///< one layer's fixed state per sequence, at TP 1
    Bytes state_per_gpu{};      ///< the same on one TP rank
};

/// One pipeline stage: its layers and what each of its GPUs holds.
struct StageSize {
    std::uint32_t first_layer = 0;
    std::uint32_t layers = 0;
    Bytes per_token{};     ///< per GPU of the stage
    Bytes per_sequence{};  ///< per GPU of the stage
};

/// Every figure of `kvplan size`.
struct SizeAnswer {
    std::uint64_t context = 0;  ///< tokens per sequence, as asked or the model's limit
    std::uint64_t concurrency = 1;
    KvFormat kv{};
    KvSource kv_source = KvSource::given;  ///< where kv came from (SizeRequest::engine)
    ParallelConfig parallel{};

    Bytes per_token{};                        ///< KV per token, whole model
    Bytes per_token_per_gpu{};                ///< the largest over stages of one GPU's share
    Bytes per_sequence{};                     ///< KV per sequence, whole model
    Bytes per_sequence_per_gpu{};             ///< on a GPU of the busiest stage
    Bytes total{};                            ///< per_sequence x concurrency
    Bytes total_per_gpu{};                    ///< per_sequence_per_gpu x concurrency
    std::uint32_t busiest_stage = 0;          ///< the stage of per_sequence_per_gpu
    std::optional<PagedUse> paged_per_gpu{};  ///< with a block size above 1

    /// The terms of per_token and per_sequence (whole model), of per_token_per_gpu (its stage) and
    /// of per_sequence_per_gpu (the busiest stage).
    SizeBreakdown whole{};
    SizeBreakdown per_token_rank{};
    SizeBreakdown per_sequence_rank{};
    std::vector<LayerKindSize> layer_kinds{};  ///< every kind of layer of the model
    std::vector<StageSize> stages{};           ///< one per pipeline stage

    /// The KV heads of the first attention kind with fewer heads than TP ranks: each rank then
    /// holds one replicated head, so the cache per GPU stops shrinking at that TP degree.
    std::optional<std::uint32_t> replicated_kv_heads{};

    WeightOptions weights{};
    bool weights_from_checkpoint = true;  ///< the request gave no format
    WeightBytes weight_bytes{};           ///< whole model, by part
    Bytes weight_bytes_per_gpu{};         ///< the fullest rank
    std::uint64_t params = 0;             ///< parameters of the model
};

/// The terms of `m`'s KV bytes on `s` for sequences of `tokens`, stage `stage` named with them.
[[nodiscard]] inline SizeBreakdown size_breakdown(const Model& m, KvFormat f, std::uint64_t tokens,
                                                  const Shard& s = {}, std::uint32_t stage = 0) {
    SizeBreakdown b;
    b.shard = s;
    b.stage = stage;
    b.tokens = tokens;
    b.tokens_held = tokens_on_rank(tokens, s);
    b.first_layer = s.first_layer;
    const std::uint32_t end = std::min(s.end_layer, m.num_layers());
    b.last_layer = end > s.first_layer ? end - 1 : s.first_layer;
    const LayerStack& L = m.layers();
    const auto count = detail::layers_per_spec(m, s);
    for (std::uint32_t k = 0; k < L.num_specs; ++k) {
        if (count[k] == 0) continue;
        const CacheSpec& sp = L.specs[k];
        SizeTerm t;
        t.spec = sp;
        t.layers = static_cast<std::uint32_t>(count[k]);
        if (sp.kind == CacheKind::full_attention || sp.kind == CacheKind::sliding_window ||
            sp.kind == CacheKind::chunked_local) {
            t.kv_heads = kv_heads_per_rank(sp.kv_heads, s.tp);
            t.k_bytes = vector_bytes(f, sp.k_head_dim);
            t.v_bytes = vector_bytes(f, sp.v_head_dim);
        }
        if (sp.kind == CacheKind::mla_latent) t.latent_bytes = mla_latent_bytes(sp, f);
        t.indexer_bytes = index_key_bytes(sp);
        t.per_token = layer_bytes_per_token(sp, f, s.tp);
        t.tokens_kept = tokens_kept(sp, b.tokens_held);
        t.state = layer_state_bytes(sp, s.tp);
        t.per_sequence = layer_bytes_per_sequence(sp, f, b.tokens_held, s.tp);
        t.layers_per_token = t.per_token * t.layers;
        t.layers_per_sequence = t.per_sequence * t.layers;
        b.per_token += t.layers_per_token;
        b.per_sequence += t.layers_per_sequence;
        b.terms.push_back(t);
    }
    return b;
}

/// Every figure of `kvplan size` for `m` with its KV cache in `kv` (nullopt: what r.engine's
/// "auto" stores for the checkpoint, served_kv), laid out as `p` (the KV and weights of tp x pp;
/// dcp splits a sequence's tokens), under `r`. Throws Overflow when a figure passes 2^64 - 1
/// bytes, and what Layout throws for a layout the model does not take.
[[nodiscard]] inline SizeAnswer size(const Model& m, std::optional<KvFormat> kv,
                                     const ParallelConfig& p, const SizeRequest& r = {}) {
    const Layout layout(m, p);
    SizeAnswer a;
    a.context = r.context ? *r.context : context_limit(m.config()).tokens;
    a.concurrency = r.concurrency;
    const ServedKv served = served_kv(m, kv, r.engine, r.engine_version);
    const KvFormat f = served.format;
    a.kv = f;
    a.kv_source = served.source;
    a.parallel = p;

    a.whole = size_breakdown(m, f, a.context);
    a.per_token = a.whole.per_token;
    a.per_sequence = a.whole.per_sequence;
    a.total = a.per_sequence * a.concurrency;

    // Per token the busiest stage may differ from the one at this context when windows cap some
    // layers: each figure is its own maximum over stages, with the terms of that stage.
    a.busiest_stage = busiest_stage(m, f, layout, a.context);
    std::uint32_t token_stage = 0;
    for (std::uint32_t st = 0; st < layout.pp(); ++st) {
        const Bytes b = kv_bytes_per_token(m, f, layout.stage(st));
        if (b > a.per_token_per_gpu) {
            a.per_token_per_gpu = b;
            token_stage = st;
        }
    }
    a.per_token_rank = size_breakdown(m, f, a.context, layout.stage(token_stage), token_stage);
    a.per_sequence_rank =
        size_breakdown(m, f, a.context, layout.stage(a.busiest_stage), a.busiest_stage);
    a.per_sequence_per_gpu = a.per_sequence_rank.per_sequence;
    a.total_per_gpu = a.per_sequence_per_gpu * a.concurrency;
    if (r.block_size > 1)
        a.paged_per_gpu =
            paged_sequence(m, f, a.context, r.block_size, layout.stage(a.busiest_stage));

    const LayerStack& L = m.layers();
    const std::uint32_t tp = layout.stage(0).tp;
    for (std::uint32_t k = 0; k < L.num_specs; ++k) {
        const CacheSpec& sp = L.specs[k];
        a.layer_kinds.push_back({.spec = sp,
                                 .layers = L.layers_with_spec(k),
                                 .per_token = layer_bytes_per_token(sp, f, 1),
                                 .per_token_per_gpu = layer_bytes_per_token(sp, f, tp),
                                 .state = layer_state_bytes(sp, 1),
                                 .state_per_gpu = layer_state_bytes(sp, tp)});
        const bool attention = sp.kind == CacheKind::full_attention ||
                               sp.kind == CacheKind::sliding_window ||
                               sp.kind == CacheKind::chunked_local;
        if (attention && tp > sp.kv_heads && !a.replicated_kv_heads)
            a.replicated_kv_heads = sp.kv_heads;
    }
    for (std::uint32_t st = 0; st < layout.pp(); ++st) {
        const Shard s = layout.stage(st);
        const std::uint32_t end = std::min(s.end_layer, m.num_layers());
        a.stages.push_back({.first_layer = s.first_layer,
                            .layers = end - s.first_layer,
                            .per_token = kv_bytes_per_token(m, f, s),
                            .per_sequence = kv_bytes_per_sequence(m, f, a.context, s)});
    }

    a.weights_from_checkpoint = !r.weights.has_value();
    a.weights = r.weights ? *r.weights : checkpoint_weights(m);
    a.weight_bytes = weight_bytes(m, a.weights);
    a.weight_bytes_per_gpu = max_weight_bytes_per_rank(m, layout, a.weights);
    a.params = total_params(m);
    return a;
}

}  // namespace kvplan
