// kvplan calibrate: fit the non-KV reserve of one model on one GPU from a vLLM start-up log, and
// the latency estimate's fractions from a `vllm bench serve` result; say how far the modelled
// figures were off, and write the profile later runs can use.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <kvplan/calibrate.hpp>
#include <kvplan/calibrate/bench_result.hpp>
#include <kvplan/calibrate/latency.hpp>
#include <kvplan/calibrate/replica.hpp>
#include <kvplan/engine.hpp>
#include <kvplan/engine/startup.hpp>
#include <kvplan/format.hpp>
#include <kvplan/weights.hpp>
#include <memory>
#include <utility>
#include <vector>

#include "answer.hpp"
#include "commands.hpp"
#include "explain.hpp"
#include "flags.hpp"
#include "parse.hpp"
#include "replica.hpp"
#include "report.hpp"
#include "traffic.hpp"

namespace kvplan::cli {

namespace {

struct CalibrateFlags {
    std::string log;
    std::vector<std::string> benches;
    std::string write_profile;
};

/// "+0.42 GiB, +7.1 %": how far a modelled size is from a measured one (size_error).
std::string off_by(const SizeError& e) {
    const std::string d = fmt::format("{}{:.2f} GiB", e.below ? '-' : '+', e.difference.in(GiB));
    if (!e.percent) return d;
    return fmt::format("{}, {:+.1f} %", d, *e.percent);
}

/// Adds `key`/`label` figures to `rep`.
struct FigureAdder {
    Report& rep;
    void operator()(std::string key, std::string label, Cell v, std::optional<Cell> exact = {},
                    Explanation e = {}) const {
        rep.figures.push_back(
            {std::move(key), std::move(label), std::move(v), std::move(exact), std::move(e)});
    }
};

/// Where a figure of the fit came from, as its label says it: the log, the --gpu spec's memory
/// figure (the CUDA runtime's total unless the spec states only the driver's or the vendor's), a
/// flag (`flag`), or the model.
std::string source_text(FigureSource s, const std::optional<ResolvedGpu>& gpu,
                        std::string_view flag) {
    switch (s) {
        case FigureSource::log:
            return "from the log";
        case FigureSource::gpu_spec: {
            const MemoryBasis b = gpu ? gpu->memory_basis : MemoryBasis::runtime;
            return fmt::format("the {} spec's {}", gpu ? gpu->id : std::string("GPU"),
                               b == MemoryBasis::runtime  ? "CUDA runtime total"
                               : b == MemoryBasis::driver ? "driver-reported total"
                                                          : "stated capacity");
        }
        case FigureSource::given:
            return fmt::format("given: {}", flag);
        case FigureSource::modelled:
            return "modelled";
    }
    return std::string();
}

/// The log's part, rendered: the measured non-KV reserve beside the modelled one, each figure
/// labelled with where it came from (`gpu`: the --gpu spec, if any). The verdict's sentence goes
/// to `verdict`.
void render_log(const LogCalibration& c, const std::optional<ResolvedGpu>& gpu, Report& rep,
                std::string& verdict) {
    const FigureAdder fig{rep};
    const CalibrationFit& fit = c.fit;
    const VllmLogFacts& facts = c.facts;
    const EngineMemory& modelled = c.modelled;
    const Bytes modelled_reserve = c.modelled_reserve;
    const Bytes weights = *c.inputs.weights;

    verdict.clear();
    if (!fit.started)
        verdict = fmt::format(
            "a failed start: vLLM's KV memory was -{:.2f} GiB (the weights and the reserve took "
            "that much past memory x utilization); ",
            fit.kv_shortfall.in(GiB));
    verdict += fmt::format(
        "non-KV reserve {:.2f} GiB measured, {:.2f} GiB modelled ({}); KV memory {:.2f} GiB "
        "logged, {:.2f} GiB modelled ({})",
        fit.reserve.in(GiB), modelled_reserve.in(GiB), off_by(c.reserve_error),
        fit.available_kv.in(GiB), modelled.kv_memory.in(GiB), off_by(c.kv_error));
    fig("memory_total",
        fmt::format("GPU memory ({})", source_text(fit.memory_total_source, gpu, "--gpu")),
        cell(fit.memory_total), cell_exact(fit.memory_total));
    fig("gpu_memory_utilization",
        fmt::format("gpu_memory_utilization ({})",
                    source_text(fit.utilization_source, gpu, "--gpu-memory-utilization")),
        cell_number(fit.utilization, "", 4));
    fig("usable", "ceil(memory x utilization)", cell(fit.usable), cell_exact(fit.usable));
    fig("weights", fmt::format("weights ({})", source_text(fit.weights_source, gpu, "")),
        cell(fit.weights), cell_exact(fit.weights));
    fig("available_kv", "available KV memory (logged)", cell(fit.available_kv),
        cell_exact(fit.available_kv),
        {"the printed figure +- half its last digit, narrowed to whole blocks when the block "
         "count and the model's block bytes are known",
         {fmt::format("interval [{}, {}] B", grouped(fit.available_lo.count()),
                      grouped(fit.available_hi.count())),
          fit.blocks ? fmt::format("{} blocks of {} B", grouped(*fit.blocks),
                                   grouped(c.inputs.bytes_per_block->count()))
                     : std::string("no block count used")}});
    if (!fit.started)
        fig("kv_shortfall", "KV memory below zero (logged: a failed start)", cell(fit.kv_shortfall),
            cell_exact(fit.kv_shortfall),
            {"\"Available KV cache memory: -X GiB\": vLLM raised instead of building a cache", {}});
    fig("reserve", "= non-KV reserve (measured)", cell(fit.reserve), cell_exact(fit.reserve),
        {fit.started ? "ceil(memory x utilization) - weights - available KV memory"
                     : "ceil(memory x utilization) - weights + the KV memory's shortfall",
         {}});
    if (fit.cuda_graphs)
        fig("cuda_graphs", "  of which CUDA graphs (logged)", cell(*fit.cuda_graphs));
    fig("modelled_weights", "weights, modelled", cell(weights), {},
        {"weights.hpp: parameters x bytes per parameter on this rank, as vLLM holds them once "
         "loaded (engine/startup.hpp)",
         {}});
    fig("modelled_reserve", "non-KV reserve, modelled", cell(modelled_reserve), {},
        {"activation peak of the profile run + CUDA graphs (when vLLM charges them)",
         {fmt::format("activation {}", modelled.activation),
          fmt::format("CUDA graphs {}{}", modelled.cuda_graphs,
                      c.graphs_charged ? "" : " (not charged by this vLLM)")}});
    fig("modelled_kv", "available KV memory, modelled", cell(modelled.kv_memory),
        cell_exact(modelled.kv_memory));
    fig("weights_error", "weights: modelled - logged",
        cell_text(c.weights_error ? off_by(*c.weights_error) : "no weight line"));
    fig("reserve_error", "reserve: modelled - measured", cell_text(off_by(c.reserve_error)));
    fig("kv_error", "KV memory: modelled - logged", cell_text(off_by(c.kv_error)));

    // The log's own cache figures, reproduced from the measured memory.
    if (c.reproduced) {
        const VllmKvCache& r = *c.reproduced;
        if (facts.max_concurrency)
            fig("max_concurrency",
                fmt::format("max concurrency at {} tokens: logged / reproduced",
                            grouped(*facts.max_model_len)),
                cell_text(
                    fmt::format("{:.2f}x / {:.2f}x", *facts.max_concurrency, r.max_concurrency)));
        if (facts.gpu_blocks)
            fig("gpu_blocks", "GPU blocks: logged / reproduced",
                cell_text(
                    fmt::format("{} / {}", grouped(*facts.gpu_blocks), grouped(r.num_blocks))));
        if (facts.kv_cache_tokens)
            fig("kv_cache_tokens", "KV cache tokens: logged / reproduced",
                cell_text(fmt::format("{} / {}", grouped(*facts.kv_cache_tokens),
                                      grouped(r.kv_cache_tokens))));
    }
    if (!fit.blocks_agree)
        rep.notes.push_back(
            "the log's block count and its KV memory disagree for this model, KV dtype and layout: "
            "check --model, --kv-dtype and --tp (the printed memory was used)");
    if (!fit.consistent)
        rep.notes.push_back(
            "weights and KV memory exceed memory x utilization: check --gpu and "
            "--gpu-memory-utilization");
}

/// "+4.2 %": an estimate's error against the measurement (BenchFigures).
std::string error_text(std::optional<double> percent) {
    return percent ? fmt::format("{:+.1f} %", *percent) : std::string("no measurement");
}

/// The same, as a table cell.
Cell error_cell(std::optional<double> percent) {
    return percent ? cell_number(*percent, "%", 1) : cell_null("");
}

/// "the hopper defaults", or "fit_start" where kvplan has no defaults for the GPU's family.
std::string start_name(const BenchCalibration& c) {
    return c.start_family ? fmt::format("the {} defaults", name(*c.start_family))
                          : std::string("fit_start");
}

/// One benchmark's part, rendered: the fractions fitted on it (calibrate_fractions), beside the
/// bound and the estimate before calibration. The verdict's sentence goes to `verdict`.
void render_bench(const BenchCalibration& c, const BenchResult& b, const std::string& model_id,
                  Report& rep, std::string& verdict) {
    const FigureAdder fig{rep};
    const BenchFigures& bf = c.figures.front();
    const LatencyObservation& obs = bf.observation;
    const LatencyEstimate& before = bf.before;
    const LatencyEstimate& after = bf.after;
    const FitResult& f = c.fit;
    const EstimateParams& start = c.start;
    const std::string start_name_text = start_name(c);

    verdict = fmt::format(
        "TPOT {:.2f} ms measured, {:.2f} ms estimated after calibration ({:.2f} ms before, "
        "bound {:.2f} ms); bandwidth fraction {:.2f}, compute fraction {:.2f}",
        b.tpot.mean.in(milliseconds), after.itl.in(milliseconds), before.itl.in(milliseconds),
        after.itl_bound.in(milliseconds), f.params.bandwidth, f.params.compute);
    fig("bench_load", "load (from the benchmark)",
        cell_text(fmt::format("{} {}, {} prompt / {} output tokens (means)",
                              grouped(obs.load.concurrency),
                              obs.load.kind == LoadKind::burst ? "requests sent at once (a burst)"
                                                               : "requests in flight",
                              grouped(obs.load.prompt_tokens), grouped(obs.load.output_tokens))),
        {},
        {"max_concurrency, or a burst of every prompt at an infinite rate with no "
         "max_concurrency below num_prompts; total tokens / completed",
         {fmt::format("{} completed, {} input and {} output tokens", grouped(b.completed),
                      grouped(b.total_input_tokens), grouped(b.total_output_tokens))}});
    fig("compute_dtype", "matmuls timed in", cell_text(std::string(name(c.compute))));
    fig("measured_tpot", "TPOT, mean (measured)", cell(b.tpot.mean));
    fig("tpot_bound", "TPOT bound (HBM and FLOP/s peaks)", cell(after.itl_bound));
    fig("tpot_estimate_before", fmt::format("TPOT estimate, {}", start_name_text), cell(before.itl),
        {}, {"error against the measurement: " + error_text(bf.tpot_error_before), {}});
    fig("tpot_estimate", "TPOT estimate, calibrated", cell(after.itl), {},
        {"error against the measurement: " + error_text(bf.tpot_error), {}});
    fig("measured_ttft", "TTFT, mean (measured)", cell(b.ttft.mean));
    fig("ttft_estimate_before", fmt::format("TTFT estimate, {}", start_name_text),
        cell(before.ttft), {},
        {"error against the measurement: " + error_text(bf.ttft_error_before), {}});
    fig("ttft_estimate", "TTFT estimate, calibrated", cell(after.ttft), {},
        {"error against the measurement: " + error_text(bf.ttft_error), {}});
    fig("bandwidth_fraction", "achieved fraction of peak bandwidth",
        cell_number(f.params.bandwidth, "", 2), {},
        {fmt::format("fitted on the TPOT; {} had {:.2f}", start_name_text, start.bandwidth), {}});
    fig("compute_fraction", "achieved fraction of peak FLOP/s",
        cell_number(f.params.compute, "", 2), {},
        {c.ttft_used
             ? fmt::format("fitted on the TTFT; {} had {:.2f}", start_name_text, start.compute)
             : fmt::format("kept from {}: the TTFT was not used", start_name_text),
         {}});
    fig("layer_overhead", "per-layer time per step (kept)", cell(f.params.layer_overhead));
    fig("all_reduce_latency", "all-reduce latency (kept)", cell(f.params.all_reduce_latency));
    fig("rms_log_error", "fit: rms of ln(estimate / measured)", cell_number(f.rms_log_error, "", 4),
        {}, {fmt::format("over {} measured figure{}", f.figures, f.figures == 1 ? "" : "s"), {}});
    if (obs.ttft && !c.ttft_used)
        rep.notes.push_back(fmt::format(
            "the TTFT was not fitted: {} requests wait in the estimate's queue at this load, and "
            "a queue's wait says little about the prefill's FLOP/s",
            grouped(after.waiting)));
    if (f.params.bandwidth >= FitSpace{}.bandwidth.hi && after.itl > b.tpot.mean)
        rep.notes.push_back(fmt::format(
            "the estimate stays above the measured TPOT at full bandwidth: its fixed costs of a "
            "decode step ({} of layer time, {} of all-reduce) are more than this engine spends, "
            "so the fit trades TPOT against TTFT",
            after.decode_step.layers, after.decode_step.all_reduce));
    rep.notes.push_back(
        "calibration: one load tells the bandwidth fraction (from the TPOT) and the compute "
        "fraction (from the TTFT) apart, not the fixed per-layer and all-reduce times, which keep "
        "their defaults (calibrate/latency.hpp)");
    if (!b.model_id.empty())
        rep.notes.push_back(fmt::format("the benchmark ran {}; the estimate used --model {}",
                                        b.model_id, model_id));
}

/// Several benchmarks' part, rendered: every parameter fitted on all of them (fit_params, as the
/// family defaults were fitted), each load's figures before and after.
void render_benches(const BenchCalibration& c, const std::vector<BenchResult>& results,
                    const std::vector<std::string>& files, Report& rep, std::string& verdict) {
    const FigureAdder fig{rep};
    const FitResult& f = c.fit;
    const EstimateParams& start = c.start;
    const std::string start_name_text = start_name(c);
    Table t;
    t.key = "benchmarks";
    t.title =
        fmt::format("Each benchmark: measured, the bound, the estimate with {} and calibrated",
                    start_name_text);
    t.columns = {{"file", "file"},
                 {"concurrency", "C"},
                 {"prompt_tokens", "in"},
                 {"output_tokens", "out"},
                 {"measured_tpot", "TPOT"},
                 {"tpot_bound", "bound"},
                 {"tpot_estimate_before", "before"},
                 {"tpot_estimate", "calibrated"},
                 {"tpot_error", "error"},
                 {"measured_ttft", "TTFT"},
                 {"ttft_estimate_before", "before"},
                 {"ttft_estimate", "calibrated"},
                 {"ttft_error", "error"}};
    for (std::size_t i = 0; i < c.figures.size(); ++i) {
        const BenchFigures& bf = c.figures[i];
        const LatencyEstimate& b = bf.before;
        const LatencyEstimate& a = bf.after;
        const Seconds tpot = results[i].tpot.mean, ttft = results[i].ttft.mean;
        t.rows.push_back({cell_text(files[i]), cell_count(bf.observation.load.concurrency, ""),
                          cell_count(bf.observation.load.prompt_tokens, ""),
                          cell_count(bf.observation.load.output_tokens, ""), cell(tpot),
                          cell(a.itl_bound), cell(b.itl), cell(a.itl), error_cell(bf.tpot_error),
                          cell(ttft), cell(b.ttft), cell(a.ttft), error_cell(bf.ttft_error)});
    }
    verdict = fmt::format(
        "{} benchmarks: median TPOT error {:.1f} % after calibration ({:.1f} % with {}); "
        "bandwidth fraction {:.2f}, compute fraction {:.2f}, {} a layer, {} an all-reduce",
        c.figures.size(), c.median_tpot_error, c.median_tpot_error_before, start_name_text,
        f.params.bandwidth, f.params.compute, f.params.layer_overhead, f.params.all_reduce_latency);
    fig("compute_dtype", "matmuls timed in", cell_text(std::string(name(c.compute))));
    fig("bandwidth_fraction", "achieved fraction of peak bandwidth",
        cell_number(f.params.bandwidth, "", 2), {},
        {fmt::format("{} had {:.2f}", start_name_text, start.bandwidth), {}});
    fig("compute_fraction", "achieved fraction of peak FLOP/s",
        cell_number(f.params.compute, "", 2), {},
        {fmt::format("{} had {:.2f}", start_name_text, start.compute), {}});
    fig("layer_overhead", "per-layer time per step", cell(f.params.layer_overhead), {},
        {fmt::format("{} had {}", start_name_text, start.layer_overhead), {}});
    fig("all_reduce_latency", "all-reduce latency", cell(f.params.all_reduce_latency), {},
        {fmt::format("{} had {}", start_name_text, start.all_reduce_latency), {}});
    fig("median_tpot_error", "median |TPOT error|, calibrated",
        cell_number(c.median_tpot_error, "%", 1));
    fig("median_tpot_error_before", fmt::format("median |TPOT error|, {}", start_name_text),
        cell_number(c.median_tpot_error_before, "%", 1));
    fig("rms_log_error", "fit: rms of ln(estimate / measured)", cell_number(f.rms_log_error, "", 4),
        {}, {fmt::format("over {} measured figures", f.figures), {}});
    rep.tables.push_back(std::move(t));
    rep.notes.push_back(
        "calibration: several loads tell the fixed per-layer and all-reduce times from the "
        "fractions, so all four are fitted on every TPOT and TTFT (fit_params, "
        "calibrate/latency.hpp; a TTFT is left out where the estimate's queue holds requests)");
}

void run_calibrate(const CalibrateFlags& cf, const CommonOptions& o, Context& ctx) {
    if (cf.log.empty() && cf.benches.empty())
        usage_error("log", "a vLLM start-up log, --bench with a vllm bench serve result, or both",
                    "neither");
    // What calibrate does not model, and what only a start-up log reads, is the library's
    // refusal (calibration_refusal), named as the flag.
    using CO = CalibrationOption;
    CalibrationOptionsGiven given;
    given.set(CO::gpus, o.gpus.has_value())
        .set(CO::speculative_method, o.speculative_method.has_value())
        .set(CO::num_speculative_tokens, o.num_speculative_tokens.has_value())
        .set(CO::draft_model, !o.draft_model.empty())
        .set(CO::allow_long_context, o.allow_long_context)
        .set(CO::chunked_local_hybrid, o.chunked_local_hybrid.has_value())
        .set(CO::without_flashinfer, o.without_flashinfer.has_value())
        .set(CO::block_size, o.block_size.has_value())
        .set(CO::gpu_memory_utilization, o.gpu_memory_utilization.has_value())
        .set(CO::kv_memory, o.kv_memory.has_value())
        .set(CO::max_num_seqs, o.max_num_seqs.has_value())
        .set(CO::max_num_batched_tokens, o.max_num_batched_tokens.has_value())
        .set(CO::num_gpu_blocks_override, o.num_gpu_blocks_override.has_value())
        .set(CO::enforce_eager, o.enforce_eager)
        .set(CO::max_loras, o.max_loras.has_value())
        .set(CO::limit_mm_per_prompt, o.limit_mm_per_prompt.has_value())
        .set(CO::skip_mm_profiling, o.skip_mm_profiling);
    if (const std::optional<CalibrationRefusal> r = calibration_refusal(given, !cf.log.empty())) {
        std::string flag = "--" + std::string(name(r->option));
        std::replace(flag.begin(), flag.end(), '_', '-');
        const std::string found =
            r->option == CO::gpus                     ? std::to_string(*o.gpus)
            : r->option == CO::speculative_method     ? std::string(name(*o.speculative_method))
            : r->option == CO::num_speculative_tokens ? std::to_string(*o.num_speculative_tokens)
            : r->option == CO::draft_model            ? o.draft_model
            : r->option == CO::chunked_local_hybrid
                ? std::string(*o.chunked_local_hybrid ? "1" : "0")
            : r->option == CO::without_flashinfer ? std::string(*o.without_flashinfer ? "1" : "0")
            : cf.log.empty()                      ? std::string("--bench alone")
                                                  : std::string("given");
        usage_error(flag, std::string(r->expected), found);
    }
    EngineSetup engine = engine_setup(o);
    if (engine.engine != Engine::vllm)
        usage_error("--engine", "vllm (calibration reads vLLM's log and benchmark)",
                    name(engine.engine));
    const LayoutInput li = parse_layout(o);
    const std::optional<WeightOptions> weights_flag = parse_weights(o);
    const ResolvedModel rm = resolve_model_flags(o, ctx, import_options(o));
    std::optional<ResolvedGpu> gpu;
    if (!o.gpu.empty()) gpu = resolve_gpu(o.gpu, ctx);
    if (!cf.benches.empty() && !gpu)
        usage_error("--gpu",
                    "the GPU the benchmark ran on (the estimate's fractions are of its "
                    "bandwidth and FLOP/s)",
                    "none");
    CalibrationRequest rq{.model = rm.get(),
                          .gpu = gpu ? std::optional<GpuSpec>(gpu->spec) : std::nullopt,
                          .parallel = {.tp = li.tp, .pp = li.pp},
                          .kv = kv_flag(o),
                          .weights = weights_flag,
                          .budget = engine.budget,
                          .options = engine.options,
                          .block_size = engine.block_size,
                          .utilization_given = engine.utilization_given,
                          .log_source = cf.log,
                          .model_id = rm.id,
                          .gpu_id = gpu ? gpu->id : std::string(),
                          .engine_version = o.engine_version,
                          .given = given};
    if (!cf.log.empty()) rq.log = load_vllm_log(cf.log);
    for (const std::string& b : cf.benches) rq.benches.push_back(read_vllm_bench_result(b));
    const CalibrationAnswer answer = calibrate(rq);
    const KvFormat kv = rq.served_kv(answer.release.release).format;

    Report rep;
    rep.command = "calibrate";
    std::string benches;
    for (const std::string& b : cf.benches) benches += (benches.empty() ? "" : ", ") + b;
    const std::string sources = !cf.log.empty() && !benches.empty() ? cf.log + " and " + benches
                                : cf.log.empty()                    ? benches
                                                                    : cf.log;
    rep.heading = fmt::format("{}: {} on {}, {}", sources, display_name(rm),
                              gpu ? gpu->id : std::string("the log's GPU"),
                              describe_layout(ParallelConfig{li.tp, li.pp, {}}));
    rep.inputs = {{"log", cell_text(cf.log)},
                  {"bench", cell_text(benches)},
                  {"model", cell_text(rm.id)},
                  {"gpu", cell_text(gpu ? gpu->id : std::string())},
                  {"tp", cell_count(li.tp, "")},
                  {"pp", cell_count(li.pp, "")},
                  {"weights", cell_text(describe_weights(answer.weights))},
                  {"kv_dtype", cell_text(std::string(name(kv.dtype)))},
                  {"block_size", cell_count(engine.block_size, "tokens")},
                  {"engine_version", cell_text(answer.release.release.text())}};

    std::string log_verdict, bench_verdict;
    if (answer.log) render_log(*answer.log, gpu, rep, log_verdict);
    if (answer.bench && rq.benches.size() == 1)
        render_bench(*answer.bench, rq.benches.front(), rm.id, rep, bench_verdict);
    if (answer.bench && rq.benches.size() > 1)
        render_benches(*answer.bench, rq.benches, cf.benches, rep, bench_verdict);
    rep.verdict = log_verdict.empty()     ? bench_verdict
                  : bench_verdict.empty() ? log_verdict
                                          : log_verdict + "; " + bench_verdict;

    // The release whose rules applied (weights as loaded, KV dtype, profile accounting).
    const CalibrationRelease& rel = answer.release;
    rep.notes.push_back(
        rel.source == ReleaseSource::log
            ? (rel.logged_outside
                   ? fmt::format("vLLM {}'s rules: the log's banner names {}, outside the "
                                 "releases kvplan knows ({} to {})",
                                 rel.release.text(), rel.logged_outside->text(),
                                 vllm_oldest_release.text(), vllm_newest_release.text())
                   : fmt::format("vLLM {}'s rules, the release the log's banner names",
                                 rel.release.text()))
        : rel.source == ReleaseSource::given
            ? fmt::format("vLLM {}'s rules (--engine-version)", rel.release.text())
            : fmt::format("vLLM {}'s rules, the newest release kvplan knows: the log names no "
                          "release (--engine-version X.Y for another)",
                          rel.release.text()));
    rep.extra_json["engine_version_source"] = std::string(name(rel.source));
    const CalibrationProfile& profile = answer.profile;
    const std::string json = profile_json(profile);
    rep.extra_json["profile"] = Json::parse(json);
    if (!cf.write_profile.empty()) {
        std::ofstream out(cf.write_profile, std::ios::binary);
        out << json;
        out.close();  // a full disk shows only when the buffer is written out
        if (!out)
            detail::throw_field_error<InvalidInput>(cf.write_profile, "file", "a writable file",
                                                    "none");
        rep.notes.push_back(fmt::format("profile written to {}", cf.write_profile));
    } else {
        rep.notes.push_back("--write-profile FILE saves the profile (JSON) for later runs");
    }
    render(rep, o.format, o.explain, *ctx.out);
}

}  // namespace

void register_calibrate(CLI::App& app, Context& ctx) {
    auto o = std::make_shared<CommonOptions>();
    auto cf = std::make_shared<CalibrateFlags>();
    CLI::App* sub = app.add_subcommand(
        "calibrate",
        "Fit the non-KV reserve from a vLLM start-up log (V0 or V1), the latency estimate's "
        "fractions from a vllm bench serve result, or both, and compare with the model");
    sub->add_option("log", cf->log, "The vLLM start-up log");
    sub->add_option("--bench", cf->benches,
                    "A `vllm bench serve --save-result` JSON of this replica: fits the estimate's "
                    "bandwidth and compute fractions; repeated, at several loads, fits its fixed "
                    "costs too")
        ->expected(1)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    add_options(*sub, *o, opt_model | opt_gpu | opt_layout | opt_dtypes | opt_budget | opt_output);
    sub->add_option("--write-profile", cf->write_profile,
                    "Write the fitted profile (JSON) to this file");
    sub->callback([o, cf, &ctx] { run_calibrate(*cf, *o, ctx); });
}

}  // namespace kvplan::cli
