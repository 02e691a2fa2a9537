// kvplan/calibrate/latency.hpp: the fit recovers parameters it generated figures with, and
// calibration from one benchmark moves only what one load can tell.

#include <catch2/catch.hpp>
#include <kvplan/calibrate/latency.hpp>
#include <kvplan/presets.hpp>

using namespace kvplan;

namespace {

Replica llama_70b_tp2() {
    return Replica{.model = presets::llama_3_70b,
                   .gpu = gpus::h100_sxm,
                   .parallel = {.tp = 2},
                   .weights = {.format = WeightFormat::fp8},
                   .kv = KvDtype::fp8_e4m3};
}

// What the estimate says for `l` with `p`, as if measured.
LatencyObservation synthetic(const Load& l, const EstimateParams& p, bool with_ttft) {
    RooflineOptions o;
    o.compute = ComputeDtype::fp8;
    const LatencyEstimate e = estimate_latency(llama_70b_tp2(), l, p, o);
    LatencyObservation obs{.replica = llama_70b_tp2(), .load = l, .options = o};
    obs.itl = e.itl;
    if (with_ttft) obs.ttft = e.ttft;
    return obs;
}

}  // namespace

TEST_CASE("calibration from one benchmark recovers the fractions its figures came from",
          "[calibrate]") {
    // Figures made with bandwidth 0.72 and compute 0.41 (grid values), the fixed costs as the
    // start has them: calibration finds both exactly, and keeps the fixed costs.
    const EstimateParams truth{.bandwidth = 0.72,
                               .compute = 0.41,
                               .layer_overhead = fit_start.layer_overhead,
                               .all_reduce_latency = fit_start.all_reduce_latency};
    const LatencyObservation obs =
        synthetic({.concurrency = 8, .prompt_tokens = 5000, .output_tokens = 500}, truth, true);
    const FitResult r = calibrate_fractions(obs, fit_start);
    CHECK(r.params.bandwidth == Approx(0.72).margin(1e-9));
    CHECK(r.params.compute == Approx(0.41).margin(1e-9));
    CHECK(r.params.layer_overhead == fit_start.layer_overhead);
    CHECK(r.params.all_reduce_latency == fit_start.all_reduce_latency);
    CHECK(r.rms_log_error < 1e-6);
    CHECK(r.figures == 2);
}

TEST_CASE("without a TTFT calibration leaves the compute fraction where it was", "[calibrate]") {
    const EstimateParams truth{.bandwidth = 0.9, .compute = 0.5};
    const LatencyObservation obs =
        synthetic({.concurrency = 1, .prompt_tokens = 1000, .output_tokens = 500}, truth, false);
    const EstimateParams start{.bandwidth = 0.6, .compute = 0.77};
    const FitResult r = calibrate_fractions(obs, start);
    CHECK(r.params.bandwidth == Approx(0.9).margin(1e-9));
    CHECK(r.params.compute == 0.77);
    CHECK(r.figures == 1);
}

TEST_CASE("the fit recovers the per-layer time from loads that tell it from bandwidth",
          "[calibrate]") {
    // One GPU (no all-reduce), concurrency 1, 16 and 64: the weights dominate the bytes at 1 and
    // the KV at 64, while the per-layer time is the same at every load, so bandwidth, compute
    // and per-layer time each move the figures differently and the grid point that made them is
    // the best fit.
    const EstimateParams truth{
        .bandwidth = 0.85, .compute = 0.5, .layer_overhead = 37.0 * microseconds};
    RooflineOptions o;
    o.compute = ComputeDtype::fp8;
    Replica r = llama_70b_tp2();
    r.parallel.tp = 1;
    r.gpu = gpus::h200_sxm;  // 70 GB of fp8 weights fit on 141 GB
    std::vector<LatencyObservation> obs;
    for (std::uint64_t c : {1, 16, 64}) {
        const Load l{.concurrency = c, .prompt_tokens = 2000, .output_tokens = 400};
        const LatencyEstimate e = estimate_latency(r, l, truth, o);
        obs.push_back({.replica = r, .load = l, .options = o, .itl = e.itl, .ttft = e.ttft});
    }
    FitSpace space;
    space.all_reduce_latency.step = 0.0;  // tp 1 has none to fit
    const FitResult f = fit_params(obs, fit_start, space);
    CHECK(f.params.bandwidth == Approx(0.85).margin(1e-9));
    CHECK(f.params.compute == Approx(0.5).margin(1e-9));
    CHECK(f.params.layer_overhead.in(microseconds) == Approx(37.0).margin(1e-6));
    CHECK(f.rms_log_error < 1e-6);
    CHECK(f.figures == 6);
}

TEST_CASE("a fit needs at least one measured figure", "[calibrate]") {
    const LatencyObservation empty{.replica = llama_70b_tp2()};
    CHECK_THROWS_WITH(fit_params(std::span<const LatencyObservation>(&empty, 1)),
                      Catch::Contains("observations") && Catch::Contains("none"));
}
