// kvplan compare: several models, GPUs or dtypes side by side. Comma lists in --model, --gpu,
// --kv-dtype and --weight-dtype; every combination is one case of one call to kvplan::compare
// (plan/compare.hpp): the sizes of kvplan::size, and with --gpu kvplan::evaluate's figures.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <kvplan/format.hpp>
#include <kvplan/plan/compare.hpp>
#include <memory>

#include "answer.hpp"
#include "commands.hpp"
#include "flags.hpp"
#include "parse.hpp"
#include "plot.hpp"
#include "report.hpp"

namespace kvplan::cli {

namespace {

struct CompareOptionsCli {
    CommonOptions common;
    std::string plot;  ///< --plot FILE.svg
};

void run_compare(const CompareOptionsCli& oc, Context& ctx) {
    const CommonOptions& o = oc.common;
    // --model takes a comma list; the inline sizes (--layers ...) describe one model.
    const auto models =
        o.inline_model.given() ? std::vector<std::string>{""} : split_list(o.model, "--model");
    const auto gpus = o.gpu.empty() ? std::vector<std::string>{} : split_list(o.gpu, "--gpu");
    // The formats were read as CLI11 parsed them; no --weight-dtype is the checkpoint's own.
    const std::vector<std::optional<KvFormat>> kvs = kv_flags(o);
    const std::vector<std::optional<WeightFormat>> wds =
        o.weight_dtype.empty() ? std::vector<std::optional<WeightFormat>>{std::nullopt}
                               : o.weight_dtype;
    // A row per model, GPU, KV dtype and weight format: a few milliseconds each.
    constexpr std::size_t max_rows = 1024;
    const std::size_t gpu_count = std::max<std::size_t>(gpus.size(), 1);
    const std::size_t rows = models.size() * gpu_count * kvs.size() * wds.size();
    if (rows > max_rows)
        usage_error("--model",
                    fmt::format("at most {} rows (models x GPUs x KV dtypes x weight "
                                "formats)",
                                grouped(max_rows)),
                    fmt::format("{} x {} x {} x {} = {}", models.size(), gpu_count, kvs.size(),
                                wds.size(), grouped(rows)));
    // Every flag once, before any file is read.
    ReplicaFlags flags = parse_replica_flags(o);
    const bool with_gpu = !gpus.empty();
    if (!oc.plot.empty() && !with_gpu)
        usage_error("--plot", "--gpu as well (the chart is of the decode bound)", "no --gpu");
    if (!with_gpu) {
        refuse_budget_flags_without_gpu(o);
    }
    if (!oc.plot.empty() && flags.shared_prefix != 0)
        usage_error("--plot", "no --shared-prefix (the chart's KV walls hold no shared prefix)",
                    std::to_string(flags.shared_prefix));
    Report rep;
    rep.command = "compare";
    Table t;
    t.key = "rows";
    t.columns = {{"model", "model"},
                 {"gpu", "GPU"},
                 {"kv_dtype", "KV"},
                 {"weight_dtype", "weights"},
                 {"tp", "tp"},
                 {"pp", "pp"},
                 {"kv_bytes_per_token", "KV/token"},
                 {"kv_bytes_per_token_per_gpu", "KV/token/GPU"},
                 {"kv_bytes_per_sequence", "KV/sequence"},
                 {"weight_bytes_per_gpu", "weights/GPU"}};
    if (with_gpu) {
        for (Column c : std::vector<Column>{
                 {"kv_budget_bytes_per_gpu", "KV budget/GPU"},
                 {"max_concurrency", "max seqs"},
                 {"max_concurrency_without_sharing", "unshared", flags.shared_prefix != 0},
                 {"max_context", "max context"},
                 {"fits", "fits"},
                 {"tpot_seconds", "TPOT bound"}})
            t.columns.push_back(c);
    }
    // Every case resolved (models and GPUs read once each), then one library call.
    std::vector<std::string> model_ids, gpu_ids;
    std::vector<CompareCase> cases;
    std::vector<std::string> labels;  // --plot's series
    std::vector<ResolvedGpu> resolved_gpus;
    for (const std::string& g : gpus) resolved_gpus.push_back(resolve_gpu(g, ctx));
    read_draft_model(flags, o, ctx);  // as fit reads it (read_replica)
    for (const std::string& m : models) {
        CommonOptions one_model = o;
        one_model.model = m;
        const ResolvedModel rm = resolve_model_flags(one_model, ctx, flags.import);
        for (std::size_t gi = 0; gi < gpu_count; ++gi)
            for (const std::optional<KvFormat>& k : kvs)
                for (const std::optional<WeightFormat>& w : wds) {
                    CompareCase c{
                        .model = rm.get(), .kv = k, .weights = weights_of(w, o.expert_dtype)};
                    if (with_gpu) c.gpu = resolved_gpus[gi].spec;
                    const WeightOptions weights =
                        c.weights ? *c.weights : checkpoint_weights(rm.get());
                    // ", KV <dtype>" follows once the library has resolved it.
                    labels.push_back(fmt::format(
                        "{}{}{}{}{}", models.size() > 1 ? rm.id : "", models.size() > 1 ? " " : "",
                        with_gpu ? gpus[gi] : std::string(), wds.size() > 1 ? " " : "",
                        wds.size() > 1 ? describe_weights(weights) : ""));
                    model_ids.push_back(rm.id);
                    gpu_ids.push_back(with_gpu ? gpus[gi] : std::string("-"));
                    cases.push_back(std::move(c));
                }
    }
    const std::vector<CompareRow> answers =
        compare(cases, {.parallel = flags.layout.parallel(),
                        .gpus = flags.layout.gpus,
                        .serving = flags.serving,
                        .context = flags.context,
                        .concurrency = flags.concurrency,
                        .shared_prefix_tokens = flags.shared_prefix});
    std::uint64_t context = 0;
    std::vector<std::pair<std::string, Deployment>> plotted;
    for (std::size_t i = 0; i < answers.size(); ++i) {
        const CompareRow& cr = answers[i];
        const SizeAnswer& sz = cr.size;
        context = sz.context;
        std::vector<Cell> row = {
            cell_text(model_ids[i]), cell_text(gpu_ids[i]), cell_text(name(sz.kv.dtype)),
            cell_text(describe_weights(sz.weights)), cell_count(flags.layout.tp, ""),
            cell_count(flags.layout.pp, ""), cell_exact(sz.per_token),
            cell_exact(sz.per_token_per_gpu), cell(sz.per_sequence),
            // On a GPU, the weights as the engine holds them once loaded, as fit shows them.
            cell(cr.replica ? cr.replica->memory().weights : sz.weight_bytes_per_gpu)};
        if (cr.replica) {
            const ReplicaAnswer& a = *cr.replica;
            plotted.emplace_back(labels[i] + ", KV " + name(sz.kv.dtype), *cr.deployment);
            row.push_back(cell(a.kv_budget));
            row.push_back(cell_count(a.total_max_concurrency, ""));
            row.push_back(cell_count(a.total_max_concurrency_without_sharing, ""));
            row.push_back(cell_tokens(a.max_context));
            row.push_back(cell_bool(a.fits()));
            row.push_back(a.decode ? cell(a.decode->tpot) : cell_null("-"));
        }
        t.rows.push_back(std::move(row));
    }
    rep.heading =
        fmt::format("{} configuration{} side by side at {} tokens{}", t.rows.size(),
                    t.rows.size() == 1 ? "" : "s", grouped(context),
                    with_gpu ? fmt::format(" x {} sequences", grouped(flags.concurrency)) : "");
    rep.inputs = {{"context_tokens", cell_count(context, "tokens")},
                  {"concurrency", cell_count(flags.concurrency, "sequences")}};
    if (flags.shared_prefix != 0)
        rep.inputs.push_back({"shared_prefix_tokens", cell_count(flags.shared_prefix, "tokens")});
    if (with_gpu) append_engine_version_input(rep, flags.serving);
    rep.tables.push_back(std::move(t));
    rep.csv_table = 0;
    if (!with_gpu)
        rep.notes.push_back("add --gpu for the budget, the concurrency and the decode bound");
    render(rep, o.format, o.explain, *ctx.out);
    if (!oc.plot.empty())
        write_compare_plot(
            oc.plot, plotted, context,
            fmt::format("{} configurations at {} tokens", plotted.size(), grouped(context)));
}

}  // namespace

void register_compare(CLI::App& app, Context& ctx) {
    auto o = std::make_shared<CompareOptionsCli>();
    CLI::App* sub = app.add_subcommand(
        "compare",
        "Several models, GPUs or dtypes side by side (comma lists: --model a,b --gpu x,y)");
    add_options(*sub, o->common,
                opt_model | opt_gpu | opt_layout | opt_dtypes | opt_dtype_lists | opt_workload |
                    opt_budget | opt_prefix | opt_output);
    sub->add_option("--plot", o->plot,
                    "With --gpu, write an SVG chart with a series per configuration: tokens/s per "
                    "GPU against batch up to each KV wall, and the KV wall against context");
    sub->callback([o, &ctx] { run_compare(*o, ctx); });
}

}  // namespace kvplan::cli
