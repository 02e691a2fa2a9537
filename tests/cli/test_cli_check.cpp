// kvplan check through the built binary: several replicas, regressions against a baseline,
// markdown tables, SARIF, GitHub annotations at the policy's line and at the changed config.json
// field, and the exit codes. The figures are those tests/plan/test_check.cpp derives by hand.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>

#include "cli_runner.hpp"

using nlohmann::json;

namespace {

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// A file in the test binary's folder, unique to this process.
std::string out_file(const std::string& name) {
    return std::string(KVPLAN_TEST_BINARY_DIR) + "/check_" + std::to_string(getpid()) + "_" + name;
}

/// Annotations and SARIF name files relative to the workspace: the source tree here.
const std::string in_workspace = std::string("GITHUB_WORKSPACE='") + KVPLAN_SOURCE_DIR + "'";

const std::string regressions = "check --policy " + data_file("cli/policy_regressions.json");
const std::string doubled_heads =
    " --model " + data_file("cli/llama-3-70b-16kv") + " --baseline llama-3-70b";

/// The number of lines of `text` that start with `prefix`.
std::size_t lines_starting(const std::string& text, const std::string& prefix) {
    std::size_t n = 0, at = 0;
    while (at < text.size()) {
        const std::size_t end = text.find('\n', at);
        if (text.compare(at, prefix.size(), prefix) == 0) ++n;
        if (end == std::string::npos) break;
        at = end + 1;
    }
    return n;
}

}  // namespace

TEST_CASE("check judges each requirement on each replica of the policy", "[cli][check][replicas]") {
    // Before the change: 75 and 175 sequences of 8,000 tokens on the H100 and the H200
    // (tests/plan/test_check.cpp); the regressions have nothing to compare with and are skipped.
    const CliRun r = run_kvplan(regressions + " --format json");
    REQUIRE(r.code == 0);
    const json doc = json::parse(r.out);
    CHECK(doc["passed"] == true);
    CHECK(doc["skipped_count"] == 6);
    const json& rows = doc["requirements"];
    REQUIRE(rows.size() == 8);  // 4 requirements x 2 replicas
    CHECK(rows[0]["replica"] == "H100");
    CHECK(rows[1]["replica"] == "H200");
    CHECK(rows[0]["replica_path"] == "replicas[0]");
    CHECK(rows[0]["measured"] == 75);
    CHECK(rows[1]["measured"] == 175);
    CHECK(rows[2]["status"] == "skipped");
    CHECK(rows[2]["result"].is_null());
    CHECK(rows[2]["reason"] == "no baseline to compare with");
    // The text says how many checks were skipped, and why, once.
    const CliRun t = run_kvplan(regressions);
    CHECK_THAT(t.out, Catch::StartsWith("PASS: 2 of 8 checks met, 6 skipped (4 requirements on 2 "
                                        "replicas)"));
    CHECK_THAT(t.out, Catch::Contains("note: 6 max_regression checks skipped"));
}

TEST_CASE("check judges regressions against the baseline", "[cli][check][regression]") {
    // Doubling the KV heads: concurrency 75 -> 37 on the H100 (-50.7 %) and 175 -> 87 on the H200
    // (-50.3 %), beyond 10 %; KV bytes per token 327,680 -> 655,360 B (+100 %), beyond 5 %; the
    // TPOT bound at batch 1 x 8,000 tokens +3.75 %, within 5 %. The chat load (32) still holds.
    const CliRun r = run_kvplan(regressions + doubled_heads + " --format json");
    CHECK(r.code == 1);
    const json doc = json::parse(r.out);
    CHECK(doc["failed_count"] == 4);
    const json& rows = doc["requirements"];
    REQUIRE(rows.size() == 8);
    CHECK(rows[0]["result"] == true);  // 37 >= 32
    CHECK(rows[2]["measured"] == 37);
    CHECK(rows[2]["baseline"] == 75);
    CHECK(rows[2]["change_percent"].get<double>() == Approx((37.0 - 75.0) / 75.0 * 100.0));
    CHECK(rows[2]["threshold"] == 10.0);
    CHECK(rows[2]["threshold_unit"] == "percent");
    CHECK(rows[2]["result"] == false);
    CHECK(rows[3]["measured"] == 87);
    CHECK(rows[3]["baseline"] == 175);
    CHECK(rows[4]["change_percent"].get<double>() == Approx(100.0));
    CHECK(rows[4]["result"] == false);
    CHECK(rows[6]["change_percent"].get<double>() ==
          Approx((36'735'303'680.0 / 35'408'855'040.0 - 1) * 100));
    CHECK(rows[6]["result"] == true);
    CHECK(rows[7]["result"] == true);
    // CSV: one row per check, the replica beside it.
    const auto csv = parse_csv(run_kvplan(regressions + doubled_heads + " --format csv").out);
    REQUIRE(csv.size() == 9);
    CHECK(csv[3][csv_column(csv, "replica")] == "H100");
    CHECK(csv[3][csv_column(csv, "measured")] == "37");
}

TEST_CASE("check --format md prints real tables", "[cli][check][md]") {
    const CliRun r = run_kvplan(regressions + doubled_heads + " --format md");
    CHECK(r.code == 1);
    CHECK_THAT(r.out, Catch::StartsWith("### "));
    CHECK_THAT(r.out, Catch::Contains("**FAIL: 4 of 8 checks not met (4 requirements on 2 "
                                      "replicas)**"));
    // No empty figure table: the verdict holds check's figures.
    CHECK_THAT(r.out, !Catch::Contains("| figure | value | exact |"));
    CHECK_THAT(r.out, Catch::Contains("| result | requirement | replica | required | measured | "
                                      "baseline | change |\n|---|---|---|---|--:|--:|--:|\n"));
    CHECK_THAT(r.out,
               Catch::Contains("| FAIL | KV bytes may grow 5 % | H100 | KV bytes per token "
                               "grow <= 5 % vs baseline | 655,360 B | 327,680 B | +100.0 % |"));
    // One row per check after the header and the rule.
    CHECK(lines_starting(r.out, "| FAIL |") == 4);
    CHECK(lines_starting(r.out, "| pass |") == 4);
}

TEST_CASE("plan --format md prints its candidates as a table and no empty one", "[cli][plan][md]") {
    const CliRun r = run_kvplan(
        "plan --model llama-3-70b --gpu h100-sxm --context 8k --concurrency 32 --format md");
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, !Catch::Contains("| figure | value | exact |\n|---|--:|--:|\n\n"));
    CHECK_THAT(r.out, Catch::Contains("| # | GPU | GPUs | tp | pp |"));
    CHECK(lines_starting(r.out, "| 1 | h100-sxm | 4 | 4 | 1 |") == 1);
}

TEST_CASE("the markdown format answers as md", "[cli][md]") {
    // The format's own name is taken as its short one: the same tables, the same bytes.
    const std::string fit = "fit --model llama-3-70b --gpu h100-sxm --tp 4 --context 8k";
    const CliRun md = run_kvplan(fit + " --format md");
    const CliRun markdown = run_kvplan(fit + " --format markdown");
    REQUIRE(markdown.code == 0);
    CHECK(markdown.out == md.out);
    CHECK_THAT(markdown.out, Catch::Contains("| figure | value | exact |"));
    const CliRun bad = run_kvplan(fit + " --format html");
    CHECK(bad.code == 2);
    CHECK_THAT(bad.err, Catch::Contains("expected text, md (markdown), json or csv"));
}

TEST_CASE("check writes SARIF 2.1.0 that code scanning reads", "[cli][check][sarif]") {
    const std::string file = out_file("regressions.sarif");
    const CliRun r =
        run_kvplan(regressions + doubled_heads + " --sarif '" + file + "'", in_workspace);
    CHECK(r.code == 1);
    const json doc = json::parse(read_file(file));
    CHECK(doc["version"] == "2.1.0");
    CHECK(doc["$schema"] == "https://json.schemastore.org/sarif-2.1.0.json");
    REQUIRE(doc["runs"].size() == 1);
    const json& run = doc["runs"][0];
    CHECK(run["tool"]["driver"]["name"] == "kvplan");
    CHECK(run["invocations"][0]["executionSuccessful"] == true);
    CHECK(run["invocations"][0]["exitCode"] == 1);
    // One rule per requirement kind, ids unique.
    const json& rules = run["tool"]["driver"]["rules"];
    REQUIRE(rules.size() == 6);
    std::set<std::string> ids;
    for (const json& rule : rules) {
        ids.insert(rule["id"].get<std::string>());
        CHECK_FALSE(rule["shortDescription"]["text"].get<std::string>().empty());
        CHECK_FALSE(rule["fullDescription"]["text"].get<std::string>().empty());
    }
    CHECK(ids.size() == 6);
    CHECK(ids.count("kvplan/max_regression") == 1);
    // The 4 failures are errors; the passes whose figure worsened are notes: the chat load on
    // both replicas (fewer sequences) and the TPOT regression on both (a longer step). Nothing
    // else is a finding.
    const json& results = run["results"];
    REQUIRE(results.size() == 8);
    std::size_t errors = 0, notes = 0;
    for (const json& res : results) {
        const std::string level = res["level"];
        errors += level == "error" ? 1 : 0;
        notes += level == "note" ? 1 : 0;
        const std::size_t index = res["ruleIndex"];
        REQUIRE(index < rules.size());
        CHECK(rules[index]["id"] == res["ruleId"]);
        CHECK_FALSE(res["message"]["text"].get<std::string>().empty());
        REQUIRE(res["locations"].size() >= 1);
        const json& loc = res["locations"][0]["physicalLocation"];
        CHECK(loc["region"]["startLine"].get<int>() >= 1);
        // The changed field first, in the pull request's diff: num_key_value_heads, line 17.
        CHECK(loc["artifactLocation"]["uri"] == "tests/data/cli/llama-3-70b-16kv/config.json");
        CHECK(loc["region"]["startLine"] == 17);
        // The policy's requirement beside it.
        const json& policy = res["relatedLocations"][0]["physicalLocation"];
        CHECK(policy["artifactLocation"]["uri"] == "tests/data/cli/policy_regressions.json");
        CHECK(res["partialFingerprints"].size() == 1);
    }
    CHECK(errors == 4);
    CHECK(notes == 4);
    // The KV regression on the H100, the fifth check, at its requirement's line, 13.
    const json& kv = results[4];
    CHECK(kv["ruleId"] == "kvplan/max_regression");
    CHECK_THAT(kv["message"]["text"].get<std::string>(),
               Catch::StartsWith("KV bytes may grow 5 % on H100: required KV bytes per token grow "
                                 "<= 5 % vs baseline, measured 655,360 B (baseline 327,680 B, "
                                 "+100.0 %)"));
    CHECK(kv["relatedLocations"][0]["physicalLocation"]["region"]["startLine"] == 13);
    std::remove(file.c_str());

    // A policy met with nothing worse: a valid run without results.
    const CliRun ok = run_kvplan(regressions + " --sarif '" + file + "'", in_workspace);
    CHECK(ok.code == 0);
    const json none = json::parse(read_file(file));
    CHECK(none["runs"][0]["results"].empty());
    CHECK(none["runs"][0]["invocations"][0]["exitCode"] == 0);
    std::remove(file.c_str());
}

TEST_CASE("check fails a requirement whose KV dtype vLLM refuses at start-up",
          "[cli][check][kv_dtype]") {
    // nvfp4 is a --kv-cache-dtype name from v0.20 (vllm/config/cache.py, CacheDType): a policy
    // that pins v0.19 asks a release that exits at argument parsing. The input is valid, so the
    // requirement fails (exit 1, not 3) with the rule, the engine file and the change.
    const CliRun r = run_kvplan("check --policy " + data_file("cli/policy_nvfp4_v019.json"));
    CHECK(r.code == 1);
    CHECK_THAT(r.out, Catch::Contains("FAIL    chat load    >= 8 sequences of 8,192 tokens  0 "
                                      "sequences"));
    CHECK_THAT(r.out,
               Catch::Contains("note: chat load: the engine does not start: vLLM v0.19 does not "
                               "know --kv-cache-dtype nvfp4, which came in v0.20 "
                               "(vllm/config/cache.py, CacheDType): the release exits at argument "
                               "parsing; --engine-version 0.20 or later starts"));
}

TEST_CASE("check fails a requirement whose KV dtype the engine has no name for",
          "[cli][check][kv_dtype]") {
    // MXFP4 KV on an MI355X (CDNA4 holds FP4 with microscaling), but no vLLM release lists mxfp4
    // among its cache dtypes (vllm/config/cache.py, CacheDType): the requirement fails (exit 1),
    // naming the dtypes vLLM takes there and fp8_e4m3, 32 layers x 8 KV heads x 128 x 2 =
    // 65,536 B = 64.00 KiB a token against mxfp4's 32 x 8 x (64 + 4 scale bytes) x 2 = 34,816 B.
    const CliRun r = run_kvplan("check --policy " + data_file("cli/policy_mxfp4_mi355x.json"));
    CHECK(r.code == 1);
    CHECK_THAT(r.out, Catch::Contains("note: chat load: the engine does not start: vLLM has no "
                                      "mxfp4 KV cache in any release") &&
                          Catch::Contains("--kv-dtype fp8_e4m3 (64.00 KiB per token against "
                                          "34.00 KiB) starts"));
}

TEST_CASE("GitHub annotations point at the policy's line and at the changed config.json field",
          "[cli][check][annotations]") {
    // The config lowers max_position_embeddings to 4,096 (line 13), below the policy's 8,000
    // tokens: no engine starts there, so neither requirement holds.
    const std::string args = "check --policy " + data_file("cli/policy_context_8000.json") +
                             " --model " + data_file("cli/llama-3-70b-short") +
                             " --baseline llama-3-70b";
    const CliRun r = run_kvplan(args, "GITHUB_ACTIONS=true " + in_workspace);
    CHECK(r.code == 1);
    CHECK_THAT(r.out,
               Catch::StartsWith("::error file=tests/data/cli/policy_context_8000.json,line=6,"
                                 "title=kvplan check%3A chat load::chat load: required >= 32 "
                                 "sequences of 8,000 tokens, measured 0 sequences (baseline 75 "
                                 "sequences, -100.0 %25): the engine does not start: 8,000 tokens "
                                 "pass the model's limit of 4,096 tokens (max_position_embeddings "
                                 "= 4,096); the ideal profile refuses that length "
                                 "(--allow-long-context serves it, as "
                                 "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 lets vLLM)\n"));
    CHECK_THAT(r.out, Catch::Contains("::error file=tests/data/cli/policy_context_8000.json,line=7,"
                                      "title=kvplan check%3A decode latency::"));
    CHECK_THAT(r.out,
               Catch::Contains("::error file=tests/data/cli/llama-3-70b-short/config.json,line=13,"
                               "title=kvplan check%3A max_position_embeddings::"
                               "max_position_embeddings changed from 8192 to 4096: it moves 2 "
                               "checks, 2 failing; chat load: 0 sequences (was 75 sequences, "
                               "-100.0 %25); decode latency: none (was 10.57 ms)\n"));
    // Without the baseline the policy alone fails the same, at its lines.
    const CliRun alone = run_kvplan("check --policy " + data_file("cli/policy_context_8000.json") +
                                        " --model " + data_file("cli/llama-3-70b-short"),
                                    "GITHUB_ACTIONS=true " + in_workspace);
    CHECK(alone.code == 1);
    CHECK(lines_starting(alone.out, "::error file=tests/data/cli/policy_context_8000.json,line=") ==
          2);
    CHECK_THAT(alone.out, !Catch::Contains("config.json"));
    // The same model before the change passes: notices only.
    const CliRun before = run_kvplan("check --policy " + data_file("cli/policy_context_8000.json"),
                                     "GITHUB_ACTIONS=true " + in_workspace);
    CHECK(before.code == 0);
    CHECK(lines_starting(before.out, "::notice file=") == 2);
    CHECK(lines_starting(before.out, "::error") == 0);
}

TEST_CASE("a field that moves no figure is not annotated", "[cli][check][annotations]") {
    // The 16-head config against a copy that differs only in a field the model does not read.
    const std::string dir = out_file("renamed");
    std::filesystem::create_directories(dir);
    std::string text =
        read_file(std::string(KVPLAN_TEST_DATA_DIR) + "/cli/llama-3-70b-16kv/config.json");
    const std::string from = "\"transformers_version\": \"4.40.0.dev0\"";
    REQUIRE(text.find(from) != std::string::npos);
    text.replace(text.find(from), from.size(), "\"transformers_version\": \"4.41.0\"");
    std::ofstream(dir + "/config.json") << text;
    const CliRun r = run_kvplan(
        regressions + " --model '" + dir + "' --baseline " + data_file("cli/llama-3-70b-16kv"),
        "GITHUB_ACTIONS=true");
    CHECK(r.code == 0);
    CHECK_THAT(r.out, !Catch::Contains("transformers_version"));
    std::filesystem::remove_all(dir);
}

TEST_CASE("check exits 0, 1, 2 and 3 as documented", "[cli][check][exit]") {
    CHECK(run_kvplan(regressions).code == 0);
    CHECK(run_kvplan(regressions + doubled_heads).code == 1);
    // Usage: an unknown format, no policy.
    CHECK(run_kvplan(regressions + " --format yaml").code == 2);
    CHECK(run_kvplan("check").code == 2);
    // Invalid input: both "replica" and "replicas"; a SARIF file that cannot be written.
    const CliRun both =
        run_kvplan("check --policy " + data_file("cli/policy_replica_and_replicas.json"));
    CHECK(both.code == 3);
    CHECK_THAT(both.err, Catch::Contains("policy_replica_and_replicas.json: replicas: expected "
                                         "\"replica\" (one) or \"replicas\" (several), not both"));
    const CliRun sarif = run_kvplan(regressions + " --sarif /no/such/folder/out.sarif");
    CHECK(sarif.code == 3);
    CHECK_THAT(sarif.err,
               Catch::Contains("/no/such/folder/out.sarif: --sarif: expected a writable file"));
}

namespace {

/// A folder in the test binary's folder, unique to this process, removed at the end.
struct ScratchDir {
    std::filesystem::path path;
    explicit ScratchDir(const std::string& name) : path(out_file(name)) {
        std::filesystem::remove_all(path);
        std::filesystem::create_directories(path);
    }
    ~ScratchDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    [[nodiscard]] std::string quoted(const std::string& name) const {
        // Appended rather than "'" + string: GCC 12 warns of an overlap in that (-Wrestrict).
        std::string q = "'";
        q.append((path / name).string()).append("'");
        return q;
    }
};

}  // namespace

TEST_CASE("a policy's replica states redundant experts, and check holds what fit holds",
          "[cli][check][parallel]") {
    ScratchDir dir("redundant");
    // DeepSeek-V3 (fp8, 128 x 128 block scales) on 8 H200s, dp 8 x ep 8, with 32 redundant
    // experts: 4 more per GPU. An expert is 3 matrices of 7,168 x 2,048 = 44,040,192 fp8 values
    // and 3 x (7168/128 x 2048/128) = 2,688 fp32 scales (10,752 B): 44,050,944 B a layer, x 58
    // MoE layers = 2,554,954,752 B; x 4 = 10,219,819,008 B more weights on each GPU.
    std::ofstream(dir.path / "policy.json") << R"({
  "schema": "kvplan-policy/1",
  "model": "deepseek-v3",
  "replicas": [
    {"gpu": "h200-sxm", "tp": 1, "dp": 8, "ep": 8},
    {"gpu": "h200-sxm", "tp": 1, "dp": 8, "ep": 8, "redundant_experts": 32}
  ],
  "requirements": [
    {"name": "chat load", "kind": "min_concurrency", "sequences": 400, "context_tokens": 8000}
  ]
})";
    const CliRun r = run_kvplan("check --format json --policy " + dir.quoted("policy.json"));
    CHECK(r.code == 1);
    const json rows = json::parse(r.out)["requirements"];
    REQUIRE(rows.size() == 2);
    const auto fit = [](const std::string& extra) {
        const CliRun f = run_kvplan(
            "fit --model deepseek-v3 --gpu h200-sxm --dp 8 --ep 8 --context 8000 --format json" +
            extra);
        REQUIRE(f.code == 0);
        return json::parse(f.out);
    };
    const json plain = fit(""), redundant = fit(" --redundant-experts 32");
    CHECK(redundant["weight_bytes_per_gpu"].get<std::uint64_t>() -
              plain["weight_bytes_per_gpu"].get<std::uint64_t>() ==
          10'219'819'008ULL);
    // One answer: the policy's figures are fit's.
    CHECK(rows[0]["measured"] == plain["max_concurrency"]);
    CHECK(rows[1]["measured"] == redundant["max_concurrency"]);
    CHECK(rows[1]["measured"].get<std::uint64_t>() < rows[0]["measured"].get<std::uint64_t>());
    CHECK(rows[0]["result"] == true);
    CHECK(rows[1]["result"] == false);
    CHECK(rows[1]["replica"].get<std::string>().find("+32 redundant experts") != std::string::npos);
    // vLLM's and SGLang's names for the key point at it.
    std::ofstream(dir.path / "typo.json") << R"({
  "schema": "kvplan-policy/1",
  "model": "deepseek-v3",
  "replica": {"gpu": "h200-sxm", "dp": 8, "ep": 8, "num_redundant_experts": 32},
  "requirements": [
    {"name": "chat load", "kind": "min_concurrency", "sequences": 1, "context_tokens": 8000}
  ]
})";
    const CliRun typo = run_kvplan("check --policy " + dir.quoted("typo.json"));
    CHECK(typo.code == 3);
    CHECK_THAT(typo.err, Catch::Contains("'redundant_experts'"));
}

TEST_CASE("a policy's replicas state dp, ep and dcp, and a wrong GPU id names the policy file",
          "[cli][check][parallel]") {
    ScratchDir dir("parallel");
    // Two vLLM-rule engines (ideal) of tp 4 each on 8 H100s: 2 x 75 = 150 sequences of 8,000
    // tokens (tests/plan/test_check.cpp derives 75 for one).
    std::ofstream(dir.path / "policy.json") << R"({
  "schema": "kvplan-policy/1",
  "model": "llama-3-70b",
  "replicas": [
    {"name": "dp 2", "gpu": "h100-sxm", "tp": 4, "dp": 2, "engine": "ideal", "block_size": 1},
    {"name": "ep on a dense model", "gpu": "h100-sxm", "tp": 4, "ep": 4, "engine": "ideal"}
  ],
  "requirements": [
    {"name": "chat load", "kind": "min_concurrency", "sequences": 150, "context_tokens": 8000}
  ]
})";
    const CliRun r = run_kvplan("check --format json --policy " + dir.quoted("policy.json"));
    CHECK(r.code == 1);
    const json doc = json::parse(r.out);
    const json& rows = doc["requirements"];
    REQUIRE(rows.size() == 2);
    CHECK(rows[0]["measured"] == 150);
    CHECK(rows[0]["result"] == true);
    CHECK(rows[1]["result"] == false);
    CHECK(rows[1]["measured"].is_null());
    CHECK_THAT(rows[1]["reason"].get<std::string>(),
               Catch::Contains("expert parallelism needs a mixture-of-experts model"));
    // One answer: fit at the same layout holds the same 150.
    const CliRun fit = run_kvplan(
        "fit --model llama-3-70b --gpu h100-sxm --tp 4 --dp 2 --engine ideal --block-size 1 "
        "--context 8000 --format json");
    REQUIRE(fit.code == 0);
    CHECK(json::parse(fit.out)["max_concurrency"] == 150);
    // The heading counts the dp engines' GPUs and shows the layout.
    const CliRun text = run_kvplan("check --policy " + dir.quoted("policy.json"));
    CHECK_THAT(text.out, Catch::Contains("dp 2: 8 x h100-sxm (tp 4 x pp 1 x dp 2), KV bf16") &&
                             Catch::Contains("ep on a dense model: 4 x h100-sxm (tp 4 x pp 1, "
                                             "ep 4), KV bf16"));

    // A GPU id one letter off, in the second replica: one line naming the policy, the field and
    // the id meant; exit 3.
    std::ofstream(dir.path / "typo.json") << R"({"schema": "kvplan-policy/1", "model": "llama-3-8b",
  "replicas": [{"gpu": "h100-sxm"}, {"gpu": "h200-sxn"}],
  "requirements": [{"kind": "max_kv_bytes_per_token", "KiB": 128}]})";
    const CliRun typo = run_kvplan("check --policy " + dir.quoted("typo.json"));
    CHECK(typo.code == 3);
    CHECK(typo.err == "kvplan: invalid input: " + (dir.path / "typo.json").string() +
                          ": replicas[1].gpu: expected a bundled id or a path inside the "
                          "policy's folder, found \"h200-sxn\", neither; did you mean "
                          "'h200-sxm'?\n");
}

TEST_CASE("check refuses an oversized config, baseline or GPU spec before reading it",
          "[cli][check][limits]") {
    ScratchDir dir("large");
    // Sparse files of 300 MB (truncated, not written).
    std::filesystem::create_directories(dir.path / "big-model");
    for (const char* name : {"big-model/config.json", "big-gpu.json"}) {
        std::ofstream(dir.path / name) << "{}";
        std::filesystem::resize_file(dir.path / name, 300'000'000);
    }
    std::ofstream(dir.path / "policy.json")
        << R"({"schema": "kvplan-policy/1", "model": "llama-3-8b", "replica": {"gpu": "big-gpu.json"},
  "requirements": [{"kind": "max_kv_bytes_per_token", "KiB": 128}]})";
    std::ofstream(dir.path / "ok.json")
        << R"({"schema": "kvplan-policy/1", "model": "llama-3-8b", "replica": {"gpu": "h100"},
  "requirements": [{"kind": "max_kv_bytes_per_token", "KiB": 128}]})";
    const std::string gpu = (dir.path / "big-gpu.json").string();
    const std::string config = (dir.path / "big-model" / "config.json").string();
    const std::string policy = " --policy " + dir.quoted("ok.json");
    // A config.json's cap is 16 MiB (max_config_json_bytes), a GPU spec's 1 MiB.
    const std::string config_limit = "expected a JSON file of at most 16 MiB (16777216 bytes)";
    const std::string gpu_limit = "expected a JSON file of at most 1 MiB (1048576 bytes)";
    const std::vector<std::tuple<std::string, std::string, std::string>> runs{
        {"check --policy " + dir.quoted("policy.json"), gpu, gpu_limit},
        {"check" + policy + " --model " + dir.quoted("big-model"), config, config_limit},
        {"check" + policy + " --baseline " + dir.quoted("big-model/config.json"), config,
         config_limit}};
    for (const auto& [args, file, limit] : runs) {
        INFO(args);
        const CliRun r = run_kvplan(args);
        CHECK(r.code == 3);
        CHECK(lines_starting(r.err, "kvplan: ") == 1);
        CHECK_THAT(r.err, Catch::StartsWith("kvplan: invalid input: " + file + ": ") &&
                              Catch::Contains(limit) &&
                              Catch::Contains("found a file of 300000000 bytes"));
    }
}

#ifdef KVPLAN_STRACE
TEST_CASE(
    "check opens the files it is given and the bundled ones it names, each once, nothing "
    "else",
    "[cli][check][paths]") {
    namespace fs = std::filesystem;
    const std::string trace = out_file("opened.txt");
    const TracedRun t = run_kvplan_traced(regressions + doubled_heads, trace);
    const CliRun& r = t.run;
    REQUIRE(r.code == 1);
    const fs::path configs = fs::weakly_canonical(KVPLAN_CONFIG_DIR);
    const fs::path data = fs::weakly_canonical(std::string(KVPLAN_TEST_DATA_DIR) + "/cli");
    // The policy, the model's config.json, the bundled baseline and the two GPUs the policy
    // names. A bundled id is opened by its file name; the models folder is listed only for an id
    // that is not one.
    const std::set<fs::path> allowed{
        data / "policy_regressions.json", data / "llama-3-70b-16kv" / "config.json",
        configs / "models" / "llama-3-70b.json", configs / "gpus" / "h100-sxm.json",
        configs / "gpus" / "h200-sxm.json"};
    std::set<fs::path> opened;
    for (const auto& [f, n] : t.opens) opened.insert(f);
    std::remove(trace.c_str());
    for (const fs::path& f : opened) {
        INFO(f.string());
        CHECK(allowed.count(f) == 1);
    }
    // And each of them was read, through one open: the policy was opened again to find its
    // lines, the config.json again to trace its changed fields.
    CHECK(opened == allowed);
    for (const auto& [f, n] : t.opens) {
        INFO(f.string());
        CHECK(n == 1);
    }
}
#endif

TEST_CASE("the worked pull request of examples/ci/README.md fails as the README shows",
          "[cli][check][example]") {
    // examples/ci/pr/our-70b/config.json is Llama-3-70B's config with num_key_value_heads 8 -> 16
    // (line 17) and transformers_version changed (line 24); pr/base/our-70b/config.json is the
    // config before. The README prints this run; these are its figures.
    const std::string ci = std::string("'") + KVPLAN_SOURCE_DIR + "/examples/ci/";
    const std::string args = "check --policy " + ci + "policy.json' --model " + ci +
                             "pr/our-70b/config.json' --baseline " + ci +
                             "pr/base/our-70b/config.json'";
    // Files are named relative to the workspace, the source tree here.
    const CliRun md = run_kvplan(args + " --format md", in_workspace);
    CHECK(md.code == 1);
    CHECK_THAT(md.out, Catch::Contains("**FAIL: 11 of 16 checks not met (8 requirements on 2 "
                                       "replicas)**"));
    // KV per token: 2 x 80 layers x 16 heads x 128 x 2 B = 655,360 B, twice 327,680 B.
    CHECK_THAT(md.out, Catch::Contains("| FAIL | KV cache cost per token | H100 fleet | <= 327,680 "
                                       "B per token | 655,360 B | 327,680 B | +100.0 % |"));
    // Weights per GPU: 35,949,920,256 B = 33.48 GiB against 35,278,831,616 B = 32.86 GiB
    // (tests/plan/test_check.cpp), +1.9 %: within the 40 GiB bound.
    CHECK_THAT(md.out, Catch::Contains("| pass | weights leave half of each GPU for the cache | "
                                       "H200 fleet | <= 40.00 GiB per GPU | 33.48 GiB | 32.86 GiB "
                                       "| +1.9 % |"));
    // The README's rows for the concurrency, as vLLM's budget gives them.
    CHECK_THAT(md.out, Catch::Contains("| FAIL | max concurrency at 8,000 tokens falls by at most "
                                       "10 % | H200 fleet | max concurrency at 8,000 tokens falls "
                                       "<= 10 % vs baseline | 75 sequences | 152 sequences | "
                                       "-50.7 % |"));
    CHECK_THAT(md.out, Catch::EndsWith("> examples/ci/pr/our-70b/config.json:17: "
                                       "num_key_value_heads changed from 8 to 16\n"));
    // In GitHub Actions: the changed field at its line; transformers_version moves nothing.
    const CliRun gha = run_kvplan(args, "GITHUB_ACTIONS=true " + in_workspace);
    CHECK(gha.code == 1);
    CHECK_THAT(gha.out, Catch::Contains("::error file=examples/ci/pr/our-70b/config.json,line=17,"
                                        "title=kvplan check%3A num_key_value_heads::"
                                        "num_key_value_heads changed from 8 to 16: it moves 15 "
                                        "checks, 11 failing; "));
    CHECK_THAT(gha.out, !Catch::Contains("transformers_version"));
    CHECK_THAT(gha.out, Catch::Contains("::error file=examples/ci/policy.json,line=39,title=kvplan "
                                        "check%3A KV cache cost per token on H100 fleet::"));
}

TEST_CASE("check names the vLLM release it judged under, as fit does", "[cli][check]") {
    // A policy's engine_version selects that release's defaults (v0.9: gpu_memory_utilization
    // 0.9, kvplan/engine/release.hpp); without it the newest release applies, the one fit names.
    const std::string path = out_file("release.json");
    const auto write = [&](const std::string& version_key) {
        std::ofstream(path) << R"({"schema": "kvplan-policy/1", "model": "llama-3-70b",
  "replica": {"gpu": "h100-sxm", "tp": 4, "engine": "vllm")"
                            << version_key << R"(},
  "requirements": [{"name": "chat", "kind": "min_concurrency", "sequences": 40,
                    "context_tokens": 8000}]})";
    };
    write(R"(, "engine_version": "0.9")");
    const CliRun old = run_kvplan("check --policy '" + path + "'");
    INFO(old.out << old.err);
    CHECK(old.out.find("KV bf16, weights bf16, engine vllm 0.9\n") != std::string::npos);
    const json old_json =
        json::parse(run_kvplan("check --format json --policy '" + path + "'").out);
    CHECK(old_json["inputs"]["engine_version"] == "0.9");
    CHECK(old_json["inputs"]["engine"] == "vllm");
    write("");
    const json newest = json::parse(run_kvplan("check --format json --policy '" + path + "'").out);
    const CliRun fit =
        run_kvplan("fit --model llama-3-70b --gpu h100-sxm --tp 4 --context 8000 --format json");
    REQUIRE(fit.code == 0);
    const std::string fit_release = json::parse(fit.out)["engine_version"];
    CHECK(newest["inputs"]["engine_version"] == fit_release);
    CHECK(fit_release != "0.9");
    std::filesystem::remove(path);
}
