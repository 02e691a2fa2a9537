// kvplan fit: does a workload fit a replica? The budget term by term, verdict first. One call to
// kvplan::evaluate; this file parses and renders.

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <memory>

#include <kvplan/calibrate.hpp>
#include <kvplan/plan/evaluate.hpp>

#include "answer.hpp"
#include "commands.hpp"
#include "flags.hpp"
#include "plot.hpp"
#include "report.hpp"

namespace kvplan::cli {

namespace {

struct FitExtras {
    std::string plot;     ///< --plot FILE.svg
    std::string profile;  ///< --profile FILE.json
};

void run_fit(const CommonOptions& o, const FitExtras& x, Context& ctx) {
    ReplicaRequest in = read_replica(o, ctx);
    std::optional<CalibrationProfile> profile;
    if (!x.profile.empty()) {
        // A calibrated reserve (kvplan calibrate) replaces the modelled activation and graphs.
        profile = load_profile(x.profile);
        BudgetOptions b;
        b.reserve = in.flags.serving.reserve;
        if (in.flags.serving.memory_fraction) b.utilization = *in.flags.serving.memory_fraction;
        b = apply_profile(*profile, b, in.flags.serving.memory_fraction.has_value());
        in.flags.serving.reserve = b.reserve;
        if (!in.flags.serving.memory_fraction && in.flags.serving.engine != Engine::ideal)
            in.flags.serving.memory_fraction = b.utilization;
    }
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
                  {"kv_dtype", cell_text(name(a.replica.kv.dtype))},
                  {"weight_dtype", cell_text(name(a.replica.weights.format))},
                  {"engine", cell_text(std::string(name(a.serving.engine)))},
                  {"block_size", cell_count(a.serving.block_size, "tokens")},
                  {"context_tokens", cell_count(a.demand.context, "tokens")},
                  {"concurrency", cell_count(a.demand.concurrency, "sequences")}};
    append_answer_figures(rep, a, in);
    append_model_notes(rep, in.model);
    append_answer_notes(rep, a);
    if (profile)
        rep.notes.push_back(fmt::format(
            "reserve from the profile {} ({}, fitted on {} from {}){}", x.profile, profile->model,
            profile->gpu.empty() ? std::string("its GPU") : profile->gpu, profile->source,
            profile->model == in.model.id ? "" : ": a different model than --model"));
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
                opt_model | opt_gpu | opt_layout | opt_dtypes | opt_workload | opt_budget |
                    opt_output);
    auto x = std::make_shared<FitExtras>();
    sub->add_option("--plot", x->plot,
                    "Write max concurrency against context as an SVG chart, the target marked");
    sub->add_option("--profile", x->profile,
                    "Use the non-KV reserve of a calibration profile (kvplan calibrate "
                    "--write-profile)");
    sub->callback([o, x, &ctx] { run_fit(*o, *x, ctx); });
}

}  // namespace kvplan::cli
