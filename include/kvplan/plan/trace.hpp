#pragma once

// kvplan trace as one call: what a request trace asks of the cache of one replica. KV per request
// (nearest-rank percentiles, whole model and per GPU of the busiest stage), paged against
// contiguous waste, the concurrency the arrivals imply (Little's law and a replay), and, given a
// GPU or a KV memory, how the replay sits on the replica and the smallest replica holding its peak
// (trace/replay.hpp), each stage's KV budget as the engine leaves it. With the GPUs deployed named,
// whether their replicas hold the peak, arrivals split evenly over them.

#include <cstdint>
#include <optional>
#include <string_view>

#include "../engine/load_dtype.hpp"
#include "../engine/report.hpp"
#include "../gpu.hpp"
#include "../kv_bytes.hpp"
#include "../trace.hpp"
#include "deployment.hpp"

namespace kvplan {

/// The replica a trace is replayed on, and how long its requests stay.
struct TraceSizing {
    Model model;
    std::optional<GpuSpec> gpu{};  ///< nullopt: no GPU (a replica is sized only with a KV memory)
    std::uint32_t tp = 1;
    std::uint32_t pp = 1;
    /// The GPUs deployed, a multiple of tp x pp, with a GPU or a KV memory; 0: none named.
    std::uint32_t gpus = 0;
    std::optional<WeightOptions> weights{};  ///< nullopt: the checkpoint's own format
    /// nullopt: what the serving engine's "auto" stores for the checkpoint (served_kv).
    std::optional<KvFormat> kv{};
    Serving serving{};  ///< the engine, its block size and budget knobs, Serving::kv_memory_per_gpu
    ServiceTimes times{.ttft = 0.5 * seconds, .tpot = 0.05 * seconds};
    /// Tokens a contiguous engine reserves per request; nullopt: the model's
    /// max_position_embeddings, else the trace's longest request.
    std::optional<std::uint64_t> max_model_len{};
};

/// Every figure kvplan trace shows.
struct TraceAnswer {
    ServedKv kv{};  ///< the KV format sized, resolved (TraceSizing::kv)
    TraceLengths lengths{};
    std::uint64_t max_model_len = 0;
    std::uint32_t block_size = 1;     ///< tokens per block, as the engine pages
    std::uint32_t busiest_stage = 0;  ///< the stage whose GPUs hold the most of a p99 request
    KvDistribution whole{};           ///< KV per request, the whole model
    KvDistribution per_gpu{};         ///< KV per request on a GPU of the busiest stage
    TraceWaste waste{};               ///< on a GPU of the busiest stage
    std::optional<TraceConcurrency> concurrency{};  ///< nullopt: no arrival times, or one instant
    bool replica_sized = false;  ///< a GPU or a KV memory was given: the replica figures below
    std::optional<TraceReplica> on_replica{};  ///< the replay on the replica given
    std::optional<TraceReplica> smallest{};    ///< the fewest GPUs holding the replay's peak
    std::uint32_t gpus_given = 0;              ///< TraceSizing::gpus
    std::uint32_t replicas_given = 0;          ///< gpus_given / (tp x pp)
    /// The replicas given hold the replay's peak, arrivals split evenly over them:
    /// replicas_given >= on_replica's replicas_for_peak (nullopt: no replay, or no GPUs named).
    std::optional<bool> given_holds_peak{};
};

/// Why a trace's replay takes no speculative decoding, in the words of its refusal.
inline constexpr std::string_view trace_speculation_refusal =
    "the replay holds each request's KV of the model alone, without a drafter";

/// The figures of trace `t` on the replica of `s`. Throws InvalidLayout for a layout the model
/// cannot take or GPUs deployed that are not whole replicas, InvalidInput for a knob the engine
/// refuses, speculative decoding (trace_speculation_refusal), or GPUs deployed with neither a GPU
/// nor a KV memory to size them on.
[[nodiscard]] inline TraceAnswer analyze_trace(const Trace& t, const TraceSizing& s) {
    const ResolvedServing rs = resolve_serving(s.serving);
    const Model& m = s.model;
    ParallelConfig parallel;
    parallel.tp = s.tp;
    parallel.pp = s.pp;
    const Layout layout(m, parallel);
    if (s.serving.speculation.method != DraftMethod::none)
        detail::throw_field_error<InvalidInput>(
            detail::model_where(m.config()), "speculation",
            detail::text("none (", trace_speculation_refusal, ")"),
            name(s.serving.speculation.method));
    TraceAnswer a;
    if (s.gpus != 0) {
        const std::uint32_t per_replica = layout.ranks();
        if (s.gpus % per_replica != 0)
            detail::throw_field_error<InvalidLayout>(
                detail::model_where(m.config()), "gpus",
                detail::text("a multiple of the replica's ", per_replica, " GPUs (tp x pp)"),
                detail::text(s.gpus));
        if (!s.gpu && !rs.budget.kv_memory_per_gpu)
            detail::throw_field_error<InvalidInput>(
                detail::model_where(m.config()), "gpus",
                "a GPU or a KV memory as well (the replicas deployed are sized on one)", "neither");
        a.gpus_given = s.gpus;
        a.replicas_given = s.gpus / per_replica;
    }
    a.kv = served_kv(m, s.kv, s.serving.engine, s.serving.engine_version);
    const KvFormat kv = a.kv.format;
    a.block_size = rs.block_size;
    // Counted per length once: every distribution below is computed per distinct length.
    const LengthCounts counts = length_counts(t);
    a.lengths = trace_lengths(counts);
    a.max_model_len = s.max_model_len                           ? *s.max_model_len
                      : m.config().max_position_embeddings != 0 ? m.config().max_position_embeddings
                                                                : a.lengths.total.max;
    a.busiest_stage = busiest_stage(m, kv, layout, a.lengths.total.p99);
    const Shard rank = layout.stage(a.busiest_stage);
    a.whole = kv_distribution(counts.total, m, kv, a.block_size);
    a.per_gpu = kv_distribution(counts.total, m, kv, a.block_size, rank);
    a.waste = trace_waste(counts.total, m, kv, a.max_model_len, a.block_size, rank);

    // Sorted once; the replay on this replica and the search for the smallest one walk it.
    TraceReplay replay(t, s.times);
    a.concurrency = replay.concurrency_by_length(kv_per_length(replay, m, kv, a.block_size, rank));
    a.replica_sized = s.gpu.has_value() || rs.budget.kv_memory_per_gpu.has_value();
    if (!a.concurrency || !a.replica_sized) return a;
    const Replica r{.model = m,
                    .gpu = s.gpu.value_or(GpuSpec{}),
                    .parallel = parallel,
                    .weights = served_weights(m, s.weights, rs.engine, rs.engine_version),
                    .kv = kv};
    const auto budget_of = [&](const Replica& rr, const Layout& l, std::uint32_t st) {
        if (rs.budget.kv_memory_per_gpu) return *rs.budget.kv_memory_per_gpu;
        return engine_memory(rs.engine, rr, l, st, rs.budget, rs.options).kv_memory;
    };
    a.on_replica = trace_on_replica(replay, r, a.block_size, budget_of);
    if (a.on_replica && a.gpus_given != 0)
        a.given_holds_peak = a.on_replica->replicas_for_peak != 0 &&
                             a.replicas_given >= a.on_replica->replicas_for_peak;
    a.smallest = smallest_replica_for_trace(replay, r, a.block_size, budget_of);
    return a;
}

}  // namespace kvplan
