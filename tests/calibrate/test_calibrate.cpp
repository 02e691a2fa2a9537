#include <catch2/catch.hpp>
#include <kvplan/calibrate.hpp>
#include <string>

using namespace kvplan;

namespace {
std::string log_path(const char* name) { return std::string(KVPLAN_TEST_DATA_DIR "/logs/") + name; }
double gib(Bytes b) { return b.in(GiB); }
}  // namespace

TEST_CASE("a V0 single-line profiling summary yields its figures", "[calibrate]") {
    // vllm issue #10517: Llama-3.1-8B-Instruct on an RTX 3090 at max_model_len 20000.
    const VllmLogFacts f = load_vllm_log(log_path("vllm-v0-llama-3.1-8b-rtx3090-20k.log"));
    REQUIRE(f.weights);
    CHECK(gib(f.weights->value) == Approx(14.9888));      // "GB" in this line is GiB
    CHECK(gib(f.weights->half_step) == Approx(0.00005));  // four decimals printed
    CHECK(gib(f.memory_total->value) == Approx(23.58));
    CHECK(*f.utilization == Approx(0.90));
    CHECK(gib(f.available_kv->value) == Approx(3.81));  // kv_cache_size=3.81GiB
    CHECK(gib(f.available_kv->half_step) == Approx(0.005));
    CHECK(gib(f.non_torch->value) == Approx(0.35));
    CHECK(gib(f.peak_torch->value) == Approx(17.06));
    CHECK(*f.gpu_blocks == 1952);
    CHECK(*f.max_model_len == 20000);
    CHECK(*f.max_concurrency == Approx(1.56));
    CHECK(f.lines_read == 4);
}

TEST_CASE("a V0 three-line profiling block yields its figures", "[calibrate]") {
    // vllm PR #14447: 4 x RTX 3090 at tensor parallel 4, utilization 0.99.
    const VllmLogFacts f = load_vllm_log(log_path("vllm-v0-profiling-rtx3090-tp4.log"));
    CHECK(gib(f.memory_total->value) == Approx(23.58));
    CHECK(*f.utilization == Approx(0.99));
    CHECK(gib(f.weights->value) == Approx(21.21));
    CHECK(gib(f.non_torch->value) == Approx(0.20));
    CHECK(gib(f.activation_peak->value) == Approx(0.37));
    CHECK(gib(f.available_kv->value) == Approx(1.57));
}

TEST_CASE("V1 lines: weights in GB, block counts, token counts with separators", "[calibrate]") {
    // vllm PR #12569 (January 2025): "# GPU blocks" and the concurrency line.
    VllmLogFacts f = load_vllm_log(log_path("vllm-v1-2025-01-llama-3.1-70b-w8a8.log"));
    CHECK(gib(f.weights->value) == Approx(67.7229));
    CHECK(*f.gpu_blocks == 1381);
    CHECK(*f.max_model_len == 2048);
    CHECK(*f.max_concurrency == Approx(10.79));
    CHECK_FALSE(f.available_kv.has_value());
    // vllm PR #13596: "GPU KV cache size: 2,042,016 tokens", "for 2,048 tokens".
    f = load_vllm_log(log_path("vllm-v1-2025-02-kv-tokens.log"));
    CHECK(*f.kv_cache_tokens == 2'042'016);
    CHECK(*f.max_model_len == 2048);
    CHECK(*f.max_concurrency == Approx(997.08));
    // V0 executor lines ("# GPU blocks: 471, # CPU blocks: 655").
    f = load_vllm_log(log_path("vllm-v0-sailor-4b.log"));
    CHECK(*f.gpu_blocks == 471);
    CHECK(*f.max_model_len == 32768);
}

TEST_CASE("a v0.21+ log charges its CUDA graph estimate", "[calibrate]") {
    // gpustack/runner PR #251: the first --gpu-memory-utilization on the line is the one in force.
    const VllmLogFacts f = load_vllm_log(log_path("vllm-v1-cuda-graph-profiling.log"));
    CHECK(*f.utilization == Approx(0.82));
    CHECK(gib(f.cuda_graphs->value) == Approx(0.36));
    CHECK(f.cuda_graphs_charged);
    CHECK(gib(f.available_kv->value) == Approx(6.87));
}

TEST_CASE("the V0 fit reproduces vLLM's own reserve within the printed rounding", "[calibrate]") {
    // PR #14447: reserve = ceil(23.58 GiB x 0.99) - 21.21 - 1.57 = 23.3442 - 22.78 = 0.5642 GiB.
    // vLLM printed its terms: non-torch 0.20 + activation 0.37 = 0.57 GiB. The two differ by less
    // than the sum of the half-steps of the five rounded figures: 0.99 x 0.005 + 4 x 0.005 GiB.
    const VllmLogFacts f = load_vllm_log(log_path("vllm-v0-profiling-rtx3090-tp4.log"));
    const CalibrationFit c = fit_reserve(f, {}, "tp4.log");
    CHECK(c.memory_total_source == FigureSource::log);
    CHECK(c.utilization_source == FigureSource::log);
    CHECK(gib(c.usable) == Approx(23.58 * 0.99));
    CHECK(gib(c.reserve) == Approx(0.5642).margin(1e-4));
    CHECK(std::abs(gib(c.reserve) - 0.57) <= 0.99 * 0.005 + 4 * 0.005);
    CHECK(c.consistent);
}

TEST_CASE("a failed start's negative KV memory calibrates the reserve it overran", "[calibrate]") {
    // vLLM v1 prints "Available KV cache memory: %.2f GiB" before it checks the figure
    // (vllm/v1/worker/gpu_worker.py), so a start that runs out prints it below zero and raises.
    // Given 80 GiB at 0.9: usable = 72 GiB; reserve = usable - weights + shortfall =
    // 72 - 64.4034 + 1.20 = 8.7966 GiB.
    const std::string log =
        "INFO [gpu_model_runner.py:2007] Model loading took 64.4034 GiB and 25.1 seconds\n"
        "INFO [gpu_worker.py:298] Available KV cache memory: -1.20 GiB\n";
    const VllmLogFacts f = parse_vllm_log(log, "failed.log");
    CHECK_FALSE(f.available_kv.has_value());
    REQUIRE(f.kv_shortfall.has_value());
    CHECK(gib(f.kv_shortfall->value) == Approx(1.20));
    CalibrationInputs in;
    in.memory_total = 80 * GiB;
    in.utilization = 0.9;
    const CalibrationFit c = fit_reserve(f, in, "failed.log");
    CHECK_FALSE(c.started);
    CHECK(c.usable == 72 * GiB);
    CHECK(c.available_kv.is_zero());
    CHECK(gib(c.reserve) == Approx(8.7966).margin(1e-4));
    CHECK(c.consistent);
    // A later line of a start that succeeded replaces it (the last run counts).
    const VllmLogFacts again = parse_vllm_log(
        log + "INFO [gpu_worker.py:298] Available KV cache memory: 2.50 GiB\n", "retried.log");
    CHECK_FALSE(again.kv_shortfall.has_value());
    CHECK(gib(again.available_kv->value) == Approx(2.50));
}

TEST_CASE("block counts narrow the available KV memory to whole blocks", "[calibrate]") {
    // vllm #10517, Llama-3.1-8B: a V0 block is 16 tokens x 128 KiB = 2 MiB. 1952 blocks put the
    // available memory in [3904, 3906) MiB; the printed 3.81 GiB +- 0.005 is [3896.32, 3906.56]
    // MiB. Overlap [3904, 3906) MiB: middle 3905 MiB = 3.81348 GiB.
    const VllmLogFacts f = load_vllm_log(log_path("vllm-v0-llama-3.1-8b-rtx3090-20k.log"));
    CalibrationInputs in;
    in.bytes_per_block = 2 * MiB;
    const CalibrationFit c = fit_reserve(f, in, "20k.log");
    CHECK(c.blocks_agree);
    CHECK(*c.blocks == 1952);
    CHECK(c.available_lo == 3904 * MiB);
    CHECK(c.available_hi == 3906 * MiB - Bytes::exactly(1));
    CHECK(gib(c.available_kv) == Approx(3905.0 / 1024.0));
    // reserve = ceil(23.58 GiB x 0.90) - 14.9888 - 3.81348 = 21.222 - 18.80228 = 2.41972 GiB. The
    // log's own terms: activation = peak_torch - weights = 17.06 - 14.9888 = 2.0712, plus
    // non-torch 0.35: 2.4212 GiB, within the rounding of the printed figures.
    CHECK(gib(c.reserve) == Approx(2.41972).margin(1e-4));
    CHECK(std::abs(gib(c.reserve) - 2.4212) < 0.01);
}

TEST_CASE("a V1 token count gives the block count, and a wrong model is caught", "[calibrate]") {
    // LMCache #1739, Qwen3-14B bf16: 40 layers x 16 tokens x 2 x 8 heads x 128 x 2 B = 2.5 MiB
    // per block; 42,656 tokens / 16 = 2666 blocks -> [6665, 6667.5) MiB, inside 6.51 +- 0.005 GiB.
    const VllmLogFacts f = load_vllm_log(log_path("vllm-v1-qwen3-14b.log"));
    CalibrationInputs in;
    in.bytes_per_block = Bytes::exactly(2'621'440);
    // The excerpt has neither the GPU nor the weights: give illustrative ones (40 GiB, 27.5 GiB).
    in.memory_total = 40 * GiB;
    in.weights = Bytes::exactly(27 * GiB.bytes + GiB.bytes / 2);
    const CalibrationFit c = fit_reserve(f, in, "qwen3.log");
    CHECK(*c.blocks == 2666);
    CHECK(c.available_lo == Bytes::exactly(2666ULL * 2'621'440));
    CHECK(c.available_hi == Bytes::exactly(2667ULL * 2'621'440 - 1));
    CHECK(c.weights_source == FigureSource::modelled);
    // The memory total is the GPU spec's (CalibrationInputs::memory_total), not a user's value.
    CHECK(c.memory_total_source == FigureSource::gpu_spec);
    CHECK(name(c.memory_total_source) == "gpu_spec");
    CHECK(c.utilization == 0.9);  // vLLM's default through v0.1x, as no line gives one
    CHECK(c.utilization_source == FigureSource::modelled);
    // reserve = 36 GiB - 27.5 GiB - 6666.25 MiB = 8.5 GiB - 6.50999 GiB = 1.99001 GiB.
    CHECK(gib(c.reserve) == Approx(8.5 - 6666.25 / 1024.0).margin(1e-6));
    // With fp8's block (1.25 MiB), 2666 blocks would be 3.25 GiB: not the log's 6.51 GiB.
    in.bytes_per_block = Bytes::exactly(1'310'720);
    const CalibrationFit wrong = fit_reserve(f, in, "qwen3.log");
    CHECK_FALSE(wrong.blocks_agree);
    CHECK(gib(wrong.available_kv) == Approx(6.51));  // the printed figure alone
}

TEST_CASE("a fit without the GPU's memory or the KV figure says what is missing",
          "[calibrate][errors]") {
    const VllmLogFacts f = load_vllm_log(log_path("vllm-v1-qwen3-14b.log"));
    CHECK_THROWS_WITH(fit_reserve(f, {}, "q.log"),
                      "q.log: total GPU memory: expected a GPU (--gpu) or a log line with "
                      "total_gpu_memory, found none");
    CalibrationInputs in;
    in.memory_total = 40 * GiB;
    CHECK_THROWS_WITH(fit_reserve(f, in, "q.log"), Catch::Contains("q.log: weights: expected"));
    const VllmLogFacts g = load_vllm_log(log_path("vllm-v1-2025-01-llama-3.1-70b-w8a8.log"));
    CHECK_THROWS_WITH(fit_reserve(g, in, "w8a8.log"),
                      Catch::Contains("w8a8.log: available KV memory: expected"));
    CHECK_THROWS_WITH(parse_vllm_log("INFO nothing to see\n", "empty.log"),
                      Catch::Contains("empty.log: log: expected vLLM start-up lines"));
}

TEST_CASE("a profile survives its JSON and replaces the modelled reserve terms", "[calibrate]") {
    CalibrationFit c;
    c.utilization = 0.82;
    c.memory_total = 24 * GiB;
    c.weights = 10 * GiB;
    c.available_kv = Bytes::exactly(7'376'736'993);  // about 6.87 GiB
    c.reserve = 2 * GiB;
    c.cuda_graphs = 384 * MiB;
    const CalibrationProfile p = make_profile(c, "Qwen3-8B", "l4", 2, 1, "cg.log");
    const std::string j = profile_json(p);
    CHECK(j.find("\"reserve_bytes\": 2147483648") != std::string::npos);
    CHECK(j.find("\"reserve_GiB\": 2.0000") != std::string::npos);
    const CalibrationProfile q = parse_profile(j, "p.json");
    CHECK(q.model == "Qwen3-8B");
    CHECK(q.gpu == "l4");
    CHECK(q.tp == 2);
    CHECK(q.utilization == 0.82);
    CHECK(q.available_kv == p.available_kv);
    CHECK(q.reserve == 2 * GiB);
    CHECK(*q.cuda_graphs == 384 * MiB);
    // The measured reserve replaces activation and graphs: 2 GiB - 384 MiB = 1664 MiB of
    // activation, 384 MiB of graphs; the CUDA context and comm buffers stay modelled (unset).
    const BudgetOptions b = apply_profile(q, {});
    CHECK(b.utilization == 0.82);
    CHECK(*b.reserve.activation == 1664 * MiB);
    CHECK(*b.reserve.cuda_graphs == 384 * MiB);
    CHECK_FALSE(b.reserve.cuda_context.has_value());
    CHECK_THROWS_WITH(
        parse_profile("{\"kvplan_profile\": 1, \"gpu_memory_utilization\": 0.9}", "p.json"),
        Catch::Contains("p.json: reserve_bytes: expected the fitted reserve"));
    CHECK_THROWS_WITH(parse_profile("{\"kvplan_profile\": 1, \"gpu_memory_utilization\": 0.9, "
                                    "\"reserve_bytes\": -5}",
                                    "p.json"),
                      Catch::Contains("p.json: reserve_bytes: expected a whole number of bytes"));
}

TEST_CASE("a profile carries the estimate's parameters, with or without a reserve", "[calibrate]") {
    // A benchmark-only profile: no log, so no memory figures; the four parameters and the peak
    // the compute fraction is of survive the JSON exactly (9 significant digits, more when a
    // double needs them to read back the same).
    CalibrationProfile p;
    p.model = "gemma-3-27b";
    p.gpu = "h100-sxm";
    p.has_reserve = false;
    p.estimate = EstimateParams{.bandwidth = 0.62,
                                .compute = 0.37,
                                .layer_overhead = 123.0 * microseconds,
                                .all_reduce_latency = 7.0 * microseconds};
    p.estimate_compute = ComputeDtype::fp8;
    p.estimate_source = "bench.json";
    const std::string j = profile_json(p);
    CHECK(j.find("reserve_bytes") == std::string::npos);
    CHECK(j.find("gpu_memory_utilization") == std::string::npos);
    CHECK(j.find("\"estimate_bandwidth_fraction\": 0.62,") != std::string::npos);
    // 123 x 10^-6 s is not the double nearest 0.000123: printed with the digits that read back.
    CHECK(j.find("\"estimate_layer_overhead_seconds\": 0.00012299999999999998,") !=
          std::string::npos);
    CHECK(j.find("\"estimate_source\": \"bench.json\"\n}") != std::string::npos);
    const CalibrationProfile q = parse_profile(j, "p.json");
    CHECK_FALSE(q.has_reserve);
    REQUIRE(q.estimate);
    CHECK(q.estimate->bandwidth == 0.62);
    CHECK(q.estimate->compute == 0.37);
    CHECK(q.estimate->layer_overhead == p.estimate->layer_overhead);
    CHECK(q.estimate->all_reduce_latency == p.estimate->all_reduce_latency);
    CHECK(q.estimate_compute == ComputeDtype::fp8);
    CHECK(q.estimate_source == "bench.json");
    // Without a reserve the budget is left as it was.
    BudgetOptions base;
    base.utilization = 0.85;
    CHECK(apply_profile(q, base).utilization == 0.85);
    CHECK_FALSE(apply_profile(q, base).reserve.activation.has_value());

    // Both parts in one profile (a log and a benchmark of the same replica).
    CalibrationFit c;
    c.utilization = 0.9;
    c.memory_total = 80 * GiB;
    c.weights = 16 * GiB;
    c.available_kv = 50 * GiB;
    c.reserve = 2 * GiB;
    CalibrationProfile both = make_profile(c, "llama-3-8b", "h100-sxm", 1, 1, "run.log");
    both.estimate = p.estimate;
    const CalibrationProfile r = parse_profile(profile_json(both), "both.json");
    CHECK(r.has_reserve);
    CHECK(r.reserve == 2 * GiB);
    CHECK(r.estimate == p.estimate);
    CHECK(r.estimate_compute == ComputeDtype::bf16);

    // Attention's and the experts' own fractions (Hopper's defaults: 0.24, 0.20) are written
    // where set and read back; a profile without them leaves them at 0, the GEMMs' fraction.
    CHECK(j.find("estimate_attention_fraction") == std::string::npos);
    CalibrationProfile split = q;
    split.estimate->attention = 0.24;
    split.estimate->experts = 0.2;
    const std::string sj = profile_json(split);
    CHECK(sj.find("\"estimate_attention_fraction\": 0.24,") != std::string::npos);
    CHECK(sj.find("\"estimate_experts_fraction\": 0.2,") != std::string::npos);
    CHECK(parse_profile(sj, "s.json").estimate == split.estimate);
    CHECK(q.estimate->attention == 0.0);
    // The per-layer multiple of the engines that do not compile their forward likewise (Hopper's
    // default 1.40; 1.35 here), written where it is not 1; out of (0, 100] it is refused.
    split.estimate->uncompiled_layer_scale = 1.35;
    const std::string uj = profile_json(split);
    CHECK(uj.find("\"estimate_uncompiled_layer_scale\": 1.35,") != std::string::npos);
    CHECK(parse_profile(uj, "u.json").estimate == split.estimate);
    split.estimate->uncompiled_layer_scale = 1.0;
    CHECK(profile_json(split).find("estimate_uncompiled_layer_scale") == std::string::npos);
    CHECK_THROWS_WITH(
        parse_profile("{\"kvplan_profile\": 1, \"estimate_uncompiled_layer_scale\": 0}", "e.json"),
        Catch::Contains("estimate_uncompiled_layer_scale: expected a multiple in (0, 100]"));
    CHECK_THROWS_WITH(
        parse_profile("{\"kvplan_profile\": 1, \"estimate_experts_fraction\": 0.2}", "e.json"),
        Catch::Contains("e.json: estimate_*: expected all four"));

    // Part of the estimate is refused, naming what is missing; so is a fraction out of range.
    CHECK_THROWS_WITH(parse_profile("{\"kvplan_profile\": 1, \"estimate_bandwidth_fraction\": "
                                    "0.5, \"estimate_compute_fraction\": 0.4}",
                                    "e.json"),
                      Catch::Contains("e.json: estimate_*: expected all four") &&
                          Catch::Contains("found 2 of them"));
    CHECK_THROWS_WITH(
        parse_profile("{\"kvplan_profile\": 1, \"estimate_bandwidth_fraction\": 1.5}", "e.json"),
        Catch::Contains("estimate_bandwidth_fraction: expected a fraction in (0, 1]"));
    CHECK_THROWS_WITH(parse_profile("{\"kvplan_profile\": 1}", "e.json"),
                      Catch::Contains("reserve_bytes: expected the fitted reserve, or the "
                                      "estimate_* parameters"));
}

TEST_CASE("a profile applied to a deployment's serving sets its reserve, fraction and estimate",
          "[calibrate]") {
    CalibrationFit c;
    c.utilization = 0.82;
    c.memory_total = 24 * GiB;
    c.weights = 10 * GiB;
    c.available_kv = 7 * GiB;
    c.reserve = 2 * GiB;
    c.cuda_graphs = 384 * MiB;
    CalibrationProfile p = make_profile(c, "Qwen3-8B", "l4", 1, 1, "cg.log");
    p.estimate = EstimateParams{.bandwidth = 0.62,
                                .compute = 0.37,
                                .layer_overhead = 123.0 * microseconds,
                                .all_reduce_latency = 7.0 * microseconds};
    p.estimate_compute = ComputeDtype::bf16;

    // No fraction given: the profile's 0.82 becomes vLLM's; the 2 GiB reserve splits into
    // 2048 - 384 = 1664 MiB of activation and 384 MiB of graphs; the context stays modelled.
    const Serving s = apply_profile(p, Serving{}, "p.json", "l4", ComputeDtype::bf16);
    CHECK(s.memory_fraction == 0.82);
    CHECK(*s.reserve.activation == 1664 * MiB);
    CHECK(*s.reserve.cuda_graphs == 384 * MiB);
    CHECK_FALSE(s.reserve.cuda_context.has_value());
    CHECK(s.estimate == p.estimate);

    // A fraction given wins over the profile's; the ideal profile takes none.
    Serving given;
    given.memory_fraction = 0.9;
    CHECK(apply_profile(p, given, "p.json", "l4", ComputeDtype::bf16).memory_fraction == 0.9);
    Serving ideal;
    ideal.engine = Engine::ideal;
    const Serving i = apply_profile(p, ideal, "p.json", "l4", ComputeDtype::bf16);
    CHECK_FALSE(i.memory_fraction.has_value());
    CHECK(*i.reserve.activation == 1664 * MiB);

    // The fractions are of the L4's bf16 peak: another GPU or compute type is refused.
    CHECK_THROWS_WITH(apply_profile(p, Serving{}, "p.json", "h100-sxm", ComputeDtype::bf16),
                      "p.json: gpu: expected h100-sxm, the GPU deployed: the estimate's fractions "
                      "are of the GPU they were fitted on, found 'l4'");
    CHECK_THROWS_WITH(apply_profile(p, Serving{}, "p.json", "l4", ComputeDtype::fp8),
                      Catch::StartsWith("p.json: estimate_compute_dtype: expected fp8, the "
                                        "compute type the deployment runs at") &&
                          Catch::EndsWith("found 'bf16'"));
    CHECK(profile_estimate(p, "p.json", "l4", ComputeDtype::bf16) == p.estimate);

    // A profile without an estimate leaves one already set; without a reserve, the reserve.
    CalibrationProfile memory_only = p;
    memory_only.estimate.reset();
    Serving calibrated;
    calibrated.estimate = p.estimate;
    CHECK(
        apply_profile(memory_only, calibrated, "m.json", "h100-sxm", ComputeDtype::fp8).estimate ==
        p.estimate);
    CalibrationProfile estimate_only = p;
    estimate_only.has_reserve = false;
    const Serving e = apply_profile(estimate_only, Serving{}, "e.json", "l4", ComputeDtype::bf16);
    CHECK_FALSE(e.memory_fraction.has_value());
    CHECK_FALSE(e.reserve.activation.has_value());
    CHECK(e.estimate == p.estimate);
}
