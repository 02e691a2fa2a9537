#pragma once

// Parameters and weight bytes, counted tensor by tensor from the model's shapes, for the whole
// model and for one rank of a parallel layout.
//
// What is counted, per layer (names as in Hugging Face checkpoints):
//   attention   q: hidden x heads x query_head_dim; k, v: hidden x kv_heads x k/v_head_dim;
//               o: heads x v_head_dim x hidden; biases per AttentionBias.
//   MLA         q_a (hidden x q_lora_rank) + q_a_layernorm + q_b (q_lora_rank x heads x
//               (qk_nope + qk_rope)), or q_proj (hidden x heads x (qk_nope + qk_rope)) when
//               q_lora_rank is 0; kv_a_proj_with_mqa (hidden x (kv_lora_rank + qk_rope));
//               kv_a_layernorm; kv_b (kv_lora_rank x heads x (qk_nope + v_head_dim)); o.
//   MLP         gated: gate, up, down (3 matrices); plain: up, down (2); biases if mlp_bias.
//   MoE layers  the router (hidden x experts, + bias), every routed expert, the shared experts.
//   norms       norms_per_layer x hidden (x2 for LayerNorm, which has a bias), q/k norms.
// plus the embedding, an untied LM head, the final norm, extra_params (spread over the
// constant-state layers if the model has any, since they hold the Mamba / linear-attention mixers
// those parameters describe, else over every layer), and a multimodal model's vision tower
// (vision_params, 16-bit, on the first pipeline stage). Chunked-local layers have the weights of
// full attention; MLP-only layers have no attention; under MlpLayers::mlp_only the mixer layers
// have no MLP.
//
// Weight formats apply to the linear layers of the blocks. The embedding, the LM head, norms,
// biases and the router stay 16-bit, as vLLM's fp8 and AWQ checkpoints keep them.
//
// Per rank (vLLM's tensor-parallel layers, vllm/model_executor/layers/linear.py): column-parallel
// matrices (q, k, v, gate, up, q_b, kv_b) split their output rows, row-parallel ones (o, down)
// split their input columns and keep their full bias on every rank; k and v keep one whole head
// per rank when tp exceeds kv_heads (QKVParallelLinear replicates them); MLA's q_a and kv_a, the
// router, norms and biases of row-parallel layers are replicated. The embedding and LM head are
// split by vocabulary after padding it to a multiple of 64 (vocab_parallel_embedding.py,
// pad_vocab_size). Under pipeline parallelism the first stage holds the embedding, the last one the
// final norm and the LM head; with tied embeddings and more than one stage the last stage holds its
// own copy of the embedding for the LM head (vllm/model_executor/models/llama.py: embed_tokens is
// built `if is_first_rank or (tie_word_embeddings and is_last_rank)`).
//
// Under a layout's Placement (layout.hpp) each part splits over its own degree: attention over the
// attention group, the dense MLP, shared experts, embedding and LM head as the engine places them,
// and the routed experts spread over ep (the fullest GPU holds ceil((experts + redundant) / ep)),
// each split expert_tp ways. Alike layers are counted once and multiplied.

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

#include "detail/checked.hpp"
#include "error.hpp"
#include "layout.hpp"
#include "model.hpp"
#include "units.hpp"
#include "weight_format.hpp"

namespace kvplan {

/// The storage cost of a format: bits per value plus its scales.
struct WeightEncoding {
    std::uint16_t value_bits = 16;
    std::uint32_t group_size = 0;          ///< input features per group; 0: no per-group scales
    std::uint16_t group_bits = 0;          ///< scale (+ zero point) bits per group per output row
    std::uint16_t channel_scale_bits = 0;  ///< scale bits per output row
    std::uint16_t tensor_scale_bits = 0;   ///< scale bits per matrix
    std::uint32_t block = 0;               ///< square blocks of block x block weights; 0: none
    std::uint16_t block_bits = 0;          ///< scale bits per block
};

/// The encoding of `f` laid out as `q`. int4 follows AWQ's layout (GPTQ's is the same but for a
/// g_idx of one int32 per input row, under 0.01 bits per weight, not counted): per group of 128
/// inputs of one output row, an fp16 scale and a 4-bit zero point packed eight to an int32, so
/// 4 + (16 + 4) / 128 = 4.15625 bits per weight; symmetric checkpoints (W4A16 without zero points)
/// keep the scale only. mxfp4 is 4 + 8 / 32 = 4.25 bits per weight; nvfp4 4 + 8 / 16 = 4.5, with
/// one fp32 scale per matrix more. fp8 keeps one fp32 scale per matrix, per output channel, or
/// per 128 x 128 block (DeepSeek-V3: 8 + 32 / 16,384 = 8.002 bits per weight).
[[nodiscard]] constexpr WeightEncoding encoding(WeightFormat f, const QuantLayout& q = {}) noexcept {
    switch (f) {
        case WeightFormat::fp32:
            return {.value_bits = 32};
        case WeightFormat::bf16:
        case WeightFormat::fp16:
            return {.value_bits = 16};
        case WeightFormat::fp8:
            if (q.fp8_block != 0) return {.value_bits = 8, .block = q.fp8_block, .block_bits = 32};
            if (q.fp8_per_channel) return {.value_bits = 8, .channel_scale_bits = 32};
            return {.value_bits = 8, .tensor_scale_bits = 32};
        case WeightFormat::int8:
            return {.value_bits = 8, .channel_scale_bits = 32};
        case WeightFormat::int4:
            return {.value_bits = 4,
                    .group_size = q.group_size != 0 ? q.group_size : 128,
                    .group_bits = static_cast<std::uint16_t>(q.int4_zero_points ? 20 : 16)};
        case WeightFormat::mxfp4:
            return {.value_bits = 4, .group_size = q.group_size != 0 ? q.group_size : 32,
                    .group_bits = 8};
        case WeightFormat::nvfp4:
            return {.value_bits = 4, .group_size = q.group_size != 0 ? q.group_size : 16,
                    .group_bits = 8, .tensor_scale_bits = 32};
    }
    return {};
}

/// How to size the weights: the format of the blocks' linear layers, optionally others for the
/// routed experts and for attention, the scales' layout, and optionally a figure the user knows
/// better than the config. Embeddings, the LM head, norms, biases and routers stay 16-bit (32-bit in
/// an all-fp32 model), as quantized checkpoints keep them.
struct WeightOptions {
    WeightFormat format = WeightFormat::bf16;  ///< linear layers of the blocks
    std::optional<WeightFormat>
        expert_format{};                ///< routed experts, if not `format` (gpt-oss: mxfp4)
    std::optional<WeightFormat> attention_format{};  ///< attention, if not `format`
    QuantLayout layout{};               ///< group sizes and scale layout of quantized formats
    std::uint64_t override_params = 0;  ///< nonzero: the true parameter count; bytes scale to it
    Bytes override_bytes{};  ///< nonzero: the true total bytes; per-rank bytes scale to it
};

/// The weight options of a checkpoint's own format (bf16 when the config says nothing).
[[nodiscard]] constexpr WeightOptions checkpoint_weights(const CheckpointFormat& c) {
    WeightOptions w;
    w.format = c.linear;
    if (c.experts != c.linear) w.expert_format = c.experts;
    if (c.attention != c.linear) w.attention_format = c.attention;
    w.layout = c.layout;
    return w;
}

/// The weight options of `m`'s checkpoint (ModelConfig::checkpoint).
[[nodiscard]] constexpr WeightOptions checkpoint_weights(const Model& m) {
    return checkpoint_weights(m.config().checkpoint);
}

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
};

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
constexpr void emit_vector(Fn& fn, ParamGroup g, std::uint64_t length) {
    if (length != 0) fn(WeightTensor{g, TpSplit::replicated, length, 1, 1, 0, false});
}

/// An MLP of width `width` with `copies` identical experts.
template <class Fn>
constexpr void emit_mlp(Fn& fn, const ModelConfig& c, ParamGroup g, std::uint64_t width,
                        std::uint64_t copies) {
    const std::uint64_t h = c.hidden_size;
    const std::uint32_t up_matrices = c.mlp == MlpKind::gated ? 2 : 1;
    for (std::uint32_t k = 0; k < up_matrices; ++k)
        emit_linear(fn, g, TpSplit::column, width, h, c.mlp_bias, copies);
    emit_linear(fn, g, TpSplit::row, h, width, c.mlp_bias, copies);
}

[[nodiscard]] constexpr std::uint64_t shared_expert_width(const MoeShape& moe) {
    if (moe.shared_intermediate_size != 0) return moe.shared_intermediate_size;
    return mul(moe.shared_experts, moe.expert_intermediate_size, "a shared expert width");
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
            const std::uint64_t qd = m.query_head_dim();
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
            break;
        }
        case CacheKind::mla_latent: {
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
        if (moe.router_bias) emit_vector(fn, ParamGroup::router, moe.experts);
        emit_mlp(fn, c, ParamGroup::routed_experts, moe.expert_intermediate_size, moe.experts);
        const std::uint64_t shared = shared_expert_width(moe);
        if (shared != 0) emit_mlp(fn, c, ParamGroup::shared_experts, shared, 1);
    } else {
        emit_mlp(fn, c, ParamGroup::dense_mlp, c.intermediate_size, 1);
    }

    const std::uint64_t norm_width = c.norm == NormKind::layer ? 2 * h : h;
    for (std::uint32_t k = 0; k < c.norms_per_layer; ++k)
        emit_vector(fn, ParamGroup::norms, norm_width);
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
/// and MoE. At most max_cache_specs x 3 classes.
inline constexpr std::uint32_t max_layer_classes = max_cache_specs * 3;

[[nodiscard]] constexpr std::uint32_t layer_class(const Model& m, std::uint32_t layer) {
    const std::uint32_t mlp = !m.has_mlp(layer) ? 0 : m.config().moe.is_moe_layer(layer) ? 2 : 1;
    return m.layers().spec_of_layer[layer] * 3 + mlp;
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
        emit_vector(fn, ParamGroup::norms,
                    c.norm == NormKind::layer ? 2 * c.hidden_size : c.hidden_size);
        if (!c.tie_embeddings || head_copy_of_tied) table(ParamGroup::lm_head);
    }
}

[[nodiscard]] constexpr std::uint64_t tensor_params(const WeightTensor& t) {
    return mul(mul(t.rows, t.cols, "a parameter count"), t.copies, "a parameter count");
}

/// Bytes of `copies` tensors of rows x cols in `enc`, each matrix rounded up to whole bytes.
[[nodiscard]] constexpr Bytes encoded_bytes(WeightEncoding enc, std::uint64_t rows,
                                            std::uint64_t cols, std::uint64_t copies) {
    constexpr const char* what = "weight bytes";
    std::uint64_t bits = mul(mul(rows, cols, what), enc.value_bits, what);
    if (enc.group_size != 0)
        bits = add(bits, mul(mul(rows, ceil_div(cols, enc.group_size), what), enc.group_bits, what),
                   what);
    bits = add(bits, mul(rows, enc.channel_scale_bits, what), what);
    bits = add(bits, enc.tensor_scale_bits, what);
    if (enc.block != 0)
        bits = add(bits,
                   mul(mul(ceil_div(rows, enc.block), ceil_div(cols, enc.block), what),
                       enc.block_bits, what),
                   what);
    return Bytes::exactly(mul(ceil_div(bits, 8), copies, what));
}

/// The encoding a tensor is stored in under `o`.
[[nodiscard]] constexpr WeightEncoding tensor_encoding(const WeightTensor& t,
                                                       const WeightOptions& o) noexcept {
    // Embeddings, norms, biases and the router stay 16-bit, or 32-bit in an all-fp32 model.
    if (!t.linear || t.group == ParamGroup::router)
        return {.value_bits = static_cast<std::uint16_t>(o.format == WeightFormat::fp32 ? 32 : 16)};
    WeightFormat f = o.format;
    if (t.group == ParamGroup::routed_experts && o.expert_format) f = *o.expert_format;
    if (t.group == ParamGroup::attention && o.attention_format) f = *o.attention_format;
    return encoding(f, o.layout);
}

/// How one GPU holds each part of a layer (from a Placement), or the whole model as stored.
struct RankParts {
    bool whole = true;            ///< the model as stored: nothing split, no vocabulary padding
    std::uint32_t attention = 1;  ///< also extra_params' mixers and the vision tower
    std::uint32_t dense_mlp = 1;
    std::uint32_t shared_experts = 1;
    std::uint32_t embedding = 1;
    std::uint32_t lm_head = 1;
    std::uint32_t expert_tp = 1;
    std::uint64_t experts = 0;  ///< routed experts per MoE layer on the GPU
};

/// The parts of the fullest GPU of placement `p` (the GPU with the most experts).
[[nodiscard]] constexpr RankParts rank_parts(const Placement& p) noexcept {
    return {.whole = false,
            .attention = p.attention_tp,
            .dense_mlp = p.dense_mlp_tp,
            .shared_experts = p.shared_expert_tp,
            .embedding = p.embedding_tp,
            .lm_head = p.lm_head_tp,
            .expert_tp = p.expert_tp,
            .experts = p.experts_per_gpu};
}

/// The TP degree tensors of group `g` are split over under `p`.
[[nodiscard]] constexpr std::uint32_t degree_of(const RankParts& p, ParamGroup g) noexcept {
    switch (g) {
        case ParamGroup::dense_mlp:
            return p.dense_mlp;
        case ParamGroup::shared_experts:
            return p.shared_experts;
        case ParamGroup::routed_experts:
            return p.expert_tp;
        case ParamGroup::embedding:
            return p.embedding;
        case ParamGroup::lm_head:
            return p.lm_head;
        default:
            return p.attention;
    }
}

/// Rows and columns of `t` that one rank of TP degree `tp` holds.
struct RankSlice {
    std::uint64_t rows;
    std::uint64_t cols;
};

[[nodiscard]] constexpr RankSlice rank_slice(const WeightTensor& t, std::uint32_t tp) {
    switch (t.split) {
        case TpSplit::replicated:
            return {t.rows, t.cols};
        case TpSplit::column:
            if (t.heads != 0) return {t.rows / t.heads * kv_heads_per_rank(t.heads, tp), t.cols};
            return {ceil_div(t.rows, tp), t.cols};
        case TpSplit::row:
            return {t.rows, ceil_div(t.cols, tp)};
        case TpSplit::vocab:
            return {ceil_div(ceil_div(t.rows, 64) * 64, tp), t.cols};
    }
    return {t.rows, t.cols};
}

constexpr void check_options(const Model& m, const WeightOptions& o) {
    if (o.override_params != 0 && !o.override_bytes.is_zero())
        throw_field_error<InvalidInput>(model_where(m.config()), "weights",
                                        "at most one of override_params and override_bytes",
                                        "both");
}

/// floor(a x b / c) for c > 0, exact without a 128-bit type; throws OverflowError when the result
/// does not fit in 64 bits.
[[nodiscard]] constexpr std::uint64_t mul_div(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
    KVPLAN_EXPECTS(c != 0);
    const std::uint64_t whole = mul(a / c, b, "a scaled size");
    const std::uint64_t part = a % c;  // < c, so part x b / c < b: no overflow below
    // Long multiplication over the bits of b, keeping quotient q and remainder r of part x (bits
    // so far) by c.
    std::uint64_t q = 0;
    std::uint64_t r = 0;
    for (int bit = 63; bit >= 0; --bit) {
        q <<= 1;
        if (r >= c - r) {
            q += 1;
            r -= c - r;
        } else {
            r += r;
        }
        if ((b >> bit) & 1U) {
            if (r >= c - part) {
                q += 1;
                r -= c - part;
            } else {
                r += part;
            }
        }
    }
    return add(whole, q, "a scaled size");
}

/// `b` scaled by num / den, rounded down; for user overrides, where a ratio is all there is.
[[nodiscard]] constexpr Bytes scaled(Bytes b, std::uint64_t num, std::uint64_t den) {
    return Bytes::exactly(mul_div(b.count(), num, den));
}

/// `wb` scaled by num / den group by group, rounded down, with the rounding remainder in `other`
/// so that the total is exactly floor(total x num / den).
[[nodiscard]] constexpr WeightBytes scaled(const WeightBytes& wb, std::uint64_t num,
                                           std::uint64_t den) {
    WeightBytes out;
    for (std::size_t i = 0; i < param_group_count; ++i)
        out[ParamGroup(i)] = scaled(wb[ParamGroup(i)], num, den);
    out.other += scaled(wb.total(), num, den) - out.total();
    return out;
}

/// Bytes of tensor `t` on a GPU holding `parts` under `o`.
[[nodiscard]] constexpr Bytes tensor_bytes(const WeightTensor& t, const RankParts& parts,
                                           const WeightOptions& o) {
    if (parts.whole) return encoded_bytes(tensor_encoding(t, o), t.rows, t.cols, t.copies);
    const RankSlice s = rank_slice(t, degree_of(parts, t.group));
    const std::uint64_t copies = t.group == ParamGroup::routed_experts ? parts.experts : t.copies;
    return encoded_bytes(tensor_encoding(t, o), s.rows, s.cols, copies);
}

/// Weight bytes before any override of layers [first, end) and the edge tensors asked for, on a GPU
/// holding `parts` (or the whole model as stored). Alike layers (layer_class) are counted once and
/// multiplied, so the cost is per class, not per layer.
[[nodiscard]] constexpr WeightBytes computed_weight_bytes(const Model& m, const WeightOptions& o,
                                                          const RankParts& parts,
                                                          std::uint32_t first, std::uint32_t end,
                                                          bool embedding, bool head,
                                                          bool head_copy_of_tied) {
    WeightBytes wb;
    const auto add_tensor = [&](const WeightTensor& t) {
        wb[t.group] += tensor_bytes(t, parts, o);
    };
    std::array<std::uint32_t, max_layer_classes> count{};
    std::array<std::uint32_t, max_layer_classes> example{};
    const bool extras = m.config().extra_params != 0;
    for (std::uint32_t i = first; i < end; ++i) {
        const std::uint32_t k = layer_class(m, i);
        if (count[k]++ == 0) example[k] = i;
        if (extras) for_each_extra_tensor(m, i, add_tensor);
    }
    for (std::uint32_t k = 0; k < max_layer_classes; ++k) {
        if (count[k] == 0) continue;
        WeightBytes one;
        for_each_class_tensor(m, example[k], [&](const WeightTensor& t) {
            one[t.group] += tensor_bytes(t, parts, o);
        });
        for (std::size_t g = 0; g < param_group_count; ++g)
            wb[ParamGroup(g)] += one[ParamGroup(g)] * count[k];
    }
    for_each_edge_tensor(m, embedding, head, head_copy_of_tied, add_tensor);
    return wb;
}

[[nodiscard]] constexpr WeightBytes whole_model_computed(const Model& m, const WeightOptions& o) {
    return computed_weight_bytes(m, o, RankParts{}, 0, m.num_layers(), true, true, false);
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
    detail::emit_mlp(add, c, ParamGroup::routed_experts, c.moe.expert_intermediate_size, 1);
    return n;
}

/// Bytes of one routed expert in one layer under `o` (the expert format if set), whole (no TP).
[[nodiscard]] constexpr Bytes bytes_per_expert(const Model& m, const WeightOptions& o = {}) {
    const ModelConfig& c = m.config();
    if (c.moe.experts == 0) return {};
    Bytes b{};
    const auto add = [&](const detail::WeightTensor& t) {
        b += detail::encoded_bytes(detail::tensor_encoding(t, o), t.rows, t.cols, 1);
    };
    detail::emit_mlp(add, c, ParamGroup::routed_experts, c.moe.expert_intermediate_size, 1);
    return b;
}

/// Parameters one token uses: everything but the routed experts it is not sent to, i.e. the total
/// less (experts - experts_per_token) experts on every MoE layer (how Mixtral's 12.9B and
/// DeepSeek-V3's 37B "active" figures are counted). Equals total_params for a dense model.
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
[[nodiscard]] constexpr WeightBytes weight_bytes(const Model& m, const WeightOptions& o = {}) {
    detail::check_options(m, o);
    const WeightBytes computed = detail::whole_model_computed(m, o);
    if (o.override_params == 0 && o.override_bytes.is_zero()) return computed;
    const Bytes target = !o.override_bytes.is_zero()
                             ? o.override_bytes
                             : detail::scaled(computed.total(), o.override_params, total_params(m));
    return detail::scaled(computed, target.count(), computed.total().count());
}

/// Weight bytes each rank of pipeline stage `stage` holds under `layout`: its layers' TP shards,
/// plus the embedding on the first stage and the final norm and LM head on the last (tied
/// embeddings: a copy on the last stage too when pp > 1). Vocabulary rows are padded to 64 as vLLM
/// pads them. With an override, scaled by (override total) / (computed whole-model total), as
/// weight_bytes scales.
[[nodiscard]] constexpr WeightBytes weight_bytes_per_rank(const Model& m, const Layout& layout,
                                                          std::uint32_t stage,
                                                          const WeightOptions& o = {}) {
    detail::check_options(m, o);
    const Shard s = layout.stage(stage);
    const bool first = stage == 0;
    const bool last = stage + 1 == layout.pp();
    const WeightBytes computed = detail::computed_weight_bytes(
        m, o, detail::rank_parts(layout.placement()), s.first_layer,
        std::min(s.end_layer, m.num_layers()), first, last, last && !first);
    if (o.override_params == 0 && o.override_bytes.is_zero()) return computed;
    const Bytes whole = detail::whole_model_computed(m, o).total();
    const Bytes target = !o.override_bytes.is_zero()
                             ? o.override_bytes
                             : detail::scaled(whole, o.override_params, total_params(m));
    return detail::scaled(computed, target.count(), whole.count());
}

/// The weight bytes of a rank of every pipeline stage of a layout (weight_bytes_per_rank of each),
/// computed together: alike layers are counted once for the whole model.
struct StageWeights {
    std::array<WeightBytes, max_pipeline_stages> stages{};
    std::uint32_t num_stages = 0;
    [[nodiscard]] constexpr const WeightBytes& operator[](std::uint32_t s) const {
        KVPLAN_EXPECTS(s < num_stages);
        return stages[s];
    }
    /// The fullest stage's total.
    [[nodiscard]] constexpr Bytes most() const {
        Bytes b{};
        for (std::uint32_t s = 0; s < num_stages; ++s) b = std::max(b, stages[s].total());
        return b;
    }
};

/// weight_bytes_per_rank(m, layout, s, o) for every stage s.
[[nodiscard]] constexpr StageWeights weight_bytes_per_stage(const Model& m, const Layout& layout,
                                                            const WeightOptions& o = {}) {
    detail::check_options(m, o);
    const detail::RankParts parts = detail::rank_parts(layout.placement());
    // One walk per class of layer, then each stage sums its classes.
    std::array<std::uint32_t, detail::max_layer_classes> example{};
    std::array<bool, detail::max_layer_classes> seen{};
    for (std::uint32_t i = 0; i < m.num_layers(); ++i) {
        const std::uint32_t k = detail::layer_class(m, i);
        if (!seen[k]) example[k] = i;
        seen[k] = true;
    }
    // Default-initialized (each entry zero): g++ 12 refuses value-initializing this array in a
    // constant expression.
    std::array<WeightBytes, detail::max_layer_classes> per_class;
    for (std::uint32_t k = 0; k < detail::max_layer_classes; ++k)
        if (seen[k])
            detail::for_each_class_tensor(m, example[k], [&](const detail::WeightTensor& t) {
                per_class[k][t.group] += detail::tensor_bytes(t, parts, o);
            });
    const bool override = o.override_params != 0 || !o.override_bytes.is_zero();
    Bytes whole{}, target{};
    if (override) {
        whole = detail::whole_model_computed(m, o).total();
        target = !o.override_bytes.is_zero()
                     ? o.override_bytes
                     : detail::scaled(whole, o.override_params, total_params(m));
    }
    const bool extras = m.config().extra_params != 0;
    StageWeights sw;
    sw.num_stages = layout.pp();
    for (std::uint32_t st = 0; st < layout.pp(); ++st) {
        const Shard s = layout.stage(st);
        WeightBytes wb;
        const auto add_tensor = [&](const detail::WeightTensor& t) {
            wb[t.group] += detail::tensor_bytes(t, parts, o);
        };
        std::array<std::uint32_t, detail::max_layer_classes> count{};
        const std::uint32_t end = std::min(s.end_layer, m.num_layers());
        for (std::uint32_t i = s.first_layer; i < end; ++i) {
            ++count[detail::layer_class(m, i)];
            if (extras) detail::for_each_extra_tensor(m, i, add_tensor);
        }
        for (std::uint32_t k = 0; k < detail::max_layer_classes; ++k)
            if (count[k] != 0)
                for (std::size_t g = 0; g < param_group_count; ++g)
                    wb[ParamGroup(g)] += per_class[k][ParamGroup(g)] * count[k];
        const bool first = st == 0;
        const bool last = st + 1 == layout.pp();
        detail::for_each_edge_tensor(m, first, last, last && !first, add_tensor);
        sw.stages[st] = override ? detail::scaled(wb, target.count(), whole.count()) : wb;
    }
    return sw;
}

/// The most weight bytes any rank of `layout` holds: what the tightest GPU must fit.
[[nodiscard]] constexpr Bytes max_weight_bytes_per_rank(const Model& m, const Layout& layout,
                                                        const WeightOptions& o = {}) {
    return weight_bytes_per_stage(m, layout, o).most();
}

}  // namespace kvplan
