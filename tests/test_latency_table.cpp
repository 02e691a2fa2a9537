// The latency estimate against published measurements (tests/data/latency_measurements.json).

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <vector>

#include "support/latency_table.hpp"

using namespace kvplan;
using kvplan::testing::latency_table;
using kvplan::testing::MeasuredRow;

TEST_CASE("print the fit per family and the table", "[.print]") {
    const std::vector<MeasuredRow> rows = latency_table();
    for (GpuFamily f : {GpuFamily::ampere, GpuFamily::hopper, GpuFamily::cdna3}) {
        const auto obs = kvplan::testing::observations(rows, "fit", f);
        const FitResult r = fit_params(obs);
        std::printf(
            "%s: bw %.2f compute %.2f layer %.0f us ar %.0f us rms %.3f figures %zu passes %d\n",
            std::string(name(f)).c_str(), r.params.bandwidth, r.params.compute,
            r.params.layer_overhead.in(us), r.params.all_reduce_latency.in(us), r.rms_log_error,
            r.figures, r.passes);
    }
    for (const MeasuredRow& r : rows) {
        const LatencyEstimate e = estimate_latency(r.obs.replica, r.obs.load,
                                                   default_params(r.family).params, r.obs.options);
        const double m = kvplan::testing::primary_measured(r).in(ms);
        const double est = kvplan::testing::primary_estimate(e).in(ms);
        const double b = kvplan::testing::primary_bound(e).in(ms);
        std::printf(
            "%-55s %-8s meas %9.2f bound %9.2f est %9.2f err %+6.1f%% B=%llu ttft est %.1f meas "
            "%.1f\n",
            r.id.c_str(), r.set.c_str(), m, b, est, 100.0 * (est / m - 1.0),
            (unsigned long long)e.running, e.ttft.in(ms), r.obs.ttft ? r.obs.ttft->in(ms) : 0.0);
    }
}
