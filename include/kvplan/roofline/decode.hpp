#pragma once

// The decode step's lower bound on a replica: every sequence of the batch reads its KV, the step
// reads the weights once (the experts the batch touches), and the slowest pipeline stage bounds it.
//
// Under pipeline parallelism the batch runs as vLLM runs it: min(batch, pp) micro-batches in
// flight (VllmConfig.max_concurrent_batches is pp under pipeline parallelism, vllm/config/vllm.py),
// the batch split between them as evenly as it goes. A sequence's next token waits for its
// micro-batch to pass every stage, and every stage serves each micro-batch in turn, so
//
//     TPOT >= max(sum over stages of a micro-batch's time, max over stages of the cycle through
//                 every micro-batch)
//
// and the replica's throughput is at most batch / TPOT: one sequence can never exceed 1 / TPOT.

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
#include "../kv_bytes.hpp"
#include "../layout.hpp"
#include "../model.hpp"
#include "../units.hpp"
#include "step_cost.hpp"

namespace kvplan {

/// A decode step's lower bound on a replica, every term shown.
struct DecodeBound {
    std::uint64_t batch = 0;  ///< sequences decoding one token each
    std::uint64_t longest_context = 0;
    std::array<StageStep, max_pipeline_stages> stages{};
    std::uint32_t num_stages = 0;
    std::uint32_t limiting_stage = 0;
    std::uint64_t micro_batches = 1;  ///< in flight through the pipeline: min(batch, pp)
    std::uint64_t micro_batch = 0;  ///< sequences of the largest micro-batch (the stages' records)
    Seconds step{};                 ///< the slowest stage on the first (largest) micro-batch
    Seconds tpot{};             ///< a token passes every stage, each stage serves every micro-batch
    double tokens_per_s = 0.0;  ///< batch / tpot: the replica's throughput
    double tokens_per_s_per_gpu = 0.0;
    Bound bound = Bound::memory;  ///< what bounds the limiting stage
    /// Sequences of the busiest attention data-parallel rank in the largest micro-batch:
    /// ceil(micro_batch / dp) (each dp rank reads only its own sequences' KV).
    std::uint64_t dp_rank_batch = 0;
    AllReduce all_reduce{};  ///< not in the bound (see the header comment)
    AllToAll all_to_all{};   ///< expert parallelism's dispatch and combine; not in the bound
    std::optional<Seconds> step_estimate{};  ///< with the efficiency factors
    std::optional<double> tokens_per_s_estimate{};
    /// The stages in use.
    [[nodiscard]] constexpr std::span<const StageStep> stage_steps() const noexcept {
        return {stages.data(), num_stages};
    }
};

/// What a replica's decode bound needs that depends on neither the batch nor the context, per
/// stage (the rank's weights and matmul parameters, which walk every tensor of every layer):
/// prepared once, so that a sweep over batches and contexts pays only for what varies.
/// How the pipeline splits a batch: `count` micro-batches, `large` sequences in the first
/// `with_large` of them and `large - 1` in the rest.
struct MicroBatches {
    std::uint64_t count = 1;
    std::uint64_t large = 0;
    std::uint64_t with_large = 1;
};

/// `batch` over `pp` stages: min(batch, pp) micro-batches, as even as they go.
[[nodiscard]] constexpr MicroBatches micro_batches(std::uint64_t batch, std::uint32_t pp) noexcept {
    MicroBatches m;
    m.count = batch < pp ? batch : pp;
    if (m.count == 0) m.count = 1;
    m.large = (batch + m.count - 1) / m.count;
    m.with_large = batch - (m.large - 1) * m.count;
    return m;
}

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

namespace detail {

/// The decode costs of `r` under its layout `l`, given its weights per stage
/// (weight_bytes_per_stage) and matmul parameters per stage (rank_matmul_params_per_stage), which
/// do not depend on the GPU or the KV format: a search computes them once per layout and weight
/// format.
[[nodiscard]] constexpr DecodeCosts decode_costs_with(
    const Replica& r, const Layout& l, const StageWeights& weights,
    const std::array<RankMatmulParams, max_pipeline_stages>& matmul, const RooflineOptions& o) {
    check_roofline(r, o);
    DecodeCosts c{r, l, with_compute(o, r)};
    const LayerStack& L = r.model.layers();
    for (std::uint32_t s = 0; s < c.layout.pp(); ++s) {
        DecodeCosts::Stage& st = c.stages[s];
        st.shard = c.layout.stage(s);
        st.weights = weight_base(r, c.layout, weights[s]);
        st.matmul = matmul[s];
        st.layers = detail::layers_per_spec(r.model, st.shard);
        // The same terms, in the same order, as kv_bytes_per_sequence and
        // attention_flops_per_token, so the results agree to the bit.
        const double heads = static_cast<double>(r.model.config().num_heads / st.shard.tp);
        for (std::uint32_t k = 0; k < L.num_specs; ++k) {
            const CacheSpec& spec = L.specs[k];
            st.kv_per_token[k] = layer_bytes_per_token(spec, r.kv, st.shard.tp);
            st.state[k] = layer_fixed_bytes(spec, r.kv, st.shard.tp);
            if (spec.kind == CacheKind::full_attention || spec.kind == CacheKind::sliding_window ||
                spec.kind == CacheKind::chunked_local)
                st.attention_per_token[k] = 2.0 * heads * (spec.k_head_dim + spec.v_head_dim);
            else if (spec.kind == CacheKind::mla_latent)
                st.attention_per_token[k] =
                    2.0 * heads * (2.0 * spec.kv_lora_rank + spec.qk_rope_head_dim);
        }
    }
    return c;
}

}  // namespace detail

/// The decode costs of `r`. Throws InvalidLayout, or InvalidInput as decode_bound does.
[[nodiscard]] constexpr DecodeCosts decode_costs(const Replica& r, const RooflineOptions& o = {}) {
    detail::check_roofline(r, o);
    const Layout l = r.layout();
    return detail::decode_costs_with(r, l, weight_bytes_per_stage(r.model, l, r.weights),
                                     detail::rank_matmul_params_per_stage(r.model, l), o);
}

namespace detail {

/// What stage `s` reads and computes for `batch` sequences at `context` tokens.
struct DecodeLoad {
    WeightRead weights{};
    Bytes kv_read{};
    Flops matmul{};
    Flops attention{};
};

/// What stage `s`'s busiest rank reads and computes for `batch` sequences at `context` tokens:
/// its own sequences' KV and attention (ceil(batch / dp) of them, each over its share of the
/// tokens under decode context parallelism), the weights, and the experts the whole batch
/// touches.
[[nodiscard]] constexpr DecodeLoad decode_load(const DecodeCosts& c, std::uint32_t s,
                                               std::uint64_t batch, std::uint64_t context) {
    const DecodeCosts::Stage& cs = c.stages[s];
    const Model& m = c.replica.model;
    const std::uint64_t own = own_sequences(c.layout, batch);
    // kv_bytes_per_sequence and attention_flops_per_token over the prepared per-shape terms.
    Bytes kv{};
    double attention = 0.0;
    const LayerStack& L = m.layers();
    for (std::uint32_t k = 0; k < L.num_specs; ++k) {
        if (cs.layers[k] == 0) continue;
        const std::uint64_t kept =
            tokens_on_rank(L.specs[k].kind, tokens_kept(L.specs[k], context), cs.shard);
        kv += (cs.kv_per_token[k] * kept + cs.state[k]) * cs.layers[k];
        attention += cs.attention_per_token[k] * static_cast<double>(kept) *
                     static_cast<double>(cs.layers[k]);
    }
    return {weight_read_at(cs.weights, m.config(), batch), kv * own,
            matmul_flops(cs.matmul, own, batch),
            Flops::in_base(attention * static_cast<double>(own))};
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

namespace detail {

/// The pipeline's figures from each stage's time on a large and a small micro-batch.
struct PipelineTimes {
    Seconds step{};  ///< the slowest stage on a large micro-batch
    Seconds tpot{};
    std::uint32_t limiting_stage = 0;
};

/// Adds stage `s` (time `large` on a large micro-batch, `small` on a small one) to `p`.
constexpr void add_stage(PipelineTimes& p, std::uint32_t s, const MicroBatches& m, Seconds large,
                         Seconds small, Seconds& through, Seconds& busiest) {
    through += large;
    // Added micro-batch by micro-batch, large ones first, as the per-sequence form adds them.
    Seconds cycle{};
    for (std::uint64_t j = 0; j < m.count; ++j) cycle += j < m.with_large ? large : small;
    busiest = std::max(busiest, cycle);
    if (s == 0 || large > p.step) {
        p.step = large;
        p.limiting_stage = s;
    }
    p.tpot = std::max(through, busiest);
}

}  // namespace detail

/// The decode-step lower bound for `batch` sequences all at `context` tokens, from prepared costs.
[[nodiscard]] constexpr DecodeBound decode_bound(const DecodeCosts& c, std::uint64_t batch,
                                                 std::uint64_t context) {
    KVPLAN_EXPECTS(batch >= 1);
    const Layout& l = c.layout;
    const MicroBatches m = micro_batches(batch, l.pp());
    DecodeBound d;
    d.batch = batch;
    d.longest_context = context;
    d.num_stages = l.pp();
    d.micro_batches = m.count;
    d.micro_batch = m.large;
    detail::PipelineTimes p, e;
    Seconds through{}, busiest{}, e_through{}, e_busiest{};
    for (std::uint32_t s = 0; s < l.pp(); ++s) {
        const StageStep& st = d.stages[s] = detail::decode_stage(c, s, m.large, context);
        const bool uneven = m.with_large < m.count;
        const StageStep small = uneven ? detail::decode_stage(c, s, m.large - 1, context) : st;
        detail::add_stage(p, s, m, st.time(), small.time(), through, busiest);
        if (c.options.efficiency)
            detail::add_stage(e, s, m, *st.estimate, *small.estimate, e_through, e_busiest);
    }
    d.limiting_stage = p.limiting_stage;
    d.step = p.step;
    d.tpot = p.tpot;
    d.bound = d.stages[d.limiting_stage].bound();
    d.tokens_per_s = static_cast<double>(batch) / d.tpot.in(seconds);
    d.tokens_per_s_per_gpu = d.tokens_per_s / l.ranks();
    d.dp_rank_batch = detail::own_sequences(l, m.large);
    d.all_reduce = detail::all_reduce(c.replica, l, d.dp_rank_batch, c.options);
    d.all_to_all = detail::all_to_all(c.replica, l, d.dp_rank_batch);
    if (c.options.efficiency) {
        d.step_estimate = e.step;
        d.tokens_per_s_estimate = static_cast<double>(batch) / e.tpot.in(seconds);
    }
    return d;
}

/// The decode-step lower bound of `r` for sequences at the lengths `contexts` (one entry per
/// sequence: the tokens each attends to), sequence i in micro-batch i mod min(batch, pp). Throws
/// InvalidInput when the GPU has no bandwidth or no peak for o.compute, or an efficiency is outside
/// (0, 1].
[[nodiscard]] constexpr DecodeBound decode_bound(const Replica& r,
                                                 std::span<const std::uint64_t> contexts,
                                                 const RooflineOptions& options = {}) {
    KVPLAN_EXPECTS(!contexts.empty());
    const RooflineOptions o = with_compute(options, r);
    detail::check_roofline(r, o);
    const Layout l = r.layout();
    const MicroBatches m = micro_batches(contexts.size(), l.pp());
    DecodeBound d;
    d.batch = contexts.size();
    d.num_stages = l.pp();
    d.micro_batches = m.count;
    d.micro_batch = m.large;
    for (std::uint64_t c : contexts) d.longest_context = std::max(d.longest_context, c);
    // A stage's step on micro-batch j: the sequences i with i mod count == j, the q-th of them on
    // attention data-parallel rank q mod dp; the busiest rank's step is the stage's.
    const std::uint32_t dp = l.dp();
    const auto stage_on = [&](std::uint32_t s, std::uint64_t j) {
        const Shard sh = l.stage(s);
        std::uint64_t n = 0;
        std::array<Bytes, 64> kv_of{};
        std::array<double, 64> attn_of{};
        std::array<std::uint64_t, 64> own_of{};
        StageStep best;
        bool first = true;
        // Ranks beyond 64 are folded onto the first 64 in turn (each then holds at least as much
        // as any real rank): the bound stays a bound.
        const std::uint32_t slots = dp < 64 ? dp : 64;
        for (std::uint64_t i = j, q = 0; i < contexts.size(); i += m.count, ++q) {
            const std::size_t k = static_cast<std::size_t>(q % slots);
            kv_of[k] += kv_bytes_per_sequence(r.model, r.kv, contexts[i], sh);
            attn_of[k] += detail::attention_flops_per_token(r.model, sh, contexts[i]);
            ++own_of[k];
            ++n;
        }
        const detail::WeightRead w = detail::weight_read(r, l, s, n);
        const detail::RankMatmulParams p = detail::rank_matmul_params(r.model, l, s);
        for (std::uint32_t k = 0; k < slots; ++k) {
            StageStep st;
            st.stage = s;
            st.kv_read = kv_of[k];
            st.weights_resident = w.resident;
            st.weights_read = w.read;
            st.experts_resident = w.experts;
            st.experts_touched = w.experts_touched;
            st.matmul_flops = detail::matmul_flops(p, own_of[k], n);
            st.attention_flops = Flops::in_base(attn_of[k]);
            detail::finish_stage(st, r.gpu, o);
            if (first || st.time() > best.time()) best = st;
            first = false;
        }
        return best;
    };
    // Per micro-batch, its time through every stage; per stage, its cycle through every one.
    std::array<Seconds, max_pipeline_stages> cycle{}, e_cycle{};
    Seconds slowest_through{}, e_slowest_through{};
    for (std::uint64_t j = 0; j < m.count; ++j) {
        Seconds through{}, e_through{};
        for (std::uint32_t s = 0; s < l.pp(); ++s) {
            const StageStep st = stage_on(s, j);
            if (j == 0) {
                d.stages[s] = st;
                if (s == 0 || st.time() > d.step) {
                    d.step = st.time();
                    d.limiting_stage = s;
                }
                if (o.efficiency && (s == 0 || *st.estimate > *d.step_estimate))
                    d.step_estimate = *st.estimate;
            }
            through += st.time();
            cycle[s] += st.time();
            if (o.efficiency) {
                e_through += *st.estimate;
                e_cycle[s] += *st.estimate;
            }
        }
        slowest_through = std::max(slowest_through, through);
        e_slowest_through = std::max(e_slowest_through, e_through);
    }
    d.tpot = slowest_through;
    Seconds e_tpot = e_slowest_through;
    for (std::uint32_t s = 0; s < l.pp(); ++s) {
        d.tpot = std::max(d.tpot, cycle[s]);
        e_tpot = std::max(e_tpot, e_cycle[s]);
    }
    d.bound = d.stages[d.limiting_stage].bound();
    d.tokens_per_s = static_cast<double>(d.batch) / d.tpot.in(seconds);
    d.tokens_per_s_per_gpu = d.tokens_per_s / l.ranks();
    d.dp_rank_batch = detail::own_sequences(l, m.large);
    d.all_reduce = detail::all_reduce(r, l, d.dp_rank_batch, o);
    d.all_to_all = detail::all_to_all(r, l, d.dp_rank_batch);
    if (o.efficiency) d.tokens_per_s_estimate = static_cast<double>(d.batch) / e_tpot.in(seconds);
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
    return {d.batch,        d.longest_context,      d.step,  d.tpot,
            d.tokens_per_s, d.tokens_per_s_per_gpu, d.bound, d.step_estimate};
}

/// The headline figures of the decode bound for `batch` sequences at `context` tokens, from
/// prepared costs: what point_of(decode_bound(c, batch, context)) gives, without building every
/// stage's record.
[[nodiscard]] constexpr DecodePoint decode_point(const DecodeCosts& c, std::uint64_t batch,
                                                 std::uint64_t context) {
    KVPLAN_EXPECTS(batch >= 1);
    const MicroBatches m = micro_batches(batch, c.layout.pp());
    DecodePoint p{.batch = batch, .context = context};
    detail::PipelineTimes times, est;
    Seconds through{}, busiest{}, e_through{}, e_busiest{};
    // A stage's times as decode_stage has them, without filling its whole record.
    const auto stage_times = [&](std::uint32_t s, std::uint64_t n) {
        const detail::DecodeLoad load = detail::decode_load(c, s, n, context);
        return detail::stage_times(load.weights.read + load.kv_read, load.matmul + load.attention,
                                   c.replica.gpu, c.options);
    };
    for (std::uint32_t s = 0; s < c.layout.pp(); ++s) {
        const detail::StageTimes large = stage_times(s, m.large);
        const detail::StageTimes small =
            m.with_large < m.count ? stage_times(s, m.large - 1) : large;
        const Seconds time = std::max(large.memory, large.compute);
        // The first stage, then any strictly slower one: decode_bound's limiting stage.
        if (s == 0 || time > times.step)
            p.bound = large.compute > large.memory ? Bound::compute : Bound::memory;
        detail::add_stage(times, s, m, time, std::max(small.memory, small.compute), through,
                          busiest);
        if (large.estimate)
            detail::add_stage(est, s, m, *large.estimate, *small.estimate, e_through, e_busiest);
    }
    p.step = times.step;
    p.tpot = times.tpot;
    p.tokens_per_s = static_cast<double>(batch) / p.tpot.in(seconds);
    p.tokens_per_s_per_gpu = p.tokens_per_s / c.layout.ranks();
    if (c.options.efficiency) p.step_estimate = est.step;
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

}  // namespace kvplan
