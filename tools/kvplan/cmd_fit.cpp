// kvplan fit: does a workload fit a replica? The budget term by term, verdict first.

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <memory>

#include "capacity.hpp"
#include <kvplan/calibrate.hpp>

#include "commands.hpp"
#include "plot.hpp"
#include "replica.hpp"
#include "report.hpp"

namespace kvplan::cli {

namespace {

struct FitExtras {
    std::string plot;     ///< --plot FILE.svg
    std::string profile;  ///< --profile FILE.json
};

void run_fit(const CommonOptions& o, const FitExtras& x, Context& ctx) {
    ReplicaInput in = read_replica_input(o, ctx);
    std::optional<CalibrationProfile> profile;
    if (!x.profile.empty()) {
        // A calibrated reserve (kvplan calibrate) replaces the modelled activation and graphs.
        profile = load_profile(x.profile);
        in.engine.budget = apply_profile(*profile, in.engine.budget, in.engine.utilization_given);
    }
    const Replica r = in.replica();
    const FitResult f = compute_fit(r, in.engine, in.context, in.concurrency);
    Report rep;
    rep.command = "fit";
    rep.verdict = fit_verdict(f, r, in.gpu);
    rep.heading = fmt::format("{}: weights {}, KV {}, engine {}, blocks of {} token{}", display_name(in.model),
                              name(in.weights.format), name(in.kv.dtype), name(in.engine.engine),
                              in.engine.block_size, in.engine.block_size == 1 ? "" : "s");
    rep.inputs = {{"model", cell_text(in.model.id)},
                  {"gpu", cell_text(in.gpu.id)},
                  {"gpus", cell_count(in.layout.gpus, "")},
                  {"tp", cell_count(in.layout.tp, "")},
                  {"pp", cell_count(in.layout.pp, "")},
                  {"kv_dtype", cell_text(std::string(name(in.kv.dtype)))},
                  {"weight_dtype", cell_text(std::string(name(in.weights.format)))},
                  {"engine", cell_text(std::string(name(in.engine.engine)))},
                  {"block_size", cell_count(in.engine.block_size, "tokens")},
                  {"context_tokens", cell_count(in.context, "tokens")},
                  {"concurrency", cell_count(in.concurrency, "sequences")}};
    append_fit_figures(rep, f, r, in.model, in.gpu, in.engine);
    if (in.layout.replicas > 1)
        rep.notes.push_back(fmt::format(
            "{} GPUs make {} replicas of tp {} x pp {}: {} sequences at once across them", in.layout.gpus,
            in.layout.replicas, in.layout.tp, in.layout.pp,
            grouped(f.max_concurrency * in.layout.replicas)));
    if (!f.memory.outside_fits && !f.kv_given)
        rep.notes.push_back("the terms outside the engine's fraction do not fit in what it leaves: "
                            "lower the fraction");
    if (profile)
        rep.notes.push_back(fmt::format(
            "reserve from the profile {} ({}, fitted on {} from {}){}", x.profile, profile->model,
            profile->gpu.empty() ? std::string("its GPU") : profile->gpu, profile->source,
            profile->model == in.model.id ? "" : ": a different model than --model"));
    render(rep, parse_format(o.format), o.explain, *ctx.out);
    if (!x.plot.empty())
        write_fit_plot(x.plot, r, in.engine, in.context, in.concurrency,
                       fmt::format("{} on {} x {}: sequences that fit against context",
                                   display_name(in.model), r.gpus(), in.gpu.id));
}

}  // namespace

void register_fit(CLI::App& app, Context& ctx) {
    auto o = std::make_shared<CommonOptions>();
    CLI::App* sub = app.add_subcommand(
        "fit", "Does a workload fit a replica? The KV budget term by term, verdict first");
    add_options(*sub, *o,
                opt_model | opt_gpu | opt_layout | opt_dtypes | opt_workload | opt_budget |
                    opt_output);
    sub->get_option("--model")->required();
    auto x = std::make_shared<FitExtras>();
    sub->add_option("--plot", x->plot,
                    "Write max concurrency against context as an SVG chart, the target marked");
    sub->add_option("--profile", x->profile,
                    "Use the non-KV reserve of a calibration profile (kvplan calibrate "
                    "--write-profile)");
    sub->callback([o, x, &ctx] { run_fit(*o, *x, ctx); });
}

}  // namespace kvplan::cli
