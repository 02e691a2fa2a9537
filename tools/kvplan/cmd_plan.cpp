// kvplan plan: the smallest replicas that meet a workload, over GPU types x GPU counts x tp/pp x
// KV dtypes, ranked. Without --gpu every bundled GPU is searched.

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include <kvplan/error.hpp>
#include <kvplan/format.hpp>
#include <kvplan/roofline.hpp>

#include "capacity.hpp"
#include "commands.hpp"
#include "explain.hpp"
#include "parse.hpp"
#include "replica.hpp"
#include "report.hpp"

namespace kvplan::cli {

namespace {

struct PlanOptions {
    CommonOptions common;
    std::string max_gpus = "8";
    std::string max_tp = "8";
    std::string top = "10";
};

struct Candidate {
    const ResolvedGpu* gpu = nullptr;
    std::uint32_t tp = 1, pp = 1;
    KvDtype kv = KvDtype::bf16;
    FitResult fit;
    Seconds tpot{};
};

void run_plan(const PlanOptions& po, Context& ctx) {
    const CommonOptions& o = po.common;
    const std::uint64_t max_gpus = parse_count(po.max_gpus, "--max-gpus");
    const std::uint64_t max_tp = parse_count(po.max_tp, "--max-tp");
    const std::uint64_t top = parse_count(po.top, "--top");
    if (max_gpus > 64) usage_error("--max-gpus", "at most 64", po.max_gpus);
    const std::vector<KvDtype> dtypes = parse_list(o.kv_dtype, "--kv-dtype", parse_kv_dtype_flag);
    const WeightOptions weights = weight_options(o);
    const EngineSetup engine = engine_setup(o);
    const std::uint64_t concurrency =
        o.concurrency.empty() ? 1 : parse_count(o.concurrency, "--concurrency");
    if (!o.context.empty()) (void)parse_tokens(o.context, "--context");
    const ResolvedModel rm = resolve_model(o.model, ctx, "--model", import_options(o));
    const std::uint64_t context = context_or_default(o, rm.get());
    std::vector<ResolvedGpu> gpus;
    if (o.gpu.empty()) gpus = bundled_gpus(ctx);
    else
        for (const std::string& g : split_list(o.gpu, "--gpu")) gpus.push_back(resolve_gpu(g, ctx));

    std::vector<Candidate> fits;
    std::size_t searched = 0;
    for (const ResolvedGpu& g : gpus)
        for (KvDtype d : dtypes)
            for (std::uint32_t n = 1; n <= max_gpus; ++n)
                for (std::uint32_t tp = 1; tp <= std::min<std::uint64_t>(n, max_tp); tp *= 2) {
                    if (n % tp != 0) continue;
                    const std::uint32_t pp = n / tp;
                    if (pp > rm.get().num_layers() || pp > max_pipeline_stages) continue;
                    const Replica r{.model = rm.get(), .gpu = g.spec, .parallel = {.tp = tp, .pp = pp},
                                    .weights = weights, .kv = KvFormat(d)};
                    try {
                        (void)r.layout();
                    } catch (const InvalidLayout&) {
                        continue;  // tp does not divide the heads: not a layout this model takes
                    }
                    ++searched;
                    Candidate c{&g, tp, pp, d, compute_fit(r, engine, context, concurrency), {}};
                    if (!c.fit.fits) continue;
                    c.tpot = decode_bound(r, concurrency, context).tpot;
                    fits.push_back(std::move(c));
                }
    // Fewest GPUs first; then the most sequences held (headroom); then the faster decode bound.
    std::stable_sort(fits.begin(), fits.end(), [](const Candidate& a, const Candidate& b) {
        if (a.tp * a.pp != b.tp * b.pp) return a.tp * a.pp < b.tp * b.pp;
        if (a.fit.max_concurrency != b.fit.max_concurrency)
            return a.fit.max_concurrency > b.fit.max_concurrency;
        return a.tpot < b.tpot;
    });

    Report rep;
    rep.command = "plan";
    rep.verdict = fits.empty()
                      ? fmt::format("NO REPLICA of up to {} GPUs fits {} sequences of {} tokens ({} "
                                    "layouts searched)",
                                    max_gpus, grouped(concurrency), grouped(context), searched)
                      : fmt::format("SMALLEST: {} x {} (tp {} x pp {}, KV {}) holds {} sequences of "
                                    "{} tokens; room for {}",
                                    fits[0].tp * fits[0].pp, fits[0].gpu->id, fits[0].tp, fits[0].pp,
                                    name(fits[0].kv), grouped(concurrency), grouped(context),
                                    grouped(fits[0].fit.max_concurrency));
    rep.heading = fmt::format("{}: {} GPU type{} x 1-{} GPUs x tp/pp x {} KV dtype{}, engine {}; "
                              "{} layouts searched, {} fit",
                              display_name(rm), gpus.size(), gpus.size() == 1 ? "" : "s", max_gpus,
                              dtypes.size(), dtypes.size() == 1 ? "" : "s", name(engine.engine),
                              searched, fits.size());
    rep.inputs = {{"model", cell_text(rm.id)},
                  {"context_tokens", cell_count(context, "tokens")},
                  {"concurrency", cell_count(concurrency, "sequences")},
                  {"engine", cell_text(std::string(name(engine.engine)))},
                  {"weight_dtype", cell_text(std::string(name(weights.format)))},
                  {"max_gpus", cell_count(max_gpus, "")}};
    rep.figures.push_back({"found", "found", cell_bool(!fits.empty()), {}, {}, false});
    rep.figures.push_back({"layouts_searched", "layouts searched", cell_count(searched, ""), {}, {}, false});
    Table t;
    t.key = "candidates";
    t.columns = {{"rank", "#"},
                 {"gpu", "GPU"},
                 {"gpus", "GPUs"},
                 {"tp", "tp"},
                 {"pp", "pp"},
                 {"kv_dtype", "KV"},
                 {"kv_budget_bytes_per_gpu", "KV budget/GPU"},
                 {"kv_tokens_capacity", "KV tokens"},
                 {"max_concurrency", "max seqs"},
                 {"headroom_bytes_per_gpu", "headroom/GPU"},
                 {"tpot_seconds", "TPOT bound"}};
    for (std::size_t i = 0; i < fits.size() && i < top; ++i) {
        const Candidate& c = fits[i];
        t.rows.push_back({cell_count(i + 1, ""), cell_text(c.gpu->id), cell_count(c.tp * c.pp, ""),
                          cell_count(c.tp, ""), cell_count(c.pp, ""),
                          cell_text(std::string(name(c.kv))), cell(c.fit.kv_budget),
                          c.fit.kv_tokens ? cell_count(*c.fit.kv_tokens, "") : cell_null("any"),
                          cell_count(c.fit.max_concurrency, ""), cell(c.fit.headroom),
                          cell(c.tpot)});
    }
    rep.tables.push_back(std::move(t));
    rep.csv_table = 0;
    if (fits.size() > top)
        rep.notes.push_back(fmt::format("{} more fit; --top N shows more", fits.size() - top));
    rep.notes.push_back("ranked by GPUs, then sequences held, then the decode-step bound at the "
                        "target concurrency");
    render(rep, parse_format(o.format), o.explain, *ctx.out);
}

}  // namespace

void register_plan(CLI::App& app, Context& ctx) {
    auto o = std::make_shared<PlanOptions>();
    CLI::App* sub = app.add_subcommand(
        "plan",
        "The smallest replicas that hold a workload, over GPU types x counts x tp/pp x KV dtypes");
    add_options(*sub, o->common, opt_model | opt_gpu | opt_dtypes | opt_workload | opt_budget |
                                     opt_output);
    sub->get_option("--gpu")->description(
        "GPUs to search, comma-separated ids or spec paths (default: every bundled GPU)");
    sub->get_option("--kv-dtype")->description("KV dtypes to search, comma-separated (bf16,fp8)");
    sub->add_option("--max-gpus", o->max_gpus, "The most GPUs a replica may have")
        ->capture_default_str();
    sub->add_option("--max-tp", o->max_tp, "The largest tensor-parallel degree (one NVLink domain)")
        ->capture_default_str();
    sub->add_option("--top", o->top, "Candidates shown")->capture_default_str();
    sub->get_option("--model")->required();
    sub->callback([o, &ctx] { run_plan(*o, ctx); });
}

}  // namespace kvplan::cli
