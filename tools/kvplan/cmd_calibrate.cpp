// kvplan calibrate: fit the non-KV reserve of one model on one GPU from a vLLM start-up log, say
// how far the modelled figures were off, and write the profile later runs can use.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <fstream>
#include <kvplan/calibrate.hpp>
#include <kvplan/engine.hpp>
#include <kvplan/format.hpp>
#include <kvplan/weights.hpp>
#include <memory>

#include "commands.hpp"
#include "flags.hpp"
#include "explain.hpp"
#include "parse.hpp"
#include "replica.hpp"
#include "report.hpp"
#include "traffic.hpp"

namespace kvplan::cli {

namespace {

struct CalibrateFlags {
    std::string log;
    std::string write_profile;
};

/// "+0.42 GiB, +7.1 %": how far `modelled` is from `measured`.
std::string off_by(Bytes modelled, Bytes measured) {
    const double d = modelled.in(GiB)-measured.in(GiB);
    if (measured.is_zero()) return fmt::format("{:+.2f} GiB", d);
    return fmt::format("{:+.2f} GiB, {:+.1f} %", d, 100.0 * d / measured.in(GiB));
}

void run_calibrate(const CalibrateFlags& cf, const CommonOptions& o, Context& ctx) {
    const LayoutInput li = parse_layout(o);
    const KvFormat kv = parse_kv_dtype_flag(o.kv_dtype, "--kv-dtype");
    const std::optional<WeightOptions> weights_flag = parse_weights(o);
    EngineSetup engine = engine_setup(o);
    if (engine.engine != Engine::vllm)
        usage_error("--engine", "vllm (calibration reads vLLM logs)", o.engine);

    const VllmLogFacts facts = load_vllm_log(cf.log);
    const ResolvedModel rm = resolve_model_flags(o, ctx, import_options(o));
    const Model& m = rm.get();
    const WeightOptions weights = weights_flag ? *weights_flag : checkpoint_weights(m);
    const Layout layout = make_layout(m, li);
    std::optional<ResolvedGpu> gpu;
    if (!o.gpu.empty()) gpu = resolve_gpu(o.gpu, ctx);

    // The log describes one worker; with pipeline stages, the first.
    const std::uint32_t stage = 0;
    CalibrationInputs in;
    if (gpu) in.memory_total = gpu->spec.memory_total;
    if (engine.utilization_given) in.utilization = engine.budget.utilization;
    in.weights = weight_bytes_per_rank(m, layout, stage, weights).total();
    in.block_size = engine.block_size;
    // Block bytes for a model vLLM keeps in one KV cache group (one layer type): then the block
    // count pins the available memory to a whole number of blocks.
    VllmOptions vo = engine.options.vllm;
    vo.max_model_len = facts.max_model_len.value_or(
        m.config().max_position_embeddings != 0 ? m.config().max_position_embeddings : 4096);
    const VllmKvCache probe = vllm_kv_cache(m, kv, layout, 1 * GiB, vo);
    if (probe.num_groups == 1 && probe.refused.empty()) in.bytes_per_block = probe.bytes_per_block;

    const CalibrationFit fit = fit_reserve(facts, in, cf.log);

    // The uncalibrated estimate: vLLM's accounting as modelled, at the same GPU and utilization.
    GpuSpec spec = gpu ? gpu->spec : GpuSpec{};
    spec.memory_total = fit.memory_total;
    const Replica r{
        .model = m, .gpu = spec, .parallel = {li.tp, li.pp, {}}, .weights = weights, .kv = kv};
    BudgetOptions b = engine.budget;
    b.utilization = fit.utilization;
    EngineOptions eo = engine.options;
    eo.vllm.charge_cuda_graphs = facts.cuda_graphs_charged;
    const EngineMemory modelled = engine_memory(Engine::vllm, r, layout, stage, b, eo);
    const Bytes modelled_reserve =
        modelled.activation + (eo.vllm.charge_cuda_graphs ? modelled.cuda_graphs : Bytes{});

    Report rep;
    rep.command = "calibrate";
    rep.heading =
        fmt::format("{}: {} on {}, {}", cf.log, display_name(rm),
                    gpu ? gpu->id : std::string("the log's GPU"), describe_layout(r.parallel));
    rep.verdict = fmt::format(
        "non-KV reserve {:.2f} GiB measured, {:.2f} GiB modelled ({}); KV memory {:.2f} GiB "
        "logged, {:.2f} GiB modelled ({})",
        fit.reserve.in(GiB), modelled_reserve.in(GiB), off_by(modelled_reserve, fit.reserve),
        fit.available_kv.in(GiB), modelled.kv_memory.in(GiB),
        off_by(modelled.kv_memory, fit.available_kv));
    rep.inputs = {{"log", cell_text(cf.log)},
                  {"model", cell_text(rm.id)},
                  {"gpu", cell_text(gpu ? gpu->id : std::string())},
                  {"tp", cell_count(li.tp, "")},
                  {"pp", cell_count(li.pp, "")},
                  {"kv_dtype", cell_text(std::string(name(kv.dtype)))},
                  {"block_size", cell_count(engine.block_size, "tokens")}};
    const auto src = [](FigureSource s) {
        switch (s) {
            case FigureSource::log:
                return std::string("from the log");
            case FigureSource::given:
                return std::string("given");
            case FigureSource::modelled:
                return std::string("modelled");
        }
        return std::string();
    };
    const auto fig = [&](std::string key, std::string label, Cell v, std::optional<Cell> exact = {},
                         Explanation e = {}) {
        rep.figures.push_back(
            {std::move(key), std::move(label), std::move(v), std::move(exact), std::move(e)});
    };
    fig("memory_total", fmt::format("GPU memory ({})", src(fit.memory_total_source)),
        cell(fit.memory_total), cell_exact(fit.memory_total));
    fig("gpu_memory_utilization",
        fmt::format("gpu_memory_utilization ({})", src(fit.utilization_source)),
        cell_number(fit.utilization, "", 4));
    fig("usable", "ceil(memory x utilization)", cell(fit.usable), cell_exact(fit.usable));
    fig("weights", fmt::format("weights ({})", src(fit.weights_source)), cell(fit.weights),
        cell_exact(fit.weights));
    fig("available_kv", "available KV memory (logged)", cell(fit.available_kv),
        cell_exact(fit.available_kv),
        {"the printed figure +- half its last digit, narrowed to whole blocks when the block "
         "count and the model's block bytes are known",
         {fmt::format("interval [{}, {}] B", grouped(fit.available_lo.count()),
                      grouped(fit.available_hi.count())),
          fit.blocks ? fmt::format("{} blocks of {} B", grouped(*fit.blocks),
                                   grouped(in.bytes_per_block->count()))
                     : std::string("no block count used")}});
    fig("reserve", "= non-KV reserve (measured)", cell(fit.reserve), cell_exact(fit.reserve),
        {"ceil(memory x utilization) - weights - available KV memory", {}});
    if (fit.cuda_graphs)
        fig("cuda_graphs", "  of which CUDA graphs (logged)", cell(*fit.cuda_graphs));
    fig("modelled_weights", "weights, modelled", cell(*in.weights), {},
        {"weights.hpp: parameters x bytes per parameter on this rank", {}});
    fig("modelled_reserve", "non-KV reserve, modelled", cell(modelled_reserve), {},
        {"activation peak of the profile run + CUDA graphs (when vLLM charges them)",
         {fmt::format("activation {}", modelled.activation),
          fmt::format("CUDA graphs {}{}", modelled.cuda_graphs,
                      eo.vllm.charge_cuda_graphs ? "" : " (not charged by this vLLM)")}});
    fig("modelled_kv", "available KV memory, modelled", cell(modelled.kv_memory),
        cell_exact(modelled.kv_memory));
    fig("weights_error", "weights: modelled - logged",
        cell_text(facts.weights ? off_by(*in.weights, facts.weights->value) : "no weight line"));
    fig("reserve_error", "reserve: modelled - measured",
        cell_text(off_by(modelled_reserve, fit.reserve)));
    fig("kv_error", "KV memory: modelled - logged",
        cell_text(off_by(modelled.kv_memory, fit.available_kv)));

    // Does the model reproduce the log's own cache figures from the measured memory?
    if (facts.max_model_len &&
        (facts.gpu_blocks || facts.kv_cache_tokens || facts.max_concurrency)) {
        VllmOptions ro = engine.options.vllm;
        ro.max_model_len = *facts.max_model_len;
        const VllmKvCache c = vllm_kv_cache(m, kv, layout, fit.available_kv, ro);
        if (facts.max_concurrency)
            fig("max_concurrency",
                fmt::format("max concurrency at {} tokens: logged / reproduced",
                            grouped(*facts.max_model_len)),
                cell_text(
                    fmt::format("{:.2f}x / {:.2f}x", *facts.max_concurrency, c.max_concurrency)));
        if (facts.gpu_blocks)
            fig("gpu_blocks", "GPU blocks: logged / reproduced",
                cell_text(
                    fmt::format("{} / {}", grouped(*facts.gpu_blocks), grouped(c.num_blocks))));
        if (facts.kv_cache_tokens)
            fig("kv_cache_tokens", "KV cache tokens: logged / reproduced",
                cell_text(fmt::format("{} / {}", grouped(*facts.kv_cache_tokens),
                                      grouped(c.kv_cache_tokens))));
    }
    if (!fit.blocks_agree)
        rep.notes.push_back(
            "the log's block count and its KV memory disagree for this model, KV dtype and layout: "
            "check --model, --kv-dtype and --tp (the printed memory was used)");
    if (!fit.consistent)
        rep.notes.push_back(
            "weights and KV memory exceed memory x utilization: check --gpu and "
            "--gpu-memory-utilization");

    const CalibrationProfile profile =
        make_profile(fit, rm.id, gpu ? gpu->id : std::string(), li.tp, li.pp, cf.log);
    const std::string json = profile_json(profile);
    rep.extra_json["profile"] = Json::parse(json);
    if (!cf.write_profile.empty()) {
        std::ofstream out(cf.write_profile, std::ios::binary);
        out << json;
        if (!out)
            detail::throw_field_error<InvalidInput>(cf.write_profile, "file", "a writable file",
                                                    "none");
        rep.notes.push_back(fmt::format("profile written to {}", cf.write_profile));
    } else {
        rep.notes.push_back("--write-profile FILE saves the profile (JSON) for later runs");
    }
    render(rep, parse_format(o.format), o.explain, *ctx.out);
}

}  // namespace

void register_calibrate(CLI::App& app, Context& ctx) {
    auto o = std::make_shared<CommonOptions>();
    auto cf = std::make_shared<CalibrateFlags>();
    CLI::App* sub = app.add_subcommand(
        "calibrate",
        "Fit the non-KV reserve from a vLLM start-up log (V0 or V1) and compare with the model");
    sub->add_option("log", cf->log, "The vLLM log")->required();
    add_options(*sub, *o, opt_model | opt_gpu | opt_layout | opt_dtypes | opt_budget | opt_output);
    sub->add_option("--write-profile", cf->write_profile,
                    "Write the fitted profile (JSON) to this file");
    sub->callback([o, cf, &ctx] { run_calibrate(*cf, *o, ctx); });
}

}  // namespace kvplan::cli
