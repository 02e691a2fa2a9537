// kvplan/calibrate/bench_result.hpp: reading `vllm bench serve --save-result` files
// (tests/data/vllm_bench_serve/, figures from vllm-project/vllm pull request #33743).

#include <catch2/catch.hpp>
#include <kvplan/calibrate/bench_result.hpp>
#include <kvplan/presets.hpp>

#include "support/bundled_models.hpp"

using namespace kvplan;
using kvplan::testing::data_dir;

namespace {
const auto fixtures = data_dir / "vllm_bench_serve";
}

TEST_CASE("a vllm bench serve result gives its load and its mean figures", "[bench_result]") {
    const BenchResult b = read_vllm_bench_result(fixtures / "gemma-3-27b-random-1024-350.json");
    CHECK(b.model_id == "google/gemma-3-27b-it");
    CHECK(b.num_prompts == 16);
    CHECK_FALSE(b.request_rate);  // "inf"
    CHECK_FALSE(b.max_concurrency);
    // No cap and an infinite rate: all 16 prompts in flight at once.
    CHECK(b.concurrency() == 16u);
    // 16,368 input and 5,600 output tokens over 16 requests: 1,023 and 350 each.
    CHECK(b.mean_prompt_tokens() == 1023);
    CHECK(b.mean_output_tokens() == 350);
    CHECK(b.duration.in(seconds) == Approx(20.87));
    CHECK(b.output_throughput == Approx(268.31));
    CHECK(b.ttft.mean.in(milliseconds) == Approx(2633.55));
    CHECK(b.ttft.p99->in(milliseconds) == Approx(4610.48));
    CHECK(b.tpot.mean.in(milliseconds) == Approx(51.78));
    CHECK(b.itl.median->in(milliseconds) == Approx(46.55));
    CHECK_FALSE(b.e2el);
}

TEST_CASE("a result becomes an observation of the replica it ran on", "[bench_result]") {
    const BenchResult b = read_vllm_bench_result(fixtures / "gemma-3-27b-random-1024-350.json");
    const Replica r{.model = presets::gemma_3_27b, .gpu = gpus::h100_sxm};
    const LatencyObservation o = observation_of(b, r);
    CHECK(o.load.kind == LoadKind::serving);
    CHECK(o.load.concurrency == 16);
    CHECK(o.load.prompt_tokens == 1023);
    CHECK(o.load.output_tokens == 350);
    CHECK(o.itl->in(milliseconds) == Approx(51.78));  // the mean TPOT
    CHECK(o.ttft->in(milliseconds) == Approx(2633.55));
}

TEST_CASE("a result without a figure the estimate needs names the field", "[bench_result]") {
    CHECK_THROWS_WITH(read_vllm_bench_result(fixtures / "missing-mean-tpot.json"),
                      Catch::Contains("missing-mean-tpot.json") &&
                          Catch::Contains("mean_tpot_ms") && Catch::Contains("missing"));
    CHECK_THROWS_WITH(read_vllm_bench_result(fixtures / "no-such-file.json"),
                      Catch::Contains("no such file"));
}

TEST_CASE("an open-loop run at a finite rate is refused for calibration", "[bench_result]") {
    const BenchResult b = read_vllm_bench_result(fixtures / "open-loop-rate-4.json");
    CHECK(b.request_rate == Approx(4.0));
    CHECK_FALSE(b.concurrency());
    const Replica r{.model = presets::gemma_3_27b, .gpu = gpus::h100_sxm};
    CHECK_THROWS_WITH(observation_of(b, r),
                      Catch::Contains("max_concurrency") && Catch::Contains("closed loop"));
}
