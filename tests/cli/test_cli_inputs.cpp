// Input a CI gate cannot trust, and typos: through the built binary. Oversized files are refused
// before reading, a policy's paths stay in its folder, unknown keys and names are errors with
// the nearest known one, and CSV rows carry their inputs.

#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "cli_runner.hpp"

namespace fs = std::filesystem;

namespace {

/// A fresh folder under the test build tree, removed when the case ends.
struct TempDir {
    fs::path path;
    explicit TempDir(const std::string& name)
        : path(fs::path(KVPLAN_TEST_BINARY_DIR) /
               ("cli-inputs-" + name + "-" + std::to_string(::getpid()))) {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
    [[nodiscard]] std::string quoted(const std::string& rel) const {
        // Appended, not "'" + ...: GCC 12 at -O2 warns falsely on that (-Wrestrict, bug 105651).
        std::string q(1, '\'');
        q.append((path / rel).string()).append(1, '\'');
        return q;
    }
};

std::size_t lines(const std::string& s) { return std::count(s.begin(), s.end(), '\n'); }

/// The one line a usage or input error prints, which must end with `suggestion`.
void check_suggests(const std::string& args, int code, const std::string& found,
                    const std::string& suggestion) {
    INFO(args);
    const CliRun r = run_kvplan(args);
    CHECK(r.code == code);
    CHECK(lines(r.err) == 1);
    CHECK_THAT(r.err, Catch::Contains(found));
    CHECK_THAT(r.err, Catch::Contains("did you mean '" + suggestion + "'?"));
    CHECK(r.out.empty());
}

const std::string minimal_gpu = R"json({
  "id": "my-h100",
  "name": "NVIDIA H100 SXM5 80GB (our nodes)",
  "memory": {"driver_reported_bytes": 85520809984},
  "memory_bandwidth": {"TB_per_s": 3.35},
  "dense_tflops": {"bf16": 989.4}
})json";

}  // namespace

TEST_CASE("a mistyped subcommand or flag exits 2 with the nearest one", "[cli][typos]") {
    check_suggests("fti --model llama-3-70b", 2, "unknown command 'fti'", "fit");
    check_suggests("lst models", 2, "unknown command 'lst'", "list");
    check_suggests("fit --model llama-3-70b --gpu h100 --conccurency 4", 2,
                   "unknown option '--conccurency' of kvplan fit", "--concurrency");
    check_suggests("size --model llama-3-70b --contxt=8k", 2,
                   "unknown option '--contxt' of kvplan size", "--context");
    check_suggests("--verison", 2, "unknown option '--verison'", "--version");
    check_suggests("list gpu", 2, "gpu not in {models,gpus}", "gpus");
    // Nothing near: the error names the word and guesses nothing.
    const CliRun r = run_kvplan("fit --model llama-3-70b -x");
    CHECK(r.code == 2);
    CHECK(r.err == "kvplan: error: unknown option '-x' of kvplan fit (see kvplan fit --help)\n");
    // A value that looks like a flag is not taken for one: --tp -4 is a bad value.
    CHECK_THAT(run_kvplan("fit --model llama-3-70b --gpu h100 --tp -4").err,
               Catch::Contains("--tp: expected"));
}

TEST_CASE("a mistyped model, GPU or engine names the nearest", "[cli][typos]") {
    check_suggests("fit --model llama-3-70 --gpu h100 --context 8k", 3, "found 'llama-3-70'",
                   "llama-3-70b");
    // "h10" is one edit from both h100 and h20 since h20 is bundled: a typo with one answer.
    check_suggests("fit --model llama-3-70b --gpu h1000 --context 8k", 3, "found 'h1000'", "h100");
    check_suggests("fit --model llama-3-70b --gpu h100-sxm5 --context 8k", 3, "found 'h100-sxm5'",
                   "h100-sxm");
    check_suggests("fit --model llama-3-70b --gpu h100 --context 8k --engine vlm", 2,
                   "--engine: expected ideal, vllm, sglang or trtllm, found 'vlm'", "vllm");
    // With a suggestion the long list of ids gives way to where to find it.
    CHECK_THAT(run_kvplan("size --model llama-3-70 --context 8k").err,
               Catch::Contains("(kvplan list models)") && !Catch::Contains("deepseek"));
    // Without one, the ids are listed.
    CHECK_THAT(run_kvplan("size --model zzzzzzzz --context 8k").err,
               Catch::Contains("deepseek-v3") && !Catch::Contains("did you mean"));
}

TEST_CASE("an unknown key in a policy exits 3 naming the key, its path and the nearest",
          "[cli][check][typos]") {
    const CliRun r = run_kvplan("check --policy " + data_file("cli/policy_unknown_key.json"));
    CHECK(r.code == 3);
    CHECK(lines(r.err) == 1);
    CHECK_THAT(r.err, Catch::Contains("policy_unknown_key.json: replica.tensor_parallel: ") &&
                          Catch::EndsWith("found the unknown key 'tensor_parallel'; did you mean "
                                          "'tp'?\n"));
    const CliRun u = run_kvplan("check --policy " + data_file("cli/policy_misspelled_unit.json"));
    CHECK(u.code == 3);
    CHECK_THAT(u.err,
               Catch::Contains("requirements[0].gib") && Catch::EndsWith("did you mean 'GiB'?\n"));
}

TEST_CASE("oversized input files are refused before reading, exit 3", "[cli][limits]") {
    TempDir dir("large");
    // Sparse files of 300 MB (truncate, not written): a config.json, a policy and a GPU spec.
    for (const char* name : {"config.json", "policy.json", "big-gpu.json"}) {
        std::ofstream(dir.path / name) << "{}";
        fs::resize_file(dir.path / name, 300'000'000);
    }
    // A config.json may hold a long quantization list: its cap is 16 MiB (max_config_json_bytes),
    // other files' 1 MiB.
    const std::string config_limit = "expected a JSON file of at most 16 MiB (16777216 bytes)";
    const std::string file_limit = "expected a JSON file of at most 1 MiB (1048576 bytes)";
    const std::string size = "found a file of 300000000 bytes";
    for (const auto& [args, limit] : std::vector<std::pair<std::string, std::string>>{
             {"size --context 8k --model " + dir.quoted("config.json"), config_limit},
             {"check --policy " + dir.quoted("policy.json"), file_limit},
             {"fit --model llama-3-8b --context 8k --gpu " + dir.quoted("big-gpu.json"),
              file_limit}}) {
        INFO(args);
        const CliRun r = run_kvplan(args);
        CHECK(r.code == 3);
        CHECK(lines(r.err) == 1);
        CHECK_THAT(r.err, Catch::Contains(dir.path.string()) && Catch::Contains(limit) &&
                              Catch::Contains(size));
    }
}

TEST_CASE("a policy reads no file outside its folder", "[cli][check][paths]") {
    // policy_model_outside.json names ../bad/missing_field.json: a file that exists, one folder up.
    const CliRun up = run_kvplan("check --policy " + data_file("cli/policy_model_outside.json"));
    CHECK(up.code == 3);
    CHECK_THAT(up.err, Catch::Contains("policy_model_outside.json: model: expected a bundled id or "
                                       "a path inside the policy's folder, found "
                                       "\"../bad/missing_field.json\", which leads out of it"));

    TempDir dir("paths");
    const fs::path ci = dir.path / "ci";
    fs::create_directories(ci / "models" / "mine");
    fs::copy_file(fs::path(KVPLAN_SOURCE_DIR) / "configs" / "models" / "llama-3-8b.json",
                  ci / "models" / "mine" / "config.json");
    std::ofstream(ci / "my-h100.json") << minimal_gpu;
    const auto policy = [&](const std::string& model, const std::string& gpu) {
        std::ofstream(ci / "policy.json")
            << R"({"schema": "kvplan-policy/1", "model": ")" << model
            << R"(", "replica": {"gpu": ")" << gpu
            << R"("}, "requirements": [{"kind": "max_kv_bytes_per_token", "KiB": 128}]})";
        return run_kvplan("check --format json --policy " + dir.quoted("ci/policy.json"));
    };
    // Inside: a model folder and a GPU spec beside the policy. Llama-3-8B: 2 x 32 layers x 8 KV
    // heads x 128 x 2 B = 131,072 B = 128 KiB per token, exactly the bound.
    const CliRun ok = policy("models/mine", "my-h100.json");
    CHECK(ok.code == 0);
    CHECK(nlohmann::json::parse(ok.out)["requirements"][0]["measured"] == 131'072);
    // A bundled id is an id, wherever the policy is; a mistyped one gets the nearest.
    CHECK(policy("llama-3-8b", "h100").code == 0);
    const CliRun model = policy("llama-3-8", "h100");
    CHECK(model.code == 3);
    CHECK_THAT(model.err, Catch::Contains("policy.json: model: ") &&
                              Catch::EndsWith("found \"llama-3-8\", neither; did you mean "
                                              "'llama-3-8b'?\n"));
    CHECK_THAT(policy("llama-3-8b", "h1000").err, Catch::Contains("policy.json: replica.gpu: ") &&
                                                      Catch::EndsWith("did you mean 'h100'?\n"));
    // Absolute paths, `..` and links out are refused, for the model and the GPU alike.
    const std::string outside =
        (fs::path(KVPLAN_SOURCE_DIR) / "configs" / "gpus" / "l4.json").string();
    CHECK_THAT(policy("models/mine", outside).err,
               Catch::Contains("replica.gpu: expected a bundled id or a path inside the policy's "
                               "folder") &&
                   Catch::Contains("an absolute path"));
    fs::create_directory_symlink(fs::path(KVPLAN_SOURCE_DIR) / "configs" / "models", ci / "linked");
    const CliRun link = policy("linked/llama-3-8b.json", "h100");
    CHECK(link.code == 3);
    CHECK_THAT(link.err, Catch::Contains("which leads out of it"));
    CHECK(policy("models/../../ci/models/mine", "h100").code == 0);  // out and back in: inside
    CHECK(policy("models/../../elsewhere", "h100").code == 3);
}

TEST_CASE("a minimal GPU spec sizes a replica; the roofline refuses only what it lacks",
          "[cli][gpu_spec]") {
    TempDir dir("gpu");
    std::ofstream(dir.path / "my-h100.json") << minimal_gpu;
    const std::string gpu = " --gpu " + dir.quoted("my-h100.json");
    const CliRun fit = run_kvplan("fit --model llama-3-8b --context 8k --format json" + gpu);
    REQUIRE(fit.code == 0);
    // The driver total as written (a file with no runtime total budgets from it): 81,559 MiB =
    // 85,520,809,984 B, the bundled H100's nvidia-smi total.
    CHECK(nlohmann::json::parse(fit.out)["gpu_memory_bytes"] == 85'520'809'984ULL);
    CHECK(run_kvplan("roofline --model llama-3-8b --context 8k" + gpu).code == 0);
    // tp 2 needs a link for the all-reduce, and fp8 a dense fp8 figure: neither is in the file.
    const CliRun tp = run_kvplan("roofline --model llama-3-8b --context 8k --tp 2" + gpu);
    CHECK(tp.code == 3);
    CHECK(tp.err ==
          "kvplan: invalid input: GPU spec 'my-h100': scale_up.GB_per_s_per_direction: "
          "expected a link for the tensor-parallel all-reduce, found none (and no "
          "pcie.GB_per_s_per_direction)\n");
    const CliRun fp8 =
        run_kvplan("roofline --model llama-3-8b --context 8k --compute-dtype fp8" + gpu);
    CHECK(fp8.code == 3);
    CHECK_THAT(fp8.err, Catch::Contains("GPU spec 'my-h100': dense_tflops.fp8") &&
                            !Catch::Contains("Llama") && !Catch::Contains("model"));
}

TEST_CASE("CSV rows carry the inputs, so a sweep's rows can be told apart", "[cli][csv]") {
    const CliRun r = run_kvplan(
        "roofline --model llama-3-70b --gpu h100 --tp 4 --batch 1,8 --context 1k,8k --format csv");
    REQUIRE(r.code == 0);
    const auto rows = parse_csv(r.out);
    REQUIRE(rows.size() == 5);  // a header and 2 x 2 points
    // The inputs come first, named by their JSON keys; the swept batch and context once each.
    CHECK(rows[0][0] == "model");
    CHECK(rows[0][1] == "gpu");
    CHECK(std::count(rows[0].begin(), rows[0].end(), "context_tokens") == 1);
    CHECK(std::count(rows[0].begin(), rows[0].end(), "batch") == 1);
    for (std::size_t i = 1; i < rows.size(); ++i) {
        CHECK(rows[i].size() == rows[0].size());
        CHECK(rows[i][csv_column(rows, "model")] == "llama-3-70b");
        CHECK(rows[i][csv_column(rows, "gpu")] == "h100-sxm");
        CHECK(rows[i][csv_column(rows, "tp")] == "4");
    }
    // Two runs, one per GPU, concatenated: each row says which GPU it was.
    std::string both;
    for (const char* g : {"h100", "h200"}) {
        const CliRun f = run_kvplan(std::string("fit --model llama-3-70b --tp 4 --context 8k "
                                                "--concurrency 8 --format csv --gpu ") +
                                    g);
        REQUIRE(f.code == 0);
        both += both.empty() ? f.out : f.out.substr(f.out.find('\n') + 1);
    }
    const auto fits = parse_csv(both);
    REQUIRE(fits.size() == 3);
    CHECK(fits[1][csv_column(fits, "gpu")] == "h100-sxm");
    CHECK(fits[2][csv_column(fits, "gpu")] == "h200-sxm");
    CHECK(fits[1][csv_column(fits, "context_tokens")] == "8000");
    // The CUDA totals 81,090 MiB and 143,156 MiB, x 1,048,576 B (configs/gpus/h100-sxm.json,
    // h200-sxm.json, memory.runtime_total_bytes).
    CHECK(fits[1][csv_column(fits, "gpu_memory_bytes")] == "85029027840");
    CHECK(fits[2][csv_column(fits, "gpu_memory_bytes")] == "150109945856");
}
