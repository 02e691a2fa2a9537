#pragma once

// What trace, fleet and calibrate share: the KV budget each pipeline stage gets under the engine,
// latency targets from flags, and the attribution the Azure traces ask for.

#include <cstdint>
#include <kvplan/budget.hpp>
#include <kvplan/layout.hpp>
#include <kvplan/trace.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "replica.hpp"

namespace kvplan::cli {

/// KV memory per GPU of `stage` under the engine: --kv-memory when given, else what the engine's
/// accounting leaves (engine.hpp, engine_memory).
[[nodiscard]] Bytes stage_kv_budget(const Replica& r, const Layout& l, std::uint32_t stage,
                                    const EngineSetup& e);

/// Milliseconds from a flag (a positive number), as Seconds.
[[nodiscard]] Seconds parse_ms(std::string_view text, std::string_view flag);

/// "tp 2 x pp 1 (2 GPUs)": the degrees and the GPUs a replica of them takes (replica_gpus).
[[nodiscard]] std::string describe_layout(const ParallelConfig& p);

/// Whether the trace has the Azure LLM inference trace's header
/// (TIMESTAMP,ContextTokens,GeneratedTokens): its license asks for attribution with every figure.
/// Judged from the trace read, so that the file is opened once (a named pipe can be read once).
[[nodiscard]] bool is_azure_llm_trace(const Trace& t);

/// The attribution the Azure LLM inference traces carry (CC-BY 4.0).
inline constexpr std::string_view azure_attribution =
    "Azure LLM inference trace 2023 (Azure Public Dataset, CC-BY 4.0): Patel et al., \"Splitwise: "
    "Efficient generative LLM inference using phase splitting\", ISCA 2024";

/// --time-unit: how numeric arrival times are read (s, ms or us).
[[nodiscard]] TraceOptions trace_options(std::string_view time_unit);

}  // namespace kvplan::cli
