// kvplan fit: does a workload fit a replica? The budget term by term, verdict first. One call to
// kvplan::evaluate; this file parses and renders.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <kvplan/calibrate.hpp>
#include <kvplan/plan/evaluate.hpp>
#include <memory>

#include "answer.hpp"
#include "commands.hpp"
#include "flags.hpp"
#include "plot.hpp"
#include "report.hpp"

namespace kvplan::cli {

namespace {

struct FitExtras {
    std::string plot;  ///< --plot FILE.svg
};

void run_fit(const CommonOptions& o, const FitExtras& x, Context& ctx) {
    const ReplicaRequest in = read_replica(o, ctx);
    const std::optional<CalibrationProfile>& profile = in.profile;
    const Deployment d = in.deployment();
    const ReplicaAnswer a = evaluate(d, in.demand());
    Report rep;
    rep.command = "fit";
    rep.verdict = verdict_line(a, in.gpu);
    rep.heading = answer_heading(a, in.model);
    rep.inputs = {{"model", cell_text(in.model.id)},
                  {"gpu", cell_text(in.gpu.id)},
                  {"gpus", cell_count(a.gpus, "")},
                  {"tp", cell_count(a.replica.parallel.tp, "")},
                  {"pp", cell_count(a.replica.parallel.pp, "")},
                  {"dp", cell_count(a.replica.parallel.dp, "")},
                  {"ep", cell_count(a.replica.parallel.ep, "")},
                  {"dcp", cell_count(a.replica.parallel.dcp, "")},
                  {"kv_dtype", cell_text(name(a.replica.kv.dtype))},
                  {"weight_dtype", cell_text(name(a.replica.weights.format))},
                  {"engine", cell_text(std::string(name(a.serving.engine)))},
                  {"block_size", cell_count(a.serving.block_size, "tokens")},
                  {"context_tokens", cell_count(a.demand.context, "tokens")},
                  {"concurrency", cell_count(a.demand.concurrency, "sequences")}};
    if (a.demand.prompt_tokens) {
        rep.inputs.push_back({"prompt_tokens", cell_count(*a.demand.prompt_tokens, "tokens")});
        rep.inputs.push_back({"output_tokens", cell_count(*a.demand.output_tokens, "tokens")});
    }
    append_answer_figures(rep, a, in);
    append_estimate_figures(rep, a, in.profile_path);
    append_model_notes(rep, in.model);
    append_answer_notes(rep, a);
    append_estimate_notes(rep, a, in.profile_path,
                          "fit's verdict is about memory and uses neither");
    if (a.starts()) append_serve_commands(rep, d, in.demand(), served_model(in.model, ctx));
    if (profile && profile->has_reserve)
        rep.notes.push_back(fmt::format(
            "reserve from the profile {} ({}, fitted on {} from {}){}", in.profile_path,
            profile->model, profile->gpu.empty() ? std::string("its GPU") : profile->gpu,
            profile->source,
            profile->model == in.model.id ? "" : ": a different model than --model"));
    if (profile && profile->estimate && profile->model != in.model.id)
        rep.notes.push_back(fmt::format(
            "the estimate's parameters were calibrated on {}, a different model than --model",
            profile->model));
    render(rep, parse_format(o.format), o.explain, *ctx.out);
    if (!x.plot.empty())
        write_fit_plot(x.plot, d, in.demand(),
                       fmt::format("{} on {} x {}: sequences that fit against context",
                                   display_name(in.model), a.gpus, in.gpu.id));
}

}  // namespace

void register_fit(CLI::App& app, Context& ctx) {
    auto o = std::make_shared<CommonOptions>();
    CLI::App* sub = app.add_subcommand(
        "fit", "Does a workload fit a replica? The KV budget term by term, verdict first");
    add_options(*sub, *o,
                opt_model | opt_gpu | opt_layout | opt_parallel | opt_dtypes | opt_workload |
                    opt_budget | opt_lengths | opt_profile | opt_output);
    auto x = std::make_shared<FitExtras>();
    sub->add_option("--plot", x->plot,
                    "Write max concurrency against context as an SVG chart, the target marked");
    sub->callback([o, x, &ctx] { run_fit(*o, *x, ctx); });
}

}  // namespace kvplan::cli
