#pragma once

// `kvplan calibrate` as one library call: a replica calibrated on what vLLM measured. From a
// start-up log, the non-KV reserve (calibrate.hpp, fit_reserve) beside the modelled one, and the
// log's own cache figures reproduced from the measured memory; from one `vllm bench serve` result,
// the latency estimate's bandwidth and compute fractions (calibrate_fractions); from several, at
// different loads, all four parameters (fit_params). The answer holds every figure a front end
// shows and the profile later runs use.
//
// Opt-in (needs nlohmann_json for the benchmark results).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../budget.hpp"
#include "../calibrate.hpp"
#include "../change.hpp"
#include "../engine.hpp"
#include "../engine/startup.hpp"
#include "../error.hpp"
#include "../gpu.hpp"
#include "../layout.hpp"
#include "../model.hpp"
#include "../roofline.hpp"
#include "../weights.hpp"
#include "bench_result.hpp"
#include "latency.hpp"

namespace kvplan {

/// An option a deployment takes that a calibration either does not model or reads only with a
/// start-up log, named as its keyword (the CLI's flag is "--" and the name with '-' for '_').
enum class CalibrationOption : std::uint8_t {
    // Not modelled: refused whatever is calibrated.
    gpus,                ///< every GPU deployed: a log is one worker's, a benchmark one replica's
    speculative_method,  ///< a drafter: its weights, cache and profile are not modelled
    num_speculative_tokens,  ///< the same
    draft_model,             ///< the same
    allow_long_context,      ///< the log's max_model_len is the one vLLM ran with
    chunked_local_hybrid,    ///< a log states the defaults it ran with
    without_flashinfer,      ///< the same
    // Read only with a start-up log (what shapes its cache and reserve): refused beside
    // benchmarks alone, whose estimate takes the replica at vLLM's defaults.
    block_size,
    gpu_memory_utilization,
    kv_memory,
    max_num_seqs,
    max_num_batched_tokens,
    num_gpu_blocks_override,
    enforce_eager,
    max_loras,
    limit_mm_per_prompt,
    skip_mm_profiling,
};

[[nodiscard]] constexpr std::string_view name(CalibrationOption o) noexcept {
    using O = CalibrationOption;
    switch (o) {
        case O::gpus:
            return "gpus";
        case O::speculative_method:
            return "speculative_method";
        case O::num_speculative_tokens:
            return "num_speculative_tokens";
        case O::draft_model:
            return "draft_model";
        case O::allow_long_context:
            return "allow_long_context";
        case O::chunked_local_hybrid:
            return "chunked_local_hybrid";
        case O::without_flashinfer:
            return "without_flashinfer";
        case O::block_size:
            return "block_size";
        case O::gpu_memory_utilization:
            return "gpu_memory_utilization";
        case O::kv_memory:
            return "kv_memory";
        case O::max_num_seqs:
            return "max_num_seqs";
        case O::max_num_batched_tokens:
            return "max_num_batched_tokens";
        case O::num_gpu_blocks_override:
            return "num_gpu_blocks_override";
        case O::enforce_eager:
            return "enforce_eager";
        case O::max_loras:
            return "max_loras";
        case O::limit_mm_per_prompt:
            return "limit_mm_per_prompt";
        case O::skip_mm_profiling:
            return "skip_mm_profiling";
    }
    return "";
}

/// The options a front end was given, of those calibration_refusal() judges.
struct CalibrationOptionsGiven {
    std::uint32_t bits = 0;
    constexpr CalibrationOptionsGiven& set(CalibrationOption o, bool given = true) noexcept {
        if (given) bits |= std::uint32_t{1} << static_cast<unsigned>(o);
        return *this;
    }
    [[nodiscard]] constexpr bool has(CalibrationOption o) const noexcept {
        return (bits >> static_cast<unsigned>(o) & 1U) != 0;
    }
};

/// Why a calibration refuses an option: the option and what it expected (the front end says what
/// it was given).
struct CalibrationRefusal {
    CalibrationOption option = CalibrationOption::gpus;
    std::string_view expected;
};

/// The first option of `given` a calibration with (`with_log`) or without a start-up log cannot
/// take, rather than ignore: those it does not model (a deployment of several replicas, a drafter,
/// a context-limit override, a vLLM default overridden), then, without a log, those only a log's
/// cache reads. nullopt: every option given is used.
[[nodiscard]] constexpr std::optional<CalibrationRefusal> calibration_refusal(
    const CalibrationOptionsGiven& given, bool with_log) noexcept {
    using O = CalibrationOption;
    constexpr std::string_view drafter =
        "no speculative decoding (a calibration models the target model alone: a drafter's "
        "weights, KV cache and profile run are not modelled)";
    constexpr std::string_view defaults =
        "no vLLM default overridden with calibrate: a start-up log states the defaults it ran "
        "with";
    const std::pair<O, std::string_view> unmodelled[] = {
        {O::gpus,
         "one replica (a start-up log is one worker's, a benchmark one replica's: tp x pp GPUs)"},
        {O::speculative_method, drafter},
        {O::num_speculative_tokens, drafter},
        {O::draft_model, drafter},
        {O::allow_long_context,
         "no context-limit override (the log's max_model_len is the one vLLM ran with)"},
        {O::chunked_local_hybrid, defaults},
        {O::without_flashinfer, defaults}};
    for (const auto& [o, expected] : unmodelled)
        if (given.has(o)) return CalibrationRefusal{o, expected};
    if (!with_log)
        for (const O o : {O::block_size, O::gpu_memory_utilization, O::kv_memory, O::max_num_seqs,
                          O::max_num_batched_tokens, O::num_gpu_blocks_override, O::enforce_eager,
                          O::max_loras, O::limit_mm_per_prompt, O::skip_mm_profiling})
            if (given.has(o))
                return CalibrationRefusal{
                    o,
                    "a start-up log as well (a benchmark alone fits the estimate at vLLM's "
                    "defaults for the replica)"};
    return std::nullopt;
}

/// The replica calibrated and what was measured on it.
struct CalibrationRequest {
    Model model;
    std::optional<GpuSpec> gpu{};  ///< needed with benchmarks; a log can state the memory
    ParallelConfig parallel{};     ///< tp x pp (the log describes the first stage's worker)
    /// nullopt: what vLLM's "auto" stores for the checkpoint at its newest release (served_kv).
    std::optional<KvFormat> kv{};
    std::optional<WeightOptions> weights{};  ///< nullopt: the checkpoint's own format
    BudgetOptions budget{};                  ///< vLLM's budget, as resolve_serving gives it
    EngineOptions options{};
    std::uint32_t block_size = 16;       ///< tokens per block
    bool utilization_given = false;      ///< budget.utilization overrides the log's
    std::optional<VllmLogFacts> log{};   ///< a start-up log's facts (parse_vllm_log)
    std::string log_source{};            ///< its file, for messages and the profile
    std::vector<BenchResult> benches{};  ///< `vllm bench serve` results of this replica
    std::string model_id{};              ///< the profile's model name
    std::string gpu_id{};                ///< the profile's GPU name
    /// The vLLM release the log or benchmark ran (--engine-version), for a log whose banner does
    /// not name it; budget and options are then resolve_serving's at that release. nullopt: the
    /// log's banner, else vllm_newest_release.
    std::optional<EngineVersion> engine_version{};
    /// The options the front end was given that calibration_refusal() judges: calibrate() refuses
    /// them rather than ignore them.
    CalibrationOptionsGiven given{};

    /// The KV format calibrated at `release`: kv, else vLLM's "auto" for the checkpoint
    /// (served_kv).
    [[nodiscard]] constexpr ServedKv served_kv(EngineVersion release = vllm_newest_release) const {
        return kvplan::served_kv(model, kv, Engine::vllm, release);
    }
};

/// Where the vLLM release whose rules a calibration follows came from.
enum class ReleaseSource : std::uint8_t {
    log,     ///< the log's banner ("vLLM API server version X.Y.Z", "LLM engine (vX.Y.Z)")
    given,   ///< CalibrationRequest::engine_version (--engine-version)
    newest,  ///< neither: vllm_newest_release
};

[[nodiscard]] constexpr std::string_view name(ReleaseSource s) noexcept {
    switch (s) {
        case ReleaseSource::log:
            return "log";
        case ReleaseSource::given:
            return "given";
        case ReleaseSource::newest:
            return "newest";
    }
    return "";
}

/// The release a calibration follows, where it came from, and what the log's banner named.
struct CalibrationRelease {
    EngineVersion release = vllm_newest_release;
    ReleaseSource source = ReleaseSource::newest;
    /// The banner's release when it lies outside vllm_oldest_release .. vllm_newest_release
    /// (`release` is then the nearest end of the table).
    std::optional<EngineVersion> logged_outside{};
};

/// The release of `rq`: the log's banner, else rq.engine_version, else the newest. A banner
/// outside the table takes its nearest end. Throws InvalidInput when both are given and differ
/// (naming the log), or when rq.engine_version lies outside the table.
[[nodiscard]] inline CalibrationRelease calibration_release(const CalibrationRequest& rq) {
    CalibrationRelease r;
    // vLLM's rules change by release line: a patch given (0.10.1) is the line's (0.10).
    const std::optional<EngineVersion> given =
        rq.engine_version ? std::optional<EngineVersion>(rq.engine_version->line()) : std::nullopt;
    if (given && !vllm_release_defaults(*given))
        detail::throw_field_error<InvalidInput>("calibrate", "engine_version",
                                                "a vLLM release from " +
                                                    vllm_oldest_release.text() + " to " +
                                                    vllm_newest_release.text(),
                                                rq.engine_version->text());
    const std::optional<EngineVersion> logged =
        rq.log ? rq.log->engine_version : std::optional<EngineVersion>{};
    if (logged) {
        if (given && *given != *logged)
            detail::throw_field_error<InvalidInput>(rq.log_source, "engine_version",
                                                    "the release the log's banner names, " +
                                                        logged->text() +
                                                        " (or no --engine-version)",
                                                    rq.engine_version->text());
        r.source = ReleaseSource::log;
        r.release = std::clamp(*logged, vllm_oldest_release, vllm_newest_release);
        if (r.release != *logged) r.logged_outside = logged;
    } else if (given) {
        r.source = ReleaseSource::given;
        r.release = *given;
    }
    return r;
}

/// How far a modelled size is from a measured one.
struct SizeError {
    Bytes difference{};               ///< |modelled - measured|
    bool below = false;               ///< the model says less than was measured
    std::optional<double> percent{};  ///< change_percent(measured, modelled); none: measured 0
};

/// How far `modelled` is from `measured`: the exact difference of the two sizes, its sign, and
/// the difference in percent of what was measured.
[[nodiscard]] constexpr SizeError size_error(Bytes modelled, Bytes measured) noexcept {
    const bool below = modelled < measured;
    return {.difference = below ? measured - modelled : modelled - measured,
            .below = below,
            .percent = change_percent(measured.in(B), modelled.in(B))};
}

/// The log's part: the measured reserve beside the modelled one.
struct LogCalibration {
    VllmLogFacts facts{};
    CalibrationInputs inputs{};  ///< what the fit took from outside the log
    CalibrationFit fit{};
    EngineMemory modelled{};   ///< vLLM's accounting as modelled at the fit's memory
    Bytes modelled_reserve{};  ///< activation + CUDA graphs when charged
    bool graphs_charged = false;
    /// The log's cache figures (blocks, tokens, concurrency) reproduced from the measured KV
    /// memory at the log's max_model_len; none when the log states none of them.
    std::optional<VllmKvCache> reproduced{};
    /// The modelled weights against the logged ones; none when the log states none.
    std::optional<SizeError> weights_error{};
    SizeError reserve_error{};  ///< modelled_reserve against fit.reserve
    SizeError kv_error{};       ///< modelled.kv_memory against fit.available_kv
};

/// One benchmark's figures: measured, the bound, the estimate before and after calibration.
struct BenchFigures {
    LatencyObservation observation;
    LatencyEstimate before{};  ///< with the starting parameters
    LatencyEstimate after{};   ///< with the fitted ones
    // Each estimate's error against the measured mean, in percent (change_percent: estimate /
    // measured - 1, x 100); none where the measurement is 0.
    std::optional<double> tpot_error_before{};  ///< before.itl against the mean TPOT
    std::optional<double> tpot_error{};         ///< after.itl against the mean TPOT
    std::optional<double> ttft_error_before{};  ///< before.ttft against the mean TTFT
    std::optional<double> ttft_error{};         ///< after.ttft against the mean TTFT
};

/// The benchmarks' part.
struct BenchCalibration {
    ComputeDtype compute = ComputeDtype::bf16;  ///< the peak the compute fraction is of
    /// The GPU family whose defaults the fit started from; nullopt: fit_start.
    std::optional<GpuFamily> start_family{};
    EstimateParams start{};
    FitResult fit{};
    std::vector<BenchFigures> figures{};  ///< one per benchmark, in order
    /// One benchmark: whether its TTFT was fitted (not where the estimate's queue holds requests).
    bool ttft_used = false;
    /// The median of |tpot_error_before| over the benchmarks, in percent.
    double median_tpot_error_before = 0;
    double median_tpot_error = 0;  ///< the same of |tpot_error|, calibrated
};

/// Every figure of a calibration and the profile it yields.
struct CalibrationAnswer {
    CalibrationRelease release{};  ///< the vLLM release whose rules applied
    WeightOptions weights{};
    std::optional<LogCalibration> log{};
    std::optional<BenchCalibration> bench{};
    CalibrationProfile profile{};
};

namespace detail::calibration {

[[nodiscard]] inline double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    if (n == 0) return 0;
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

[[nodiscard]] inline LogCalibration calibrate_log(const CalibrationRequest& rq,
                                                  const WeightOptions& weights,
                                                  const CalibrationRelease& rel) {
    const EngineVersion release = rel.release;
    const Model& m = rq.model;
    const Layout layout(m, ParallelConfig{.tp = rq.parallel.tp, .pp = rq.parallel.pp});
    LogCalibration c;
    c.facts = *rq.log;
    // The log describes one worker; with pipeline stages, the first.
    const std::uint32_t stage = 0;
    CalibrationInputs& in = c.inputs;
    if (rq.gpu) in.memory_total = rq.gpu->memory_total;
    if (rq.utilization_given) in.utilization = rq.budget.utilization;
    // A release known (the banner, --engine-version): its default fraction where none is given
    // or logged; else the 0.9 of every release through v0.1x.
    if (rel.source != ReleaseSource::newest)
        in.default_utilization = vllm_release_defaults(release)->gpu_memory_utilization;
    // The weights as vLLM holds them once loaded ("Model loading took"): MXFP4 experts repacked
    // for the GPU's kernel at the release's triton_kernels (engine/startup.hpp).
    in.weights =
        loaded_weights(Engine::vllm, rq.gpu ? gpu_family(*rq.gpu) : std::nullopt, m, layout, stage,
                       weights, weight_bytes_per_rank(m, layout, stage, weights).total(),
                       GpuArch::unknown, release)
            .loaded;
    in.block_size = rq.block_size;
    // Block bytes for a model vLLM keeps in one KV cache group (one layer type): then the block
    // count pins the available memory to a whole number of blocks.
    VllmOptions vo = rq.options.vllm;
    vo.max_model_len = c.facts.max_model_len.value_or(
        m.config().max_position_embeddings != 0 ? m.config().max_position_embeddings : 4096);
    const VllmKvCache probe = vllm_kv_cache(m, rq.served_kv(release).format, layout, 1 * GiB, vo);
    if (probe.num_groups == 1 && probe.refused.empty()) in.bytes_per_block = probe.bytes_per_block;

    c.fit = fit_reserve(c.facts, in, rq.log_source);

    // The uncalibrated estimate: vLLM's accounting as modelled, at the same GPU and utilization.
    GpuSpec spec = rq.gpu ? *rq.gpu : GpuSpec{};
    spec.memory_total = c.fit.memory_total;
    const Replica r{.model = m,
                    .gpu = spec,
                    .parallel = {rq.parallel.tp, rq.parallel.pp, {}},
                    .weights = weights,
                    .kv = rq.served_kv(release).format};
    BudgetOptions b = rq.budget;
    b.utilization = c.fit.utilization;
    EngineOptions eo = rq.options;
    // The banner's release: its profile accounting (vllm_release_options; --enforce-eager's
    // workspace-less fusion kept). A given release is already in rq.options (resolve_serving).
    if (rel.source == ReleaseSource::log) {
        const FusionWorkspaceRounding fusion = eo.vllm.fusion_workspace;
        eo.vllm = vllm_release_options(eo.vllm, release);
        if (fusion == FusionWorkspaceRounding::none)
            eo.vllm.fusion_workspace = FusionWorkspaceRounding::none;
    }
    eo.vllm.charge_cuda_graphs = c.facts.cuda_graphs_charged;
    c.graphs_charged = eo.vllm.charge_cuda_graphs;
    c.modelled = detail::engine_memory_with(Engine::vllm, r, layout, stage, *in.weights, b, eo);
    // The log's torch peak holds PyTorch's cuBLAS workspace (budget/reserve.hpp).
    c.modelled_reserve = c.modelled.activation + c.modelled.cublas_workspace +
                         (c.graphs_charged ? c.modelled.cuda_graphs : Bytes{});

    // Does the model reproduce the log's own cache figures from the measured memory?
    if (c.facts.max_model_len &&
        (c.facts.gpu_blocks || c.facts.kv_cache_tokens || c.facts.max_concurrency)) {
        VllmOptions ro = eo.vllm;
        ro.max_model_len = *c.facts.max_model_len;
        c.reproduced =
            vllm_kv_cache(m, rq.served_kv(release).format, layout, c.fit.available_kv, ro);
    }
    if (c.facts.weights) c.weights_error = size_error(*in.weights, c.facts.weights->value);
    c.reserve_error = size_error(c.modelled_reserve, c.fit.reserve);
    c.kv_error = size_error(c.modelled.kv_memory, c.fit.available_kv);
    return c;
}

[[nodiscard]] inline BenchCalibration calibrate_benches(const CalibrationRequest& rq,
                                                        const WeightOptions& weights,
                                                        EngineVersion release) {
    if (!rq.gpu)
        throw_field_error<InvalidInput>("calibrate", "gpu",
                                        "the GPU the benchmark ran on (the estimate's fractions "
                                        "are of its bandwidth and FLOP/s)",
                                        "none");
    const Replica r{.model = rq.model,
                    .gpu = *rq.gpu,
                    .parallel = {rq.parallel.tp, rq.parallel.pp, {}},
                    .weights = weights,
                    .kv = rq.served_kv(release).format};
    BenchCalibration c;
    RooflineOptions ro;
    ro.compute = matmul_compute(weights, r.gpu);
    // The release that ran: its kernels' tiles and its own pool (running_cap).
    ro.vllm_release = release;
    c.compute = *ro.compute;
    std::vector<LatencyObservation> obs;
    for (const BenchResult& b : rq.benches) obs.push_back(observation_of(b, r, ro));
    // From the GPU family's defaults where kvplan has them: a single load then moves only the
    // fractions it can tell (calibrate/latency.hpp).
    const std::optional<FamilyParams> family = default_params(r.gpu);
    c.start_family = family ? std::optional<GpuFamily>(family->family) : std::nullopt;
    c.start = family ? family->params : fit_start;
    // One load tells the fractions apart; several tell the fixed costs too.
    c.fit = obs.size() == 1 ? calibrate_fractions(obs.front(), c.start) : fit_params(obs, c.start);
    // Each benchmark's costs and running cap (the engine's start-up report) once, for both
    // estimates: only the parameters differ.
    const std::vector<detail::PreparedObservation> prepared = detail::prepare(obs);
    std::vector<double> before_errors, after_errors;
    for (std::size_t i = 0; i < obs.size(); ++i) {
        const detail::PreparedObservation& po = prepared[i];
        BenchFigures f{.observation = obs[i],
                       .before = estimate_latency(po.costs, obs[i].load, c.start, po.cap),
                       .after = estimate_latency(po.costs, obs[i].load, c.fit.params, po.cap)};
        const Seconds tpot = rq.benches[i].tpot.mean, ttft = rq.benches[i].ttft.mean;
        f.tpot_error_before = change_percent(tpot.in(seconds), f.before.itl.in(seconds));
        f.tpot_error = change_percent(tpot.in(seconds), f.after.itl.in(seconds));
        f.ttft_error_before = change_percent(ttft.in(seconds), f.before.ttft.in(seconds));
        f.ttft_error = change_percent(ttft.in(seconds), f.after.ttft.in(seconds));
        const auto magnitude = [](std::optional<double> e) {
            return e ? std::abs(*e) : std::numeric_limits<double>::infinity();
        };
        before_errors.push_back(magnitude(f.tpot_error_before));
        after_errors.push_back(magnitude(f.tpot_error));
        c.figures.push_back(std::move(f));
    }
    c.ttft_used = obs.size() == 1 && obs.front().ttft && c.figures.front().after.waiting == 0;
    c.median_tpot_error_before = median(before_errors);
    c.median_tpot_error = median(after_errors);
    return c;
}

}  // namespace detail::calibration

/// Calibrates the replica of `rq` on its log, its benchmarks or both. Throws InvalidInput when
/// neither is given, for an option calibration_refusal() refuses, when a needed figure is in
/// neither the log nor the request (fit_reserve), when benchmarks come without a GPU, and as
/// observation_of does for a benchmark of an open loop.
[[nodiscard]] inline CalibrationAnswer calibrate(const CalibrationRequest& rq) {
    if (!rq.log && rq.benches.empty())
        detail::throw_field_error<InvalidInput>("calibrate", "log",
                                                "a vLLM start-up log, a vllm bench serve result, "
                                                "or both",
                                                "neither");
    if (const std::optional<CalibrationRefusal> r =
            calibration_refusal(rq.given, rq.log.has_value()))
        detail::throw_field_error<InvalidInput>("calibrate", name(r->option), r->expected, "given");
    CalibrationAnswer a;
    a.release = calibration_release(rq);
    // The log is vLLM's: its dtype "auto" serves a float32 checkpoint in bf16.
    a.weights = served_weights(rq.model, rq.weights, Engine::vllm, a.release.release);
    if (rq.log) {
        a.log = detail::calibration::calibrate_log(rq, a.weights, a.release);
        a.profile = make_profile(a.log->fit, rq.model_id, rq.gpu_id, rq.parallel.tp, rq.parallel.pp,
                                 rq.log_source);
    } else {
        // An estimate-only profile: no memory was measured.
        a.profile.has_reserve = false;
        a.profile.model = rq.model_id;
        a.profile.gpu = rq.gpu_id;
        a.profile.tp = rq.parallel.tp;
        a.profile.pp = rq.parallel.pp;
    }
    if (!rq.benches.empty()) {
        a.bench = detail::calibration::calibrate_benches(rq, a.weights, a.release.release);
        a.profile.estimate = a.bench->fit.params;
        a.profile.estimate_compute = a.bench->compute;
        a.profile.estimate_source.clear();
        for (const BenchResult& b : rq.benches)
            a.profile.estimate_source += (a.profile.estimate_source.empty() ? "" : ", ") + b.source;
    }
    return a;
}

}  // namespace kvplan
