// kvplan plan: the smallest replicas that meet a workload, over GPU types x GPU counts x tp/pp x
// KV dtypes x weight formats, ranked. Without --gpu every bundled GPU is searched. One call to
// kvplan::plan_replicas; every candidate's figures are evaluate()'s, as fit prints them.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <kvplan/format.hpp>
#include <kvplan/plan/commands.hpp>
#include <kvplan/plan/search.hpp>
#include <memory>

#include "answer.hpp"
#include "commands.hpp"
#include "flags.hpp"
#include "parse.hpp"
#include "report.hpp"

namespace kvplan::cli {

namespace {

struct PlanOptions {
    CommonOptions common;
    std::string max_gpus = "8";
    std::string max_tp = "8";
    std::string top = "10";
    std::string rank;               ///< default: estimate with a prompt / output split, else gpus
    bool no_dp = false;             ///< leave attention data parallelism out of the search
    bool no_ep = false;             ///< leave expert parallelism out
    bool no_dcp = false;            ///< leave decode context parallelism out
    std::string redundant_experts;  ///< for the expert-parallel layouts
};

/// --weight-dtype as a list: formats, or "checkpoint" for the model's own (the default).
std::vector<std::optional<WeightOptions>> weight_axis(const CommonOptions& o) {
    if (o.weight_dtype.empty()) return {std::nullopt};
    std::vector<std::optional<WeightOptions>> out;
    for (const std::string& item : split_list(o.weight_dtype, "--weight-dtype")) {
        if (item == "checkpoint") {
            out.push_back(std::nullopt);
            continue;
        }
        CommonOptions one;
        one.weight_dtype = item;
        one.expert_dtype = o.expert_dtype;
        out.push_back(parse_weights(one));
    }
    return out;
}

std::vector<Cell> candidate_row(std::size_t rank, const PlanCandidate& c,
                                const std::vector<ResolvedGpu>& gpus, bool with_estimate) {
    const ReplicaAnswer& a = c.answer;
    std::vector<Cell> row{cell_count(rank, ""),
                          cell_text(gpus[c.gpu].id),
                          cell_count(a.gpus, ""),
                          cell_count(a.replica.parallel.tp, ""),
                          cell_count(a.replica.parallel.pp, ""),
                          cell_count(a.replica.parallel.dp, ""),
                          cell_count(a.replica.parallel.ep, ""),
                          cell_count(a.replica.parallel.dcp, ""),
                          cell_text(name(a.replica.kv.dtype)),
                          cell_text(describe_weights(a.replica.weights)),
                          cell(a.kv_budget),
                          a.kv_tokens ? cell_count(*a.kv_tokens, "") : cell_null("any"),
                          cell_count(a.max_concurrency, ""),
                          a.shortfall.is_zero() ? cell(a.headroom) : cell_null("-"),
                          a.decode ? cell(a.decode->tpot) : cell_null("-")};
    if (!with_estimate) return row;
    if (!a.estimate) {
        row.insert(row.end(), 5, cell_null(name(a.estimate_basis)));
        return row;
    }
    const LatencyEstimate& e = *a.estimate;
    row.insert(row.end(),
               {cell(e.tpot), cell(e.itl), cell(e.ttft), cell_number(e.tokens_per_s, "tokens/s", 1),
                cell_number(e.tokens_per_s_per_gpu, "tokens/s", 1)});
    return row;
}

void run_plan(const PlanOptions& po, Context& ctx) {
    const CommonOptions& o = po.common;
    const std::uint64_t max_gpus = parse_count(po.max_gpus, "--max-gpus");
    const std::uint64_t max_tp = parse_count(po.max_tp, "--max-tp");
    const std::uint64_t top = parse_count(po.top, "--top");
    if (max_gpus > 64) usage_error("--max-gpus", "at most 64", po.max_gpus);
    if (max_tp > 64) usage_error("--max-tp", "at most 64", po.max_tp);
    const TokenSplitFlags split = parse_token_split(o);
    const std::string rank = po.rank.empty() ? (split.given() ? "estimate" : "gpus") : po.rank;
    if (rank != "gpus" && rank != "fastest" && rank != "estimate")
        usage_error("--rank",
                    "estimate (the most output tokens/s per GPU by the latency estimate), gpus "
                    "(fewest GPUs first) or fastest (the lowest TPOT bound first)",
                    po.rank);
    if (rank == "estimate" && !split.given())
        usage_error("--rank",
                    "--prompt-tokens and --output-tokens beside estimate (the load the "
                    "estimate serves)",
                    po.rank);
    SearchSpace space;
    space.max_gpus = static_cast<std::uint32_t>(max_gpus);
    space.max_tp = static_cast<std::uint32_t>(max_tp);
    space.data_parallel = !po.no_dp;
    space.expert_parallel = !po.no_ep;
    space.context_parallel = !po.no_dcp;
    if (!po.redundant_experts.empty()) {
        const std::uint64_t r = parse_count(po.redundant_experts, "--redundant-experts", 0);
        if (r > 65536) usage_error("--redundant-experts", "at most 65536", po.redundant_experts);
        space.redundant_experts = static_cast<std::uint32_t>(r);
    }
    space.kv_formats.clear();
    for (KvDtype d : parse_list(o.kv_dtype, "--kv-dtype", parse_kv_dtype_flag))
        space.kv_formats.push_back(KvFormat(d));
    space.weights = weight_axis(o);
    Serving serving = parse_serving(o);
    const std::uint64_t concurrency =
        o.concurrency.empty() ? 1 : parse_count(o.concurrency, "--concurrency");
    const std::optional<std::uint64_t> context_flag =
        o.context.empty() ? std::nullopt : std::optional(parse_tokens(o.context, "--context"));
    if (context_flag) check_context_holds_split(*context_flag, split, o.context);
    // A profile is one GPU's calibration: the search is then over that GPU alone.
    if (!o.profile.empty() && (o.gpu.empty() || o.gpu.find(',') != std::string::npos))
        usage_error("--gpu", "one GPU beside --profile (a calibration is of one GPU)",
                    o.gpu.empty() ? "every bundled GPU" : o.gpu);
    const ResolvedModel rm = resolve_model_flags(o, ctx, import_options(o));
    const std::uint64_t context = context_flag    ? *context_flag
                                  : split.given() ? split.sum()
                                                  : context_limit(rm.get().config()).tokens;
    std::vector<ResolvedGpu> gpus;
    if (o.gpu.empty())
        gpus = bundled_gpus(ctx);
    else
        for (const std::string& g : split_list(o.gpu, "--gpu")) gpus.push_back(resolve_gpu(g, ctx));
    for (const ResolvedGpu& g : gpus) space.gpus.push_back(g.spec);
    const std::optional<CalibrationProfile> profile = read_profile_flag(o);
    if (profile) use_profile(*profile, o.profile, gpus.front().id, ComputeDtype::bf16, serving);

    const Demand demand{context, concurrency, split.prompt, split.output};
    const PlanAnswer p = plan_replicas(rm.get(), space, serving, demand,
                                       rank == "fastest"    ? Ranking::fastest
                                       : rank == "estimate" ? Ranking::estimate
                                                            : Ranking::fewest_gpus);

    Report rep;
    rep.command = "plan";
    if (p.fits.empty()) {
        rep.verdict = fmt::format(
            "NO REPLICA of up to {} GPUs fits {} sequences of {} tokens ({} layouts searched)",
            max_gpus, grouped(concurrency), grouped(context), p.searched);
    } else {
        const ReplicaAnswer& best = p.fits.front().answer;
        rep.verdict = fmt::format(
            "{}: {} x {} ({}, KV {}, weights {}) holds {} sequences of {} tokens; room for {}",
            rank == "fastest"    ? "FASTEST"
            : rank == "estimate" ? "MOST TOKENS/S PER GPU"
                                 : "SMALLEST",
            best.gpus, gpus[p.fits.front().gpu].id, layout_text(best.replica.parallel),
            name(best.replica.kv.dtype), describe_weights(best.replica.weights),
            grouped(concurrency), grouped(context), grouped(best.max_concurrency));
        if (best.estimate)
            *rep.verdict += fmt::format(
                "; by the estimate {:.1f} tokens/s per GPU, TPOT {} (bound {}), TTFT {} (bound "
                "{})",
                best.estimate->tokens_per_s_per_gpu, best.estimate->tpot, best.estimate->itl_bound,
                best.estimate->ttft, best.estimate->ttft_bound);
    }
    rep.heading = fmt::format(
        "{}: {} GPU type{} x 1-{} GPUs x {} x {} KV dtype{} x {} weight format{}, engine {}; {} "
        "layouts searched, {} fit",
        display_name(rm), gpus.size(), gpus.size() == 1 ? "" : "s", max_gpus,
        fmt::format("tp/pp{}{}{}", space.data_parallel ? "/dp" : "",
                    space.expert_parallel ? "/ep" : "", space.context_parallel ? "/dcp" : ""),
        space.kv_formats.size(), space.kv_formats.size() == 1 ? "" : "s", space.weights.size(),
        space.weights.size() == 1 ? "" : "s", name(serving.engine), p.searched, p.fits.size());
    rep.inputs = {{"model", cell_text(rm.id)},
                  {"context_tokens", cell_count(context, "tokens")},
                  {"concurrency", cell_count(concurrency, "sequences")},
                  {"engine", cell_text(std::string(name(serving.engine)))},
                  {"max_gpus", cell_count(max_gpus, "")},
                  {"rank", cell_text(rank)}};
    if (split.given()) {
        rep.inputs.push_back({"prompt_tokens", cell_count(*split.prompt, "tokens")});
        rep.inputs.push_back({"output_tokens", cell_count(*split.output, "tokens")});
    }
    append_model_notes(rep, rm);
    rep.figures.push_back({"found", "found", cell_bool(!p.fits.empty()), {}, {}, false});
    rep.figures.push_back(
        {"layouts_searched", "layouts searched", cell_count(p.searched, ""), {}, {}, false});
    std::vector<Column> columns = {{"rank", "#"},
                                   {"gpu", "GPU"},
                                   {"gpus", "GPUs"},
                                   {"tp", "tp"},
                                   {"pp", "pp"},
                                   {"dp", "dp"},
                                   {"ep", "ep"},
                                   {"dcp", "dcp"},
                                   {"kv_dtype", "KV"},
                                   {"weights", "weights"},
                                   {"kv_budget_bytes_per_gpu", "KV budget/GPU"},
                                   {"kv_tokens_capacity", "KV tokens"},
                                   {"max_concurrency", "max seqs"},
                                   {"headroom_bytes_per_gpu", "headroom/GPU"},
                                   {"tpot_seconds", "TPOT bound"}};
    if (split.given())
        columns.insert(columns.end(),
                       {{"tpot_estimate_seconds", "TPOT est."},
                        {"itl_estimate_seconds", "ITL est.", false},
                        {"ttft_estimate_seconds", "TTFT est."},
                        {"tokens_per_second_estimate", "tokens/s est."},
                        {"tokens_per_second_per_gpu_estimate", "tokens/s/GPU est."}});
    Table t;
    t.key = "candidates";
    t.columns = columns;
    for (std::size_t i = 0; i < p.fits.size() && i < top; ++i)
        t.rows.push_back(candidate_row(i + 1, p.fits[i], gpus, split.given()));
    rep.tables.push_back(std::move(t));
    rep.csv_table = 0;
    if (p.fits.empty() && !p.nearest_misses.empty()) {
        Table misses;
        misses.key = "nearest_misses";
        misses.title = "Nearest misses (the most sequences held)";
        misses.columns = columns;
        for (std::size_t i = 0; i < p.nearest_misses.size(); ++i)
            misses.rows.push_back(candidate_row(i + 1, p.nearest_misses[i], gpus, split.given()));
        rep.tables.push_back(std::move(misses));
        rep.notes.push_back(
            "none fits: more GPUs (--max-gpus), a smaller KV format (--kv-dtype fp8), a smaller "
            "weight format (--weight-dtype fp8) or a shorter context would; each miss shows how "
            "many sequences it holds");
    }
    if (!p.fits.empty())
        for (const EngineCommand& c : serve_commands(p, rm.get(), space, serving, demand,
                                                     {.model = served_model(rm, ctx)})) {
            if (c.command)
                rep.notes.push_back(fmt::format("{} command line (candidate {}): {}",
                                                name(c.engine), c.candidate + 1,
                                                c.command->line()));
            else
                rep.notes.push_back(
                    fmt::format("{}: no command line ({})", name(c.engine), c.refused));
        }
    if (p.fits.size() > top)
        rep.notes.push_back(fmt::format("{} more fit; --top N shows more", p.fits.size() - top));
    if (rank == "fastest")
        rep.notes.push_back("ranked by the decode-step bound at the target concurrency, then GPUs");
    else if (rank == "estimate")
        rep.notes.push_back(
            "ranked by output tokens/s per GPU by the latency estimate at the load (the demand "
            "served on the fewest GPU-seconds per token), then GPUs, then the TPOT estimate; the "
            "bound stands beside it (--rank gpus or fastest ranks without the estimate)");
    else
        rep.notes.push_back(
            "ranked by GPUs, then sequences held, then the decode-step bound at "
            "the target concurrency");
    if (profile && profile->has_reserve)
        rep.notes.push_back(fmt::format("reserve from the profile {} ({}, fitted on {} from {})",
                                        o.profile, profile->model, gpus.front().id,
                                        profile->source));
    if (split.given()) {
        rep.notes.push_back(fmt::format(
            "the estimate assumes a closed loop of {} clients, every request {} tokens in and {} "
            "out, at most max seqs running at once, chunked prefill as vLLM V1 schedules; the TPOT "
            "bound is at {} sequences of {} tokens (a request's last step)",
            grouped(concurrency), grouped(*split.prompt), grouped(*split.output),
            grouped(concurrency), grouped(context)));
        // The parameters of each GPU type shown, once.
        std::vector<std::size_t> seen;
        for (std::size_t i = 0; i < p.fits.size() && i < top; ++i) {
            const PlanCandidate& c = p.fits[i];
            if (std::find(seen.begin(), seen.end(), c.gpu) != seen.end()) continue;
            seen.push_back(c.gpu);
            const ReplicaAnswer& a = c.answer;
            rep.notes.push_back(
                a.estimate ? fmt::format("estimate parameters on {}: {}", gpus[c.gpu].id,
                                         estimate_basis_text(a.estimate_basis, a.gpu_family,
                                                             a.estimate_params, o.profile))
                           : fmt::format("{}: {}", gpus[c.gpu].id, no_estimate_text(a)));
        }
    }
    render(rep, parse_format(o.format), o.explain, *ctx.out);
}

}  // namespace

void register_plan(CLI::App& app, Context& ctx) {
    auto o = std::make_shared<PlanOptions>();
    CLI::App* sub = app.add_subcommand(
        "plan",
        "The smallest replicas that hold a workload, over GPU types x counts x tp/pp x KV dtypes x "
        "weight formats");
    add_options(*sub, o->common,
                opt_model | opt_gpu | opt_dtypes | opt_workload | opt_budget | opt_lengths |
                    opt_profile | opt_output);
    sub->get_option("--gpu")->description(
        "GPUs to search, comma-separated ids or spec paths (default: every bundled GPU)");
    sub->get_option("--kv-dtype")->description("KV dtypes to search, comma-separated (bf16,fp8)");
    sub->get_option("--weight-dtype")
        ->description(
            "Weight formats to search, comma-separated (checkpoint,fp8); default: the "
            "checkpoint's own");
    sub->add_option("--max-gpus", o->max_gpus, "The most GPUs a replica may have")
        ->capture_default_str();
    sub->add_option("--max-tp", o->max_tp, "The largest tensor-parallel degree (one NVLink domain)")
        ->capture_default_str();
    sub->add_option("--top", o->top, "Candidates shown")->capture_default_str();
    sub->add_option("--rank", o->rank,
                    "estimate: the most output tokens/s per GPU by the latency estimate (the "
                    "default with --prompt-tokens and --output-tokens); gpus: fewest GPUs first "
                    "(the default without them); fastest: the lowest decode bound first");
    sub->add_flag("--no-dp", o->no_dp, "Leave attention data parallelism out of the search");
    sub->add_flag("--no-ep", o->no_ep, "Leave expert parallelism out of the search");
    sub->add_flag("--no-dcp", o->no_dcp, "Leave decode context parallelism out of the search");
    sub->add_option(
        "--redundant-experts", o->redundant_experts,
        "Physical experts beyond the routed ones in the expert-parallel layouts (EPLB)");
    sub->callback([o, &ctx] { run_plan(*o, ctx); });
}

}  // namespace kvplan::cli
