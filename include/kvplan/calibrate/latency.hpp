#pragma once

// Fitting the latency estimate's parameters to measurements. One routine serves both the
// defaults (fitted per GPU family on the "fit" rows of tests/data/latency_measurements.json) and
// calibration from a single benchmark of a user's own deployment.
//
// The objective is the sum of squared log errors, ln(estimate / measured)^2, over every measured
// figure of every observation: ITL (or TPOT) and TTFT of a serving load, the end-to-end latency of
// a static batch. A TTFT measured with requests waiting is left out: it is mostly queueing, which
// the running cap decides, not the parameters. The search is deterministic, on fixed grids: for
// each free parameter in turn (bandwidth, compute, layer overhead, all-reduce latency) every grid
// value is tried with the others held and the best kept (on a tie the current value stays); then
// joint steps of up to pair_reach grid points on two parameters at once, while they improve;
// passes repeat until one changes nothing. It is a local search: parameters that trade off (a
// layer's overhead against its two all-reduces, on one tp) can stop at another point of the same
// valley from another start, which is why the defaults name their start (fit_start).

#include <cmath>
#include <cstdint>
#include <iterator>
#include <optional>
#include <span>
#include <vector>

#include "../roofline/estimate.hpp"

namespace kvplan {

/// A measured load on a replica: what a benchmark reports, in the estimate's terms.
struct LatencyObservation {
    Replica replica;
    Load load{};
    RooflineOptions options{};             ///< compute type of the matmuls
    std::optional<Seconds> itl{};          ///< mean inter-token latency or TPOT (serving)
    std::optional<Seconds> ttft{};         ///< mean time to first token (serving)
    std::optional<Seconds> e2e{};          ///< end-to-end latency of a static batch
    std::optional<double> tokens_per_s{};  ///< output tokens per second of the replica
};

/// One parameter's grid: lo, lo + step, ..., hi. A step of zero fixes the parameter.
struct FitAxis {
    double lo = 0.0;
    double hi = 0.0;
    double step = 0.0;
};

/// The grids searched; times in seconds. Zero steps hold a parameter at its start.
struct FitSpace {
    FitAxis bandwidth{0.30, 1.00, 0.01};
    FitAxis compute{0.10, 1.00, 0.01};
    FitAxis attention{0.05, 1.00, 0.0};  ///< held unless asked: only long prompts show it
    FitAxis experts{0.02, 1.00, 0.0};    ///< held unless asked: only MoE loads show it
    FitAxis layer_overhead{0.0, 200e-6, 1e-6};
    FitAxis all_reduce_latency{0.0, 100e-6, 1e-6};
    /// Held unless asked: only rows of engines that compile their forward and of engines that do
    /// not, together, show it.
    FitAxis uncompiled_layer_scale{0.5, 3.0, 0.0};
    /// Held unless asked: only TensorRT-LLM's rows beside vLLM's show it (0 at the start: the
    /// uncompiled multiple).
    FitAxis trtllm_layer_scale{0.3, 3.0, 0.0};
    FitAxis trtllm_engine_layer_scale{0.3, 3.0, 0.0};  ///< held unless asked, likewise
    FitAxis expert_tile_rows{0.0, 256.0, 0.0};  ///< held unless asked: only MoE loads show it
    FitAxis request_overhead{0.0, 0.5, 0.0};    ///< held unless asked (the engine's default)
    /// Held unless asked: only vLLM loads of a recurrent model with prefill beside the decodes show
    /// it (EstimateParams::eager_mixer).
    FitAxis eager_mixer{0.0, 2e-3, 0.0};
    int max_passes = 20;
    int pair_reach = 4;  ///< grid points a joint step of two axes may move each
};

/// Where every default fit starts.
inline constexpr EstimateParams fit_start{.bandwidth = 0.8,
                                          .compute = 0.5,
                                          .layer_overhead = 20.0 * microseconds,
                                          .all_reduce_latency = 10.0 * microseconds};

/// The parameters found, and how well they fit.
struct FitResult {
    EstimateParams params{};
    double rms_log_error = 0.0;  ///< sqrt(mean of ln(estimate / measured)^2)
    std::size_t figures = 0;     ///< measured figures in the objective
    int passes = 0;
};

namespace detail {

/// An observation with what does not depend on the parameters prepared once.
struct PreparedObservation {
    DecodeCosts costs;
    RunningCap cap;
    const LatencyObservation* obs;
};

[[nodiscard]] inline std::vector<PreparedObservation> prepare(
    std::span<const LatencyObservation> obs) {
    std::vector<PreparedObservation> out;
    out.reserve(obs.size());
    for (const LatencyObservation& o : obs) {
        RooflineOptions ro = o.options;
        ro.efficiency.reset();
        const RunningCap cap = o.load.kind != LoadKind::static_batch
                                   ? running_cap(o.replica, o.load, {}, o.options.vllm_release)
                                   : RunningCap{};
        out.push_back({decode_costs(o.replica, ro), cap, &o});
    }
    return out;
}

/// Sum of squared log errors, and the count of figures in it.
struct Objective {
    double sum = 0.0;
    std::size_t figures = 0;
};

[[nodiscard]] inline Objective objective(std::span<const PreparedObservation> prepared,
                                         const EstimateParams& p) {
    Objective j;
    const auto add = [&](Seconds est, Seconds measured) {
        const double e = std::log(est / measured);
        j.sum += e * e;
        ++j.figures;
    };
    for (const PreparedObservation& po : prepared) {
        const LatencyEstimate e = estimate_latency(po.costs, po.obs->load, p, po.cap);
        if (po.obs->itl) add(e.itl, *po.obs->itl);
        if (po.obs->ttft && e.waiting == 0) add(e.ttft, *po.obs->ttft);
        if (po.obs->e2e) add(e.request, *po.obs->e2e);
        // A rate's log error is a time's with the sign turned: the same term.
        if (po.obs->tokens_per_s && po.obs->load.kind != LoadKind::static_batch)
            add(Seconds::in_base(*po.obs->tokens_per_s), Seconds::in_base(e.tokens_per_s));
    }
    return j;
}

}  // namespace detail

/// The parameters that best fit `obs` (see the header comment), starting from `start`. Throws
/// InvalidInput when no observation carries a measured figure, or as estimate_latency does.
[[nodiscard]] inline FitResult fit_params(std::span<const LatencyObservation> obs,
                                          const EstimateParams& start = fit_start,
                                          const FitSpace& space = {}) {
    const std::vector<detail::PreparedObservation> prepared = detail::prepare(obs);
    EstimateParams best = start;
    detail::Objective j = detail::objective(prepared, best);
    if (j.figures == 0)
        detail::throw_field_error<InvalidInput>("calibration", "observations",
                                                "at least one measured ITL, TTFT or e2e latency",
                                                "none");
    struct Axis {
        FitAxis grid;
        double EstimateParams::*number;
        Seconds EstimateParams::*time;
        bool overhead = false;  ///< request_overhead, an optional time
    };
    const Axis axes[] = {
        {space.bandwidth, &EstimateParams::bandwidth, nullptr},
        {space.compute, &EstimateParams::compute, nullptr},
        {space.attention, &EstimateParams::attention, nullptr},
        {space.experts, &EstimateParams::experts, nullptr},
        {space.layer_overhead, nullptr, &EstimateParams::layer_overhead},
        {space.all_reduce_latency, nullptr, &EstimateParams::all_reduce_latency},
        {space.uncompiled_layer_scale, &EstimateParams::uncompiled_layer_scale, nullptr},
        {space.trtllm_layer_scale, &EstimateParams::trtllm_layer_scale, nullptr},
        {space.trtllm_engine_layer_scale, &EstimateParams::trtllm_engine_layer_scale, nullptr},
        {space.expert_tile_rows, &EstimateParams::expert_tile_rows, nullptr},
        {space.request_overhead, nullptr, nullptr, true},
        {space.eager_mixer, nullptr, &EstimateParams::eager_mixer}};
    // Fitting the request overhead starts from the value it stands at.
    if (space.request_overhead.step > 0.0 && !best.request_overhead && !obs.empty())
        best.request_overhead =
            request_overhead(best, obs.front().replica.parallel.rules, obs.front().replica.model);
    // A value of axis `a` at grid index i, and the index nearest a value.
    const auto value_at = [](const FitAxis& g, long i) {
        return g.lo + g.step * static_cast<double>(i);
    };
    const auto last_index = [](const FitAxis& g) {
        return static_cast<long>(std::floor((g.hi - g.lo) / g.step + 1e-9));
    };
    const auto get = [](const EstimateParams& p, const Axis& a) {
        if (a.overhead) return p.request_overhead.value_or(Seconds{}).in(seconds);
        return a.number ? p.*(a.number) : (p.*(a.time)).in(seconds);
    };
    const auto set = [](EstimateParams& p, const Axis& a, double v) {
        if (a.overhead)
            p.request_overhead = Seconds::in_base(v);
        else if (a.number)
            p.*(a.number) = v;
        else
            p.*(a.time) = Seconds::in_base(v);
    };
    const auto try_params = [&](const EstimateParams& trial) {
        if (trial == best) return false;
        const detail::Objective t = detail::objective(prepared, trial);
        // Strictly better by more than rounding: on a tie the current value stays.
        if (!(t.sum < j.sum * (1.0 - 1e-12))) return false;
        best = trial;
        j = t;
        return true;
    };
    FitResult r;
    for (r.passes = 1; r.passes <= space.max_passes; ++r.passes) {
        bool changed = false;
        // Every grid value of each free axis in turn, the others held.
        for (const Axis& a : axes) {
            if (!(a.grid.step > 0.0)) continue;
            for (long i = 0; i <= last_index(a.grid); ++i) {
                EstimateParams trial = best;
                set(trial, a, value_at(a.grid, i));
                changed = try_params(trial) || changed;
            }
        }
        // Then steps of up to pair_reach grid points on two axes at once, which walk along a valley
        // no single axis can leave (per-layer time against all-reduce latency, two of which a layer
        // has; bandwidth against per-layer time), while they improve.
        for (bool moved = true; moved;) {
            moved = false;
            for (std::size_t x = 0; x < std::size(axes); ++x)
                for (std::size_t y = x + 1; y < std::size(axes); ++y) {
                    const Axis& a = axes[x];
                    const Axis& b = axes[y];
                    if (!(a.grid.step > 0.0) || !(b.grid.step > 0.0)) continue;
                    for (int da = -space.pair_reach; da <= space.pair_reach; ++da)
                        for (int db = -space.pair_reach; db <= space.pair_reach; ++db) {
                            if (da == 0 || db == 0) continue;
                            const double va = get(best, a) + da * a.grid.step;
                            const double vb = get(best, b) + db * b.grid.step;
                            if (va < a.grid.lo - 1e-12 || va > a.grid.hi + 1e-12 ||
                                vb < b.grid.lo - 1e-12 || vb > b.grid.hi + 1e-12)
                                continue;
                            EstimateParams trial = best;
                            // Snap to the grid so values stay exactly grid values.
                            set(trial, a,
                                value_at(a.grid, std::lround((va - a.grid.lo) / a.grid.step)));
                            set(trial, b,
                                value_at(b.grid, std::lround((vb - b.grid.lo) / b.grid.step)));
                            if (try_params(trial)) moved = changed = true;
                        }
                }
        }
        if (!changed) break;
    }
    r.params = best;
    r.figures = j.figures;
    r.rms_log_error = std::sqrt(j.sum / static_cast<double>(j.figures));
    return r;
}

/// Calibration from one benchmark: the bandwidth fraction from its ITL/TPOT (or e2e latency),
/// then the compute fraction from its TTFT when it has one, the fixed costs kept at `start` (a
/// single load cannot tell them apart from the fractions).
[[nodiscard]] inline FitResult calibrate_fractions(const LatencyObservation& obs,
                                                   const EstimateParams& start) {
    FitSpace space;
    space.layer_overhead.step = 0.0;
    space.all_reduce_latency.step = 0.0;
    if (!obs.ttft) space.compute.step = 0.0;
    return fit_params(std::span<const LatencyObservation>(&obs, 1), start, space);
}

}  // namespace kvplan
