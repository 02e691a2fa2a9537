#pragma once

// What a policy of `kvplan check` (schema "kvplan-policy/1") states, as types: the replicas a model
// is judged on and the requirements it must meet on each, so that a CI job can refuse a
// config.json change that breaks capacity or latency. No JSON here: policy/read.hpp reads a
// policy file into these types, plan/check.hpp judges them through evaluate().

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../detail/enum_table.hpp"
#include "../dtype.hpp"
#include "../engine/kind.hpp"
#include "../engine/release.hpp"
#include "../fixed_array.hpp"
#include "../units.hpp"
#include "../weight_format.hpp"

namespace kvplan {

/// What a requirement bounds.
enum class RequirementKind : std::uint8_t {
    min_concurrency,         ///< at least `sequences` sequences of `context_tokens` fit at once
    max_tpot,                ///< the decode step at `batch` x `context_tokens` is at most `tpot`
    max_kv_bytes_per_token,  ///< KV bytes per token of the whole model at most `size`
    max_weights_per_gpu,     ///< weight bytes on the fullest GPU at most `size`
    min_context,             ///< `sequences` sequences (default 1) can each reach `tokens`
    max_regression,          ///< `figure` worsens by at most `percent` against the baseline
};

/// Each kind's spelling, in enumerator order.
inline constexpr FixedArray<detail::EnumName<RequirementKind>, 6> requirement_kind_names{{
    {RequirementKind::min_concurrency, "min_concurrency"},
    {RequirementKind::max_tpot, "max_tpot"},
    {RequirementKind::max_kv_bytes_per_token, "max_kv_bytes_per_token"},
    {RequirementKind::max_weights_per_gpu, "max_weights_per_gpu"},
    {RequirementKind::min_context, "min_context"},
    {RequirementKind::max_regression, "max_regression"},
}};

[[nodiscard]] constexpr const char* name(RequirementKind k) noexcept {
    return detail::enum_name(requirement_kind_names, k);
}

[[nodiscard]] constexpr std::optional<RequirementKind> parse_requirement_kind(
    std::string_view s) noexcept {
    if (const auto k = detail::enum_parse(requirement_kind_names, s)) return *k;
    return std::nullopt;
}

/// A figure of a replica's answer (plan/evaluate.hpp) that a requirement reads.
enum class CheckFigure : std::uint8_t {
    max_concurrency,     ///< sequences of a context held at once (ReplicaAnswer::max_concurrency)
    max_context,         ///< the longest context of n sequences, capped at the model's limit
    tpot,                ///< the decode-step bound at a batch and context (ReplicaAnswer::decode)
    kv_bytes_per_token,  ///< the whole model's KV bytes per token
    weights_per_gpu,     ///< weight bytes on the fullest GPU
};

/// Each figure's spelling, in enumerator order.
inline constexpr FixedArray<detail::EnumName<CheckFigure>, 5> check_figure_names{{
    {CheckFigure::max_concurrency, "max_concurrency"},
    {CheckFigure::max_context, "max_context"},
    {CheckFigure::tpot, "tpot"},
    {CheckFigure::kv_bytes_per_token, "kv_bytes_per_token"},
    {CheckFigure::weights_per_gpu, "weights_per_gpu"},
}};

[[nodiscard]] constexpr const char* name(CheckFigure f) noexcept {
    return detail::enum_name(check_figure_names, f);
}

[[nodiscard]] constexpr std::optional<CheckFigure> parse_check_figure(std::string_view s) noexcept {
    if (const auto f = detail::enum_parse(check_figure_names, s)) return *f;
    return std::nullopt;
}

/// Whether more of `f` is better (sequences, tokens) rather than worse (seconds, bytes): a
/// regression is a fall of the first and a rise of the second.
[[nodiscard]] constexpr bool higher_is_better(CheckFigure f) noexcept {
    return f == CheckFigure::max_concurrency || f == CheckFigure::max_context;
}

/// The unit `f` is counted in: "sequences", "tokens", "seconds" or "bytes".
[[nodiscard]] constexpr const char* unit_name(CheckFigure f) noexcept {
    switch (f) {
        case CheckFigure::max_concurrency:
            return "sequences";
        case CheckFigure::max_context:
            return "tokens";
        case CheckFigure::tpot:
            return "seconds";
        case CheckFigure::kv_bytes_per_token:
        case CheckFigure::weights_per_gpu:
            return "bytes";
    }
    return "?";
}

/// One requirement. Which fields count depends on `kind` (and, for max_regression, `figure`).
struct Requirement {
    std::string name;        ///< as reports show it; defaults to the kind
    std::string path;        ///< its JSON path in the policy file, "requirements[2]"
    std::uint32_t line = 0;  ///< its line in the policy file (1-based); 0: not read from a file
    RequirementKind kind = RequirementKind::min_concurrency;
    CheckFigure figure = CheckFigure::max_concurrency;  ///< max_regression: the figure compared
    std::uint64_t sequences = 0;  ///< min_concurrency, min_context, max_regression of max_context
    std::uint64_t context_tokens = 0;  ///< min_concurrency, max_tpot, max_regression of
                                       ///< max_concurrency and tpot: the p95 context
    /// min_concurrency, max_regression of max_concurrency: the prompt prefix every request
    /// shares (Demand::shared_prefix_tokens); 0: none.
    std::uint64_t shared_prefix_tokens = 0;
    std::uint64_t tokens = 0;  ///< min_context
    std::uint64_t batch = 0;   ///< max_tpot, max_regression of tpot: sequences per step
    Seconds tpot{};            ///< max_tpot
    Bytes size{};              ///< max_kv_bytes_per_token, max_weights_per_gpu
    double percent = 0.0;      ///< max_regression: how far `figure` may worsen, in percent
};

/// The figure a requirement reads: its own for max_regression, else the one its kind bounds.
[[nodiscard]] constexpr CheckFigure figure_of(const Requirement& q) noexcept {
    switch (q.kind) {
        case RequirementKind::min_concurrency:
            return CheckFigure::max_concurrency;
        case RequirementKind::max_tpot:
            return CheckFigure::tpot;
        case RequirementKind::max_kv_bytes_per_token:
            return CheckFigure::kv_bytes_per_token;
        case RequirementKind::max_weights_per_gpu:
            return CheckFigure::weights_per_gpu;
        case RequirementKind::min_context:
            return CheckFigure::max_context;
        case RequirementKind::max_regression:
            return q.figure;
    }
    return q.figure;
}

/// One replica requirements are judged on: a GPU (a bundled id or alias, or a spec path the
/// front end resolves), its layout, formats and engine knobs.
struct PolicyReplica {
    std::string name;        ///< as reports show it; defaults to "<gpu> tp <tp> x pp <pp>"
    std::string path;        ///< its JSON path in the policy file, "replica" or "replicas[1]"
    std::uint32_t line = 0;  ///< its line in the policy file (1-based); 0: not read from a file
    std::string gpu;
    std::uint32_t tp = 1;
    std::uint32_t pp = 1;
    std::uint32_t dp = 1;   ///< attention data parallelism, in the engine's rules (ParallelConfig)
    std::uint32_t ep = 1;   ///< expert parallelism; 1: none
    std::uint32_t dcp = 1;  ///< vLLM's decode context parallelism; 1: none
    /// Physical experts beyond the routed ones under ep (vLLM EPLB's num_redundant_experts,
    /// SGLang's --ep-num-redundant-experts), each a copy's weights on some GPU.
    std::uint32_t redundant_experts = 0;
    /// nullopt: what the engine's "auto" stores for the checkpoint (served_kv).
    std::optional<KvDtype> kv_dtype{};
    std::optional<WeightFormat> weight_dtype{};  ///< nullopt: the checkpoint's own format
    Engine engine = Engine::vllm;
    std::optional<double> gpu_memory_utilization{};  ///< nullopt: the engine's
    std::optional<std::uint32_t> block_size{};       ///< nullopt: the engine's
    std::optional<EngineVersion> engine_version{};   ///< vLLM's or SGLang's; nullopt: newest
};

/// The name a replica goes by when the policy gives it none: "h100-sxm tp 4 x pp 1", with
/// " x dp 2", " ep 8" and " dcp 2" where those are not 1, " +32 redundant experts" where some.
[[nodiscard]] inline std::string default_replica_name(const PolicyReplica& r) {
    std::string s = r.gpu + " tp " + std::to_string(r.tp) + " x pp " + std::to_string(r.pp);
    if (r.dp != 1) s += " x dp " + std::to_string(r.dp);
    if (r.ep != 1) s += " ep " + std::to_string(r.ep);
    if (r.dcp != 1) s += " dcp " + std::to_string(r.dcp);
    if (r.redundant_experts != 0)
        s += " +" + std::to_string(r.redundant_experts) + " redundant experts";
    return s;
}

/// A policy: the replicas (at least one) and the requirements (at least one), each requirement
/// judged on each replica.
struct Policy {
    std::string source;  ///< the file it was read from
    std::string description;
    std::optional<std::string> model;  ///< as written (resolve relative paths against `source`)
    std::vector<PolicyReplica> replicas;
    std::vector<Requirement> requirements;
};

}  // namespace kvplan
