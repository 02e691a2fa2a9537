#pragma once

// The model's tensors, counted from its shapes: every linear layer, norm, router, expert and
// embedding as a WeightTensor in its ParamGroup, and the parameter counts they sum to. What is
// counted, layer by layer, is listed in weights.hpp; the bytes they take are weights/bytes.hpp's.

#include <array>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "../detail/checked.hpp"
#include "../detail/enum_table.hpp"
#include "../error.hpp"
#include "../fixed_array.hpp"
#include "../model.hpp"
#include "../units.hpp"

namespace kvplan {

/// Where parameters sit in a model.
enum class ParamGroup : std::uint8_t {
    embedding,
    lm_head,
    attention,
    dense_mlp,
    routed_experts,
    shared_experts,
    router,
    norms,
    other,   ///< extra_params (Mamba / linear-attention mixers, attention sinks, ...)
    vision,  ///< a multimodal model's vision tower and projector (vision_params)
};

inline constexpr std::size_t param_group_count = 10;

/// Each group's spelling.
inline constexpr FixedArray<detail::EnumName<ParamGroup>, param_group_count> param_group_names{{
    {ParamGroup::embedding, "embedding"},
    {ParamGroup::lm_head, "lm_head"},
    {ParamGroup::attention, "attention"},
    {ParamGroup::dense_mlp, "dense_mlp"},
    {ParamGroup::routed_experts, "routed_experts"},
    {ParamGroup::shared_experts, "shared_experts"},
    {ParamGroup::router, "router"},
    {ParamGroup::norms, "norms"},
    {ParamGroup::other, "other"},
    {ParamGroup::vision, "vision"},
}};

[[nodiscard]] constexpr std::string_view name(ParamGroup g) noexcept {
    return detail::enum_name(param_group_names, g);
}

/// A quantity (a parameter count or Bytes) for each ParamGroup.
template <class T>
struct PerGroup {
    T embedding{};
    T lm_head{};
    T attention{};
    T dense_mlp{};
    T routed_experts{};
    T shared_experts{};
    T router{};
    T norms{};
    T other{};
    T vision{};

    /// The entry of group `g`.
    [[nodiscard]] constexpr T& operator[](ParamGroup g) noexcept {
        switch (g) {
            case ParamGroup::embedding:
                return embedding;
            case ParamGroup::lm_head:
                return lm_head;
            case ParamGroup::attention:
                return attention;
            case ParamGroup::dense_mlp:
                return dense_mlp;
            case ParamGroup::routed_experts:
                return routed_experts;
            case ParamGroup::shared_experts:
                return shared_experts;
            case ParamGroup::router:
                return router;
            case ParamGroup::norms:
                return norms;
            case ParamGroup::other:
                return other;
            case ParamGroup::vision:
                return vision;
        }
        return other;
    }
    [[nodiscard]] constexpr const T& operator[](ParamGroup g) const noexcept {
        return const_cast<PerGroup&>(*this)[g];
    }

    /// The sum over every group; throws OverflowError past 2^64 - 1.
    [[nodiscard]] constexpr T total() const {
        T t{};
        for (std::size_t i = 0; i < param_group_count; ++i) t = plus(t, (*this)[ParamGroup(i)]);
        return t;
    }

    friend constexpr bool operator==(const PerGroup&, const PerGroup&) = default;

   private:
    static constexpr T plus(T a, T b) {
        if constexpr (std::is_same_v<T, Bytes>) {
            return a + b;
        } else {
            return detail::add(a, b, "a parameter count");
        }
    }
};

/// Parameters per group.
using ParamCounts = PerGroup<std::uint64_t>;
/// Weight bytes per group.
using WeightBytes = PerGroup<Bytes>;

namespace detail {

/// How tensor parallelism divides a tensor.
enum class TpSplit : std::uint8_t {
    replicated,  ///< whole on every rank
    column,      ///< output rows divided (by heads when `heads` is set)
    row,         ///< input columns divided
    vocab,       ///< vocabulary rows, padded to 64, divided
};

/// One tensor of the model (or `copies` identical ones, such as the experts of a layer).
struct WeightTensor {
    ParamGroup group = ParamGroup::other;
    TpSplit split = TpSplit::replicated;
    std::uint64_t rows = 0;    ///< output features; a vector's length
    std::uint64_t cols = 1;    ///< input features; 1 for a vector
    std::uint64_t copies = 1;  ///< identical tensors (routed experts)
    std::uint32_t heads = 0;   ///< column split by heads: rows = heads x head size
    bool linear = false;       ///< a linear layer of a block, stored in the chosen format
    /// Bytes per value whatever the format (0: the format's): 4 for DeepSeek-V4's fp32
    /// hyper-connections, router bias, attention sinks and compressor APE tables, 8 for its int64
    /// tid2eid tables.
    std::uint8_t stored_bytes = 0;
};

/// Bytes of an entry of DeepSeek-V4's tid2eid tables as its checkpoint stores them (int64:
/// DeepSeek-V4-Flash's model.safetensors.index.json and the reference inference/model.py).
inline constexpr std::uint8_t hash_table_entry_bytes = 8;

/// A linear layer of `rows` x `cols` (out x in), plus its bias of `rows` when `bias`.
template <class Fn>
constexpr void emit_linear(Fn& fn, ParamGroup g, TpSplit split, std::uint64_t rows,
                           std::uint64_t cols, bool bias, std::uint64_t copies = 1,
                           std::uint32_t heads = 0) {
    fn(WeightTensor{g, split, rows, cols, copies, heads, true});
    // Column-parallel biases split with their rows; row-parallel ones stay whole on every rank.
    if (bias)
        fn(WeightTensor{g, split == TpSplit::column ? TpSplit::column : TpSplit::replicated, rows,
                        1, copies, heads, false});
}

template <class Fn>
constexpr void emit_vector(Fn& fn, ParamGroup g, std::uint64_t length,
                           std::uint8_t stored_bytes = 0) {
    if (length != 0) fn(WeightTensor{g, TpSplit::replicated, length, 1, 1, 0, false, stored_bytes});
}

/// One hyper-connection mixer of DeepSeek-V4 (hc_attn, hc_ffn or hc_head: its fn, base and scale)
/// mixing `hc` streams of `h` into `mixes` coefficients with `scales` scales: replicated on
/// every rank, and fp32 in DeepSeek's checkpoints (its reference inference code builds hc_attn_fn,
/// hc_attn_base, hc_attn_scale, their hc_ffn twins and hc_head_* in float32).
template <class Fn>
constexpr void emit_hyper_connection(Fn& fn, std::uint64_t hc, std::uint64_t h, std::uint64_t mixes,
                                     std::uint64_t scales) {
    const std::uint64_t width = mul(hc, h, "a hyper-connection's width");
    fn(WeightTensor{ParamGroup::other, TpSplit::replicated, mixes, width, 1, 0, false, 4});
    fn(WeightTensor{ParamGroup::other, TpSplit::replicated, mixes, 1, 1, 0, false, 4});
    fn(WeightTensor{ParamGroup::other, TpSplit::replicated, scales, 1, 1, 0, false, 4});
}

/// A layer's hyper-connections: hc_attn and hc_ffn, each (2 + hc) x hc mixes (pre, post and the
/// hc x hc combination) over hc x hidden inputs and 3 scales.
template <class Fn>
constexpr void emit_layer_hyper_connections(Fn& fn, const ModelConfig& c) {
    if (c.hc_mult == 0) return;
    const std::uint64_t hc = c.hc_mult;
    for (int k = 0; k < 2; ++k) emit_hyper_connection(fn, hc, c.hidden_size, (2 + hc) * hc, 3);
}

/// The width the routed experts read and write: a LatentMoE's latent, else the hidden size.
[[nodiscard]] constexpr std::uint64_t expert_model_width(const ModelConfig& c) noexcept {
    return c.moe.latent_size != 0 ? c.moe.latent_size : c.hidden_size;
}

/// An MLP of width `width` with `copies` identical experts, reading and writing `model_width`
/// features (0: the hidden size).
template <class Fn>
constexpr void emit_mlp(Fn& fn, const ModelConfig& c, ParamGroup g, std::uint64_t width,
                        std::uint64_t copies, std::uint64_t model_width = 0) {
    const std::uint64_t h = model_width != 0 ? model_width : c.hidden_size;
    const std::uint32_t up_matrices = c.mlp == MlpKind::gated ? 2 : 1;
    for (std::uint32_t k = 0; k < up_matrices; ++k)
        emit_linear(fn, g, TpSplit::column, width, h, c.mlp_bias, copies);
    emit_linear(fn, g, TpSplit::row, h, width, c.mlp_bias, copies);
}

[[nodiscard]] constexpr std::uint64_t shared_expert_width(const MoeShape& moe) {
    if (moe.shared_intermediate_size != 0) return moe.shared_intermediate_size;
    return mul(moe.shared_experts, moe.expert_intermediate_size, "a shared expert width");
}

/// A DeepSeek-V4 compressor of `ratio` over `dim` (vLLM's DeepseekCompressor,
/// vllm/model_executor/layers/deepseek_compressor.py): ape (ratio x coff x dim, coff 2 at ratio 4,
/// fp32: DeepSeek's reference inference/model.py builds it float32 and the checkpoint stores it
/// so), fused_wkv_wgate (2 x coff x dim from the hidden state), its RMSNorm; replicated. Its wkv
/// and wgate stay 16-bit beside the checkpoint's fp8 layers (BF16 in DeepSeek's safetensors), as
/// the indexer's weights_proj does: not linear layers a format applies to.
template <class Fn>
constexpr void emit_v4_compressor(Fn& fn, std::uint64_t ratio, std::uint64_t dim, std::uint64_t h) {
    const std::uint64_t coff = ratio == 4 ? 2 : 1;
    emit_vector(fn, ParamGroup::attention, mul(ratio, coff * dim, "a compressor's ape"), 4);
    fn(WeightTensor{ParamGroup::attention, TpSplit::replicated, 2 * coff * dim, h, 1, 0, false});
    emit_vector(fn, ParamGroup::attention, dim);
}

/// DeepSeek-V4's attention (vLLM's DeepseekV4Attention, vllm/model_executor/models/deepseek_v4.py):
/// wq_a and wkv (fused_wqa_wkv, replicated), q_norm and kv_norm, wq_b to the heads, the grouped
/// output wo_a (o_groups x o_lora_rank from each group's heads) then wo_b, one attention sink per
/// head (fp32: attn_sink is float32 in the reference model.py and in vLLM); a pool's compressor,
/// and on an indexed layer the indexer: wq_b, weights_proj and its own compressor.
template <class Fn>
constexpr void emit_compressed_mla(Fn& fn, const ModelConfig& c, const CacheSpec& spec) {
    constexpr auto attn = ParamGroup::attention;
    const std::uint64_t h = c.hidden_size;
    const std::uint64_t heads = c.num_heads;
    const std::uint64_t dim = std::uint64_t{spec.kv_lora_rank} + spec.qk_rope_head_dim;
    const std::uint64_t q_lora = c.mla.q_lora_rank;
    const std::uint64_t groups = c.mla.o_groups != 0 ? c.mla.o_groups : 1;
    const std::uint64_t out_rank = mul(groups, c.mla.o_lora_rank, "wo_a's rows");
    emit_linear(fn, attn, TpSplit::replicated, q_lora, h, false);
    emit_linear(fn, attn, TpSplit::replicated, dim, h, false);
    emit_vector(fn, attn, q_lora);
    emit_vector(fn, attn, dim);
    const std::uint64_t q_width = mul(heads, dim, "wq_b's rows");
    emit_linear(fn, attn, TpSplit::column, q_width, q_lora, false, 1, c.num_heads);
    emit_linear(fn, attn, TpSplit::column, out_rank, q_width / groups, false, 1,
                static_cast<std::uint32_t>(groups));
    emit_linear(fn, attn, TpSplit::row, h, out_rank, false);
    emit_vector(fn, attn, heads, 4);
    if (spec.compress_ratio != 0) emit_v4_compressor(fn, spec.compress_ratio, dim, h);
    if (spec.index_head_dim != 0) {
        const std::uint64_t idx = spec.index_head_dim;
        emit_linear(fn, attn, TpSplit::replicated, mul(c.mla.index_n_heads, idx, "wq_b's rows"),
                    q_lora, false);
        fn(WeightTensor{attn, TpSplit::replicated, c.mla.index_n_heads, h, 1, 0, false});
        emit_v4_compressor(fn, spec.compress_ratio, idx, h);
    }
}

/// Layer `layer`'s share of extra_params: an exact partition over the layers that hold them (the
/// constant-state layers if any, else every layer).
[[nodiscard]] constexpr std::uint64_t extra_params_of_layer(const Model& m, std::uint32_t layer) {
    const std::uint64_t extra = m.config().extra_params;
    if (extra == 0) return 0;
    const bool any_state = m.layers().layers_of_kind(CacheKind::constant_state) > 0;
    const auto holds = [&](std::uint32_t i) {
        return !any_state || m.layer(i).kind == CacheKind::constant_state;
    };
    if (!holds(layer)) return 0;
    std::uint64_t holders = 0;
    std::uint64_t before = 0;
    for (std::uint32_t i = 0; i < m.num_layers(); ++i) {
        if (!holds(i)) continue;
        if (i < layer) ++before;
        ++holders;
    }
    return mul(extra, before + 1, "extra_params") / holders -
           mul(extra, before, "extra_params") / holders;
}

/// Calls fn(WeightTensor) for every tensor of layer `layer` but its share of extra_params: what
/// every layer of the same class (layer_class) has alike.
template <class Fn>
constexpr void for_each_class_tensor(const Model& m, std::uint32_t layer, Fn&& fn) {
    const ModelConfig& c = m.config();
    const CacheSpec& spec = m.layer(layer);
    const std::uint64_t h = c.hidden_size;
    const std::uint64_t heads = c.num_heads;
    const bool qkv_bias = c.attention_bias != AttentionBias::none;
    const bool o_bias = c.attention_bias == AttentionBias::qkvo;
    constexpr auto attn = ParamGroup::attention;

    switch (spec.kind) {
        case CacheKind::full_attention:
        case CacheKind::sliding_window:
        case CacheKind::chunked_local: {
            // Queries are as wide as the layer's keys (Gemma 4's full layers have 512-wide heads,
            // its sliding ones 256).
            const std::uint64_t qd = spec.k_head_dim;
            emit_linear(fn, attn, TpSplit::column, heads * qd, h, qkv_bias, 1, c.num_heads);
            emit_linear(fn, attn, TpSplit::column, std::uint64_t{spec.kv_heads} * spec.k_head_dim,
                        h, qkv_bias, 1, spec.kv_heads);
            emit_linear(fn, attn, TpSplit::column, std::uint64_t{spec.kv_heads} * spec.v_head_dim,
                        h, qkv_bias, 1, spec.kv_heads);
            emit_linear(fn, attn, TpSplit::row, h, heads * spec.v_head_dim, o_bias);
            if (c.qk_norm) {
                emit_vector(fn, ParamGroup::norms, qd);
                emit_vector(fn, ParamGroup::norms, spec.k_head_dim);
            }
            if (spec.index_head_dim != 0) {
                // MiniMax-M3's indexer (MinimaxM3QKVParallelLinearWithIndexer in vLLM's
                // model_executor/layers/linear.py, fused into qkv_proj): index_q_proj of one
                // index head per KV head, split as the KV heads are; index_k_proj of one head,
                // replicated; index_q_norm and index_k_norm of index_head_dim.
                const std::uint64_t idx = spec.index_head_dim;
                emit_linear(fn, attn, TpSplit::column, std::uint64_t{spec.kv_heads} * idx, h, false,
                            1, spec.kv_heads);
                emit_linear(fn, attn, TpSplit::replicated, idx, h, false);
                emit_vector(fn, ParamGroup::norms, idx);
                emit_vector(fn, ParamGroup::norms, idx);
            }
            break;
        }
        case CacheKind::mla_latent: {
            if (is_compressed_mla(spec)) {
                emit_compressed_mla(fn, c, spec);
                break;
            }
            const std::uint64_t rope = spec.qk_rope_head_dim;
            const std::uint64_t q_per_head = c.mla.qk_nope_head_dim + rope;
            if (c.mla.q_lora_rank != 0) {
                emit_linear(fn, attn, TpSplit::replicated, c.mla.q_lora_rank, h, false);
                emit_vector(fn, attn, c.mla.q_lora_rank);  // q_a_layernorm
                emit_linear(fn, attn, TpSplit::column, heads * q_per_head, c.mla.q_lora_rank, false,
                            1, c.num_heads);
            } else {
                emit_linear(fn, attn, TpSplit::column, heads * q_per_head, h, false, 1,
                            c.num_heads);
            }
            emit_linear(fn, attn, TpSplit::replicated, spec.kv_lora_rank + rope, h, false);
            emit_vector(fn, attn, spec.kv_lora_rank);  // kv_a_layernorm
            emit_linear(fn, attn, TpSplit::column,
                        heads * (std::uint64_t{c.mla.qk_nope_head_dim} + c.mla.v_head_dim),
                        spec.kv_lora_rank, false, 1, c.num_heads);
            emit_linear(fn, attn, TpSplit::row, h, heads * c.mla.v_head_dim, false);
            if (spec.index_head_dim != 0) {
                // DeepSeek-V3.2's indexer (vLLM's Indexer in deepseek_v2.py, replicated on every
                // rank): wq_b from the query latent to index_n_heads keys, wk, its LayerNorm
                // k_norm (weight and bias), and weights_proj to one weight per indexer head.
                const std::uint64_t idx = spec.index_head_dim;
                const std::uint64_t q_in = c.mla.q_lora_rank != 0 ? c.mla.q_lora_rank : h;
                emit_linear(fn, attn, TpSplit::replicated, c.mla.index_n_heads * idx, q_in, false);
                emit_linear(fn, attn, TpSplit::replicated, idx, h, false);
                emit_vector(fn, attn, 2 * idx);
                emit_linear(fn, attn, TpSplit::replicated, c.mla.index_n_heads, h, false);
            }
            break;
        }
        case CacheKind::shared: {
            // A layer reading another layer's cache still projects its own queries and output,
            // and keeps its K and V projections where the checkpoint has them (Gemma-3n).
            const std::uint64_t qd = m.query_head_dim();
            emit_linear(fn, attn, TpSplit::column, heads * qd, h, qkv_bias, 1, c.num_heads);
            if (spec.kv_heads != 0) {
                emit_linear(fn, attn, TpSplit::column,
                            std::uint64_t{spec.kv_heads} * spec.k_head_dim, h, qkv_bias, 1,
                            spec.kv_heads);
                emit_linear(fn, attn, TpSplit::column,
                            std::uint64_t{spec.kv_heads} * spec.v_head_dim, h, qkv_bias, 1,
                            spec.kv_heads);
                if (c.qk_norm) {
                    emit_vector(fn, ParamGroup::norms, qd);
                    emit_vector(fn, ParamGroup::norms, spec.k_head_dim);
                }
            }
            emit_linear(fn, attn, TpSplit::row, h, heads * qd, o_bias);
            break;
        }
        case CacheKind::constant_state:
            break;  // the mixer is in extra_params
        case CacheKind::mlp_only:
            break;  // no mixer at all
    }

    if (!m.has_mlp(layer)) {
        // A mixer-only block (Nemotron-H, Mamba): no MLP.
    } else if (c.moe.is_moe_layer(layer)) {
        const MoeShape& moe = c.moe;
        emit_linear(fn, ParamGroup::router, TpSplit::replicated, moe.experts, h, false);
        if (moe.is_hash_layer(layer)) {
            // DeepSeek-V4's hash-routed layers (vLLM's DeepseekV4MoE: gate.tid2eid, replicated, no
            // correction bias): the experts of each token id, int64 in DeepSeek's checkpoint.
            // vLLM loads it as int32 (engine/vllm_deepseek_v4.hpp, vllm_hash_table_narrowing).
            fn(WeightTensor{ParamGroup::router, TpSplit::replicated, c.vocab_size,
                            moe.experts_per_token, 1, 0, false, hash_table_entry_bytes});
        } else if (moe.router_bias) {
            emit_vector(fn, ParamGroup::router, moe.experts, moe.router_bias_fp32 ? 4 : 0);
        }
        emit_mlp(fn, c, ParamGroup::routed_experts, moe.expert_intermediate_size, moe.experts,
                 expert_model_width(c));
        if (moe.latent_size != 0) {
            // LatentMoE (vLLM's NemotronHMoE, nemotron_h.py): the router reads the hidden state,
            // fc1_latent_proj takes it down to the latent the experts work in and
            // fc2_latent_proj back up; both replicated on every rank, once per layer, not per
            // expert.
            emit_linear(fn, ParamGroup::other, TpSplit::replicated, moe.latent_size, h, c.mlp_bias);
            emit_linear(fn, ParamGroup::other, TpSplit::replicated, h, moe.latent_size, c.mlp_bias);
        }
        const std::uint64_t shared = shared_expert_width(moe);
        if (shared != 0) emit_mlp(fn, c, ParamGroup::shared_experts, shared, 1);
    } else {
        emit_mlp(fn, c, ParamGroup::dense_mlp, c.intermediate_size, 1);
    }

    const std::uint64_t norm_width = c.norm == NormKind::layer ? 2 * h : h;
    for (std::uint32_t k = 0; k < c.norms_per_layer; ++k)
        emit_vector(fn, ParamGroup::norms, norm_width);
    emit_layer_hyper_connections(fn, c);
}

/// The tensor of layer `layer`'s share of extra_params (a row-split linear layer), if it has one.
template <class Fn>
constexpr void for_each_extra_tensor(const Model& m, std::uint32_t layer, Fn&& fn) {
    const std::uint64_t extra = extra_params_of_layer(m, layer);
    if (extra != 0) fn(WeightTensor{ParamGroup::other, TpSplit::row, 1, extra, 1, 0, true});
}

/// Calls fn(WeightTensor) for every tensor of layer `layer`.
template <class Fn>
constexpr void for_each_layer_tensor(const Model& m, std::uint32_t layer, Fn&& fn) {
    for_each_class_tensor(m, layer, fn);
    for_each_extra_tensor(m, layer, fn);
}

/// Layers whose tensors (extra_params aside) are alike share a class: the same cache spec, MLP
/// and MoE (a hash-routed MoE layer apart). At most max_cache_specs x 4 classes.
inline constexpr std::uint32_t max_layer_classes = max_cache_specs * 4;

[[nodiscard]] constexpr std::uint32_t layer_class(const Model& m, std::uint32_t layer) {
    const MoeShape& moe = m.config().moe;
    const std::uint32_t mlp = !m.has_mlp(layer)          ? 0
                              : moe.is_hash_layer(layer) ? 3
                              : moe.is_moe_layer(layer)  ? 2
                                                         : 1;
    return m.layers().spec_of_layer[layer] * 4 + mlp;
}

/// Calls fn for the embedding (`embedding`), the final norm and the LM head (`head`): the tensors
/// outside the layers. `head_copy_of_tied` adds a tied model's embedding again as its LM head.
template <class Fn>
constexpr void for_each_edge_tensor(const Model& m, bool embedding, bool head,
                                    bool head_copy_of_tied, Fn&& fn) {
    const ModelConfig& c = m.config();
    const auto table = [&](ParamGroup g) {
        fn(WeightTensor{g, TpSplit::vocab, c.vocab_size, c.hidden_size, 1, 0, false});
    };
    if (embedding) table(ParamGroup::embedding);
    // The vision tower runs where the embedding does, on the first stage; its linear layers
    // split over TP as vLLM's vision towers split theirs (an even split of the count).
    if (embedding && c.vision_params != 0)
        fn(WeightTensor{ParamGroup::vision, TpSplit::row, 1, c.vision_params, 1, 0, false});
    if (head) {
        // DeepSeek-V4's hc_head collapses the streams before the final norm: hc mixes, 1 scale.
        if (c.hc_mult != 0) emit_hyper_connection(fn, c.hc_mult, c.hidden_size, c.hc_mult, 1);
        emit_vector(fn, ParamGroup::norms,
                    c.norm == NormKind::layer ? 2 * c.hidden_size : c.hidden_size);
        if (!c.tie_embeddings || head_copy_of_tied) table(ParamGroup::lm_head);
    }
}

[[nodiscard]] constexpr std::uint64_t tensor_params(const WeightTensor& t) {
    return mul(mul(t.rows, t.cols, "a parameter count"), t.copies, "a parameter count");
}

}  // namespace detail

/// Parameters of every group. Counts the model's own tensors, unpadded, tied embeddings once.
[[nodiscard]] constexpr ParamCounts count_params(const Model& m) {
    ParamCounts pc;
    const auto add = [&](const detail::WeightTensor& t) {
        pc[t.group] = detail::add(pc[t.group], detail::tensor_params(t), "a parameter count");
    };
    for (std::uint32_t i = 0; i < m.num_layers(); ++i) detail::for_each_layer_tensor(m, i, add);
    detail::for_each_edge_tensor(m, true, true, false, add);
    return pc;
}

/// All parameters of the model (count_params(m).total()).
[[nodiscard]] constexpr std::uint64_t total_params(const Model& m) {
    return count_params(m).total();
}

/// Layers with a routed MoE MLP (0 for a dense model).
[[nodiscard]] constexpr std::uint32_t moe_layer_count(const Model& m) noexcept {
    std::uint32_t n = 0;
    for (std::uint32_t i = 0; i < m.num_layers(); ++i) n += m.is_moe_layer(i) ? 1 : 0;
    return n;
}

/// Parameters of one routed expert in one layer, biases included (0 for a dense model).
[[nodiscard]] constexpr std::uint64_t params_per_expert(const Model& m) {
    const ModelConfig& c = m.config();
    if (c.moe.experts == 0) return 0;
    std::uint64_t n = 0;
    const auto add = [&](const detail::WeightTensor& t) {
        n = detail::add(n, detail::mul(t.rows, t.cols, "a parameter count"), "a parameter count");
    };
    detail::emit_mlp(add, c, ParamGroup::routed_experts, c.moe.expert_intermediate_size, 1,
                     detail::expert_model_width(c));
    return n;
}

/// Bytes of one routed expert in one layer under `o` (the expert format if set), whole (no TP).

[[nodiscard]] constexpr std::uint64_t active_params(const Model& m) {
    const MoeShape& moe = m.config().moe;
    const std::uint64_t idle = detail::mul(
        detail::mul(params_per_expert(m), moe.experts - moe.experts_per_token, "active params"),
        moe_layer_count(m), "active params");
    return total_params(m) - idle;
}

/// Weight bytes of the whole model, per group, as stored (no padding, tied embeddings once). An
/// override replaces the total: override_bytes exactly, or the computed bytes scaled by
/// override_params / total_params; the groups scale with it (the remainder of rounding goes to
/// `other`). Throws InvalidInput if both overrides are set.

}  // namespace kvplan
