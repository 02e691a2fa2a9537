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
    // --num-prompts 16 at the default infinite rate and no --max-concurrency: serve.py sends
    // all 16 at once and none again, a burst of 16 (not a closed loop of 16 clients).
    CHECK(b.burst());
    CHECK(o.load.kind == LoadKind::burst);
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

TEST_CASE("a burst is every prompt sent at once under no cap below it, else a closed loop",
          "[bench_result]") {
    // The PR #33743 run (16 prompts, rate inf, no cap) with its cap and count changed: serve.py
    // holds a request back only when max_concurrency requests are in flight, so a cap at or
    // above num_prompts leaves the run a burst of num_prompts; a lower one is a closed loop of
    // that many clients. The lengths stay the totals over the completed requests: 16,368 / 16 =
    // 1,023 prompt and 5,600 / 16 = 350 output tokens.
    const Replica r{.model = presets::gemma_3_27b, .gpu = gpus::h100_sxm};
    BenchResult b = read_vllm_bench_result(fixtures / "gemma-3-27b-random-1024-350.json");
    const auto reads = [&](std::optional<std::uint64_t> cap, std::uint64_t prompts) {
        b.max_concurrency = cap;
        b.num_prompts = prompts;
        return observation_of(b, r).load;
    };
    // Vultr's B200 concurrency page ran 400 prompts under --max-concurrency 512: a burst of 400.
    Load l = reads(512, 400);
    CHECK(l.kind == LoadKind::burst);
    CHECK(l.concurrency == 400);
    // A cap equal to the prompts: the same burst.
    l = reads(16, 16);
    CHECK(l.kind == LoadKind::burst);
    CHECK(l.concurrency == 16);
    // A cap below them: 4 clients, each sending its next request when one ends.
    l = reads(4, 16);
    CHECK(l.kind == LoadKind::serving);
    CHECK(l.concurrency == 4);
    CHECK(l.prompt_tokens == 1023);
    CHECK(l.output_tokens == 350);
    // The NIM row at concurrency 25 (250 requests at rate inf, 25 clients) stays a closed loop.
    const BenchResult nim =
        read_vllm_bench_result(fixtures / "nim-llama-3.3-70b-fp8-2xh100-5000-500-c25.json");
    CHECK_FALSE(nim.burst());
    const Replica r70{.model = presets::llama_3_70b, .gpu = gpus::h100_sxm};
    CHECK(observation_of(nim, r70).load.kind == LoadKind::serving);
    CHECK(observation_of(nim, r70).load.concurrency == 25);
    // A finite rate is never a burst, whatever the cap.
    b.request_rate = 4.0;
    b.max_concurrency = 512;
    CHECK_FALSE(b.burst());
}
