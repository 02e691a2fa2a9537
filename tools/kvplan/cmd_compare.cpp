// kvplan compare: several models, GPUs or dtypes side by side. Comma lists in --model, --gpu,
// --kv-dtype and --weight-dtype; every combination is one row.

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <memory>

#include <kvplan/format.hpp>
#include <kvplan/kv_bytes.hpp>
#include <kvplan/roofline.hpp>
#include <kvplan/weights.hpp>

#include "capacity.hpp"
#include "commands.hpp"
#include "explain.hpp"
#include "parse.hpp"
#include "replica.hpp"
#include "report.hpp"

namespace kvplan::cli {

namespace {

void run_compare(const CommonOptions& o, Context& ctx) {
    const auto models = split_list(o.model, "--model");
    const auto gpus = o.gpu.empty() ? std::vector<std::string>{} : split_list(o.gpu, "--gpu");
    const auto kvs = split_list(o.kv_dtype, "--kv-dtype");
    const auto wds =
        o.weight_dtype.empty() ? std::vector<std::string>{""} : split_list(o.weight_dtype, "--weight-dtype");
    for (const auto& k : kvs) (void)parse_kv_dtype_flag(k, "--kv-dtype");
    const bool with_gpu = !gpus.empty();
    Report rep;
    rep.command = "compare";
    Table t;
    t.key = "rows";
    t.columns = {{"model", "model"},       {"gpu", "GPU"},
                 {"kv_dtype", "KV"},       {"weight_dtype", "weights"},
                 {"tp", "tp"},             {"pp", "pp"},
                 {"kv_bytes_per_token", "KV/token"},
                 {"kv_bytes_per_token_per_gpu", "KV/token/GPU"},
                 {"kv_bytes_per_sequence", "KV/sequence"},
                 {"weight_bytes_per_gpu", "weights/GPU"}};
    if (with_gpu) {
        for (Column c : std::vector<Column>{{"kv_budget_bytes_per_gpu", "KV budget/GPU"},
                                            {"max_concurrency", "max seqs"},
                                            {"max_context", "max context"},
                                            {"fits", "fits"},
                                            {"tpot_seconds", "TPOT bound"}})
            t.columns.push_back(c);
    }
    std::uint64_t context = 0, concurrency = 0;
    for (const std::string& m : models)
        for (const std::string& g : with_gpu ? gpus : std::vector<std::string>{""})
            for (const std::string& k : kvs)
                for (const std::string& w : wds) {
                    CommonOptions one = o;
                    one.model = m;
                    one.gpu = g;
                    one.kv_dtype = k;
                    one.weight_dtype = w;
                    std::vector<Cell> row;
                    const ResolvedModel rm = resolve_model(m, ctx, "--model", import_options(o));
                    const LayoutInput li = parse_layout(one);
                    const Layout layout = make_layout(rm.get(), li);
                    const KvFormat f = parse_kv_dtype_flag(k, "--kv-dtype");
                    const WeightOptions wo = weight_options(one);
                    context = context_or_default(one, rm.get());
                    concurrency = one.concurrency.empty() ? 1 : parse_count(one.concurrency, "--concurrency");
                    Bytes per_token_gpu{}, per_seq{};
                    for (std::uint32_t st = 0; st < layout.pp(); ++st)
                        per_token_gpu = std::max(per_token_gpu, kv_bytes_per_token(rm.get(), f, layout.stage(st)));
                    per_seq = kv_bytes_per_sequence(rm.get(), f, context);
                    row = {cell_text(rm.id), cell_text(g.empty() ? "-" : g),
                           cell_text(std::string(name(f.dtype))),
                           cell_text(std::string(name(wo.format))), cell_count(li.tp, ""),
                           cell_count(li.pp, ""), cell_exact(kv_bytes_per_token(rm.get(), f)),
                           cell_exact(per_token_gpu), cell(per_seq),
                           cell(max_weight_bytes_per_rank(rm.get(), layout, wo))};
                    if (with_gpu) {
                        const ReplicaInput in = read_replica_input(one, ctx);
                        const Replica r = in.replica();
                        const FitResult fit = compute_fit(r, in.engine, in.context, in.concurrency);
                        row.push_back(cell(fit.kv_budget));
                        row.push_back(cell_count(fit.max_concurrency, ""));
                        row.push_back(cell_tokens(fit.max_context));
                        row.push_back(cell_bool(fit.fits));
                        row.push_back(cell(decode_bound(r, in.concurrency, in.context).tpot));
                    }
                    t.rows.push_back(std::move(row));
                }
    rep.heading = fmt::format("{} configuration{} side by side at {} tokens{}", t.rows.size(),
                              t.rows.size() == 1 ? "" : "s", grouped(context),
                              with_gpu ? fmt::format(" x {} sequences", grouped(concurrency)) : "");
    rep.inputs = {{"context_tokens", cell_count(context, "tokens")},
                  {"concurrency", cell_count(concurrency, "sequences")}};
    rep.tables.push_back(std::move(t));
    rep.csv_table = 0;
    if (!with_gpu) rep.notes.push_back("add --gpu for the budget, the concurrency and the decode bound");
    render(rep, parse_format(o.format), o.explain, *ctx.out);
}

}  // namespace

void register_compare(CLI::App& app, Context& ctx) {
    auto o = std::make_shared<CommonOptions>();
    CLI::App* sub = app.add_subcommand(
        "compare", "Several models, GPUs or dtypes side by side (comma lists: --model a,b --gpu x,y)");
    add_options(*sub, *o, opt_model | opt_gpu | opt_layout | opt_dtypes | opt_workload |
                              opt_budget | opt_output);
    sub->get_option("--model")->required();
    sub->callback([o, &ctx] { run_compare(*o, ctx); });
}

}  // namespace kvplan::cli
