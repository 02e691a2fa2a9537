#pragma once

// One replica's capacity under one engine, in the terms fit, plan, compare, check and diff share:
// the engine's memory accounting (every term), the KV budget per GPU, and what it holds.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <kvplan/budget.hpp>
#include <kvplan/engine.hpp>

#include "replica.hpp"
#include "report.hpp"

namespace kvplan::cli {

struct FitResult {
    Engine engine = Engine::vllm;
    std::uint64_t context = 0;
    std::uint64_t concurrency = 0;
    std::uint32_t block_size = 1;
    std::uint32_t limiting_stage = 0;
    EngineMemory memory{};      ///< the limiting stage's accounting
    bool kv_given = false;      ///< --kv-memory replaced the computed budget
    bool starts = true;         ///< the engine accepts the configuration
    bool fits = false;          ///< starts, and concurrency sequences of context fit
    Bytes kv_budget{};          ///< per GPU of the limiting stage
    Bytes kv_per_sequence{};    ///< per GPU, its blocks
    Bytes kv_needed{};          ///< kv_per_sequence x concurrency
    Bytes headroom{};
    Bytes shortfall{};
    std::optional<std::uint64_t> kv_tokens{};  ///< the engine's KV token figure
    std::uint64_t max_concurrency = 0;         ///< whole sequences of `context`
    double max_concurrency_exact = 0.0;        ///< as the engine reports it (vLLM's "X.XXx")
    std::optional<std::uint64_t> max_context{};           ///< at `concurrency`; nullopt: any
    std::optional<std::uint64_t> longest_single_context{};  ///< one sequence; nullopt: any
};

/// The capacity of `r` for `concurrency` sequences of `context` tokens under `e`.
[[nodiscard]] FitResult compute_fit(const Replica& r, const EngineSetup& e, std::uint64_t context,
                                    std::uint64_t concurrency);

/// The fit figures in report form (required JSON keys included), with explanations.
void append_fit_figures(Report& rep, const FitResult& f, const Replica& r,
                        const ResolvedModel& rm, const ResolvedGpu& g, const EngineSetup& e);

/// "FITS: ..." / "DOES NOT FIT: ..." / "DOES NOT START: ...".
[[nodiscard]] std::string fit_verdict(const FitResult& f, const Replica& r, const ResolvedGpu& g);

/// "token count" or "any" for an unbounded optional.
[[nodiscard]] Cell cell_tokens(std::optional<std::uint64_t> v);

}  // namespace kvplan::cli
