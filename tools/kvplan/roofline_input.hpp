#pragma once

// Roofline points: the decode and prefill bounds at a (batch, context), and whether the replica's
// cache holds that batch at all (evaluate's answer at the same point); with a prompt / output
// split, the latency estimate beside them with `batch` the concurrency of the load (evaluate's
// answer at the same point too).

#include <cstdint>
#include <kvplan/plan/evaluate.hpp>
#include <kvplan/roofline.hpp>
#include <string>
#include <vector>

#include "flags.hpp"
#include "replica.hpp"
#include "report.hpp"

namespace kvplan::cli {

struct RooflinePoint {
    std::uint64_t batch = 0;
    std::uint64_t context = 0;
    DecodeBound decode{};
    PrefillBound prefill{};
    bool fits = false;                ///< the engine starts and its cache holds the batch
    std::uint64_t cache_holds = 0;    ///< sequences of the context the cache holds (the KV wall)
    Refusal refusal = Refusal::none;  ///< why the engine does not start at this context
    /// With a split: evaluate() at (context, batch clients, the split), its estimate beside the
    /// bound.
    std::optional<ReplicaAnswer> answer{};
};

/// --compute-dtype; unset when not given (the type the weights run in, matmul_compute).
[[nodiscard]] std::optional<ComputeDtype> compute_dtype_flag(const std::string& text);

/// The GPU's dense peak for `d` (zero when it has none).
[[nodiscard]] FlopsPerSecond roofline_peak(const GpuSpec& g, ComputeDtype d);

/// Every (batch, context), contexts outermost; with `split`, each with the estimate of the run
/// `run` shapes.
[[nodiscard]] std::vector<RooflinePoint> roofline_points(
    const Deployment& d, const std::vector<std::uint64_t>& batches,
    const std::vector<std::uint64_t>& contexts, const RooflineOptions& ro,
    std::optional<TokenSplit> split = std::nullopt, const RunShape& run = {});

/// The points; with an estimate, its columns beside the bound's.
[[nodiscard]] Table roofline_table(const std::vector<RooflinePoint>& points);

void append_roofline_figures(Report& rep, const RooflinePoint& p, const ReplicaRequest& in,
                             const Replica& r, const RooflineOptions& ro);

}  // namespace kvplan::cli
