#pragma once

// Roofline lower bounds for decode and prefill on a replica. A step cannot be faster than reading
// the bytes it must read at the GPU's peak memory bandwidth, nor than doing its FLOPs at the peak
// dense tensor throughput; on every rank the larger of the two bounds the step, and the slowest
// rank bounds the replica.
//
//   bytes read on a rank  = its weights, except the input embedding table (a lookup reads only the
//                           batch's rows, left out here so the bound stays a bound); for a MoE
//                           layer only the experts the batch touches, E x (1 - (1 - k/E)^B) in
//                           expectation for B tokens routed uniformly, not all E and not only k;
//                         + the KV cache of every sequence at its own length (windows cap sliding
//                           layers; constant state counts once).
//   FLOPs on a rank       = 2 x (parameters of the rank's matrix products one token uses) x B
//                           (for MoE, k experts per token), + attention: for each layer and
//                           sequence, 2 x heads x (k_dim + v_dim) x the tokens it attends to
//                           (MLA decodes in its absorbed form: 2 x heads x (2 x kv_lora_rank +
//                           qk_rope_head_dim) x tokens).
//
// The bound uses peak figures only. An achievable-efficiency factor gives an estimate beside it;
// the bound never uses one. Tensor-parallel all-reduce time is reported as its own figure and not
// added: it is not a lower bound on anything additive (it overlaps other work in some engines,
// and at small batches its latency, not its bandwidth, dominates, which a bandwidth figure does

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "../budget/replica.hpp"
#include "../detail/checked.hpp"
#include "../detail/enum_table.hpp"
#include "../detail/scale.hpp"
#include "../gpu.hpp"
#include "../kv_bytes.hpp"
#include "../layout.hpp"
#include "../model.hpp"
#include "../units.hpp"
#include "../weights.hpp"

namespace kvplan {

/// Achievable fractions of peak bandwidth and of peak FLOP/s, for an estimate beside the bound.
struct Efficiency {
    double bandwidth = 1.0;  ///< in (0, 1]
    double compute = 1.0;    ///< in (0, 1]
};

/// What bounds a step.
enum class Bound : std::uint8_t { memory, compute };

/// Each bound's spelling.
inline constexpr FixedArray<detail::EnumName<Bound>, 2> bound_names{{
    {Bound::memory, "memory"},
    {Bound::compute, "compute"},
}};

/// "memory" or "compute".
[[nodiscard]] constexpr std::string_view name(Bound b) noexcept {
    return detail::enum_name(bound_names, b);
}

/// Options of the roofline.
struct RooflineOptions {
    ComputeDtype compute = ComputeDtype::bf16;  ///< the tensor-core type the matmuls run in
    Bytes activation_element = Bytes::exactly(2);  ///< bytes of one activation value (all-reduce messages)
    std::optional<Efficiency> efficiency{};      ///< an estimate beside the bound
};

/// Expected distinct experts a batch of `tokens` routes to in one MoE layer of `experts` experts,
/// `k` per token, uniformly: E x (1 - (1 - k/E)^B).
[[nodiscard]] constexpr double expected_experts_touched(std::uint32_t experts, std::uint32_t k,
                                                        std::uint64_t tokens) noexcept {
    if (experts == 0) return 0.0;
    const double miss = 1.0 - static_cast<double>(k) / static_cast<double>(experts);
    // (1 - k/E)^B by squaring.
    double p = 1.0, base = miss;
    for (std::uint64_t b = tokens; b != 0; b >>= 1) {
        if (b & 1U) p *= base;
        base *= base;
    }
    return static_cast<double>(experts) * (1.0 - p);
}

namespace detail {

/// Matrix-product parameters one token uses on a rank of stage `stage`: the linear layers of its
/// layers (k of the E routed experts per MoE layer) and, on the last stage, the LM head.
struct RankMatmulParams {
    double dense = 0.0;   ///< everything but the routed experts
    double routed = 0.0;  ///< k experts per MoE layer
};

[[nodiscard]] constexpr RankMatmulParams rank_matmul_params(const Model& m, const Layout& l,
                                                            std::uint32_t stage) {
    const Shard s = l.stage(stage);
    const ModelConfig& c = m.config();
    RankMatmulParams p;
    const auto add = [&](const WeightTensor& t) {
        const bool matmul = t.linear || t.group == ParamGroup::lm_head;
        if (!matmul || t.cols == 1) return;  // vectors: norms and biases
        const RankSlice sl = rank_slice(t, s.tp);
        const double per_copy = static_cast<double>(sl.rows) * static_cast<double>(sl.cols);
        if (t.group == ParamGroup::routed_experts) p.routed += per_copy * c.moe.experts_per_token;
        else p.dense += per_copy * static_cast<double>(t.copies);
    };
    for (std::uint32_t i = s.first_layer; i < shard_end(m, s); ++i) for_each_layer_tensor(m, i, add);
    // On the last stage the LM head multiplies; a tied model's table serves as its LM head.
    if (stage + 1 == l.pp()) for_each_edge_tensor(m, false, true, true, add);
    return p;
}

/// Attention FLOPs of one token attending to a sequence of `tokens` on a shard: each layer's
/// heads on the rank x 2 x (score and value dimensions) x the tokens the layer keeps.
[[nodiscard]] constexpr double attention_flops_per_token(const Model& m, const Shard& s,
                                                         std::uint64_t tokens) {
    const double heads = static_cast<double>(m.config().num_heads / s.tp);
    // Per layer shape, times the shard's layers of that shape (a sweep calls this per point).
    const FixedArray<std::uint64_t, max_cache_specs> count = layers_per_spec(m, s);
    double f = 0.0;
    for (std::uint32_t k = 0; k < m.layers().num_specs; ++k) {
        if (count[k] == 0) continue;
        const CacheSpec& spec = m.layers().specs[k];
        const double kept = static_cast<double>(tokens_kept(spec, tokens));
        const double layers = static_cast<double>(count[k]);
        switch (spec.kind) {
            case CacheKind::full_attention:
            case CacheKind::sliding_window:
            case CacheKind::chunked_local:
                f += 2.0 * heads * (spec.k_head_dim + spec.v_head_dim) * kept * layers;
                break;
            case CacheKind::mla_latent:
                f += 2.0 * heads * (2.0 * spec.kv_lora_rank + spec.qk_rope_head_dim) * kept *
                     layers;
                break;
            case CacheKind::constant_state:
            case CacheKind::shared:
            case CacheKind::mlp_only: break;
        }
    }
    return f;
}

/// Attention FLOPs of prefilling a prompt of `tokens` causally: token i attends to min(i, window)
/// tokens, so a layer does the per-token cost summed over i = 1..tokens.
[[nodiscard]] constexpr double prefill_attention_flops(const Model& m, const Shard& s,
                                                       std::uint64_t tokens) {
    const double heads = static_cast<double>(m.config().num_heads / s.tp);
    const auto causal_sum = [](std::uint64_t n, std::uint64_t cap) {
        const double nn = static_cast<double>(n);
        if (n <= cap) return nn * (nn + 1.0) / 2.0;
        const double w = static_cast<double>(cap);
        return w * (w + 1.0) / 2.0 + (nn - w) * w;
    };
    double f = 0.0;
    for (std::uint32_t i = s.first_layer; i < shard_end(m, s); ++i) {
        const CacheSpec& spec = m.layer(i);
        const std::uint64_t cap = spec.kind == CacheKind::sliding_window
                                      ? spec.window
                                      : std::numeric_limits<std::uint64_t>::max();
        switch (spec.kind) {
            case CacheKind::full_attention:
            case CacheKind::sliding_window:
                f += 2.0 * heads * (spec.k_head_dim + spec.v_head_dim) * causal_sum(tokens, cap);
                break;
            case CacheKind::chunked_local: {
                // Token i attends to the tokens of its chunk up to itself: each full chunk of C
                // sums 1..C, the last partial chunk of r sums 1..r.
                const std::uint64_t full = tokens / spec.window, r = tokens % spec.window;
                const double per = causal_sum(spec.window, spec.window);
                f += 2.0 * heads * (spec.k_head_dim + spec.v_head_dim) *
                     (static_cast<double>(full) * per + causal_sum(r, r));
                break;
            }
            case CacheKind::mla_latent: {
                // Prefill runs MLA unabsorbed: per head a (nope + rope) score and a v_head_dim value.
                const double qk = m.config().mla.qk_nope_head_dim + spec.qk_rope_head_dim;
                f += 2.0 * heads * (qk + m.config().mla.v_head_dim) * causal_sum(tokens, cap);
                break;
            }
            case CacheKind::constant_state:
            case CacheKind::shared:
            case CacheKind::mlp_only: break;
        }
    }
    return f;
}

/// Weight bytes a step reads on a rank of `stage` when `tokens` tokens pass: the rank's weights
/// less the input embedding table (unless it is also the LM head), with routed experts scaled to
/// the expected share the tokens touch.
struct WeightRead {
    Bytes resident{};      ///< weight_bytes_per_rank
    Bytes dense{};         ///< read in full
    Bytes experts{};       ///< routed experts held on the rank
    double experts_touched = 0.0;  ///< expected distinct experts per MoE layer
    Bytes read{};          ///< dense + experts x touched / E
};

/// The parts of weight_read that do not depend on the tokens: resident, dense and experts.
[[nodiscard]] constexpr WeightRead weight_base(const Replica& r, const Layout& l,
                                               std::uint32_t stage) {
    const ModelConfig& c = r.model.config();
    const WeightBytes wb = weight_bytes_per_rank(r.model, l, stage, r.weights);
    WeightRead w;
    w.resident = wb.total();
    w.experts = wb.routed_experts;
    // A tied table on a single stage is the LM head too, so it is read in full.
    const bool table_is_head = c.tie_embeddings && l.pp() == 1;
    w.dense = w.resident - w.experts - (table_is_head ? Bytes{} : wb.embedding);
    return w;
}

/// `base` (from weight_base) completed for `tokens` tokens: the experts they touch and the read.
[[nodiscard]] constexpr WeightRead weight_read_at(WeightRead base, const ModelConfig& c,
                                                  std::uint64_t tokens) {
    base.experts_touched =
        expected_experts_touched(c.moe.experts, c.moe.experts_per_token, tokens);
    const double share = c.moe.experts == 0 ? 0.0 : base.experts_touched / c.moe.experts;
    base.read = base.dense + scale_down(base.experts, share);
    return base;
}

[[nodiscard]] constexpr WeightRead weight_read(const Replica& r, const Layout& l, std::uint32_t stage,
                                               std::uint64_t tokens) {
    return weight_read_at(weight_base(r, l, stage), r.model.config(), tokens);
}

/// Peak dense FLOP/s of `gpu` for `d`; zero when the GPU has none for it.
[[nodiscard]] constexpr FlopsPerSecond peak_flops(const GpuSpec& gpu, ComputeDtype d) noexcept {
    return gpu.dense(d).value_or(FlopsPerSecond{});
}

[[nodiscard]] constexpr Seconds time_at(double amount_base, double rate_base) noexcept {
    return Seconds::in_base(rate_base > 0.0 ? amount_base / rate_base
                                            : std::numeric_limits<double>::infinity());
}

}  // namespace detail

/// One pipeline stage's ranks in a step (every TP rank of a stage does the same work).
struct StageStep {
    std::uint32_t stage = 0;
    Bytes weights_resident{};  ///< the rank's weights
    Bytes weights_read{};      ///< what the step reads of them
    Bytes experts_resident{};  ///< routed experts held on the rank
    double experts_touched = 0.0;  ///< expected distinct experts per MoE layer
    Bytes kv_read{};           ///< KV of every sequence on this rank (decode) or written (prefill)
    Flops matmul_flops{};      ///< 2 x matmul parameters used x tokens
    Flops attention_flops{};
    Seconds memory_time{};     ///< (weights_read + kv_read) / peak bandwidth
    Seconds compute_time{};    ///< FLOPs / peak dense FLOP/s
    std::optional<Seconds> estimate{};  ///< with the efficiency factors, if given
    [[nodiscard]] constexpr Bytes bytes() const { return weights_read + kv_read; }
    [[nodiscard]] constexpr Flops flops() const { return matmul_flops + attention_flops; }
    [[nodiscard]] constexpr Seconds time() const { return std::max(memory_time, compute_time); }
    [[nodiscard]] constexpr Bound bound() const {
        return compute_time > memory_time ? Bound::compute : Bound::memory;
    }
};

/// The tensor-parallel all-reduce of a step: two per layer (after attention and after the MLP) of
/// the batch's hidden states, a ring moving 2 (tp - 1) / tp of the message over each GPU's link.
struct AllReduce {
    Bytes message{};                ///< tokens x hidden x activation element
    BytesPerSecond link{};          ///< one direction: scale-up (NVLink) if any, else PCIe
    Seconds per_layer{};            ///< both all-reduces of one layer
    Seconds per_step{};             ///< per_layer x the layers of the busiest stage
};


namespace detail {

constexpr void check_roofline(const Replica& r, const RooflineOptions& o) {
    const auto where = [&] { return model_where(r.model.config()); };
    // A missing GPU figure is the GPU spec's, named as its file spells it (configs/gpus/README.md).
    const auto gpu = [&] { return text("GPU spec '", r.gpu.id, "'"); };
    if (!(r.gpu.memory_bandwidth > BytesPerSecond{}))
        throw_field_error<InvalidInput>(gpu(), "memory_bandwidth.TB_per_s", "> 0", "0");
    if (!r.gpu.dense(o.compute))
        throw_field_error<InvalidInput>(gpu(), "dense_tflops." + std::string(name(o.compute)),
                                        "a dense peak for the compute type", "none");
    if (r.parallel.tp > 1 && !(r.gpu.scale_up_bandwidth > BytesPerSecond{}) &&
        !(r.gpu.pcie_bandwidth > BytesPerSecond{}))
        throw_field_error<InvalidInput>(gpu(), "scale_up.GB_per_s_per_direction",
                                        "a link for the tensor-parallel all-reduce",
                                        "none (and no pcie.GB_per_s_per_direction)");
    if (o.efficiency && !(o.efficiency->bandwidth > 0.0 && o.efficiency->bandwidth <= 1.0 &&
                          o.efficiency->compute > 0.0 && o.efficiency->compute <= 1.0))
        throw_field_error<InvalidInput>(where(), "efficiency", "fractions in (0, 1]", "outside");
}

/// A stage's bytes and FLOPs at peak bandwidth and throughput, and with the efficiency factors.
struct StageTimes {
    Seconds memory{};
    Seconds compute{};
    std::optional<Seconds> estimate{};
};

[[nodiscard]] constexpr StageTimes stage_times(Bytes bytes, Flops flops, const GpuSpec& gpu,
                                               const RooflineOptions& o) {
    StageTimes t{bytes / gpu.memory_bandwidth,
                 flops / gpu.dense(o.compute).value_or(FlopsPerSecond{})};
    if (o.efficiency)
        t.estimate = std::max(bytes / (gpu.memory_bandwidth * o.efficiency->bandwidth),
                              flops / (*gpu.dense(o.compute) * o.efficiency->compute));
    return t;
}

constexpr void finish_stage(StageStep& st, const GpuSpec& gpu, const RooflineOptions& o) {
    const StageTimes t = stage_times(st.bytes(), st.flops(), gpu, o);
    st.memory_time = t.memory;
    st.compute_time = t.compute;
    st.estimate = t.estimate;
}

[[nodiscard]] constexpr AllReduce all_reduce(const Replica& r, const Layout& l, std::uint64_t tokens,
                                             const RooflineOptions& o) {
    AllReduce a;
    a.message = o.activation_element * mul(tokens, r.model.config().hidden_size, "a message");
    a.link = r.gpu.scale_up_bandwidth > BytesPerSecond{} ? r.gpu.scale_up_bandwidth
                                                         : r.gpu.pcie_bandwidth;
    if (l.tp() <= 1 || !(a.link > BytesPerSecond{})) return a;
    const double ring = 2.0 * (l.tp() - 1) / l.tp();
    a.per_layer = (a.message / a.link) * (2.0 * ring);
    std::uint32_t most = 0;
    for (std::uint32_t st = 0; st < l.pp(); ++st)
        most = std::max(most, l.stage(st).end_layer - l.stage(st).first_layer);
    a.per_step = a.per_layer * most;
    return a;
}

}  // namespace detail

}  // namespace kvplan
