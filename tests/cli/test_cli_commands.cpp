// Every subcommand through the built binary: exit codes, and every format parsed back.

#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "cli_runner.hpp"

using nlohmann::json;

TEST_CASE("size prints the Llama-3-70B cache in every format", "[cli][size]") {
    const std::string args = "size --model llama-3-70b --tp 4 --context 8k --concurrency 64";
    // 2 (K, V) x 80 layers x 8 KV heads x 128 dims x 2 B = 327,680 B per token; tp 4 leaves
    // 2 heads per rank: 81,920 B. 8k = 8,000 tokens: 327,680 x 8,000 = 2,621,440,000 B per
    // sequence; x 64 sequences = 167,772,160,000 B; per GPU a quarter, 41,943,040,000 B.
    SECTION("json") {
        const CliRun r = run_kvplan(args + " --format json");
        REQUIRE(r.code == 0);
        const json j = json::parse(r.out);
        CHECK(j["command"] == "size");
        CHECK(j["kv_bytes_per_token"].get<std::uint64_t>() == 327'680);
        CHECK(j["kv_bytes_per_token_per_gpu"].get<std::uint64_t>() == 81'920);
        CHECK(j["kv_bytes_per_sequence"].get<std::uint64_t>() == 2'621'440'000ULL);
        CHECK(j["kv_bytes_total"].get<std::uint64_t>() == 167'772'160'000ULL);
        CHECK(j["kv_bytes_total_per_gpu"].get<std::uint64_t>() == 41'943'040'000ULL);
        CHECK(j["inputs"]["context_tokens"].get<std::uint64_t>() == 8'000);
        // 70,553,706,496 parameters (tests/data/official_params.json) x 2 B in bf16.
        CHECK(j["weight_bytes"].get<std::uint64_t>() == 141'107'412'992ULL);
        CHECK(j["weight_bytes_per_gpu"].get<std::uint64_t>() > 141'107'412'992ULL / 4);
    }
    SECTION("csv") {
        const CliRun r = run_kvplan(args + " --format csv");
        REQUIRE(r.code == 0);
        const auto rows = parse_csv(r.out);
        REQUIRE(rows.size() == 2);
        CHECK(rows[1][csv_column(rows, "kv_bytes_per_token")] == "327680");
        CHECK(rows[1][csv_column(rows, "kv_bytes_total")] == "167772160000");
    }
    SECTION("text names every unit") {
        const CliRun r = run_kvplan(args);
        REQUIRE(r.code == 0);
        // 327,680 B = 320 KiB; 167,772,160,000 B / 2^30 = 156.25 GiB.
        CHECK_THAT(r.out, Catch::Contains("320.00 KiB") && Catch::Contains("(327,680 B)") &&
                              Catch::Contains("156.25 GiB"));
    }
    SECTION("md") {
        const CliRun r = run_kvplan(args + " --format md");
        REQUIRE(r.code == 0);
        CHECK_THAT(r.out,
                   Catch::Contains("| KV per token, whole model | 320.00 KiB | 327,680 B |"));
    }
    SECTION("explain shows the formula and the source of each value") {
        const CliRun r = run_kvplan(args + " --explain");
        REQUIRE(r.code == 0);
        CHECK_THAT(r.out, Catch::Contains("80 full_attention layers") &&
                              Catch::Contains("2 KV heads per rank (of 8 at tp 4)") &&
                              Catch::Contains("(--kv-dtype)"));
    }
}

TEST_CASE("size shows the fixed state of Mamba layers beside the KV of attention layers",
          "[cli][size]") {
    // Granite-4.0-H-Small (configs/models/granite-4.0-h-small.json): 36 Mamba-2 layers, each with
    // a conv state of (4 - 1) x (8,192 + 2 x 1 x 128) = 25,344 values and an SSM state of
    // 128 x 64 x 128 = 1,048,576 values, x 2 B = 2,147,840 B per sequence; at tp 2, 1,073,920 B.
    // Its 4 attention layers: 2 x 8 KV heads x 128 x 2 B = 4,096 B per token per layer.
    const CliRun r =
        run_kvplan("size --model granite-4.0-h-small --tp 2 --context 1000 --format json");
    REQUIRE(r.code == 0);
    const json j = json::parse(r.out);
    bool saw_state = false, saw_attention = false;
    for (const json& row : j["layers"]) {
        if (row["kind"] == "constant_state") {
            saw_state = true;
            CHECK(row["layers"].get<std::uint64_t>() == 36);
            CHECK(row["bytes_per_token_per_layer"].get<std::uint64_t>() == 0);
            CHECK(row["state_bytes_per_sequence_per_layer"].get<std::uint64_t>() == 2'147'840);
            CHECK(row["state_bytes_per_sequence_per_layer_per_gpu"].get<std::uint64_t>() ==
                  1'073'920);
        } else {
            saw_attention = true;
            CHECK(row["layers"].get<std::uint64_t>() == 4);
            CHECK(row["bytes_per_token_per_layer"].get<std::uint64_t>() == 4'096);
            CHECK(row["state_bytes_per_sequence_per_layer"].get<std::uint64_t>() == 0);
        }
    }
    CHECK((saw_state && saw_attention));
    // Per sequence, whole model: 4 x 4,096 x 1,000 + 36 x 2,147,840 = 16,384,000 + 77,322,240.
    CHECK(j["kv_bytes_per_sequence"].get<std::uint64_t>() == 93'706'240);
    // --mamba-ssm-cache-dtype float32 (vLLM's flag) widens the SSM part only: 25,344 conv values
    // x 2 B + 1,048,576 SSM values x 4 B = 4,244,992 B per layer.
    const json wide = json::parse(
        run_kvplan("size --model granite-4.0-h-small --mamba-ssm-cache-dtype float32 --format json")
            .out);
    for (const json& row : wide["layers"])
        if (row["kind"] == "constant_state")
            CHECK(row["state_bytes_per_sequence_per_layer"].get<std::uint64_t>() == 4'244'992);
    const CliRun bad = run_kvplan("size --model granite-4.0-h-small --mamba-cache-dtype fp64");
    CHECK(bad.code == 2);
    CHECK_THAT(bad.err, Catch::Contains("--mamba-cache-dtype") && Catch::Contains("fp64"));
    // A model without such layers keeps its table as it was.
    const json plain = json::parse(run_kvplan("size --model llama-3-8b --format json").out);
    CHECK_FALSE(plain["layers"][0].contains("state_bytes_per_sequence_per_layer"));
}

TEST_CASE("size --explain shows each term with the bytes the figure sums", "[cli][size]") {
    // DeepSeek-V3.2 (configs/models/deepseek-v3.2.json): 61 MLA layers, each caching a latent of
    // kv_lora_rank 512 + qk_rope_head_dim 64 values, in bf16 (512 + 64) x 2 = 1,152 B, and the
    // sparse indexer's key, fp8 whatever the KV dtype: index_head_dim 128 + one fp32 scale per 128
    // = 132 B (vLLM's DeepseekV32IndexerCache, vllm/model_executor/models/deepseek_v2.py). A layer
    // 1,284 B, the model 61 x 1,284 = 78,324 B per token: the explanation names both parts.
    const CliRun r = run_kvplan("size --model deepseek-v3.2 --context 8192 --explain");
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out,
               Catch::Contains("76.49 KiB  (78,324 B)") &&
                   Catch::Contains("kv_lora_rank 512 + qk_rope_head_dim 64 values -> 1,152 B "
                                   "+ the sparse indexer's key of index_head_dim 128 fp8 "
                                   "values with a 32-bit scale per 128 -> 132 B") &&
                   Catch::Contains("61 x 1,284 B = 78,324 B"));
    // fp8_ds_mla keeps the latent in 512 fp8 values + 4 fp32 scales + 64 bf16 RoPE values = 512 +
    // 16 + 128 = 656 B (vLLM's FlashMLA sparse layout); with the key 788 B, 61 x 788 = 48,068 B.
    const CliRun d = run_kvplan("size --model deepseek-v3.2 --kv-dtype fp8_ds_mla --explain");
    REQUIRE(d.code == 0);
    CHECK_THAT(d.out,
               Catch::Contains("(the RoPE part in bf16) -> 656 B + the sparse indexer's key") &&
                   Catch::Contains("61 x 788 B = 48,068 B"));
    // With pp 3 the per-GPU figure of a sequence is the busiest stage's, and the rank named is it:
    // Gemma-3-27B's 62 layers split 21 / 21 / 20, every sixth layer full attention (5, 11, ...,
    // 59): stage 1 (layers 21..41) holds four of them (23, 29, 35, 41), the others three, so at
    // 100,000 tokens (the sliding layers keep 1,024) stage 1 holds the most.
    const CliRun g = run_kvplan("size --model gemma-3-27b --pp 3 --context 100k --explain");
    REQUIRE(g.code == 0);
    CHECK_THAT(g.out, Catch::Contains("layers 21..41 of stage 1 of pp 3"));
}

TEST_CASE("binary token suffixes reach the sizing", "[cli][size]") {
    // 8K = 8,192 tokens: 327,680 x 8,192 = 2,684,354,560 B = 2.5 GiB.
    const CliRun r = run_kvplan("size --model llama-3-70b --context 8K --format json");
    REQUIRE(r.code == 0);
    CHECK(json::parse(r.out)["kv_bytes_per_sequence"].get<std::uint64_t>() == 2'684'354'560ULL);
}

TEST_CASE("usage errors exit 2 with one line naming the flag", "[cli][exit]") {
    for (const char* args :
         {"size --model llama-3-70b --context -5", "size --model llama-3-70b --context 0",
          "size --model llama-3-70b --kv-dtype fp7", "size --model llama-3-70b --format yaml",
          "size --model llama-3-70b --tp 0", "size --model llama-3-70b --gpus 6 --tp 4",
          "size --context 8k", "size --model llama-3-70b --no-such-flag", "frobnicate", ""}) {
        INFO(args);
        const CliRun r = run_kvplan(args);
        CHECK(r.code == 2);
        CHECK(r.out.empty());
        CHECK(!r.err.empty());
    }
    const CliRun r = run_kvplan("size --model llama-3-70b --context -5");
    CHECK(r.err ==
          "kvplan: error: --context: expected a token count >= 1 (8192, 8k = 8,000, "
          "25.6k = 25,600, 8K = 8,192), found '-5'\n");
}

TEST_CASE("an impossible layout or an unknown model exits 3 with one line", "[cli][exit]") {
    SECTION("tp 3 does not divide Llama-3-70B's 64 query heads") {
        const CliRun r = run_kvplan("size --model llama-3-70b --tp 3");
        CHECK(r.code == 3);
        CHECK_THAT(r.err, Catch::Contains("tp: expected a divisor of the 64 query heads, found 3"));
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    }
    SECTION("an unknown id") {
        const CliRun r = run_kvplan("size --model no-such-model");
        CHECK(r.code == 3);
        CHECK_THAT(r.err, Catch::Contains("no-such-model"));
    }
}

TEST_CASE("help and version exit 0", "[cli][exit]") {
    CHECK(run_kvplan("--help").code == 0);
    CHECK(run_kvplan("size --help").code == 0);
    const CliRun v = run_kvplan("--version");
    CHECK(v.code == 0);
    CHECK_THAT(v.out, Catch::Contains("0.1"));
}

TEST_CASE("each command's help lists its flags once, each family under its heading",
          "[cli][help]") {
    // The families of shared flags live in option groups of their own (CLI11 checks a new flag
    // against its group only), so nothing but this test sees a name given twice in one command.
    for (const char* command : {"size", "fit", "plan", "compare", "diff", "check", "roofline",
                                "list", "trace", "fleet", "calibrate", "disagg"}) {
        INFO(command);
        const CliRun r = run_kvplan(std::string(command) + " --help");
        REQUIRE(r.code == 0);
        CHECK_THAT(r.out, !Catch::Contains("Option Group"));
        std::vector<std::string> names;
        std::istringstream lines(r.out);
        for (std::string line; std::getline(lines, line);) {
            // A flag's line: two spaces, then its names, comma-separated, up to a space.
            if (!line.starts_with("  -")) continue;
            std::istringstream words(line.substr(2, line.find(' ', 2) - 2));
            for (std::string name; std::getline(words, name, ',');) names.push_back(name);
        }
        REQUIRE(!names.empty());
        std::sort(names.begin(), names.end());
        const auto twice = std::adjacent_find(names.begin(), names.end());
        if (twice != names.end()) FAIL_CHECK("given twice: " << *twice);
    }
    // fit's families, each under its heading, after fit's own flags.
    const std::string fit = run_kvplan("fit --help").out;
    const std::vector<std::string> order = {"Options:\n",
                                            "  --plot",
                                            "Model:\n",
                                            "  -m,--model",
                                            "Model by its sizes (instead of --model):\n",
                                            "  --layers",
                                            "Replica:\n",
                                            "  -g,--gpu",
                                            "Formats:\n",
                                            "  --kv-dtype",
                                            "Load:\n",
                                            "  -c,--context",
                                            "Engine:\n",
                                            "  -e,--engine",
                                            "Output:\n",
                                            "  -f,--format"};
    std::size_t at = 0;
    for (const std::string& piece : order) {
        INFO(piece);
        const std::size_t found = fit.find(piece, at);
        REQUIRE(found != std::string::npos);
        at = found + piece.size();
    }
}

TEST_CASE("list models names every bundled model, in json and csv", "[cli][list]") {
    const CliRun r = run_kvplan("list models --format json");
    REQUIRE(r.code == 0);
    const json j = json::parse(r.out);
    bool found = false;
    for (const json& m : j["models"])
        if (m["id"] == "llama-3-70b") {
            found = true;
            CHECK(m["kv_bytes_per_token_bf16"].get<std::uint64_t>() == 327'680);
        }
    CHECK(found);
    const CliRun c = run_kvplan("list models --format csv");
    REQUIRE(c.code == 0);
    const auto rows = parse_csv(c.out);
    CHECK(rows.size() == j["models"].size() + 1);
    CHECK_NOTHROW(csv_column(rows, "id"));
}

TEST_CASE("fit with a given KV budget answers in whole sequences and tokens", "[cli][fit]") {
    // --kv-memory 40GiB = 42,949,672,960 B per GPU. Llama-3-70B at tp 4 holds 2 of 8 KV heads:
    // 81,920 B per token per GPU, so 42,949,672,960 / 81,920 = 524,288 tokens. A sequence of
    // 8k = 8,000 tokens takes 655,360,000 B: 42,949,672,960 / 655,360,000 = 65.5 -> 65 sequences.
    // At 64 sequences each gets 671,088,640 B = 8,192 tokens.
    const std::string args =
        "fit --model llama-3-70b --gpu h100-sxm --tp 4 --context 8k --engine ideal "
        "--kv-memory 40GiB --format json";
    const CliRun r = run_kvplan(args + " --concurrency 64");
    REQUIRE(r.code == 0);
    const json j = json::parse(r.out);
    CHECK(j["fits"] == true);
    CHECK(j["kv_budget_bytes_per_gpu"].get<std::uint64_t>() == 42'949'672'960ULL);
    CHECK(j["kv_tokens_capacity"].get<std::uint64_t>() == 524'288);
    CHECK(j["max_concurrency"].get<std::uint64_t>() == 65);
    CHECK(j["max_context"].get<std::uint64_t>() == 8'192);
    // 66 sequences do not fit: still an answer (exit 0), not an error.
    const CliRun no = run_kvplan(args + " --concurrency 66");
    REQUIRE(no.code == 0);
    CHECK(json::parse(no.out)["fits"] == false);
}

TEST_CASE("fit prints the verdict first, then every budget term", "[cli][fit]") {
    const CliRun r = run_kvplan(
        "fit --model llama-3-70b --gpu h100 --gpus 4 --tp 4 --context 8k --concurrency 32");
    REQUIRE(r.code == 0);
    // 32 sequences need 32 x 655,360,000 B = 19.5 GiB per GPU, well inside what 80 GB less
    // 32.9 GiB of weights leaves.
    CHECK_THAT(r.out, Catch::StartsWith("FITS: 32 sequences of 8,000 tokens"));
    // vLLM's budget: ceil(85,029,027,840 B x 0.92) = 78,226,705,613 B (the H100's CUDA total,
    // 81,090 MiB) before weights and the rest.
    CHECK_THAT(r.out, Catch::Contains("(78,226,705,613 B)") && Catch::Contains("- weights") &&
                          Catch::Contains("- activation peak") &&
                          Catch::Contains("= KV budget per GPU"));
    const CliRun c = run_kvplan(
        "fit --model llama-3-70b --gpu h100 --tp 4 --context 8k --concurrency 64 --format csv");
    REQUIRE(c.code == 0);
    const auto rows = parse_csv(c.out);
    REQUIRE(rows.size() == 2);
    for (const char* col : {"fits", "kv_budget_bytes_per_gpu", "kv_tokens_capacity",
                            "max_concurrency", "max_context"})
        CHECK_NOTHROW(csv_column(rows, col));
    CHECK(rows[1][csv_column(rows, "gpu_memory_bytes")] == "85029027840");
}

TEST_CASE("roofline gives the decode bound and sweeps comma lists", "[cli][roofline]") {
    const std::string base = "roofline --model llama-3-70b --gpu h100-sxm --tp 4";
    SECTION("one point: the figures at top level") {
        const CliRun r = run_kvplan(base + " --batch 1 --context 1k --format json");
        REQUIRE(r.code == 0);
        const json j = json::parse(r.out);
        // At batch 1 the step reads the rank's weights and one sequence's KV at 3.35 TB/s; it is
        // bound by memory, and bytes / bandwidth must equal the step.
        CHECK(j["bound"] == "memory");
        const double bytes = j["bytes_per_step"].get<double>();
        CHECK(j["decode_step_seconds"].get<double>() == Approx(bytes / 3.35e12));
        CHECK(j["tokens_per_second"].get<double>() ==
              Approx(1.0 / j["decode_step_seconds"].get<double>()));
        REQUIRE(j["points"].size() == 1);
    }
    SECTION("a sweep: one point per batch x context") {
        const CliRun r = run_kvplan(base + " --batch 1,8,32,128 --context 1k,8k --format json");
        REQUIRE(r.code == 0);
        const json j = json::parse(r.out);
        REQUIRE(j["points"].size() == 8);
        for (const json& p : j["points"]) {
            CHECK(p["decode_step_seconds"].get<double>() > 0);
            CHECK((p["bound"] == "memory" || p["bound"] == "compute"));
            CHECK(p["bytes_per_step"].is_number_unsigned());
        }
        // More sequences read more KV: the step at batch 128 is longer than at batch 1.
        CHECK(j["points"][3]["decode_step_seconds"].get<double>() >
              j["points"][0]["decode_step_seconds"].get<double>());
        const CliRun c = run_kvplan(base + " --batch 1,8,32,128 --context 1k,8k --format csv");
        const auto rows = parse_csv(c.out);
        REQUIRE(rows.size() == 9);
        CHECK(rows[4][csv_column(rows, "batch")] == "128");
        CHECK(rows[4][csv_column(rows, "context_tokens")] == "1000");
    }
    SECTION("a bad list item is a usage error") {
        CHECK(run_kvplan(base + " --batch 1,,8").code == 2);
        CHECK(run_kvplan(base + " --context 1k,-8k").code == 2);
    }
}

TEST_CASE("list gpus shows the bundled specs with their units", "[cli][list]") {
    const CliRun r = run_kvplan("list gpus --format json");
    REQUIRE(r.code == 0);
    const json j = json::parse(r.out);
    bool found = false;
    for (const json& g : j["gpus"])
        if (g["id"] == "h100-sxm") {
            found = true;
            // The CUDA total 81,090 MiB x 1,048,576 = 85,029,027,840 B = 79.19 GiB, beside the
            // datasheet's 80GB read in SI units (configs/gpus/h100-sxm.json).
            CHECK(g["memory_bytes"].get<std::uint64_t>() == 85'029'027'840ULL);
            CHECK(g["memory_bytes_stated"].get<std::uint64_t>() == 80'000'000'000ULL);
        }
    CHECK(found);
    CHECK_THAT(run_kvplan("list gpus").out, Catch::Contains("79.19 GiB") &&
                                                Catch::Contains("80 GB") &&
                                                Catch::Contains("3.35 TB/s"));
}

TEST_CASE("unknown GPUs and unreadable spec files exit 3 naming the file", "[cli][exit]") {
    const CliRun a = run_kvplan("fit --model llama-3-70b --gpu h900 --context 8k");
    CHECK(a.code == 3);
    CHECK_THAT(a.err, Catch::Contains("h900"));
    const CliRun b = run_kvplan("fit --model llama-3-70b --gpu /no/such/gpu.json --context 8k");
    CHECK(b.code == 3);
    CHECK_THAT(b.err, Catch::Contains("/no/such/gpu.json"));
}

TEST_CASE("check passes the example policy and exits 0", "[cli][check]") {
    const std::string policy = std::string("'") + KVPLAN_SOURCE_DIR + "/examples/ci/policy.json'";
    const CliRun r = run_kvplan("check --policy " + policy);
    REQUIRE(r.code == 0);
    // 8 requirements on the H100 and the H200 fleets; the 3 regressions need a --baseline.
    CHECK_THAT(r.out, Catch::StartsWith("PASS: 10 of 16 checks met, 6 skipped (8 requirements on "
                                        "2 replicas)"));
    const CliRun j = run_kvplan("check --policy " + policy + " --format json");
    REQUIRE(j.code == 0);
    const json doc = json::parse(j.out);
    CHECK(doc["passed"] == true);
    REQUIRE(doc["requirements"].size() == 16);
    // Llama-3-70B: 327,680 B per token (2 x 80 layers x 8 heads x 128 x 2 B), at the 320 KiB bound,
    // on either fleet (requirement 2, replicas 0 and 1).
    for (int i : {4, 5}) {
        CHECK(doc["requirements"][i]["name"] == "KV cache cost per token");
        CHECK(doc["requirements"][i]["measured"].get<std::uint64_t>() == 327'680);
        CHECK(doc["requirements"][i]["threshold"].get<double>() == 327'680.0);
    }
}

TEST_CASE("a failed requirement exits 1 and reports in text, JSON, JUnit and annotations",
          "[cli][check]") {
    // policy_tight.json allows 256 KiB = 262,144 B per token; Llama-3-70B needs 327,680 B.
    // Its weights at tp 4 (32.9 GiB per GPU) are within the 40 GiB bound.
    const std::string args = "check --policy " + data_file("cli/policy_tight.json");
    const CliRun r = run_kvplan(args);
    CHECK(r.code == 1);
    CHECK_THAT(r.out, Catch::StartsWith("FAIL: 1 of 2 requirements not met"));
    const CliRun j = run_kvplan(args + " --format json");
    CHECK(j.code == 1);
    const json doc = json::parse(j.out);
    CHECK(doc["passed"] == false);
    CHECK(doc["failed_count"] == 1);
    CHECK(doc["requirements"][0]["result"] == false);
    CHECK(doc["requirements"][1]["result"] == true);
    const CliRun c = run_kvplan(args + " --format csv");
    const auto rows = parse_csv(c.out);
    REQUIRE(rows.size() == 3);
    CHECK(rows[1][csv_column(rows, "measured")] == "327680");

    const std::string junit =
        std::string(KVPLAN_TEST_BINARY_DIR) + "/check_junit_" + std::to_string(getpid()) + ".xml";
    CHECK(run_kvplan(args + " --junit '" + junit + "'").code == 1);
    std::ifstream in(junit);
    const std::string xml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK_THAT(xml,
               Catch::Contains("<testsuites name=\"kvplan check\" tests=\"2\" failures=\"1\">") &&
                   Catch::Contains("<failure message=\"required &lt;= 262,144 B per token"));

    const CliRun gha = run_kvplan(args, "GITHUB_ACTIONS=true");
    CHECK(gha.code == 1);
    CHECK_THAT(gha.out,
               Catch::StartsWith("::error file=") &&
                   Catch::Contains(",title=kvplan check%3A cache cost::cache cost: required") &&
                   Catch::Contains("::notice file="));
}

TEST_CASE("check --baseline shows the change against the previous config", "[cli][check]") {
    // The new revision doubles the KV heads (16 instead of 8): 2 x 80 x 16 x 128 x 2 B =
    // 655,360 B per token, +100 % over the 327,680 B of the baseline.
    const CliRun r =
        run_kvplan("check --policy " + data_file("cli/policy_tight.json") + " --model " +
                   data_file("cli/llama-3-70b-16kv") + " --baseline llama-3-70b --format json");
    CHECK(r.code == 1);
    const json doc = json::parse(r.out);
    CHECK(doc["requirements"][0]["measured"].get<std::uint64_t>() == 655'360);
    CHECK(doc["requirements"][0]["baseline"].get<std::uint64_t>() == 327'680);
    CHECK(doc["requirements"][0]["change_percent"].get<double>() == Approx(100.0));
}

TEST_CASE("bad policy and config files exit 3 with one line naming the file and the field",
          "[cli][check][exit]") {
    struct Case {
        const char* file;
        const char* field;
    };
    for (const Case& c :
         {Case{"policy_not_json.json", "valid JSON"}, Case{"policy_wrong_schema.json", "schema"},
          Case{"policy_unknown_kind.json", "requirements[1].kind"},
          Case{"policy_negative_sequences.json", "requirements[0].sequences"},
          Case{"policy_two_units.json", "requirements[0].GB"},
          Case{"policy_bad_engine.json", "replica.engine"}}) {
        INFO(c.file);
        const CliRun r = run_kvplan("check --policy " + data_file(std::string("cli/") + c.file));
        CHECK(r.code == 3);
        CHECK_THAT(r.err, Catch::Contains(c.file) && Catch::Contains(c.field));
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        CHECK(r.out.empty());
    }
    for (const Case& c : {Case{"config_not_json.json", "valid JSON"},
                          Case{"config_zero_heads.json", "num_attention_heads"}}) {
        INFO(c.file);
        const CliRun r =
            run_kvplan("size --context 8k --model " + data_file(std::string("cli/") + c.file));
        CHECK(r.code == 3);
        CHECK_THAT(r.err, Catch::Contains(c.file) && Catch::Contains(c.field));
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    }
    const CliRun g = run_kvplan("fit --model llama-3-70b --context 8k --gpu " +
                                data_file("cli/gpu_no_memory.json"));
    CHECK(g.code == 3);
    CHECK_THAT(g.err, Catch::Contains("gpu_no_memory.json"));
    CHECK(run_kvplan("check --policy " + data_file("cli/no_such_policy.json")).code == 3);
}

TEST_CASE("plan ranks the smallest replicas that hold the workload", "[cli][plan]") {
    const CliRun r = run_kvplan(
        "plan --model llama-3-70b --gpu h100-sxm,h200-sxm --context 8k --concurrency 32 "
        "--kv-dtype bf16,fp8 --format json");
    REQUIRE(r.code == 0);
    const json j = json::parse(r.out);
    CHECK(j["found"] == true);
    const json& c = j["candidates"];
    REQUIRE(c.size() >= 2);
    // Llama-3-70B's bf16 weights are 141,107,412,992 B, more than one H100 (85,520,809,984 B) or
    // one H200 (150,754,820,096 B less the cache) can hold beside 32 sequences, so 2 GPUs at least.
    CHECK(c[0]["gpus"].get<std::uint64_t>() >= 2);
    for (std::size_t i = 1; i < c.size(); ++i)
        CHECK(c[i]["gpus"].get<std::uint64_t>() >= c[i - 1]["gpus"].get<std::uint64_t>());
    for (const json& x : c) CHECK(x["max_concurrency"].get<std::uint64_t>() >= 32);
    const CliRun csv = run_kvplan(
        "plan --model llama-3-70b --gpu h100-sxm --context 8k --concurrency 32 --format csv");
    const auto rows = parse_csv(csv.out);
    REQUIRE(rows.size() >= 2);
    CHECK(rows[1][csv_column(rows, "rank")] == "1");
    // Nothing of up to 1 GPU holds it: an answer (exit 0), not an error.
    const CliRun none = run_kvplan(
        "plan --model llama-3-70b --gpu h100-sxm --context 8k --concurrency 32 --max-gpus 1");
    CHECK(none.code == 0);
    CHECK_THAT(none.out, Catch::StartsWith("NO REPLICA"));
}

TEST_CASE("compare puts every combination in one table", "[cli][compare]") {
    // fp8 halves the cache: 327,680 B -> 163,840 B per token for Llama-3-70B.
    const CliRun r = run_kvplan(
        "compare --model llama-3-70b,llama-3-8b --kv-dtype bf16,fp8 --context 8k --format json");
    REQUIRE(r.code == 0);
    const json j = json::parse(r.out);
    REQUIRE(j["rows"].size() == 4);
    CHECK(j["rows"][0]["kv_bytes_per_token"].get<std::uint64_t>() == 327'680);
    CHECK(j["rows"][1]["kv_bytes_per_token"].get<std::uint64_t>() == 163'840);
    // Llama-3-8B: 2 x 32 layers x 8 heads x 128 x 2 B = 131,072 B.
    CHECK(j["rows"][2]["kv_bytes_per_token"].get<std::uint64_t>() == 131'072);
    const CliRun g = run_kvplan(
        "compare --model llama-3-70b --gpu h100,h200 --tp 4 --context 8k --concurrency 16 "
        "--format csv");
    REQUIRE(g.code == 0);
    const auto rows = parse_csv(g.out);
    REQUIRE(rows.size() == 3);
    // The H200 (143,156 MiB) leaves more KV budget than the H100 (81,090 MiB).
    CHECK(std::stoull(rows[2][csv_column(rows, "max_concurrency")]) >
          std::stoull(rows[1][csv_column(rows, "max_concurrency")]));
}

TEST_CASE("diff shows the changed field and its effect", "[cli][diff]") {
    // The new revision has 16 KV heads instead of 8: KV per token 327,680 B -> 655,360 B.
    const CliRun r = run_kvplan("diff llama-3-70b " + data_file("cli/llama-3-70b-16kv") +
                                " --gpu h100 --tp 4 --context 8k --concurrency 32 --format json");
    REQUIRE(r.code == 0);
    const json j = json::parse(r.out);
    REQUIRE(j["config_changes"].size() == 1);
    CHECK(j["config_changes"][0]["field"] == "num_key_value_heads");
    CHECK(j["model_changes"][0]["field"] == "kv_heads");
    CHECK(j["effects"][0]["figure"] == "kv_bytes_per_token");
    CHECK(j["effects"][0]["old"].get<std::uint64_t>() == 327'680);
    CHECK(j["effects"][0]["new"].get<std::uint64_t>() == 655'360);
    CHECK(j["effects"][0]["change_percent"].get<double>() == Approx(100.0));
    const CliRun md =
        run_kvplan("diff llama-3-70b " + data_file("cli/llama-3-70b-16kv") + " --format md");
    CHECK_THAT(md.out, Catch::Contains("| num_key_value_heads | 8 | 16 |"));
    CHECK(run_kvplan("diff llama-3-70b").code == 2);
    CHECK(run_kvplan("diff llama-3-70b " + data_file("cli/config_not_json.json")).code == 3);
}

TEST_CASE("the README's quick start prints what the CLI prints", "[cli][docs]") {
    // The first ```sh block after "## Quick start" ends with the kvplan call; the ```text block
    // after it is its output, to the byte.
    std::ifstream in(std::string(KVPLAN_SOURCE_DIR) + "/README.md");
    const std::string readme{std::istreambuf_iterator<char>(in), {}};
    const std::size_t start = readme.find("## Quick start");
    REQUIRE(start != std::string::npos);
    const std::string call = "./build/tools/kvplan/kvplan ";
    const std::size_t at = readme.find(call, start);
    REQUIRE(at != std::string::npos);
    const std::size_t call_end = readme.find('\n', at);
    const std::string args = readme.substr(at + call.size(), call_end - at - call.size());
    const std::string open = "```text\n";
    const std::size_t text = readme.find(open, call_end);
    REQUIRE(text != std::string::npos);
    const std::size_t text_end = readme.find("```\n", text + open.size());
    REQUIRE(text_end != std::string::npos);
    const CliRun r = run_kvplan(args);
    REQUIRE(r.code == 0);
    CHECK(r.out == readme.substr(text + open.size(), text_end - text - open.size()));
}

namespace {

/// One `$ kvplan ...` example of a Markdown ```text block: the command (continuation lines
/// joined) and the lines shown under it.
struct DocExample {
    std::string command;
    std::vector<std::string> shown;
};

std::vector<DocExample> doc_examples(const std::string& text) {
    std::vector<DocExample> out;
    std::istringstream in(text);
    std::string line;
    bool block = false, kvplan = false;
    while (std::getline(in, line)) {
        if (line.rfind("```", 0) == 0) {
            block = !block && line == "```text";
            kvplan = false;
            continue;
        }
        if (!block) continue;
        if (line.rfind("$ ", 0) == 0) {
            std::string command = line.substr(2);
            while (!command.empty() && command.back() == '\\' && std::getline(in, line)) {
                command.pop_back();
                command += line;
            }
            out.push_back({command, {}});
            kvplan = true;
        } else if (kvplan) {
            out.back().shown.push_back(line);
        }
    }
    return out;
}

/// Whether `shown` is an excerpt of `printed`: each non-blank line found in order, where "..."
/// in a shown line stands for anything and the text before it starts the printed line.
bool is_excerpt(const std::vector<std::string>& shown, const std::vector<std::string>& printed) {
    std::size_t from = 0;
    for (const std::string& want : shown) {
        if (want.find_first_not_of(' ') == std::string::npos) continue;
        std::vector<std::string> parts;
        for (std::size_t at = 0;;) {
            const std::size_t dots = want.find("...", at);
            parts.push_back(want.substr(at, dots == std::string::npos ? dots : dots - at));
            if (dots == std::string::npos) break;
            at = dots + 3;
        }
        bool found = false;
        for (; from < printed.size() && !found; ++from) {
            const std::string& have = printed[from];
            std::size_t at = 0;
            bool ok = true;
            for (std::size_t i = 0; i < parts.size() && ok; ++i) {
                std::string part = parts[i];
                if (i != 0) {
                    part.erase(0, part.find_first_not_of(' ') == std::string::npos
                                      ? part.size()
                                      : part.find_first_not_of(' '));
                    while (!part.empty() && part.back() == ' ') part.pop_back();
                }
                if (part.empty()) continue;
                const std::size_t hit = have.find(part, at);
                ok = hit != std::string::npos && (i != 0 || hit == 0);
                if (ok) at = hit + part.size();
            }
            found = ok;
        }
        if (!found) return false;
    }
    return true;
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

}  // namespace

TEST_CASE("every kvplan example in the README and docs/ is what the CLI prints", "[cli][docs]") {
    // The shown lines of each example are found in order in what the command prints (stdout,
    // then stderr), run from the repository root; "$ echo $?" shows the exit code before it.
    // Every page under docs/ is read, so a page that gains an example is checked with the rest.
    namespace fs = std::filesystem;
    std::vector<std::string> docs{"README.md"};
    for (const fs::directory_entry& e :
         fs::directory_iterator(fs::path(KVPLAN_SOURCE_DIR) / "docs"))
        if (e.path().extension() == ".md") docs.push_back("docs/" + e.path().filename().string());
    REQUIRE(docs.size() >= 7);  // the README, cli.md, library.md, python.md and the rest
    for (const std::string& doc : docs) {
        std::ifstream in(std::string(KVPLAN_SOURCE_DIR) + "/" + doc);
        REQUIRE(in);
        const std::string text{std::istreambuf_iterator<char>(in), {}};
        const std::vector<DocExample> examples = doc_examples(text);
        // The README has one example per use, the reference one or more per subcommand.
        if (doc == "README.md") CHECK(examples.size() >= 3u);
        if (doc == "docs/cli.md") CHECK(examples.size() >= 15u);
        int code = -1;
        for (const DocExample& e : examples) {
            INFO(doc << ": $ " << e.command);
            if (e.command == "echo $?") {
                REQUIRE(e.shown.size() >= 1);
                CHECK(e.shown.front() == std::to_string(code));
                continue;
            }
            REQUIRE(e.command.rfind("kvplan ", 0) == 0);
            const CliRun r =
                run_kvplan(e.command.substr(7), std::string("cd '") + KVPLAN_SOURCE_DIR + "' &&");
            code = r.code;
            std::vector<std::string> printed = lines_of(r.out);
            for (std::string& l : lines_of(r.err)) printed.push_back(std::move(l));
            CHECK(is_excerpt(e.shown, printed));
        }
    }
}

TEST_CASE("a KV dtype the GPU cannot hold exits 3 with the reason", "[cli][exit][kv_dtype]") {
    // NVFP4 is Blackwell's (b200 takes it, h100 does not); MI300X (CDNA3) has no FP4 for MXFP4;
    // TensorRT-LLM's FP8 cache needs Ada or later, where vLLM stores fp8 on an A100 too.
    const std::string base = "fit --model llama-3-8b --context 8k --concurrency 8 ";
    const CliRun h100 = run_kvplan(base + "--gpu h100 --kv-dtype nvfp4");
    CHECK(h100.code == 3);
    CHECK_THAT(h100.err, Catch::Contains("GPU 'h100-sxm' (hopper, compute capability 9.0): "
                                         "kv_dtype: expected a KV dtype it can hold (vLLM's NVFP4 "
                                         "KV cache needs compute capability 10.x") &&
                             Catch::Contains("found nvfp4"));
    CHECK(run_kvplan(base + "--gpu b200 --kv-dtype nvfp4").code == 0);
    const CliRun mi300x = run_kvplan(base + "--gpu mi300x --kv-dtype mxfp4");
    CHECK(mi300x.code == 3);
    CHECK_THAT(mi300x.err, Catch::Contains("GPU 'mi300x' (cdna3, gfx942)") &&
                               Catch::Contains("an MXFP4 KV cache needs FP4 hardware"));
    // MI355X holds MXFP4, but no engine has a name for an MXFP4 cache: an answer, DOES NOT
    // START (exit 0), in text and JSON (engine/startup.hpp, kv_dtype_check).
    const CliRun mi355x = run_kvplan(base + "--gpu mi355x --kv-dtype mxfp4");
    CHECK(mi355x.code == 0);
    CHECK_THAT(mi355x.out,
               Catch::StartsWith("DOES NOT START: llama-3-8b under vllm on 1 x AMD Instinct "
                                 "MI355X (tp 1 x pp 1): vLLM has no mxfp4 KV cache in any "
                                 "release: its cache dtypes (vllm/config/cache.py, CacheDType) "
                                 "do not list it"));
    const json mj = json::parse(run_kvplan(base + "--gpu mi355x --kv-dtype mxfp4 -f json").out);
    CHECK(mj["refusal"] == "kv_dtype");
    CHECK(mj["kv_dtype_rule"] == "no_engine_name");
    CHECK(mj["max_concurrency"] == 0);
    for (const char* e : {"sglang", "trtllm"}) {
        INFO(e);
        const json ej = json::parse(
            run_kvplan(base + "--gpu mi355x --kv-dtype mxfp4 -f json --engine " + e).out);
        CHECK(ej["kv_dtype_rule"] == "no_engine_name");
    }
    const CliRun trt = run_kvplan(base + "--gpu a100-sxm4-80gb --kv-dtype fp8 --engine trtllm");
    CHECK(trt.code == 3);
    CHECK_THAT(trt.err, Catch::Contains("TensorRT-LLM's FP8 KV cache needs FP8 in hardware"));
    CHECK(run_kvplan(base + "--gpu a100-sxm4-80gb --kv-dtype fp8").code == 0);
}

TEST_CASE("plan searches whole nodes unless --any-layout", "[cli][plan][layout]") {
    // Kimi-K2 on up to 16 H200s (8 per node): whole nodes are 8 or 16 GPUs; the wider search also
    // proposes replicas of 9 (pp 9) and fewer.
    const std::string kimi =
        "plan --model kimi-k2-instruct --gpu h200 --max-gpus 16 --context 8k --concurrency 16 "
        "--top 50 --format json";
    const CliRun r = run_kvplan(kimi);
    REQUIRE(r.code == 0);
    const json j = json::parse(r.out);
    REQUIRE_FALSE(j["candidates"].empty());
    for (const json& c : j["candidates"]) {
        const auto n = c["gpus"].get<std::uint64_t>();
        CHECK((n == 8 || n == 16));
    }
    const json any = json::parse(run_kvplan(kimi + " --any-layout").out);
    bool odd = false;
    for (const json& c : any["candidates"]) odd = odd || c["gpus"].get<std::uint64_t>() % 8 != 0;
    CHECK(odd);
}

TEST_CASE("plan's command notes name their row, and none when no row meets the targets",
          "[cli][plan][notes]") {
    const std::string base =
        "plan --model llama-3-70b --gpu h100,h200 --context 3k --concurrency 64 --prompt-tokens "
        "2000 --output-tokens 1000";
    const CliRun r = run_kvplan(base + " --tpot-ms 40 --format json");
    REQUIRE(r.code == 0);
    const json j = json::parse(r.out);
    REQUIRE_FALSE(j["candidates"].empty());
    // The vLLM note states row 1's layout: its GPU count and tensor-parallel size.
    const json& first = j["candidates"][0];
    std::string vllm_note;
    for (const json& n : j["notes"])
        if (n.get<std::string>().rfind("vLLM command line", 0) == 0) vllm_note = n;
    CHECK_THAT(vllm_note, Catch::StartsWith("vLLM command line (candidate 1): vllm serve") &&
                              Catch::Contains("--tensor-parallel-size " +
                                              std::to_string(first["tp"].get<int>()) + " "));
    // A TPOT target nothing meets: no row, no command line, and in text no table header.
    const CliRun none = run_kvplan(base + " --tpot-ms 0.01");
    REQUIRE(none.code == 0);
    CHECK(none.out.find("command line") == std::string::npos);
    CHECK(none.out.find("  #  GPU") == std::string::npos);
}

TEST_CASE("fit charges LoRA slots and reads a prefix hit rate", "[cli][fit][lora]") {
    // 4 slots of rank 16 on Llama-3-70B at tp 4: 854,589,440 B a GPU
    // (tests/budget/test_budget.cpp), out of the KV budget byte for byte, and the engines' flags in
    // the commands.
    const std::string base = "fit --model llama-3-70b --gpu h100-sxm --tp 4 --context 8k";
    const CliRun plain = run_kvplan(base + " --format json");
    const CliRun lora = run_kvplan(base + " --max-loras 4 --max-lora-rank 16 --format json");
    REQUIRE(plain.code == 0);
    REQUIRE(lora.code == 0);
    const json p = json::parse(plain.out), l = json::parse(lora.out);
    CHECK(l["lora_bytes"].get<std::uint64_t>() == 854'589'440);
    CHECK(p["kv_budget_bytes_per_gpu"].get<std::uint64_t>() -
              l["kv_budget_bytes_per_gpu"].get<std::uint64_t>() ==
          854'589'440);
    CHECK_FALSE(p.contains("lora_bytes"));
    const CliRun text = run_kvplan(base + " --max-loras 4");
    CHECK(text.out.find("--enable-lora --max-loras 4 --max-lora-rank 16") != std::string::npos);
    CHECK(run_kvplan(base + " --max-lora-rank 8").code == 2);

    // --max-cpu-loras is host memory: the same GPU figures, the flag in vLLM's command, and
    // vLLM's own check (at least --max-loras) as a usage error.
    const CliRun cpu = run_kvplan(base + " --max-loras 4 --max-cpu-loras 32 --format json");
    REQUIRE(cpu.code == 0);
    CHECK(json::parse(cpu.out)["kv_budget_bytes_per_gpu"] == l["kv_budget_bytes_per_gpu"]);
    CHECK(run_kvplan(base + " --max-loras 4 --max-cpu-loras 32")
              .out.find("--max-lora-rank 16 --max-cpu-loras 32") != std::string::npos);
    const CliRun few = run_kvplan(base + " --max-loras 4 --max-cpu-loras 2");
    CHECK(few.code == 2);
    CHECK(few.err.find("at least --max-loras (4)") != std::string::npos);
    CHECK(run_kvplan(base + " --max-cpu-loras 8").code == 2);  // no --max-loras
    // --lora-target-modules is SGLang's: refused under vLLM, which wraps every layer anyway.
    // Under SGLang, q_proj,v_proj leaves the qkv_proj stacks alone: 277,872,640 B
    // (tests/test_budget.cpp), and the command names the stack.
    const CliRun vllm_targets = run_kvplan(base + " --max-loras 4 --lora-target-modules q_proj");
    CHECK(vllm_targets.code == 2);
    CHECK(vllm_targets.err.find("--engine sglang") != std::string::npos);
    const std::string sg =
        base + " --engine sglang --max-loras 4 --lora-target-modules q_proj,v_proj";
    const CliRun sgl = run_kvplan(sg + " --format json");
    REQUIRE(sgl.code == 0);
    CHECK(json::parse(sgl.out)["lora_bytes"].get<std::uint64_t>() == 277'872'640);
    CHECK(run_kvplan(sg + " --max-cpu-loras 16")
              .out.find("--max-loaded-loras 16 --lora-target-modules qkv_proj") !=
          std::string::npos);
    CHECK(run_kvplan(base + " --engine sglang --max-loras 4 --lora-target-modules lm_head").code ==
          2);

    // 40 % of a 6,000-token prompt is the 2,400-token shared prefix --shared-prefix 2400 gives.
    const std::string split = base + " --prompt-tokens 6000 --output-tokens 2000 --format json";
    const CliRun rate = run_kvplan(split + " --prefix-hit-rate 0.4");
    const CliRun prefix = run_kvplan(split + " --shared-prefix 2400");
    REQUIRE(rate.code == 0);
    CHECK(json::parse(rate.out)["max_concurrency"] == json::parse(prefix.out)["max_concurrency"]);
    CHECK(run_kvplan(base + " --prefix-hit-rate 0.4").code == 2);  // no prompt to be a share of
    CHECK(run_kvplan(split + " --prefix-hit-rate 0.4 --shared-prefix 2400").code == 2);
    CHECK(run_kvplan(split + " --prefix-hit-rate 1.2").code == 2);
}

TEST_CASE("DeepSeek-V3.2 with a bf16 cache on the RTX PRO 6000 does not start under vLLM",
          "[cli][exit][kv_dtype][sparse_mla]") {
    // SM 12.0: vLLM main's one sparse MLA backend, FLASHINFER_MLA_SPARSE_SM120, takes the packed
    // fp8_ds_mla cache only (vllm/v1/attention/backends/mla/flashinfer_mla_sparse_sm120.py): an
    // answer, DOES NOT START, exit 0 as every refusal. Per token over 61 layers: bf16 keeps the
    // 576-wide latent in 1,152 B and the 128-wide indexer key in fp8 with a 4 B scale, 132 B:
    // 1,284 x 61 = 78,324 B = 76.49 KiB; fp8_ds_mla 656 + 132 = 788 x 61 = 48,068 B = 46.94 KiB.
    const std::string base =
        "fit --model deepseek-v3.2 --gpu rtx-pro-6000 --tp 8 --context 8k --concurrency 4 ";
    const CliRun r = run_kvplan(base + "--kv-dtype bf16");
    CHECK(r.code == 0);
    CHECK_THAT(r.out, Catch::StartsWith(
                          "DOES NOT START: deepseek-v3.2 under vllm on 8 x NVIDIA RTX PRO 6000 "
                          "Blackwell Server Edition (tp 8 x pp 1): vLLM v0.30 has no attention "
                          "backend for sparse MLA with --kv-cache-dtype bfloat16 on compute "
                          "capability 12.x: ") &&
                          Catch::Contains("FLASHINFER_MLA_SPARSE_SM120, takes the packed "
                                          "fp8_ds_mla cache only") &&
                          Catch::Contains("flashinfer_mla_sparse_sm120.py); --kv-dtype fp8_ds_mla "
                                          "(46.94 KiB per token against 76.49 KiB) starts"));
    const json j = json::parse(run_kvplan(base + "--kv-dtype bf16 -f json").out);
    CHECK(j["fits"] == false);
    CHECK_THAT(j["verdict"].get<std::string>(), Catch::StartsWith("DOES NOT START"));
    CHECK(j["refusal"] == "kv_dtype");
    CHECK(j["kv_dtype_rule"] == "no_sparse_mla_backend");
    CHECK(j["max_concurrency"] == 0);
    // The change it names starts; an older line has no SM 12.x sparse MLA at all.
    CHECK_THAT(run_kvplan(base + "--kv-dtype fp8_ds_mla").out, Catch::StartsWith("FITS"));
    CHECK_THAT(run_kvplan(base + "--kv-dtype fp8_ds_mla --engine-version 0.29").out,
               Catch::StartsWith("DOES NOT START") &&
                   Catch::Contains("--engine-version 0.30 or later starts"));
}
