#include "traffic.hpp"

#include <fmt/format.h>

#include <kvplan/engine.hpp>
#include <string>
#include <vector>

#include "parse.hpp"

namespace kvplan::cli {

Bytes stage_kv_budget(const Replica& r, const Layout& l, std::uint32_t stage,
                      const EngineSetup& e) {
    if (e.budget.kv_memory_per_gpu) return *e.budget.kv_memory_per_gpu;
    return engine_memory(e.engine, r, l, stage, e.budget, e.options).kv_memory;
}

Seconds parse_ms(std::string_view text, std::string_view flag) {
    return parse_positive(text, flag) * milliseconds;
}

std::string describe_layout(const ParallelConfig& p) {
    const std::uint64_t n = replica_gpus(p);
    return fmt::format("tp {} x pp {} ({} GPU{})", p.tp, p.pp, n, n == 1 ? "" : "s");
}

bool is_azure_llm_trace(const Trace& t) {
    return t.columns == std::vector<std::string>{"TIMESTAMP", "ContextTokens", "GeneratedTokens"};
}

TraceOptions trace_options(std::string_view time_unit) {
    TraceOptions o;
    if (time_unit.empty() || time_unit == "s")
        o.numeric_time_unit = seconds;
    else if (time_unit == "ms")
        o.numeric_time_unit = milliseconds;
    else if (time_unit == "us")
        o.numeric_time_unit = microseconds;
    else
        usage_error("--time-unit", "s, ms or us", time_unit);
    return o;
}

}  // namespace kvplan::cli
