// kvplan disagg: a prefill pool and a decode pool sized apart for a request rate and TTFT / TPOT
// targets, the prompt's KV moved between them, beside the aggregated plan for the same targets.
// One call to kvplan::plan_disaggregated; the pools' figures are its own.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <kvplan/fleet.hpp>
#include <kvplan/format.hpp>
#include <kvplan/plan/disaggregated.hpp>
#include <kvplan/trace.hpp>
#include <memory>
#include <string>

#include "answer.hpp"
#include "commands.hpp"
#include "flags.hpp"
#include "parse.hpp"
#include "report.hpp"
#include "traffic.hpp"
#include "typed_option.hpp"

namespace kvplan::cli {

namespace {

/// --link: the library's spelling of a link (parse_disagg_link).
DisaggLink parse_link_flag(std::string_view text, std::string_view flag) {
    if (const std::optional<DisaggLink> l = parse_disagg_link(text)) return *l;
    usage_error(flag, disagg_link_expected, text);
}

struct DisaggOptionsCli {
    CommonOptions common;
    std::uint32_t max_gpus = 8;
    std::uint32_t max_tp = 8;
    double rate = 0;     ///< required
    double ttft_ms = 0;  ///< required
    double tpot_ms = 0;  ///< required
    std::string trace;
    std::optional<LengthPercentile> percentile;  ///< with --trace only; default p95
    std::optional<TraceOptions> time_unit;       ///< with --trace only
    DisaggLink link{};
    LatencyModel latency = LatencyModel::estimate;
};

std::vector<Cell> pool_row(std::string pool, const PlanCandidate& c,
                           const std::vector<ResolvedGpu>& gpus, std::uint32_t replicas,
                           std::uint32_t total, std::uint64_t sequences, std::string per_replica,
                           Seconds ttft, Seconds tpot) {
    const ReplicaAnswer& a = c.answer;
    const ParallelConfig& l = a.replica.parallel;
    return {cell_text(std::move(pool)),
            cell_text(gpus[c.gpu].id),
            cell_text(layout_text(l)),
            cell_count(l.tp, ""),
            cell_count(l.pp, ""),
            cell_count(l.dp, ""),
            cell_count(l.ep, ""),
            cell_count(l.dcp, ""),
            cell_count(sequences, ""),
            cell_text(name(a.replica.kv.dtype)),
            cell_count(replicas, ""),
            cell_count(total, ""),
            cell_text(std::move(per_replica)),
            ttft > Seconds{} ? cell(ttft) : cell_null("-"),
            tpot > Seconds{} ? cell(tpot) : cell_null("-")};
}

void run_disagg(const DisaggOptionsCli& dc, Context& ctx) {
    const CommonOptions& o = dc.common;
    const std::uint32_t max_gpus = dc.max_gpus;
    const std::uint32_t max_tp = dc.max_tp;
    const double rate = dc.rate;
    const double ttft_ms = dc.ttft_ms;
    const double tpot_ms = dc.tpot_ms;

    // The lengths sized for: the numbers given, or a percentile of a trace's.
    std::uint64_t prompt = 0, output = 0;
    std::string lengths_source;
    if (dc.trace.empty()) {
        if (!o.prompt_tokens || !o.output_tokens)
            usage_error("--prompt-tokens", "--prompt-tokens and --output-tokens, or --trace",
                        "neither");
        prompt = *o.prompt_tokens;
        output = *o.output_tokens;
        lengths_source = "as given";
        // Flags of a trace would be ignored without one.
        if (dc.percentile)
            usage_error("--percentile", "--trace as well (a percentile of its lengths)",
                        "no --trace");
        if (dc.time_unit)
            usage_error("--time-unit", "--trace as well (the unit of its arrival times)",
                        "no --trace");
    } else {
        if (o.prompt_tokens || o.output_tokens)
            usage_error("--trace", "a trace or --prompt-tokens/--output-tokens, not both",
                        dc.trace);
        const LengthsAt at =
            lengths_at(trace_lengths(load_trace(dc.trace, dc.time_unit.value_or(TraceOptions{}))),
                       dc.percentile.value_or(LengthPercentile::p95));
        prompt = at.prompt_tokens;
        output = at.output_tokens;
        lengths_source = fmt::format("p{} of {} requests in {}", name(at.percentile),
                                     grouped(at.requests), dc.trace);
    }

    SearchSpace space;
    space.max_gpus = max_gpus;
    space.max_tp = max_tp;
    space.kv_formats = kv_flags(o);
    if (const std::optional<WeightOptions> w = parse_weights(o)) space.weights = {w};
    // plan_disaggregated refuses a drafter; named here by its flag.
    refuse_speculation_flags(o, disagg_speculation_refusal);
    Serving serving = parse_serving(o);
    const ResolvedModel rm = resolve_model_flags(o, ctx, import_options(o));
    const std::vector<ResolvedGpu> gpus = resolve_gpu_list(o.gpu, ctx);
    for (const ResolvedGpu& g : gpus) space.gpus.push_back(g.spec);

    DisaggOptions opt;
    opt.link = dc.link;
    // The node's link on a GPU whose spec states none: the library's refusal, named by the flag.
    try {
        for (const ResolvedGpu& g : gpus) (void)link_to(opt.link, g.spec);
    } catch (const InvalidInput& e) {
        throw UsageError(std::string("--link: ") + e.what());
    }
    opt.latency = dc.latency;
    const std::optional<CalibrationProfile> profile = read_profile_flag(o);
    if (profile) {
        if (gpus.size() != 1)
            usage_error("--gpu", "one GPU beside --profile (a calibration is of one GPU)",
                        o.gpu.empty() ? "every bundled GPU" : o.gpu);
        const WeightOptions w =
            served_weights(rm.get(), space.weights.front(), serving.engine, serving.engine_version);
        serving = apply_profile(*profile, std::move(serving), o.profile, gpus.front().id,
                                matmul_compute(w, gpus.front().spec));
        opt.params = serving.estimate;
    }
    const DisaggDemand demand{.rate = rate,
                              .prompt_tokens = prompt,
                              .output_tokens = output,
                              .ttft = ttft_ms * milliseconds,
                              .tpot = tpot_ms * milliseconds};
    const DisaggPlan p = plan_disaggregated(rm.get(), space, serving, demand, opt);

    // The link the plan's KV crossed; without a plan, the one asked for.
    const std::string link_name(p.gpus != 0     ? p.transfer.link.name
                                : opt.link.node ? node_link_name
                                                : opt.link.link.name);

    Report rep;
    rep.command = "disagg";
    const std::string targets =
        fmt::format("{:g} requests/s of {} + {} tokens, TTFT {:g} ms, TPOT {:g} ms", rate,
                    grouped(prompt), grouped(output), ttft_ms, tpot_ms);
    if (p.gpus != 0 && p.aggregated)
        rep.verdict = fmt::format(
            "{}: disaggregated {} GPUs ({} prefill + {} decode) against aggregated {} GPUs, for {}",
            p.disaggregated_smaller ? "DISAGGREGATED IS SMALLER"
                                    : "AGGREGATED IS AS SMALL OR SMALLER",
            p.gpus, p.prefill->gpus, p.decode->gpus, p.aggregated->gpus, targets);
    else if (p.gpus != 0)
        rep.verdict = fmt::format("DISAGGREGATED ONLY: {} GPUs ({} prefill + {} decode) for {}",
                                  p.gpus, p.prefill->gpus, p.decode->gpus, targets);
    else if (p.aggregated)
        rep.verdict = fmt::format("AGGREGATED ONLY: {} GPUs for {}", p.aggregated->gpus, targets);
    else
        rep.verdict =
            fmt::format("NO PLAN meets {} with replicas of up to {} GPUs", targets, max_gpus);
    rep.heading = fmt::format(
        "{}: {} GPU type{} x 1-{} GPUs a replica, engine {}, steps timed by the {}; lengths {}",
        display_name(rm), gpus.size(), gpus.size() == 1 ? "" : "s", max_gpus, engine_text(serving),
        dc.latency == LatencyModel::bound ? "roofline bound (peak figures)" : "latency estimate",
        lengths_source);
    rep.inputs = {{"model", cell_text(rm.id)},
                  {"rate_per_second", cell_number(rate, "requests/s", 3)},
                  {"prompt_tokens", cell_count(prompt, "tokens")},
                  {"output_tokens", cell_count(output, "tokens")},
                  {"ttft_target_seconds", cell(demand.ttft)},
                  {"tpot_target_seconds", cell(demand.tpot)},
                  {"engine", cell_text(std::string(name(serving.engine)))},
                  {"latency", cell_text(name(dc.latency))},
                  {"link", cell_text(link_name)},
                  {"max_gpus", cell_count(max_gpus, "")}};
    append_engine_version_input(rep, serving);
    append_model_notes(rep, rm);
    rep.figures.push_back({"disaggregated_gpus",
                           "disaggregated GPUs",
                           cell_count(p.gpus, "GPUs"),
                           {},
                           {"prefill pool + decode pool", {}}});
    rep.figures.push_back(
        {"aggregated_gpus",
         "aggregated GPUs",
         p.aggregated ? cell_count(p.aggregated->gpus, "GPUs") : cell_null("none"),
         {},
         {"replicas doing both, for the same targets", {}}});
    rep.figures.push_back({"disaggregated_smaller",
                           "disaggregated is smaller",
                           cell_bool(p.disaggregated_smaller),
                           {},
                           {},
                           false});
    if (p.gpus != 0) {
        rep.figures.push_back({"kv_transfer_bytes_per_gpu",
                               "prompt KV moved per request, per decode GPU",
                               cell(p.transfer.bytes_per_rank),
                               cell_exact(p.transfer.bytes_per_rank),
                               {"the prompt's KV on the decode GPU holding the most of it",
                                {fmt::format("{} tokens", grouped(p.transfer.tokens))}}});
        rep.figures.push_back(
            {"kv_transfer_seconds",
             "its transfer",
             cell(p.transfer.time),
             {},
             {"bytes / the link's bandwidth per GPU, added to TTFT",
              {fmt::format("{} at {}", link_name, fmt::format("{}", p.transfer.link.bandwidth))}}});
    }

    Table t;
    t.key = "pools";
    // The layout's degrees and each replica's sequences (prefill: prompts at once, one per dp
    // rank) are JSON and CSV columns; the text reads them in "layout" and "each replica".
    t.columns = {{"pool", "pool"},
                 {"gpu", "GPU"},
                 {"layout", "layout"},
                 {"tp", "tp", false},
                 {"pp", "pp", false},
                 {"dp", "dp", false},
                 {"ep", "ep", false},
                 {"dcp", "dcp", false},
                 {"sequences_per_replica", "sequences", false},
                 {"kv_dtype", "KV"},
                 {"replicas", "replicas"},
                 {"gpus", "GPUs"},
                 {"per_replica", "each replica"},
                 {"ttft_seconds", "TTFT"},
                 {"tpot_seconds", "TPOT"}};
    if (p.prefill)
        t.rows.push_back(
            pool_row("prefill", p.prefill->candidate, gpus, p.prefill->replicas, p.prefill->gpus,
                     p.prefill->servers_per_replica,
                     fmt::format("{} server{} at {:.0f} % busy, {:.1f} ms a prompt in {} pass{}",
                                 p.prefill->servers_per_replica,
                                 p.prefill->servers_per_replica == 1 ? "" : "s",
                                 100 * p.prefill->utilization, p.prefill->service.in(milliseconds),
                                 p.prefill->passes, p.prefill->passes == 1 ? "" : "es"),
                     p.prefill->ttft, Seconds{}));
    if (p.decode)
        t.rows.push_back(
            pool_row("decode", p.decode->candidate, gpus, p.decode->replicas, p.decode->gpus,
                     p.decode->batch,
                     fmt::format("{} sequences (its cache holds {}), {:.1f} requests/s",
                                 grouped(p.decode->batch), grouped(p.decode->batch_cap),
                                 p.decode->requests_per_s),
                     Seconds{}, p.decode->tpot));
    if (p.aggregated)
        t.rows.push_back(
            pool_row("aggregated", p.aggregated->candidate, gpus, p.aggregated->replicas,
                     p.aggregated->gpus, p.aggregated->concurrency,
                     fmt::format("{} requests at once, {:.1f} requests/s",
                                 grouped(p.aggregated->concurrency), p.aggregated->requests_per_s),
                     p.aggregated->ttft, p.aggregated->tpot));
    rep.tables.push_back(std::move(t));
    rep.csv_table = 0;
    if (!p.note.empty()) rep.notes.push_back(p.note);
    const bool unfitted = (p.prefill && !p.prefill->fitted) || (p.decode && !p.decode->fitted) ||
                          (p.aggregated && !p.aggregated->fitted);
    if (unfitted)
        rep.notes.push_back(
            "a GPU of no known family was timed at peak figures: its pool is a lower bound");
    rep.notes.push_back(
        "prefill: each dp rank serves one prompt at a time, an M/D/1 queue at the rate (DistServe, "
        "OSDI 2024); decode: the largest batch within the TPOT target that the cache holds, the "
        "pool by Little's law; aggregated: chunked prefill riding along the decodes");
    render(rep, o.format, o.explain, *ctx.out);
}

}  // namespace

void register_disagg(CLI::App& app, Context& ctx) {
    auto o = std::make_shared<DisaggOptionsCli>();
    CLI::App* sub = app.add_subcommand(
        "disagg",
        "Prefill and decode pools sized apart for a rate and TTFT/TPOT targets, beside the "
        "aggregated plan");
    add_options(*sub, o->common,
                opt_model | opt_gpu | opt_dtypes | opt_kv_dtype_list | opt_budget | opt_lengths |
                    opt_profile | opt_output);
    typed(*sub, "--rate", o->rate, parse_positive, "Requests arriving per second (at random)")
        ->required();
    typed(*sub, "--ttft-ms", o->ttft_ms, parse_positive, "Time to first token target, in ms")
        ->required();
    typed(*sub, "--tpot-ms", o->tpot_ms, parse_positive, "Time per output token target, in ms")
        ->required();
    sub->add_option("--trace", o->trace,
                    "Lengths from a request trace (CSV or JSON Lines), at --percentile");
    typed(*sub, "--percentile", o->percentile,
          enum_flag(length_percentile_names, "50, 95, 99 or max"),
          "With --trace: 50, 95, 99 or max")
        ->default_str("95");
    typed(
        *sub, "--time-unit", o->time_unit,
        [](std::string_view text, std::string_view) { return trace_options(text); },
        "Unit of numeric arrival times in --trace")
        ->default_str("s");
    typed(*sub, "--link", o->link, parse_link_flag,
          "Between the pools, per GPU: ib-ndr (400 Gb/s), ib-hdr (200 Gb/s), node (the GPU "
          "spec's node-to-node figure) or a bandwidth such as 25GB/s")
        ->default_str("ib-ndr");
    typed(*sub, "--latency", o->latency,
          enum_flag(latency_model_names,
                    "estimate (the GPU family's fitted fractions and fixed costs) or bound (peak "
                    "figures: a lower bound on the GPUs)"),
          "estimate (fitted fractions of peak and fixed costs) or bound (peak figures)")
        ->default_str("estimate");
    typed(*sub, "--max-gpus", o->max_gpus, parse_search_bound,
          "The most GPUs a replica of either pool may have")
        ->default_str("8");
    typed(*sub, "--max-tp", o->max_tp, parse_search_bound, "The largest tensor-parallel degree")
        ->default_str("8");
    sub->callback([o, &ctx] { run_disagg(*o, ctx); });
}

}  // namespace kvplan::cli
