// The latency estimate against published measurements (tests/data/latency_measurements.json and
// its README; the tables of docs/accuracy.md): the bound stays below every one, the estimate's
// error on the held-out rows, and the fitted defaults reproduce.

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

// The config importer is compiled here, once for this test binary.
#define KVPLAN_HF_CONFIG_IMPLEMENTATION
#include <kvplan/hf_config.hpp>

#include "support/latency_fit.hpp"

using namespace kvplan;
using kvplan::testing::latency_table;
using kvplan::testing::MeasuredRow;

namespace {

LatencyEstimate estimate_row(const MeasuredRow& r) {
    return estimate_latency(r.obs.replica, r.obs.load, default_params(r.family).params,
                            r.obs.options);
}

}  // namespace

TEST_CASE("the table has both sets, four GPU types and three GPU families", "[latency_table]") {
    const std::vector<MeasuredRow> rows = latency_table();
    CHECK(rows.size() == 53);
    CHECK(std::count_if(rows.begin(), rows.end(), [](auto& r) { return r.set == "fit"; }) == 26);
    CHECK(std::count_if(rows.begin(), rows.end(), [](auto& r) { return r.set == "held_out"; }) ==
          27);
    for (GpuFamily f : {GpuFamily::ampere, GpuFamily::hopper, GpuFamily::cdna3})
        CHECK(std::any_of(rows.begin(), rows.end(), [&](auto& r) { return r.family == f; }));
}

TEST_CASE("the bound stays at or below every published measurement", "[latency_table][property]") {
    // Times: a serving row's ITL against the decode bound at the batch the engine runs; a static
    // batch's latency against the prefill bound plus O - 1 decode bounds at the prompt's length;
    // a TTFT against one prompt's prefill bound. Throughput: the measurement stays at or below the
    // bound's ceiling (decode steps of C sequences, every prompt's compute at peak).
    using kvplan::testing::Metric;
    for (const MeasuredRow& r : latency_table()) {
        INFO(r.id);
        const LatencyEstimate e = estimate_row(r);
        for (Metric m : kvplan::testing::all_metrics) {
            const std::optional<double> meas = kvplan::testing::measured(r, m);
            if (!meas) continue;
            INFO(kvplan::testing::name(m));
            if (m == Metric::throughput)
                CHECK(kvplan::testing::bound(e, m) >= *meas);
            else
                CHECK(kvplan::testing::bound(e, m) <= *meas);
        }
    }
}

TEST_CASE("the estimate's median errors per set and figure", "[latency_table]") {
    // The figures docs/accuracy.md reports (bench/fit_latency.cpp prints them): the median of
    // |estimate / measured - 1| over the rows of a set that publish the figure.
    using kvplan::testing::Metric;
    const std::vector<MeasuredRow> rows = latency_table();
    std::vector<LatencyEstimate> est;
    for (const MeasuredRow& r : rows) est.push_back(estimate_row(r));
    struct Expected {
        const char* set;
        Metric metric;
        std::size_t count;
        double median;
    };
    const Expected expected[] = {
        {"fit", Metric::tpot, 5, 0.099},         {"fit", Metric::ttft, 5, 0.066},
        {"fit", Metric::throughput, 5, 0.078},   {"fit", Metric::e2e, 21, 0.031},
        {"held_out", Metric::tpot, 4, 0.056},    {"held_out", Metric::ttft, 4, 0.137},
        {"held_out", Metric::throughput, 4, 0.053}, {"held_out", Metric::e2e, 23, 0.074},
    };
    for (const Expected& x : expected) {
        INFO(x.set << " " << kvplan::testing::name(x.metric));
        const kvplan::testing::ErrorSummary s =
            kvplan::testing::summarize(rows, est, x.set, x.metric);
        CHECK(s.count == x.count);
        CHECK(s.median == Approx(x.median).margin(0.0005));
    }
    // The targets: TPOT and throughput within 15 %, TTFT within 30 %, on the held-out rows.
    CHECK(kvplan::testing::summarize(rows, est, "held_out", Metric::tpot).median <= 0.15);
    CHECK(kvplan::testing::summarize(rows, est, "held_out", Metric::throughput).median <= 0.15);
    CHECK(kvplan::testing::summarize(rows, est, "held_out", Metric::ttft).median <= 0.30);
}

TEST_CASE("the estimate is above the bound on every row", "[latency_table][property]") {
    for (const MeasuredRow& r : latency_table()) {
        INFO(r.id);
        const LatencyEstimate e = estimate_row(r);
        CHECK(kvplan::testing::primary_estimate(e) >= kvplan::testing::primary_bound(e));
        CHECK(e.ttft >= e.ttft_bound);
        CHECK(e.tokens_per_s <= e.tokens_per_s_bound);
    }
}

TEST_CASE("the fitted defaults reproduce from the fit rows", "[latency_table][fit]") {
    // bench/fit_latency.cpp's procedure (support/latency_fit.hpp) gives the bundled values.
    const std::vector<MeasuredRow> rows = latency_table();
    const kvplan::testing::DefaultsFit fit = kvplan::testing::fit_defaults(rows);
    for (GpuFamily f : all_gpu_families) {
        const FamilyParams& d = default_params(f);
        INFO(name(f));
        CHECK(d.fitted == fit.family[static_cast<std::size_t>(f)].has_value());
        if (!d.fitted) continue;
        const EstimateParams& r = fit.family[static_cast<std::size_t>(f)]->params;
        CHECK(r.bandwidth == Approx(d.params.bandwidth).margin(1e-9));
        CHECK(r.compute == Approx(d.params.compute).margin(1e-9));
        CHECK(r.layer_overhead.in(microseconds) ==
              Approx(d.params.layer_overhead.in(microseconds)).margin(1e-6));
        CHECK(r.all_reduce_latency.in(microseconds) ==
              Approx(d.params.all_reduce_latency.in(microseconds)).margin(1e-6));
        CHECK(r.expert_tile_rows == Approx(d.params.expert_tile_rows).margin(1e-9));
        // A family's defaults leave the request overhead to the engine.
        CHECK_FALSE(d.params.request_overhead.has_value());
    }
    for (ParallelRules e : {ParallelRules::vllm, ParallelRules::sglang, ParallelRules::trtllm}) {
        INFO(name(e));
        const auto& fitted = fit.engine[static_cast<std::size_t>(e)];
        CHECK(default_params(e).fitted == fitted.has_value());
        if (fitted)
            CHECK(default_params(e).request_overhead.in(milliseconds) ==
                  Approx(fitted->in(milliseconds)).margin(1e-9));
    }
    // Unfitted families borrow a fitted one's values.
    CHECK(default_params(GpuFamily::ada).params == default_params(GpuFamily::ampere).params);
}
