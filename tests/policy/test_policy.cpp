// policy.hpp: the kvplan-policy/1 reader is strict (every unknown key an error with the nearest
// known one), and a path a policy names stays inside the policy's folder.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <kvplan/plan/check.hpp>
#include <kvplan/policy.hpp>
#include <kvplan/presets.hpp>
#include <string>
#include <vector>

using namespace kvplan;
namespace fs = std::filesystem;

namespace {

/// A policy whose replica and first requirement are the given JSON members.
Json policy_with(const std::string& replica, const std::string& requirement) {
    return Json::parse(R"({"schema": "kvplan-policy/1", "model": "llama-3-70b", "replica": {)" +
                       replica + R"(}, "requirements": [{)" + requirement + "}]}");
}

std::string error_of(const Json& doc) {
    try {
        (void)policy_from_json(doc, "policy.json");
    } catch (const InvalidInput& e) {
        return e.what();
    }
    return "no error";
}

const std::string gpu = R"("gpu": "h100", "tp": 4)";
const std::string kv_cost = R"("kind": "max_kv_bytes_per_token", "bytes": 327680)";

struct TempDir {
    fs::path path;
    explicit TempDir(const std::string& name)
        : path(fs::temp_directory_path() /
               ("kvplan-policy-" + name + "-" + std::to_string(::getpid()))) {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

/// Writes an empty JSON object to `file` (its folders made).
void touch(const fs::path& file) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << "{}";
}

}  // namespace

TEST_CASE("a well-formed policy reads", "[policy]") {
    const Policy p = policy_from_json(policy_with(gpu, kv_cost), "policy.json");
    CHECK(p.replicas.at(0).tp == 4);
    CHECK(p.requirements.at(0).size == Bytes::exactly(327'680));
}

TEST_CASE("an engine's name for a replica key is an error naming the key meant", "[policy][keys]") {
    // The typo the issue names: tensor_parallel was ignored and the replica judged at tp 4.
    CHECK(
        error_of(policy_with(gpu + R"(, "tensor_parallel": 8)", kv_cost)) ==
        "policy.json: replica.tensor_parallel: expected a key of the replica (name, gpu, tp, pp, "
        "dp, ep, dcp, redundant_experts, kv_dtype, weight_dtype, engine, gpu_memory_utilization, "
        "block_size, engine_version), found the unknown key 'tensor_parallel'; did you mean 'tp'?");
    // vLLM's and SGLang's spellings.
    CHECK_THAT(error_of(policy_with(gpu + R"(, "tensor_parallel_size": 8)", kv_cost)),
               Catch::EndsWith("did you mean 'tp'?"));
    CHECK_THAT(error_of(policy_with(gpu + R"(, "kv_cache_dtype": "fp8")", kv_cost)),
               Catch::EndsWith("did you mean 'kv_dtype'?"));
    CHECK_THAT(error_of(policy_with(gpu + R"(, "mem_fraction_static": 0.8)", kv_cost)),
               Catch::EndsWith("did you mean 'gpu_memory_utilization'?"));
    // The parallel layouts' flags: vLLM's --data-parallel-size, --enable-expert-parallel and
    // --decode-context-parallel-size, SGLang's --ep-size.
    CHECK_THAT(
        error_of(policy_with(gpu + R"(, "data_parallel_size": 2)", kv_cost)),
        Catch::Contains("replica.data_parallel_size") && Catch::EndsWith("did you mean 'dp'?"));
    CHECK_THAT(error_of(policy_with(gpu + R"(, "enable_expert_parallel": true)", kv_cost)),
               Catch::EndsWith("did you mean 'ep'?"));
    CHECK_THAT(error_of(policy_with(gpu + R"(, "ep_size": 4)", kv_cost)),
               Catch::EndsWith("did you mean 'ep'?"));
    CHECK_THAT(error_of(policy_with(gpu + R"(, "decode_context_parallel_size": 2)", kv_cost)),
               Catch::EndsWith("did you mean 'dcp'?"));
    // A plain misspelling, one edit away.
    CHECK_THAT(
        error_of(policy_with(gpu + R"(, "block_sise": 32)", kv_cost)),
        Catch::Contains("replica.block_sise") && Catch::EndsWith("did you mean 'block_size'?"));
}

TEST_CASE("a misspelled required key is reported as unknown, not as missing", "[policy][keys]") {
    // "gpuu" for "gpu": the error names the typo and the key, not "gpu: found nothing".
    CHECK_THAT(error_of(policy_with(R"("gpuu": "h100")", kv_cost)),
               Catch::Contains("replica.gpuu") && Catch::EndsWith("did you mean 'gpu'?"));
    CHECK_THAT(error_of(policy_with(gpu, R"("knd": "min_context", "tokens": 8)")),
               Catch::Contains("requirements[0].knd: expected a key of a requirement") &&
                   Catch::EndsWith("did you mean 'kind'?"));
}

TEST_CASE("a misspelled unit key is unknown, with the unit meant", "[policy][keys]") {
    // Before, {"gib": 40} read as a size with no unit key: "bytes: found nothing".
    CHECK(error_of(policy_with(gpu, R"("kind": "max_weights_per_gpu", "gib": 40)")) ==
          "policy.json: requirements[0].gib: expected a key of a max_weights_per_gpu requirement "
          "(kind, name, bytes, KiB, MiB, GiB, kB, MB, GB), found the unknown key 'gib'; did you "
          "mean 'GiB'?");
    CHECK_THAT(error_of(policy_with(gpu, R"("kind": "max_weights_per_gpu", "gigabytes": 40)")),
               Catch::EndsWith("did you mean 'GB'?"));
    CHECK_THAT(error_of(policy_with(gpu, R"("kind": "max_weights_per_gpu", "KB": 40)")),
               Catch::EndsWith("did you mean 'kB'?"));
}

TEST_CASE("a key of another kind of requirement is named as such", "[policy][keys]") {
    CHECK(
        error_of(policy_with(
            gpu, R"("kind": "min_concurrency", "sequences": 8, "context_tokens": 8, "ms": 40)")) ==
        "policy.json: requirements[0].ms: expected a key of a min_concurrency requirement (kind, "
        "name, sequences, context_tokens, shared_prefix_tokens), found 'ms', a key of "
        "max_tpot");
    // min_context counts "tokens", not "context_tokens", which two other kinds take.
    CHECK_THAT(error_of(policy_with(gpu, R"("kind": "min_context", "context_tokens": 8)")),
               Catch::EndsWith("found 'context_tokens', a key of min_concurrency, max_tpot and "
                               "max_regression; did you mean 'tokens'?"));
}

TEST_CASE("unknown keys at the top of a policy are errors too", "[policy][keys]") {
    Json doc = policy_with(gpu, kv_cost);
    doc["requirement"] = Json::array();
    CHECK_THAT(error_of(doc), Catch::StartsWith("policy.json: requirement: expected a key of a "
                                                "policy (schema, description, model, replica, "
                                                "replicas, requirements)") &&
                                  Catch::EndsWith("did you mean 'requirements'?"));
}

TEST_CASE("a mistyped engine, dtype or kind names the nearest", "[policy]") {
    CHECK_THAT(error_of(policy_with(gpu + R"(, "engine": "sglnag")", kv_cost)),
               Catch::EndsWith("found \"sglnag\"; did you mean 'sglang'?"));
    CHECK_THAT(error_of(policy_with(gpu + R"(, "kv_dtype": "fp9")", kv_cost)),
               Catch::EndsWith("did you mean 'fp8'?"));
    CHECK_THAT(error_of(policy_with(gpu, R"("kind": "min_concurency", "sequences": 1)")),
               Catch::EndsWith("did you mean 'min_concurrency'?"));
    // Nothing near: no guess.
    CHECK_THAT(error_of(policy_with(gpu + R"(, "engine": "tgi")", kv_cost)),
               Catch::EndsWith("found \"tgi\""));
}

TEST_CASE("a policy's paths stay inside its folder", "[policy][paths]") {
    TempDir dir("paths");
    const fs::path root = dir.path / "repo";
    touch(root / "ci" / "models" / "m" / "config.json");
    touch(root / "ci" / "gpus" / "mine.json");
    touch(root / "secret" / "config.json");
    Policy p;
    p.source = (root / "ci" / "policy.json").string();

    // Inside: a file, a folder holding config.json, a `..` that comes back in.
    CHECK(policy_file(p, "replica.gpu", "gpus/mine.json") == root / "ci" / "gpus" / "mine.json");
    CHECK(policy_file(p, "model", "models/m", "config.json") == root / "ci" / "models" / "m");
    CHECK(policy_file(p, "model", "models/../models/m") == root / "ci" / "models" / "m");
    // A file that does not exist yet is inside too: reading it reports it missing.
    CHECK(policy_file(p, "model", "absent/config.json") == root / "ci" / "absent" / "config.json");

    const auto error = [&](std::string_view written, std::string_view in_folder = {}) {
        try {
            (void)policy_file(p, "model", written, in_folder);
        } catch (const InvalidInput& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    // An absolute path, and `..` out of the folder.
    CHECK(error((root / "secret" / "config.json").string()) ==
          p.source +
              ": model: expected a bundled id or a path inside the policy's folder, found \"" +
              (root / "secret" / "config.json").string() + "\", an absolute path");
    CHECK_THAT(error("../secret/config.json"), Catch::EndsWith("which leads out of it"));
    CHECK_THAT(error("models/../../secret"), Catch::EndsWith("which leads out of it"));
    CHECK_THAT(error(""), Catch::EndsWith("an empty path"));

    // A symbolic link out of the folder, to a file and to a folder.
    fs::create_symlink(root / "secret" / "config.json", root / "ci" / "link.json");
    fs::create_directory_symlink(root / "secret", root / "ci" / "linked");
    CHECK_THAT(error("link.json"), Catch::EndsWith("which leads out of it"));
    CHECK_THAT(error("linked/config.json"), Catch::EndsWith("which leads out of it"));
    // A folder inside whose config.json is a link out.
    fs::create_directories(root / "ci" / "trojan");
    fs::create_symlink(root / "secret" / "config.json", root / "ci" / "trojan" / "config.json");
    CHECK_THAT(error("trojan", "config.json"),
               Catch::EndsWith("whose config.json leads out of it"));
    // A link that stays inside is followed.
    fs::create_symlink(root / "ci" / "gpus" / "mine.json", root / "ci" / "alias.json");
    CHECK(error("alias.json") == "no error");
}

TEST_CASE("a bundled id in a policy is not a path", "[policy][paths]") {
    Policy p;
    p.source = "ci/policy.json";
    const std::vector<std::string> bundled{"llama-3-70b", "llama-3-8b"};
    CHECK(policy_reference(p, "model", "llama-3-70b", bundled) == "llama-3-70b");
    CHECK(policy_reference(p, "model", "Llama-3-70B", bundled) == "Llama-3-70B");
    CHECK(policy_reference(p, "model", "my-model/config.json", bundled) ==
          fs::path("ci/my-model/config.json").string());
    CHECK_THROWS_WITH(
        policy_reference(p, "model", "/etc/hosts", bundled),
        Catch::Contains("ci/policy.json: model:") && Catch::Contains("an absolute path"));
    // Neither an id nor anything beside the policy: a mistyped id, with the nearest.
    CHECK_THROWS_WITH(policy_reference(p, "model", "llama-3-70", bundled),
                      "ci/policy.json: model: expected a bundled id or a path inside the policy's "
                      "folder, found \"llama-3-70\", neither; did you mean 'llama-3-70b'?");
}

namespace {

/// A policy with the given top-level members after the schema.
Json policy_doc(const std::string& members) {
    return Json::parse(R"({"schema": "kvplan-policy/1", )" + members + "}");
}

const std::string one_requirement =
    R"("requirements": [{"kind": "max_kv_bytes_per_token", "KiB": 320}])";

}  // namespace

TEST_CASE("a policy lists several replicas, each named", "[policy][replicas]") {
    const Policy p =
        policy_from_json(policy_doc(R"("replicas": [{"name": "H100 fleet", "gpu": "h100", "tp": 4},
                                   {"gpu": "h200", "tp": 2, "kv_dtype": "fp8"}], )" +
                                    one_requirement),
                         "policy.json");
    REQUIRE(p.replicas.size() == 2);
    CHECK(p.replicas[0].name == "H100 fleet");
    CHECK(p.replicas[0].path == "replicas[0]");
    CHECK(p.replicas[1].name == "h200 tp 2 x pp 1");  // the default name
    CHECK(p.replicas[1].kv_dtype == KvDtype::fp8_e4m3);
    CHECK(p.replicas[1].dp == 1);  // no data, expert or decode context parallelism by default
    CHECK(p.replicas[1].ep == 1);
    CHECK(p.replicas[1].dcp == 1);
    // Today's single "replica" reads as a list of one.
    const Policy one = policy_from_json(policy_with(gpu, kv_cost), "policy.json");
    REQUIRE(one.replicas.size() == 1);
    CHECK(one.replicas[0].path == "replica");
}

TEST_CASE("a replica states its data, expert and decode context parallelism",
          "[policy][replicas]") {
    const Policy p =
        policy_from_json(policy_doc(R"("replicas": [{"gpu": "h100", "tp": 8, "dp": 2, "ep": 16},
                                   {"gpu": "h200", "tp": 8, "dcp": 4}], )" +
                                    one_requirement),
                         "policy.json");
    REQUIRE(p.replicas.size() == 2);
    CHECK(p.replicas[0].tp == 8);
    CHECK(p.replicas[0].dp == 2);
    CHECK(p.replicas[0].ep == 16);
    CHECK(p.replicas[0].dcp == 1);
    CHECK(p.replicas[1].dcp == 4);
    // The default name shows what is not 1.
    CHECK(p.replicas[0].name == "h100 tp 8 x pp 1 x dp 2 ep 16");
    CHECK(p.replicas[1].name == "h200 tp 8 x pp 1 dcp 4");
    // Degrees are positive integers, as tp and pp.
    CHECK_THAT(error_of(policy_with(gpu + R"(, "dp": 0)", kv_cost)),
               Catch::StartsWith("policy.json: replica.dp: expected "));
    CHECK_THAT(error_of(policy_with(gpu + R"(, "ep": 1.5)", kv_cost)),
               Catch::StartsWith("policy.json: replica.ep: expected "));
}

TEST_CASE("replicas are given one way, at least one, told apart by name", "[policy][replicas]") {
    CHECK(error_of(policy_doc(R"("replica": {"gpu": "h100"}, "replicas": [{"gpu": "h200"}], )" +
                              one_requirement)) ==
          "policy.json: replicas: expected \"replica\" (one) or \"replicas\" (several), not both, "
          "found both \"replica\" and \"replicas\"");
    CHECK(error_of(policy_doc(one_requirement)) ==
          "policy.json: replica: expected a replica (\"replica\": {...}) or several (\"replicas\": "
          "[...]), found nothing (the field is missing)");
    CHECK_THAT(error_of(policy_doc(R"("replicas": [], )" + one_requirement)),
               Catch::EndsWith("replicas: expected at least one replica, found an empty array"));
    CHECK(error_of(policy_doc(
              R"("replicas": [{"name": "a", "gpu": "h100"}, {"name": "a", "gpu": "h200"}], )" +
              one_requirement)) ==
          "policy.json: replicas[1].name: expected a name no other replica has, found \"a\", the "
          "name of replicas[0]");
    // A key typed wrong inside the list names its element.
    CHECK_THAT(
        error_of(policy_doc(R"("replicas": [{"gpu": "h100"}, {"gpu": "h200", "tp_size": 2}], )" +
                            one_requirement)),
        Catch::StartsWith("policy.json: replicas[1].tp_size: expected a key of the replica") &&
            Catch::EndsWith("did you mean 'tp'?"));
    // Two unnamed replicas of one GPU and layout are told apart by their paths.
    const Policy same = policy_from_json(
        policy_doc(R"("replicas": [{"gpu": "h100"}, {"gpu": "h100", "kv_dtype": "fp8"}], )" +
                   one_requirement),
        "policy.json");
    CHECK(same.replicas[0].name == "h100 tp 1 x pp 1 (replicas[0])");
    CHECK(same.replicas[1].name == "h100 tp 1 x pp 1 (replicas[1])");
}

TEST_CASE("a replica's engine knobs are checked against its engine", "[policy][replicas]") {
    // vLLM pages in blocks of 1, 8, 16, 32, 64, 128 or 256 tokens (vllm/config/cache.py).
    CHECK(error_of(policy_with(gpu + R"(, "block_size": 12)", kv_cost)) ==
          "policy.json: replica.block_size: expected one of vLLM's block sizes 1, 8, 16, 32, 64, "
          "128, 256 (vllm/config/cache.py), found 12");
    CHECK(error_of(policy_with(gpu + R"(, "engine": "sglang", "block_size": 12)", kv_cost)) ==
          "no error");
    // The ideal profile takes no memory fraction: it would be ignored.
    CHECK_THAT(
        error_of(
            policy_with(gpu + R"(, "engine": "ideal", "gpu_memory_utilization": 0.9)", kv_cost)),
        Catch::StartsWith("policy.json: replica.gpu_memory_utilization: expected no fraction "
                          "with engine \"ideal\""));
    // engine_version: a vLLM release of kvplan's table (engine/release.hpp), read into the
    // replica; the check then runs that release's defaults.
    const Policy v010 = policy_from_json(
        policy_with(gpu + R"(, "engine_version": "0.10")", kv_cost), "policy.json");
    REQUIRE(v010.replicas.front().engine_version);
    CHECK(*v010.replicas.front().engine_version == EngineVersion{0, 10});
    CHECK(policy_deployment(v010.replicas.front(), presets::llama_3_70b, gpus::h100_sxm)
              .serving.engine_version == EngineVersion{0, 10});
    CHECK(error_of(policy_with(gpu + R"(, "engine_version": "0.7")", kv_cost)) ==
          "policy.json: replica.engine_version: expected a vLLM release as \"X.Y\", 0.8 to "
          "0.30, found \"0.7\"");
    // SGLang's releases are its own table (engine/sglang_release.hpp): 0.5.12 is read, 0.10 is
    // none of them; TensorRT-LLM has no table.
    const Policy s0512 = policy_from_json(
        policy_with(gpu + R"(, "engine": "sglang", "engine_version": "0.5.12.post1")", kv_cost),
        "policy.json");
    CHECK(*s0512.replicas.front().engine_version == EngineVersion{0, 5, 12});
    CHECK(
        error_of(policy_with(gpu + R"(, "engine": "sglang", "engine_version": "0.10")", kv_cost)) ==
        "policy.json: replica.engine_version: expected an SGLang release as \"X.Y.Z\", 0.4 to "
        "0.5.20, found \"0.10\"");
    CHECK_THAT(
        error_of(policy_with(gpu + R"(, "engine": "trtllm", "engine_version": "0.10")", kv_cost)),
        Catch::StartsWith("policy.json: replica.engine_version: expected engine \"vllm\" or "
                          "\"sglang\""));
}

TEST_CASE("a max_regression names its figure, its bound in percent and the figure's demand",
          "[policy][regression]") {
    const auto read = [](const std::string& requirement) {
        return policy_from_json(policy_with(gpu, requirement), "policy.json").requirements.at(0);
    };
    const Requirement c = read(
        R"("kind": "max_regression", "figure": "max_concurrency", "context_tokens": 8000, "percent": 10)");
    CHECK(c.kind == RequirementKind::max_regression);
    CHECK(c.figure == CheckFigure::max_concurrency);
    CHECK(figure_of(c) == CheckFigure::max_concurrency);
    CHECK(c.context_tokens == 8000);
    CHECK(c.percent == 10.0);
    CHECK(c.name == "max_regression of max_concurrency");
    const Requirement t = read(
        R"("kind": "max_regression", "figure": "tpot", "batch": 32, "context_tokens": 8000, "percent": 2.5)");
    CHECK(t.batch == 32);
    CHECK(t.percent == 2.5);
    CHECK(read(R"("kind": "max_regression", "figure": "max_context", "percent": 0)").sequences ==
          1);
    CHECK(
        read(R"("kind": "max_regression", "figure": "kv_bytes_per_token", "percent": 0)").percent ==
        0.0);
}

TEST_CASE("a max_regression's keys are strict, figure by figure", "[policy][regression]") {
    CHECK(error_of(policy_with(gpu, R"("kind": "max_regression", "figure": "kv_bytes_per_token",
                                       "percent": 5, "context_tokens": 8000)")) ==
          "policy.json: requirements[0].context_tokens: expected a key of a max_regression "
          "requirement of kv_bytes_per_token (kind, name, figure, percent), found "
          "'context_tokens', a key of max_regression of max_concurrency and max_regression of "
          "tpot");
    CHECK_THAT(error_of(policy_with(gpu, R"("kind": "max_regression", "figure": "concurrency",
                                            "percent": 5)")),
               Catch::StartsWith("policy.json: requirements[0].figure: expected max_concurrency, "
                                 "max_context, tpot, kv_bytes_per_token or weights_per_gpu") &&
                   Catch::EndsWith("did you mean 'max_concurrency'?"));
    CHECK_THAT(
        error_of(policy_with(gpu, R"("kind": "max_regression", "figure": "tpot",
                                            "max_change_percent": 5)")),
        Catch::EndsWith("found the unknown key 'max_change_percent'; did you mean 'percent'?"));
    CHECK(error_of(policy_with(gpu, R"("kind": "max_regression", "figure": "weights_per_gpu",
                                       "percent": -1)")) ==
          "policy.json: requirements[0].percent: expected a percentage >= 0, found -1");
    CHECK_THAT(
        error_of(policy_with(gpu, R"("kind": "max_regression", "figure": "weights_per_gpu")")),
        Catch::Contains("requirements[0].percent: expected a percentage >= 0"));
    CHECK_THAT(error_of(policy_with(gpu, R"("kind": "max_regression", "figure": "tpot",
                                            "percent": 5, "batch": 8)")),
               Catch::Contains("requirements[0].context_tokens"));
}

TEST_CASE("a policy read from a file knows the line of each requirement and replica",
          "[policy][lines]") {
    TempDir dir("lines");
    const fs::path file = dir.path / "policy.json";
    std::ofstream(file) << "{\n"
                           "  \"schema\": \"kvplan-policy/1\",\n"
                           "  \"replicas\": [\n"
                           "    {\"gpu\": \"h100\"},\n"
                           "    {\"gpu\": \"h200\"}\n"
                           "  ],\n"
                           "  \"requirements\": [\n"
                           "    {\"kind\": \"max_kv_bytes_per_token\", \"KiB\": 320},\n"
                           "\n"
                           "    {\n"
                           "      \"kind\": \"max_weights_per_gpu\", \"GiB\": 40\n"
                           "    }\n"
                           "  ]\n"
                           "}\n";
    const Policy p = load_policy(file);
    CHECK(p.replicas[0].line == 4);
    CHECK(p.replicas[1].line == 5);
    CHECK(p.requirements[0].line == 8);
    CHECK(p.requirements[1].line == 10);
    // Parsed from a document alone, the lines are unknown.
    CHECK(policy_from_json(policy_with(gpu, kv_cost), "policy.json").requirements[0].line == 0);
}

TEST_CASE("a shared prefix is a key of the demands that hold sequences, at most their context",
          "[policy][keys][shared_prefix]") {
    const Policy p = policy_from_json(
        policy_with(gpu, R"("kind": "min_concurrency", "sequences": 8, "context_tokens": 8000,
                         "shared_prefix_tokens": 2048)"),
        "policy.json");
    CHECK(p.requirements.at(0).shared_prefix_tokens == 2048);
    const Policy regression =
        policy_from_json(policy_with(gpu, R"("kind": "max_regression", "figure": "max_concurrency",
                         "context_tokens": 8000, "percent": 5, "shared_prefix_tokens": 2048)"),
                         "policy.json");
    CHECK(regression.requirements.at(0).shared_prefix_tokens == 2048);
    // Past the context: refused, naming the key and the context.
    const std::string past = error_of(
        policy_with(gpu, R"("kind": "min_concurrency", "sequences": 8, "context_tokens": 8000,
                         "shared_prefix_tokens": 9000)"));
    CHECK(past.find("shared_prefix_tokens") != std::string::npos);
    CHECK(past.find("at most context_tokens, 8000") != std::string::npos);
    // A requirement that holds no sequences of a context does not take it.
    const std::string other = error_of(policy_with(
        gpu, R"("kind": "max_kv_bytes_per_token", "bytes": 327680, "shared_prefix_tokens": 2048)"));
    CHECK(other.find("shared_prefix_tokens") != std::string::npos);
    CHECK(other.find("min_concurrency") != std::string::npos);
}
