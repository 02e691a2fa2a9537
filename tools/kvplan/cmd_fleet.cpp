// kvplan fleet: replicas for a request rate under TTFT / TPOT targets, one call to
// kvplan::plan_fleet (plan/fleet.hpp); the figures are its own, rendered here.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <kvplan/fleet.hpp>
#include <kvplan/format.hpp>
#include <kvplan/plan/fleet.hpp>
#include <kvplan/roofline.hpp>
#include <memory>

#include "answer.hpp"
#include "commands.hpp"
#include "explain.hpp"
#include "flags.hpp"
#include "parse.hpp"
#include "replica.hpp"
#include "report.hpp"
#include "traffic.hpp"
#include "typed_option.hpp"

namespace kvplan::cli {

namespace {

struct FleetFlags {
    double rate = 0;    ///< required
    Seconds tpot_ms{};  ///< required
    std::optional<Seconds> ttft_ms;
    std::string trace;
    std::optional<double> epsilon;
    double percentile = 95;
    std::optional<double> efficiency;  ///< --size-by bound only; default 1
    FleetSizeBy size_by = FleetSizeBy::estimate;
    std::optional<TraceOptions> time_unit;  ///< --time-unit, with --trace only
};

void run_fleet(const FleetFlags& ff, const CommonOptions& o, Context& ctx) {
    // Flags first; the request is built once the model is read.
    struct {
        LengthDistribution lengths{};
        double rate_per_s = 0;
        Seconds tpot_target{};
        std::optional<Seconds> ttft_target{};
        std::uint64_t shared_prefix_tokens = 0;
        FleetSizeBy size_by = FleetSizeBy::estimate;
        double size_at_percentile = 95;
        double epsilon = 0;
        double efficiency = 1.0;
    } q;
    // The numbers were read as CLI11 parsed them (register_fleet).
    q.rate_per_s = ff.rate;
    q.tpot_target = ff.tpot_ms;
    q.ttft_target = ff.ttft_ms;
    q.size_at_percentile = ff.percentile;
    q.epsilon = ff.epsilon.value_or(0);
    q.size_by = ff.size_by;
    const bool by_estimate = q.size_by == FleetSizeBy::estimate;
    if (by_estimate && ff.efficiency)
        usage_error("--efficiency",
                    "--size-by bound beside it (the estimate has its own fractions: --profile "
                    "calibrates them)",
                    fmt::format("{:g}", *ff.efficiency));
    q.efficiency = ff.efficiency.value_or(1.0);
    if (ff.trace.empty() && (!o.prompt_dist || !o.output_dist))
        usage_error("--trace", "a trace, or both --prompt-tokens and --output-tokens", "neither");
    if (!ff.trace.empty() && (o.prompt_dist || o.output_dist))
        usage_error("--trace", "a trace or --prompt-tokens/--output-tokens, not both", ff.trace);
    if (ff.time_unit && ff.trace.empty())
        usage_error("--time-unit", "--trace as well (the unit of its arrival times)", "no --trace");
    const LayoutInput li = parse_layout(o);
    const std::optional<WeightOptions> weights_flag = parse_weights(o);
    // plan_fleet refuses a drafter (it sizes the model alone); named here by its flag.
    refuse_speculation_flags(o, fleet_speculation_refusal);
    Serving serving = parse_serving(o);
    (void)resolve_serving(serving);  // the engine's knobs refused before any file is read
    if (o.gpu.empty()) usage_error("--gpu", "a GPU id or spec path (kvplan list gpus)", "");

    std::string dist_source;
    bool azure_trace = false;
    if (!ff.trace.empty()) {
        const Trace t = load_trace(ff.trace, ff.time_unit.value_or(TraceOptions{}));
        azure_trace = is_azure_llm_trace(t);
        q.lengths = LengthDistribution::from_trace(t);
        dist_source = ff.trace;
    } else {
        q.lengths =
            LengthDistribution::from_percentiles(o.prompt_dist->points, o.output_dist->points);
        dist_source =
            fmt::format("prompt {} / output {} tokens", o.prompt_dist->text, o.output_dist->text);
    }
    q.shared_prefix_tokens = o.shared_prefix.value_or(0);
    check_shared_prefix(q.lengths, q.shared_prefix_tokens);
    const ResolvedModel rm = resolve_model_flags(o, ctx, import_options(o));
    const ResolvedGpu g = resolve_gpu(o.gpu, ctx);
    const Model& m = rm.get();
    // --profile: its reserve shapes the KV budget, its parameters the estimate; the fractions are
    // of the peak the matmuls run at, the weights' own type.
    const std::optional<CalibrationProfile> profile = read_profile_flag(o);
    if (profile) {
        const WeightOptions w =
            served_weights(m, weights_flag, serving.engine, serving.engine_version);
        serving =
            apply_profile(*profile, std::move(serving), o.profile, g.id, matmul_compute(w, g.spec));
    }
    if (by_estimate && !serving.estimate && !default_params(g.spec))
        detail::throw_field_error<InvalidInput>(
            fmt::format("GPU '{}'", g.id), "family",
            "a GPU family with fitted estimate parameters (A100, L4/L40, H100/H200/GH200, "
            "B100/B200/GB200, MI300/MI325), a --profile calibrated on it, or --size-by bound",
            "none known");
    const Deployment deployment{.model = m,
                                .gpu = g.spec,
                                .parallel = li.parallel(),
                                .gpus = o.gpus ? li.gpus : 0U,
                                .weights = weights_flag,
                                .kv = kv_flag(o),
                                .serving = serving};
    const KvFormat kv = deployment.kv_format();
    const FleetAnswer a = plan_fleet(FleetRequest{.deployment = deployment,
                                                  .lengths = q.lengths,
                                                  .rate_per_s = q.rate_per_s,
                                                  .tpot_target = q.tpot_target,
                                                  .ttft_target = q.ttft_target,
                                                  .shared_prefix_tokens = q.shared_prefix_tokens,
                                                  .size_by = q.size_by,
                                                  .size_at_percentile = q.size_at_percentile,
                                                  .epsilon = q.epsilon,
                                                  .efficiency = q.efficiency});
    const FleetPlan& p = a.plan;
    const ParallelConfig parallel{.tp = li.tp, .pp = li.pp};
    const Seconds tpot = q.tpot_target;
    const Seconds ttft = a.ttft();
    const std::optional<Seconds>& ttft_flag = q.ttft_target;
    const std::uint32_t limiting = a.limiting_stage;
    const std::uint64_t mean_prompt = a.mean_prompt;
    const std::uint64_t mean_output_tokens = a.mean_output;
    const double mean_output = a.mean_output_tokens;
    const std::uint64_t shared_prefix = q.shared_prefix_tokens;
    const std::optional<FleetPlan>& unshared = a.without_sharing;
    const std::optional<EstimateParams>& params = a.params;
    const EstimateBasis basis = a.basis;
    const std::uint32_t block_size = a.block_size;
    const std::uint64_t gpus = a.gpus;
    const Engine engine = serving.engine;

    Report rep;
    rep.command = "fleet";
    rep.heading = fmt::format("{} on {} x {}: {:g} requests/s, TPOT {}, TTFT {}", display_name(rm),
                              describe_layout(parallel), g.id, q.rate_per_s, tpot, ttft);
    const std::string sized_by = by_estimate ? "the latency estimate" : "the roofline bound";
    if (p.feasible)
        rep.verdict =
            fmt::format("{} replica{} of {} = {} GPU{} ({} binds at batch {}; sized by {})",
                        p.replicas, p.replicas == 1 ? "" : "s", describe_layout(parallel), gpus,
                        gpus == 1 ? "" : "s", name(p.binding), p.batch, sized_by);
    else if (p.batch_tpot == 0)
        rep.verdict = fmt::format(
            "NO BATCH MEETS THE TARGETS: one sequence alone decodes at {} per token by {}, above "
            "{}",
            a.at_one.tpot, sized_by, tpot);
    else if (p.batch_ttft == 0)
        rep.verdict = fmt::format(
            "NO BATCH MEETS THE TARGETS: one request alone waits {} for its first token by {}, "
            "above {}",
            a.at_one.ttft, sized_by, *ttft_flag);
    else
        rep.verdict = "NO BATCH MEETS THE TARGETS: one request does not fit the KV budget";
    rep.inputs = {{"model", cell_text(rm.id)},
                  {"gpu", cell_text(g.id)},
                  {"tp", cell_count(li.tp, "")},
                  {"pp", cell_count(li.pp, "")},
                  {"kv_dtype", cell_text(std::string(name(kv.dtype)))},
                  {"engine", cell_text(std::string(name(engine)))},
                  {"block_size", cell_count(block_size, "tokens")},
                  {"lengths", cell_text(dist_source)},
                  {"rate", cell_number(q.rate_per_s, "requests/s", 3)},
                  {"shared_prefix_tokens", cell_count(shared_prefix, "tokens")},
                  {"tpot_target", cell(tpot)},
                  {"ttft", cell(ttft)},
                  {"size_by", cell_text(name(ff.size_by))}};
    append_engine_version_input(rep, serving);
    const auto fig = [&](std::string key, std::string label, Cell v, Explanation e = {}) {
        rep.figures.push_back({std::move(key), std::move(label), std::move(v), {}, std::move(e)});
    };
    fig("mean_output_tokens", "Mean output tokens", cell_number(mean_output, "tokens", 1));
    if (p.feasible)
        fig("time_in_system", "Time in system per request", cell(p.time_in_system),
            {"TTFT + (mean output tokens - 1) x TPOT, both at the batch",
             {fmt::format("TTFT = {}{}", p.ttft_at_batch,
                          by_estimate ? " (the estimate's at the batch: the mean prompt's "
                                        "prefill chunks and half a step)"
                                      : " (roofline prefill bound at the mean prompt)"),
              fmt::format("TPOT = {}", p.tpot_at_batch)}});
    if (p.feasible)
        fig("in_flight", "Requests in flight", cell_number(p.in_flight, "requests", 1),
            {"rate x time in system (Little's law)", {}});
    fig("kv_budget_per_gpu", fmt::format("KV budget per GPU (stage {})", limiting),
        cell(a.kv_budget_per_gpu));
    fig("kv_per_request_at_percentile",
        fmt::format("KV per request at p{:g}, per GPU{}", q.size_at_percentile,
                    shared_prefix != 0 ? " (its own blocks)" : ""),
        cell(p.kv_at_percentile));
    fig("batch_kv_at_percentile",
        fmt::format("Batch the KV budget holds, each at p{:g}", q.size_at_percentile),
        cell_count(p.batch_kv_at_percentile, "sequences"),
        {"floor(KV budget / KV per request at the percentile)", {}});
    if (p.batch_kv_overflow)
        fig("batch_kv_overflow", fmt::format("Batch with P(KV > budget) <= {:g}", q.epsilon),
            cell_count(*p.batch_kv_overflow, "sequences"),
            {"largest B with exp(B log E[e^(t X)] - t budget) <= epsilon at the best t (Chernoff)",
             {"X: paged KV per request, drawn from the length distribution"}});
    fig("batch_tpot",
        p.batch_tpot_capped ? "Batch the TPOT target allows (at least)"
                            : "Batch the TPOT target allows",
        cell_count(p.batch_tpot, "sequences"),
        by_estimate
            ? Explanation{"largest B with the ITL estimate at B running <= TPOT target",
                          {fmt::format("requests of the mean prompt {} and output {} tokens",
                                       grouped(mean_prompt), grouped(mean_output_tokens)),
                           "estimate parameters: " +
                               estimate_basis_text(basis, gpu_family(g.spec), *params, o.profile)}}
            : Explanation{"largest B with decode bound(B) / efficiency <= TPOT target",
                          {fmt::format("decode context = {} tokens (mean prompt + output / 2)",
                                       grouped(a.decode_context)),
                           fmt::format("efficiency = {:g} (--efficiency)", q.efficiency)}});
    if (ttft_flag)
        fig("batch_ttft",
            p.batch_ttft_capped ? "Batch the TTFT target allows (at least)"
                                : "Batch the TTFT target allows",
            cell_count(p.batch_ttft, "sequences"),
            by_estimate ? Explanation{"largest B with the TTFT estimate at B running <= TTFT "
                                      "target",
                                      {}}
                        : Explanation{"the roofline prefill bound of the mean prompt <= TTFT "
                                      "target, at any B",
                                      {}});
    if (a.max_batch != 0)
        fig("max_num_seqs", "max_num_seqs", cell_count(a.max_batch, "sequences"),
            {a.max_batch_default ? "vLLM's default for this GPU (vllm/engine/arg_utils.py)"
                                 : "--max-num-seqs",
             {}});
    fig("batch", "Batch per replica", cell_count(p.batch, "sequences"));
    fig("binding", "Binding constraint", cell_text(std::string(name(p.binding))));
    if (unshared) {
        fig("shared_prefix_blocks", "Shared prefix: full blocks held once",
            cell_count(a.shared_prefix_blocks, "blocks"),
            {"floor(min(shared prefix, length - 1) / block_size): only full blocks are shared",
             {fmt::format("block_size = {} tokens", block_size)}});
        fig("shared_prefix_bytes_held_once", "Shared prefix held once per GPU",
            cell(a.shared_prefix_held_once),
            {"the prefix's blocks, every layer counted, out of the KV budget once; each request "
             "then sized by its own blocks",
             {}});
        fig("shared_prefix_bytes_saved", "Shared prefix saves per GPU at the batch",
            cell(a.shared_prefix_saved_at_batch), {"held once x (batch - 1)", {}});
        fig("batch_without_sharing", "Batch per replica without sharing",
            cell_count(unshared->batch, "sequences"),
            {"the same plan with every request holding the prefix itself",
             {fmt::format("binding: {}", name(unshared->binding))}});
        if (unshared->feasible)
            fig("replicas_without_sharing", "Replicas without sharing",
                cell_count(unshared->replicas, unshared->replicas == 1 ? "replica" : "replicas"));
    }
    if (p.feasible) {
        fig("tpot_at_batch", fmt::format("TPOT at that batch, as sized ({})", name(ff.size_by)),
            cell(p.tpot_at_batch),
            {by_estimate ? "the latency estimate's ITL" : "decode bound / efficiency", {}});
        fig("tpot_bound_seconds", "TPOT bound at that batch", cell(a.tpot_bound_at_batch),
            {"the roofline decode bound at the batch and the mean decode context: no step is "
             "faster",
             {fmt::format("decode context = {} tokens", grouped(a.decode_context))}});
        if (a.estimate) {
            const LatencyEstimate& e = *a.estimate;
            const Explanation how{
                "the latency estimate with the batch running, requests of the mean prompt and "
                "output",
                {fmt::format("{} in / {} out", grouped(mean_prompt), grouped(mean_output_tokens)),
                 "estimate parameters: " +
                     estimate_basis_text(basis, gpu_family(g.spec), *params, o.profile)}};
            // By the estimate the line above is this figure already.
            rep.figures.push_back({"itl_estimate_seconds",
                                   "ITL = TPOT estimate at that batch",
                                   cell(e.itl),
                                   {},
                                   how,
                                   !by_estimate});
            rep.figures.push_back(
                {"tpot_estimate_seconds", "TPOT estimate", cell(e.tpot), {}, how, false});
            fig("ttft_estimate_seconds", "TTFT estimate at that batch (no wait for a slot)",
                cell(e.ttft), how);
            fig("ttft_bound_seconds", "TTFT bound (the mean prompt's prefill)",
                cell(a.prefill_bound_mean),
                {"the roofline prefill bound of the mean prompt alone", {}});
            fig("tokens_per_second_estimate", "Output tokens/s per replica (estimate)",
                cell_number(e.tokens_per_s, "tokens/s", 1), how);
            fig("tokens_per_second_per_gpu_estimate", "Output tokens/s per GPU (estimate)",
                cell_number(e.tokens_per_s_per_gpu, "tokens/s", 1), how);
            fig("tokens_per_second_bound", "Output tokens/s per replica (bound)",
                cell_number(e.tokens_per_s_bound, "tokens/s", 1),
                {"the lesser of the decode bound's rate at the batch and the prompts' compute at "
                 "peak: no replica gives more",
                 {}});
        }
        fig("overflow_bound", "P(KV in use > budget), Chernoff bound",
            cell_number(p.overflow_bound, "", 6));
        fig("overflow_normal", "P(KV in use > budget), normal estimate",
            cell_number(p.overflow_normal, "", 6));
        fig("replicas", "Replicas",
            cell_count(p.replicas, p.replicas == 1 ? "replica" : "replicas"),
            {"ceil(in flight / batch)", {}});
        fig("gpus", "GPUs", cell_count(gpus, gpus == 1 ? "GPU" : "GPUs"));
        fig("output_tokens_per_s", "Output tokens/s, whole fleet",
            cell_number(a.output_tokens_per_s, "tokens/s", 0), {"rate x mean output tokens", {}});
    }
    if (a.gpus_given != 0) {
        // The GPUs deployed (--gpus): whether their replicas serve the rate, and what rate.
        fig("gpus_given", "GPUs deployed (--gpus)",
            cell_count(a.gpus_given, a.gpus_given == 1 ? "GPU" : "GPUs"));
        fig("replicas_given", "Replicas deployed",
            cell_count(a.replicas_given, a.replicas_given == 1 ? "replica" : "replicas"),
            {fmt::format("GPUs deployed / {} a replica", a.replica_gpus), {}});
        fig("given_serves_rate", "The replicas deployed serve the rate", cell_bool(a.given_serves),
            {"replicas deployed >= replicas needed", {}});
        if (p.feasible)
            fig("rate_given_serves", "Rate the replicas deployed serve",
                cell_number(a.rate_given_serves, "requests/s", 3),
                {"replicas deployed x batch / time in system (Little's law)", {}});
    }
    if (ttft_flag && a.prefill_bound_p95 > *ttft_flag)
        rep.notes.push_back(fmt::format(
            "the TTFT target {} is below the prefill bound of the p95 prompt ({} tokens): {}",
            *ttft_flag, grouped(a.p95_prompt), a.prefill_bound_p95));
    rep.notes.push_back(
        "each request holds its paged KV at completion size for its whole stay (an upper bound)");
    if (shared_prefix != 0)
        rep.notes.push_back(fmt::format(
            "shared prefix: every request starts with the same {} tokens, whose full blocks the "
            "engine's prefix cache holds once; the KV budget and the overflow figures count "
            "them once and each request by its own blocks",
            grouped(shared_prefix)));
    if (by_estimate)
        rep.notes.push_back(
            "sized by the latency estimate (what a benchmark should measure), the bound beside "
            "it; --size-by bound sizes by the roofline bound / --efficiency instead");
    else
        rep.notes.push_back(fmt::format(
            "sized by the roofline bound{}, which no real step beats: an optimistic fleet; the "
            "estimate is beside it",
            q.efficiency == 1.0 ? std::string() : fmt::format(" / efficiency {:g}", q.efficiency)));
    if (params)
        rep.notes.push_back(fmt::format(
            "the estimate assumes every request of the mean prompt and output, the batch running "
            "at once (chunked prefill with decodes first, as vLLM V1 schedules); parameters: {}",
            estimate_basis_text(basis, gpu_family(g.spec), *params, o.profile)));
    else
        rep.notes.push_back(fmt::format(
            "no latency estimate: GPU '{}' is of no known family (--profile with a calibration "
            "of it gives one)",
            g.id));
    if (profile && profile->has_reserve)
        rep.notes.push_back(fmt::format("reserve from the profile {} ({}, fitted from {})",
                                        o.profile, profile->model, profile->source));
    if (q.epsilon > 0)
        rep.notes.push_back(
            "overflow mode: batch chosen by the Chernoff bound on the sum of B independent "
            "requests' "
            "KV, a guarantee for that model; the normal estimate is shown for comparison only");
    if (azure_trace) rep.notes.push_back(std::string(azure_attribution));
    render(rep, o.format, o.explain, *ctx.out);
}

}  // namespace

void register_fleet(CLI::App& app, Context& ctx) {
    auto o = std::make_shared<CommonOptions>();
    auto ff = std::make_shared<FleetFlags>();
    CLI::App* sub = app.add_subcommand(
        "fleet",
        "Replicas for a request rate under TTFT/TPOT targets: batch per replica, binding "
        "constraint, replicas");
    add_options(*sub, *o,
                opt_model | opt_gpu | opt_layout | opt_dtypes | opt_budget | opt_length_dists |
                    opt_prefix | opt_profile | opt_output);
    typed(*sub, "--rate", ff->rate, parse_positive, "Requests arriving per second")->required();
    typed(*sub, "--tpot-ms", ff->tpot_ms, parse_ms, "Time per output token target, in ms")
        ->required();
    typed(*sub, "--ttft-ms", ff->ttft_ms, parse_ms,
          "Time to first token target, in ms; default: the estimate's TTFT at the batch "
          "(--size-by bound: the roofline prefill bound at the mean prompt)");
    sub->add_option("--trace", ff->trace, "Lengths from a request trace (CSV or JSON Lines)");
    sub->get_option("--prompt-tokens")
        ->description("Prompt lengths: one number, or percentile:tokens pairs (50:1000,95:4000)");
    sub->get_option("--output-tokens")
        ->description("Output lengths: one number, or percentile:tokens pairs (50:200,95:800)");
    typed(*sub, "--size-by", ff->size_by,
          enum_flag(fleet_size_by_names,
                    "estimate (the latency estimate's TPOT) or bound (the roofline decode bound / "
                    "--efficiency)"),
          "estimate: size by the latency estimate's TPOT at the batch; bound: by the roofline "
          "decode bound / --efficiency (an optimistic fleet)")
        ->default_str("estimate");
    typed(
        *sub, "--percentile", ff->percentile,
        [](std::string_view text, std::string_view flag) {
            const double p = parse_positive(text, flag);
            if (p > 100) usage_error(flag, "0 to 100", text);
            return p;
        },
        "Size every request at this percentile of KV per request")
        ->default_str("95");
    typed(
        *sub, "--epsilon", ff->epsilon,
        [](std::string_view text, std::string_view flag) {
            const double e = parse_positive(text, flag);
            if (e >= 1) usage_error(flag, "a probability in (0, 1)", text);
            return e;
        },
        "Instead: the largest batch with P(KV in use > budget) <= epsilon (Chernoff "
        "bound over the length distribution)");
    typed(*sub, "--efficiency", ff->efficiency, parse_fraction,
          "With --size-by bound: the fraction of the decode bound the engine achieves, "
          "TPOT = bound / this (default 1)");
    typed(
        *sub, "--time-unit", ff->time_unit,
        [](std::string_view text, std::string_view) { return trace_options(text); },
        "Unit of numeric arrival times in --trace")
        ->default_str("s");
    sub->callback([o, ff, &ctx] { run_fleet(*ff, *o, ctx); });
}

}  // namespace kvplan::cli
