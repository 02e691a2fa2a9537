// kvplan fit: does a workload fit a replica? The budget term by term, verdict first. One call to
// kvplan::evaluate; this file parses and renders.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <kvplan/calibrate.hpp>
#include <kvplan/format.hpp>
#include <kvplan/plan/evaluate.hpp>
#include <kvplan/plan/tiers.hpp>
#include <memory>

#include "answer.hpp"
#include "commands.hpp"
#include "flags.hpp"
#include "parse.hpp"
#include "plot.hpp"
#include "report.hpp"
#include "typed_option.hpp"

namespace kvplan::cli {

namespace {

struct FitExtras {
    std::string plot;  ///< --plot FILE.svg
    TierSizes tiers;   ///< --host-kv / --nvme-kv / --remote-kv
};

const char* tier_name(Tier t) {
    switch (t) {
        case Tier::host:
            return "host";
        case Tier::nvme:
            return "nvme";
        case Tier::remote:
            return "remote";
    }
    return "?";
}

/// The tiers beside the GPU, as a table: what each holds and one sequence coming back.
void append_tiers(Report& rep, const TierAnswer& t) {
    Table tab;
    tab.key = "kv_tiers";
    tab.title = fmt::format(
        "KV tiers beside the GPU: sequences of {} tokens ({} each over the replica's GPUs) held, "
        "and one coming back",
        grouped(t.context), t.sequence_bytes);
    tab.columns = {{"tier", "tier"},
                   {"size_bytes", "size"},
                   {"sequences", "sequences"},
                   {"link", "link"},
                   {"link_bytes_per_second", "link/direction"},
                   {"back_seconds", "back"},
                   {"recompute_seconds", "recompute bound"},
                   {"back_over_recompute", "back / recompute"}};
    for (std::uint32_t i = 0; i < t.num_tiers; ++i) {
        const TierFigures& f = t.tiers[i];
        tab.rows.push_back(
            {cell_text(tier_name(f.tier)), cell(f.size), cell_count(f.sequences, "sequences"),
             cell_text(std::string(f.back.link.name)), cell(f.back.link.bandwidth),
             cell(f.back.time), t.recompute ? cell(*t.recompute) : cell_null("-"),
             f.versus_recompute ? cell_number(*f.versus_recompute, "x", 3) : cell_null("-")});
    }
    rep.tables.push_back(std::move(tab));
    rep.notes.push_back(
        "tiers: back = one sequence's bytes over the link's one-way bandwidth (each GPU its "
        "share over its own PCIe or NIC; an NVMe drive carries the whole sequence), no latency; "
        "recompute bound = the prefill bound of one prompt of the context; under 1, keeping an "
        "evicted sequence in the tier beats recomputing it (vLLM --kv-offloading-size and "
        "LMCache's local CPU and disk sizes are per replica, as --host-kv)");
}

void run_fit(const CommonOptions& o, const FitExtras& x, Context& ctx) {
    const ReplicaRequest in = read_replica(o, ctx);
    // The model's names, read with the other inputs: shown in the heading and the plot, and loaded
    // by the engines' command lines.
    const std::string model_name = display_name(in.model);
    const std::string served = served_model(in.model, ctx);
    const Deployment& d = in.deployment;
    const Demand& demand = in.demand;
    const ReplicaAnswer a = evaluate(d, demand);
    Report rep;
    rep.command = "fit";
    rep.verdict = verdict_line(a, in.gpu);
    rep.heading = answer_heading(a, model_name);
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
        append_run_shape_inputs(rep, a.demand.run);
    }
    if (a.demand.shared_prefix_tokens != 0)
        rep.inputs.push_back(
            {"shared_prefix_tokens", cell_count(a.demand.shared_prefix_tokens, "tokens")});
    append_answer_figures(rep, a, in);
    append_estimate_figures(rep, a, in.profile_path);
    append_model_notes(rep, in.model);
    append_answer_notes(rep, a);
    const TierSizes& tiers = x.tiers;
    if (tiers.host || tiers.nvme || tiers.remote) {
        if (const auto problem = tier_problem(a, tiers))
            usage_error(problem->tier == Tier::host   ? "--host-kv"
                        : problem->tier == Tier::nvme ? "--nvme-kv"
                                                      : "--remote-kv",
                        problem->expected, problem->found);
        append_tiers(rep, kv_tiers(a, tiers));
    }
    append_estimate_notes(rep, a, in.profile_path,
                          "fit's verdict is about memory and uses neither");
    if (a.starts()) append_serve_commands(rep, d, demand, served, tiers.host);
    append_profile_notes(rep, in.profile, in.profile_path, in.model.id);
    render(rep, o.format, o.explain, *ctx.out);
    if (!x.plot.empty())
        write_fit_plot(x.plot, d, demand,
                       fmt::format("{} on {} x {}: sequences that fit against context", model_name,
                                   a.gpus, in.gpu.id));
}

}  // namespace

void register_fit(CLI::App& app, Context& ctx) {
    auto o = std::make_shared<CommonOptions>();
    CLI::App* sub = app.add_subcommand(
        "fit", "Does a workload fit a replica? The KV budget term by term, verdict first");
    add_options(*sub, *o,
                opt_model | opt_gpu | opt_layout | opt_parallel | opt_dtypes | opt_workload |
                    opt_budget | opt_lengths | opt_run | opt_prefix | opt_hit_rate | opt_profile |
                    opt_output);
    auto x = std::make_shared<FitExtras>();
    sub->add_option("--plot", x->plot,
                    "Write max concurrency against context as an SVG chart, the target marked");
    CLI::Option* host =
        typed(*sub, "--host-kv", x->tiers.host, parse_size,
              "Host DRAM for KV per replica (vLLM --kv-offloading-size, LMCache local CPU): "
              "sequences it holds, one coming back over PCIe against recomputing it");
    // vLLM's own flag, as its command line takes it: a number of GiB for the whole engine
    // (vllm/config/cache.py, CacheConfig.kv_offloading_size), the same memory as --host-kv.
    typed(*sub, "--kv-offloading-size", x->tiers.host, parse_gib_number,
          "vLLM's --kv-offloading-size: host DRAM for KV per replica in GiB (a number, as vLLM "
          "takes it); the same as --host-kv <N>GiB")
        ->excludes(host);
    typed(*sub, "--nvme-kv", x->tiers.nvme, parse_size,
          "NVMe for KV per replica (LMCache local disk), one PCIe Gen4 x4 drive");
    typed(*sub, "--remote-kv", x->tiers.remote, parse_size,
          "A remote KV store per replica, over RDMA (InfiniBand NDR, a NIC per GPU)");
    sub->callback([o, x, &ctx] { run_fit(*o, *x, ctx); });
}

}  // namespace kvplan::cli
