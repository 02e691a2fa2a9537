// kvplan plan: the smallest replicas that meet a workload, over GPU types x GPU counts x tp/pp x
// KV dtypes x weight formats, ranked. Without --gpu every bundled GPU is searched. One call to
// kvplan::plan_replicas; every candidate's figures are evaluate()'s, as fit prints them.

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <memory>

#include <kvplan/format.hpp>
#include <kvplan/plan/search.hpp>

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
    std::string rank = "gpus";
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
                                const std::vector<ResolvedGpu>& gpus) {
    const ReplicaAnswer& a = c.answer;
    return {cell_count(rank, ""),
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
}

void run_plan(const PlanOptions& po, Context& ctx) {
    const CommonOptions& o = po.common;
    const std::uint64_t max_gpus = parse_count(po.max_gpus, "--max-gpus");
    const std::uint64_t max_tp = parse_count(po.max_tp, "--max-tp");
    const std::uint64_t top = parse_count(po.top, "--top");
    if (max_gpus > 64) usage_error("--max-gpus", "at most 64", po.max_gpus);
    if (max_tp > 64) usage_error("--max-tp", "at most 64", po.max_tp);
    if (po.rank != "gpus" && po.rank != "fastest")
        usage_error("--rank", "gpus (fewest GPUs first) or fastest (the lowest TPOT bound first)",
                    po.rank);
    SearchSpace space;
    space.max_gpus = static_cast<std::uint32_t>(max_gpus);
    space.max_tp = static_cast<std::uint32_t>(max_tp);
    space.kv_formats.clear();
    for (KvDtype d : parse_list(o.kv_dtype, "--kv-dtype", parse_kv_dtype_flag))
        space.kv_formats.push_back(KvFormat(d));
    space.weights = weight_axis(o);
    const Serving serving = parse_serving(o);
    const std::uint64_t concurrency =
        o.concurrency.empty() ? 1 : parse_count(o.concurrency, "--concurrency");
    const std::optional<std::uint64_t> context_flag =
        o.context.empty() ? std::nullopt : std::optional(parse_tokens(o.context, "--context"));
    const ResolvedModel rm = resolve_model_flags(o, ctx, import_options(o));
    const std::uint64_t context =
        context_flag ? *context_flag : context_limit(rm.get().config()).tokens;
    std::vector<ResolvedGpu> gpus;
    if (o.gpu.empty()) gpus = bundled_gpus(ctx);
    else
        for (const std::string& g : split_list(o.gpu, "--gpu")) gpus.push_back(resolve_gpu(g, ctx));
    for (const ResolvedGpu& g : gpus) space.gpus.push_back(g.spec);

    const Demand demand{context, concurrency};
    const PlanAnswer p =
        plan_replicas(rm.get(), space, serving, demand,
                      po.rank == "fastest" ? Ranking::fastest : Ranking::fewest_gpus);

    Report rep;
    rep.command = "plan";
    if (p.fits.empty()) {
        rep.verdict = fmt::format(
            "NO REPLICA of up to {} GPUs fits {} sequences of {} tokens ({} layouts searched)",
            max_gpus, grouped(concurrency), grouped(context), p.searched);
    } else {
        const ReplicaAnswer& best = p.fits.front().answer;
        rep.verdict = fmt::format(
            "{}: {} x {} (tp {} x pp {}, KV {}, weights {}) holds {} sequences of {} tokens; room "
            "for {}",
            po.rank == "fastest" ? "FASTEST" : "SMALLEST", best.gpus, gpus[p.fits.front().gpu].id,
            best.replica.parallel.tp, best.replica.parallel.pp, name(best.replica.kv.dtype),
            describe_weights(best.replica.weights), grouped(concurrency), grouped(context),
            grouped(best.max_concurrency));
    }
    rep.heading = fmt::format(
        "{}: {} GPU type{} x 1-{} GPUs x tp/pp x {} KV dtype{} x {} weight format{}, engine {}; {} "
        "layouts searched, {} fit",
        display_name(rm), gpus.size(), gpus.size() == 1 ? "" : "s", max_gpus,
        space.kv_formats.size(), space.kv_formats.size() == 1 ? "" : "s", space.weights.size(),
        space.weights.size() == 1 ? "" : "s", name(serving.engine), p.searched, p.fits.size());
    rep.inputs = {{"model", cell_text(rm.id)},
                  {"context_tokens", cell_count(context, "tokens")},
                  {"concurrency", cell_count(concurrency, "sequences")},
                  {"engine", cell_text(std::string(name(serving.engine)))},
                  {"max_gpus", cell_count(max_gpus, "")}};
    append_model_notes(rep, rm);
    rep.figures.push_back({"found", "found", cell_bool(!p.fits.empty()), {}, {}, false});
    rep.figures.push_back(
        {"layouts_searched", "layouts searched", cell_count(p.searched, ""), {}, {}, false});
    const std::vector<Column> columns = {{"rank", "#"},
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
    Table t;
    t.key = "candidates";
    t.columns = columns;
    for (std::size_t i = 0; i < p.fits.size() && i < top; ++i)
        t.rows.push_back(candidate_row(i + 1, p.fits[i], gpus));
    rep.tables.push_back(std::move(t));
    rep.csv_table = 0;
    if (p.fits.empty() && !p.nearest_misses.empty()) {
        Table misses;
        misses.key = "nearest_misses";
        misses.title = "Nearest misses (the most sequences held)";
        misses.columns = columns;
        for (std::size_t i = 0; i < p.nearest_misses.size(); ++i)
            misses.rows.push_back(candidate_row(i + 1, p.nearest_misses[i], gpus));
        rep.tables.push_back(std::move(misses));
        rep.notes.push_back(
            "none fits: more GPUs (--max-gpus), a smaller KV format (--kv-dtype fp8), a smaller "
            "weight format (--weight-dtype fp8) or a shorter context would; each miss shows how "
            "many sequences it holds");
    }
    if (p.fits.size() > top)
        rep.notes.push_back(fmt::format("{} more fit; --top N shows more", p.fits.size() - top));
    rep.notes.push_back(po.rank == "fastest"
                            ? "ranked by the decode-step bound at the target concurrency, then GPUs"
                            : "ranked by GPUs, then sequences held, then the decode-step bound at "
                              "the target concurrency");
    render(rep, parse_format(o.format), o.explain, *ctx.out);
}

}  // namespace

void register_plan(CLI::App& app, Context& ctx) {
    auto o = std::make_shared<PlanOptions>();
    CLI::App* sub = app.add_subcommand(
        "plan",
        "The smallest replicas that hold a workload, over GPU types x counts x tp/pp x KV dtypes x "
        "weight formats");
    add_options(*sub, o->common, opt_model | opt_gpu | opt_dtypes | opt_workload | opt_budget |
                                     opt_output);
    sub->get_option("--gpu")->description(
        "GPUs to search, comma-separated ids or spec paths (default: every bundled GPU)");
    sub->get_option("--kv-dtype")->description("KV dtypes to search, comma-separated (bf16,fp8)");
    sub->get_option("--weight-dtype")
        ->description("Weight formats to search, comma-separated (checkpoint,fp8); default: the "
                      "checkpoint's own");
    sub->add_option("--max-gpus", o->max_gpus, "The most GPUs a replica may have")
        ->capture_default_str();
    sub->add_option("--max-tp", o->max_tp, "The largest tensor-parallel degree (one NVLink domain)")
        ->capture_default_str();
    sub->add_option("--top", o->top, "Candidates shown")->capture_default_str();
    sub->add_option("--rank", o->rank,
                    "gpus: fewest GPUs first; fastest: the lowest decode bound first")
        ->capture_default_str();
    sub->callback([o, &ctx] { run_plan(*o, ctx); });
}

}  // namespace kvplan::cli
