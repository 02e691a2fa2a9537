#pragma once

// kvplan fleet as one call: the replicas of one deployment that a request rate needs under TTFT /
// TPOT targets, with requests drawn from a length distribution. Everything the answer depends on
// is decided here:
//   - the KV budget of each pipeline stage under the engine (engine_memory, or the KV memory
//     given), and the paged KV per request on that stage's GPUs, over the distribution;
//   - with a shared prefix, each stage's pool holding the prefix's full blocks once and every
//     request only its own (kv_histogram_shared), and the same fleet without sharing beside it;
//   - one plan per stage (fleet.hpp's plan_fleet), the stage with the smallest batch setting the
//     replica's;
//   - the step timing: the latency estimate with the batch running, requests of the mean prompt
//     and output (FleetSizeBy::estimate), or the roofline decode bound at the mean decode context
//     / an efficiency, the prefill bound of the mean prompt as its TTFT (FleetSizeBy::bound);
//   - the batch, its binding constraint and the replicas (plan/replicas.hpp's size_replicas, the
//     sizing plan_disaggregated's aggregated pool does too, so both agree on the same replica);
//   - with the GPUs deployed named (Deployment::gpus), whether their replicas serve the rate, and
//     the rate they serve: by Little's law a replica holds `batch` requests for the time in
//     system each, so R replicas serve R x batch / time in system requests a second.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>

#include "../detail/enum_table.hpp"
#include "../engine/report.hpp"
#include "../engine/vllm.hpp"
#include "../error.hpp"
#include "../fleet.hpp"
#include "../roofline/estimate.hpp"
#include "deployment.hpp"
#include "evaluate.hpp"
#include "replicas.hpp"

namespace kvplan {

/// How a fleet's steps are timed.
enum class FleetSizeBy : std::uint8_t {
    estimate,  ///< the latency estimate (the GPU family's fitted parameters, or Serving::estimate)
    bound,     ///< the roofline decode bound / efficiency: an optimistic fleet
};

/// Each way of timing a fleet's steps, spelled (kvplan fleet --size-by).
inline constexpr FixedArray<detail::EnumName<FleetSizeBy>, 2> fleet_size_by_names{{
    {FleetSizeBy::estimate, "estimate"},
    {FleetSizeBy::bound, "bound"},
}};

/// The spelling of `s`.
[[nodiscard]] constexpr const char* name(FleetSizeBy s) noexcept {
    return detail::enum_name(fleet_size_by_names, s);
}

/// What a fleet must serve, on what replica.
struct FleetRequest {
    /// The replica: model, GPU, tp x pp (dp, ep and dcp are not modelled here and must be 1), its
    /// weights and KV format; `gpus` the GPUs deployed, a multiple of tp x pp (0: none named,
    /// the fleet is what is sized); `serving` its engine and knobs (a calibration's reserve and
    /// estimate parameters in Serving::reserve and Serving::estimate; max_sequences the engine's
    /// cap on sequences, default vLLM's max_num_seqs for the GPU).
    Deployment deployment;
    LengthDistribution lengths{};  ///< prompt and output lengths of the requests
    double rate_per_s = 0;         ///< requests arriving per second
    Seconds tpot_target{};
    std::optional<Seconds> ttft_target{};    ///< nullopt: no TTFT target
    std::uint64_t shared_prefix_tokens = 0;  ///< tokens every prompt starts with
    FleetSizeBy size_by = FleetSizeBy::estimate;
    double size_at_percentile = 95;  ///< KV of every request at this percentile
    double epsilon = 0;              ///< > 0: the batch by overflow probability instead
    double efficiency = 1.0;         ///< FleetSizeBy::bound: TPOT = decode bound / this, in (0, 1]
};

/// The fleet, and every figure it was sized from.
struct FleetAnswer {
    FleetPlan plan{};                  ///< batch, binding, replicas, on the limiting stage
    std::uint32_t limiting_stage = 0;  ///< the stage with the smallest batch
    Bytes kv_budget_per_gpu{};         ///< that stage's KV budget per GPU
    std::uint32_t replica_gpus = 1;    ///< tp x pp
    std::uint64_t gpus = 0;            ///< replicas x replica_gpus
    std::uint64_t max_batch = 0;       ///< the engine's cap on sequences (0: none)
    bool max_batch_default = false;    ///< the cap is vLLM's default, not Serving's
    std::uint32_t block_size = 1;      ///< tokens per KV block, as the engine pages
    // The lengths the step timing assumes.
    double mean_output_tokens = 0;
    double output_tokens_per_s = 0;             ///< the whole fleet: rate x mean_output_tokens
    std::uint64_t mean_prompt = 1;              ///< round(mean prompt), at least 1
    std::uint64_t mean_output = 1;              ///< round(mean output), at least 1
    std::uint64_t decode_context = 1;           ///< round(mean prompt + output / 2), at least 1
    std::uint64_t p95_prompt = 1;               ///< the prompt at p95 (nearest rank)
    Seconds prefill_bound_mean{};               ///< roofline prefill bound of the mean prompt
    Seconds prefill_bound_p95{};                ///< ... of the p95 prompt
    BatchTiming at_one{};                       ///< the timing with one sequence (as sized)
    Seconds tpot_bound_at_batch{};              ///< the decode bound at the batch (feasible)
    std::optional<LatencyEstimate> estimate{};  ///< the estimate at the batch (feasible, params)
    std::optional<EstimateParams> params{};     ///< the estimate's parameters, when any
    EstimateBasis basis = EstimateBasis::unknown_family;
    // Sharing a prefix (shared_prefix_tokens > 0).
    std::uint64_t shared_prefix_blocks = 0;  ///< full blocks of the prefix, held once
    Bytes shared_prefix_held_once{};         ///< their bytes per GPU of the limiting stage
    /// What sharing saves per GPU at the plan's batch: held once x (batch - 1).
    Bytes shared_prefix_saved_at_batch{};
    std::optional<FleetPlan> without_sharing{};  ///< every request holding the prefix itself
    std::optional<Seconds> ttft_target{};        ///< the request's
    // The GPUs deployed (Deployment::gpus), when named.
    std::uint64_t gpus_given = 0;      ///< 0: none named
    std::uint64_t replicas_given = 0;  ///< gpus_given / replica_gpus
    bool given_serves = false;         ///< feasible and replicas_given >= plan.replicas
    /// Requests a second the replicas given serve: replicas_given x batch / time in system
    /// (feasible; else 0).
    double rate_given_serves = 0;
    /// The TTFT a report names: the target, else the TTFT at the batch (the prefill bound of the
    /// mean prompt when no batch is feasible).
    [[nodiscard]] Seconds ttft() const noexcept {
        if (ttft_target) return *ttft_target;
        return plan.feasible ? plan.ttft_at_batch : prefill_bound_mean;
    }
};

/// Why a fleet takes no speculative decoding, in the words of its refusal.
inline constexpr std::string_view fleet_speculation_refusal =
    "the fleet is sized without a drafter: its steps and each request's KV are the model's own";

namespace detail {

inline void check_fleet(const FleetRequest& q) {
    const auto where = [&] { return model_where(q.deployment.model.config()); };
    if (!(q.rate_per_s > 0.0) || !std::isfinite(q.rate_per_s))
        throw_field_error<InvalidInput>(where(), "rate", "> 0 requests per second",
                                        std::to_string(q.rate_per_s));
    if (!(q.tpot_target > Seconds{}))
        throw_field_error<InvalidInput>(where(), "tpot", "> 0 s", "0 s or less");
    if (q.ttft_target && !(*q.ttft_target > Seconds{}))
        throw_field_error<InvalidInput>(where(), "ttft", "> 0 s", "0 s or less");
    if (q.lengths.requests() == 0)
        throw_field_error<InvalidInput>(where(), "lengths", "at least one request", "none");
    if (!(q.size_at_percentile > 0.0 && q.size_at_percentile <= 100.0))
        throw_field_error<InvalidInput>(where(), "percentile", "0 to 100",
                                        std::to_string(q.size_at_percentile));
    if (!(q.epsilon >= 0.0 && q.epsilon < 1.0))
        throw_field_error<InvalidInput>(where(), "epsilon", "a probability in (0, 1)",
                                        std::to_string(q.epsilon));
    if (!(q.efficiency > 0.0 && q.efficiency <= 1.0))
        throw_field_error<InvalidInput>(where(), "efficiency", "a fraction in (0, 1]",
                                        std::to_string(q.efficiency));
    if (q.deployment.serving.speculation.method != DraftMethod::none)
        throw_field_error<InvalidInput>(where(), "speculation",
                                        text("none (", fleet_speculation_refusal, ")"),
                                        name(q.deployment.serving.speculation.method));
    const ParallelConfig& p = q.deployment.parallel;
    if (p.dp != 1 || p.ep != 1 || p.dcp != 1)
        throw_field_error<InvalidInput>(where(), "parallel", "tp x pp (dp, ep and dcp of 1)",
                                        "dp, ep or dcp above 1");
}

}  // namespace detail

/// The fleet for `q`. Throws InvalidInput for a request out of range, speculative decoding
/// (fleet_speculation_refusal), a shared prefix longer than
/// the shortest prompt, sizing by the estimate with no parameters (a GPU of no known family and
/// none given), or what the layout and the engine refuse.
[[nodiscard]] inline FleetAnswer plan_fleet(const FleetRequest& q) {
    detail::check_fleet(q);
    check_shared_prefix(q.lengths, q.shared_prefix_tokens);
    const Deployment& d = q.deployment;
    const Model& m = d.model;
    const ResolvedServing s = resolve_serving(d.serving);
    const Replica r{.model = m,
                    .gpu = d.gpu,
                    .parallel = d.parallel_config(),
                    .weights = d.served_weights(),
                    .kv = d.kv_format()};
    const Layout layout = r.layout();
    const bool by_estimate = q.size_by == FleetSizeBy::estimate;

    FleetAnswer a;
    a.ttft_target = q.ttft_target;
    a.replica_gpus = r.gpus();
    a.block_size = s.block_size;
    // vLLM's scheduler runs at most max_num_seqs per engine (vllm/config/scheduler.py; its
    // default per GPU from vllm/engine/arg_utils.py); the other engines' caps are given or none.
    if (d.serving.max_sequences) {
        a.max_batch = *d.serving.max_sequences;
    } else if (s.engine == Engine::vllm) {
        a.max_batch = vllm_batch_defaults(d.gpu).max_num_seqs;
        a.max_batch_default = true;
    }

    // The estimate's parameters: given (a calibration), else the GPU family's.
    const std::optional<FamilyParams> family = default_params(d.gpu);
    a.params = d.serving.estimate;
    a.basis = a.params         ? EstimateBasis::given
              : !family        ? EstimateBasis::unknown_family
              : family->fitted ? EstimateBasis::family_fitted
                               : EstimateBasis::family_borrowed;
    if (!a.params && family) a.params = family->params;
    if (by_estimate && !a.params)
        detail::throw_field_error<InvalidInput>(
            "GPU '" + std::string(d.gpu.id) + "'", "family",
            "a GPU family with fitted estimate parameters, parameters calibrated on it "
            "(Serving::estimate), or sizing by the bound",
            "none known");

    // The lengths the timing assumes.
    const TraceLengths len = trace_lengths(q.lengths.lengths);
    const auto whole = [](double v) {
        return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(v)));
    };
    a.mean_output_tokens = q.lengths.mean_output();
    a.output_tokens_per_s = q.rate_per_s * a.mean_output_tokens;
    a.mean_prompt = whole(len.mean_prompt);
    a.mean_output = whole(a.mean_output_tokens);
    a.decode_context = whole(q.lengths.mean_decode_context());
    a.p95_prompt = std::max<std::uint64_t>(1, len.prompt.p95);
    a.prefill_bound_mean = prefill_bound(r, a.mean_prompt).ttft;
    a.prefill_bound_p95 = prefill_bound(r, a.p95_prompt).ttft;

    const DecodeCosts costs = decode_costs(r, RooflineOptions{});
    const auto bound_at = [&](std::uint64_t b) {
        return decode_bound(r, b, a.decode_context).tpot;
    };
    const auto estimate_at = [&](std::uint64_t b) {
        return estimate_with_batch(costs, b, a.mean_prompt, a.mean_output,
                                   s.options.vllm.max_num_batched_tokens, *a.params);
    };
    // The first token comes at the TTFT, each later one a TPOT apart.
    const double later_tokens = std::max(0.0, a.mean_output_tokens - 1.0);
    const auto timing = [&](std::uint64_t b) {
        if (by_estimate) return batch_timing(estimate_at(b));
        const Seconds tpot = bound_at(b) / q.efficiency;
        return BatchTiming{.ttft = a.prefill_bound_mean,
                           .tpot = tpot,
                           .request = a.prefill_bound_mean + tpot * later_tokens};
    };
    a.at_one = timing(1);

    // One plan per pipeline stage: each has its own KV budget and share of each request.
    const FleetTargets targets{
        .rate_per_s = q.rate_per_s, .ttft = q.ttft_target, .tpot = q.tpot_target};
    const FleetOptions fo{
        .size_at_percentile = q.size_at_percentile, .epsilon = q.epsilon, .max_batch = a.max_batch};
    const auto plan_stages = [&](bool sharing, FleetAnswer* into) {
        std::optional<FleetPlan> best;
        for (std::uint32_t st = 0; st < layout.pp(); ++st) {
            const Bytes budget =
                d.serving.kv_memory_per_gpu
                    ? *d.serving.kv_memory_per_gpu
                    : engine_memory(s.engine, r, layout, st, s.budget, s.options).kv_memory;
            FleetPlan p;
            Bytes held_once{};
            std::uint64_t blocks = 0;
            if (sharing && q.shared_prefix_tokens != 0) {
                const SharedPrefixKv sp =
                    kv_histogram_shared(q.lengths.lengths.total, m, r.kv, s.block_size,
                                        layout.stage(st), q.shared_prefix_tokens);
                held_once = sp.held_once;
                blocks = sp.blocks;
                const Bytes left = held_once < budget ? budget - held_once : Bytes{};
                p = plan_fleet(targets, sp.own, a.mean_output_tokens, left, timing, fo);
            } else {
                p = plan_fleet(
                    targets,
                    kv_histogram(q.lengths.lengths.total, m, r.kv, s.block_size, layout.stage(st)),
                    a.mean_output_tokens, budget, timing, fo);
            }
            if (!best || p.batch < best->batch) {
                best = p;
                if (into) {
                    into->limiting_stage = st;
                    into->kv_budget_per_gpu = budget;
                    into->shared_prefix_held_once = held_once;
                    into->shared_prefix_blocks = blocks;
                }
            }
        }
        return *best;
    };
    a.plan = plan_stages(true, &a);
    if (q.shared_prefix_tokens != 0) a.without_sharing = plan_stages(false, nullptr);
    a.gpus = a.plan.replicas * a.replica_gpus;
    if (d.gpus != 0) {
        a.gpus_given = detail::checked_gpus(d, r, layout);  // InvalidLayout unless whole replicas
        a.replicas_given = a.gpus_given / a.replica_gpus;
        a.given_serves = a.plan.feasible && a.replicas_given >= a.plan.replicas;
        if (a.plan.feasible)
            a.rate_given_serves = static_cast<double>(a.replicas_given) *
                                  static_cast<double>(a.plan.batch) /
                                  a.plan.time_in_system.in(seconds);
    }
    if (a.plan.batch > 1)
        a.shared_prefix_saved_at_batch = a.shared_prefix_held_once * (a.plan.batch - 1);
    if (a.plan.feasible) {
        a.tpot_bound_at_batch = bound_at(a.plan.batch);
        if (a.params) a.estimate = estimate_at(a.plan.batch);
    }
    return a;
}

}  // namespace kvplan
