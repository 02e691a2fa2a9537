// kvplan trace: what a request trace asks of the cache, one call to kvplan::analyze_trace
// (plan/trace.hpp): KV per request (nearest-rank percentiles), paged against contiguous waste, the
// concurrency the arrivals imply (Little's law and a replay), and the replica that holds the
// replay's peak.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <kvplan/format.hpp>
#include <kvplan/plan/trace.hpp>
#include <kvplan/trace.hpp>
#include <memory>

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

struct TraceFlags {
    std::string file;
    Seconds ttft = default_service_times.ttft;
    Seconds tpot = default_service_times.tpot;
    std::optional<std::uint64_t> max_model_len;
    TraceOptions time_unit{};  ///< numeric arrival times in seconds unless --time-unit says
};

Cell cell_rate(double per_s) { return cell_number(per_s, "requests/s", 3); }

template <class T, class ToCell>
std::vector<Cell> percentile_row(std::string name, const Percentiles<T>& p, ToCell to_cell,
                                 Cell mean) {
    return {cell_text(std::move(name)),
            to_cell(p.p50),
            to_cell(p.p95),
            to_cell(p.p99),
            to_cell(p.max),
            std::move(mean)};
}

void run_trace(const TraceFlags& tf, const CommonOptions& o, Context& ctx) {
    // Flags first: a usage error comes before any file is read (the values were read as CLI11
    // parsed them).
    const Seconds ttft = tf.ttft;
    const Seconds tpot = tf.tpot;
    const TraceOptions topt = tf.time_unit;
    const LayoutInput li = parse_layout(o);
    const std::optional<WeightOptions> weights_flag = parse_weights(o);
    // analyze_trace refuses a drafter (it replays the model alone); named here by its flag.
    refuse_speculation_flags(o, trace_speculation_refusal);
    const Serving serving = parse_serving(o);
    const std::optional<std::uint64_t> mml_flag = tf.max_model_len;
    if (o.gpus && o.gpu.empty() && !serving.kv_memory_per_gpu)
        usage_error("--gpus",
                    "--gpu or --kv-memory as well (the replicas deployed are sized on one)",
                    "neither");

    const ResolvedModel rm = resolve_model_flags(o, ctx, import_options(o));
    const Model& m = rm.get();
    const Trace t = load_trace(tf.file, topt);
    std::optional<ResolvedGpu> g;
    if (!o.gpu.empty()) g = resolve_gpu(o.gpu, ctx);
    const TraceAnswer a =
        analyze_trace(t, TraceSizing{.model = m,
                                     .gpu = g ? std::optional<GpuSpec>(g->spec) : std::nullopt,
                                     .tp = li.tp,
                                     .pp = li.pp,
                                     .gpus = o.gpus ? li.gpus : 0U,
                                     .weights = weights_flag,
                                     .kv = kv_flag(o),
                                     .serving = serving,
                                     .times = {ttft, tpot},
                                     .max_model_len = mml_flag});
    const KvFormat kv = a.kv.format;
    const TraceLengths& len = a.lengths;
    const std::uint64_t max_model_len = a.max_model_len;
    const std::uint32_t block = a.block_size;
    const std::uint32_t busiest = a.busiest_stage;
    const KvDistribution& whole = a.whole;
    const KvDistribution& per_gpu = a.per_gpu;
    const TraceWaste& waste = a.waste;

    Report rep;
    rep.command = "trace";
    rep.heading = fmt::format("{}: {} requests of {} on {}, KV in {}, blocks of {} tokens", tf.file,
                              grouped(len.requests), display_name(rm),
                              describe_layout({li.tp, li.pp, {}}), name(kv.dtype), block);
    rep.inputs = {{"trace", cell_text(tf.file)},
                  {"model", cell_text(rm.id)},
                  {"gpu", cell_text(o.gpu)},
                  {"tp", cell_count(li.tp, "")},
                  {"pp", cell_count(li.pp, "")},
                  {"kv_dtype", cell_text(std::string(name(kv.dtype)))},
                  {"engine", cell_text(std::string(name(serving.engine)))},
                  {"block_size", cell_count(block, "tokens")},
                  {"max_model_len", cell_count(max_model_len, "tokens")},
                  {"ttft", cell(ttft)},
                  {"tpot", cell(tpot)}};
    rep.figures.push_back({"requests", "Requests", cell_count(len.requests, "requests"), {}, {}});

    Table dist{"distribution",
               "Per request (nearest-rank percentiles)",
               {{"quantity", "quantity"},
                {"p50", "p50"},
                {"p95", "p95"},
                {"p99", "p99"},
                {"max", "max"},
                {"mean", "mean"}},
               {}};
    const auto tokens = [](std::uint64_t n) { return cell_count(n, "tokens"); };
    const auto bytes = [](Bytes b) { return cell(b); };
    dist.rows.push_back(percentile_row("prompt tokens", len.prompt, tokens,
                                       cell_number(len.mean_prompt, "tokens", 1)));
    dist.rows.push_back(percentile_row("generated tokens", len.output, tokens,
                                       cell_number(len.mean_output, "tokens", 1)));
    dist.rows.push_back(percentile_row("total tokens", len.total, tokens,
                                       cell_number(len.mean_total, "tokens", 1)));
    dist.rows.push_back(
        percentile_row("KV, whole model", whole.exact, bytes, cell(whole.mean_exact)));
    dist.rows.push_back(percentile_row(fmt::format("KV in blocks, per GPU (stage {})", busiest),
                                       per_gpu.paged, bytes, cell(per_gpu.mean_paged)));
    rep.tables.push_back(std::move(dist));
    rep.csv_table = 0;

    rep.figures.push_back({"kv_used_per_gpu",
                           "KV used at completion, summed, per GPU",
                           cell(waste.used),
                           cell_exact(waste.used),
                           {"sum over requests of kv_bytes_per_sequence(prompt + generated)",
                            {fmt::format("{} requests within max_model_len", waste.requests)}}});
    rep.figures.push_back(
        {"kv_paged_per_gpu",
         "KV held in blocks, summed, per GPU",
         cell(waste.paged),
         cell_exact(waste.paged),
         {"sum over requests of their blocks x block bytes",
          {fmt::format("block_size = {} tokens", block),
           fmt::format("waste {} = {:.2f} % of what blocks hold",
                       fmt::format("{}", waste.paged_waste()), waste.paged_waste_percent())}}});
    rep.figures.push_back({"kv_contiguous_per_gpu",
                           "KV reserved contiguously, summed, per GPU",
                           cell(waste.contiguous),
                           cell_exact(waste.contiguous),
                           {"requests x kv_bytes_per_sequence(max_model_len)",
                            {fmt::format("max_model_len = {} tokens", grouped(max_model_len)),
                             fmt::format("waste {} = {:.2f} % of the reservation",
                                         fmt::format("{}", waste.contiguous_waste()),
                                         waste.contiguous_waste_percent())}}});
    rep.figures.push_back({"paged_waste_fraction",
                           "Paged waste",
                           cell_number(waste.paged_waste_percent(), "% of blocks held", 2),
                           {},
                           {}});
    rep.figures.push_back({"contiguous_waste_fraction",
                           "Contiguous waste",
                           cell_number(waste.contiguous_waste_percent(), "% of the reservation", 2),
                           {},
                           {}});
    if (waste.over_max_len > 0)
        rep.notes.push_back(fmt::format(
            "{} request{} longer than max_model_len ({} tokens) left out of the waste sums",
            waste.over_max_len, waste.over_max_len == 1 ? "" : "s", grouped(max_model_len)));

    const std::optional<TraceConcurrency>& c = a.concurrency;
    if (!c) {
        rep.notes.push_back(t.has_arrivals ? "all arrivals at one instant: no rate, no replay"
                                           : "the trace has no arrival times: no rate, no replay");
    } else {
        rep.figures.push_back({"arrival_span", "Arrivals span", cell(c->arrival_span), {}, {}});
        rep.figures.push_back({"arrival_rate",
                               "Arrival rate",
                               cell_rate(c->rate_per_s),
                               {},
                               {"(requests - 1) / (last arrival - first arrival)", {}}});
        rep.figures.push_back({"mean_time_in_system",
                               "Mean time in system",
                               cell(c->mean_time_in_system),
                               {},
                               {"TTFT + mean generated tokens x TPOT",
                                {fmt::format("TTFT = {} (--ttft-ms)", ttft),
                                 fmt::format("TPOT = {} (--tpot-ms)", tpot),
                                 fmt::format("mean generated = {:.1f} tokens", len.mean_output)}}});
        rep.figures.push_back({"littles_law_in_flight",
                               "In flight by Little's law",
                               cell_number(c->littles_law, "requests", 1),
                               {},
                               {"arrival rate x mean time in system", {}}});
        rep.figures.push_back({"replay_peak_requests",
                               "Replay: peak in flight",
                               cell_count(c->peak_requests, "requests"),
                               {},
                               {}});
        rep.figures.push_back({"replay_p95_requests",
                               "Replay: p95 in flight (time-weighted)",
                               cell_count(c->p95_requests, "requests"),
                               {},
                               {}});
        rep.figures.push_back({"replay_mean_requests",
                               "Replay: mean in flight",
                               cell_number(c->mean_requests, "requests", 1),
                               {},
                               {}});
        rep.figures.push_back({"replay_peak_kv_per_gpu",
                               "Replay: peak KV in blocks, per GPU",
                               cell(c->peak_kv),
                               cell_exact(c->peak_kv),
                               {"the most, over time, of the blocks every request in flight holds",
                                {fmt::format("reached {} after the first arrival", c->peak_at)}}});
        rep.figures.push_back({"replay_p95_kv_per_gpu",
                               "Replay: p95 KV in blocks, per GPU",
                               cell(c->p95_kv),
                               cell_exact(c->p95_kv),
                               {}});

        if (a.replica_sized) {
            const std::string gpu_id = g ? g->id : "given KV memory";
            const ParallelConfig parallel{.tp = li.tp, .pp = li.pp};
            const std::optional<TraceReplica>& on = a.on_replica;
            if (on) {
                rep.figures.push_back(
                    {"kv_budget_per_gpu",
                     fmt::format("KV budget per GPU ({}, {})", gpu_id, name(serving.engine)),
                     cell(on->kv_budget),
                     cell_exact(on->kv_budget),
                     {}});
                rep.figures.push_back({"holds_peak",
                                       fmt::format("{} holds the peak", describe_layout(parallel)),
                                       cell_bool(on->holds_peak),
                                       {},
                                       {}});
                rep.figures.push_back(
                    {"replicas_for_peak",
                     fmt::format("Replicas of {} for the peak", describe_layout(parallel)),
                     on->replicas_for_peak == 0
                         ? cell_null("none (no KV budget)")
                         : cell_count(on->replicas_for_peak,
                                      on->replicas_for_peak == 1 ? "replica" : "replicas"),
                     {},
                     {"ceil(peak KV / KV budget), arrivals split evenly over replicas", {}}});
            }
            if (a.given_holds_peak) {
                rep.figures.push_back(
                    {"replicas_given",
                     "Replicas deployed (--gpus)",
                     cell_count(a.replicas_given, a.replicas_given == 1 ? "replica" : "replicas"),
                     {},
                     {fmt::format("{} GPUs / {} a replica", grouped(a.gpus_given), li.tp * li.pp),
                      {}}});
                rep.figures.push_back(
                    {"given_holds_peak",
                     "The replicas deployed hold the peak",
                     cell_bool(*a.given_holds_peak),
                     {},
                     {"replicas deployed >= replicas for the peak, arrivals split evenly", {}}});
            }
            const std::optional<TraceReplica>& best = a.smallest;
            rep.figures.push_back(
                {"smallest_replica_for_peak",
                 "Smallest replica that holds the peak",
                 best ? cell_text(fmt::format("{} of {}", describe_layout(best->parallel), gpu_id))
                      : cell_null("none within 64 GPUs"),
                 {},
                 {}});
            if (best)
                rep.extra_json["smallest_replica_for_peak"] = {
                    {"tp", best->parallel.tp},
                    {"pp", best->parallel.pp},
                    {"gpus", best->gpus},
                    {"kv_budget_per_gpu_bytes", best->kv_budget.count()},
                    {"peak_kv_per_gpu_bytes", best->peak_kv.count()}};
        } else {
            rep.notes.push_back("no --gpu: the replica that holds the trace is not sized");
        }
        rep.notes.push_back(
            "replay: each request is in flight from its arrival for TTFT + generated tokens x "
            "TPOT and holds its blocks at completion size throughout (an upper bound: engines grow "
            "them token by token)");
    }
    rep.notes.push_back(
        "percentiles are nearest-rank: the p-th is the smallest value with at least p % of "
        "requests at or below it (sorted[ceil(p/100 x n) - 1]); KV per request counts prompt + "
        "generated tokens");
    if (is_azure_llm_trace(t)) rep.notes.push_back(std::string(azure_attribution));
    render(rep, o.format, o.explain, *ctx.out);
}

}  // namespace

void register_trace(CLI::App& app, Context& ctx) {
    auto o = std::make_shared<CommonOptions>();
    auto tf = std::make_shared<TraceFlags>();
    CLI::App* sub = app.add_subcommand(
        "trace",
        "KV per request over a request trace (CSV or JSON Lines), paged vs contiguous waste, the "
        "concurrency its arrivals imply, and the replica that holds it");
    sub->add_option("file", tf->file, "The trace: CSV with a header row, or JSON Lines")
        ->required();
    add_options(*sub, *o, opt_model | opt_gpu | opt_layout | opt_dtypes | opt_budget | opt_output);
    typed(*sub, "--ttft-ms", tf->ttft, parse_ms, "Time to first token, in ms")
        ->default_str(fmt::format("{:g}", default_service_times.ttft.in(milliseconds)));
    typed(*sub, "--tpot-ms", tf->tpot, parse_ms, "Time per output token, in ms")
        ->default_str(fmt::format("{:g}", default_service_times.tpot.in(milliseconds)));
    typed(*sub, "--max-model-len", tf->max_model_len, parse_tokens,
          "Tokens a contiguous engine reserves per request; default: the model's "
          "max_position_embeddings");
    typed(
        *sub, "--time-unit", tf->time_unit,
        [](std::string_view text, std::string_view) { return trace_options(text); },
        "Unit of numeric arrival times (s, ms, us); a column named *_ms is read in ms")
        ->default_str("s");
    sub->callback([o, tf, &ctx] { run_trace(*tf, *o, ctx); });
}

}  // namespace kvplan::cli
