// kvplan::calibrate (calibrate/replica.hpp): `kvplan calibrate` as one library call, on a vLLM
// start-up log and on `vllm bench serve` results, figures derived by hand.

#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <kvplan/calibrate/replica.hpp>
#include <kvplan/gpu.hpp>
#include <kvplan/presets.hpp>
#include <sstream>
#include <string>

#include "../support/bundled_models.hpp"

using namespace kvplan;

namespace {

std::string data(const std::string& name) { return std::string(KVPLAN_TEST_DATA_DIR "/") + name; }

const std::string nim = "vllm_bench_serve/nim-llama-3.3-70b-fp8-2xh100-5000-500-c";

/// The NIM rows' replica: Llama-3.3-70B (Llama-3-70B's shapes) in fp8 on 2 x H100 SXM.
CalibrationRequest nim_request() {
    return {.model = presets::llama_3_70b,
            .gpu = gpus::h100_sxm,
            .parallel = {.tp = 2},
            .kv = KvDtype::fp8_e4m3,
            .weights = WeightOptions{.format = WeightFormat::fp8},
            .model_id = "llama-3-70b",
            .gpu_id = "h100-sxm"};
}

/// The corpus record's excerpt (its lines without the "# " header), after `banner`.
std::string corpus_excerpt(const std::string& record, const std::string& banner) {
    std::ifstream in(data("startup_logs/vllm/" + record));
    std::string line, out = banner.empty() ? std::string() : banner + "\n";
    while (std::getline(in, line))
        if (line.rfind("#", 0) != 0) out += line + "\n";
    return out;
}

}  // namespace

TEST_CASE("calibrate takes vLLM's release from the log's banner, else --engine-version",
          "[calibrate]") {
    // The corpus's gpt-oss-20b on 2 x H100 (v0.19.0 image; "Model loading took 7.01 GiB"), its
    // excerpt behind the API server's banner of each release. At tp 2 vLLM rounds the expert
    // width 1,440 up to 1,472 for Triton (engine/startup.hpp); from v0.14 triton_kernels pre-pads
    // the swizzled values to 64 (engine/release.hpp, vllm_triton_values_padded_to_64): gate/up's
    // 2,944 rows from 1,440 to 1,472 bytes (+2,944 x 32 = 94,208 B) and down's 2,880 rows from
    // 736 to 768 (+2,880 x 32 = 92,160 B), 186,368 B an expert, x 32 experts x 24 layers =
    // 143,130,624 B more than v0.13 holds.
    const std::string record = "gpt-oss-20b-h100-tp2-8k.log";
    const auto request = [&](const std::string& banner) {
        return CalibrationRequest{.model = testing::bundled("gpt-oss-20b"),
                                  .gpu = gpus::h100_sxm,
                                  .parallel = {.tp = 2},
                                  .log = parse_vllm_log(corpus_excerpt(record, banner), record),
                                  .log_source = record,
                                  .model_id = "gpt-oss-20b"};
    };
    const std::string api = "(APIServer pid=1) INFO 04-22 19:59:20 [api_server.py:1839] ";
    const CalibrationAnswer v19 = calibrate(request(api + "vLLM API server version 0.19.0"));
    const CalibrationAnswer v13 = calibrate(
        request("INFO 01-10 08:00:00 [core.py:93] Initializing a V1 LLM engine (v0.13.0) with "
                "config: model='openai/gpt-oss-20b'"));
    CHECK(v19.release.source == ReleaseSource::log);
    CHECK(v19.release.release == EngineVersion{0, 19});
    CHECK(v13.release.source == ReleaseSource::log);
    CHECK(v13.release.release == EngineVersion{0, 13});
    const Bytes w19 = *v19.log->inputs.weights, w13 = *v13.log->inputs.weights;
    CHECK((w19 - w13).count() == 143'130'624ULL);
    // The logged 7.01 GiB (7,526,930,186 B as the log's hundredths read): v0.19's rules within
    // 0.3 % of it, the corpus test's 2 %; v0.13's 2.2 % short.
    REQUIRE(v19.log->weights_error);
    REQUIRE(v19.log->weights_error->percent);
    CHECK(std::abs(*v19.log->weights_error->percent) < 0.3);
    CHECK(*v13.log->weights_error->percent < -2.0);
    // No banner: the newest release's rules (its triton_kernels pads as v0.19's), or the one
    // --engine-version names; a release given against the banner's is refused.
    CalibrationRequest bare = request("");
    const CalibrationAnswer newest = calibrate(bare);
    CHECK(newest.release.source == ReleaseSource::newest);
    CHECK(newest.release.release == vllm_newest_release);
    CHECK(*newest.log->inputs.weights == w19);
    bare.engine_version = EngineVersion{0, 13};
    const CalibrationAnswer given = calibrate(bare);
    CHECK(given.release.source == ReleaseSource::given);
    CHECK(*given.log->inputs.weights == w13);
    CalibrationRequest both = request(api + "vLLM API server version 0.19.0");
    both.engine_version = EngineVersion{0, 13};
    CHECK_THROWS_AS(calibrate(both), InvalidInput);
    both.engine_version = EngineVersion{0, 19};
    CHECK(*calibrate(both).log->inputs.weights == w19);
    // A banner outside the table takes its nearest end, and says what it named.
    const CalibrationAnswer old = calibrate(request(api + "vLLM API server version 0.6.3.post1"));
    CHECK(old.release.release == vllm_oldest_release);
    CHECK(old.release.logged_outside == EngineVersion{0, 6});
}

TEST_CASE("calibrate fits a V0 log's reserve and reproduces its cache figures", "[calibrate]") {
    // vllm #10517, Llama-3.1-8B (Llama-3-8B's shapes) on an RTX 3090, 20,000-token max_model_len:
    // reserve = ceil(23.58 GiB x 0.90) - 14.9888 GiB - 3,905 MiB (1,952 blocks of 16 tokens x
    // 131,072 B = 2 MiB, within the logged 3.81 +- 0.005 GiB) = 21.222 - 14.9888 - 3.8135 =
    // 2.41972 GiB. From 3,905 MiB vLLM's V0 rule gives floor(3,905 / 2) = 1,952 blocks, and
    // 1,952 x 16 / 20,000 = 1.5616x, as logged.
    CalibrationRequest rq{.model = presets::llama_3_8b,
                          .kv = KvDtype::bf16,
                          .log = load_vllm_log(data("logs/vllm-v0-llama-3.1-8b-rtx3090-20k.log")),
                          .log_source = "rtx3090.log",
                          .model_id = "llama-3-8b"};
    const CalibrationAnswer a = calibrate(rq);
    REQUIRE(a.log.has_value());
    CHECK_FALSE(a.bench.has_value());
    CHECK(a.log->fit.reserve.in(GiB) == Approx(2.41972).margin(1e-4));
    CHECK(a.log->inputs.bytes_per_block == 2 * MiB);
    REQUIRE(a.log->reproduced.has_value());
    CHECK(a.log->reproduced->num_blocks == 1952);
    CHECK(a.log->reproduced->max_concurrency == Approx(1.5616));
    // The modelled reserve and KV memory against the measured ones, each the exact difference.
    const LogCalibration& c = *a.log;
    const SizeError& re = c.reserve_error;
    CHECK(re.below == (c.modelled_reserve < c.fit.reserve));
    CHECK(re.difference ==
          (re.below ? c.fit.reserve - c.modelled_reserve : c.modelled_reserve - c.fit.reserve));
    REQUIRE(re.percent);
    CHECK(*re.percent ==
          Approx((c.modelled_reserve.in(B)-c.fit.reserve.in(B)) / c.fit.reserve.in(B)*100.0));
    CHECK(c.kv_error.difference == (c.kv_error.below ? c.fit.available_kv - c.modelled.kv_memory
                                                     : c.modelled.kv_memory - c.fit.available_kv));
    // The profile carries the measured reserve, for later runs.
    CHECK(a.profile.has_reserve);
    CHECK(a.profile.reserve == a.log->fit.reserve);
    CHECK(a.profile.source == "rtx3090.log");
    CHECK_FALSE(a.profile.estimate.has_value());
}

TEST_CASE("calibrate fits the estimate's fractions on one benchmark from Hopper's defaults",
          "[calibrate]") {
    // The NIM row at concurrency 25 (TPOT 38.75 ms, TTFT 688.69 ms). The bound: fp8 weights
    // (35.3 GB per GPU) and 25 sequences of 5,000 tokens at 2 x 80 x 8 x 128 x 1 B = 163,840 B
    // per token (10.24 GB per GPU) over 3.35 TB/s: 13.6 ms.
    CalibrationRequest rq = nim_request();
    rq.benches.push_back(read_vllm_bench_result(data(nim + "25.json")));
    const CalibrationAnswer a = calibrate(rq);
    REQUIRE(a.bench.has_value());
    CHECK_FALSE(a.log.has_value());
    const BenchCalibration& b = *a.bench;
    CHECK(b.compute == ComputeDtype::fp8);
    REQUIRE(b.start_family.has_value());
    CHECK(*b.start_family == GpuFamily::hopper);
    REQUIRE(b.figures.size() == 1);
    CHECK(b.figures[0].observation.load.concurrency == 25);
    CHECK(b.figures[0].after.itl_bound.in(seconds) == Approx(0.0136).epsilon(0.01));
    // One load moves only the fractions: the fixed costs keep Hopper's defaults.
    CHECK(b.fit.params.layer_overhead == b.start.layer_overhead);
    CHECK(b.fit.params.all_reduce_latency == b.start.all_reduce_latency);
    // The fit does no worse than where it started over the figures it fitted (TPOT and TTFT):
    // the rms of ln(estimate / measured).
    REQUIRE(b.ttft_used);
    const auto sq = [](Seconds estimate, Seconds measured) {
        const double e = std::log(estimate / measured);
        return e * e;
    };
    const BenchResult& m = rq.benches[0];
    const double before = std::sqrt(
        (sq(b.figures[0].before.itl, m.tpot.mean) + sq(b.figures[0].before.ttft, m.ttft.mean)) / 2);
    CHECK(b.fit.rms_log_error <= before);
    // Each estimate's error in percent of the measurement: (estimate / measured - 1) x 100.
    const BenchFigures& f = b.figures[0];
    REQUIRE(f.tpot_error);
    CHECK(*f.tpot_error == Approx(100.0 * (f.after.itl / m.tpot.mean - 1.0)));
    REQUIRE(f.tpot_error_before);
    CHECK(*f.tpot_error_before == Approx(100.0 * (f.before.itl / m.tpot.mean - 1.0)));
    REQUIRE(f.ttft_error);
    CHECK(*f.ttft_error == Approx(100.0 * (f.after.ttft / m.ttft.mean - 1.0)));
    REQUIRE(f.ttft_error_before);
    CHECK(*f.ttft_error_before == Approx(100.0 * (f.before.ttft / m.ttft.mean - 1.0)));
    CHECK_FALSE(a.profile.has_reserve);
    REQUIRE(a.profile.estimate.has_value());
    CHECK(a.profile.estimate->bandwidth == b.fit.params.bandwidth);
    CHECK(a.profile.estimate_compute == ComputeDtype::fp8);
}

TEST_CASE("calibrate fits every parameter on several loads", "[calibrate]") {
    // The NIM rows at concurrency 1, 25 and 100: three TPOTs and TTFTs tell the fixed per-layer
    // and all-reduce times from the fractions (fit_params); the median error is the middle one of
    // the three |estimate / measured - 1|.
    CalibrationRequest rq = nim_request();
    for (const char* c : {"1", "25", "100"})
        rq.benches.push_back(read_vllm_bench_result(data(nim + c + ".json")));
    const CalibrationAnswer a = calibrate(rq);
    REQUIRE(a.bench.has_value());
    const BenchCalibration& b = *a.bench;
    REQUIRE(b.figures.size() == 3);
    CHECK(b.figures[2].observation.load.concurrency == 100);
    std::vector<double> errors;
    for (std::size_t i = 0; i < 3; ++i)
        errors.push_back(std::abs(b.figures[i].after.itl / rq.benches[i].tpot.mean - 1.0));
    std::sort(errors.begin(), errors.end());
    CHECK(b.median_tpot_error == Approx(100.0 * errors[1]));
    CHECK(b.median_tpot_error <= b.median_tpot_error_before);
    CHECK(a.profile.estimate_source ==
          data(nim + "1.json") + ", " + data(nim + "25.json") + ", " + data(nim + "100.json"));
}

TEST_CASE("calibrate reads a burst without max_concurrency as a burst and fits its TTFT",
          "[calibrate]") {
    // vllm-project/vllm PR #33743's run: 16 prompts of 1,023 tokens sent at once (no
    // --max-concurrency), each served once; mean TTFT 2,633.55 ms, mean TPOT 51.78 ms. Read as
    // a closed loop of 16 clients, nobody waited for a prefill but one's own, and the estimate
    // could only reach the TTFT at the compute grid's floor (0.10 of peak: 1.04 s for 2.63 s).
    // Read as the burst it was, each prompt waits for those prefilled before it, and the fit
    // reaches the measured mean TTFT with a compute fraction inside the grid.
    CalibrationRequest rq{.model = presets::gemma_3_27b,
                          .gpu = gpus::h100_sxm,
                          .model_id = "gemma-3-27b",
                          .gpu_id = "h100-sxm"};
    rq.benches.push_back(
        read_vllm_bench_result(data("vllm_bench_serve/gemma-3-27b-random-1024-350.json")));
    const CalibrationAnswer a = calibrate(rq);
    REQUIRE(a.bench.has_value());
    const BenchCalibration& b = *a.bench;
    REQUIRE(b.figures.size() == 1);
    CHECK(b.figures[0].observation.load.kind == LoadKind::burst);
    CHECK(b.figures[0].observation.load.concurrency == 16);
    REQUIRE(b.ttft_used);
    CHECK(b.fit.params.compute > FitSpace{}.compute.lo);
    CHECK(b.figures[0].after.ttft.in(milliseconds) == Approx(2633.55).epsilon(0.02));
    // The defaults' TTFT already holds the queue: within 40 % of the measurement, where the
    // closed-loop reading gave 199 ms (-92 %).
    REQUIRE(b.figures[0].ttft_error_before);
    CHECK(std::abs(*b.figures[0].ttft_error_before) < 40.0);
}

TEST_CASE("calibrate without a log or a benchmark, or benchmarks without a GPU, is refused",
          "[calibrate]") {
    CHECK_THROWS_AS(calibrate({.model = presets::llama_3_8b}), InvalidInput);
    CalibrationRequest rq = nim_request();
    rq.gpu.reset();
    rq.benches.push_back(read_vllm_bench_result(data(nim + "25.json")));
    CHECK_THROWS_AS(calibrate(rq), InvalidInput);
}

TEST_CASE("calibrate refuses what it does not model, and without a log what only a log reads",
          "[calibrate]") {
    using O = CalibrationOption;
    // Nothing given: nothing refused, with a log or without.
    CHECK_FALSE(calibration_refusal({}, true).has_value());
    CHECK_FALSE(calibration_refusal({}, false).has_value());
    // Not modelled: refused whatever is calibrated, the first in the enum's order named.
    for (const O o : {O::gpus, O::speculative_method, O::num_speculative_tokens, O::draft_model,
                      O::allow_long_context, O::chunked_local_hybrid, O::without_flashinfer})
        for (const bool with_log : {true, false}) {
            const auto r = calibration_refusal(CalibrationOptionsGiven{}.set(o), with_log);
            REQUIRE(r.has_value());
            CHECK(r->option == o);
        }
    const auto drafter = calibration_refusal(
        CalibrationOptionsGiven{}.set(O::draft_model).set(O::speculative_method), true);
    REQUIRE(drafter.has_value());
    CHECK(drafter->option == O::speculative_method);
    CHECK(drafter->expected.rfind("no speculative decoding", 0) == 0);
    CHECK(name(O::num_gpu_blocks_override) == "num_gpu_blocks_override");
    // What shapes only a log's cache and reserve: taken with a log, refused beside benchmarks
    // alone (their estimate takes the replica at vLLM's defaults).
    for (const O o : {O::block_size, O::gpu_memory_utilization, O::kv_memory, O::max_num_seqs,
                      O::max_num_batched_tokens, O::num_gpu_blocks_override, O::enforce_eager,
                      O::max_loras, O::limit_mm_per_prompt, O::skip_mm_profiling}) {
        const CalibrationOptionsGiven g = CalibrationOptionsGiven{}.set(o);
        CHECK_FALSE(calibration_refusal(g, true).has_value());
        const auto r = calibration_refusal(g, false);
        REQUIRE(r.has_value());
        CHECK(r->option == o);
        CHECK(r->expected.rfind("a start-up log as well", 0) == 0);
    }
    // calibrate() itself refuses rather than ignore: a request of several replicas' GPUs throws,
    // naming the option.
    CalibrationRequest rq{.model = presets::llama_3_8b,
                          .kv = KvDtype::bf16,
                          .log = load_vllm_log(data("logs/vllm-v0-llama-3.1-8b-rtx3090-20k.log")),
                          .log_source = "rtx3090.log",
                          .model_id = "llama-3-8b"};
    rq.given.set(O::gpus);
    CHECK_THROWS_WITH(calibrate(rq), Catch::Contains("gpus: expected one replica"));
    rq.given = CalibrationOptionsGiven{}.set(O::max_loras);
    CHECK_NOTHROW(calibrate(rq));
    rq = nim_request();
    rq.benches.push_back(read_vllm_bench_result(data(nim + "25.json")));
    rq.given.set(O::max_loras);
    CHECK_THROWS_WITH(calibrate(rq), Catch::Contains("max_loras: expected a start-up log as well"));
}

TEST_CASE("a modelled size's error is its exact difference and its percent", "[calibrate]") {
    // 3 GiB modelled against 2 GiB measured: 1 GiB over, +50 %; 1 GiB against 4 GiB: 3 GiB
    // under, -75 %; against nothing measured, no percent.
    const SizeError over = size_error(3 * GiB, 2 * GiB);
    CHECK(over.difference == 1 * GiB);
    CHECK_FALSE(over.below);
    CHECK(over.percent == 50.0);
    const SizeError under = size_error(1 * GiB, 4 * GiB);
    CHECK(under.difference == 3 * GiB);
    CHECK(under.below);
    CHECK(under.percent == -75.0);
    CHECK_FALSE(size_error(1 * GiB, Bytes{}).percent.has_value());
}
