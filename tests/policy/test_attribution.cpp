// kvplan::attribute_config_changes (policy/attribution.hpp): which changed config.json fields
// moved a policy's outcomes, `kvplan check --baseline`'s attribution as a library call.

#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <kvplan/gpu_spec.hpp>
#include <kvplan/hf_config.hpp>
#include <kvplan/policy.hpp>
#include <kvplan/policy/attribution.hpp>
#include <string>

#include "support/bundled_models.hpp"

using namespace kvplan;
using namespace kvplan::testing;

namespace {

std::string slurp_file(const std::string& path) {
    std::ifstream in(path);
    return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace

TEST_CASE("each changed field is traced to the outcomes reverting it alone moves",
          "[check][attribution]") {
    // tests/data/cli/llama-3-70b-short/config.json lowers Llama-3-70B's max_position_embeddings
    // to 4,096 (line 13), below the policy's 8,000 tokens: no engine starts there. The baseline
    // here differs in that field (8,192) and in rope_theta (line 21), which no figure reads.
    const std::string file =
        std::string(KVPLAN_TEST_DATA_DIR) + "/cli/llama-3-70b-short/config.json";
    const std::string text = slurp_file(file);
    const Json now = Json::parse(text);
    Json before = now;
    before["max_position_embeddings"] = 8192;
    before["rope_theta"] = 10000.0;
    const Model model = model_from_hf_json(now, file, "llama-3-70b-short");
    const Model base = model_from_hf_json(before, "baseline.json", "llama-3-70b");
    const Policy p =
        load_policy(std::string(KVPLAN_TEST_DATA_DIR) + "/cli/policy_context_8000.json");
    const std::vector<GpuSpec> gpus{bundled_gpu("h100-sxm")};
    const CheckResult result = check_policy(p, model, gpus, &base);
    REQUIRE(result.outcomes.size() == 2);
    CHECK(result.failed == 2);

    const ConfigAttribution a = attribute_config_changes({.config = &now,
                                                          .config_text = text,
                                                          .source = file,
                                                          .model_name = "llama-3-70b-short",
                                                          .baseline = &before},
                                                         p, gpus, base, result);
    CHECK(a.fields == 2);
    CHECK_FALSE(a.too_many);
    CHECK_FALSE(a.too_many_checks);
    REQUIRE(a.changes.size() == 2);
    // In key order: max_position_embeddings, then rope_theta.
    const ConfigChange& mpe = a.changes[0];
    CHECK(mpe.path == "max_position_embeddings");
    CHECK(mpe.line == 13);
    CHECK(*mpe.before == 8192);
    CHECK(*mpe.after == 4096);
    // Reverted to 8,192 the model serves 8,000 tokens: both outcomes move.
    CHECK(mpe.moves == std::vector<bool>{true, true});
    const ConfigChange& rope = a.changes[1];
    CHECK(rope.path == "rope_theta");
    CHECK(rope.line == 21);
    CHECK_FALSE(rope.moves_any());
}

TEST_CASE("past 32 changed fields nothing is traced", "[check][attribution]") {
    // 33 new fields: more than max_changes_traced, so the baseline is taken as another model.
    const Json before = bundled_json("llama-3-70b");
    Json now = before;
    for (int i = 0; i < 33; ++i) now["extra_" + std::to_string(i)] = i;
    const Model base = bundled("llama-3-70b");
    const Policy p =
        load_policy(std::string(KVPLAN_TEST_DATA_DIR) + "/cli/policy_context_8000.json");
    const std::vector<GpuSpec> gpus{bundled_gpu("h100-sxm")};
    const CheckResult result = check_policy(p, base, gpus, &base);
    const std::string text = now.dump(2);
    const ConfigAttribution a = attribute_config_changes({.config = &now,
                                                          .config_text = text,
                                                          .source = "now.json",
                                                          .model_name = "m",
                                                          .baseline = &before},
                                                         p, gpus, base, result);
    CHECK(a.fields == 33);
    CHECK(a.too_many);
    CHECK(a.changes.empty());
}

TEST_CASE("a changed field counts the outcomes it moves", "[attribution]") {
    // Reverting it alone moves outcomes 0 and 2 of four.
    const ConfigChange c{.path = "num_key_value_heads", .moves = {true, false, true, false}};
    CHECK(c.moved() == 2);
    CHECK(c.moves_any());
    CHECK(ConfigChange{.moves = {false, false}}.moved() == 0);
}
