#pragma once

// Weight bytes: each tensor in its format (weights/format.hpp), for the whole model as stored and
// for one rank of a parallel layout, per stage. The per-rank rules (vLLM's tensor-parallel layers,
// vocabulary padding, pipeline edges, expert placement) are listed in weights.hpp.

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>

#include "../detail/checked.hpp"
#include "../error.hpp"
#include "../layout.hpp"
#include "../model.hpp"
#include "../units.hpp"
#include "format.hpp"
#include "tensors.hpp"

namespace kvplan {

namespace detail {

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
    if (t.stored_bytes != 0) return {.value_bits = static_cast<std::uint16_t>(t.stored_bytes * 8)};
    if (t.group == ParamGroup::lm_head && o.lm_head_format)
        return encoding(*o.lm_head_format, o.layout);
    // Embeddings, norms, biases and the router stay 16-bit, or 32-bit in an all-fp32 model.
    if (!t.linear || t.group == ParamGroup::router)
        return {.value_bits = static_cast<std::uint16_t>(o.format == WeightFormat::fp32 ? 32 : 16)};
    WeightFormat f = o.format;
    const auto pick = [&](const std::optional<WeightFormat>& g) {
        if (g) f = *g;
    };
    switch (t.group) {
        case ParamGroup::routed_experts:
            pick(o.expert_format);
            break;
        case ParamGroup::attention:
            pick(o.attention_format);
            // The output projection is attention's one row-parallel linear layer.
            if (t.split == TpSplit::row) pick(o.attention_output_format);
            break;
        case ParamGroup::shared_experts:
            pick(o.shared_expert_format);
            break;
        case ParamGroup::dense_mlp:
            pick(o.dense_mlp_format);
            break;
        case ParamGroup::other:
            pick(o.mixer_format);
            break;
        default:
            break;
    }
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

[[nodiscard]] constexpr Bytes bytes_per_expert(const Model& m, const WeightOptions& o = {}) {
    const ModelConfig& c = m.config();
    if (c.moe.experts == 0) return {};
    Bytes b{};
    const auto add = [&](const detail::WeightTensor& t) {
        b += detail::encoded_bytes(detail::tensor_encoding(t, o), t.rows, t.cols, 1);
    };
    detail::emit_mlp(add, c, ParamGroup::routed_experts, c.moe.expert_intermediate_size, 1,
                     detail::expert_model_width(c));
    return b;
}

/// Parameters one token uses: everything but the routed experts it is not sent to, i.e. the total
/// less (experts - experts_per_token) experts on every MoE layer (how Mixtral's 12.9B and
/// DeepSeek-V3's 37B "active" figures are counted). Equals total_params for a dense model.

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
