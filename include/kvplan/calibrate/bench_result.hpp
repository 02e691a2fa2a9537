#pragma once

// The result file of `vllm bench serve --save-result`: the JSON that vllm/benchmarks/serve.py
// (main, result_json merged with benchmark()'s result) writes. Read here: the run's setup
// (model_id, num_prompts, request_rate, max_concurrency), its totals (completed,
// total_input_tokens, total_output_tokens, duration, request_throughput, output_throughput) and
// the mean / median / p99 of ttft, tpot, itl and e2el in ms. Per-request arrays (input_lens, ...)
// are written only with --save-detailed and are not needed: mean lengths come from the totals.
//
// Opt-in (not in kvplan.hpp): reads files, and uses nlohmann/json through kvplan/json.hpp.

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "../json.hpp"
#include "latency.hpp"

namespace kvplan {

/// Mean, median and p99 of one metric, as `vllm bench serve` reports it.
struct BenchMetric {
    Seconds mean{};
    std::optional<Seconds> median{};
    std::optional<Seconds> p99{};
};

/// What a `vllm bench serve` result says.
struct BenchResult {
    std::string source;  ///< the file, for messages
    std::string model_id;
    std::uint64_t num_prompts = 0;
    std::optional<double> request_rate{};  ///< requests/s; nullopt: "inf" (all sent at once)
    std::optional<std::uint64_t> max_concurrency{};
    std::uint64_t completed = 0;
    std::uint64_t total_input_tokens = 0;
    std::uint64_t total_output_tokens = 0;
    Seconds duration{};
    double request_throughput = 0.0;  ///< requests/s
    double output_throughput = 0.0;   ///< output tokens/s
    BenchMetric ttft{};
    BenchMetric tpot{};
    BenchMetric itl{};
    std::optional<BenchMetric> e2el{};

    /// Mean prompt tokens of a completed request (nearest whole token).
    [[nodiscard]] std::uint64_t mean_prompt_tokens() const {
        return static_cast<std::uint64_t>(
            std::llround(static_cast<double>(total_input_tokens) / static_cast<double>(completed)));
    }
    /// Mean output tokens of a completed request (nearest whole token).
    [[nodiscard]] std::uint64_t mean_output_tokens() const {
        return static_cast<std::uint64_t>(std::llround(static_cast<double>(total_output_tokens) /
                                                       static_cast<double>(completed)));
    }
    /// Requests in flight: max_concurrency, or every prompt when none was set and the rate was
    /// infinite (serve.py then sends them all at once); nullopt for a finite rate without a cap,
    /// which is an open loop the closed-loop estimate does not model.
    [[nodiscard]] std::optional<std::uint64_t> concurrency() const {
        if (max_concurrency) return max_concurrency;
        if (!request_rate) return num_prompts;
        return std::nullopt;
    }
    /// Whether the run was a burst: every prompt sent at once and each served once, nobody
    /// sending again. vllm/benchmarks/serve.py sends at an infinite rate without waiting between
    /// requests, and its semaphore of max_concurrency (none when unset) holds none back when the
    /// cap is at least num_prompts: `vllm bench serve --num-prompts N` with no
    /// --max-concurrency, or one of N or more.
    [[nodiscard]] bool burst() const {
        return !request_rate && num_prompts > 0 &&
               (!max_concurrency || *max_concurrency >= num_prompts);
    }
};

namespace detail {

[[nodiscard]] inline BenchMetric bench_metric(const JsonReader& r, const std::string& name,
                                              bool required) {
    BenchMetric m;
    const std::string mean = "mean_" + name + "_ms";
    if (required)
        m.mean = r.positive_number(mean) * milliseconds;
    else if (const auto v = r.optional_positive_number(mean))
        m.mean = *v * milliseconds;
    if (const auto v = r.optional_positive_number("median_" + name + "_ms"))
        m.median = *v * milliseconds;
    if (const auto v = r.optional_positive_number("p99_" + name + "_ms")) m.p99 = *v * milliseconds;
    return m;
}

}  // namespace detail

/// A `vllm bench serve` result from its parsed JSON; `source` names it in messages. Throws
/// InvalidInput naming the field when one the estimate needs is missing or out of range.
[[nodiscard]] inline BenchResult vllm_bench_result_from_json(const Json& doc,
                                                             const std::string& source) {
    const JsonReader r(doc, source);
    BenchResult b;
    b.source = source;
    b.model_id = r.optional_string("model_id").value_or("");
    b.num_prompts = r.optional_count("num_prompts").value_or(0);
    if (const Json* rate = r.find("request_rate"); rate != nullptr && !rate->is_null()) {
        if (rate->is_string()) {
            if (rate->get<std::string>() != "inf")
                r.fail("request_rate", "a number or \"inf\"", detail::describe_json(*rate));
        } else {
            b.request_rate = r.positive_number("request_rate");
        }
    }
    b.max_concurrency = r.optional_positive_integer("max_concurrency");
    b.completed = r.positive_integer("completed");
    b.total_input_tokens = r.positive_integer("total_input_tokens");
    b.total_output_tokens = r.positive_integer("total_output_tokens");
    b.duration = r.positive_number("duration") * seconds;
    b.request_throughput = r.positive_number("request_throughput");
    b.output_throughput = r.positive_number("output_throughput");
    b.ttft = detail::bench_metric(r, "ttft", true);
    b.tpot = detail::bench_metric(r, "tpot", true);
    b.itl = detail::bench_metric(r, "itl", true);
    if (r.has("mean_e2el_ms")) b.e2el = detail::bench_metric(r, "e2el", true);
    return b;
}

/// Reads a `vllm bench serve --save-result` file. Throws InvalidInput naming the file and field.
[[nodiscard]] inline BenchResult read_vllm_bench_result(const std::filesystem::path& file) {
    return vllm_bench_result_from_json(
        read_json_file(file, JsonNumbers::strict, bench_result_limit),
        detail::without_controls(file.string()));
}

/// The run as an observation of `replica` (the model, GPU, layout and formats it ran with): a
/// burst of num_prompts when it was one (BenchResult::burst: every prompt sent at once, each
/// served once, the last waiting for the others' prefills), else a closed loop at its
/// max_concurrency; the mean prompt and output lengths, the mean TPOT as the ITL the estimate
/// gives (both are the mean step while a request decodes) and the mean TTFT.
/// Throws InvalidInput when the run had a finite request rate and no max_concurrency.
[[nodiscard]] inline LatencyObservation observation_of(const BenchResult& b, const Replica& replica,
                                                       const RooflineOptions& options = {}) {
    const std::optional<std::uint64_t> c = b.concurrency();
    if (!c)
        detail::throw_field_error<InvalidInput>(
            b.source, "max_concurrency",
            "a run with --max-concurrency (a closed loop) or an "
            "infinite request rate",
            "a finite request_rate and no max_concurrency");
    // A burst is not a closed loop at N clients: no request is sent again, so the run drains,
    // and its mean TTFT holds every prompt's wait for those ahead of it.
    const bool burst = b.burst();
    return LatencyObservation{.replica = replica,
                              .load = {.kind = burst ? LoadKind::burst : LoadKind::serving,
                                       .concurrency = burst ? b.num_prompts : *c,
                                       .prompt_tokens = b.mean_prompt_tokens(),
                                       .output_tokens = b.mean_output_tokens()},
                              .options = options,
                              .itl = b.tpot.mean,
                              .ttft = b.ttft.mean};
}

}  // namespace kvplan
