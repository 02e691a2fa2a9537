#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <kvplan/hf_config.hpp>
#include <kvplan/kv_bytes.hpp>
#include <kvplan/weights.hpp>
#include <string>

#include "support/bundled_models.hpp"

using namespace kvplan;
using namespace kvplan::testing;
namespace fs = std::filesystem;

namespace {

/// The message of loading `j` written out as `file_name` in the temporary directory.
std::string error_of(const Json& j, const std::string& file_name) {
    const fs::path file = fs::temp_directory_path() / file_name;
    {
        std::ofstream out(file);
        out << j.dump(2);
    }
    std::string message = "no error";
    try {
        (void)load_hf_config(file);
    } catch (const InvalidInput& e) {
        message = e.what();
    }
    fs::remove(file);
    return message;
}
}  // namespace

// Granite-4.0-H-Small (configs/models/granite-4.0-h-small.json): hidden 4096, 40 layers whose
// layer_types put attention on layers 5, 15, 25 and 35 and Mamba-2 on the other 36; 32 query and
// 8 KV heads of 4096 / 32 = 128; mamba_n_heads 128 x mamba_d_head 64 = 8192 = mamba_expand 2 x
// 4096; mamba_d_state 128, mamba_n_groups 1, mamba_d_conv 4; 72 experts of 768, 10 per token,
// and a shared MLP of 1536 on every layer; vocab 100,352, tied embeddings.

TEST_CASE("Granite-4.0-H-Small imports 4 attention and 36 Mamba-2 layers", "[hf_hybrid]") {
    const Model m = bundled("granite-4.0-h-small");
    CHECK(m.num_layers() == 40);
    CHECK(m.layers().layers_of_kind(CacheKind::full_attention) == 4);
    CHECK(m.layers().layers_of_kind(CacheKind::constant_state) == 36);
    for (std::uint32_t i : {5u, 15u, 25u, 35u}) CHECK(m.layer(i).kind == CacheKind::full_attention);
    CHECK(m.layer(0).kind == CacheKind::constant_state);
    CHECK(m.layer(39).kind == CacheKind::constant_state);
    CHECK(m.layer(5).kv_heads == 8);
    CHECK(m.query_head_dim() == 128);  // no head_dim field: 4096 / 32
    CHECK(m.config().tie_embeddings);
    CHECK(m.config().max_position_embeddings == 131'072);
}

TEST_CASE("Granite-4.0-H-Small's KV grows only on its attention layers", "[hf_hybrid]") {
    // 4 layers x (K + V) x 8 KV heads x 128 x 2 B (bf16) = 16,384 B per token.
    const Model m = bundled("granite-4.0-h-small");
    CHECK(kv_token(m) == 4 * 2 * 8 * 128 * 2);
    CHECK(kv_token(m) == 16'384);
    // fp8 KV halves it: 8,192 B.
    CHECK(kv_bytes_per_token(m, KvDtype::fp8_e4m3).count() == 8'192);
}

TEST_CASE("Granite-4.0-H-Small's Mamba-2 state per sequence is sized as vLLM sizes it",
          "[hf_hybrid]") {
    const Model m = bundled("granite-4.0-h-small");
    // Conv state: (d_conv 4 - 1) x (d_inner 8192 + 2 x 1 group x 128) = 3 x 8448 = 25,344 values.
    // SSM state: 128 heads x 64 x 128 = 1,048,576 values. At 2 B: 2,147,840 B per layer.
    constexpr std::uint64_t per_layer = (3 * 8'448 + 128 * 64 * 128) * 2;
    static_assert(per_layer == 2'147'840);
    CHECK(m.layer(0).state_bytes.count() == per_layer);
    // 36 Mamba layers: 77,322,240 B (73.74 MiB) per sequence, whatever its length.
    CHECK(kv_bytes_per_sequence(m, KvDtype::bf16, 0).count() == 36 * per_layer);
    CHECK(kv_bytes_per_sequence(m, KvDtype::bf16, 0).count() == 77'322'240);
    // 1,000 tokens: 16,384,000 B of KV plus the state.
    CHECK(kv_bytes_per_sequence(m, KvDtype::bf16, 1000).count() == 16'384'000 + 77'322'240);
    // Split over 2 TP ranks: 1,073,920 B of each layer's state per rank.
    CHECK(layer_state_bytes(m.layer(0), 2).count() == 1'073'920);
    // An fp32 state doubles it.
    const Model fp32 = load_bundled_model(config_dir, "granite-4.0-h-small",
                                          HfImportOptions{.state_element_bytes = 4});
    CHECK(fp32.layer(0).state_bytes.count() == 2 * per_layer);
}

TEST_CASE("Granite-4.0-H-Small's MoE and Mamba mixers are counted", "[hf_hybrid][params]") {
    const Model m = bundled("granite-4.0-h-small");
    const MoeShape& moe = m.config().moe;
    CHECK(moe.experts == 72);
    CHECK(moe.experts_per_token == 10);
    CHECK(moe.expert_intermediate_size == 768);
    CHECK(moe.shared_experts == 1);
    CHECK(moe.shared_intermediate_size == 1536);
    CHECK(moe_layer_count(m) == 40);
    // One Mamba-2 mixer: in_proj 4096 x (8192 gate + 8448 x/B/C + 128 dt) = 68,681,728; conv1d
    // 8448 x 4 + 8448 bias = 42,240; dt_bias, A_log and D 3 x 128 = 384; gated norm 8192;
    // out_proj 8192 x 4096 = 33,554,432. Sum 102,286,976; x 36 layers = 3,682,331,136.
    CHECK(m.config().extra_params == 36ULL * 102'286'976);
    // Total: embedding 100,352 x 4096 = 411,041,792 (tied, once); attention 4 x (2 x 4096^2 +
    // 2 x 4096 x 1024) = 4 x 41,943,040; mixers 3,682,331,136; per layer router 4096 x 72 =
    // 294,912, experts 72 x 3 x 4096 x 768 = 679,477,248, shared MLP 3 x 4096 x 1536 =
    // 18,874,368, two norms 8192, x 40; final norm 4096. Sum 32,207,337,984.
    constexpr std::uint64_t total = 411'041'792ULL + 4ULL * 41'943'040 + 3'682'331'136ULL +
                                    40ULL * (294'912 + 679'477'248 + 18'874'368 + 8'192) + 4'096;
    static_assert(total == 32'207'337'984ULL);
    CHECK(total_params(m) == total);
    // Active: 62 idle experts of 3 x 4096 x 768 = 9,437,184 on 40 layers:
    // 32,207,337,984 - 23,404,216,320 = 8,803,121,664.
    CHECK(active_params(m) == 8'803'121'664ULL);
}

TEST_CASE("Granite-4.0-H-Small's parameters are within 1% of IBM's figure", "[hf_hybrid][params]") {
    // tests/data/official_params.json: IBM's 32B total, 9B active.
    const Json official = read_json_file(data_dir / "official_params.json");
    const Json& entry = official.at("granite-4.0-h-small");
    const Model m = bundled("granite-4.0-h-small");
    const double stated = entry.at("params").get<double>();
    CHECK(std::abs(static_cast<double>(total_params(m)) - stated) / stated < 0.01);
    // "9B activated": 8.80B lies within one unit of the figure's last digit.
    const double stated_active = entry.at("active_params").get<double>();
    CHECK(std::abs(static_cast<double>(active_params(m)) - stated_active) < 1e9);
}

TEST_CASE("a dense Granite-4.0-H uses the shared MLP as its dense MLP", "[hf_hybrid]") {
    // num_local_experts 0 (as Granite-4.0-H-Micro): the 40 routers and 72 experts per layer go,
    // 40 x (294,912 + 679,477,248) = 27,190,886,400; the 1536-wide MLP stays.
    Json j = bundled_json("granite-4.0-h-small");
    j["num_local_experts"] = 0;
    j["num_experts_per_tok"] = 0;
    const Model m = model_from_hf_json(j, "granite-dense.json");
    CHECK(m.config().moe.experts == 0);
    CHECK(m.config().intermediate_size == 1536);
    CHECK(total_params(m) == 32'207'337'984ULL - 27'190'886'400ULL);
    CHECK(kv_token(m) == 16'384);
}

TEST_CASE("a Granite-4.0-H config missing a Mamba field is refused, naming file and field",
          "[hf_hybrid][errors]") {
    const Json good = bundled_json("granite-4.0-h-small");
    for (const char* field :
         {"mamba_d_state", "mamba_n_heads", "mamba_d_head", "mamba_n_groups", "mamba_d_conv",
          "mamba_expand", "shared_intermediate_size", "num_local_experts", "layer_types"}) {
        INFO(field);
        Json j = good;
        j.erase(field);
        const std::string e = error_of(j, "kvplan-test-granite-missing.json");
        CHECK_THAT(e, Catch::Contains("kvplan-test-granite-missing.json") &&
                          Catch::Contains(field) && Catch::Contains("missing"));
    }
}

TEST_CASE("a Granite-4.0-H config whose Mamba shapes disagree is refused", "[hf_hybrid][errors]") {
    Json j = bundled_json("granite-4.0-h-small");
    // 128 heads x 32 = 4096, not mamba_expand 2 x 4096 = 8192.
    j["mamba_d_head"] = 32;
    CHECK_THAT(error_of(j, "kvplan-test-granite-dhead.json"),
               Catch::Contains("kvplan-test-granite-dhead.json") &&
                   Catch::Contains("mamba_d_head") && Catch::Contains("8192") &&
                   Catch::Contains("4096"));
    j = bundled_json("granite-4.0-h-small");
    j["mamba_n_groups"] = 3;  // 128 heads do not split into 3 groups
    CHECK_THAT(error_of(j, "kvplan-test-granite-groups.json"),
               Catch::Contains("mamba_n_groups") && Catch::Contains("3"));
    j = bundled_json("granite-4.0-h-small");
    j["layer_types"][0] = "linear_attention";
    CHECK_THAT(error_of(j, "kvplan-test-granite-types.json"),
               Catch::Contains("layer_types[0]") && Catch::Contains("\"mamba\" or \"attention\""));
}

// AI21-Jamba-1.5-Mini (configs/models/jamba-1.5-mini.json): hidden 4096, 32 layers; attention
// where i % attn_layer_period 8 == attn_layer_offset 4 (layers 4, 12, 20, 28), Mamba-1 on the other
// 28; 32 query and 8 KV heads of 4096 / 32 = 128; mamba_expand 2 (d_inner 8192), mamba_d_state
// 16, mamba_d_conv 4, mamba_dt_rank 256; MoE where i % expert_layer_period 2 ==
// expert_layer_offset 1 (the 16 odd layers), 16 experts of 14336, 2 per token; the even layers
// have a dense MLP of 14336; vocab 65,536, untied.

TEST_CASE("Jamba-1.5-Mini imports 4 attention and 28 Mamba-1 layers", "[hf_hybrid][jamba]") {
    const Model m = bundled("jamba-1.5-mini");
    CHECK(m.num_layers() == 32);
    CHECK(m.layers().layers_of_kind(CacheKind::full_attention) == 4);
    CHECK(m.layers().layers_of_kind(CacheKind::constant_state) == 28);
    for (std::uint32_t i : {4u, 12u, 20u, 28u}) CHECK(m.layer(i).kind == CacheKind::full_attention);
    CHECK(m.layer(0).kind == CacheKind::constant_state);
    CHECK(m.layer(5).kind == CacheKind::constant_state);
    CHECK_FALSE(m.config().tie_embeddings);
    CHECK(m.config().max_position_embeddings == 262'144);
    // 4 layers x (K + V) x 8 KV heads x 128 x 2 B = 16,384 B per token.
    CHECK(kv_token(m) == 4 * 2 * 8 * 128 * 2);
}

TEST_CASE("Jamba-1.5-Mini's Mamba-1 state per sequence is sized as vLLM sizes it",
          "[hf_hybrid][jamba]") {
    const Model m = bundled("jamba-1.5-mini");
    // Conv (4 - 1) x 8192 = 24,576 values; SSM 8192 x 16 = 131,072 values; at 2 B 311,296 B.
    constexpr std::uint64_t per_layer = (3 * 8'192 + 8'192 * 16) * 2;
    static_assert(per_layer == 311'296);
    CHECK(m.layer(0).state_bytes.count() == per_layer);
    // 28 layers: 8,716,288 B per sequence; 1,000 tokens add 16,384,000 B of KV.
    CHECK(kv_bytes_per_sequence(m, KvDtype::bf16, 1000).count() == 16'384'000 + 28 * per_layer);
    // Mamba-1 splits d_inner over TP ranks: half of each layer's state on each of 2.
    CHECK(layer_state_bytes(m.layer(0), 2).count() == per_layer / 2);
}

TEST_CASE("Jamba-1.5-Mini routes on odd layers and counts its Mamba-1 mixers",
          "[hf_hybrid][jamba][params]") {
    const Model m = bundled("jamba-1.5-mini");
    CHECK(moe_layer_count(m) == 16);
    CHECK(m.config().moe.is_moe_layer(1));
    CHECK_FALSE(m.config().moe.is_moe_layer(0));
    CHECK(m.config().moe.experts == 16);
    CHECK(m.config().moe.experts_per_token == 2);
    CHECK(m.config().moe.expert_intermediate_size == 14'336);
    // One Mamba-1 mixer: in_proj 4096 x 2 x 8192 = 67,108,864; conv1d 8192 x 4 + 8192 bias =
    // 40,960; x_proj 8192 x (256 + 2 x 16) = 2,359,296; dt_proj 256 x 8192 + 8192 bias =
    // 2,105,344; A_log 8192 x 16 = 131,072; D 8192; out_proj 8192 x 4096 = 33,554,432; the dt,
    // B and C RMSNorms 256 + 16 + 16 = 288. Sum 105,308,448; x 28 = 2,948,636,544.
    CHECK(m.config().extra_params == 28ULL * 105'308'448);
    // Total: untied embedding and head 2 x 65,536 x 4096 = 536,870,912; attention 4 x 41,943,040;
    // mixers 2,948,636,544; MLP 3 x 4096 x 14336 = 176,160,768 on 16 dense layers and 16 experts
    // plus a 4096 x 16 router on 16 MoE layers; two norms of 4096 on 32 layers; final norm 4096.
    constexpr std::uint64_t mlp = 176'160'768;
    constexpr std::uint64_t total = 536'870'912ULL + 4ULL * 41'943'040 + 2'948'636'544ULL +
                                    16 * mlp + 16 * (65'536 + 16 * mlp) + 32ULL * 8'192 + 4'096;
    static_assert(total == 51'570'323'328ULL);
    CHECK(total_params(m) == total);
    // Active: 14 idle experts on 16 layers: 51,570,323,328 - 39,460,012,032 = 12,110,311,296.
    CHECK(active_params(m) == total - 14 * mlp * 16);
    CHECK(active_params(m) == 12'110'311'296ULL);
    // AI21: 52B total, 12B active (tests/data/official_params.json).
    const Json official = read_json_file(data_dir / "official_params.json");
    const double stated = official.at("jamba-1.5-mini").at("params").get<double>();
    CHECK(std::abs(static_cast<double>(total) - stated) / stated < 0.01);
    const double stated_active = official.at("jamba-1.5-mini").at("active_params").get<double>();
    CHECK(std::abs(static_cast<double>(active_params(m)) - stated_active) < 1e9);
}

TEST_CASE("a Jamba config missing a Mamba field is refused, naming file and field",
          "[hf_hybrid][jamba][errors]") {
    const Json good = bundled_json("jamba-1.5-mini");
    for (const char* field : {"mamba_d_state", "mamba_d_conv", "mamba_expand"}) {
        INFO(field);
        Json j = good;
        j.erase(field);
        CHECK_THAT(error_of(j, "kvplan-test-jamba-missing.json"),
                   Catch::Contains("kvplan-test-jamba-missing.json") && Catch::Contains(field) &&
                       Catch::Contains("missing"));
    }
    // JambaConfig's default mamba_dt_rank, "auto", is ceil(4096 / 16) = 256: the same model.
    Json j = good;
    j["mamba_dt_rank"] = "auto";
    CHECK(total_params(model_from_hf_json(j, "jamba-auto.json")) == 51'570'323'328ULL);
    j.erase("mamba_dt_rank");
    CHECK(total_params(model_from_hf_json(j, "jamba-auto.json")) == 51'570'323'328ULL);
    j = good;
    j["attn_layer_offset"] = 8;  // never reached with a period of 8
    CHECK_THAT(error_of(j, "kvplan-test-jamba-offset.json"),
               Catch::Contains("attn_layer_offset") && Catch::Contains("attn_layer_period"));
}

TEST_CASE("the recurrent (SSM) state can be wider than the conv state, as vLLM allows",
          "[hf_hybrid]") {
    // vLLM's --mamba-ssm-cache-dtype float32 keeps the SSM state in fp32 and the conv state in
    // the model's dtype (MambaStateDtypeCalculator).
    const HfImportOptions ssm_fp32{.state_element_bytes = 2, .ssm_state_element_bytes = 4};
    // Granite-4.0-H-Small: conv 25,344 values x 2 B = 50,688 B; SSM 1,048,576 x 4 B =
    // 4,194,304 B; 4,244,992 B per Mamba layer.
    const Model granite = load_bundled_model(config_dir, "granite-4.0-h-small", ssm_fp32);
    CHECK(granite.layer(0).state_bytes.count() == 50'688 + 4'194'304);
    CHECK(granite.layer(0).state_bytes.count() == 4'244'992);
    // Jamba-1.5-Mini: conv 24,576 x 2 B = 49,152 B; SSM 131,072 x 4 B = 524,288 B; 573,440 B.
    const Model jamba = load_bundled_model(config_dir, "jamba-1.5-mini", ssm_fp32);
    CHECK(jamba.layer(0).state_bytes.count() == 573'440);
    // 0 means "as the conv state": the default import.
    const Model same = load_bundled_model(config_dir, "jamba-1.5-mini",
                                          HfImportOptions{.ssm_state_element_bytes = 0});
    CHECK(same.layer(0).state_bytes.count() == 311'296);
}
