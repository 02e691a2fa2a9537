#pragma once

// The replica budget: on every GPU of a replica,
//
//     KV budget = memory_total x utilization - weights on that rank - non-KV reserve
//
// where utilization has vLLM's gpu_memory_utilization meaning (a fraction of the total the CUDA
// runtime reports, not of the memory free), and the reserve is modelled term by term: the CUDA
// context, the activation peak of a forward over max_num_batched_tokens (the LM head's logits at
// the vocabulary size included), CUDA graphs and communication buffers. Every term is shown, has a
// documented default, and can be replaced by a figure. Ranks are never averaged: each pipeline
// stage has its own layers, weights and reserve, and the stage that holds the fewest sequences sets
// the capacity of the whole replica.

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "../capacity.hpp"
#include "../detail/checked.hpp"
#include "../dtype.hpp"
#include "../kv_bytes.hpp"
#include "../layout.hpp"
#include "../model.hpp"
#include "../paging.hpp"
#include "../units.hpp"
#include "../weights.hpp"
#include "replica.hpp"
#include "reserve.hpp"

namespace kvplan {

/// How to size the budget: the utilization, the reserve, or a KV memory per GPU that replaces the
/// computed budget (the "Available KV cache memory" a running vLLM printed).
struct BudgetOptions {
    double utilization = default_gpu_memory_utilization;  ///< in (0, 1]
    ReserveOptions reserve{};
    std::optional<Bytes> kv_memory_per_gpu{};
};

/// One pipeline stage's budget (every TP rank of a stage holds the same), and what it holds.
struct StageBudget {
    std::uint32_t stage = 0;
    Shard shard{};
    Bytes memory_total{};  ///< the CUDA or HIP runtime's total for the GPU
    Bytes usable{};        ///< ceil(memory_total x utilization), as vLLM's requested_memory
    Bytes weights{};       ///< weight_bytes_per_rank of this stage
    Reserve reserve{};
    Bytes kv_budget{};      ///< usable - weights - reserve (zero when they exceed it), or the given
                            ///< figure
    bool kv_given = false;  ///< kv_budget is kv_memory_per_gpu, not computed
    Bytes kv_per_token{};   ///< KV bytes per token of context on this rank (every growing layer)
    Bytes kv_per_sequence{};  ///< bytes one sequence of the p95 context reserves (its blocks)
    Bytes kv_needed{};        ///< kv_per_sequence x concurrency
    Bytes headroom{};         ///< kv_budget - kv_needed when it fits, else zero
    Bytes shortfall{};        ///< what is missing when it does not fit, else zero
    std::optional<std::uint64_t>
        kv_tokens{};  ///< whole blocks of tokens the budget holds; nullopt: nothing grows
    std::uint64_t max_concurrency = 0;           ///< sequences of the p95 context that fit
    std::optional<std::uint64_t> max_context{};  ///< at the target concurrency; nullopt: any length
    std::optional<std::uint64_t>
        longest_single_context{};  ///< one sequence alone; nullopt: any length
    [[nodiscard]] constexpr bool fits() const noexcept { return shortfall.is_zero(); }
};

/// A replica's budget on every stage, and the answers, set by the stage that holds the least.
struct ReplicaBudget {
    std::uint32_t tp = 1;
    std::uint32_t pp = 1;
    double utilization = 0.0;
    Workload workload{};
    std::array<StageBudget, max_pipeline_stages> stages{};
    std::uint32_t num_stages = 0;
    std::uint32_t limiting_stage =
        0;              ///< the stage with the fewest sequences (then least headroom)
    bool fits = false;  ///< every stage holds concurrency x the p95 context
    Bytes headroom{};   ///< the least headroom over stages, when it fits
    Bytes shortfall{};  ///< the largest shortfall over stages, when it does not
    std::optional<std::uint64_t>
        kv_tokens{};                    ///< tokens of KV the replica holds (least over stages)
    std::uint64_t max_concurrency = 0;  ///< sequences of the p95 context at once
    std::optional<std::uint64_t> max_context{};  ///< longest context at the target concurrency
    /// The longest context one sequence can have: the estimate vLLM's "estimated maximum model
    /// length" gives when max_model_len does not fit (vllm/v1/core/kv_cache_utils.py).
    std::optional<std::uint64_t> longest_single_context{};
    /// GPUs in the replica.
    [[nodiscard]] constexpr std::uint32_t gpus() const noexcept { return tp * pp; }
    /// The stages in use.
    [[nodiscard]] constexpr std::span<const StageBudget> stage_budgets() const noexcept {
        return {stages.data(), num_stages};
    }
};

namespace detail {

/// min over optionals where nullopt means "unbounded".
[[nodiscard]] constexpr std::optional<std::uint64_t> min_bounded(std::optional<std::uint64_t> a,
                                                                 std::optional<std::uint64_t> b) {
    if (!a) return b;
    if (!b) return a;
    return std::min(*a, *b);
}

constexpr void check_budget_inputs(const Replica& r, const Workload& w, const BudgetOptions& o) {
    const auto where = [&] { return model_where(r.model.config()); };
    if (!(o.utilization > 0.0 && o.utilization <= 1.0))
        throw_field_error<InvalidInput>(where(), "utilization", "a fraction in (0, 1]",
                                        std::to_string(o.utilization));
    if (w.context == 0)
        throw_field_error<InvalidInput>(where(), "workload.context", ">= 1 token", "0");
    if (w.concurrency == 0)
        throw_field_error<InvalidInput>(where(), "workload.concurrency", ">= 1 sequence", "0");
    if (w.block_size == 0)
        throw_field_error<InvalidInput>(where(), "workload.block_size", ">= 1 token", "0");
    if (r.gpu.memory_total.is_zero() && !o.kv_memory_per_gpu)
        throw_field_error<InvalidInput>(where(), "gpu.memory_total", "> 0 bytes", "0");
}

}  // namespace detail

/// The budget of stage `stage` of `r` for workload `w`.
[[nodiscard]] constexpr StageBudget stage_budget(const Replica& r, const Layout& l,
                                                 std::uint32_t stage, const Workload& w,
                                                 const BudgetOptions& o = {}) {
    const Model& m = r.model;
    StageBudget b;
    b.stage = stage;
    b.shard = l.stage(stage);
    b.memory_total = r.gpu.memory_total;
    b.usable = detail::scale_up(r.gpu.memory_total, o.utilization);
    b.weights = weight_bytes_per_rank(m, l, stage, r.weights).total();
    b.reserve = reserve_on_rank(r, l, stage, o.reserve);
    const Bytes committed = b.weights + b.reserve.total();
    b.kv_given = o.kv_memory_per_gpu.has_value();
    b.kv_budget = b.kv_given ? *o.kv_memory_per_gpu : detail::saturating_sub(b.usable, committed);
    b.kv_per_token = kv_bytes_per_token(m, r.kv, b.shard);
    b.kv_per_sequence = reserved_per_sequence(m, r.kv, w.context, w.block_size, b.shard);
    b.kv_needed = b.kv_per_sequence * w.concurrency;
    // With a given KV figure only the KV must fit in it; otherwise weights, reserve and KV
    // together must fit in `usable` (so weights past it never fit, even with no KV needed).
    const Bytes demand = b.kv_given ? b.kv_needed : committed + b.kv_needed;
    const Bytes supply = b.kv_given ? b.kv_budget : b.usable;
    if (demand <= supply) {
        b.headroom = supply - demand;
    } else {
        b.shortfall = demand - supply;
    }
    if (!b.kv_per_token.is_zero()) {
        const Bytes block = b.kv_per_token * w.block_size;
        b.kv_tokens = detail::mul(b.kv_budget / block, w.block_size, "a token count");
    }
    b.max_concurrency = sequences_that_fit(b.kv_budget, m, r.kv, w.context, w.block_size, b.shard);
    b.max_context = max_context(b.kv_budget, m, r.kv, w.concurrency, w.block_size, b.shard);
    b.longest_single_context = max_context(b.kv_budget, m, r.kv, 1, w.block_size, b.shard);
    return b;
}

/// The budget of every stage of `r` for workload `w`, and the replica's answers. Under attention
/// data parallelism each dp rank holds ceil(w.concurrency / dp) of the sequences, and the stages'
/// figures are one rank's: the replica holds dp times their max_concurrency. Throws
/// InvalidLayout for a layout the model cannot take and InvalidInput for a utilization outside
/// (0, 1], a zero context, concurrency or block size, or a GPU without memory.
[[nodiscard]] constexpr ReplicaBudget replica_budget(const Replica& r, const Workload& w,
                                                     const BudgetOptions& o = {}) {
    detail::check_budget_inputs(r, w, o);
    const Layout l = r.layout();
    ReplicaBudget rb;
    rb.tp = l.tp();
    rb.pp = l.pp();
    rb.utilization = o.utilization;
    rb.workload = w;
    rb.num_stages = l.pp();
    rb.fits = true;
    rb.max_concurrency = std::numeric_limits<std::uint64_t>::max();
    Workload rank = w;  // one attention data-parallel rank's share
    rank.concurrency = (w.concurrency + l.dp() - 1) / l.dp();
    bool first = true;
    for (std::uint32_t st = 0; st < l.pp(); ++st) {
        const StageBudget& b = rb.stages[st] = stage_budget(r, l, st, rank, o);
        rb.fits = rb.fits && b.fits();
        rb.shortfall = std::max(rb.shortfall, b.shortfall);
        const StageBudget& lim = rb.stages[rb.limiting_stage];
        if (b.max_concurrency < lim.max_concurrency ||
            (b.max_concurrency == lim.max_concurrency && b.headroom < lim.headroom))
            rb.limiting_stage = st;
        rb.headroom = first ? b.headroom : std::min(rb.headroom, b.headroom);
        rb.kv_tokens = first ? b.kv_tokens : detail::min_bounded(rb.kv_tokens, b.kv_tokens);
        rb.max_concurrency = std::min(rb.max_concurrency, b.max_concurrency);
        rb.max_context = first ? b.max_context : detail::min_bounded(rb.max_context, b.max_context);
        rb.longest_single_context =
            first ? b.longest_single_context
                  : detail::min_bounded(rb.longest_single_context, b.longest_single_context);
        first = false;
    }
    if (!rb.fits) rb.headroom = {};
    if (l.dp() > 1 && rb.max_concurrency != std::numeric_limits<std::uint64_t>::max())
        rb.max_concurrency = detail::mul(rb.max_concurrency, l.dp(), "a sequence count");
    return rb;
}

}  // namespace kvplan
