// kvplan trace, fleet and calibrate, and --plot, through the built binary.

#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <kvplan/calibrate/bench_result.hpp>
#include <kvplan/calibrate/latency.hpp>
#include <kvplan/presets.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>

#include "cli_runner.hpp"

using nlohmann::json;

namespace {
std::string written_file(const std::string& name) {
    return std::string(KVPLAN_TEST_BINARY_DIR) + "/" + name;
}
std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}
/// The NIM rows' replica: Llama-3.3-70B (Llama-3-70B's shapes), fp8 weights and KV, tp 2 on H100
/// SXM.
kvplan::Replica nim_replica() {
    return {.model = kvplan::presets::llama_3_70b,
            .gpu = kvplan::gpus::h100_sxm,
            .parallel = {.tp = 2},
            .weights = {.format = kvplan::WeightFormat::fp8},
            .kv = kvplan::KvDtype::fp8_e4m3};
}
}  // namespace

TEST_CASE("trace reports the Azure sample's KV, waste, replay and replica", "[cli][trace]") {
    // The first 1,000 requests of the Azure LLM inference conversation trace 2023 (CC-BY 4.0;
    // Patel et al., "Splitwise", ISCA 2024). Figures computed separately with Python's csv module:
    //   sum of (prompt + generated) x 131,072 B (Llama-3-8B bf16) = 165,340,905,472 B;
    //   sum of ceil(tokens / 16) x 16 x 131,072 B = 166,327,222,272 B;
    //   contiguous: 1,000 x 8,192 (max_position_embeddings) x 131,072 B = 1,073,741,824,000 B;
    //   replay at TTFT 500 ms, TPOT 50 ms (the defaults): peak 87 requests holding 7,644 blocks of
    //   2 MiB = 16,030,629,888 B; arrival rate 999 / 216.027393 s = 4.62441 /s.
    const CliRun r = run_kvplan("trace " + data_file("traces/azure-conv-2023-first1000.csv") +
                                " --model llama-3-8b --gpu h100-sxm --format json");
    REQUIRE(r.code == 0);
    const json j = json::parse(r.out);
    CHECK(j["command"] == "trace");
    CHECK(j["requests"].get<std::uint64_t>() == 1000);
    CHECK(j["kv_used_per_gpu"].get<std::uint64_t>() == 165'340'905'472ULL);
    CHECK(j["kv_paged_per_gpu"].get<std::uint64_t>() == 166'327'222'272ULL);
    CHECK(j["kv_contiguous_per_gpu"].get<std::uint64_t>() == 1'073'741'824'000ULL);
    CHECK(j["replay_peak_requests"].get<std::uint64_t>() == 87);
    CHECK(j["replay_peak_kv_per_gpu"].get<std::uint64_t>() == 16'030'629'888ULL);
    CHECK(j["arrival_rate"].get<double>() == Approx(4.62441).epsilon(1e-5));
    // 14.9 GiB at the peak fits one H100's KV budget (tens of GiB): one GPU holds it.
    CHECK(j["smallest_replica_for_peak"]["gpus"].get<int>() == 1);
    CHECK(j["holds_peak"].get<bool>());
    // The text names the source and keeps the attribution the license asks for.
    const CliRun t = run_kvplan("trace " + data_file("traces/azure-conv-2023-first1000.csv") +
                                " --model llama-3-8b");
    REQUIRE(t.code == 0);
    CHECK(t.out.find("Patel et al.") != std::string::npos);
    CHECK(t.out.find("nearest-rank") != std::string::npos);
    CHECK(t.out.find("no --gpu") != std::string::npos);
}

TEST_CASE("fleet sizes replicas for fixed lengths by hand", "[cli][fleet]") {
    // Every request 2,000 + 500 tokens: ceil(2500 / 16) = 157 blocks x 2 MiB = 314 MiB on
    // Llama-3-8B; a 16 GiB KV budget holds floor(16,384 / 314) = 52. The decode bound at 52
    // sequences is far below 100 ms (about 15 GB of weights + 52 x 0.3 GB of KV at 3.35 TB/s is
    // under 10 ms), so the KV budget binds. A request holds its slot for the TTFT at 52 running
    // less vLLM's 50.0 ms request overhead (HTTP, tokenizer: no slot) and 499 more tokens a TPOT
    // apart, 0.1529 s - 0.0500 s + 499 x 17.075 ms = 8.623 s by the estimate (not the targets' 1 s
    // + 500 x 0.1 s = 51 s): 86.23 in flight at 10 /s, replicas ceil(86.23 / 52) = 2.
    const std::string args =
        "fleet --model llama-3-8b --gpu h100-sxm --kv-memory 16GiB --rate 10 --tpot-ms 100 "
        "--ttft-ms 1000 --prompt-tokens 2000 --output-tokens 500 --format json";
    const CliRun r = run_kvplan(args);
    REQUIRE(r.code == 0);
    const json j = json::parse(r.out);
    CHECK(j["kv_per_request_at_percentile"].get<std::uint64_t>() == 314ULL << 20);
    CHECK(j["batch_kv_at_percentile"].get<std::uint64_t>() == 52);
    CHECK(j["batch"].get<std::uint64_t>() == 52);
    CHECK(j["binding"] == "KV budget");
    const double overhead =
        kvplan::default_params(kvplan::ParallelRules::vllm).request_overhead.in(kvplan::seconds);
    const double stay = j["ttft_estimate_seconds"].get<double>() - overhead +
                        499 * j["tpot_at_batch"].get<double>();
    CHECK(j["time_in_system"].get<double>() == Approx(stay));
    CHECK(stay == Approx(8.623).epsilon(1e-4));
    CHECK(j["in_flight"].get<double>() == Approx(10 * stay));
    CHECK(j["replicas"].get<std::uint64_t>() == 2);
    CHECK(j["gpus"].get<std::uint64_t>() == 2);
    // vLLM's default max_num_seqs on an 80 GB H100: 1,024 (vllm/engine/arg_utils.py).
    CHECK(j["max_num_seqs"].get<std::uint64_t>() == 1024);
    // Identical requests: the overflow probability is 0 up to 52 and 1 past it, so the epsilon
    // mode finds the same batch.
    const CliRun e = run_kvplan(args + " --epsilon 0.01");
    REQUIRE(e.code == 0);
    CHECK(json::parse(e.out)["batch_kv_overflow"].get<std::uint64_t>() == 52);
    // Sized by the bound, a 6 ms target: batch 1 reads about 15.3 GB (4.6 ms at 3.35 TB/s), and
    // every extra sequence 0.3 GB more, so TPOT binds below the KV budget's 52.
    const CliRun tp = run_kvplan(
        "fleet --model llama-3-8b --gpu h100-sxm --kv-memory 16GiB --rate 10 --tpot-ms 6 "
        "--ttft-ms 1000 --prompt-tokens 2000 --output-tokens 500 --size-by bound --format json");
    REQUIRE(tp.code == 0);
    const json k = json::parse(tp.out);
    CHECK(k["binding"] == "TPOT");
    CHECK(k["batch"].get<std::uint64_t>() < 52);
    CHECK(k["tpot_at_batch"].get<double>() <= 0.006);
    // 1 ms per token: not even one sequence (an answer, exit 0).
    const CliRun no = run_kvplan(
        "fleet --model llama-3-8b --gpu h100-sxm --rate 10 --tpot-ms 1 --prompt-tokens 2000 "
        "--output-tokens 500");
    CHECK(no.code == 0);
    CHECK(no.out.find("NO BATCH MEETS THE TARGETS") != std::string::npos);
    // Neither a trace nor lengths: a usage error naming the flag.
    const CliRun u = run_kvplan("fleet --model llama-3-8b --gpu h100-sxm --rate 10 --tpot-ms 50");
    CHECK(u.code == 2);
    CHECK(u.err.find("--trace") != std::string::npos);
}

TEST_CASE("calibrate fits the reserve of a V0 log and reproduces its cache figures",
          "[cli][calibrate]") {
    // vllm #10517, Llama-3.1-8B on an RTX 3090 (Llama-3-8B's shapes). reserve = ceil(23.58 GiB x
    // 0.90) - 14.9888 GiB - 3905 MiB (1952 blocks of 2 MiB within 3.81 +- 0.005 GiB) = 2.41972 GiB.
    // From 3905 MiB vLLM's V0 rule gives floor(3905 / 2) = 1952 blocks and 1952 x 16 / 20,000 =
    // 1.56x, as logged.
    const std::string profile = written_file("llama-3-8b-rtx3090.profile.json");
    const CliRun r =
        run_kvplan("calibrate " + data_file("logs/vllm-v0-llama-3.1-8b-rtx3090-20k.log") +
                   " --model llama-3-8b --format json --write-profile '" + profile + "'");
    REQUIRE(r.code == 0);
    const json j = json::parse(r.out);
    CHECK(j["reserve"].get<double>() / (1ULL << 30) == Approx(2.41972).margin(1e-4));
    CHECK(j["gpu_blocks"] == "1,952 / 1,952");
    CHECK(j["max_concurrency"] == "1.56x / 1.56x");
    CHECK(j["profile"]["reserve_bytes"].get<std::uint64_t>() == j["reserve"].get<std::uint64_t>());
    const std::string written = slurp(profile);
    CHECK(written.find("\"kvplan_profile\": 1") != std::string::npos);
    // fit --profile uses the measured reserve as vLLM's charged terms (activation, no graphs) at
    // the profile's utilization: on an H100 SXM (the CUDA total, 85,029,027,840 B) the KV budget
    // is ceil(85,029,027,840 x 0.90) - 16,060,522,496 (modelled weights) - 2,097,152 (their
    // rotary table, 8,192 x 128 x 2 B) - the reserve
    // = 76,526,125,056 - 16,062,619,648 - reserve.
    const std::uint64_t reserve = j["reserve"].get<std::uint64_t>();
    const CliRun f = run_kvplan(
        "fit --model llama-3-8b --gpu h100-sxm --context 8192 --format json "
        "--profile '" +
        profile + "'");
    REQUIRE(f.code == 0);
    const json fj = json::parse(f.out);
    CHECK(fj["activation_bytes"].get<std::uint64_t>() == reserve);
    CHECK(fj["cuda_graph_bytes"].get<std::uint64_t>() == 0);
    CHECK(fj["kv_budget_bytes_per_gpu"].get<std::uint64_t>() ==
          76'526'125'056ULL - 16'062'619'648ULL - reserve);
    CHECK(f.out.find("reserve from the profile") != std::string::npos);
    // A log that is not a vLLM log: exit 3 naming the file.
    const CliRun bad =
        run_kvplan("calibrate " + data_file("traces/README.md") + " --model llama-3-8b");
    CHECK(bad.code == 3);
    CHECK(bad.err.find("log: expected vLLM start-up lines") != std::string::npos);
}

TEST_CASE("calibrate labels the GPU memory with where it came from", "[cli][calibrate]") {
    // Without --gpu the total is the log's "total_gpu_memory (23.58GiB)"; with --gpu l40s it is the
    // spec's memory.runtime_total_bytes, 47,695,527,936 B (configs/gpus/l40s.json), and a
    // --gpu-memory-utilization replaces the log's 0.90 as a value the user gave.
    const std::string log = data_file("logs/vllm-v0-llama-3.1-8b-rtx3090-20k.log");
    const CliRun own = run_kvplan("calibrate " + log + " --model llama-3-8b");
    REQUIRE(own.code == 0);
    CHECK(own.out.find("GPU memory (from the log)") != std::string::npos);
    CHECK(own.out.find("gpu_memory_utilization (from the log)") != std::string::npos);
    const CliRun spec = run_kvplan("calibrate " + log +
                                   " --model llama-3-8b --gpu l40s --gpu-memory-utilization 0.5");
    REQUIRE(spec.code == 0);
    CHECK(spec.out.find("GPU memory (the l40s spec's CUDA runtime total)") != std::string::npos);
    CHECK(spec.out.find("(given)") == std::string::npos);
    CHECK(spec.out.find("gpu_memory_utilization (given: --gpu-memory-utilization)") !=
          std::string::npos);
    const CliRun j = run_kvplan("calibrate " + log +
                                " --model llama-3-8b --gpu l40s --gpu-memory-utilization 0.5 "
                                "--format json");
    REQUIRE(j.code == 0);
    CHECK(json::parse(j.out)["memory_total"].get<std::uint64_t>() == 47'695'527'936ULL);
}

TEST_CASE("calibrate refuses the flags it does not model, exit 2 naming the flag",
          "[cli][calibrate]") {
    // The library's refusal (calibration_refusal), never a flag quietly left out: several
    // replicas' GPUs, a drafter, a context-limit override, a vLLM default overridden.
    const std::string log = "calibrate " + data_file("logs/vllm-v0-llama-3.1-8b-rtx3090-20k.log") +
                            " --model llama-3-8b ";
    for (const auto& [flags, expected] :
         {std::pair<std::string, std::string>{"--gpus 2", "--gpus: expected one replica"},
          {"--speculative-method ngram --num-speculative-tokens 3",
           "--speculative-method: expected no speculative decoding"},
          {"--num-speculative-tokens 3", "--num-speculative-tokens: expected no speculative"},
          {"--draft-model llama-3-8b", "--draft-model: expected no speculative decoding"},
          {"--allow-long-context", "--allow-long-context: expected no context-limit override"},
          {"--chunked-local-hybrid 1", "--chunked-local-hybrid: expected no vLLM default"},
          {"--without-flashinfer 0", "--without-flashinfer: expected no vLLM default"}}) {
        const CliRun r = run_kvplan(log + flags);
        CHECK(r.code == 2);
        CHECK(r.err.find(expected) != std::string::npos);
    }
    // What the log's modelled figures take: LoRA slots move the modelled KV memory by 4 slots x
    // 32 layers x 2,621,440 B (a rank-16 slot's A and B stacks on one Llama-3-8B layer, bf16:
    // 16 x (38,912 + 43,008) x 2 B) = 335,544,320 B.
    const CliRun plain = run_kvplan(log + "--format json");
    const CliRun lora = run_kvplan(log + "--max-loras 4 --max-lora-rank 16 --format json");
    REQUIRE(plain.code == 0);
    REQUIRE(lora.code == 0);
    CHECK(json::parse(plain.out)["modelled_kv"].get<std::uint64_t>() -
              json::parse(lora.out)["modelled_kv"].get<std::uint64_t>() ==
          335'544'320ULL);
    // Beside a benchmark alone, what only a log's cache reads.
    const CliRun bench =
        run_kvplan("calibrate --bench " +
                   data_file("vllm_bench_serve/nim-llama-3.3-70b-fp8-2xh100-5000-500-c1.json") +
                   " --model llama-3-70b --gpu h100-sxm --tp 2 --max-loras 4");
    CHECK(bench.code == 2);
    CHECK(bench.err.find("--max-loras: expected a start-up log as well") != std::string::npos);
}

TEST_CASE("calibrate --bench fits the estimate's fractions on a benchmark, and fit uses them",
          "[cli][calibrate]") {
    // The NIM row Llama-3.3-70B fp8 on 2 x H100 SXM, 5,000 in / 500 out at concurrency 25 (TPOT
    // 38.75 ms, TTFT 688.69 ms), in vllm bench serve's keys.
    const std::string bench = "vllm_bench_serve/nim-llama-3.3-70b-fp8-2xh100-5000-500-c25.json";
    const std::string replica =
        " --model llama-3-70b --gpu h100-sxm --tp 2 --weight-dtype fp8 --kv-dtype fp8";
    const std::string profile = written_file("llama-3-70b-nim-c25.profile.json");
    const CliRun r = run_kvplan("calibrate --bench " + data_file(bench) + replica +
                                " --format json --write-profile '" + profile + "'");
    REQUIRE(r.code == 0);
    const json j = json::parse(r.out);
    CHECK(j["measured_tpot"].get<double>() == Approx(0.03875));
    CHECK(j["measured_ttft"].get<double>() == Approx(0.68869));
    CHECK(j["compute_dtype"] == "fp8");
    // The bound: fp8 weights (about 70.6 GB, 35.3 GB per GPU) and 25 sequences of 5,000 tokens at
    // 2 x 80 x 8 x 128 x 1 B = 163,840 B per token (10.24 GB per GPU), over 3.35 TB/s: 13.6 ms.
    CHECK(j["tpot_bound"].get<double>() == Approx(0.0136).epsilon(0.01));

    // One answer: the library's calibration of the same observation from Hopper's defaults.
    const kvplan::Replica rep = nim_replica();
    kvplan::RooflineOptions ro;
    ro.compute = kvplan::ComputeDtype::fp8;
    const kvplan::LatencyObservation obs = kvplan::observation_of(
        kvplan::read_vllm_bench_result(std::string(KVPLAN_TEST_DATA_DIR) + "/" + bench), rep, ro);
    const kvplan::EstimateParams start = kvplan::default_params(kvplan::GpuFamily::hopper).params;
    const kvplan::FitResult f = kvplan::calibrate_fractions(obs, start);
    CHECK(j["bandwidth_fraction"].get<double>() == Approx(f.params.bandwidth));
    CHECK(j["compute_fraction"].get<double>() == Approx(f.params.compute));
    CHECK(j["layer_overhead"].get<double>() == Approx(start.layer_overhead.in(kvplan::seconds)));
    // The fit never does worse than where it started, over the figures it fitted.
    const auto sq = [&](const char* est, const char* measured) {
        const double e = std::log(j[est].get<double>() / j[measured].get<double>());
        return e * e;
    };
    const double before = std::sqrt((sq("tpot_estimate_before", "measured_tpot") +
                                     sq("ttft_estimate_before", "measured_ttft")) /
                                    2);
    CHECK(j["rms_log_error"].get<double>() <= before);

    // The profile holds the estimate alone (no log, no reserve); fit at the benchmark's load with
    // it gives the calibrated estimate.
    const json p = json::parse(slurp(profile));
    CHECK(p["estimate_compute_dtype"] == "fp8");
    CHECK_FALSE(p.contains("reserve_bytes"));
    const CliRun fit = run_kvplan("fit" + replica +
                                  " --concurrency 25 --prompt-tokens 5000 --output-tokens 500 "
                                  "--format json --profile '" +
                                  profile + "'");
    REQUIRE(fit.code == 0);
    const json fj = json::parse(fit.out);
    CHECK(fj["estimate_basis"] == "given");
    CHECK(fj["tpot_estimate_seconds"].get<double>() ==
          Approx(j["tpot_estimate"].get<double>()).epsilon(1e-9));
    CHECK(fj["ttft_estimate_seconds"].get<double>() ==
          Approx(j["ttft_estimate"].get<double>()).epsilon(1e-9));

    // fleet and plan time the matmuls of fp8 weights in fp8 too, so they take the profile.
    const CliRun fleet = run_kvplan("fleet" + replica +
                                    " --rate 5 --prompt-tokens 5000 --output-tokens 500 "
                                    "--tpot-ms 60 --profile '" +
                                    profile + "'");
    CHECK(fleet.code == 0);
    CHECK(fleet.out.find("calibrated, from the profile") != std::string::npos);
    const CliRun plan = run_kvplan(
        "plan --model llama-3-70b --gpu h100-sxm --weight-dtype fp8 --kv-dtype fp8 --max-gpus 2 "
        "--concurrency 25 --prompt-tokens 5000 --output-tokens 500 --profile '" +
        profile + "'");
    CHECK(plan.code == 0);

    // Nothing to calibrate on, or no GPU for the fractions: usage errors; an open-loop run: the
    // file's field.
    CHECK(run_kvplan("calibrate --model llama-3-70b").code == 2);
    const CliRun no_gpu =
        run_kvplan("calibrate --bench " + data_file(bench) + " --model llama-3-70b --tp 2");
    CHECK(no_gpu.code == 2);
    CHECK(no_gpu.err.find("--gpu") != std::string::npos);
    // A flag that only shapes a start-up log's cache is refused beside --bench alone, not ignored.
    const CliRun unused =
        run_kvplan("calibrate --bench " + data_file(bench) + replica + " --max-num-seqs 64");
    CHECK(unused.code == 2);
    CHECK(unused.err.find("--max-num-seqs") != std::string::npos);
    const CliRun open =
        run_kvplan("calibrate --bench " + data_file("vllm_bench_serve/open-loop-rate-4.json") +
                   " --model gemma-3-27b --gpu h100-sxm");
    CHECK(open.code == 3);
    CHECK(open.err.find("max_concurrency") != std::string::npos);
}

TEST_CASE("calibrate with several benchmarks fits the fixed costs too", "[cli][calibrate]") {
    // The NIM rows at concurrency 1, 25 and 100 (5,000 in / 500 out, fp8 on 2 x H100 SXM).
    const std::string stem = "vllm_bench_serve/nim-llama-3.3-70b-fp8-2xh100-5000-500-c";
    std::string args = "calibrate";
    for (const char* c : {"1", "25", "100"}) args += " --bench " + data_file(stem + c + ".json");
    const std::string profile = written_file("llama-3-70b-nim-3-loads.profile.json");
    const CliRun r = run_kvplan(args +
                                " --model llama-3-70b --gpu h100-sxm --tp 2 --weight-dtype fp8 "
                                "--kv-dtype fp8 --format json --write-profile '" +
                                profile + "'");
    REQUIRE(r.code == 0);
    const json j = json::parse(r.out);
    REQUIRE(j["benchmarks"].size() == 3);
    CHECK(j["benchmarks"][1]["measured_tpot"].get<double>() == Approx(0.03875));

    // One answer: fit_params over the same three observations from Hopper's defaults.
    const kvplan::Replica rep = nim_replica();
    kvplan::RooflineOptions ro;
    ro.compute = kvplan::ComputeDtype::fp8;
    std::vector<kvplan::LatencyObservation> obs;
    for (const char* c : {"1", "25", "100"})
        obs.push_back(kvplan::observation_of(
            kvplan::read_vllm_bench_result(std::string(KVPLAN_TEST_DATA_DIR) + "/" + stem + c +
                                           ".json"),
            rep, ro));
    const kvplan::EstimateParams start = kvplan::default_params(kvplan::GpuFamily::hopper).params;
    const kvplan::FitResult f = kvplan::fit_params(obs, start);
    CHECK(j["bandwidth_fraction"].get<double>() == Approx(f.params.bandwidth));
    CHECK(j["compute_fraction"].get<double>() == Approx(f.params.compute));
    CHECK(j["layer_overhead"].get<double>() == Approx(f.params.layer_overhead.in(kvplan::seconds)));
    CHECK(j["all_reduce_latency"].get<double>() ==
          Approx(f.params.all_reduce_latency.in(kvplan::seconds)));
    // Fitted on these loads, the estimate is no further from them than the defaults.
    CHECK(j["median_tpot_error"].get<double>() <= j["median_tpot_error_before"].get<double>());
    const json p = json::parse(slurp(profile));
    CHECK(p["estimate_layer_overhead_seconds"].get<double>() ==
          Approx(f.params.layer_overhead.in(kvplan::seconds)));
    CHECK(p["estimate_source"].get<std::string>().find("c100.json") != std::string::npos);
}

TEST_CASE("roofline and fit write SVG charts when asked to plot", "[cli][plot]") {
    const std::string roof = written_file("roofline-plot.svg");
    const std::string args = "roofline --model llama-3-8b --gpu h100-sxm --context 4096 --batch 64";
    const CliRun r = run_kvplan(args + " --plot '" + roof + "'");
    REQUIRE(r.code == 0);
    const std::string svg = slurp(roof);
    CHECK(svg.find("<svg") != std::string::npos);
    CHECK(svg.find("<svg class=\"panel\"") != std::string::npos);
    CHECK(svg.find("tokens/s (bound)") != std::string::npos);
    CHECK(svg.find("TPOT bound (ms)") != std::string::npos);
    CHECK(svg.find("unfused: N x N scores written and read") != std::string::npos);
    CHECK(svg.find("batch 64: ") != std::string::npos);
    // The wall drawn is the one roofline reports: evaluate()'s max concurrency, not a figure of
    // its own.
    const CliRun j = run_kvplan(args + " --format json");
    REQUIRE(j.code == 0);
    const auto wall = json::parse(j.out)["kv_wall_sequences"].get<std::uint64_t>();
    CHECK(svg.find("KV wall: " + std::to_string(wall) + " sequences") != std::string::npos);
    const std::string fitp = written_file("fit-plot.svg");
    const CliRun f = run_kvplan(
        "fit --model llama-3-70b --gpu h100-sxm --tp 4 --context 32k "
        "--concurrency 40 --plot '" +
        fitp + "'");
    REQUIRE(f.code == 0);
    const std::string fsvg = slurp(fitp);
    CHECK(fsvg.find("context per sequence (tokens)") != std::string::npos);
    CHECK(fsvg.find("target: 40 x 32,000 tokens") != std::string::npos);
}

TEST_CASE("compare draws each GPU and KV dtype as a series with its KV wall", "[cli][plot]") {
    const std::string path = written_file("compare-plot.svg");
    const std::string args =
        "compare --model llama-3-70b --gpu h100-sxm,h200-sxm --kv-dtype bf16,fp8 --tp 4 "
        "--context 8192";
    const CliRun r = run_kvplan(args + " --plot '" + path + "'");
    REQUIRE(r.code == 0);
    const std::string svg = slurp(path);
    // Each row's wall is compare's own max_concurrency column.
    const CliRun j = run_kvplan(args + " --format json");
    REQUIRE(j.code == 0);
    const json rows = json::parse(j.out)["rows"];
    REQUIRE(rows.size() == 4);
    for (const json& row : rows) {
        const std::string series =
            row["gpu"].get<std::string>() + ", KV " + row["kv_dtype"].get<std::string>() +
            " (wall " + std::to_string(row["max_concurrency"].get<std::uint64_t>()) + ")";
        CHECK(svg.find(">" + series + "</text>") != std::string::npos);
    }
    // Without a GPU there is nothing to draw: a usage error, before anything is printed.
    const CliRun bad = run_kvplan("compare --model llama-3-70b --kv-dtype bf16,fp8 --plot '" +
                                  written_file("none.svg") + "'");
    CHECK(bad.code == 2);
    CHECK(bad.out.empty());
}

TEST_CASE("fleet and trace say whether the GPUs deployed suffice", "[cli][fleet][trace]") {
    // Llama-3.1-70B at tp 4 on H100 SXM, 20 requests/s of 2,000 + 500 tokens (tests/plan/
    // test_plan_fleet.cpp): batch 86, a stay of 25.230 s, 6 replicas. --gpus 16 is 4 replicas,
    // which serve 4 x 86 / 25.230 = 13.635 requests/s: short of 20.
    const std::string fleet =
        "fleet --model llama-3.1-70b --gpu h100-sxm --tp 4 --rate 20 --tpot-ms 50 --ttft-ms 1000 "
        "--prompt-tokens 2000 --output-tokens 500 --format json";
    const CliRun f = run_kvplan(fleet + " --gpus 16");
    INFO(f.err);
    REQUIRE(f.code == 0);
    const json jf = json::parse(f.out);
    CHECK(jf["replicas"] == 6);
    CHECK(jf["gpus_given"] == 16);
    CHECK(jf["replicas_given"] == 4);
    CHECK(jf["given_serves_rate"] == false);
    CHECK(jf["rate_given_serves"].get<double>() == Approx(13.635).epsilon(1e-4));
    CHECK(json::parse(run_kvplan(fleet + " --gpus 24").out)["given_serves_rate"] == true);
    // Not whole replicas of tp x pp: a usage error naming the flag.
    CHECK(run_kvplan(fleet + " --gpus 6").code == 2);

    // The Azure trace's replay peaks at 10,019,143,680 B a GPU on Llama-3-70B at tp 4; with
    // 4 GiB of KV a GPU that is ceil(10,019,143,680 / 4,294,967,296) = 3 replicas, arrivals
    // split evenly: 8 GPUs (2 replicas) do not hold it, 12 do.
    const std::string trace = "trace " + data_file("traces/azure-conv-2023-first1000.csv") +
                              " --model llama-3-70b --tp 4 --kv-memory 4GiB --format json";
    for (const auto& [gpus, replicas, holds] : {std::tuple{8, 2, false}, std::tuple{12, 3, true}}) {
        const CliRun t = run_kvplan(trace + " --gpus " + std::to_string(gpus));
        INFO(t.err);
        REQUIRE(t.code == 0);
        const json jt = json::parse(t.out);
        CHECK(jt["replay_peak_kv_per_gpu"] == 10'019'143'680ULL);
        CHECK(jt["replicas_for_peak"] == 3);
        CHECK(jt["replicas_given"] == replicas);
        CHECK(jt["given_holds_peak"] == holds);
    }
    // GPUs deployed with nothing to size them on.
    const CliRun none = run_kvplan("trace " + data_file("traces/azure-conv-2023-first1000.csv") +
                                   " --model llama-3-70b --tp 4 --gpus 4");
    CHECK(none.code == 2);
    CHECK_THAT(none.err, Catch::StartsWith("kvplan: error: --gpus: expected --gpu or --kv-memory"));
}

TEST_CASE("diff counts a drafter in each revision's replica, as fit does", "[cli][diff]") {
    // Llama-3-8B's KV a token: 32 layers x 2 (K and V) x 8 KV heads x 128 x 2 B = 131,072 B; an
    // EAGLE head is one more layer of the model's shape, 4,096 B (plan/speculation.hpp): 135,168
    // B. A draft model of Llama-3-8B itself doubles it: 262,144 B.
    const std::string diff =
        "diff llama-3-8b llama-3-8b --gpu h100-sxm --context 8k --concurrency 8 --format json ";
    const std::string eagle = "--speculative-method eagle --num-speculative-tokens 3";
    const CliRun d = run_kvplan(diff + eagle);
    INFO(d.err);
    REQUIRE(d.code == 0);
    std::map<std::string, json> rows;
    const json jd = json::parse(d.out);
    for (const json& r : jd["effects"]) rows[r["figure"].get<std::string>()] = r;
    CHECK(rows["kv_bytes_per_token"]["new"] == 135'168);
    const CliRun fit = run_kvplan(
        "fit --model llama-3-8b --gpu h100-sxm --context 8k --concurrency 8 --format json " +
        eagle);
    REQUIRE(fit.code == 0);
    const json jfit = json::parse(fit.out);
    CHECK(rows["max_concurrency"]["new"] == jfit["max_concurrency"]);
    CHECK(rows["kv_budget_bytes_per_gpu"]["new"] == jfit["kv_budget_bytes_per_gpu"]);
    const CliRun drafted =
        run_kvplan(diff +
                   "--speculative-method draft_model --num-speculative-tokens 3 --draft-model "
                   "llama-3-8b");
    INFO(drafted.err);
    REQUIRE(drafted.code == 0);
    const json jdrafted = json::parse(drafted.out);
    for (const json& r : jdrafted["effects"])
        if (r["figure"] == "kv_bytes_per_token") CHECK(r["old"] == 262'144);
    // Without a GPU no budget is sized: refused by the flag.
    CHECK(run_kvplan("diff llama-3-8b llama-3-8b " + eagle).code == 2);
}
