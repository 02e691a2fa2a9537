#pragma once

// --plot FILE.svg for roofline and fit: charts drawn with kvplan/svg.hpp.

#include <cstdint>
#include <kvplan/budget.hpp>
#include <kvplan/plan/evaluate.hpp>
#include <kvplan/roofline.hpp>
#include <optional>
#include <string>

#include "replica.hpp"

namespace kvplan::cli {

/// The decode bound per output token against batch (1 to 1,024, or twice `batch`), with the
/// memory and compute lines it is the larger of, and `batch` marked. Throws InvalidInput when the
/// file cannot be written.
void write_roofline_plot(const std::string& path, const Replica& r, std::uint64_t context,
                         std::optional<std::uint64_t> batch, const RooflineOptions& o,
                         const std::string& title);

/// The engine's maximum concurrency against context (128 tokens to twice the target, or the
/// model's trained length), with the target (context, concurrency) marked.
void write_fit_plot(const std::string& path, const Deployment& d, const Demand& demand,
                    const std::string& title);

}  // namespace kvplan::cli
