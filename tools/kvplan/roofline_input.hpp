#pragma once

// Roofline points shared by roofline, compare, check and diff.

#include <cstdint>
#include <string>
#include <vector>

#include <kvplan/roofline.hpp>

#include "replica.hpp"
#include "report.hpp"

namespace kvplan::cli {

struct RooflinePoint {
    std::uint64_t batch = 0;
    std::uint64_t context = 0;
    DecodeBound decode{};
    PrefillBound prefill{};
};

/// --compute-dtype (default bf16).
[[nodiscard]] ComputeDtype compute_dtype_flag(const std::string& text);

/// The GPU's dense peak for `d` (zero when it has none).
[[nodiscard]] FlopsPerSecond roofline_peak(const GpuSpec& g, ComputeDtype d);

/// Every (batch, context), contexts outermost.
[[nodiscard]] std::vector<RooflinePoint> roofline_points(const Replica& r,
                                                         const std::vector<std::uint64_t>& batches,
                                                         const std::vector<std::uint64_t>& contexts,
                                                         const RooflineOptions& ro);

[[nodiscard]] Table roofline_table(const std::vector<RooflinePoint>& points);

void append_roofline_figures(Report& rep, const RooflinePoint& p, const ReplicaInput& in,
                             const RooflineOptions& ro);

}  // namespace kvplan::cli
