#pragma once

// The seeds' picture as figures: decode throughput rises with batch until the KV cache is full
// (the KV wall, evaluate()'s max_concurrency at the context) or compute saturates (the knee,
// compute_bound_batch); TPOT grows with context at a fixed batch; the KV wall falls with context.
// Every figure comes from evaluate() and the roofline; these only sample them over an axis.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "../roofline.hpp"
#include "evaluate.hpp"

namespace kvplan {

/// The decode bound against batch at one context, with the KV wall and the compute knee.
struct BatchCurve {
    std::uint64_t context = 0;
    std::uint32_t replica_gpus = 1;
    /// evaluate()'s max_concurrency at the context: the batch one replica holds at once.
    std::uint64_t kv_wall = 0;
    /// The engine's sequence cap, not the cache, sets kv_wall (max_num_seqs and the like).
    bool wall_is_sequence_cap = false;
    Refusal refusal = Refusal::none;  ///< why the engine does not start (kv_wall is then 0)
    /// compute_bound_batch at the context, searched up to the largest batch asked; nullopt: memory
    /// bounds every batch there.
    std::optional<std::uint64_t> knee{};
    std::optional<DecodePoint> at_wall{};  ///< the bound at kv_wall (kv_wall >= 1)
    std::vector<DecodePoint> points;       ///< one per batch asked
};

/// The decode bound of `d` at each of `batches` (ascending, >= 1) at `context` tokens, with the
/// KV wall and the knee. Throws as evaluate() and decode_bound do.
[[nodiscard]] inline BatchCurve batch_curve(const Deployment& d, std::uint64_t context,
                                            std::span<const std::uint64_t> batches,
                                            const RooflineOptions& o = {}) {
    KVPLAN_EXPECTS(!batches.empty());
    const ReplicaAnswer a = evaluate(d, {.context = context, .concurrency = 1},
                                     {.contexts = false, .decode = false, .roofline = o});
    BatchCurve c;
    c.context = context;
    c.replica_gpus = a.replica_gpus;
    c.kv_wall = a.starts() ? a.max_concurrency : 0;
    c.wall_is_sequence_cap = a.sequence_cap != 0 && a.admitted > a.sequence_cap;
    c.refusal = a.refusal;
    const DecodeCosts costs = decode_costs(a.replica, o);
    for (std::uint64_t b : batches) c.points.push_back(decode_point(costs, b, context));
    std::uint64_t most = 0;
    for (std::uint64_t b : batches) most = std::max(most, b);
    c.knee = compute_bound_batch(a.replica, context, o, most);
    if (c.kv_wall >= 1) c.at_wall = decode_point(costs, c.kv_wall, context);
    return c;
}

/// The decode bound against context at one batch, with the longest context at which the cache
/// holds the batch.
struct ContextCurve {
    std::uint64_t batch = 0;
    /// evaluate()'s max_context at a concurrency of `batch`: nullopt when any context fits (or
    /// the model's limit sets it), 0 when not even one token does.
    std::optional<std::uint64_t> max_context{};
    bool max_context_at_limit = false;  ///< the model's limit, not memory, sets max_context
    std::vector<DecodePoint> points;    ///< one per context asked
};

/// The decode bound of `d` for `batch` sequences at each of `contexts`. Throws as evaluate() and
/// decode_bound do.
[[nodiscard]] inline ContextCurve context_curve(const Deployment& d, std::uint64_t batch,
                                                std::span<const std::uint64_t> contexts,
                                                const RooflineOptions& o = {}) {
    KVPLAN_EXPECTS(batch >= 1 && !contexts.empty());
    const ReplicaAnswer a = evaluate(d, {.context = contexts.front(), .concurrency = batch},
                                     {.contexts = true, .decode = false, .roofline = o});
    ContextCurve c;
    c.batch = batch;
    c.max_context = a.max_context;
    c.max_context_at_limit = a.max_context_at_limit;
    const DecodeCosts costs = decode_costs(a.replica, o);
    for (std::uint64_t ctx : contexts) c.points.push_back(decode_point(costs, batch, ctx));
    return c;
}

/// One point of the KV wall against context.
struct WallPoint {
    std::uint64_t context = 0;
    std::uint64_t kv_wall = 0;  ///< evaluate()'s max_concurrency (0: the engine does not start)
};

/// The KV wall of `d` at each of `contexts`, past the model's context limit too (the wall is
/// memory's answer; the limit is drawn apart).
[[nodiscard]] inline std::vector<WallPoint> wall_curve(Deployment d,
                                                       std::span<const std::uint64_t> contexts) {
    d.serving.allow_long_context = true;
    std::vector<WallPoint> out;
    for (std::uint64_t ctx : contexts) {
        const ReplicaAnswer a =
            evaluate(d, {.context = ctx, .concurrency = 1}, {.contexts = false, .decode = false});
        out.push_back({ctx, a.starts() ? a.max_concurrency : 0});
    }
    return out;
}

/// One point of max concurrency against context: the engine's, in its blocks, beside what the
/// KV budget holds at the exact bytes of a sequence.
struct ConcurrencyPoint {
    std::uint64_t context = 0;
    std::uint64_t max_concurrency = 0;  ///< evaluate()'s, in the engine's blocks
    /// kv_budget / the exact bytes of one sequence of the context on a GPU of the limiting stage
    /// (kv_bytes_per_sequence: no blocks, no cap); 0 when a sequence holds no bytes.
    double exact_sequences = 0;
};

/// Max concurrency of `d` at each of `contexts`, past the model's context limit too, every request
/// starting with the same prefix of `shared_prefix_tokens` (cut where a shorter context ends).
[[nodiscard]] inline std::vector<ConcurrencyPoint> concurrency_curve(
    Deployment d, std::uint64_t shared_prefix_tokens, std::span<const std::uint64_t> contexts) {
    d.serving.allow_long_context = true;
    std::vector<ConcurrencyPoint> out;
    for (std::uint64_t ctx : contexts) {
        const ReplicaAnswer a =
            evaluate(d,
                     {.context = ctx,
                      .concurrency = 1,
                      .shared_prefix_tokens = std::min(shared_prefix_tokens, ctx)},
                     {.contexts = false, .decode = false});
        const Shard s = a.replica.layout().stage(a.limiting_stage);
        const Bytes per_sequence = kv_bytes_per_sequence(a.replica.model, a.replica.kv, ctx, s);
        out.push_back({.context = ctx,
                       .max_concurrency = a.max_concurrency,
                       .exact_sequences =
                           per_sequence.is_zero() ? 0.0 : a.kv_budget.in(B) / per_sequence.in(B)});
    }
    return out;
}

/// The prefill of one prompt of each of `prompt_tokens` with and without fused attention.
[[nodiscard]] inline std::vector<PrefillAttention> prefill_curve(
    const Deployment& d, std::span<const std::uint64_t> prompt_tokens,
    const RooflineOptions& o = {}) {
    KVPLAN_EXPECTS(!prompt_tokens.empty());
    const ReplicaAnswer a = evaluate(d, {.context = prompt_tokens.front(), .concurrency = 1},
                                     {.contexts = false, .decode = false, .roofline = o});
    std::vector<PrefillAttention> out;
    for (std::uint64_t n : prompt_tokens) out.push_back(prefill_attention(a.replica, n, 1, o));
    return out;
}

}  // namespace kvplan
