#pragma once

// How the latency estimate's defaults are fitted on tests/data/latency_measurements.json, and how
// its errors are summed up: one procedure for bench/fit_latency.cpp (which prints the fit and the
// tables of docs/accuracy.md) and for the tests that check the defaults and the medians.
//
// The fit, deterministic from fixed starts:
// 1. Per GPU family with at least min_family_figures figures among its "fit" rows, fit_params on
//    their ITL/TPOT, e2e latency and throughput (not TTFT, see fit_families, so no request
//    overhead enters); the others borrow. Families with at least min_split_figures figures also
//    fit attention's fraction and, with MoE rows, the routed experts' apart from the GEMMs'.
// 2. Per engine, the request overhead from the TTFT of its "fit" rows of at most 4 clients
//    (nobody waiting), each estimated with its family's parameters. vLLM's is a constant: the
//    intercept of the measured TTFT against the estimate's GPU part where the rows span enough
//    prompt work to tell one (overhead_intercept), else the overhead of the least sum of |log
//    error| on a grid of 0.5 ms from 0 to 500 ms. SGLang and TensorRT-LLM prefill eagerly
//    (eager_prefill): their overhead is a host time per projection of the forward
//    (eager_prefill_projections), the slope on the projections beside the GPU part where the rows
//    tell one (launch_slope), else the least sum of |log error| on a grid of 1 us to 5 ms.

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "latency_table.hpp"

namespace kvplan::testing {

/// What the procedure found.
struct DefaultsFit {
    std::array<std::optional<FitResult>, all_gpu_families.size()> family{};
    std::array<std::size_t, all_gpu_families.size()> rows{};  ///< fit rows of each family
    std::array<std::optional<Seconds>, 3> engine{};           ///< request overhead by ParallelRules
    /// Host time per projection of an eager prefill, by ParallelRules (eager_prefill engines).
    std::array<std::optional<Seconds>, 3> engine_launch{};
    std::array<std::size_t, 3> engine_rows{};  ///< TTFT figures each was fitted on
};

inline bool is_moe(const MeasuredRow& r) { return r.obs.replica.model.config().moe.experts > 0; }

/// The parameters of `r` from a fit: its family's (or the one it borrows from) with its engine's
/// overhead.
inline EstimateParams params_of(const MeasuredRow& r, const DefaultsFit& f) {
    // A family without a fit borrows as the defaults do: Ada Ampere's, Blackwell (under five
    // figures) Hopper's.
    const GpuFamily own = r.family == GpuFamily::ada         ? GpuFamily::ampere
                          : r.family == GpuFamily::blackwell ? GpuFamily::hopper
                                                             : r.family;
    const auto& fitted = f.family[static_cast<std::size_t>(r.family)]
                             ? f.family[static_cast<std::size_t>(r.family)]
                             : f.family[static_cast<std::size_t>(own)];
    EstimateParams p = fitted ? fitted->params : default_params(r.family).params;
    const ParallelRules rules = r.obs.replica.parallel.rules;
    const auto e = static_cast<std::size_t>(rules);
    if (!eager_prefill(rules))
        p.request_overhead = f.engine[e] ? *f.engine[e] : default_params(rules).request_overhead;
    else if (f.engine_launch[e])
        p.request_overhead = *f.engine_launch[e] *
                             static_cast<double>(eager_prefill_projections(r.obs.replica.model));
    else
        p.request_overhead = default_request_overhead(rules, r.obs.replica.model);
    return p;
}

/// Where each family's fit starts: full bandwidth and a large per-layer time, where the earlier
/// fits on static batches ended (a local search from lower bandwidths stops in a worse valley).
inline constexpr EstimateParams family_fit_start{.bandwidth = 1.0,
                                                 .compute = 0.5,
                                                 .layer_overhead = 120.0 * microseconds,
                                                 .all_reduce_latency = 10.0 * microseconds,
                                                 .expert_tile_rows = 64.0};

/// Figures (ITL/TPOT, e2e, throughput) a family needs among its fit rows to be fitted.
inline constexpr std::size_t min_family_figures = 5;

/// Figures a family needs to fit attention's and the experts' fractions apart from the GEMMs'.
inline constexpr std::size_t min_split_figures = 10;

namespace detail_fit {

inline void fit_families(const std::vector<MeasuredRow>& rows, DefaultsFit& f) {
    // Hopper first: the engines' uncompiled_layer_scale is fitted on its rows, the only family's
    // with vLLM, SGLang and TensorRT-LLM rows enough at each tp, and the others take it (an
    // engine's kernels a layer, not a GPU's); Blackwell also takes its compute fractions.
    for (GpuFamily fam : {GpuFamily::hopper, GpuFamily::ampere, GpuFamily::ada,
                          GpuFamily::blackwell, GpuFamily::cdna3}) {
        std::vector<LatencyObservation> obs;
        bool moe = false;
        for (const MeasuredRow& r : rows) {
            if (r.set != "fit" || r.family != fam || r.doubtful) continue;
            LatencyObservation o = r.obs;
            // TTFT stays out: most published TTFTs are queueing the estimate does not see (a
            // burst's waves, clients that arrive together), and fitted, they pull the compute
            // fraction far below what the prefill-heavy throughputs allow.
            o.ttft.reset();
            moe = moe || is_moe(r);
            obs.push_back(o);
        }
        f.rows[static_cast<std::size_t>(fam)] = obs.size();
        // Four parameters want more figures than a handful: a family with fewer borrows.
        std::size_t figures = 0;
        for (const LatencyObservation& o : obs)
            figures += (o.itl ? 1 : 0) + (o.e2e ? 1 : 0) + (o.tokens_per_s ? 1 : 0);
        if (figures < min_family_figures) continue;
        FitSpace space;
        EstimateParams start = family_fit_start;
        // Attention and the routed experts' grouped GEMMs at fractions of their own, where the
        // family has figures enough for six parameters (experts only with MoE rows): with one
        // fraction for all three, Hopper's settled at 0.36, a dense GEMM's fraction pulled down
        // by the MoE rows' slow prefill.
        if (figures >= min_split_figures) {
            space.attention.step = 0.01;
            start.attention = start.compute;
            if (moe) {
                space.experts.step = 0.01;
                start.experts = start.compute;
            }
        }
        // Blackwell's fit rows are mostly one client and one hybrid MoE model: they tell its
        // bandwidth and fixed costs, not how near its peaks the GEMM, attention and grouped-GEMM
        // kernels run (fitted, those went to 1.00 or 0.10 with one row in or out). It keeps
        // Hopper's fractions of its own peaks: the same kernel families (CUTLASS, FlashInfer,
        // FlashAttention) on the next generation. Its all-reduce latency too: its fit rows are
        // mostly one model at tp 2, and fitted, the latency went to 0 (the bound of the search)
        // with the per-layer time taking it; the all-reduce kernels are the same (vLLM's custom
        // all-reduce, NCCL, TensorRT-LLM's allreduce) over NVLink.
        const auto& hopper = f.family[static_cast<std::size_t>(GpuFamily::hopper)];
        if (fam == GpuFamily::blackwell && hopper) {
            start.compute = hopper->params.compute;
            start.attention = hopper->params.attention;
            start.experts = hopper->params.experts;
            space.compute.step = space.attention.step = space.experts.step = 0.0;
            start.all_reduce_latency = hopper->params.all_reduce_latency;
            space.all_reduce_latency.step = 0.0;
        }
        // TensorRT-LLM's multiples apart from SGLang's, its PyTorch backend's and a TensorRT
        // engine's (EstimateParams::trtllm_layer_scale, trtllm_engine_layer_scale), fitted on
        // Hopper's rows from 1.0 beside it and taken by the others likewise.
        if (fam == GpuFamily::hopper) {
            space.uncompiled_layer_scale.step = 0.05;
            space.trtllm_layer_scale.step = 0.05;
            space.trtllm_engine_layer_scale.step = 0.05;
            start.trtllm_layer_scale = 1.0;
            start.trtllm_engine_layer_scale = 1.0;
        } else if (hopper) {
            start.uncompiled_layer_scale = hopper->params.uncompiled_layer_scale;
            start.trtllm_layer_scale = hopper->params.trtllm_layer_scale;
            start.trtllm_engine_layer_scale = hopper->params.trtllm_engine_layer_scale;
        }
        // The expert tile is not fitted: vLLM's fused_moe default, 64 rows past E tokens a step
        // (16 below, expert_tile), as family_fit_start holds it.
        start.request_overhead = Seconds{};
        f.family[static_cast<std::size_t>(fam)] = fit_params(obs, start, space);
    }
}

/// Rows an engine's overhead is read as an intercept from, at least, and the span of their GPU
/// parts (largest over smallest) they need.
inline constexpr std::size_t min_intercept_rows = 3;
inline constexpr double min_intercept_span = 3.0;

/// The overhead as the intercept of the measured TTFT against the estimate's GPU part (least
/// squares, a + k x gpu), where the rows' GPU parts span enough to tell a slope: what a request
/// costs with no prefill, so a prefill the estimate gets wrong in scale (k != 1) stays out of
/// the constant. nullopt when the rows cannot tell (too few, too alike, a slope <= 0, or an
/// intercept outside [0, 500 ms]).
inline std::optional<double> overhead_intercept(
    const std::vector<std::pair<double, double>>& gpu_and_measured) {
    const std::size_t n = gpu_and_measured.size();
    if (n < min_intercept_rows) return std::nullopt;
    double lo = gpu_and_measured.front().first, hi = lo, gm = 0.0, mm = 0.0;
    for (const auto& [gpu, measured] : gpu_and_measured) {
        lo = std::min(lo, gpu);
        hi = std::max(hi, gpu);
        gm += gpu / static_cast<double>(n);
        mm += measured / static_cast<double>(n);
    }
    if (!(lo > 0.0) || hi < min_intercept_span * lo) return std::nullopt;
    double sxy = 0.0, sxx = 0.0;
    for (const auto& [gpu, measured] : gpu_and_measured) {
        sxy += (gpu - gm) * (measured - mm);
        sxx += (gpu - gm) * (gpu - gm);
    }
    const double k = sxy / sxx;
    const double a = mm - k * gm;
    if (!(k > 0.0) || !(a >= 0.0) || a > 0.5) return std::nullopt;
    // Rounded to the grid of the fallback, 0.5 ms.
    return std::round(a / 0.0005) * 0.0005;
}

/// The host time per projection of an eager prefill (eager_prefill) from rows of (projections,
/// the GPUs' part of the TTFT, the measured TTFT), in seconds: the least-squares t of measured =
/// t x projections + k x gpu (through the origin, k the GPU part's scale as in
/// overhead_intercept) where the rows span a factor of min_intercept_span in their GPU parts and
/// more than one projection count, else nullopt. Rounded to 1 us.
inline std::optional<double> launch_slope(const std::vector<std::array<double, 3>>& rows) {
    if (rows.size() < min_intercept_rows) return std::nullopt;
    double glo = rows.front()[1], ghi = glo, nlo = rows.front()[0], nhi = nlo;
    double snn = 0.0, sgg = 0.0, sng = 0.0, snm = 0.0, sgm = 0.0;
    for (const auto& [n, gpu, measured] : rows) {
        glo = std::min(glo, gpu);
        ghi = std::max(ghi, gpu);
        nlo = std::min(nlo, n);
        nhi = std::max(nhi, n);
        snn += n * n;
        sgg += gpu * gpu;
        sng += n * gpu;
        snm += n * measured;
        sgm += gpu * measured;
    }
    if (!(glo > 0.0) || ghi < min_intercept_span * glo || !(nhi > nlo)) return std::nullopt;
    const double det = snn * sgg - sng * sng;
    if (!(det > 0.0)) return std::nullopt;
    const double t = (snm * sgg - sgm * sng) / det;
    const double k = (snn * sgm - sng * snm) / det;
    if (!(t >= 0.0) || !(k > 0.0) || t > 0.005) return std::nullopt;
    return std::round(t / 1e-6) * 1e-6;
}

inline void fit_engines(const std::vector<MeasuredRow>& rows, DefaultsFit& f) {
    for (ParallelRules e : {ParallelRules::vllm, ParallelRules::sglang, ParallelRules::trtllm}) {
        // The GPUs' part of each TTFT, with no overhead: the overhead adds to it exactly when
        // nobody waits for a slot.
        std::vector<std::array<double, 3>> fitted_rows;  // projections, GPU part, measured
        for (const MeasuredRow& r : rows) {
            if (r.set != "fit" || r.obs.replica.parallel.rules != e || !r.obs.ttft || r.doubtful)
                continue;
            if (r.obs.load.kind == LoadKind::static_batch) continue;
            EstimateParams p = params_of(r, f);
            p.request_overhead = Seconds{};
            const LatencyEstimate est =
                estimate_latency(r.obs.replica, r.obs.load, p, r.obs.options);
            // Alone or nearly: what a request measures above its own prefill, not what it waits
            // for other requests' prefills (the estimate's queueing terms, not this constant).
            if (est.waiting > 0 || r.obs.load.concurrency > 4) continue;
            fitted_rows.push_back(
                {static_cast<double>(eager_prefill_projections(r.obs.replica.model)),
                 est.ttft.in(seconds), r.obs.ttft->in(seconds)});
        }
        const auto idx = static_cast<std::size_t>(e);
        f.engine_rows[idx] = fitted_rows.size();
        if (fitted_rows.empty()) continue;
        if (eager_prefill(e)) {
            // The host time of the prompt's eager forward, per projection.
            if (const std::optional<double> t = launch_slope(fitted_rows)) {
                f.engine_launch[idx] = Seconds::in_base(*t);
                continue;
            }
            double best = 0.0, best_sum = -1.0;
            for (int i = 0; i <= 5000; ++i) {
                const double t = 1e-6 * i;
                double sum = 0.0;
                for (const auto& [n, gpu, measured] : fitted_rows)
                    sum += std::abs(std::log((gpu + t * n) / measured));
                if (best_sum < 0.0 || sum < best_sum * (1.0 - 1e-12)) {
                    best = t;
                    best_sum = sum;
                }
            }
            f.engine_launch[idx] = Seconds::in_base(best);
            continue;
        }
        std::vector<std::pair<double, double>> gpu_and_measured;
        for (const auto& [n, gpu, measured] : fitted_rows)
            gpu_and_measured.emplace_back(gpu, measured);
        if (const std::optional<double> a = overhead_intercept(gpu_and_measured)) {
            f.engine[idx] = Seconds::in_base(*a);
            continue;
        }
        double best = 0.0, best_sum = -1.0;
        for (int i = 0; i <= 1000; ++i) {
            const double ov = 0.0005 * i;
            double sum = 0.0;
            for (const auto& [gpu, measured] : gpu_and_measured) {
                const double err = std::log((gpu + ov) / measured);
                sum += std::abs(err);
            }
            if (best_sum < 0.0 || sum < best_sum * (1.0 - 1e-12)) {
                best = ov;
                best_sum = sum;
            }
        }
        f.engine[idx] = Seconds::in_base(best);
    }
}

}  // namespace detail_fit

/// The procedure of the header comment.
inline DefaultsFit fit_defaults(const std::vector<MeasuredRow>& rows) {
    DefaultsFit f;
    detail_fit::fit_families(rows, f);
    detail_fit::fit_engines(rows, f);
    return f;
}

/// The figures a row compares: its estimate, its bound and what was measured.
enum class Metric { tpot, ttft, throughput, e2e };

inline constexpr std::array all_metrics{Metric::tpot, Metric::ttft, Metric::throughput,
                                        Metric::e2e};

inline std::string_view name(Metric m) {
    switch (m) {
        case Metric::tpot:
            return "TPOT/ITL";
        case Metric::ttft:
            return "TTFT";
        case Metric::throughput:
            return "throughput";
        case Metric::e2e:
            return "e2e (batch)";
    }
    return "";
}

/// A row's measured figure for `m`, if it has one.
inline std::optional<double> measured(const MeasuredRow& r, Metric m) {
    switch (m) {
        case Metric::tpot:
            if (r.obs.itl) return r.obs.itl->in(milliseconds);
            return std::nullopt;
        case Metric::ttft:
            if (r.obs.ttft) return r.obs.ttft->in(milliseconds);
            return std::nullopt;
        case Metric::throughput:
            if (r.obs.load.kind != LoadKind::static_batch) return r.throughput;
            return std::nullopt;
        case Metric::e2e:
            if (r.obs.e2e) return r.obs.e2e->in(milliseconds);
            return std::nullopt;
    }
    return std::nullopt;
}

/// The estimate's figure for `m` (ms, or tokens/s).
inline double estimated(const LatencyEstimate& e, Metric m) {
    switch (m) {
        case Metric::tpot:
            return e.itl.in(milliseconds);
        case Metric::ttft:
            return e.ttft.in(milliseconds);
        case Metric::throughput:
            return e.tokens_per_s;
        case Metric::e2e:
            return e.request.in(milliseconds);
    }
    return 0.0;
}

/// The bound's figure for `m`: a floor for times, a ceiling for throughput.
inline double bound(const LatencyEstimate& e, Metric m) {
    switch (m) {
        case Metric::tpot:
            return e.itl_bound.in(milliseconds);
        case Metric::ttft:
            return e.ttft_bound.in(milliseconds);
        case Metric::throughput:
            return e.tokens_per_s_bound;
        case Metric::e2e:
            return e.request_bound.in(milliseconds);
    }
    return 0.0;
}

/// The estimate of a row with the bundled defaults.
inline LatencyEstimate estimate_with_defaults(const MeasuredRow& r) {
    return estimate_latency(r.obs.replica, r.obs.load, default_params(r.family).params,
                            r.obs.options);
}

/// Median and 90th percentile of |estimate / measured - 1| over the rows of `set` that have `m`
/// (nearest rank: the value at index floor(q x (n - 1))), and the count.
struct ErrorSummary {
    std::size_t count = 0;
    double median = 0.0;
    double p90 = 0.0;
};

/// The summary over the rows of `set` that `keep` accepts.
inline ErrorSummary summarize(const std::vector<MeasuredRow>& rows,
                              const std::vector<LatencyEstimate>& estimates, std::string_view set,
                              Metric m, const std::function<bool(const MeasuredRow&)>& keep) {
    std::vector<double> errors;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        if (rows[i].set != set || rows[i].doubtful || !keep(rows[i])) continue;
        const std::optional<double> meas = measured(rows[i], m);
        if (!meas) continue;
        errors.push_back(std::abs(estimated(estimates[i], m) / *meas - 1.0));
    }
    ErrorSummary s;
    s.count = errors.size();
    if (errors.empty()) return s;
    std::sort(errors.begin(), errors.end());
    const auto at = [&](double q) {
        return errors[static_cast<std::size_t>(q * static_cast<double>(errors.size() - 1))];
    };
    // The median of an even count is the mean of the two middle values.
    const std::size_t n = errors.size();
    s.median = n % 2 == 1 ? errors[n / 2] : 0.5 * (errors[n / 2 - 1] + errors[n / 2]);
    s.p90 = at(0.9);
    return s;
}

/// The summary over every row of `set`.
inline ErrorSummary summarize(const std::vector<MeasuredRow>& rows,
                              const std::vector<LatencyEstimate>& estimates, std::string_view set,
                              Metric m) {
    return summarize(rows, estimates, set, m, [](const MeasuredRow&) { return true; });
}

}  // namespace kvplan::testing
