#pragma once

// One answer per replica. evaluate() takes a deployment and a demand and returns every figure a
// design review reads: the model's context limit, the engine's memory term by term, the KV budget
// and what it holds (what the engine logs and what its scheduler admits, within its sequence cap),
// the longest contexts, the verdict with its reason, the weights, and the decode bound at the load.
// fit, plan, compare, check, roofline, the Python module and serving code all call it, so a
// replica has one set of figures whichever asks.
//
// Demand is over every replica: gpus / (tp x pp) replicas share the concurrency, each carrying
// ceil(concurrency / replicas) sequences, and the verdict counts them all.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>

#include "../budget/replica.hpp"
#include "../capacity.hpp"
#include "../detail/enum_table.hpp"
#include "../engine/report.hpp"
#include "../error.hpp"
#include "../kv_bytes.hpp"
#include "../layout.hpp"
#include "../model.hpp"
#include "../paging.hpp"
#include "../roofline/decode.hpp"
#include "../weights.hpp"
#include "deployment.hpp"

namespace kvplan {

/// The answer in one word.
enum class Verdict : std::uint8_t {
    fits,            ///< the engine starts and every replica together holds the demand
    does_not_fit,    ///< the engine starts, but holds fewer sequences than the demand
    does_not_start,  ///< the engine refuses the configuration (see Refusal)
};

/// Why an engine does not start.
enum class Refusal : std::uint8_t {
    none,
    context_limit,     ///< the context passes the model's limit (vLLM refuses --max-model-len)
    weights,           ///< the weights and the terms charged with them exceed the engine's fraction
    outside_fraction,  ///< the terms kept outside the fraction do not fit what it leaves
    request,           ///< one request of the context does not fit the cache
    cache,             ///< the engine cannot build a cache for this model
};

/// Each verdict's spelling.
inline constexpr FixedArray<detail::EnumName<Verdict>, 3> verdict_names{{
    {Verdict::fits, "fits"},
    {Verdict::does_not_fit, "does_not_fit"},
    {Verdict::does_not_start, "does_not_start"},
}};

/// Each refusal's spelling ("none" when the engine starts).
inline constexpr FixedArray<detail::EnumName<Refusal>, 6> refusal_names{{
    {Refusal::none, "none"},
    {Refusal::context_limit, "context_limit"},
    {Refusal::weights, "weights"},
    {Refusal::outside_fraction, "outside_fraction"},
    {Refusal::request, "request"},
    {Refusal::cache, "cache"},
}};

[[nodiscard]] constexpr const char* name(Verdict v) noexcept {
    return detail::enum_name(verdict_names, v);
}
[[nodiscard]] constexpr const char* name(Refusal r) noexcept {
    return detail::enum_name(refusal_names, r);
}

/// How evaluate() works.
struct EvaluateOptions {
    /// The longest contexts (max_context, longest_single_context): a search over the engine's
    /// cache; off, they stay unset (a replica search that does not show them skips the cost).
    bool contexts = true;
    /// The decode bound at the load each replica carries (when the GPU states its bandwidth, the
    /// FLOP/s of `roofline.compute` and, at tp > 1, a link for the all-reduce).
    bool decode = true;
    RooflineOptions roofline{};
};

/// Every figure of a deployment under a demand.
struct ReplicaAnswer {
    // What was evaluated, resolved.
    Replica replica;                   ///< the model, GPU, layout, weights and KV format
    WeightSource weight_source = WeightSource::checkpoint;
    ResolvedServing serving{};
    Demand demand{};
    std::uint32_t gpus = 0;                   ///< every GPU deployed
    std::uint32_t replicas = 1;               ///< gpus / (tp x pp)
    std::uint64_t concurrency_per_replica = 0;  ///< ceil(concurrency / replicas)

    // The model's context limit.
    ContextLimit limit{};
    bool over_limit = false;       ///< demand.context passes limit.tokens
    bool long_context_allowed = false;

    // The engine: its memory per stage and its cache.
    EngineReport report{};
    std::uint32_t limiting_stage = 0;  ///< the stage whose GPUs hold the fewest sequences

    // Per GPU of the limiting stage.
    Bytes kv_budget{};          ///< the engine's KV memory (or the given figure)
    bool kv_given = false;
    Bytes kv_per_sequence{};    ///< the blocks one sequence of the context holds
    Bytes kv_needed{};          ///< kv_per_sequence x concurrency_per_replica
    Bytes headroom{};
    Bytes shortfall{};
    std::optional<std::uint64_t> kv_tokens{};  ///< the engine's KV token figure

    // Sequences of the context, per replica unless said.
    std::uint64_t admitted = 0;         ///< what the engine's cache holds at once
    std::uint64_t sequence_cap = 0;     ///< the engine's cap on sequences (0: none)
    std::uint64_t max_concurrency = 0;  ///< min(admitted, cap)
    double max_concurrency_ratio = 0.0;  ///< the engine's logged figure (vLLM's "X.XXx")
    std::uint64_t total_max_concurrency = 0;  ///< max_concurrency x replicas
    /// The longest context each of concurrency_per_replica sequences can reach; nullopt: any.
    std::optional<std::uint64_t> max_context{};
    bool max_context_at_limit = false;  ///< the model's limit, not memory, sets it
    /// The longest context one sequence alone can reach; nullopt: any.
    std::optional<std::uint64_t> longest_single_context{};
    bool longest_at_limit = false;
    /// vLLM's "estimated maximum model length" when one request of the context does not fit.
    std::optional<std::uint64_t> estimated_max_model_len{};

    Verdict verdict = Verdict::does_not_start;
    Refusal refusal = Refusal::none;

    // Weights and bytes.
    WeightBytes weights{};   ///< the whole model as stored
    Bytes weights_per_gpu{};  ///< the fullest rank
    Bytes kv_per_token{};     ///< the whole model
    Bytes kv_per_token_per_gpu{};  ///< the fullest stage's GPUs

    /// The decode bound with each replica carrying concurrency_per_replica sequences of the
    /// context (unset when not asked or the GPU lacks the figures).
    std::optional<DecodePoint> decode{};

    [[nodiscard]] constexpr bool fits() const noexcept { return verdict == Verdict::fits; }
    [[nodiscard]] constexpr bool starts() const noexcept {
        return verdict != Verdict::does_not_start;
    }
    /// The limiting stage's memory, term by term.
    [[nodiscard]] constexpr const EngineMemory& memory() const noexcept {
        return report.memory[limiting_stage];
    }
};

namespace detail {

/// The stage the engine's cache names as its tightest.
[[nodiscard]] constexpr std::uint32_t engine_limiting_stage(const EngineReport& r) noexcept {
    switch (r.summary.engine) {
        case Engine::ideal: return r.ideal.limiting_stage;
        case Engine::vllm: return r.vllm.limiting_stage;
        case Engine::sglang: return r.sglang.limiting_stage;
        case Engine::trtllm: return r.trtllm.limiting_stage;
    }
    return 0;
}

/// Whether any layer grows with the context (a model of only constant state does not).
[[nodiscard]] constexpr bool grows_with_context(const Model& m) noexcept {
    for (std::uint32_t k = 0; k < m.layers().num_specs; ++k) {
        const CacheKind kind = m.layers().specs[k].kind;
        if (kind != CacheKind::constant_state && kind != CacheKind::shared) return true;
    }
    return false;
}

/// The longest context of which the engine's cache, given its KV memory per stage `kv`, admits
/// `n` sequences at once, searched up to `most`; nullopt when `most` itself is admitted and nothing
/// grows with the context (any length).
[[nodiscard]] constexpr std::optional<std::uint64_t> longest_admitted(
    const Replica& r, const Layout& l, std::span<const Bytes> kv, const ResolvedServing& s,
    std::uint64_t n, std::uint64_t most) {
    const auto admits = [&](std::uint64_t len) {
        EngineReport rep;
        rep.num_stages = l.pp();
        engine_cache(rep, s.engine, r, l, kv, len, s.budget, s.options);
        return rep.summary.starts && rep.summary.admitted >= n;
    };
    if (admits(most)) {
        if (!grows_with_context(r.model)) return std::nullopt;
        return most;
    }
    if (!admits(1)) return 0;
    std::uint64_t lo = 1, hi = most;  // admits(lo), !admits(hi)
    while (hi - lo > 1) {
        const std::uint64_t mid = lo + (hi - lo) / 2;
        (admits(mid) ? lo : hi) = mid;
    }
    return lo;
}

/// Whether the GPU states what the decode bound of `r` needs: its bandwidth, the FLOP/s of
/// `o.compute` and, at tp > 1, a link for the all-reduce.
[[nodiscard]] constexpr bool has_decode_figures(const Replica& r,
                                                const RooflineOptions& o) noexcept {
    const bool has_link = r.parallel.tp == 1 || r.gpu.scale_up_bandwidth > BytesPerSecond{} ||
                          r.gpu.pcie_bandwidth > BytesPerSecond{};
    return r.gpu.memory_bandwidth > BytesPerSecond{} && r.gpu.dense(o.compute) && has_link;
}

}  // namespace detail

/// What evaluate() computes of a deployment that no demand changes: each stage's engine memory,
/// the weights and the decode costs, the walks over every tensor of every layer that are most of
/// an evaluation's time. Serving code that asks one deployment about many demands prepares it once
/// (prepare) and pays only for what a demand changes.
struct PreparedDeployment {
    Deployment deployment;
    EvaluateOptions options{};
    std::array<EngineMemory, max_pipeline_stages> memory{};  ///< per stage, as engine_report has it
    WeightBytes weights{};
    Bytes weights_per_gpu{};
    /// With options.decode, when the GPU has the figures.
    std::optional<DecodeCosts> decode_costs{};
};

namespace detail {

/// evaluate(), with what `p` prepared of `d` when it is given.
[[nodiscard]] inline ReplicaAnswer evaluate_with(const Deployment& d, const Demand& demand,
                                                 const EvaluateOptions& o,
                                                 const PreparedDeployment* p) {
    const auto where = [&] { return detail::model_where(d.model.config()); };
    if (demand.context == 0)
        detail::throw_field_error<InvalidInput>(where(), "context", ">= 1 token", "0");
    if (demand.concurrency == 0)
        detail::throw_field_error<InvalidInput>(where(), "concurrency", ">= 1 sequence", "0");
    const WeightOptions weights = d.weights ? *d.weights : checkpoint_weights(d.model);
    ReplicaAnswer a{.replica = Replica{.model = d.model,
                                       .gpu = d.gpu,
                                       .parallel = d.parallel,
                                       .weights = weights,
                                       .kv = d.kv}};
    const Replica& r = a.replica;
    const Layout l = r.layout();
    const std::uint32_t per_replica = l.ranks();
    a.gpus = d.gpus == 0 ? per_replica : d.gpus;
    if (a.gpus % per_replica != 0)
        detail::throw_field_error<InvalidLayout>(
            where(), "gpus", detail::text("a multiple of tp x pp = ", per_replica),
            detail::text(a.gpus));
    a.replicas = a.gpus / per_replica;
    a.weight_source = d.weights                        ? WeightSource::given
                      : d.model.config().checkpoint.known ? WeightSource::checkpoint
                                                          : WeightSource::assumed;
    a.serving = resolve_serving(d.serving);
    if (r.gpu.memory_total.is_zero() && !a.serving.budget.kv_memory_per_gpu)
        detail::throw_field_error<InvalidInput>(detail::text("GPU '", r.gpu.id, "'"),
                                                "memory_total", "> 0 bytes", "0");
    a.demand = demand;
    a.concurrency_per_replica = (demand.concurrency + a.replicas - 1) / a.replicas;

    // The model's limit (vllm/config/model.py, _get_and_verify_max_len).
    a.limit = context_limit(d.model.config());
    a.over_limit = demand.context > a.limit.tokens;
    a.long_context_allowed = d.serving.allow_long_context;

    // The engine's memory and cache at the context.
    a.report = p != nullptr ? detail::engine_report_from(
                                  a.serving.engine, r, l,
                                  std::span<const EngineMemory>(p->memory.data(), l.pp()),
                                  demand.context, a.serving.budget, a.serving.options)
                            : engine_report(a.serving.engine, r, demand.context, a.serving.budget,
                                            a.serving.options);
    const EngineCapacity& cap = a.report.summary;
    a.limiting_stage = std::min(detail::engine_limiting_stage(a.report), l.pp() - 1);
    const Shard shard = l.stage(a.limiting_stage);
    a.kv_given = a.serving.budget.kv_memory_per_gpu.has_value();
    a.kv_budget = a.kv_given ? *a.serving.budget.kv_memory_per_gpu
                             : a.report.memory[a.limiting_stage].kv_memory;
    a.kv_per_sequence =
        reserved_per_sequence(r.model, r.kv, demand.context, a.serving.block_size, shard);
    a.kv_needed = a.kv_per_sequence * a.concurrency_per_replica;
    if (a.kv_needed <= a.kv_budget)
        a.headroom = a.kv_budget - a.kv_needed;
    else
        a.shortfall = a.kv_needed - a.kv_budget;
    a.kv_tokens = cap.tokens;
    a.admitted = cap.starts ? cap.admitted : 0;
    a.sequence_cap = cap.sequence_cap;
    a.max_concurrency = cap.starts ? cap.max_sequences() : 0;
    a.max_concurrency_ratio = cap.max_concurrency;
    a.total_max_concurrency = detail::mul(a.max_concurrency, a.replicas, "a sequence count");
    if (a.serving.engine == Engine::vllm && !a.report.vllm.enough_memory &&
        a.report.vllm.refused.empty())
        a.estimated_max_model_len = a.report.vllm.estimated_max_model_len;

    // The verdict and its reason.
    bool weights_fit = true, outside_fits = true;
    for (const EngineMemory& m : a.report.stage_memory()) {
        weights_fit = weights_fit && m.shortfall.is_zero();
        outside_fits = outside_fits && m.outside_fits;
    }
    if (a.over_limit && !a.long_context_allowed) {
        a.refusal = Refusal::context_limit;
    } else if (!a.kv_given && !weights_fit) {
        a.refusal = Refusal::weights;
    } else if (!a.kv_given && !outside_fits) {
        a.refusal = Refusal::outside_fraction;
    } else if (!cap.starts) {
        const bool no_cache = (a.serving.engine == Engine::vllm && !a.report.vllm.refused.empty()) ||
                              (a.serving.engine == Engine::sglang &&
                               a.report.sglang.max_total_num_tokens == 0) ||
                              (a.serving.engine == Engine::trtllm && a.report.trtllm.num_pools == 0);
        a.refusal = no_cache ? Refusal::cache : Refusal::request;
    }
    if (a.refusal != Refusal::none) {
        a.verdict = Verdict::does_not_start;
        a.max_concurrency = a.admitted = a.total_max_concurrency = 0;
    } else {
        a.verdict = a.total_max_concurrency >= demand.concurrency ? Verdict::fits
                                                                  : Verdict::does_not_fit;
    }

    // The longest contexts, searched over the engine's own cache and capped at the limit.
    if (o.contexts && a.refusal != Refusal::weights && a.refusal != Refusal::outside_fraction) {
        std::array<Bytes, max_pipeline_stages> kv{};
        for (std::uint32_t st = 0; st < l.pp(); ++st)
            kv[st] = a.kv_given ? a.kv_budget : a.report.memory[st].kv_memory;
        const std::span<const Bytes> per_stage(kv.data(), l.pp());
        // Past the limit only when allowed; then up to 2^40 tokens.
        const std::uint64_t most = a.long_context_allowed ? (1ULL << 40) : a.limit.tokens;
        a.max_context = detail::longest_admitted(r, l, per_stage, a.serving,
                                                 a.concurrency_per_replica, most);
        a.longest_single_context = detail::longest_admitted(r, l, per_stage, a.serving, 1, most);
        a.max_context_at_limit =
            !a.long_context_allowed && a.max_context && *a.max_context == a.limit.tokens;
        a.longest_at_limit = !a.long_context_allowed && a.longest_single_context &&
                             *a.longest_single_context == a.limit.tokens;
    }

    // Weights and bytes.
    a.weights = p != nullptr ? p->weights : weight_bytes(r.model, r.weights);
    a.weights_per_gpu =
        p != nullptr ? p->weights_per_gpu : max_weight_bytes_per_rank(r.model, l, r.weights);
    a.kv_per_token = kv_bytes_per_token(r.model, r.kv);
    for (std::uint32_t st = 0; st < l.pp(); ++st)
        a.kv_per_token_per_gpu = std::max(a.kv_per_token_per_gpu,
                                          kv_bytes_per_token(r.model, r.kv, l.stage(st)));

    // The decode bound at each replica's load.
    if (o.decode && detail::has_decode_figures(r, o.roofline)) {
        if (p != nullptr)
            a.decode = decode_point(*p->decode_costs, a.concurrency_per_replica, demand.context);
        else
            a.decode = decode_point(decode_costs(r, o.roofline), a.concurrency_per_replica,
                                    demand.context);
    }
    return a;
}

}  // namespace detail

/// Every figure of `d` under `demand`. Throws InvalidLayout for a layout the model cannot take or a
/// GPU count that is no multiple of tp x pp, and InvalidInput for a knob the engine cannot take
/// (resolve_serving), a zero context or concurrency, or a GPU without memory.
[[nodiscard]] inline ReplicaAnswer evaluate(const Deployment& d, const Demand& demand,
                                            const EvaluateOptions& o = {}) {
    return detail::evaluate_with(d, demand, o, nullptr);
}

/// What evaluate(d, demand, o) computes of `d` before any demand. Throws what evaluate throws for
/// the deployment itself (a layout, a GPU count, an engine knob, a GPU without memory), so a
/// prepared deployment is a valid one.
[[nodiscard]] inline PreparedDeployment prepare(const Deployment& d,
                                                const EvaluateOptions& o = {}) {
    PreparedDeployment p{.deployment = d, .options = o};
    // The deployment's own checks and its memory, at a demand that cannot fail them.
    const ReplicaAnswer a = evaluate(d, {.context = 1, .concurrency = 1},
                                     {.contexts = false, .decode = false, .roofline = o.roofline});
    const Layout l = a.replica.layout();
    for (std::uint32_t st = 0; st < l.pp(); ++st) p.memory[st] = a.report.memory[st];
    p.weights = a.weights;
    p.weights_per_gpu = a.weights_per_gpu;
    if (o.decode && detail::has_decode_figures(a.replica, o.roofline))
        p.decode_costs = decode_costs(a.replica, o.roofline);
    return p;
}

/// evaluate(p.deployment, demand, p.options), to the bit, paying only for what the demand
/// changes: the cache at the context, the longest contexts and the decode bound at the load.
[[nodiscard]] inline ReplicaAnswer evaluate(const PreparedDeployment& p, const Demand& demand) {
    return detail::evaluate_with(p.deployment, demand, p.options, &p);
}

}  // namespace kvplan
