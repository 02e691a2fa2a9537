#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <kvplan/engine/startup.hpp>
#include <kvplan/hf_config.hpp>
#include <kvplan/kv_bytes.hpp>
#include <kvplan/presets.hpp>
#include <kvplan/weights.hpp>
#include <string>

#include "support/bundled_models.hpp"

using namespace kvplan;
using namespace kvplan::testing;
namespace fs = std::filesystem;

namespace {

std::string error_of(const fs::path& file) {
    try {
        (void)load_hf_config(file);
    } catch (const InvalidInput& e) {
        return e.what();
    }
    return "no error";
}
}  // namespace

TEST_CASE("every bundled model config imports", "[hf_config]") {
    const auto ids = bundled_model_ids(config_dir);
    // The issues asked for at least 20 popular models, then 40 with the families of 2026.
    CHECK(ids.size() >= 40);
    for (const std::string& id : ids) {
        INFO(id);
        CHECK_NOTHROW(bundled(id));
        CHECK(bundled(id).name() == id);
    }
}

TEST_CASE("the importer agrees with the presets", "[hf_config][presets]") {
    struct Pair {
        const Model* preset;
        const char* id;
    };
    using namespace presets;
    const Pair pairs[] = {{&llama_3_8b, "llama-3-8b"},
                          {&llama_3_70b, "llama-3-70b"},
                          {&llama_3_1_405b, "llama-3.1-405b"},
                          {&mistral_7b_v0_1, "mistral-7b-v0.1"},
                          {&mixtral_8x7b, "mixtral-8x7b"},
                          {&qwen2_5_72b, "qwen2.5-72b"},
                          {&gemma_2_27b, "gemma-2-27b"},
                          {&gemma_3_27b, "gemma-3-27b"},
                          {&deepseek_v3, "deepseek-v3"},
                          {&gpt_oss_120b, "gpt-oss-120b"},
                          {&falcon_7b, "falcon-7b"}};
    for (const Pair& p : pairs) {
        INFO(p.id);
        const Model m = bundled(p.id);
        const Model& pre = *p.preset;
        CHECK(m.num_layers() == pre.num_layers());
        CHECK(m.config().num_heads == pre.config().num_heads);
        CHECK(m.query_head_dim() == pre.query_head_dim());
        CHECK(m.config().hidden_size == pre.config().hidden_size);
        CHECK(m.config().vocab_size == pre.config().vocab_size);
        CHECK(m.config().max_position_embeddings == pre.config().max_position_embeddings);
        CHECK(m.config().tie_embeddings == pre.config().tie_embeddings);
        for (CacheKind k : {CacheKind::full_attention, CacheKind::sliding_window,
                            CacheKind::mla_latent, CacheKind::constant_state})
            CHECK(m.layers().layers_of_kind(k) == pre.layers().layers_of_kind(k));
        CHECK(kv_token(m) == kv_token(pre));
        // 100k tokens passes every window, so sliding layers must agree in their window too.
        CHECK(kv_bytes_per_sequence(m, KvDtype::bf16, 100'000) ==
              kv_bytes_per_sequence(pre, KvDtype::bf16, 100'000));
        // The presets carry no extra_params (gpt-oss's 36 x 64 attention sinks) and no vision
        // tower (Gemma-3's SigLIP, which the import counts apart).
        const std::uint64_t beyond = m.config().extra_params + m.config().vision_params;
        CHECK(total_params(m) - beyond == total_params(pre));
        CHECK(active_params(m) - beyond == active_params(pre));
        CHECK(vllm_rotary_table_bytes(m) == vllm_rotary_table_bytes(pre));
    }
}

TEST_CASE("KV bytes per token of imported models match hand-derived figures", "[hf_config][kv]") {
    // 2 (K, V) x layers x kv_heads x head_dim x 2 B (bf16).
    CHECK(kv_token(bundled("llama-3-8b")) == 2 * 32 * 8 * 128 * 2);    // 131,072
    CHECK(kv_token(bundled("qwen2.5-72b")) == 2 * 80 * 8 * 128 * 2);   // 327,680
    CHECK(kv_token(bundled("llama-2-7b")) == 2 * 32 * 32 * 128 * 2);   // MHA: 524,288
    CHECK(kv_token(bundled("falcon-7b")) == 2 * 32 * 1 * 64 * 2);      // multi_query: 8,192
    CHECK(kv_token(bundled("falcon-40b")) == 2 * 60 * 8 * 64 * 2);     // num_kv_heads: 122,880
    CHECK(kv_token(bundled("gpt-neox-20b")) == 2 * 44 * 64 * 96 * 2);  // 6144 / 64 = 96
    CHECK(kv_token(bundled("gpt-j-6b")) == 2 * 28 * 16 * 256 * 2);     // n_embd / n_head = 256
    CHECK(kv_token(bundled("gemma-2-9b")) == 2 * 42 * 8 * 256 * 2);    // head_dim 256, not 224
    CHECK(kv_token(bundled("phi-3-mini")) == 2 * 32 * 32 * 96 * 2);    // 3072 / 32 = 96
    CHECK(kv_token(bundled("deepseek-v2")) == 60 * (512 + 64) * 2);    // MLA latent: 69,120
    CHECK(kv_token(bundled("qwen3-30b-a3b")) == 2 * 48 * 4 * 128 * 2);
}

TEST_CASE("Qwen2.5-7B has no sliding window despite its sliding_window field",
          "[hf_config][kv][window]") {
    // use_sliding_window is false, so sliding_window 131072 means nothing (vLLM and transformers).
    const Model m = bundled("qwen2.5-7b");
    CHECK(m.layers().layers_of_kind(CacheKind::sliding_window) == 0);
    CHECK(kv_token(m) == 2 * 28 * 4 * 128 * 2);  // 57,344
    // At 131,072 tokens every layer keeps every token.
    CHECK(kv_bytes_per_sequence(m, KvDtype::bf16, 131'072).count() == 57'344ULL * 131'072);

    // Turned on, layers from max_window_layers up slide (transformers' Qwen2Config.layer_types).
    Json j = bundled_json("qwen2.5-7b");
    j["use_sliding_window"] = true;
    j["max_window_layers"] = 20;
    j["sliding_window"] = 4096;
    const Model on = model_from_hf_json(j, "qwen-sliding");
    CHECK(on.layers().layers_of_kind(CacheKind::sliding_window) == 8);
    CHECK(on.layer(19).kind == CacheKind::full_attention);
    CHECK(on.layer(20).kind == CacheKind::sliding_window);
    CHECK(on.layer(20).window == 4096);
}

TEST_CASE("windows follow each family's rule", "[hf_config][window]") {
    // Mistral-7B-v0.1: sliding_window 4096 on every layer.
    const Model mistral = bundled("mistral-7b-v0.1");
    CHECK(mistral.layers().layers_of_kind(CacheKind::sliding_window) == 32);
    CHECK(mistral.layer(0).window == 4096);
    // Mixtral: sliding_window null, so no window.
    CHECK(bundled("mixtral-8x7b").layers().layers_of_kind(CacheKind::sliding_window) == 0);
    // Phi-3-mini: 2047 on every layer.
    CHECK(bundled("phi-3-mini").layer(31).window == 2047);
    // Gemma-2-9B, no layer_types: even layers slide (window 4096), odd ones are global.
    const Model g2 = bundled("gemma-2-9b");
    CHECK(g2.layer(0).kind == CacheKind::sliding_window);
    CHECK(g2.layer(1).kind == CacheKind::full_attention);
    CHECK(g2.layers().layers_of_kind(CacheKind::sliding_window) == 21);
    // Gemma-3-27B: pattern 6 (the class default): layers 5, 11, ..., 59 global, 52 sliding of 1024.
    const Model g3 = bundled("gemma-3-27b");
    CHECK(g3.layer(5).kind == CacheKind::full_attention);
    CHECK(g3.layer(4).window == 1024);
    CHECK(g3.layers().layers_of_kind(CacheKind::full_attention) == 10);
    // gpt-oss-20b: layer_types, sliding first, window 128.
    const Model oss = bundled("gpt-oss-20b");
    CHECK(oss.layer(0).kind == CacheKind::sliding_window);
    CHECK(oss.layer(0).window == 128);
    CHECK(oss.layer(23).kind == CacheKind::full_attention);

    // Gemma-3 written with layer_types instead of the pattern gives the same model.
    Json j = bundled_json("gemma-3-27b");
    Json types = Json::array();
    for (int i = 0; i < 62; ++i)
        types.push_back((i + 1) % 6 == 0 ? "full_attention" : "sliding_attention");
    j["text_config"]["layer_types"] = types;
    const Model g3t = model_from_hf_json(j, "gemma-3 layer_types");
    CHECK(kv_bytes_per_sequence(g3t, KvDtype::bf16, 50'000) ==
          kv_bytes_per_sequence(g3, KvDtype::bf16, 50'000));

    // vLLM's rope tables (models/gemma3.py): the global layers' linear x 8 over 131,072 x 8 =
    // 1,048,576 positions (LinearScalingRotaryEmbedding._compute_cos_sin_cache), and the sliding
    // layers' own unscaled 131,072 (rope_local_base_freq), x head_dim 128 x 2 B: 268,435,456 +
    // 33,554,432 = 301,989,888 B, though the context limit stays 131,072.
    CHECK(g3.config().rotary_positions == 1'048'576);
    CHECK(g3.config().local_rotary_positions == 131'072);
    CHECK(context_limit(g3.config()).tokens == 131'072);
    CHECK(vllm_rotary_table_bytes(g3).count() == 301'989'888ULL);
    // The same rope under the newer rope_parameters, keyed by layer type.
    Json v5 = bundled_json("gemma-3-27b");
    v5["text_config"].erase("rope_scaling");
    v5["text_config"]["rope_parameters"] = {
        {"full_attention", {{"rope_type", "linear"}, {"factor", 8.0}, {"rope_theta", 1e6}}},
        {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 1e4}}}};
    CHECK(model_from_hf_json(v5, "gemma-3 rope_parameters").config().rotary_positions == 1'048'576);
    // Unscaled (Gemma-3-1B's null rope_scaling, 32,768 positions): two tables of one size, as the
    // sliding layers' base frequency differs: 2 x 32,768 x 128 x 2 B = 16 MiB.
    Json g1 = bundled_json("gemma-3-27b");
    g1["text_config"]["rope_scaling"] = nullptr;
    g1["text_config"]["max_position_embeddings"] = 32'768;
    const Model g3_unscaled = model_from_hf_json(g1, "gemma-3 unscaled");
    CHECK(g3_unscaled.config().rotary_positions == 32'768);
    CHECK(vllm_rotary_table_bytes(g3_unscaled) == 16 * MiB);

    // use_sliding_window false turns a Mistral window off.
    Json m = bundled_json("mistral-7b-v0.1");
    m["use_sliding_window"] = false;
    CHECK(model_from_hf_json(m, "m").layers().layers_of_kind(CacheKind::sliding_window) == 0);
}

TEST_CASE("Qwen3-Next's linear-attention layers hold a fixed state", "[hf_config][hybrid]") {
    // full_attention_interval 4: layers 3, 7, ..., 47 are full attention (12), 36 are Gated
    // DeltaNet. Full layers: 2 x 12 x 2 KV heads x 256 x 2 B = 24,576 B per token.
    const Model m = bundled("qwen3-next-80b-a3b");
    CHECK(m.layers().layers_of_kind(CacheKind::full_attention) == 12);
    CHECK(m.layers().layers_of_kind(CacheKind::constant_state) == 36);
    CHECK(m.layer(3).kind == CacheKind::full_attention);
    CHECK(kv_token(m) == 24'576);
    // State per linear layer: conv (4 - 1) x (2 x 16 x 128 + 32 x 128) = 24,576 values plus the
    // recurrent 32 x 128 x 128 = 524,288 values, at 2 B: 1,097,728 B per sequence.
    CHECK(m.layer(0).state_bytes.count() == (24'576 + 524'288) * 2);
    // A sequence of 1,000 tokens: 24,576,000 B of KV plus 36 x 1,097,728 B of state.
    CHECK(kv_bytes_per_sequence(m, KvDtype::bf16, 1000).count() ==
          24'576'000ULL + 36ULL * 1'097'728);
    // fp32 state doubles it.
    const Model fp32 = load_bundled_model(config_dir, "qwen3-next-80b-a3b",
                                          HfImportOptions{.state_element_bytes = 4});
    CHECK(fp32.layer(0).state_bytes.count() == (24'576 + 524'288) * 4);
}

TEST_CASE("MoE fields map to the layers that route", "[hf_config][moe]") {
    // DeepSeek-V2: first_k_dense_replace 1, so 59 of 60 layers are MoE, 160 experts, 6 per token,
    // 2 shared experts of moe_intermediate_size 1536.
    const Model v2 = bundled("deepseek-v2");
    CHECK(moe_layer_count(v2) == 59);
    CHECK(v2.config().moe.experts == 160);
    CHECK(v2.config().moe.experts_per_token == 6);
    CHECK(v2.config().moe.shared_experts == 2);
    CHECK_FALSE(v2.config().moe.router_bias);                // topk_method group_limited_greedy
    CHECK(bundled("deepseek-v3").config().moe.router_bias);  // noaux_tc
    // Qwen3-30B-A3B: decoder_sparse_step 1, no mlp_only_layers: all 48 layers, 128 experts of 768.
    const Model q = bundled("qwen3-30b-a3b");
    CHECK(moe_layer_count(q) == 48);
    CHECK(params_per_expert(q) == 3 * 2048 * 768);
    // decoder_sparse_step 2: layer i routes when (i + 1) % 2 == 0, so 24 layers; mlp_only_layers
    // [0, 1] then leaves layer 1 dense too: 23.
    Json j = bundled_json("qwen3-30b-a3b");
    j["decoder_sparse_step"] = 2;
    CHECK(moe_layer_count(model_from_hf_json(j, "q")) == 24);
    j["mlp_only_layers"] = {0, 1};
    CHECK(moe_layer_count(model_from_hf_json(j, "q")) == 23);
    // mlp_only_layers that are not a leading run cannot be represented: refused, not guessed.
    j["mlp_only_layers"] = {3};
    CHECK_THROWS_WITH(model_from_hf_json(j, "q"),
                      Catch::Contains("mlp_only_layers") && Catch::Contains("leading run"));
    // gpt-oss: 128 experts, 4 per token (experts_per_token and num_experts_per_tok agree).
    CHECK(bundled("gpt-oss-120b").config().moe.experts_per_token == 4);
    Json oss = bundled_json("gpt-oss-20b");
    oss["experts_per_token"] = 2;
    CHECK_THROWS_WITH(model_from_hf_json(oss, "oss"),
                      Catch::Contains("experts_per_token") && Catch::Contains("found 2"));
}

TEST_CASE("Falcon and GPT-J field names are read", "[hf_config][aliases]") {
    // Falcon-7B written with RW-era names: n_head, n_layer; multi_query absent means true.
    Json j = bundled_json("falcon-7b");
    j["n_head"] = j["num_attention_heads"];
    j["n_layer"] = j["num_hidden_layers"];
    j.erase("num_attention_heads");
    j.erase("num_hidden_layers");
    j.erase("multi_query");
    const Model m = model_from_hf_json(j, "falcon-rw");
    CHECK(kv_token(m) == kv_token(bundled("falcon-7b")));
    CHECK(total_params(m) == total_params(bundled("falcon-7b")));
    // multi_query false: MHA, 71 KV heads.
    j["multi_query"] = false;
    CHECK(kv_token(model_from_hf_json(j, "falcon-mha")) == 2 * 32 * 71 * 64 * 2);
    // GPT-J: n_inner null means 4 x n_embd.
    CHECK(bundled("gpt-j-6b").config().intermediate_size == 4 * 4096);
}

TEST_CASE("unknown extra fields are ignored", "[hf_config]") {
    Json j = bundled_json("llama-3-8b");
    j["some_future_field"] = {{"nested", true}};
    j["quantization_config"] = {{"quant_method", "awq"}};
    const Model m = model_from_hf_json(j, "llama with extras");
    CHECK(kv_token(m) == 131'072);
    CHECK(total_params(m) == 8'030'261'248ULL);
}

TEST_CASE("a model folder holding config.json loads and is named after the folder",
          "[hf_config][files]") {
    const fs::path dir = fs::temp_directory_path() / "kvplan-test-Meta-Llama-3-8B";
    fs::create_directories(dir);
    fs::copy_file(config_dir / "models" / "llama-3-8b.json", dir / "config.json",
                  fs::copy_options::overwrite_existing);
    const Model m = load_hf_config(dir);
    CHECK(m.name() == "kvplan-test-Meta-Llama-3-8B");
    CHECK(kv_token(m) == 131'072);
    CHECK(resolve_model(config_dir, (dir / "config.json").string()).name() ==
          "kvplan-test-Meta-Llama-3-8B");
    fs::remove_all(dir);
}

TEST_CASE("bundled ids are listed and found case-insensitively", "[hf_config][files]") {
    const auto ids = bundled_model_ids(config_dir);
    CHECK(std::is_sorted(ids.begin(), ids.end()));
    CHECK(std::find(ids.begin(), ids.end(), "llama-3-70b") != ids.end());
    CHECK(find_bundled_model(config_dir, "Llama-3-70B").has_value());
    CHECK(find_bundled_model(config_dir, "LLAMA-3.1-405B")->filename() == "llama-3.1-405b.json");
    CHECK_FALSE(find_bundled_model(config_dir, "llama-9-1t").has_value());
    CHECK(resolve_model(config_dir, "GPT-OSS-120B").name() == "gpt-oss-120b");
    // The configs/models folder itself works as the directory too.
    CHECK(find_bundled_model(config_dir / "models", "mixtral-8x7b").has_value());
    CHECK_THROWS_WITH(load_bundled_model(config_dir, "llama-9-1t"),
                      Catch::Contains("llama-9-1t") && Catch::Contains("llama-3-70b") &&
                          Catch::Contains("expected a bundled model id"));
}

TEST_CASE("parameter counts are within 1% of the official figures", "[hf_config][params]") {
    // tests/data/official_params.json: id -> official total (and active) parameters, with sources.
    const Json official = read_json_file(data_dir / "official_params.json");
    std::size_t checked = 0;
    for (const auto& [id, entry] : official.items()) {
        INFO(id);
        REQUIRE(find_bundled_model(config_dir, id).has_value());
        const Model m = bundled(id);
        const double ours = static_cast<double>(total_params(m));
        double stated = entry.at("params").get<double>();
        if (id == "gemma-3-27b") {
            // The 27.4B figure includes the SigLIP vision tower (417M) and the projector, which
            // the import counts apart (vision_params); without them the language model is
            // within 1% of the report's text-only figure, embedding 1,416M + non-embedding
            // 25,600M.
            const double text = ours - static_cast<double>(m.config().vision_params);
            const double text_only = entry.at("params_text_only").get<double>();
            CHECK(std::abs(text - text_only) / text_only < 0.01);
        } else if (id == "falcon-7b" || id == "falcon-40b") {
            // TII states only the size class ("7B", "40B"), not a count. The exact counts of the
            // published shapes, tied embedding once (hand-derived per layer: Falcon-7B
            // 4544 x 4672 fused QKV + 4544^2 dense + 2 x 4544 x 18176 MLP + 2 x 4544 LayerNorm =
            // 207,070,080, x 32 + 65,024 x 4544 + 9,088; Falcon-40B 8192 x 9216 + 8192^2 +
            // 2 x 8192 x 32768 + 4 x 8192 = 679,510,016, x 60 + 65,024 x 8192 + 16,384).
            CHECK(entry.at("counts").get<std::string>().find("nominal") != std::string::npos);
            stated = id == "falcon-7b" ? 207'070'080.0 * 32 + 65'024.0 * 4544 + 9'088
                                       : 679'510'016.0 * 60 + 65'024.0 * 8192 + 16'384;
        }
        CHECK(std::abs(ours - stated) / stated < 0.01);
        ++checked;

        // Active parameters, where stated. Vendors round (Mixtral "12.9B") or truncate
        // (DeepSeek-V3 "37B" for 37.55B, Qwen3-30B-A3B "3.3B" for 3.35B): the count must lie
        // within one unit of the figure's last digit. gpt-oss counts the unembedding but not the
        // input embedding lookup.
        if (entry.at("active_params").is_number()) {
            // A vision tower is never counted as active: the figures are the language model's.
            double active = static_cast<double>(active_params(m) - m.config().vision_params);
            if (id.rfind("gpt-oss", 0) == 0)
                active -= static_cast<double>(count_params(m).embedding);
            // GLM-4.5's figures leave out the embedding and the LM head.
            if (entry.at("counts").get<std::string>().find("EXCLUDES both embedding") !=
                std::string::npos)
                active -= static_cast<double>(count_params(m).embedding + count_params(m).lm_head);
            const double stated_active = entry.at("active_params").get<double>();
            double unit = 1e9;
            while (std::fmod(stated_active, unit * 10) == 0) unit *= 10;
            while (std::fmod(stated_active, unit) != 0) unit /= 10;
            CHECK(std::abs(active - stated_active) < unit);
        }
    }
    CHECK(checked >= 40);
}

TEST_CASE("exact parameter counts of imported models", "[hf_config][params]") {
    // Hand-derived, see test_weights.cpp for the per-layer sums.
    CHECK(total_params(bundled("llama-3-8b")) == 8'030'261'248ULL);
    CHECK(total_params(bundled("llama-3-70b")) == 70'553'706'496ULL);
    // GPT-NeoX-20B, every bias and LayerNorm: per layer QKV 3 x 6144^2 + 3 x 6144, dense 6144^2 +
    // 6144, MLP 2 x 6144 x 24576 + 24576 + 6144, two LayerNorms 4 x 6144 = 453,064,704; x 44 +
    // 2 x 50,432 x 6,144 + 12,288 = 20,554,567,680 (the published figure).
    CHECK(total_params(bundled("gpt-neox-20b")) == 20'554'567'680ULL);
    // gpt-oss-120b with its 36 x 64 attention sinks: 116,829,156,672 (OpenAI: 116.83B).
    CHECK(total_params(bundled("gpt-oss-120b")) == 116'829'156'672ULL);
    CHECK(bundled("gpt-oss-120b").config().extra_params == 36 * 64);
}

TEST_CASE("each kind of bad input gets a clear error", "[hf_config][errors]") {
    const fs::path bad = data_dir / "bad";
    // Not JSON: the file, and the line and column of the error.
    const std::string not_json = error_of(bad / "not_json.json");
    CHECK_THAT(not_json, Catch::Contains("not_json.json") &&
                             Catch::Contains("expected valid JSON") &&
                             Catch::Contains("line 3, column"));
    CHECK_THAT(error_of(bad / "not_an_object.json"),
               Catch::Contains("expected a JSON object") && Catch::Contains("an array of 2"));
    // A missing required field.
    CHECK_THAT(error_of(bad / "missing_field.json"),
               Catch::Contains("missing_field.json: hidden_size: expected a positive integer") &&
                   Catch::Contains("found nothing (the field is missing)"));
    // A wrong type.
    CHECK_THAT(error_of(bad / "wrong_type.json"),
               Catch::Contains("num_key_value_heads: expected a positive integer") &&
                   Catch::Contains("found the string \"8\""));
    // Zero and negative sizes.
    CHECK_THAT(error_of(bad / "zero_size.json"),
               Catch::Contains("intermediate_size: expected a positive integer") &&
                   Catch::EndsWith("found 0"));
    CHECK_THAT(error_of(bad / "negative_size.json"),
               Catch::Contains("num_hidden_layers: expected a positive integer (at most 512)") &&
                   Catch::EndsWith("found -32"));
    // An architecture the importer cannot map.
    CHECK_THAT(error_of(bad / "unknown_architecture.json"),
               Catch::Contains("model_type: expected a supported model_type (llama, mistral") &&
                   Catch::Contains("found \"bert\""));
    // A nested field is named by its JSON path.
    CHECK_THAT(error_of(bad / "nested_kv_heads.json"),
               Catch::Contains("text_config.num_key_value_heads: expected a divisor of the 32 "
                               "attention heads, found 5"));
    CHECK_THAT(error_of(bad / "layer_types_length.json"),
               Catch::Contains("layer_types: expected one entry per layer (4), found 3 entries"));
    // No silent default where the answer depends on it.
    CHECK_THAT(error_of(bad / "mistral_no_window.json"),
               Catch::Contains("sliding_window: expected a window in tokens, or null"));
    // A missing file.
    CHECK_THAT(error_of(bad / "no_such_file.json"),
               Catch::Contains("no_such_file.json: file: expected an existing JSON file"));
    // Parsed JSON with a source name for messages.
    CHECK_THROWS_WITH(model_from_hf_json(Json::parse(R"({"model_type": "llama"})"), "request 7"),
                      Catch::StartsWith("request 7: num_hidden_layers: expected"));
}

TEST_CASE("the checkpoint's own weight format is read from the config", "[hf_config][weights]") {
    // gpt-oss: quant_method mxfp4 for the experts, bf16 elsewhere.
    const auto oss = checkpoint_weight_options(bundled_json("gpt-oss-120b"), "gpt-oss-120b");
    REQUIRE(oss.has_value());
    CHECK(oss->format == WeightFormat::bf16);
    CHECK(oss->expert_format == WeightFormat::mxfp4);
    // DeepSeek-V3 ships fp8; Llama-3-8B bf16; GPT-NeoX-20B float16.
    CHECK(checkpoint_weight_options(bundled_json("deepseek-v3"), "v3")->format ==
          WeightFormat::fp8);
    CHECK(checkpoint_weight_options(bundled_json("llama-3-8b"), "l")->format == WeightFormat::bf16);
    CHECK(checkpoint_weight_options(bundled_json("gpt-neox-20b"), "n")->format ==
          WeightFormat::fp16);
    // AWQ at 4 bits, group 128: int4; at 3 bits: not modelled, so no answer rather than a wrong
    // one.
    Json awq = bundled_json("llama-3-8b");
    awq["quantization_config"] = {{"quant_method", "awq"}, {"bits", 4}, {"group_size", 128}};
    CHECK(checkpoint_weight_options(awq, "awq")->format == WeightFormat::int4);
    awq["quantization_config"]["bits"] = 3;
    CHECK_FALSE(checkpoint_weight_options(awq, "awq3").has_value());
    // gpt-oss-120b as published: 36 x 128 experts at 13,236,480 B (see test_weights.cpp) plus the
    // rest in bf16.
    const Model m = bundled("gpt-oss-120b");
    const WeightBytes wb = weight_bytes(m, *oss);
    CHECK(wb.routed_experts.count() == 36ULL * 128 * 13'236'480);
    CHECK((wb.total() - wb.routed_experts).count() ==
          2 * (total_params(m) - count_params(m).routed_experts));
}
