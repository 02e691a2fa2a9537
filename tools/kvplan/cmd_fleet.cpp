// kvplan fleet: replicas for a request rate under TTFT / TPOT targets. The batch per replica is the
// largest where the TPOT figure and the KV budget both hold; in flight = rate x (TTFT + mean output
// x TPOT); replicas = ceil(in flight / batch). The TPOT figure is the latency estimate's at the
// batch (roofline/estimate.hpp, the default) or the roofline decode bound / --efficiency
// (--size-by bound); both are shown either way.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <kvplan/fleet.hpp>
#include <kvplan/format.hpp>
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

namespace kvplan::cli {

namespace {

struct FleetFlags {
    std::string rate;
    std::string ttft_ms;
    std::string tpot_ms;
    std::string trace;
    std::string epsilon;
    std::string percentile = "95";
    std::string efficiency;  ///< --size-by bound only; default 1
    std::string size_by = "estimate";
    std::string time_unit = "s";
};

void run_fleet(const FleetFlags& ff, const CommonOptions& o, Context& ctx) {
    // Flags first.
    const double rate = parse_positive(ff.rate, "--rate");
    if (ff.tpot_ms.empty()) usage_error("--tpot-ms", "a TPOT target in ms", "");
    const Seconds tpot = parse_ms(ff.tpot_ms, "--tpot-ms");
    std::optional<Seconds> ttft_flag;
    if (!ff.ttft_ms.empty()) ttft_flag = parse_ms(ff.ttft_ms, "--ttft-ms");
    FleetOptions fo;
    fo.size_at_percentile = parse_positive(ff.percentile, "--percentile");
    if (fo.size_at_percentile > 100) usage_error("--percentile", "0 to 100", ff.percentile);
    if (!ff.epsilon.empty()) {
        fo.epsilon = parse_positive(ff.epsilon, "--epsilon");
        if (fo.epsilon >= 1) usage_error("--epsilon", "a probability in (0, 1)", ff.epsilon);
    }
    if (ff.size_by != "estimate" && ff.size_by != "bound")
        usage_error("--size-by",
                    "estimate (the latency estimate's TPOT) or bound (the roofline decode bound / "
                    "--efficiency)",
                    ff.size_by);
    const bool by_estimate = ff.size_by == "estimate";
    if (by_estimate && !ff.efficiency.empty())
        usage_error("--efficiency",
                    "--size-by bound beside it (the estimate has its own fractions: --profile "
                    "calibrates them)",
                    ff.efficiency);
    fo.tpot_efficiency =
        ff.efficiency.empty() ? 1.0 : parse_fraction(ff.efficiency, "--efficiency");
    if (ff.trace.empty() && (o.prompt_dist.empty() || o.output_dist.empty()))
        usage_error("--trace", "a trace, or both --prompt-tokens and --output-tokens", "neither");
    if (!ff.trace.empty() && (!o.prompt_dist.empty() || !o.output_dist.empty()))
        usage_error("--trace", "a trace or --prompt-tokens/--output-tokens, not both", ff.trace);
    const TraceOptions topt = trace_options(ff.time_unit);
    const LayoutInput li = parse_layout(o);
    const KvFormat kv = parse_kv_dtype_flag(o.kv_dtype, "--kv-dtype");
    const std::optional<WeightOptions> weights_flag = parse_weights(o);
    EngineSetup engine = engine_setup(o);
    const Serving serving = parse_serving(o);
    if (o.gpu.empty()) usage_error("--gpu", "a GPU id or spec path (kvplan list gpus)", "");

    LengthDistribution dist;
    std::string dist_source;
    bool azure_trace = false;
    if (!ff.trace.empty()) {
        const Trace t = load_trace(ff.trace, topt);
        azure_trace = is_azure_llm_trace(t);
        dist = LengthDistribution::from_trace(t);
        dist_source = ff.trace;
    } else {
        const auto p = parse_quantile_points(o.prompt_dist, "--prompt-tokens");
        const auto q = parse_quantile_points(o.output_dist, "--output-tokens");
        dist = LengthDistribution::from_percentiles(p, q);
        dist_source = fmt::format("prompt {} / output {} tokens", o.prompt_dist, o.output_dist);
    }
    const std::uint64_t shared_prefix = o.shared_prefix.value_or(0);
    check_shared_prefix(dist, shared_prefix);
    const ResolvedModel rm = resolve_model_flags(o, ctx, import_options(o));
    const ResolvedGpu g = resolve_gpu(o.gpu, ctx);
    // --profile: its reserve shapes the KV budget, its parameters the estimate.
    const std::optional<CalibrationProfile> profile = read_profile_flag(o);
    std::optional<EstimateParams> params;
    if (profile) {
        engine.budget = apply_profile(*profile, engine.budget, engine.utilization_given);
        // The fractions are of the peak the matmuls run at: the weights' own type.
        const WeightOptions w = weights_flag ? *weights_flag : checkpoint_weights(rm.get());
        params = profile_estimate(*profile, o.profile, g.id, matmul_compute(w, g.spec));
    }
    const EstimateBasis basis = params                           ? EstimateBasis::given
                                : !default_params(g.spec)        ? EstimateBasis::unknown_family
                                : default_params(g.spec)->fitted ? EstimateBasis::family_fitted
                                                                 : EstimateBasis::family_borrowed;
    if (!params && default_params(g.spec)) params = default_params(g.spec)->params;
    if (by_estimate && !params)
        detail::throw_field_error<InvalidInput>(
            fmt::format("GPU '{}'", g.id), "family",
            "a GPU family with fitted estimate parameters (A100, L4/L40, H100/H200/GH200, "
            "B100/B200/GB200, MI300/MI325), a --profile calibrated on it, or --size-by bound",
            "none known");
    const Model& m = rm.get();
    const WeightOptions weights = weights_flag ? *weights_flag : checkpoint_weights(m);
    const Layout layout = make_layout(m, li);
    const Replica r{
        .model = m, .gpu = g.spec, .parallel = {li.tp, li.pp, {}}, .weights = weights, .kv = kv};
    if (o.max_num_seqs)
        fo.max_batch = *o.max_num_seqs;
    else if (engine.engine == Engine::vllm)
        fo.max_batch = vllm_batch_defaults(g.spec).max_num_seqs;

    const TraceLengths len = trace_lengths(dist.lengths);
    const double mean_output = dist.mean_output();
    const std::uint64_t decode_context = std::max<std::uint64_t>(
        1, static_cast<std::uint64_t>(std::llround(dist.mean_decode_context())));
    const std::uint64_t mean_prompt =
        std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(len.mean_prompt)));
    const std::uint64_t mean_output_tokens =
        std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(mean_output)));
    const Seconds prefill_mean = prefill_bound(r, mean_prompt).ttft;
    const Seconds prefill_p95 = prefill_bound(r, std::max<std::uint64_t>(1, len.prompt.p95)).ttft;
    const auto bound_at = [&](std::uint64_t b) { return decode_bound(r, b, decode_context).tpot; };
    // The estimate with `b` requests running at once, each of the mean prompt and output: the
    // batch the plan sizes is the one that runs, so none waits.
    const DecodeCosts costs = decode_costs(r, RooflineOptions{});
    const auto estimate_at = [&](std::uint64_t b) {
        const Load l{.concurrency = b,
                     .prompt_tokens = mean_prompt,
                     .output_tokens = mean_output_tokens,
                     .max_num_batched_tokens = serving.max_num_batched_tokens};
        return estimate_latency(costs, l, *params, RunningCap{b, true});
    };
    const auto step = [&](std::uint64_t b) {
        return by_estimate ? estimate_at(b).itl : bound_at(b);
    };

    // One plan per pipeline stage (each has its own KV budget and share of each request); the
    // stage with the smallest batch sets the replica's. The batch does not depend on the TTFT:
    // without a target, the TTFT is the estimate's at the batch (by the estimate) or the prefill
    // bound of the mean prompt (by the bound), and the plan is redone with it.
    // With a shared prefix each stage's pool holds the prefix's blocks once and every request
    // only its own (kv_histogram_shared); `sharing` false plans as if nothing were shared.
    struct StageSharing {
        Bytes held_once{};
        std::uint64_t blocks = 0;
    };
    const auto plan_with = [&](Seconds ttft, std::uint32_t& limiting, Bytes& budget,
                               StageSharing& shared, bool sharing) {
        const FleetTargets targets{.rate_per_s = rate, .ttft = ttft, .tpot = tpot};
        std::optional<FleetPlan> plan;
        for (std::uint32_t st = 0; st < layout.pp(); ++st) {
            const Bytes b = stage_kv_budget(r, layout, st, engine);
            FleetPlan p;
            StageSharing here;
            if (sharing && shared_prefix != 0) {
                const SharedPrefixKv sp = kv_histogram_shared(
                    dist.lengths.total, m, kv, engine.block_size, layout.stage(st), shared_prefix);
                here = {sp.held_once, sp.blocks};
                const Bytes left = sp.held_once < b ? b - sp.held_once : Bytes{};
                p = plan_fleet(targets, sp.own, mean_output, left, step, fo);
            } else {
                const Histogram<Bytes> sizes =
                    kv_histogram(dist.lengths.total, m, kv, engine.block_size, layout.stage(st));
                p = plan_fleet(targets, sizes, mean_output, b, step, fo);
            }
            if (!plan || p.batch < plan->batch) {
                plan = p;
                limiting = st;
                budget = b;
                shared = here;
            }
        }
        return *plan;
    };
    std::uint32_t limiting = 0;
    Bytes budget{};
    StageSharing shared;
    FleetPlan p = plan_with(ttft_flag.value_or(prefill_mean), limiting, budget, shared, true);
    std::optional<LatencyEstimate> at_batch;
    if (params && p.feasible) at_batch = estimate_at(p.batch);
    const bool ttft_estimated = !ttft_flag && by_estimate && at_batch;
    const Seconds ttft = ttft_flag ? *ttft_flag : ttft_estimated ? at_batch->ttft : prefill_mean;
    if (ttft_estimated) p = plan_with(ttft, limiting, budget, shared, true);
    // The same fleet with every request holding the prefix itself, for what sharing adds.
    std::optional<FleetPlan> unshared;
    if (shared_prefix != 0) {
        std::uint32_t l = 0;
        Bytes b{};
        StageSharing none;
        unshared = plan_with(ttft, l, b, none, false);
    }

    Report rep;
    rep.command = "fleet";
    rep.heading = fmt::format("{} on {} x {}: {:g} requests/s, TPOT {}, TTFT {}", display_name(rm),
                              describe_layout(r.parallel), g.id, rate, tpot, ttft);
    const std::string sized_by = by_estimate ? "the latency estimate" : "the roofline bound";
    if (p.feasible)
        rep.verdict = fmt::format(
            "{} replica{} of {} = {} GPU{} ({} binds at batch {}; sized by {})", p.replicas,
            p.replicas == 1 ? "" : "s", describe_layout(r.parallel), p.replicas * layout.ranks(),
            p.replicas * layout.ranks() == 1 ? "" : "s", name(p.binding), p.batch, sized_by);
    else if (p.batch_tpot == 0)
        rep.verdict = fmt::format(
            "NO BATCH MEETS THE TARGETS: one sequence alone decodes at {} per token by {}, above "
            "{}",
            step(1) / fo.tpot_efficiency, sized_by, tpot);
    else
        rep.verdict = "NO BATCH MEETS THE TARGETS: one request does not fit the KV budget";
    rep.inputs = {{"model", cell_text(rm.id)},
                  {"gpu", cell_text(g.id)},
                  {"tp", cell_count(li.tp, "")},
                  {"pp", cell_count(li.pp, "")},
                  {"kv_dtype", cell_text(std::string(name(kv.dtype)))},
                  {"engine", cell_text(std::string(name(engine.engine)))},
                  {"block_size", cell_count(engine.block_size, "tokens")},
                  {"lengths", cell_text(dist_source)},
                  {"rate", cell_number(rate, "requests/s", 3)},
                  {"shared_prefix_tokens", cell_count(shared_prefix, "tokens")},
                  {"tpot_target", cell(tpot)},
                  {"ttft", cell(ttft)},
                  {"size_by", cell_text(ff.size_by)}};
    const auto fig = [&](std::string key, std::string label, Cell v, Explanation e = {}) {
        rep.figures.push_back({std::move(key), std::move(label), std::move(v), {}, std::move(e)});
    };
    fig("mean_output_tokens", "Mean output tokens", cell_number(mean_output, "tokens", 1));
    fig("time_in_system", "Time in system per request", cell(p.time_in_system),
        {"TTFT + mean output tokens x TPOT target",
         {fmt::format("TTFT = {}{}", ttft,
                      ttft_flag        ? " (--ttft-ms)"
                      : ttft_estimated ? " (the estimate's at the batch: the mean prompt's "
                                         "prefill chunks and half a step)"
                                       : " (roofline prefill bound at the mean prompt)")}});
    fig("in_flight", "Requests in flight", cell_number(p.in_flight, "requests", 1),
        {"rate x time in system (Little's law)", {}});
    fig("kv_budget_per_gpu", fmt::format("KV budget per GPU (stage {})", limiting), cell(budget));
    fig("kv_per_request_at_percentile",
        fmt::format("KV per request at p{:g}, per GPU{}", fo.size_at_percentile,
                    shared_prefix != 0 ? " (its own blocks)" : ""),
        cell(p.kv_at_percentile));
    fig("batch_kv_at_percentile",
        fmt::format("Batch the KV budget holds, each at p{:g}", fo.size_at_percentile),
        cell_count(p.batch_kv_at_percentile, "sequences"),
        {"floor(KV budget / KV per request at the percentile)", {}});
    if (p.batch_kv_overflow)
        fig("batch_kv_overflow", fmt::format("Batch with P(KV > budget) <= {:g}", fo.epsilon),
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
                                       grouped(decode_context)),
                           fmt::format("efficiency = {:g} (--efficiency)", fo.tpot_efficiency)}});
    if (fo.max_batch != 0)
        fig("max_num_seqs", "max_num_seqs", cell_count(fo.max_batch, "sequences"),
            {!o.max_num_seqs ? "vLLM's default for this GPU (vllm/engine/arg_utils.py)"
                             : "--max-num-seqs",
             {}});
    fig("batch", "Batch per replica", cell_count(p.batch, "sequences"));
    fig("binding", "Binding constraint", cell_text(std::string(name(p.binding))));
    if (unshared) {
        fig("shared_prefix_blocks", "Shared prefix: full blocks held once",
            cell_count(shared.blocks, "blocks"),
            {"floor(min(shared prefix, length - 1) / block_size): only full blocks are shared",
             {fmt::format("block_size = {} tokens", engine.block_size)}});
        fig("shared_prefix_bytes_held_once", "Shared prefix held once per GPU",
            cell(shared.held_once),
            {"the prefix's blocks, every layer counted, out of the KV budget once; each request "
             "then sized by its own blocks",
             {}});
        fig("shared_prefix_bytes_saved", "Shared prefix saves per GPU at the batch",
            cell(p.batch > 1 ? shared.held_once * (p.batch - 1) : Bytes{}),
            {"held once x (batch - 1)", {}});
        fig("batch_without_sharing", "Batch per replica without sharing",
            cell_count(unshared->batch, "sequences"),
            {"the same plan with every request holding the prefix itself",
             {fmt::format("binding: {}", name(unshared->binding))}});
        if (unshared->feasible)
            fig("replicas_without_sharing", "Replicas without sharing",
                cell_count(unshared->replicas, unshared->replicas == 1 ? "replica" : "replicas"));
    }
    if (p.feasible) {
        fig("tpot_at_batch", fmt::format("TPOT at that batch, as sized ({})", ff.size_by),
            cell(p.tpot_at_batch),
            {by_estimate ? "the latency estimate's ITL" : "decode bound / efficiency", {}});
        fig("tpot_bound_seconds", "TPOT bound at that batch", cell(bound_at(p.batch)),
            {"the roofline decode bound at the batch and the mean decode context: no step is "
             "faster",
             {fmt::format("decode context = {} tokens", grouped(decode_context))}});
        if (at_batch) {
            const LatencyEstimate& e = *at_batch;
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
            fig("ttft_estimate_seconds", "TTFT estimate at that batch (no queue)", cell(e.ttft),
                how);
            fig("ttft_bound_seconds", "TTFT bound (the mean prompt's prefill)", cell(prefill_mean),
                {"the roofline prefill bound of the mean prompt alone", {}});
            fig("tokens_per_second_estimate", "Output tokens/s per replica (estimate)",
                cell_number(e.tokens_per_s, "tokens/s", 1), how);
            fig("tokens_per_second_per_gpu_estimate", "Output tokens/s per GPU (estimate)",
                cell_number(e.tokens_per_s_per_gpu, "tokens/s", 1), how);
        }
        fig("overflow_bound", "P(KV in use > budget), Chernoff bound",
            cell_number(p.overflow_bound, "", 6));
        fig("overflow_normal", "P(KV in use > budget), normal estimate",
            cell_number(p.overflow_normal, "", 6));
        fig("replicas", "Replicas",
            cell_count(p.replicas, p.replicas == 1 ? "replica" : "replicas"),
            {"ceil(in flight / batch)", {}});
        fig("gpus", "GPUs",
            cell_count(p.replicas * layout.ranks(),
                       p.replicas * layout.ranks() == 1 ? "GPU" : "GPUs"));
        fig("output_tokens_per_s", "Output tokens/s, whole fleet",
            cell_number(rate * mean_output, "tokens/s", 0), {"rate x mean output tokens", {}});
    }
    if (ttft_flag && prefill_p95 > *ttft_flag)
        rep.notes.push_back(fmt::format(
            "the TTFT target {} is below the prefill bound of the p95 prompt ({} tokens): {}",
            *ttft_flag, grouped(len.prompt.p95), prefill_p95));
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
            fo.tpot_efficiency == 1.0 ? std::string()
                                      : fmt::format(" / efficiency {:g}", fo.tpot_efficiency)));
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
    if (ttft_flag && at_batch && at_batch->ttft > *ttft_flag)
        rep.notes.push_back(fmt::format(
            "the TTFT estimate at batch {} ({}) is above the target {}: the fleet meets the TPOT "
            "target, not the TTFT one",
            grouped(p.batch), at_batch->ttft, *ttft_flag));
    if (profile && profile->has_reserve)
        rep.notes.push_back(fmt::format("reserve from the profile {} ({}, fitted from {})",
                                        o.profile, profile->model, profile->source));
    if (fo.epsilon > 0)
        rep.notes.push_back(
            "overflow mode: batch chosen by the Chernoff bound on the sum of B independent "
            "requests' "
            "KV, a guarantee for that model; the normal estimate is shown for comparison only");
    if (azure_trace) rep.notes.push_back(std::string(azure_attribution));
    render(rep, parse_format(o.format), o.explain, *ctx.out);
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
    sub->add_option("--rate", ff->rate, "Requests arriving per second")->required();
    sub->add_option("--tpot-ms", ff->tpot_ms, "Time per output token target, in ms")->required();
    sub->add_option("--ttft-ms", ff->ttft_ms,
                    "Time to first token target, in ms; default: the estimate's TTFT at the batch "
                    "(--size-by bound: the roofline prefill bound at the mean prompt)");
    sub->add_option("--trace", ff->trace, "Lengths from a request trace (CSV or JSON Lines)");
    sub->get_option("--prompt-tokens")
        ->description("Prompt lengths: one number, or percentile:tokens pairs (50:1000,95:4000)");
    sub->get_option("--output-tokens")
        ->description("Output lengths: one number, or percentile:tokens pairs (50:200,95:800)");
    sub->add_option("--size-by", ff->size_by,
                    "estimate: size by the latency estimate's TPOT at the batch; bound: by the "
                    "roofline decode bound / --efficiency (an optimistic fleet)")
        ->capture_default_str();
    sub->add_option("--percentile", ff->percentile,
                    "Size every request at this percentile of KV per request")
        ->capture_default_str();
    sub->add_option("--epsilon", ff->epsilon,
                    "Instead: the largest batch with P(KV in use > budget) <= epsilon (Chernoff "
                    "bound over the length distribution)");
    sub->add_option("--efficiency", ff->efficiency,
                    "With --size-by bound: the fraction of the decode bound the engine achieves, "
                    "TPOT = bound / this (default 1)");
    sub->add_option("--time-unit", ff->time_unit, "Unit of numeric arrival times in --trace")
        ->capture_default_str();
    sub->callback([o, ff, &ctx] { run_fleet(*ff, *o, ctx); });
}

}  // namespace kvplan::cli
