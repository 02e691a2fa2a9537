#pragma once

// --plot FILE.svg for roofline, fit and compare: charts drawn with kvplan/svg.hpp from the figures
// of kvplan/plan/curves.hpp and evaluate().

#include <cstdint>
#include <kvplan/budget.hpp>
#include <kvplan/plan/evaluate.hpp>
#include <kvplan/roofline.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "replica.hpp"

namespace kvplan::cli {

/// The seeds' picture of `d` at `context` tokens, four panels: tokens/s (replica and per GPU)
/// against batch with the KV wall and the compute knee marked; TPOT against context at `batch`
/// (else the KV wall); prefill HBM traffic and the TTFT bound with and without fused attention
/// against prompt length. Throws InvalidInput when the file cannot be written.
void write_roofline_plot(const std::string& path, const Deployment& d, std::uint64_t context,
                         std::optional<std::uint64_t> batch, const RooflineOptions& o,
                         const std::string& subject);

/// Several configurations as series of one chart: tokens/s per GPU against batch up to each one's
/// KV wall, and the KV wall against context. `rows` pairs a legend name with its deployment.
void write_compare_plot(const std::string& path,
                        const std::vector<std::pair<std::string, Deployment>>& rows,
                        std::uint64_t context, const std::string& subject);

/// The engine's maximum concurrency against context (128 tokens to twice the target, or the
/// model's trained length), with the target (context, concurrency) marked.
void write_fit_plot(const std::string& path, const Deployment& d, const Demand& demand,
                    const std::string& title);

}  // namespace kvplan::cli
