// Input files at the edges: figures that parse as JSON numbers but overflow once scaled are
// refused with an error naming the field, never turned into an infinite rate.

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <kvplan/gpu_spec.hpp>
#include <kvplan/hf_config.hpp>
#include <string>

using namespace kvplan;

namespace {

/// The bundled H100 SXM file with `key` (a JSON pointer) set to `value`.
Json h100_with(const std::string& pointer, double value) {
    std::ifstream in(std::filesystem::path(KVPLAN_CONFIG_DIR) / "gpus" / "h100-sxm.json");
    Json doc = Json::parse(in);
    doc[Json::json_pointer(pointer)] = value;
    return doc;
}

std::string error_of(const Json& doc) {
    try {
        (void)gpu_spec_from_json(doc, "h100.json");
    } catch (const InvalidInput& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace

TEST_CASE("a GPU rate that overflows a double in base units is refused", "[extremes][gpu_spec]") {
    // 1e300 TB/s is 1e312 B/s, past the largest double (1.8e308): the bandwidth would be infinite
    // and every decode step zero seconds. Likewise 1e300 TFLOP/s and 1e300 GB/s links.
    CHECK(error_of(h100_with("/memory_bandwidth/TB_per_s", 1e300)) ==
          "h100.json: memory_bandwidth.TB_per_s: expected a figure below 1.8e308 in base units, "
          "found 1e+300 TB/s");
    CHECK_THROWS_AS(gpu_spec_from_json(h100_with("/dense_tflops/bf16", 1e300), "h100.json"),
                    InvalidInput);
    CHECK_THROWS_AS(
        gpu_spec_from_json(h100_with("/scale_up/GB_per_s_per_direction", 1e300), "h100.json"),
        InvalidInput);
    CHECK_THROWS_AS(
        gpu_spec_from_json(h100_with("/pcie/GB_per_s_per_direction", 1e300), "h100.json"),
        InvalidInput);
    // Large but finite in base units is a figure like any other: 1e290 TB/s = 1e302 B/s.
    CHECK(gpu_spec_from_json(h100_with("/memory_bandwidth/TB_per_s", 1e290), "h100.json")
              .spec.memory_bandwidth.in(TB_per_s) == 1e290);
}

TEST_CASE("an MLA query head dimension past 2^32 - 1 is refused, not wrapped",
          "[extremes][hf_config]") {
    // qk_nope_head_dim 4,294,967,295 + qk_rope_head_dim 1 = 2^32: each field fits 32 bits, the
    // sum used to wrap to a head_dim of 0 (and the model then took hidden / heads = 56 instead).
    std::ifstream in(std::filesystem::path(KVPLAN_CONFIG_DIR) / "models" / "deepseek-v3.json");
    Json doc = Json::parse(in);
    doc["qk_nope_head_dim"] = 4'294'967'295ULL;
    doc["qk_rope_head_dim"] = 1;
    try {
        (void)model_from_hf_json(doc, "deepseek-v3.json");
        FAIL("imported");
    } catch (const InvalidInput& e) {
        CHECK(std::string(e.what()) ==
              "deepseek-v3.json: qk_rope_head_dim: expected qk_nope_head_dim + qk_rope_head_dim at "
              "most 4294967295, found 4294967296");
    }
    // At the limit it imports: 4,294,967,294 + 1.
    doc["qk_nope_head_dim"] = 4'294'967'294ULL;
    CHECK(model_from_hf_json(doc, "deepseek-v3.json").config().head_dim == 4'294'967'295u);
}
