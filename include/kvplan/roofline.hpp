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
// not capture).

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "budget.hpp"
#include "detail/checked.hpp"
#include "gpu.hpp"
#include "kv_bytes.hpp"
#include "layout.hpp"
#include "model.hpp"
#include "units.hpp"
#include "weights.hpp"

namespace kvplan {

/// Achievable fractions of peak bandwidth and of peak FLOP/s, for an estimate beside the bound.
struct Efficiency {
    double bandwidth = 1.0;  ///< in (0, 1]
    double compute = 1.0;    ///< in (0, 1]
};

/// What bounds a step.
enum class Bound : std::uint8_t { memory, compute };

/// "memory" or "compute".
[[nodiscard]] constexpr std::string_view name(Bound b) noexcept {
    return b == Bound::memory ? "memory" : "compute";
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
                f += 2.0 * heads * (spec.k_head_dim + spec.v_head_dim) * kept * layers;
                break;
            case CacheKind::mla_latent:
                f += 2.0 * heads * (2.0 * spec.kv_lora_rank + spec.qk_rope_head_dim) * kept *
                     layers;
                break;
            case CacheKind::constant_state:
            case CacheKind::shared: break;
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
            case CacheKind::mla_latent: {
                // Prefill runs MLA unabsorbed: per head a (nope + rope) score and a v_head_dim value.
                const double qk = m.config().mla.qk_nope_head_dim + spec.qk_rope_head_dim;
                f += 2.0 * heads * (qk + m.config().mla.v_head_dim) * causal_sum(tokens, cap);
                break;
            }
            case CacheKind::constant_state:
            case CacheKind::shared: break;
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

/// A decode step's lower bound on a replica, every term shown.
struct DecodeBound {
    std::uint64_t batch = 0;        ///< sequences decoding one token each
    std::uint64_t longest_context = 0;
    std::array<StageStep, max_pipeline_stages> stages{};
    std::uint32_t num_stages = 0;
    std::uint32_t limiting_stage = 0;
    Seconds step{};                 ///< the slowest stage: the bound on a step (the issue of a token)
    Seconds tpot{};                 ///< sum over stages: a token passes every stage in turn
    double tokens_per_s = 0.0;      ///< batch / step: replica throughput with the pipeline full
    double tokens_per_s_per_gpu = 0.0;
    Bound bound = Bound::memory;    ///< what bounds the limiting stage
    AllReduce all_reduce{};         ///< not in the bound (see the header comment)
    std::optional<Seconds> step_estimate{};  ///< with the efficiency factors
    std::optional<double> tokens_per_s_estimate{};
    /// The stages in use.
    [[nodiscard]] constexpr std::span<const StageStep> stage_steps() const noexcept {
        return {stages.data(), num_stages};
    }
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

/// What a replica's decode bound needs that depends on neither the batch nor the context, per
/// stage (the rank's weights and matmul parameters, which walk every tensor of every layer):
/// prepared once, so that a sweep over batches and contexts pays only for what varies.
struct DecodeCosts {
    /// One stage's batch- and context-free costs.
    struct Stage {
        Shard shard{};
        detail::WeightRead weights{};  ///< resident, dense and experts; the read is per batch
        detail::RankMatmulParams matmul{};
        /// Per layer shape: the stage's layers of it, and on a rank its KV bytes per token kept,
        /// its fixed state, and its attention FLOPs per token attended (2 x heads x dimensions).
        FixedArray<std::uint64_t, max_cache_specs> layers{};
        std::array<Bytes, max_cache_specs> kv_per_token{};
        std::array<Bytes, max_cache_specs> state{};
        std::array<double, max_cache_specs> attention_per_token{};
    };
    Replica replica;
    Layout layout;
    RooflineOptions options{};
    std::array<Stage, max_pipeline_stages> stages{};
};

/// The decode costs of `r`. Throws InvalidLayout, or InvalidInput as decode_bound does.
[[nodiscard]] constexpr DecodeCosts decode_costs(const Replica& r, const RooflineOptions& o = {}) {
    detail::check_roofline(r, o);
    DecodeCosts c{r, r.layout(), o};
    const LayerStack& L = r.model.layers();
    for (std::uint32_t s = 0; s < c.layout.pp(); ++s) {
        DecodeCosts::Stage& st = c.stages[s];
        st.shard = c.layout.stage(s);
        st.weights = detail::weight_base(r, c.layout, s);
        st.matmul = detail::rank_matmul_params(r.model, c.layout, s);
        st.layers = detail::layers_per_spec(r.model, st.shard);
        // The same terms, in the same order, as kv_bytes_per_sequence and
        // attention_flops_per_token, so the results agree to the bit.
        const double heads = static_cast<double>(r.model.config().num_heads / st.shard.tp);
        for (std::uint32_t k = 0; k < L.num_specs; ++k) {
            const CacheSpec& spec = L.specs[k];
            st.kv_per_token[k] = layer_bytes_per_token(spec, r.kv, st.shard.tp);
            st.state[k] = layer_state_bytes(spec, st.shard.tp);
            if (spec.kind == CacheKind::full_attention || spec.kind == CacheKind::sliding_window)
                st.attention_per_token[k] = 2.0 * heads * (spec.k_head_dim + spec.v_head_dim);
            else if (spec.kind == CacheKind::mla_latent)
                st.attention_per_token[k] =
                    2.0 * heads * (2.0 * spec.kv_lora_rank + spec.qk_rope_head_dim);
        }
    }
    return c;
}

namespace detail {

/// What stage `s` reads and computes for `batch` sequences at `context` tokens.
struct DecodeLoad {
    WeightRead weights{};
    Bytes kv_read{};
    Flops matmul{};
    Flops attention{};
};

[[nodiscard]] constexpr DecodeLoad decode_load(const DecodeCosts& c, std::uint32_t s,
                                               std::uint64_t batch, std::uint64_t context) {
    const DecodeCosts::Stage& cs = c.stages[s];
    const Model& m = c.replica.model;
    // kv_bytes_per_sequence and attention_flops_per_token over the prepared per-shape terms.
    Bytes kv{};
    double attention = 0.0;
    const LayerStack& L = m.layers();
    for (std::uint32_t k = 0; k < L.num_specs; ++k) {
        if (cs.layers[k] == 0) continue;
        const std::uint64_t kept = tokens_kept(L.specs[k], context);
        kv += (cs.kv_per_token[k] * kept + cs.state[k]) * cs.layers[k];
        attention += cs.attention_per_token[k] * static_cast<double>(kept) *
                     static_cast<double>(cs.layers[k]);
    }
    return {weight_read_at(cs.weights, m.config(), batch), kv * batch,
            Flops::in_base(2.0 * (cs.matmul.dense + cs.matmul.routed) * static_cast<double>(batch)),
            Flops::in_base(attention * static_cast<double>(batch))};
}

/// Stage `s`'s step for `batch` sequences at `context` tokens.
[[nodiscard]] constexpr StageStep decode_stage(const DecodeCosts& c, std::uint32_t s,
                                               std::uint64_t batch, std::uint64_t context) {
    const DecodeLoad load = decode_load(c, s, batch, context);
    StageStep st;
    st.stage = s;
    st.weights_resident = load.weights.resident;
    st.weights_read = load.weights.read;
    st.experts_resident = load.weights.experts;
    st.experts_touched = load.weights.experts_touched;
    st.kv_read = load.kv_read;
    st.matmul_flops = load.matmul;
    st.attention_flops = load.attention;
    finish_stage(st, c.replica.gpu, c.options);
    return st;
}

}  // namespace detail

/// The decode-step lower bound for `batch` sequences all at `context` tokens, from prepared costs.
[[nodiscard]] constexpr DecodeBound decode_bound(const DecodeCosts& c, std::uint64_t batch,
                                                 std::uint64_t context) {
    KVPLAN_EXPECTS(batch >= 1);
    const Layout& l = c.layout;
    DecodeBound d;
    d.batch = batch;
    d.longest_context = context;
    d.num_stages = l.pp();
    for (std::uint32_t s = 0; s < l.pp(); ++s) {
        const StageStep& st = d.stages[s] = detail::decode_stage(c, s, batch, context);
        d.tpot += st.time();
        if (st.time() > d.stages[d.limiting_stage].time()) d.limiting_stage = s;
    }
    const StageStep& lim = d.stages[d.limiting_stage];
    d.step = lim.time();
    d.bound = lim.bound();
    d.tokens_per_s = static_cast<double>(batch) / d.step.in(kvplan::s);
    d.tokens_per_s_per_gpu = d.tokens_per_s / l.ranks();
    d.all_reduce = detail::all_reduce(c.replica, l, batch, c.options);
    if (c.options.efficiency) {
        Seconds worst{};
        for (std::uint32_t s = 0; s < l.pp(); ++s) worst = std::max(worst, *d.stages[s].estimate);
        d.step_estimate = worst;
        d.tokens_per_s_estimate = static_cast<double>(batch) / worst.in(kvplan::s);
    }
    return d;
}

/// The decode-step lower bound of `r` for sequences at the lengths `contexts` (one entry per
/// sequence: the tokens each attends to). Throws InvalidInput when the GPU has no bandwidth or no
/// peak for o.compute, or an efficiency is outside (0, 1].
[[nodiscard]] constexpr DecodeBound decode_bound(const Replica& r,
                                                 std::span<const std::uint64_t> contexts,
                                                 const RooflineOptions& o = {}) {
    KVPLAN_EXPECTS(!contexts.empty());
    detail::check_roofline(r, o);
    const Layout l = r.layout();
    DecodeBound d;
    d.batch = contexts.size();
    d.num_stages = l.pp();
    for (std::uint64_t c : contexts) d.longest_context = std::max(d.longest_context, c);
    for (std::uint32_t s = 0; s < l.pp(); ++s) {
        StageStep& st = d.stages[s];
        st.stage = s;
        const Shard sh = l.stage(s);
        const detail::WeightRead w = detail::weight_read(r, l, s, d.batch);
        st.weights_resident = w.resident;
        st.weights_read = w.read;
        st.experts_resident = w.experts;
        st.experts_touched = w.experts_touched;
        double attn = 0.0;
        for (std::uint64_t c : contexts) {
            st.kv_read += kv_bytes_per_sequence(r.model, r.kv, c, sh);
            attn += detail::attention_flops_per_token(r.model, sh, c);
        }
        const detail::RankMatmulParams p = detail::rank_matmul_params(r.model, l, s);
        st.matmul_flops = Flops::in_base(2.0 * (p.dense + p.routed) * static_cast<double>(d.batch));
        st.attention_flops = Flops::in_base(attn);
        detail::finish_stage(st, r.gpu, o);
        d.tpot += st.time();
        if (st.time() > d.stages[d.limiting_stage].time()) d.limiting_stage = s;
    }
    const StageStep& lim = d.stages[d.limiting_stage];
    d.step = lim.time();
    d.bound = lim.bound();
    d.tokens_per_s = static_cast<double>(d.batch) / d.step.in(kvplan::s);
    d.tokens_per_s_per_gpu = d.tokens_per_s / l.ranks();
    d.all_reduce = detail::all_reduce(r, l, d.batch, o);
    if (o.efficiency) {
        Seconds worst{};
        for (std::uint32_t s = 0; s < l.pp(); ++s) worst = std::max(worst, *d.stages[s].estimate);
        d.step_estimate = worst;
        d.tokens_per_s_estimate = static_cast<double>(d.batch) / worst.in(kvplan::s);
    }
    return d;
}

/// The decode-step lower bound of `r` for `batch` sequences all at `context` tokens.
[[nodiscard]] constexpr DecodeBound decode_bound(const Replica& r, std::uint64_t batch,
                                                 std::uint64_t context,
                                                 const RooflineOptions& o = {}) {
    KVPLAN_EXPECTS(batch >= 1);
    return decode_bound(decode_costs(r, o), batch, context);
}

/// The smallest batch at `context` whose decode step is bound by compute on its limiting stage,
/// searched up to `max_batch`; nullopt when memory still bounds it there (long contexts: attention
/// reads grow as fast as its FLOPs, so it may never turn).
[[nodiscard]] constexpr std::optional<std::uint64_t> compute_bound_batch(
    const Replica& r, std::uint64_t context, const RooflineOptions& o = {},
    std::uint64_t max_batch = 1ULL << 20) {
    const DecodeCosts costs = decode_costs(r, o);
    const auto compute_bound = [&](std::uint64_t b) {
        return decode_bound(costs, b, context).bound == Bound::compute;
    };
    if (compute_bound(1)) return 1;
    std::uint64_t lo = 1, hi = 2;  // !compute_bound(lo)
    while (hi <= max_batch && !compute_bound(hi)) {
        lo = hi;
        hi *= 2;
    }
    if (hi > max_batch) {
        if (!compute_bound(max_batch)) return std::nullopt;
        hi = max_batch;
    }
    while (hi - lo > 1) {
        const std::uint64_t mid = lo + (hi - lo) / 2;
        (compute_bound(mid) ? hi : lo) = mid;
    }
    return hi;
}

/// One point of a sweep: the bound's headline figures.
struct DecodePoint {
    std::uint64_t batch = 0;
    std::uint64_t context = 0;
    Seconds step{};
    Seconds tpot{};
    double tokens_per_s = 0.0;
    double tokens_per_s_per_gpu = 0.0;
    Bound bound = Bound::memory;
    std::optional<Seconds> step_estimate{};
};

/// The headline figures of a decode bound.
[[nodiscard]] constexpr DecodePoint point_of(const DecodeBound& d) {
    return {d.batch, d.longest_context, d.step, d.tpot, d.tokens_per_s, d.tokens_per_s_per_gpu,
            d.bound, d.step_estimate};
}

/// The headline figures of the decode bound for `batch` sequences at `context` tokens, from
/// prepared costs: what point_of(decode_bound(c, batch, context)) gives, without building every
/// stage's record.
[[nodiscard]] constexpr DecodePoint decode_point(const DecodeCosts& c, std::uint64_t batch,
                                                 std::uint64_t context) {
    KVPLAN_EXPECTS(batch >= 1);
    DecodePoint p{.batch = batch, .context = context};
    Seconds worst{};
    for (std::uint32_t s = 0; s < c.layout.pp(); ++s) {
        // A stage's times as decode_stage has them, without filling its whole record.
        const detail::DecodeLoad load = detail::decode_load(c, s, batch, context);
        const detail::StageTimes t =
            detail::stage_times(load.weights.read + load.kv_read, load.matmul + load.attention,
                                c.replica.gpu, c.options);
        const Seconds time = std::max(t.memory, t.compute);
        p.tpot += time;
        // The first stage, then any strictly slower one: decode_bound's limiting stage.
        if (s == 0 || time > p.step) {
            p.step = time;
            p.bound = t.compute > t.memory ? Bound::compute : Bound::memory;
        }
        if (t.estimate) worst = std::max(worst, *t.estimate);
    }
    p.tokens_per_s = static_cast<double>(batch) / p.step.in(kvplan::s);
    p.tokens_per_s_per_gpu = p.tokens_per_s / c.layout.ranks();
    if (c.options.efficiency) p.step_estimate = worst;
    return p;
}

/// The bound at each batch of `batches` (context fixed), written to `out` (as many entries as
/// `batches`).
constexpr void sweep_batch(const Replica& r, std::span<const std::uint64_t> batches,
                           std::uint64_t context, std::span<DecodePoint> out,
                           const RooflineOptions& o = {}) {
    KVPLAN_EXPECTS(out.size() >= batches.size());
    const DecodeCosts c = decode_costs(r, o);
    for (std::size_t i = 0; i < batches.size(); ++i) out[i] = decode_point(c, batches[i], context);
}

/// The bound at each context of `contexts` (batch fixed), written to `out`.
constexpr void sweep_context(const Replica& r, std::uint64_t batch,
                             std::span<const std::uint64_t> contexts, std::span<DecodePoint> out,
                             const RooflineOptions& o = {}) {
    KVPLAN_EXPECTS(out.size() >= contexts.size());
    const DecodeCosts c = decode_costs(r, o);
    for (std::size_t i = 0; i < contexts.size(); ++i) out[i] = decode_point(c, batch, contexts[i]);
}

/// A prefill's lower bound: `prompts` prompts of `prompt_tokens` each in one forward.
struct PrefillBound {
    std::uint64_t prompts = 0;
    std::uint64_t prompt_tokens = 0;
    std::array<StageStep, max_pipeline_stages> stages{};  ///< kv_read holds the KV written
    std::uint32_t num_stages = 0;
    std::uint32_t limiting_stage = 0;
    /// The slowest stage: the bound on time to first token. (Chunked prefill can overlap stages,
    /// so only the slowest stage, not their sum, is a bound.)
    Seconds ttft{};
    Bound bound = Bound::memory;
    AllReduce all_reduce{};
    std::optional<Seconds> ttft_estimate{};
    /// The stages in use.
    [[nodiscard]] constexpr std::span<const StageStep> stage_steps() const noexcept {
        return {stages.data(), num_stages};
    }
};

/// The prefill lower bound of `r`: FLOPs (the quadratic attention term included) and weight reads
/// (experts touched by every prompt token) and the KV written.
[[nodiscard]] constexpr PrefillBound prefill_bound(const Replica& r, std::uint64_t prompt_tokens,
                                                   std::uint64_t prompts = 1,
                                                   const RooflineOptions& o = {}) {
    KVPLAN_EXPECTS(prompt_tokens >= 1 && prompts >= 1);
    detail::check_roofline(r, o);
    const Layout l = r.layout();
    PrefillBound p;
    p.prompts = prompts;
    p.prompt_tokens = prompt_tokens;
    p.num_stages = l.pp();
    const std::uint64_t tokens = detail::mul(prompts, prompt_tokens, "a token count");
    for (std::uint32_t s = 0; s < l.pp(); ++s) {
        StageStep& st = p.stages[s];
        st.stage = s;
        const Shard sh = l.stage(s);
        const detail::WeightRead w = detail::weight_read(r, l, s, tokens);
        st.weights_resident = w.resident;
        st.weights_read = w.read;
        st.experts_resident = w.experts;
        st.experts_touched = w.experts_touched;
        st.kv_read = kv_bytes_per_sequence(r.model, r.kv, prompt_tokens, sh) * prompts;
        const detail::RankMatmulParams mp = detail::rank_matmul_params(r.model, l, s);
        st.matmul_flops = Flops::in_base(2.0 * (mp.dense + mp.routed) * static_cast<double>(tokens));
        st.attention_flops = Flops::in_base(detail::prefill_attention_flops(r.model, sh, prompt_tokens) *
                                            static_cast<double>(prompts));
        detail::finish_stage(st, r.gpu, o);
        if (st.time() > p.stages[p.limiting_stage].time()) p.limiting_stage = s;
    }
    const StageStep& lim = p.stages[p.limiting_stage];
    p.ttft = lim.time();
    p.bound = lim.bound();
    p.all_reduce = detail::all_reduce(r, l, tokens, o);
    if (o.efficiency) {
        Seconds worst{};
        for (std::uint32_t s = 0; s < l.pp(); ++s) worst = std::max(worst, *p.stages[s].estimate);
        p.ttft_estimate = worst;
    }
    return p;
}

}  // namespace kvplan
