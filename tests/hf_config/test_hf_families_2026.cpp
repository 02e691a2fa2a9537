// The families of late 2026 (configs/models/README.md): Qwen3.5, GLM-5, Kimi-K2.5, MiniMax-M2,
// MiMo-V2-Flash, Nemotron-3 with layers_block_type, Llama-3.3-Nemotron-Super (DeciLM), Gemma 4,
// DeepSeek-V4, MiniMax-M3 and Kimi-K3. Per family: the KV bytes per token and per sequence (bf16
// KV, derived by hand from the model code named in each case) and the parameter count.
//
// Compiled apart from test_hf_families.cpp, in the same program.

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <iterator>
#include <kvplan/engine/vllm.hpp>
#include <kvplan/engine/vllm_backend.hpp>
#include <kvplan/hf_config.hpp>
#include <kvplan/hf_config/deci.hpp>
#include <kvplan/kv_bytes.hpp>
#include <kvplan/plan/speculation.hpp>
#include <kvplan/weights.hpp>
#include <string>

#include "support/bundled_models.hpp"

using namespace kvplan;
using namespace kvplan::testing;

namespace {

std::uint64_t sequence_bytes(const Model& m, std::uint64_t tokens) {
    return kv_bytes_per_sequence(m, KvDtype::bf16, tokens).count();
}

/// The message of importing `j`, or "no error".
std::string import_error(const Json& j) {
    try {
        (void)model_from_hf_json(j, "kvplan-test.json");
    } catch (const InvalidInput& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace

TEST_CASE("the bundled configs number at least 70 and all import", "[hf_families_2026]") {
    const auto ids = bundled_model_ids(config_dir);
    // Issue 27 asked for at least 70 bundled models.
    CHECK(ids.size() >= 70);
    for (const char* id : {"qwen3.5-27b",
                           "qwen3.5-35b-a3b",
                           "qwen3.5-122b-a10b",
                           "qwen3.5-397b-a17b",
                           "qwen3.6-35b-a3b",
                           "glm-5",
                           "glm-5.1",
                           "glm-5.2",
                           "kimi-k2.5",
                           "minimax-m2.5",
                           "minimax-m2.7",
                           "mimo-v2-flash",
                           "mimo-7b-base",
                           "nemotron-3.5-lightning-30b-a3b",
                           "nemotron-3-ultra-550b-a55b",
                           "llama-3.3-nemotron-super-49b-v1",
                           "llama-3.3-70b-instruct",
                           "deepseek-r1",
                           "qwen3-coder-480b-a35b-instruct",
                           "gemma-4-26b-a4b"}) {
        INFO(id);
        CHECK(std::find(ids.begin(), ids.end(), id) != ids.end());
    }
}

// Every bundled config, its KV bytes per token in bf16 derived by hand from its fields and its
// family's cache rule. Full attention, sliding and chunked layers: 2 (K, V) x layers x kv_heads x
// head_dim x 2 B, head_dim = hidden / heads where the file gives none (vLLM's Attention layers;
// a window caps a sequence, not a token). MLA: layers x (kv_lora_rank 512 + qk_rope_head_dim 64)
// x 2 B, plus the V3.2 indexer key of 128 fp8 values and a 4 B scale (DeepseekV32IndexerCache).
// MiniMax-M3's sparse layers add their indexer key of 128 bf16 values (MiniMaxM3IndexerCache).
// Recurrent layers (Mamba, Gated DeltaNet, KDA) and shared-KV layers add nothing per token.
// A config added without a row here fails the test.
TEST_CASE("every bundled config's KV bytes per token, derived by hand", "[hf_families_2026][kv]") {
    struct Row {
        const char* id;
        std::uint64_t bytes;
    };
    constexpr std::uint64_t mla = 61 * 576 * 2;  // DeepSeek-V3's 61 latent layers: 70,272
    const Row rows[] = {
        {"deepseek-r1", mla},
        {"deepseek-v2", 60 * 576 * 2},
        {"deepseek-v3", mla},
        {"deepseek-v3.2", 61 * (1'152 + 132)},
        // 21 (Flash) / 30 (Pro) CSA layers of one (1,024 + 132) B entry per 4 tokens = 289 B,
        // 20 / 31 HCA layers of 1,024 B per 128 tokens = 8 B, window-only layers nothing.
        {"deepseek-v4-flash", 21 * 289 + 20 * 8},
        {"deepseek-v4-pro", 30 * 289 + 31 * 8},
        {"falcon-40b", 2 * 60 * 8 * 64 * 2},
        {"falcon-7b", 2 * 32 * 1 * 64 * 2},  // multi_query
        {"falcon-mamba-7b", 0},
        {"gemma-2-27b", 2 * 46 * 16 * 128 * 2},
        {"gemma-2-9b", 2 * 42 * 8 * 256 * 2},
        {"gemma-3-27b", 2 * 62 * 16 * 128 * 2},
        {"gemma-3n-e4b", 2 * (35 - 15) * 2 * 256 * 2},  // the last 15 layers share KV
        // 25 sliding layers of 8 heads of 256, 5 full of 2 heads of 512 (K = V, both cached).
        {"gemma-4-26b-a4b", 2 * 25 * 8 * 256 * 2 + 2 * 5 * 2 * 512 * 2},
        {"glm-4.5-air", 2 * 46 * 8 * 128 * 2},
        {"glm-5", 78 * (1'152 + 132)},
        {"glm-5.1", 78 * (1'152 + 132)},
        {"glm-5.2", 78 * 1'152 + 21 * 132},  // 21 layers with their own indexer
        {"gpt-j-6b", 2 * 28 * 16 * 256 * 2},
        {"gpt-neox-20b", 2 * 44 * 64 * 96 * 2},
        {"gpt-oss-120b", 2 * 36 * 8 * 64 * 2},
        {"gpt-oss-20b", 2 * 24 * 8 * 64 * 2},
        {"granite-4.0-h-small", 2 * 4 * 8 * 128 * 2},  // 4 "attention" in layer_types
        {"jamba-1.5-mini", 2 * 4 * 8 * 128 * 2},       // every 8th of 32 from layer 4
        {"kimi-k2-instruct", mla},
        {"kimi-k2.5", mla},
        {"kimi-k3", 24 * 576 * 2},  // 24 MLA layers; the 69 KDA layers hold a fixed state
        {"llama-2-70b", 2 * 80 * 8 * 128 * 2},
        {"llama-2-7b", 2 * 32 * 32 * 128 * 2},
        {"llama-3-70b", 2 * 80 * 8 * 128 * 2},
        {"llama-3-8b", 2 * 32 * 8 * 128 * 2},
        {"llama-3.1-405b", 2 * 126 * 8 * 128 * 2},
        {"llama-3.1-70b", 2 * 80 * 8 * 128 * 2},
        {"llama-3.1-8b", 2 * 32 * 8 * 128 * 2},
        {"llama-3.3-70b-instruct", 2 * 80 * 8 * 128 * 2},
        {"llama-3.3-nemotron-super-49b-v1", 2 * 49 * 8 * 128 * 2},  // 31 of 80 blocks no_op
        {"llama-4-maverick-17b-128e-instruct", 2 * 48 * 8 * 128 * 2},
        {"llama-4-scout-17b-16e-instruct", 2 * 48 * 8 * 128 * 2},
        {"mamba-codestral-7b", 0},
        {"mimo-7b-base", 2 * 36 * 8 * 128 * 2},
        // K 192 + V 128 = 320 values a head: 9 full layers of 4 heads, 39 sliding of 8.
        {"mimo-v2-flash", 9 * 4 * 320 * 2 + 39 * 8 * 320 * 2},
        {"minimax-m2.5", 2 * 62 * 8 * 128 * 2},
        {"minimax-m2.7", 2 * 62 * 8 * 128 * 2},
        {"minimax-m3", 2 * 60 * 4 * 128 * 2 + 57 * 128 * 2},  // 57 sparse layers of 60
        {"mistral-7b-v0.1", 2 * 32 * 8 * 128 * 2},
        {"mixtral-8x22b", 2 * 56 * 8 * 128 * 2},
        {"mixtral-8x7b", 2 * 32 * 8 * 128 * 2},
        {"nemotron-3-nano-30b-a3b", 2 * 6 * 2 * 128 * 2},  // 6 "*" in the pattern
        {"nemotron-3-ultra-550b-a55b", 2 * 12 * 2 * 128 * 2},
        {"nemotron-3.5-lightning-30b-a3b", 2 * 6 * 2 * 128 * 2},
        {"nemotron-h-56b-base-8k", 2 * 10 * 8 * 128 * 2},  // 8,192 / 64 = 128
        {"phi-3-mini", 2 * 32 * 32 * 96 * 2},
        {"qwen2.5-72b", 2 * 80 * 8 * 128 * 2},
        {"qwen2.5-7b", 2 * 28 * 4 * 128 * 2},
        {"qwen2.5-vl-7b-instruct", 2 * 28 * 4 * 128 * 2},
        {"qwen3-0.6b", 2 * 28 * 8 * 128 * 2},
        {"qwen3-1.7b", 2 * 28 * 8 * 128 * 2},
        {"qwen3-235b-a22b", 2 * 94 * 4 * 128 * 2},
        {"qwen3-30b-a3b", 2 * 48 * 4 * 128 * 2},
        {"qwen3-32b", 2 * 64 * 8 * 128 * 2},
        {"qwen3-8b", 2 * 36 * 8 * 128 * 2},
        {"qwen3-coder-480b-a35b-instruct", 2 * 62 * 8 * 128 * 2},
        // Qwen3-Next and Qwen3.5: every 4th layer full attention, the rest Gated DeltaNet.
        {"qwen3-next-80b-a3b", 2 * 12 * 2 * 256 * 2},
        {"qwen3-vl-235b-a22b-instruct", 2 * 94 * 4 * 128 * 2},
        {"qwen3-vl-2b-instruct", 2 * 28 * 8 * 128 * 2},
        {"qwen3-vl-30b-a3b-instruct", 2 * 48 * 4 * 128 * 2},
        {"qwen3-vl-32b-instruct", 2 * 64 * 8 * 128 * 2},
        {"qwen3-vl-32b-thinking", 2 * 64 * 8 * 128 * 2},
        {"qwen3-vl-4b-instruct", 2 * 36 * 8 * 128 * 2},
        {"qwen3-vl-8b-instruct", 2 * 36 * 8 * 128 * 2},
        {"qwen3.5-122b-a10b", 2 * 12 * 2 * 256 * 2},
        {"qwen3.5-27b", 2 * 16 * 4 * 256 * 2},
        {"qwen3.5-35b-a3b", 2 * 10 * 2 * 256 * 2},
        {"qwen3.5-397b-a17b", 2 * 15 * 2 * 256 * 2},
        {"qwen3.6-35b-a3b", 2 * 10 * 2 * 256 * 2},  // Qwen3.5-35B-A3B's shapes
    };
    const auto ids = bundled_model_ids(config_dir);
    CHECK(ids.size() == std::size(rows));
    for (const std::string& id : ids) {
        INFO(id);
        const Row* row = std::find_if(std::begin(rows), std::end(rows),
                                      [&](const Row& r) { return id == r.id; });
        REQUIRE(row != std::end(rows));
        CHECK(kv_token(bundled(id)) == row->bytes);
    }
}

namespace {

// Parameters of the plain decoders, as vLLM's llama.py, qwen2.py and qwen3.py build them: per layer
// q h x heads x head_dim, k and v h x kv x head_dim each, o back to h, QKV biases (Qwen2) and
// per-head q/k norms (Qwen3) where the family has them, a gated MLP 3 x h x inter, two norms;
// the final norm; the embedding, and the LM head unless tied.
constexpr std::uint64_t decoder(std::uint64_t h, std::uint64_t layers, std::uint64_t heads,
                                std::uint64_t kv, std::uint64_t head_dim, std::uint64_t inter,
                                std::uint64_t vocab, bool tied, bool qkv_bias, bool qk_norm) {
    const std::uint64_t q = heads * head_dim, k = kv * head_dim;
    const std::uint64_t attention =
        2 * h * q + 2 * h * k + (qkv_bias ? q + 2 * k : 0) + (qk_norm ? 2 * head_dim : 0);
    return layers * (attention + 3 * h * inter + 2 * h) + h + vocab * h * (tied ? 1 : 2);
}

// The same with a MoE block on every layer (mixtral.py, qwen3_moe.py): a router h x experts and
// the experts' 3 x h x expert_inter, no shared expert.
constexpr std::uint64_t moe_decoder(std::uint64_t h, std::uint64_t layers, std::uint64_t heads,
                                    std::uint64_t kv, std::uint64_t head_dim, std::uint64_t experts,
                                    std::uint64_t expert_inter, std::uint64_t vocab, bool qk_norm) {
    return decoder(h, layers, heads, kv, head_dim, 0, vocab, false, false, qk_norm) +
           layers * (h * experts + experts * 3 * h * expert_inter);
}

// Qwen3-VL's vision tower (qwen3_vl.py, Qwen3_VisionTransformer), width v, MLP vi: per block the
// fused qkv 3v x v and proj v x v with biases, two LayerNorms, fc1 and fc2 with biases; the patch
// Conv3d 3 x 2 x 16 x 16 x v with bias, the position table pos x v; the merger (LayerNorm 2v,
// 4v x 4v and 4v x out with biases) and per deepstack entry another merger with a 4v LayerNorm.
constexpr std::uint64_t qwen3_vl_tower(std::uint64_t v, std::uint64_t vi, std::uint64_t depth,
                                       std::uint64_t out, std::uint64_t deepstack) {
    const std::uint64_t block = 4 * v * v + 4 * v + 2 * v * vi + vi + v + 4 * v;
    const std::uint64_t merger = 16 * v * v + 4 * v + 4 * v * out + out;
    return depth * block + 3 * 2 * 16 * 16 * v + v + 2'304 * v + 2 * v + merger +
           deepstack * (merger + 8 * v);
}

// DeepSeek-V3 (deepseek_v2.py): MLA with q_lora 1,536, kv_lora 512, 128 heads of 128 + 64 RoPE,
// V 128, h = 7,168; layers 0-2 a dense MLP of 18,432, 58 MoE layers of 256 + 1 experts of 2,048
// and a router with its bias; two norms a layer, the final norm, untied vocabulary 129,280.
constexpr std::uint64_t deepseek_v3 =
    61 * (7'168ULL * 1'536 + 1'536 + 1'536ULL * 128 * 192 + 7'168ULL * 576 + 512 +
          512ULL * 128 * 256 + 128ULL * 128 * 7'168 + 2 * 7'168) +
    3 * 3 * 7'168ULL * 18'432 + 58 * (7'168ULL * 256 + 256 + 257ULL * 3 * 7'168 * 2'048) + 7'168 +
    2 * 129'280ULL * 7'168;
static_assert(deepseek_v3 == 671'026'419'200ULL);  // "671B"

// Qwen3.5 and Qwen3-Next layers (qwen3_next.py, h = hidden): gated full attention (q and its gate
// 2 x heads x 256, k and v kv x 256 each, o, q/k norms of 256) on every 4th layer, Gated DeltaNet
// on the others (in_proj_qkvz, in_proj_ba, conv1d, dt_bias and A_log, its norm 128, out_proj),
// on every layer a router, the experts and a gated shared expert of the same width, two norms.
constexpr std::uint64_t qwen3_next_text(std::uint64_t h, std::uint64_t layers, std::uint64_t heads,
                                        std::uint64_t kv, std::uint64_t key_heads,
                                        std::uint64_t value_heads, std::uint64_t experts,
                                        std::uint64_t inter, std::uint64_t vocab) {
    const std::uint64_t full = layers / 4, linear = layers - full;
    const std::uint64_t kd = key_heads * 128, vd = value_heads * 128;
    const std::uint64_t attention = h * heads * 512 + 2 * h * kv * 256 + heads * 256 * h + 512;
    const std::uint64_t deltanet = h * (2 * kd + 2 * vd) + h * 2 * value_heads + (2 * kd + vd) * 4 +
                                   2 * value_heads + 128 + vd * h;
    const std::uint64_t mlp = h * experts + (experts + 1) * 3 * h * inter + h;
    return full * attention + linear * deltanet + layers * (mlp + 2 * h) + h + 2 * vocab * h;
}

}  // namespace

// Every bundled config's parameters (weights, the vision tower included), each against a figure
// derived by hand: here from the model code's shapes (the helpers above), or in the test named
// beside it, or the exact safetensors total its publisher gives. A config added without a row
// here fails the test. The checkpoint's bytes follow from these counts and its formats
// (test_quantized.cpp).
TEST_CASE("every bundled config's parameters, derived by hand", "[hf_families_2026][params]") {
    struct Row {
        const char* id;
        std::uint64_t params;
    };
    constexpr std::uint64_t k2 = 1'026'408'232'448ULL;  // test_hf_families.cpp, Kimi-K2
    constexpr std::uint64_t glm5 = 743'911'218'432ULL;  // GLM-5's test below
    constexpr std::uint64_t nano = 31'577'940'288ULL;   // test_hf_families.cpp, Nemotron-3-Nano
    constexpr std::uint64_t m25 = 228'689'764'864ULL;   // MiniMax-M2.5's test below
    constexpr std::uint64_t qwen3_vl_32b =
        decoder(5'120, 64, 64, 8, 128, 25'600, 151'936, false, false, true) +
        qwen3_vl_tower(1'152, 4'304, 27, 5'120, 3);
    const Row rows[] = {
        {"deepseek-r1", deepseek_v3},
        // DeepSeek-V2: h = 5,120, the same MLA shapes, layer 0 dense of 12,288, 59 MoE layers of
        // 160 + 2 experts of 1,536 and a router without bias, untied vocabulary 102,400.
        {"deepseek-v2", 60 * (5'120ULL * 1'536 + 1'536 + 1'536ULL * 128 * 192 + 5'120ULL * 576 +
                              512 + 512ULL * 128 * 256 + 128ULL * 128 * 5'120 + 2 * 5'120) +
                            3 * 5'120ULL * 12'288 +
                            59 * (5'120ULL * 160 + 162ULL * 3 * 5'120 * 1'536) + 5'120 +
                            2 * 102'400ULL * 5'120},
        {"deepseek-v3", deepseek_v3},
        {"deepseek-v3.2", deepseek_v3 + 61ULL * 13'959'424},  // + the indexer: test_hf_families
        {"deepseek-v4-flash", 284'334'567'511ULL},            // DeepSeek-V4-Flash's test below
        {"deepseek-v4-pro", 1'572'999'528'803ULL},            // DeepSeek-V4-Pro's test below
        {"falcon-40b", 679'510'016ULL * 60 + 65'024ULL * 8'192 + 16'384},  // test_hf_config.cpp
        {"falcon-7b", 207'070'080ULL * 32 + 65'024ULL * 4'544 + 9'088},    // test_hf_config.cpp
        {"falcon-mamba-7b", 7'272'665'088ULL},                             // test_hf_families.cpp
        {"gemma-2-27b", 27'227'128'320ULL},  // Gemma 2 report's exact count
        {"gemma-2-9b", 9'241'705'984ULL},    // Gemma 2 report's exact count
        // Gemma-3-27B's text model: h = 5,376, 62 layers of 32 heads of 128 and 16 KV heads, q/k
        // norms, MLP 21,504, four norms a layer, tied vocabulary 262,208; the SigLIP tower and
        // projector 423,060,336 (test_hf_families.cpp).
        {"gemma-3-27b", 62 * (2 * 5'376ULL * 4'096 + 2 * 5'376ULL * 2'048 + 256 +
                              3 * 5'376ULL * 21'504 + 4 * 5'376) +
                            5'376 + 262'208ULL * 5'376 + 423'060'336},
        {"gemma-3n-e4b", 6'866'696'688ULL},                    // test_hf_families.cpp
        {"gemma-4-26b-a4b", 25'247'559'710ULL + 572'794'416},  // Gemma 4's test below
        {"glm-4.5-air", 106'852'251'264ULL},                   // test_hf_families.cpp
        {"glm-5", glm5},
        {"glm-5.1", glm5},
        {"glm-5.2", glm5 - 57ULL * 9'371'904},  // 57 layers share the indexer: test below
        // GPT-J-6B: h = 4,096, 28 parallel layers of q, k, v, o h x h, fc_in h x 16,384 and fc_out
        // back with biases, one LayerNorm; embedding, LM head with its bias, ln_f; vocab 50,400.
        {"gpt-j-6b",
         28 * (4 * 4'096ULL * 4'096 + 2 * 4'096ULL * 16'384 + 16'384 + 4'096 + 2 * 4'096) +
             2 * 50'400ULL * 4'096 + 50'400 + 2 * 4'096},
        {"gpt-neox-20b", 20'554'567'680ULL},   // the published exact count, test_hf_config.cpp
        {"gpt-oss-120b", 116'829'156'672ULL},  // test_hf_config.cpp (OpenAI: 116.83B)
        // gpt-oss-20b: h = 2,880, 24 layers of 64 query and 8 KV heads of 64 with biases and 64
        // sinks, o with bias; 32 experts of gate_up h x 5,760 and down 2,880 x h with biases, the
        // router with its bias; two norms; untied vocabulary 201,088.
        {"gpt-oss-20b",
         24 * (2'880ULL * 4'096 + 4'096 + 2 * (2'880ULL * 512 + 512) + 4'096ULL * 2'880 + 2'880 +
               64 + 2'880ULL * 32 + 32 +
               32 * (2'880ULL * 5'760 + 5'760 + 2'880ULL * 2'880 + 2'880) + 2 * 2'880) +
             2'880 + 2 * 201'088ULL * 2'880},
        {"granite-4.0-h-small", 32'207'337'984ULL},  // test_hf_hybrid.cpp
        {"jamba-1.5-mini", 51'570'323'328ULL},       // test_hf_hybrid.cpp
        {"kimi-k2-instruct", k2},
        {"kimi-k2.5", k2 + 471'143'920},                  // + MoonViT: Kimi-K2.5's test below
        {"kimi-k3", 2'779'484'476'000ULL + 447'358'976},  // Kimi-K3's test below
        {"llama-2-70b", 68'976'648'192ULL},               // the exact safetensors totals
        {"llama-2-7b", 6'738'415'616ULL},
        {"llama-3-70b", 70'553'706'496ULL},
        {"llama-3-8b", 8'030'261'248ULL},
        {"llama-3.1-405b", 405'853'388'800ULL},
        {"llama-3.1-70b", 70'553'706'496ULL},
        {"llama-3.1-8b", 8'030'261'248ULL},
        {"llama-3.3-70b-instruct",
         decoder(8'192, 80, 64, 8, 128, 28'672, 128'256, false, false, false)},
        {"llama-3.3-nemotron-super-49b-v1", 49'867'145'216ULL},      // its test below
        {"llama-4-maverick-17b-128e-instruct", 401'583'781'376ULL},  // test_hf_families.cpp
        {"llama-4-scout-17b-16e-instruct", 108'641'793'536ULL},      // test_hf_families.cpp
        {"mamba-codestral-7b", 7'285'403'648ULL},                    // Mistral's exact count
        {"mimo-7b-base", decoder(4'096, 36, 32, 8, 128, 11'008, 151'680, false, true, false)},
        {"mimo-v2-flash", 308'778'780'864ULL},  // MiMo-V2-Flash's test below
        {"minimax-m2.5", m25},
        {"minimax-m2.7", m25},
        {"minimax-m3", 426'174'572'928ULL},     // MiniMax-M3's text model, derived below
        {"mistral-7b-v0.1", 7'241'732'096ULL},  // the exact safetensors total
        {"mixtral-8x22b", moe_decoder(6'144, 56, 48, 8, 128, 8, 16'384, 32'000, false)},
        {"mixtral-8x7b", moe_decoder(4'096, 32, 32, 8, 128, 8, 14'336, 32'000, false)},
        {"nemotron-3-nano-30b-a3b", nano},
        {"nemotron-3-ultra-550b-a55b", 549'308'993'536ULL},  // its test below
        {"nemotron-3.5-lightning-30b-a3b", nano},
        {"nemotron-h-56b-base-8k", 56'324'350'464ULL},  // test_hf_families.cpp
        {"phi-3-mini", 3'821'079'552ULL},               // the exact safetensors total
        {"qwen2.5-72b", decoder(8'192, 80, 64, 8, 128, 29'568, 152'064, false, true, false)},
        {"qwen2.5-7b", decoder(3'584, 28, 28, 4, 128, 18'944, 152'064, false, true, false)},
        {"qwen2.5-vl-7b-instruct", 8'292'166'656ULL},  // test_hf_families.cpp
        {"qwen3-0.6b", decoder(1'024, 28, 16, 8, 128, 3'072, 151'936, true, false, true)},
        {"qwen3-1.7b", decoder(2'048, 28, 16, 8, 128, 6'144, 151'936, true, false, true)},
        {"qwen3-235b-a22b", moe_decoder(4'096, 94, 64, 4, 128, 128, 1'536, 151'936, true)},
        {"qwen3-30b-a3b", moe_decoder(2'048, 48, 32, 4, 128, 128, 768, 151'936, true)},
        {"qwen3-32b", decoder(5'120, 64, 64, 8, 128, 25'600, 151'936, false, false, true)},
        {"qwen3-8b", decoder(4'096, 36, 32, 8, 128, 12'288, 151'936, false, false, true)},
        {"qwen3-coder-480b-a35b-instruct",
         moe_decoder(6'144, 62, 96, 8, 128, 160, 2'560, 151'936, true)},
        {"qwen3-next-80b-a3b", qwen3_next_text(2'048, 48, 16, 2, 16, 32, 512, 512, 151'936)},
        {"qwen3-vl-235b-a22b-instruct",
         moe_decoder(4'096, 94, 64, 4, 128, 128, 1'536, 151'936, true) +
             qwen3_vl_tower(1'152, 4'304, 27, 4'096, 3)},
        {"qwen3-vl-2b-instruct", decoder(2'048, 28, 16, 8, 128, 6'144, 151'936, true, false, true) +
                                     qwen3_vl_tower(1'024, 4'096, 24, 2'048, 3)},
        {"qwen3-vl-30b-a3b-instruct", moe_decoder(2'048, 48, 32, 4, 128, 128, 768, 151'936, true) +
                                          qwen3_vl_tower(1'152, 4'304, 27, 2'048, 3)},
        {"qwen3-vl-32b-instruct", qwen3_vl_32b},
        {"qwen3-vl-32b-thinking", qwen3_vl_32b},
        {"qwen3-vl-4b-instruct", decoder(2'560, 36, 32, 8, 128, 9'728, 151'936, true, false, true) +
                                     qwen3_vl_tower(1'024, 4'096, 24, 2'560, 3)},
        {"qwen3-vl-8b-instruct", 8'767'123'696ULL},  // test_hf_families.cpp
        {"qwen3.5-122b-a10b", qwen3_next_text(3'072, 48, 32, 2, 16, 64, 256, 1'024, 248'320) +
                                  qwen3_vl_tower(1'152, 4'304, 27, 3'072, 0)},
        {"qwen3.5-27b", 26'895'998'464ULL + 460'730'096},      // Qwen3.5-27B's test below
        {"qwen3.5-35b-a3b", 34'660'610'688ULL + 446'571'248},  // Qwen3.5-35B-A3B's test below
        {"qwen3.5-397b-a17b", qwen3_next_text(4'096, 60, 32, 2, 16, 64, 512, 1'024, 248'320) +
                                  qwen3_vl_tower(1'152, 4'304, 27, 4'096, 0)},
        {"qwen3.6-35b-a3b", 34'660'610'688ULL + 446'571'248},
    };
    static_assert(decoder(8'192, 80, 64, 8, 128, 28'672, 128'256, false, false, false) ==
                  70'553'706'496ULL);  // Llama-3.3-70B has Llama-3.1-70B's exact total
    static_assert(qwen3_next_text(2'048, 48, 16, 2, 16, 32, 512, 512, 151'936) ==
                  79'674'391'296ULL);  // "80B"
    const auto ids = bundled_model_ids(config_dir);
    CHECK(ids.size() == std::size(rows));
    for (const std::string& id : ids) {
        INFO(id);
        const Row* row = std::find_if(std::begin(rows), std::end(rows),
                                      [&](const Row& r) { return id == r.id; });
        REQUIRE(row != std::end(rows));
        CHECK(total_params(bundled(id)) == row->params);
    }
}

// ---------------------------------------------------------------------------------------------
// Qwen3.5 (vLLM's qwen3_5.py): Qwen3-Next's decoder layers in a Qwen3-VL wrapper. layer_types:
// every 4th layer is gated full attention, the rest Gated DeltaNet.
// ---------------------------------------------------------------------------------------------

TEST_CASE("Qwen3.5-27B: 16 full-attention layers and 48 Gated DeltaNet states",
          "[hf_families_2026][qwen3_5]") {
    const Model m = bundled("qwen3.5-27b");
    CHECK(m.layers().layers_of_kind(CacheKind::full_attention) == 16);
    CHECK(m.layers().layers_of_kind(CacheKind::constant_state) == 48);
    // KV: 16 full layers x 4 KV heads x 256 x 2 (K and V) x 2 B = 65,536 B per token.
    CHECK(kv_token(m) == 16 * 4 * 256 * 2 * 2);
    // A Gated DeltaNet layer's state (MambaStateShapeCalculator.gated_delta_net_state_shape):
    // conv (4 - 1) x (2 x 16 x 128 + 48 x 128) = 30,720 values, recurrent 48 x 128 x 128 =
    // 786,432 values; 817,152 x 2 B = 1,634,304 B per layer, x 48 per sequence.
    CHECK(m.layer(0).state_bytes.count() ==
          (3ULL * (2 * 16 * 128 + 48 * 128) + 48 * 128 * 128) * 2);
    CHECK(sequence_bytes(m, 8'192) == 65'536ULL * 8'192 + 48ULL * 1'634'304);
}

TEST_CASE("Qwen3.5-27B's parameters: gated attention, DeltaNet, dense MLP, the tower apart",
          "[hf_families_2026][qwen3_5][params]") {
    const Model m = bundled("qwen3.5-27b");
    // hidden h = 5120. Full attention (Qwen3NextAttention): q_proj with its output gate h x
    // (24 x 256 x 2), k and v h x (4 x 256) each, o 6144 x h, q/k norms 2 x 256: 110,100,992.
    constexpr std::uint64_t h = 5'120;
    constexpr std::uint64_t attn = h * 12'288 + 2 * h * 1'024 + 6'144 * h + 2 * 256;
    // Gated DeltaNet: in_proj_qkvz h x (4096 + 2 x 6144), in_proj_ba h x 96, conv1d 10240 x 4,
    // dt_bias and A_log 2 x 48, its norm 128, out_proj 6144 x h.
    constexpr std::uint64_t gdn = h * 16'384 + h * 96 + 10'240 * 4 + 2 * 48 + 128 + 6'144 * h;
    // Dense MLP 3 x h x 17408, two norms per layer, final norm, untied embeddings 248320 x h x 2.
    constexpr std::uint64_t text =
        16 * attn + 48 * gdn + 64 * (3 * h * 17'408 + 2 * h) + h + 2 * 248'320ULL * h;
    static_assert(text == 26'895'998'464ULL);
    // The vision tower (Qwen3_VisionTransformer, 27 blocks of 1152, MLP 4304, patch 16 x 16 x 2
    // x 3, 2304 position embeddings, merger 4608 -> 4608 -> 5120), counted apart.
    constexpr std::uint64_t v = 1'152, vi = 4'304;
    constexpr std::uint64_t block = 4 * v * v + 4 * v + 2 * v * vi + vi + v + 4 * v;
    constexpr std::uint64_t tower = 27 * block + 3 * 2 * 16 * 16 * v + v + 2'304 * v + 2 * v +
                                    4'608 * 4'608 + 4'608 + 4'608 * 5'120 + 5'120;
    static_assert(tower == 460'730'096);
    CHECK(m.config().vision_params == tower);
    CHECK(total_params(m) == text + tower);  // 27.36B, the "27B" of the name
}

TEST_CASE("Qwen3.5-397B-A17B: 15 full layers, 512 experts and a gated shared expert",
          "[hf_families_2026][qwen3_5][params]") {
    const Model m = bundled("qwen3.5-397b-a17b");
    // KV: 15 x 2 KV heads x 256 x 2 x 2 B = 30,720 B per token. State per DeltaNet layer: conv
    // 3 x (4096 + 64 x 128) = 36,864 values, recurrent 64 x 128 x 128 = 1,048,576; x 2 B.
    CHECK(kv_token(m) == 30'720);
    CHECK(m.layer(0).state_bytes.count() == (36'864ULL + 1'048'576) * 2);
    CHECK(sequence_bytes(m, 131'072) == 30'720ULL * 131'072 + 45ULL * 2'170'880);
    CHECK(m.config().moe.experts == 512);
    CHECK(m.config().moe.shared_intermediate_size == 1'024);
    // Layers as Qwen3-Next's (h = 4096): 15 gated attention + 45 DeltaNet mixers, per layer a
    // router h x 512, 512 experts and a shared expert of 3 x h x 1024, the shared-expert gate h,
    // two norms; embeddings 248320 x h x 2; final norm. Tower as Qwen3.5-27B's, merger to 4096.
    constexpr std::uint64_t h = 4'096;
    constexpr std::uint64_t attn = h * 16'384 + 2 * h * 512 + 8'192 * h + 2 * 256;
    constexpr std::uint64_t gdn =
        h * (4'096 + 2 * 8'192) + h * 128 + 12'288 * 4 + 2 * 64 + 128 + 8'192 * h;
    constexpr std::uint64_t layer_mlp = h * 512 + 512 * 3 * h * 1'024 + 3 * h * 1'024 + h;
    constexpr std::uint64_t text =
        15 * attn + 45 * gdn + 60 * (layer_mlp + 2 * h) + h + 2 * 248'320ULL * h;
    static_assert(text == 396'346'350'336ULL);
    CHECK(total_params(m) - m.config().vision_params == text);  // 396.3B: "397B"
}

TEST_CASE("Qwen3.5-35B-A3B and Qwen3.6-35B-A3B: 10 full layers, 256 experts, 35.1B",
          "[hf_families_2026][qwen3_5][params]") {
    const Model m = bundled("qwen3.5-35b-a3b");
    // As Qwen3.5-397B-A17B's, h = 2048, 16 query and 2 KV heads of 256: gated q h x 8,192, k and
    // v h x 512 each, o 4,096 x h, q/k norms 2 x 256. DeltaNet with 16 key heads and 32 value
    // heads of 128: in_proj_qkvz h x (2 x 2,048 + 2 x 4,096), in_proj_ba h x 64, conv1d 8,192 x 4,
    // dt_bias and A_log 2 x 32, norm 128, out_proj 4,096 x h. Per layer a router h x 256, 256
    // experts and a shared expert of 3 x h x 512, the shared-expert gate h and two norms.
    constexpr std::uint64_t h = 2'048;
    constexpr std::uint64_t attn = h * 8'192 + 2 * h * 512 + 4'096 * h + 2 * 256;
    constexpr std::uint64_t gdn = h * 12'288 + h * 64 + 8'192 * 4 + 2 * 32 + 128 + 4'096 * h;
    constexpr std::uint64_t layer_mlp = h * 256 + 256 * 3 * h * 512 + 3 * h * 512 + h;
    constexpr std::uint64_t text =
        10 * attn + 30 * gdn + 40 * (layer_mlp + 2 * h) + h + 2 * 248'320ULL * h;
    static_assert(text == 34'660'610'688ULL);
    // The tower as Qwen3.5-27B's (460,730,096) with its merger's last projection to 2,048, not
    // 5,120: 4,608 x 3,072 + 3,072 fewer.
    constexpr std::uint64_t tower = 460'730'096ULL - 4'608 * 3'072 - 3'072;
    CHECK(m.config().vision_params == tower);
    CHECK(total_params(m) == text + tower);  // 35.11B, the "35B" of the name
    CHECK(kv_token(m) == 2 * 10 * 2 * 256 * 2);
    // Qwen3.6-35B-A3B has the same shapes (its config differs in tie_word_embeddings, false in
    // both readings).
    CHECK(total_params(bundled("qwen3.6-35b-a3b")) == text + tower);
}

// ---------------------------------------------------------------------------------------------
// GLM-5 (glm_moe_dsa): DeepSeek-V3.2's MLA with the lightning indexer under another name.
// ---------------------------------------------------------------------------------------------

TEST_CASE("GLM-5 caches the MLA latent and the indexer key on 78 layers",
          "[hf_families_2026][glm5]") {
    const Model m = bundled("glm-5");
    // Per layer: the latent (kv_lora_rank 512 + qk_rope_head_dim 64) x 2 B = 1,152 B, and the
    // indexer key 128 fp8 + one fp32 scale = 132 B (vLLM's DeepseekV32IndexerCache).
    CHECK(kv_token(m) == 78 * (576 * 2 + 132));
    CHECK(sequence_bytes(m, 8'192) == 100'152ULL * 8'192);
    // MLA (h = 6144, 64 heads, q_lora 2048, nope 192 + rope 64, v 256): q_a h x 2048 and its
    // norm, q_b 2048 x 64 x 256, kv_a h x 576 and its norm 512, kv_b 512 x 64 x (192 + 256),
    // o 64 x 256 x h. Indexer: wq_b 2048 x 32 x 128, wk h x 128, k_norm 2 x 128, weights_proj
    // h x 32. Layers 0-2 dense (3 x h x 12288); 75 MoE layers of a router h x 256 with its bias,
    // 256 + 1 shared experts of 3 x h x 2048. Two norms a layer, final norm, untied embeddings.
    constexpr std::uint64_t h = 6'144;
    constexpr std::uint64_t mla = h * 2'048 + 2'048 + 2'048 * 64 * 256 + h * 576 + 512 +
                                  512 * 64 * (192 + 256) + 64 * 256 * h;
    constexpr std::uint64_t indexer = 2'048 * 32 * 128 + h * 128 + 2 * 128 + h * 32;
    constexpr std::uint64_t moe = h * 256 + 256 + 257 * 3 * h * 2'048;
    constexpr std::uint64_t total =
        78 * (mla + indexer + 2 * h) + 3 * 3 * h * 12'288 + 75 * moe + h + 2 * 154'880ULL * h;
    static_assert(total == 743'911'218'432ULL);  // "744B"
    CHECK(total_params(m) == total);
}

TEST_CASE("GLM-5.2's shared indexer layers hold no indexer key", "[hf_families_2026][glm5]") {
    const Model m = bundled("glm-5.2");
    // indexer_types: 21 "full" layers (0, 1, 2, then 6, 10, ..., 74) run an indexer and cache its
    // key; the 57 "shared" ones reuse the last full layer's top-k.
    CHECK(m.layer(0).index_head_dim == 128);
    CHECK(m.layer(3).index_head_dim == 0);
    CHECK(m.layer(6).index_head_dim == 128);
    CHECK(kv_token(m) == 78 * 1'152 + 21 * 132);
    // The same model as GLM-5 but 57 layers without the indexer's 9,371,904 parameters.
    constexpr std::uint64_t indexer = 2'048 * 32 * 128 + 6'144 * 128 + 2 * 128 + 6'144 * 32;
    CHECK(total_params(bundled("glm-5")) - total_params(m) == 57 * indexer);

    Json j = bundled_json("glm-5.2");
    j["indexer_types"][0] = "shared";
    CHECK_THAT(import_error(j), Catch::Contains("indexer_types[0]") &&
                                    Catch::Contains("the first layer has no indexer to share"));
    // Its mlp_layer_types must agree with first_k_dense_replace (3).
    Json k = bundled_json("glm-5.2");
    k["mlp_layer_types"][3] = "dense";
    CHECK_THAT(import_error(k), Catch::Contains("mlp_layer_types[3]") &&
                                    Catch::Contains("expected \"sparse\"") &&
                                    Catch::Contains("found \"dense\""));
}

TEST_CASE("GLM-5.1 has GLM-5's shapes", "[hf_families_2026][glm5]") {
    CHECK(kv_token(bundled("glm-5.1")) == kv_token(bundled("glm-5")));
    CHECK(total_params(bundled("glm-5.1")) == total_params(bundled("glm-5")));
}

// ---------------------------------------------------------------------------------------------
// Kimi-K2.5 (kimi_k25): a vision-language wrapper whose text_config is Kimi-K2 (kimi_k2, run by
// vLLM as DeepseekV3ForCausalLM).
// ---------------------------------------------------------------------------------------------

TEST_CASE("Kimi-K2.5 is imported by its text_config's architecture, as Kimi-K2",
          "[hf_families_2026][kimi]") {
    const HfImport im = import_bundled_model(config_dir, "kimi-k2.5");
    CHECK_THAT(im.notes.at(0), Catch::Contains("text_config.architectures[0]") &&
                                   Catch::Contains("DeepseekV3ForCausalLM"));
    // 61 MLA layers x 576 values x 2 B = 70,272 B per token: Kimi-K2's cache.
    CHECK(kv_token(im.model) == 61 * 576 * 2);
    CHECK(kv_token(im.model) == kv_token(bundled("kimi-k2-instruct")));
    // The text model is Kimi-K2's (first_k_dense_replace 1, 384 experts): the same count.
    CHECK(total_params(im.model) - im.model.config().vision_params ==
          total_params(bundled("kimi-k2-instruct")));
    // MoonViT (kimi_k25_vit.py), w = 1152, MLP 4304: 27 blocks of wqkv w x 3w and wo w x w with
    // biases, two LayerNorms (4w), fc0 and fc1 with biases; patch Conv2d 3 x 14 x 14 x w + w; a
    // learned 64 x 64 x w position table; the final LayerNorm 2w. Projector: LayerNorm 2w,
    // linear_1 4608 x 4608 + 4608, linear_2 4608 x 7168 + 7168.
    constexpr std::uint64_t w = 1'152, i = 4'304;
    constexpr std::uint64_t block = 4 * w * w + 4 * w + 2 * w * i + i + w + 4 * w;
    constexpr std::uint64_t tower = 27 * block + 3 * 14 * 14 * w + w + 64 * 64 * w + 2 * w + 2 * w +
                                    4'608 * 4'608 + 4'608 + 4'608 * 7'168 + 7'168;
    static_assert(tower == 471'143'920);
    CHECK(im.model.config().vision_params == tower);
}

// ---------------------------------------------------------------------------------------------
// MiniMax-M2 (minimax_m2.py): full attention on all 62 layers, 256 experts of intermediate_size.
// ---------------------------------------------------------------------------------------------

TEST_CASE("MiniMax-M2.5: GQA 48/8 on 62 layers, q and k norms over every head",
          "[hf_families_2026][minimax]") {
    const Model m = bundled("minimax-m2.5");
    // 62 x 8 KV heads x 128 x 2 x 2 B = 253,952 B per token.
    CHECK(kv_token(m) == 62 * 8 * 128 * 2 * 2);
    CHECK(m.config().moe.experts == 256);
    CHECK(m.config().moe.expert_intermediate_size == 1'536);
    CHECK(m.config().intermediate_size == 0);
    // Per layer (h = 3072): q h x 6144, k and v h x 1024 each, o 6144 x h; q_norm 48 x 128 and
    // k_norm 8 x 128 (qk_norm_type per_layer); router h x 256 with e_score_correction_bias;
    // 256 experts of 3 x h x 1536; two norms. Final norm, untied embeddings 200064 x h x 2.
    constexpr std::uint64_t h = 3'072;
    constexpr std::uint64_t layer = h * 6'144 + 2 * h * 1'024 + 6'144 * h + 56 * 128 + h * 256 +
                                    256 + 256 * 3 * h * 1'536 + 2 * h;
    constexpr std::uint64_t total = 62 * layer + h + 2 * 200'064ULL * h;
    static_assert(total == 228'689'764'864ULL);  // "230B total"
    CHECK(total_params(m) == total);
    CHECK(total_params(bundled("minimax-m2.7")) == total);

    Json j = bundled_json("minimax-m2.7");
    j["attn_type_list"][5] = 0;
    CHECK_THAT(import_error(j), Catch::Contains("attn_type_list[5]") &&
                                    Catch::Contains("1 (softmax attention) on every layer"));
}

// ---------------------------------------------------------------------------------------------
// MiniMax-M3 (vLLM's vllm/models/minimax_m3/nvidia/model.py): GQA 64/4 x 128 on 60 layers; layers
// 3-59 (sparse_attention_freq) are block-sparse and cache an indexer key of sparse_index_dim 128
// per token in bf16 beside K and V (common/indexer.py, MiniMaxM3IndexerCache, indexer_kv_dtype
// "bf16"), one head replicated on every TP rank. Layers 0-2 have a dense MLP of 12,288, the rest
// 128 experts of 3,072 (top 4) and a shared expert of 3,072.
// ---------------------------------------------------------------------------------------------

namespace {

// MiniMax-M3's parameters from the model code, hidden h = 6,144.
constexpr std::uint64_t m3_h = 6'144;
// Every layer (MiniMaxM3Attention): q h x 8192, k and v h x 512 each, o 8192 x h, q_norm and
// k_norm of head_dim 128: 106,955,008.
constexpr std::uint64_t m3_attention = 8'192 * m3_h * 2 + 2 * 512 * m3_h + 2 * 128;
// A sparse layer's indexer (MinimaxM3QKVParallelLinearWithIndexer): index_q_proj of 4 heads x 128
// and index_k_proj of one head of 128 from h, index_q_norm and index_k_norm of 128: 3,932,416.
constexpr std::uint64_t m3_indexer = 4 * 128 * m3_h + 128 * m3_h + 2 * 128;
// A MoE layer (MiniMaxM3MoE): 128 experts of 3 x h x 3072, the shared expert of 3 x h x 3072
// (intermediate_size x n_shared_experts), the router h x 128 and its e_score_correction_bias.
constexpr std::uint64_t m3_moe = 129 * 3 * m3_h * 3'072 + m3_h * 128 + 128;
// The text model: 60 attention layers, 57 indexers, 3 dense MLPs of 3 x h x 12,288, 57 MoE
// layers, two Gemma RMSNorms a layer, the final norm, untied embeddings 200,064 x h x 2.
constexpr std::uint64_t m3_text = 60 * m3_attention + 57 * m3_indexer + 3 * 3 * m3_h * 12'288 +
                                  57 * m3_moe + 60 * 2 * m3_h + m3_h + 2 * 200'064 * m3_h;
static_assert(m3_text == 426'174'572'928ULL);

// The vision_config and projector field of nvidia/MiniMax-M3-NVFP4's config.json (GitHub
// ai-dynamo/aiconfigurator@095f58a51, aic-core/src/aiconfigurator_core/model_configs/
// nvidia--MiniMax-M3-NVFP4_config.json; fields the tower's size does not read left out).
Json minimax_m3_vl(const char* text_type) {
    Json j = Json::object();
    j["architectures"] = Json::array({"MiniMaxM3SparseForConditionalGeneration"});
    j["model_type"] = "minimax_m3_vl";
    j["projector_hidden_size"] = 6144;
    j["multimodal_projector_bias"] = true;
    j["text_config"] = bundled_json("minimax-m3");
    j["text_config"]["model_type"] = text_type;
    j["vision_config"] = Json::parse(R"({
        "hidden_size": 1280, "num_attention_heads": 16, "num_hidden_layers": 32,
        "intermediate_size": 5120, "patch_size": 14, "image_size": 2016, "projection_dim": 6144,
        "position_embedding_type": "rope", "rope_mode": "3d", "hidden_act": "gelu",
        "model_type": "clip_vision_model", "num_channels": 3,
        "img_token_compression_config": {"image_token_compression_method": "patch_merge",
                                         "spatial_merge_size": 2, "temporal_patch_size": 2}})");
    return j;
}

}  // namespace

TEST_CASE("MiniMax-M3: GQA 64/4 on 60 layers, a bf16 indexer key on 57 of them",
          "[hf_families_2026][minimax]") {
    const Model m = bundled("minimax-m3");
    const LayerStack& L = m.layers();
    REQUIRE(L.num_layers == 60);
    CHECK(L[0] == full_attention(4, 128));
    CHECK(L[2] == full_attention(4, 128));
    CHECK(L[3] == indexed_attention(4, 128, 128));
    CHECK(L[59] == indexed_attention(4, 128, 128));
    // 60 x 2 x 4 x 128 x 2 B = 122,880 B of K and V, 57 x 128 x 2 B = 14,592 B of keys.
    CHECK(kv_token(m) == 122'880 + 14'592);
    // At 1,048,576 tokens (max_position_embeddings) a sequence holds 137,472 B a token: 134.25 GiB.
    CHECK(sequence_bytes(m, 1'048'576) == 137'472ULL * 1'048'576);
    CHECK(kv_bytes_per_sequence(m, KvDtype::bf16, 1'048'576) == 137'472ULL * MiB);
    // An fp8 KV cache halves K and V, not the key (vLLM's indexer_kv_dtype stays bf16).
    CHECK(kv_bytes_per_token(m, KvDtype::fp8_e4m3).count() == 61'440 + 14'592);
    // tp 4: one KV head a rank, 30,720 B, and every key, 14,592 B (index_k is replicated).
    CHECK(kv_bytes_per_token(m, KvDtype::bf16, Layout{m, {.tp = 4}}.stage(0)).count() ==
          30'720 + 14'592);

    CHECK(m.config().moe.experts == 128);
    CHECK(m.config().moe.experts_per_token == 4);
    CHECK(m.config().moe.first_dense_layers == 3);
    CHECK(m.config().intermediate_size == 12'288);
    CHECK(m.config().mtp_layers == 1);  // num_nextn_predict_layers: a draft, not counted
    CHECK(total_params(m) == m3_text);  // 426.2B
}

TEST_CASE("MiniMax-M3 in vLLM: one uniform group of K-V and indexer pages, blocks of 128",
          "[hf_families_2026][minimax]") {
    const Model m = bundled("minimax-m3");
    // MINIMAX_M3_SPARSE and its indexer take kernel blocks of 128 (sparse_attention.py,
    // indexer.py: get_supported_kernel_block_sizes): vLLM's 16 becomes 128 on any CUDA GPU.
    const auto b = vllm_attention_backend(m, GpuFamily::hopper, KvDtype::bf16, 1, 16);
    REQUIRE(b);
    CHECK(b->backend == VllmAttentionBackend::minimax_m3_sparse);
    CHECK(name(b->backend) == "MINIMAX_M3_SPARSE");
    CHECK(b->block_size == 128);
    CHECK(b->forced);
    // The main K-V cache is a FullAttentionSpec and the indexer's an MLAAttentionSpec, a subclass:
    // UniformTypeKVCacheSpecs.is_uniform_type (vllm/v1/kv_cache_interface.py) puts every layer in
    // one group whose page is the sum of the layers' pages. At tp 4, 128-token blocks: a dense
    // layer's page 1 x 128 x 2 x 2 B x 128 = 65,536 B, a sparse layer's that plus 128 x 2 B x 128
    // = 98,304 B; a block 3 x 65,536 + 57 x 98,304 = 5,799,936 B.
    VllmOptions o;
    o.block_size = 128;
    const Layout l{m, {.tp = 4}};
    const VllmKvCache c = vllm_kv_cache(m, KvDtype::bf16, l, 64 * GiB, o);
    REQUIRE(c.refused.empty());
    CHECK(c.uniform_type);
    CHECK(c.num_groups == 1);
    CHECK(c.num_kinds == 2);
    CHECK(c.bytes_per_block.count() == 5'799'936);
    // 64 GiB / 5,799,936 B = 11,848 blocks (68,719,476,736 / 5,799,936 = 11,848.4).
    CHECK(c.num_blocks == 11'848);
}

TEST_CASE("MiniMax-M3's wrapper: minimax_m3_vl, its tower and projectors counted apart",
          "[hf_families_2026][minimax]") {
    // MiniMaxVLVisionModel (vision_tower.py), width v = 1,280, 32 layers: the Conv3d patch
    // embedding 3 x 2 x 14 x 14 x v, pre_layrnorm 2v, per layer two LayerNorms 4v, qkv 3v x v + 3v,
    // out_proj v x v + v, fc1 v x 5120 + 5120, fc2 5120 x v + v; multi_modal_projector v x 6144 +
    // 6144 and 6144 x h + h; patch_merge_mlp 4h x 6144 + 6144 and 6144 x h + h (h = 6,144).
    constexpr std::uint64_t v = 1'280, vi = 5'120, mid = 6'144;
    constexpr std::uint64_t block = 4 * v * v + 2 * v * vi + 9 * v + vi;
    constexpr std::uint64_t tower = 32 * block + 3 * 2 * 14 * 14 * v + 2 * v + v * mid + mid +
                                    mid * m3_h + m3_h + 4 * m3_h * mid + mid + mid * m3_h + m3_h;
    static_assert(tower == 865'567'232);
    for (const char* text_type : {"minimax_m3_text", "minimax_m3"}) {
        INFO(text_type);
        const HfImport imp = import_hf_json(minimax_m3_vl(text_type), "minimax-m3-vl.json");
        CHECK(imp.model.config().vision_params == tower);
        CHECK(total_params(imp.model) == m3_text + tower);  // 427.04B
        CHECK(kv_token(imp.model) == 122'880 + 14'592);
    }
}

TEST_CASE("MiniMax-M3's sparse layers are checked as vLLM builds them",
          "[hf_families_2026][minimax][errors]") {
    Json j = bundled_json("minimax-m3");
    j["sparse_attention_config"]["sparse_num_index_heads"] = 8;
    CHECK_THAT(import_error(j), Catch::Contains("sparse_attention_config.sparse_num_index_heads") &&
                                    Catch::Contains("num_key_value_heads (4)") &&
                                    Catch::Contains("found 8"));
    j = bundled_json("minimax-m3");
    j["sparse_attention_config"]["sparse_attention_freq"].erase(0);
    CHECK_THAT(import_error(j), Catch::Contains("sparse_attention_freq") &&
                                    Catch::Contains("a flag per layer (60)") &&
                                    Catch::Contains("59 entries"));
    j = bundled_json("minimax-m3");
    j["attention_output_gate"] = true;
    CHECK_THAT(import_error(j), Catch::Contains("attention_output_gate"));
    // Without sparse layers every layer is plain GQA: 122,880 B a token.
    j = bundled_json("minimax-m3");
    j.erase("sparse_attention_config");
    CHECK(kv_token(model_from_hf_json(j, "m3-dense.json")) == 122'880);
}

// ---------------------------------------------------------------------------------------------
// MiMo-V2-Flash (mimo_v2_flash.py): 9 full layers (4 KV heads) and 39 sliding-window layers of
// 128 tokens (8 KV heads), K 192 and V 128 wide on both.
// ---------------------------------------------------------------------------------------------

TEST_CASE("MiMo-V2-Flash: per-kind KV heads, K and V of their own sizes",
          "[hf_families_2026][mimo]") {
    const Model m = bundled("mimo-v2-flash");
    CHECK(m.layers().layers_of_kind(CacheKind::full_attention) == 9);
    CHECK(m.layers().layers_of_kind(CacheKind::sliding_window) == 39);
    CHECK(m.layer(0).kv_heads == 4);
    CHECK(m.layer(1).kv_heads == 8);
    CHECK(m.layer(1).window == 128);
    CHECK(m.layer(0).k_head_dim == 192);
    CHECK(m.layer(0).v_head_dim == 128);
    // Per token: full 9 x 4 x (192 + 128) x 2 B = 23,040; sliding 39 x 8 x 320 x 2 B = 199,680.
    CHECK(kv_token(m) == 9 * 4 * 320 * 2 + 39 * 8 * 320 * 2);
    // A sequence: the full layers hold every token, a sliding layer at most its 128.
    CHECK(sequence_bytes(m, 8'192) == 23'040ULL * 8'192 + 199'680ULL * 128);
    // Parameters (h = 4096, 64 query heads of 192): q h x 12288, k h x kv x 192, v h x kv x 128,
    // o 8192 x h, a sink per head on sliding layers; layer 0 dense 3 x h x 16384; 47 MoE layers
    // of a router h x 256 with its bias and 256 experts of 3 x h x 2048; two norms a layer; final
    // norm; untied embeddings 152576 x h x 2.
    constexpr std::uint64_t h = 4'096;
    constexpr std::uint64_t full = h * 12'288 + h * 4 * 192 + h * 4 * 128 + 8'192 * h;
    constexpr std::uint64_t sliding = h * 12'288 + h * 8 * 192 + h * 8 * 128 + 8'192 * h + 64;
    constexpr std::uint64_t moe = h * 256 + 256 + 256 * 3 * h * 2'048;
    constexpr std::uint64_t total =
        9 * full + 39 * sliding + 3 * h * 16'384 + 47 * moe + 48 * 2 * h + h + 2 * 152'576ULL * h;
    static_assert(total == 308'778'780'864ULL);  // "309B total"
    CHECK(total_params(m) == total);
}

// MiMo-V2-Flash's checkpoint holds three MTP layers its config does not name (model.mtp.layers
// {0,1,2}: llm-compressor's MiMo-V2-Flash example, examples/multimodal_vision/mimo2_flash_w8a8.py;
// vLLM's mimo_v2_mtp.py: "MiMo-V2 checkpoints contain multiple MTP layers"). Each, as vLLM's
// MiMoV2MTPLayer and SGLang's mimo_v2_flash_nextn.py build it: enorm, hnorm, eh_proj 2h -> h,
// input_layernorm, a sliding-window attention of the swa_* shape (64 query heads, 8 KV heads, K
// 192, V 128) with 64 sinks, pre_mlp_layernorm, a dense MLP of intermediate_size 16,384,
// final_layernorm; embedding and head are the model's. vLLM's MiMoV2Model.load_weights skips every
// "mtp" tensor, and its MiMoV2MTP drafts with one layer.
TEST_CASE("MiMo-V2-Flash: the checkpoint's three MTP layers, a dense MLP and a sliding window each",
          "[hf_families_2026][mimo][params]") {
    const Model m = bundled("mimo-v2-flash");
    CHECK(m.config().mtp_layers == 3);
    CHECK(m.config().mtp_draft_layers == 1);
    CHECK(m.config().checkpoint.mtp_shares_embeddings);
    REQUIRE(m.config().mtp_spec);
    CHECK(*m.config().mtp_spec == m.layer(1));  // the sliding layers' spec
    CHECK(m.layer(1).kind == CacheKind::sliding_window);
    // The model's own weights are unchanged: the 48 layers keep their MLPs (layer 0 dense).
    CHECK(!m.config().moe.is_moe_layer(0));
    CHECK(m.config().moe.is_moe_layer(47));
    CHECK(!m.config().moe.is_moe_layer(48));
    CHECK(total_params(m) == 308'778'780'864ULL);
    // One layer in the checkpoint's fp8 (e4m3, 128 x 128 blocks, an fp32 scale per block), h =
    // 4,096:
    //   q 12,288 x h       50,331,648 B + 96 x 32 scales x 4 B   12,288 B
    //   k 1,536 x h         6,291,456 B + 12 x 32 x 4             1,536 B
    //   v 1,024 x h         4,194,304 B + 8 x 32 x 4              1,024 B
    //   o h x 8,192        33,554,432 B + 32 x 64 x 4             8,192 B
    //   gate, up, down 3 x 16,384 x h  201,326,592 B + 3 x 4,096 x 4  49,152 B
    //   input_layernorm, pre_mlp_layernorm 2 x h x 2 B           16,384 B
    //   enorm, hnorm, final_layernorm 3h, eh_proj 2h x h, 64 sinks: 33,566,784 x 2 B = 67,133,568 B
    // = 295,698,432 + 72,192 + 16,384 + 67,133,568 = 362,920,576 B; three: 1,088,761,728 B.
    constexpr std::uint64_t layer = 295'698'432ULL + 72'192 + 16'384 + 67'133'568ULL;
    static_assert(layer == 362'920'576ULL);
    CHECK(mtp_layer_bytes(m).count() == 3 * layer);
    CHECK(checkpoint_file_bytes(m).count() ==
          weight_bytes(m, checkpoint_weights(m)).total().count() + 3 * layer);
    // Drafting with them (vLLM's MiMoV2MTP): one layer, a sliding window of 128 tokens with 8 KV
    // heads of K 192 and V 128, and a dense MLP, appended past the model's 48.
    const DraftedModel d =
        with_drafter(m, ParallelConfig{}, Speculation{.method = DraftMethod::mtp, .tokens = 1});
    CHECK(d.drafter_layers == 1);
    REQUIRE(d.model.num_layers() == 49);
    CHECK(d.model.layer(48) == m.layer(1));
    CHECK(!d.model.config().moe.is_moe_layer(48));
}

// MiMo-7B (model_type mimo, vLLM's mimo.py): Qwen2's decoder layers with one MTP layer beside.
TEST_CASE("MiMo-7B: Qwen2 layers, and an MTP layer that shares the model's embedding and head",
          "[hf_families_2026][mimo][params]") {
    const Model m = bundled("mimo-7b-base");
    // h = 4,096, 32 query and 8 KV heads of 128 with QKV biases (attention_bias): q and o h x h,
    // q's bias h, k and v 1,024 x h with biases of 1,024; MLP 3 x h x 11,008; two norms. 36
    // layers, the final norm, untied embedding and head 151,680 x h.
    constexpr std::uint64_t h = 4'096;
    constexpr std::uint64_t layer =
        2 * h * h + h + 2 * (1'024 * h + 1'024) + 3 * h * 11'008 + 2 * h;
    constexpr std::uint64_t total = 36 * layer + h + 2 * 151'680ULL * h;
    static_assert(total == 7'622'619'136ULL);
    CHECK(total_params(m) == total);
    // The MTP layer (vLLM's mimo_mtp.py, MiMoMultiTokenPredictorLayer): token_layernorm and
    // hidden_layernorm of h, input_proj 2h -> h without bias, a Qwen2 decoder layer as above and
    // final_layernorm h, all under model.mtp_layers. Its embedding and head are the model's:
    // MiMoMTP.load_weights fills them from model.embed_tokens and lm_head, which the checkpoint
    // stores once. 210,790,400 parameters, 7,833,409,536 with the model: 15,666,819,072 B in
    // bf16 (18,151,944,192 B while a copy of the embedding and head was counted per MTP layer,
    // as DeepSeek-V3 stores them: 15.9 % over).
    constexpr std::uint64_t mtp = 3 * h + 2 * h * h + layer;
    static_assert(mtp == 210'790'400ULL);
    CHECK(m.config().mtp_layers == 1);
    CHECK(m.config().checkpoint.mtp_shares_embeddings);
    CHECK(mtp_layer_bytes(m).count() == 2 * mtp);
    CHECK(checkpoint_file_bytes(m).count() == 2 * (total + mtp));
    CHECK(checkpoint_file_bytes(m).count() == 15'666'819'072ULL);
}

// ---------------------------------------------------------------------------------------------
// Nemotron-3: layers_block_type in place of hybrid_override_pattern (nemotron_h.py).
// ---------------------------------------------------------------------------------------------

TEST_CASE("Nemotron-3.5-Lightning reads layers_block_type as Nemotron-3-Nano's pattern",
          "[hf_families_2026][nemotron]") {
    const Model m = bundled("nemotron-3.5-lightning-30b-a3b");
    // 23 "mamba", 6 "attention", 23 "moe": the blocks of Nemotron-3-Nano-30B-A3B, same shapes.
    CHECK(m.layers().layers_of_kind(CacheKind::constant_state) == 23);
    CHECK(m.layers().layers_of_kind(CacheKind::full_attention) == 6);
    CHECK(m.layers().layers_of_kind(CacheKind::mlp_only) == 23);
    // 6 x 2 x 2 KV heads x 128 x 2 B = 6,144 B per token; each Mamba layer conv 3 x (64 x 64 +
    // 2 x 8 x 128) x 2 B + SSM 64 x 64 x 128 x 4 B (mamba_ssm_cache_dtype float32) = 2,134,016 B.
    CHECK(kv_token(m) == 6'144);
    CHECK(sequence_bytes(m, 8'192) == 6'144ULL * 8'192 + 23ULL * 2'134'016);
    CHECK(total_params(m) == total_params(bundled("nemotron-3-nano-30b-a3b")));
}

TEST_CASE("Nemotron-3-Ultra: layers_block_type alone gives the layer count",
          "[hf_families_2026][nemotron]") {
    const Model m = bundled("nemotron-3-ultra-550b-a55b");
    // The file has no num_hidden_layers: 108 blocks, 48 Mamba, 12 attention, 48 MoE.
    CHECK(m.num_layers() == 108);
    CHECK(m.layers().layers_of_kind(CacheKind::full_attention) == 12);
    // 12 x 2 x 2 KV heads x 128 x 2 B = 12,288 B per token. Mamba: conv 3 x (256 x 64 + 2 x 8 x
    // 128) = 55,296 values x 2 B, SSM 256 x 64 x 128 = 2,097,152 values x 4 B: 8,499,200 B.
    CHECK(kv_token(m) == 12 * 2 * 2 * 128 * 2);
    CHECK(m.layer(0).state_bytes.count() == 55'296ULL * 2 + 2'097'152ULL * 4);

    // Its parameters, from vLLM's nemotron_h.py, hidden h = 8,192. A Mamba-2 mixer: in_proj
    // h -> 2 x 16,384 (256 heads x 64) + 2 x 8 groups x 128 + 256 = 35,072; conv1d over 16,384 +
    // 2,048 channels, kernel 4, with bias; A_log, D and dt_bias of 256; the gated norm 16,384;
    // out_proj 16,384 -> h; the block norm h. Attention: q and o 8,192 x h, k and v 256 x h, norm.
    // LatentMoE: router 512 x h and its bias 512, fc1_latent_proj h -> 2,048 and fc2_latent_proj
    // back, 512 experts of up 5,120 x 2,048 and down 2,048 x 5,120 (squared ReLU, no gate), the
    // shared expert up 10,240 x h and down, the norm. Untied embedding and head 131,072 x h.
    constexpr std::uint64_t h = 8'192;
    constexpr std::uint64_t mamba =
        35'072 * h + 18'432 * 4 + 18'432 + 3 * 256 + 16'384 + h * 16'384 + h;
    constexpr std::uint64_t attention = 2 * 8'192 * h + 2 * 256 * h + h;
    constexpr std::uint64_t moe =
        512 * h + 512 + 2 * 2'048 * h + 512ULL * 2 * 5'120 * 2'048 + 2 * 10'240 * h + h;
    constexpr std::uint64_t ultra = 48 * mamba + 12 * attention + 48 * moe + 2 * 131'072 * h + h;
    static_assert(ultra == 549'308'993'536ULL);  // "550B" in its name
    CHECK(total_params(m) == ultra);
    CHECK(weight_bytes(m, checkpoint_weights(m)).total().count() == 2 * ultra);  // bf16

    Json j = bundled_json("nemotron-3-ultra-550b-a55b");
    j["layers_block_type"][1] = "dense";
    CHECK_THAT(import_error(j),
               Catch::Contains("layers_block_type[1]") &&
                   Catch::Contains("\"mamba\", \"attention\", \"mlp\" or \"moe\""));
}

// ---------------------------------------------------------------------------------------------
// Llama-3.3-Nemotron-Super-49B (DeciLM, nemotron_nas.py): 49 of 80 layers have attention.
// ---------------------------------------------------------------------------------------------

TEST_CASE("Llama-3.3-Nemotron-Super-49B: attention on 49 layers, an MLP width per layer",
          "[hf_families_2026][deci]") {
    const Model m = bundled("llama-3.3-nemotron-super-49b-v1");
    CHECK(m.num_layers() == 80);
    CHECK(m.layers().layers_of_kind(CacheKind::full_attention) == 49);
    CHECK(m.layers().layers_of_kind(CacheKind::mlp_only) == 31);
    // 64 heads / n_heads_in_group 8 = 8 KV heads of 8192 / 64 = 128: 49 x 8 x 128 x 2 x 2 B.
    CHECK(kv_token(m) == 49 * 8 * 128 * 2 * 2);
    // MLP widths int(2 x ffn_mult x 8192 / 3) rounded up to 256: 5.25 -> 28672 (49 layers),
    // 2.625 -> 14336 (6), 1.3125 -> 7168 (10), 1.0 -> 5461 -> 5632 (8), 0.5 -> 2730 -> 2816 (6),
    // 3.28125 -> 17920 (1).
    CHECK(detail::hf::deci_ffn_width(1.0, 8'192) == 5'632);
    CHECK(detail::hf::deci_ffn_width(0.5, 8'192) == 2'816);
    CHECK(detail::hf::deci_ffn_width(1e30, 8'192) == 0);  // refused, never a wrapped width
    Json j = bundled_json("llama-3.3-nemotron-super-49b-v1");
    j["block_configs"][2]["ffn"]["ffn_mult"] = 1e30;
    CHECK_THAT(import_error(j), Catch::Contains("block_configs[2].ffn.ffn_mult") &&
                                    Catch::Contains("a width of 1 to 2^32 - 1"));
    constexpr std::uint64_t h = 8'192;
    constexpr std::uint64_t mlp_widths =
        49 * 28'672 + 6 * 14'336 + 10 * 7'168 + 8 * 5'632 + 6 * 2'816 + 17'920;
    // Attention layer: q and o h x h, k and v h x 1024, its input norm h. Every layer: a gated
    // MLP 3 x h x width and its post-attention norm h. Final norm; untied embeddings 128256 x h.
    constexpr std::uint64_t total =
        49 * (2 * h * h + 2 * h * 1'024 + h) + 3 * h * mlp_widths + 80 * h + h + 2 * 128'256ULL * h;
    static_assert(total == 49'867'145'216ULL);  // "49.9B"
    CHECK(total_params(m) == total);
}

// ---------------------------------------------------------------------------------------------
// Gemma 4 (gemma4.py): sliding layers of 8 KV heads x 256, full layers of global_head_dim 512 with
// num_global_key_value_heads 2 whose V is K (attention_k_eq_v); an MoE block beside the MLP.
// ---------------------------------------------------------------------------------------------

TEST_CASE("Gemma 4 26B-A4B: KV heads and head size per layer type, V cached as K",
          "[hf_families_2026][gemma4]") {
    const HfImport im = import_bundled_model(config_dir, "gemma-4-26b-a4b");
    const Model& m = im.model;
    CHECK(m.layers().layers_of_kind(CacheKind::sliding_window) == 25);
    CHECK(m.layers().layers_of_kind(CacheKind::full_attention) == 5);
    CHECK(m.layer(0).kv_heads == 8);
    CHECK(m.layer(0).k_head_dim == 256);
    CHECK(m.layer(0).window == 1'024);
    CHECK(m.layer(5).kv_heads == 2);
    CHECK(m.layer(5).k_head_dim == 512);
    // vLLM loads K's weights into V's slot and caches V like K: 2 x per layer. Per token:
    // sliding 25 x 8 x 256 x 2 x 2 B = 204,800; full 5 x 2 x 512 x 2 x 2 B = 20,480.
    CHECK(kv_token(m) == 25 * 8 * 256 * 2 * 2 + 5 * 2 * 512 * 2 * 2);
    CHECK(sequence_bytes(m, 8'192) == 20'480ULL * 8'192 + 204'800ULL * 1'024);
    // Parameters (h = 2816, 16 heads): sliding attention q and o 2 x h x 4096, k and v
    // 2 x h x 2048, q/k norms 2 x 256; full attention q and o 2 x h x 8192, k and v 2 x h x 1024
    // (V's slot as vLLM builds it), norms 2 x 512. Every layer: the MLP 3 x h x 2112, the router
    // h x 128 and its scale h, per_expert_scale 128, 128 experts of 3 x h x 704, 7 norms of h and
    // a layer_scalar. Final norm; embeddings tied (262144 x h).
    constexpr std::uint64_t h = 2'816;
    constexpr std::uint64_t sliding = 2 * h * 4'096 + 2 * h * 2'048 + 2 * 256;
    constexpr std::uint64_t full = 2 * h * 8'192 + 2 * h * 1'024 + 2 * 512;
    constexpr std::uint64_t layer =
        3 * h * 2'112 + h * 128 + h + 128 + 128 * 3 * h * 704 + 7 * h + 1;
    constexpr std::uint64_t text = 25 * sliding + 5 * full + 30 * layer + h + 262'144ULL * h;
    static_assert(text == 25'247'559'710ULL);  // the checkpoint's 25,233,141,790 and V's slots
    // The vision tower (transformers' Gemma4VisionModel, vision_config: hidden v = 1,152, 16
    // heads and 16 KV heads of 72, MLP 4,304, 27 layers, patch 16, position table 10,240):
    // per layer q, k, v, o 4 x v x 1,152, q/k norms 2 x 72, gated MLP 3 x v x 4,304, 4 norms of v;
    // the patch projection 3 x 16^2 x v, the table 2 x 10,240 x v, standardize's bias and scale
    // 2 x v; the embedder's projection v x h. 572.8 M: Google's model card gives ~550M.
    constexpr std::uint64_t v = 1'152;
    constexpr std::uint64_t vision_layer = 4 * v * 1'152 + 2 * 72 + 3 * v * 4'304 + 4 * v;
    constexpr std::uint64_t vision =
        27 * vision_layer + 3 * 256 * v + 2 * 10'240 * v + 2 * v + v * h;
    static_assert(vision == 572'794'416ULL);
    CHECK(m.config().vision_params == vision);
    CHECK(total_params(m) == text + vision);

    Json j = bundled_json("gemma-4-26b-a4b");
    j["text_config"]["num_kv_shared_layers"] = 10;
    CHECK_THAT(import_error(j), Catch::Contains("text_config.num_kv_shared_layers") &&
                                    Catch::Contains("not modelled"));
}

// ---------------------------------------------------------------------------------------------
// DeepSeek-V4 (vLLM's deepseek_v4.py, deepseek_v4_attention.py, deepseek_compressor.py and
// sparse_swa.py). Every layer caches its last sliding_window (128) latents of head_dim 512 (448
// without RoPE + 64 RoPE): 1,024 B in bf16, 584 B in fp8_ds_mla (448 fp8 + 7 UE8M0 scales + 1 pad
// + 64 bf16 RoPE). compress_ratios[i] 4 adds one latent per 4 tokens with an indexer key of
// 128 fp8 + one fp32 scale (132 B), 128 one latent per 128 tokens, 0 nothing more. The
// compressors keep fp32 state for coff x ratio tokens, 2 x coff x dim values each (coff 2 at
// ratio 4): ratio 4, 8 x 2,048 x 4 = 65,536 B, plus the indexer's own, 8 x 512 x 4 = 16,384 B;
// ratio 128, 128 x 1,024 x 4 = 524,288 B.
// ---------------------------------------------------------------------------------------------

TEST_CASE("DeepSeek-V4-Pro: 30 CSA and 31 HCA layers, 9.62 GiB a 1M sequence as vLLM counts it",
          "[hf_families_2026][deepseek_v4]") {
    const Model m = bundled("deepseek-v4-pro");
    // compress_ratios: 128, 128, then 4 and 128 alternating to layer 60 (4); its 62nd entry, 0,
    // is the MTP layer's.
    const LayerStack& L = m.layers();
    REQUIRE(L.num_layers == 61);
    std::uint32_t c4 = 0, c128 = 0;
    for (std::uint32_t i = 0; i < L.num_layers; ++i) {
        CHECK(L[i].window == 128);
        c4 += L[i].compress_ratio == 4 ? 1 : 0;
        c128 += L[i].compress_ratio == 128 ? 1 : 0;
    }
    CHECK(c4 == 30);
    CHECK(c128 == 31);
    CHECK(m.config().mtp_layers == 1);
    // At 1,048,576 tokens in bf16: 61 windows of 128 x 1,024 B; 30 CSA pools of 262,144 entries
    // of 1,024 + 132 B and their 81,920 B of state; 31 HCA pools of 8,192 entries of 1,024 B and
    // their 524,288 B of state.
    const std::uint64_t T = 1'048'576;
    const std::uint64_t windows = 61ULL * 128 * 1024;
    const std::uint64_t states = 30ULL * 81'920 + 31ULL * 524'288;
    const std::uint64_t bf16 =
        windows + 30ULL * (T / 4) * (1024 + 132) + 31ULL * (T / 128) * 1024 + states;
    CHECK(bf16 == 9'377'906'688ULL);
    CHECK(sequence_bytes(m, T) == bf16);
    // vLLM's DeepSeek-V4 announcement gives 9.62 GiB a sequence at 1M in bf16, counting the
    // pools alone with a bf16 indexer key (256 B): 30 x 262,144 x 1,280 + 31 x 8,192 x 1,024 =
    // 10,326,376,448 B = 9.617 GiB.
    CHECK(bf16 - windows - states + 30ULL * (T / 4) * (256 - 132) == 10'326'376'448ULL);
    // In fp8_ds_mla, the format vLLM runs it in: latents of 584 B.
    const std::uint64_t fp8 =
        61ULL * 128 * 584 + 30ULL * (T / 4) * (584 + 132) + 31ULL * (T / 128) * 584 + states;
    CHECK(fp8 == 5'802'431'488ULL);  // 5.40 GiB
    CHECK(kv_bytes_per_sequence(m, KvDtype::fp8_ds_mla, T).count() == fp8);
    // Per token, the pools' growth: (584 + 132) / 4 = 179 B a CSA layer, 584 / 128 = 4.5625 B an
    // HCA layer, rounded up to 5: 30 x 179 + 31 x 5.
    CHECK(kv_bytes_per_token(m, KvDtype::fp8_ds_mla).count() == 30 * 179 + 31 * 5);
    CHECK(unbounded_bytes_per_token(m, KvDtype::bf16).count() == 30 * 289 + 31 * 8);
    // The pool only holds whole groups: 127 tokens add no HCA entry, 3 no CSA entry.
    const CacheSpec& hca = L[0];
    CHECK(layer_bytes_per_sequence(hca, KvDtype::bf16, 127).count() == 127 * 1024 + 524'288);
    CHECK(layer_bytes_per_sequence(hca, KvDtype::bf16, 128).count() == 128 * 1024 + 1024 + 524'288);

    // Parameters (hidden 7,168, 128 heads of 512, q_lora_rank 1,536, o_groups 16 of
    // o_lora_rank 1,024, indexer 64 heads of 128, 384 experts of 3,072 + 1 shared, top-6, vocab
    // 129,280, hc_mult 4, 3 hash layers). Attention on every layer: wq_a 1,536 x 7,168, wkv
    // 512 x 7,168, q_norm 1,536, kv_norm 512, wq_b 65,536 x 1,536, wo_a 16,384 x 4,096, wo_b
    // 7,168 x 16,384, 128 sinks = 299,894,912. Compressor (ape r x coff x d, fused_wkv_wgate
    // 2 coff d x 7,168, norm d): ratio 128 over 512, 65,536 + 7,340,032 + 512; ratio 4 over 512,
    // 4,096 + 14,680,064 + 512; the indexer's over 128, 1,024 + 3,670,016 + 128, with its wq_b
    // 8,192 x 1,536 and weights_proj 64 x 7,168.
    const std::uint64_t attention = 299'894'912;
    const std::uint64_t hca_layer = attention + 65'536 + 7'340'032 + 512;
    const std::uint64_t csa_layer = attention + 4096 + 14'680'064 + 512 + 8192ULL * 1536 +
                                    64ULL * 7168 + 1024 + 3'670'016 + 128;
    // MoE on every layer: 385 experts of 3 x 3,072 x 7,168, the router 384 x 7,168, two norms of
    // 7,168. Hyper-connections (hc_mult 4: 24 mixes over 4 x 7,168): 2 x (24 x 28,672 + 24 + 3) a
    // layer, hc_head 4 x 28,672 + 4 + 1; the router's bias (384) on the 58 routed layers, the
    // token-to-expert table (129,280 x 6) on the 3 hash layers. Embedding and LM head
    // 129,280 x 7,168, the final norm.
    const std::uint64_t moe = 385ULL * 3 * 3072 * 7168 + 384ULL * 7168 + 2 * 7168;
    const std::uint64_t hc = 61ULL * 2 * (24 * 28'672 + 24 + 3) + 4 * 28'672 + 4 + 1;
    const std::uint64_t extra = 58ULL * 384 + 3ULL * 129'280 * 6;
    const std::uint64_t total =
        31 * hca_layer + 30 * csa_layer + 61 * moe + hc + extra + 2ULL * 129'280 * 7168 + 7168;
    CHECK(total == 1'572'999'528'803ULL);  // "1.6T total parameters" (model card)
    CHECK(total_params(m) == total);
}

TEST_CASE("DeepSeek-V4-Flash: 284B parameters, two window-only layers, 21 CSA and 20 HCA",
          "[hf_families_2026][deepseek_v4]") {
    const Model m = bundled("deepseek-v4-flash");
    // compress_ratios: 0, 0, then 4 and 128 alternating to layer 42 (4).
    const LayerStack& L = m.layers();
    REQUIRE(L.num_layers == 43);
    CHECK(L[0].compress_ratio == 0);
    CHECK(L[1].compress_ratio == 0);
    CHECK(L[2].compress_ratio == 4);
    CHECK(L[2].index_head_dim == 128);
    CHECK(L[3].compress_ratio == 128);
    CHECK(L[3].index_head_dim == 0);
    // At 8,192 tokens in bf16: 43 windows of 128 x 1,024 B; 21 CSA pools of 2,048 x 1,156 B and
    // 81,920 B of state; 20 HCA pools of 64 x 1,024 B and 524,288 B of state.
    const std::uint64_t expected =
        43ULL * 128 * 1024 + 21ULL * (2048 * 1156 + 81'920) + 20ULL * (64 * 1024 + 524'288);
    CHECK(expected == 68'870'144ULL);
    CHECK(sequence_bytes(m, 8192) == expected);
    // A window-only layer holds its window and nothing per token beyond it.
    CHECK(layer_bytes_per_sequence(L[0], KvDtype::bf16, 1'000'000).count() == 128 * 1024);
    CHECK(kv_bytes_per_token(m, KvDtype::bf16).count() == 21 * 289 + 20 * 8);
    // Parameters, as for Pro with hidden 4,096, 64 heads, q_lora_rank 1,024, o_groups 8, 256
    // experts of 2,048: attention 4,194,304 + 2,097,152 + 1,024 + 512 + 3 x 33,554,432 + 64 =
    // 106,956,352 a layer; compressors over 512 of ratio 128 (65,536 + 4,194,304 + 512) and 4
    // (4,096 + 8,388,608 + 512), the indexer's (1,024 + 2,097,152 + 128), its wq_b 8,192 x 1,024
    // and weights_proj 64 x 4,096; MoE 257 x 3 x 2,048 x 4,096 + 256 x 4,096 + 2 x 4,096.
    const std::uint64_t attention = 106'956'352;
    const std::uint64_t hca = attention + 65'536 + 4'194'304 + 512;
    const std::uint64_t csa =
        attention + 4096 + 8'388'608 + 512 + 8192ULL * 1024 + 64ULL * 4096 + 1024 + 2'097'152 + 128;
    const std::uint64_t moe = 257ULL * 3 * 2048 * 4096 + 256ULL * 4096 + 2 * 4096;
    const std::uint64_t hc = 43ULL * 2 * (24 * 16'384 + 24 + 3) + 4 * 16'384 + 4 + 1;
    const std::uint64_t extra = 40ULL * 256 + 3ULL * 129'280 * 6;
    const std::uint64_t total =
        2 * attention + 20 * hca + 21 * csa + 43 * moe + hc + extra + 2ULL * 129'280 * 4096 + 4096;
    CHECK(total == 284'334'567'511ULL);  // "284B total parameters" (model card)
    CHECK(total_params(m) == total);
}

// vLLM's DeepSeek-V4 allocator (engine/vllm_deepseek_v4.hpp), by hand from its code. Pages,
// each rounded up to 576 B (_apply_alignment_padding), cache block 256:
//   window   SlidingWindowMLASpec, 64 tokens x 584 B = 37,376 -> 37,440 (65 x 576)
//   pool4    MLAAttentionSpec ratio 4, 256 / 4 = 64 entries x 584 = 37,376 -> 37,440
//   keys4    DeepseekV4IndexerCache, 64 entries x (128 + 4) = 8,448 -> 8,640 (15 x 576)
//   pool128  256 / 128 = 2 entries x 584 = 1,168 -> 1,728 (3 x 576)
//   state4   CompressorStateCache, block 4 x 2 x 2 x 512 fp32 = 32,768 -> 32,832 (57 x 576)
//   istate4  block 4 x 2 x 2 x 128 fp32 = 8,192 -> 8,640
//   state128 block 8 x 2 x 1 x 512 fp32 = 32,768 -> 32,832
// Groups: full MLA {pool4, keys4, pool128}, window (64, 128), (4, 8) {state4, istate4},
// (8, 128) {state128}. A layer tuple is 37,440 + 8,640 + 1,728 = 47,808 B.
TEST_CASE("vLLM's DeepSeek-V4-Flash pool: 5 groups, 22 layer tuples of 47,808 B, blocks of 256",
          "[hf_families_2026][deepseek_v4]") {
    const Model m = bundled("deepseek-v4-flash");
    const VllmV4Layout p = vllm_deepseek_v4_layout(m);
    REQUIRE(p.refused.empty());
    using C = VllmV4Cache;
    const auto spec = [&](C c) { return p.specs[static_cast<std::size_t>(c)]; };
    CHECK(spec(C::window).page.count() == 37'440);
    CHECK(spec(C::pool4).page.count() == 37'440);
    CHECK(spec(C::keys4).page.count() == 8'640);
    CHECK(spec(C::pool128).page.count() == 1'728);
    CHECK(spec(C::state4).page.count() == 32'832);
    CHECK(spec(C::istate4).page.count() == 8'640);
    CHECK(spec(C::state128).page.count() == 32'832);
    // The states pad up to the full-MLA page that holds them: 32,832 -> 37,440, 8,640 stays.
    CHECK(spec(C::state4).padded_page.count() == 37'440);
    CHECK(spec(C::istate4).padded_page.count() == 8'640);
    CHECK(p.tuple_bytes.count() == 47'808);
    // Flash's 43 layers: 2 window-only, 21 at ratio 4, 20 at ratio 128. Tuples per group (most
    // frequent count of one page size): full max(21, 21, 20) = 21, window 43, (4, 8) 21,
    // (8, 128) 20. _approximate_gcd over d in [21, 43]: pad(21) = 0 + 20 + 0 + 1 = 21,
    // pad(22) = 1 + 1 + 1 + 2 = 5, pad(23) = 2 + 3 + 2 + 3 = 10, ... so T = 22; the window group
    // splits cdiv(43, 22) = 2 ways (22 and 21 layers), the state groups stay whole.
    CHECK(p.num_groups == 4);
    CHECK(p.target_tuples == 22);
    CHECK(p.groups[0].tuples == 21);
    const auto splits = [&](std::uint32_t block, std::uint64_t window) {
        for (std::uint32_t g = 1; g < p.num_groups; ++g)
            if (p.groups[g].block == block && p.groups[g].window == window)
                return p.groups[g].groups;
        return 0U;
    };
    CHECK(splits(64, 128) == 2);
    CHECK(splits(4, 8) == 1);
    CHECK(splits(8, 128) == 1);
    // The pool's slot: the longest bucket, the first window split's 22 layers: 47,808 x 22 =
    // 1,051,776 B a block.
    CHECK(vllm_deepseek_v4_tuples(m, p, 0, m.num_layers()) == 22);

    // tp 4 (the caches are replicated, the same on every rank), 120 GiB = 128,849,018,880 B:
    // 128,849,018,880 // 1,051,776 = 122,506 blocks. A request of 32,000 tokens with 16,384
    // tokens in flight (2 batches x 8,192) takes cdiv(32,000, 256) = 125 full-MLA blocks;
    // per window split cdiv(min(127 + 16,384, 32,000), 64) + 1 = 258 + 1 = 259 (two: 518);
    // (4, 8): cdiv(7 + 16,384, 4) + 1 = 4,098 + 1 = 4,099; (8, 128): cdiv(16,511, 8) + 1 =
    // 2,064 + 1 = 2,065: 6,807 in all. 122,506 / 6,807 = 17.99706x; x 32,000 = 575,905.98: 575,905
    // tokens.
    VllmOptions o;
    o.max_model_len = 32'000;
    o.max_num_batched_tokens = 8'192;
    const Layout l{m, {.tp = 4}};
    const VllmKvCache c = vllm_kv_cache(m, KvDtype::fp8_ds_mla, l, 120 * GiB, o);
    REQUIRE(c.refused.empty());
    CHECK(c.deepseek_v4);
    CHECK(c.block_size == 256);
    CHECK(c.num_groups == 5);
    CHECK(c.bytes_per_block.count() == 1'051'776);
    CHECK(c.num_blocks == 122'506);
    CHECK(c.blocks_per_request == 6'807);
    CHECK(c.kv_cache_tokens == 575'905);
    // One request's need (_max_memory_usage_bytes_from_groups): 6,807 x 1,051,776 B.
    CHECK(c.needed.count() == 6'807ULL * 1'051'776);
}

TEST_CASE("vLLM's DeepSeek-V4-Flash need at 30,000 tokens: 6.66 GiB, as vLLM's error printed it",
          "[hf_families_2026][deepseek_v4]") {
    // vllm-project/vllm issue #44376 (2 x GH200, tp 2, max_model_len 30,000, block 256): "6.66
    // GiB KV cache is needed ... the available KV cache memory (5.44 GiB) ... the estimated
    // maximum model length is 13528". With 16,384 tokens in flight: 118 + 2 x (cdiv(16,511, 64)
    // + 1 = 259) + (cdiv(16,391, 4) + 1 = 4,099) + (cdiv(16,511, 8) + 1 = 2,065) = 6,800 blocks
    // x 1,051,776 B = 7,152,076,800 B = 6.661 GiB. At 13,528 tokens a request takes 53 + 2 x 213
    // + 3,383 + 1,692 = 5,554 blocks, at 13,529 it takes 5,556: with 5,556 blocks (5.442 GiB,
    // printed 5.44), one is the null block and 13,528 is the longest that fits.
    const Model m = bundled("deepseek-v4-flash");
    VllmOptions o;
    o.max_model_len = 30'000;
    o.max_num_batched_tokens = 8'192;
    const Layout l{m, {.tp = 2}};
    const VllmKvCache c =
        vllm_kv_cache(m, KvDtype::fp8_ds_mla, l, Bytes::exactly(5'556ULL * 1'051'776), o);
    REQUIRE(c.refused.empty());
    CHECK(c.needed.count() == 7'152'076'800ULL);
    CHECK_FALSE(c.enough_memory);
    CHECK(c.estimated_max_model_len == 13'528);
}

TEST_CASE("vLLM's DeepSeek-V4-Pro pool: T = 31, 31 tuples a block",
          "[hf_families_2026][deepseek_v4]") {
    // Pro's 61 layers: 30 at ratio 4, 31 at 128. Tuples: full max(30, 30, 31) = 31, window 61,
    // (4, 8) 30, (8, 128) 31; pad(31) = 0 + 1 + 1 + 0 = 2, pad(32) = 1 + 3 + 2 + 1 = 7, and
    // larger d pad more: T = 31, the window splits 2 ways (31 and 30). Slot 47,808 x 31 =
    // 1,482,048 B.
    const Model m = bundled("deepseek-v4-pro");
    const VllmV4Layout p = vllm_deepseek_v4_layout(m);
    REQUIRE(p.refused.empty());
    CHECK(p.target_tuples == 31);
    CHECK(p.groups[static_cast<std::size_t>(
                       p.specs[static_cast<std::size_t>(VllmV4Cache::window)].group)]
              .groups == 2);
    const Layout l{m, {.tp = 8}};
    VllmOptions o;
    o.max_model_len = 32'000;
    const VllmKvCache c = vllm_kv_cache(m, KvDtype::fp8_ds_mla, l, 40 * GiB, o);
    REQUIRE(c.refused.empty());
    CHECK(c.bytes_per_block.count() == 1'482'048);
    // 42,949,672,960 // 1,482,048 = 28,979.
    CHECK(c.num_blocks == 28'979);
}

TEST_CASE("vLLM refuses DeepSeek-V4 under decode context parallelism",
          "[hf_families_2026][deepseek_v4]") {
    // Every V4 layer's window (and every compressed layer's compressor state) is a
    // SlidingWindowMLASpec, whose max_memory_usage_bytes asserts decode_context_parallel_size ==
    // 1 (vllm/v1/kv_cache_interface.py): vLLM stops before planning a pool. At dcp 1 the same
    // layout plans (the tp 4 test above).
    const Model m = bundled("deepseek-v4-flash");
    VllmOptions o;
    o.max_model_len = 32'000;
    const VllmKvCache c =
        vllm_kv_cache(m, KvDtype::fp8_ds_mla, Layout{m, {.tp = 4, .dcp = 2}}, 120 * GiB, o);
    CHECK_THAT(std::string(c.refused), Catch::Contains("--decode-context-parallel-size") &&
                                           Catch::Contains("DCP not support sliding window.") &&
                                           Catch::Contains("kv_cache_interface.py"));
    CHECK(c.num_blocks == 0);
    CHECK(
        vllm_kv_cache(m, KvDtype::fp8_ds_mla, Layout{m, {.tp = 4}}, 120 * GiB, o).refused.empty());
}

TEST_CASE("DeepSeek-V4's MTP draft layer is window only in vLLM's pool",
          "[hf_families_2026][deepseek_v4][speculative]") {
    // vLLM's DeepseekV4Attention takes compress_ratio 1 for a layer past num_hidden_layers
    // (vllm/models/deepseek_v4/attention.py): the MTP layer registers its DeepseekV4SWACache
    // alone, one more cache in the window group, whatever the model's first layer is. Pro's first
    // layer is an HCA layer (compress_ratios starts 128, 128, 4): copying it would add a pool128
    // and a state128 too.
    const Model m = bundled("deepseek-v4-pro");
    REQUIRE(m.layer(0).compress_ratio == 128);
    const DraftedModel d = with_drafter(m, {.tp = 8}, {.method = DraftMethod::mtp, .tokens = 1});
    REQUIRE(d.drafter_layers == 1);
    REQUIRE(d.model.num_layers() == 62);
    CHECK(d.model.layer(61).compress_ratio == 0);
    CHECK(d.model.layer(61).window == 128);
    const VllmV4Layout p = vllm_deepseek_v4_layout(d.model);
    REQUIRE(p.refused.empty());
    const auto spec = [&](VllmV4Cache c) { return p.specs[static_cast<std::size_t>(c)]; };
    CHECK(spec(VllmV4Cache::window).layers == 62);
    CHECK(spec(VllmV4Cache::pool128).layers == 31);
    CHECK(spec(VllmV4Cache::state128).layers == 31);
    // Tuples: full max(30, 30, 31) = 31, window 62, (4, 8) 30, (8, 128) 31; over d in [31, 62]
    // pad(31) = 0 + 0 + 1 + 0 = 1 is the least: T = 31, the window splits cdiv(62, 31) = 2 ways
    // of 31. The slot stays Pro's 31 tuples, 47,808 x 31 = 1,482,048 B. (An HCA copy would make
    // the full group 32 and the slot 47,808 x 32 = 1,529,856 B.)
    CHECK(p.target_tuples == 31);
    CHECK(vllm_deepseek_v4_tuples(d.model, p, 0, d.model.num_layers()) == 31);
    VllmOptions o;
    o.max_model_len = 32'000;
    const VllmKvCache c =
        vllm_kv_cache(d.model, KvDtype::fp8_ds_mla, Layout{d.model, d.parallel}, 40 * GiB, o);
    REQUIRE(c.refused.empty());
    CHECK(c.bytes_per_block.count() == 1'482'048);
    // A request: cdiv(32,000, 256) = 125 full-MLA blocks; each window split cdiv(min(127 +
    // 16,384, 32,000), 64) + 1 = 259 (two: 518); (4, 8) cdiv(7 + 16,384, 4) + 1 = 4,099; (8, 128)
    // cdiv(127 + 16,384, 8) + 1 = 2,065: 6,807, as without the draft layer (its window shares
    // the splits).
    CHECK(c.blocks_per_request == 6'807);
}

TEST_CASE("vLLM pages DeepSeek-V4 in DEEPSEEK_SPARSE_SWA's blocks of 256",
          "[hf_families_2026][deepseek_v4]") {
    const Model m = bundled("deepseek-v4-flash");
    const auto b = vllm_attention_backend(m, GpuFamily::blackwell, KvDtype::fp8_ds_mla, 1, 16);
    REQUIRE(b);
    CHECK(b->block_size == 256);
    CHECK(b->forced);
}

TEST_CASE("DeepSeek-V4 on SM 12.x: FlashInfer's SM120 sparse MLA in blocks of 256",
          "[hf_families_2026][deepseek_v4][backend]") {
    // FlashMLA's sparse kernels are SM 9.x and 10.x only; main runs V4 on the RTX PRO 6000
    // (12.0) through DeepseekV4FlashInferSM120Attention (vllm/models/deepseek_v4/attention.py),
    // FlashInfer's SM120 sparse MLA over the packed 584 B fp8_ds_mla tokens, the pool paged in
    // DEEPSEEK_SPARSE_SWA's 256 as on a B200: the same layout, so the same figures.
    const Model m = bundled("deepseek-v4-flash");
    const GpuSpec& rtx = gpus::rtx_pro_6000;
    const auto b = vllm_attention_backend(m, rtx, KvDtype::fp8_e4m3, 1, 16);
    REQUIRE(b);
    CHECK(b->backend == VllmAttentionBackend::flashinfer_mla_sparse_sm120);
    CHECK(name(b->backend) == "FLASHINFER_MLA_SPARSE_SM120");
    CHECK(b->block_size == 256);
    CHECK(b->forced);
    CHECK(vllm_stored_kv(m, KvDtype::bf16, rtx, 1).dtype == KvDtype::fp8_ds_mla);
    CHECK_FALSE(vllm_sparse_mla_refusal(m, rtx, KvDtype::bf16));
    // Before main's line kvplan knows no SM 12.x sparse MLA: none, with the reason.
    CHECK_FALSE(vllm_attention_backend(m, rtx, KvDtype::fp8_e4m3, 1, 16, 1, {0, 29}));
    const auto why = vllm_sparse_mla_refusal(m, rtx, KvDtype::bf16, {0, 29});
    REQUIRE(why);
    CHECK_THAT(std::string(*why), Catch::Contains("compute capability 12.x"));
}

TEST_CASE("DeepSeek-V4's compress_ratios are checked entry by entry",
          "[hf_families_2026][errors]") {
    Json j = bundled_json("deepseek-v4-flash");
    j["compress_ratios"][5] = 8;
    CHECK_THAT(import_error(j), Catch::Contains("compress_ratios[5]") &&
                                    Catch::Contains("4 or 128") && Catch::Contains("found 8"));
    j["compress_ratios"] = Json::array({0, 4, 128});
    CHECK_THAT(import_error(j), Catch::Contains("compress_ratios") &&
                                    Catch::Contains("at least 43") && Catch::Contains("3 entries"));
}

// ---------------------------------------------------------------------------------------------
// Kimi Linear (vLLM's kimi_linear.py; the recurrent state as mamba_utils.py's kda_state_shape).
// Kimi-K3's config is not public: its text model is a kimi_linear, so the family is modelled on
// Kimi-Linear-48B-A3B, whose config values are quoted below (a public test fixture quotes the
// released 48B file: hidden 2,304, 27 layers, 32 heads, kv_lora_rank 512, qk_nope 128, qk_rope 64,
// v_head_dim 128, no q_lora_rank, 256 experts of 1,024, top-8, 1 shared, the first layer dense of
// 9,216, vocab 163,840; linear_attn_config: full_attn_layers 4, 8, ..., 24, 27, 32 KDA heads of
// 128, a 4-tap short convolution).
// ---------------------------------------------------------------------------------------------

namespace {

Json kimi_linear_48b() {
    return Json::parse(R"({
        "architectures": ["KimiLinearForCausalLM"], "model_type": "kimi_linear",
        "hidden_size": 2304, "num_hidden_layers": 27, "vocab_size": 163840,
        "num_attention_heads": 32, "kv_lora_rank": 512, "q_lora_rank": null,
        "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
        "num_experts": 256, "num_experts_per_token": 8, "num_shared_experts": 1,
        "moe_intermediate_size": 1024, "first_k_dense_replace": 1, "moe_layer_freq": 1,
        "intermediate_size": 9216, "tie_word_embeddings": false,
        "max_position_embeddings": 1048576,
        "linear_attn_config": {"full_attn_layers": [4, 8, 12, 16, 20, 24, 27],
            "kda_layers": [1, 2, 3, 5, 6, 7, 9, 10, 11, 13, 14, 15, 17, 18, 19, 21, 22, 23,
                           25, 26],
            "head_dim": 128, "num_heads": 32, "short_conv_kernel_size": 4}})");
}

}  // namespace

TEST_CASE("Kimi-Linear-48B-A3B: 20 KDA states of 2.07 MiB and 7 MLA layers",
          "[hf_families_2026][kimi_linear]") {
    const Model m = model_from_hf_json(kimi_linear_48b(), "kimi-linear.json", "kimi-linear");
    const LayerStack& L = m.layers();
    REQUIRE(L.num_layers == 27);
    CHECK(L.layers_of_kind(CacheKind::mla_latent) == 7);
    CHECK(L.layers_of_kind(CacheKind::constant_state) == 20);
    CHECK(L[3].kind == CacheKind::mla_latent);  // layer 4, 1-based
    CHECK(L[0].kind == CacheKind::constant_state);
    // A KDA layer's state: short convolutions of q, k and v, 3 x (4 - 1) x 32 x 128 values in
    // bf16 = 73,728 B, and the recurrent state 32 x 128 x 128 in fp32 = 2,097,152 B.
    CHECK(L[0].state_bytes.count() == 73'728 + 2'097'152);
    // MLA: (512 + 64) x 2 B = 1,152 B a token on 7 layers. At 131,072 tokens:
    const std::uint64_t tokens = 131'072;
    CHECK(kv_bytes_per_token(m, KvDtype::bf16).count() == 7 * 1152);
    CHECK(sequence_bytes(m, tokens) == 7ULL * 1152 * tokens + 20ULL * 2'170'880);
    // A KDA layer's mixer (P = 32 x 128 = 4,096): q, k, v 3 x 2,304 x P, their convolutions
    // 3 x P x 4, f_a 128 x 2,304 and f_b P x 128, b_proj 32 x 2,304, g_a and g_b as f, A_log 32,
    // dt_bias P, o_norm 128, o_proj 2,304 x P = 39,514,272. An MLA layer: q_proj 32 x 192 x 2,304,
    // kv_a 576 x 2,304, kv_a_layernorm 512, kv_b 32 x 256 x 512, o_proj 2,304 x 4,096 =
    // 29,114,880. MLPs: layer 0 dense 3 x 9,216 x 2,304; 26 MoE layers of 257 experts of
    // 3 x 1,024 x 2,304, the router 256 x 2,304 and its bias 256. Two norms of 2,304 a layer,
    // the embedding and LM head 163,840 x 2,304, the final norm.
    const std::uint64_t expert = 3ULL * 1024 * 2304;
    const std::uint64_t total = 20ULL * 39'514'272 + 7ULL * 29'114'880 + 3ULL * 9216 * 2304 +
                                26 * (257 * expert + 256ULL * 2304 + 256) + 27ULL * 2 * 2304 +
                                2ULL * 163'840 * 2304 + 2304;
    // 49.12B: the name's 48B leaves out the 0.75B embedding.
    CHECK(total == 49'122'681'728ULL);
    CHECK(total_params(m) == total);
}

TEST_CASE("Kimi Linear's layer lists must name every layer once", "[hf_families_2026][errors]") {
    Json j = kimi_linear_48b();
    j["linear_attn_config"]["kda_layers"][0] = 4;
    CHECK_THAT(import_error(j), Catch::Contains("linear_attn_config.kda_layers[0]") &&
                                    Catch::Contains("named once") && Catch::Contains("found 4"));
    j = kimi_linear_48b();
    j["linear_attn_config"]["kda_layers"].erase(0);
    CHECK_THAT(import_error(j), Catch::Contains("linear_attn_config.kda_layers") &&
                                    Catch::Contains("layer 1 in neither"));
}

// ---------------------------------------------------------------------------------------------
// Kimi-K3 (SGLang's python/sglang/srt/models/kimi_k3.py and kimi_k3_vl.py): Kimi Linear's cache
// (linear_attn_config: 24 MLA layers, 69 KDA layers of 96 heads x 128) with K3's weights.
// ---------------------------------------------------------------------------------------------

TEST_CASE("Kimi-K3: 69 KDA states of 6.21 MiB and 24 MLA latents a token",
          "[hf_families_2026][kimi_linear][kimi_k3]") {
    const Model m = bundled("kimi-k3");
    const LayerStack& L = m.layers();
    REQUIRE(L.num_layers == 93);
    CHECK(L.layers_of_kind(CacheKind::mla_latent) == 24);
    CHECK(L.layers_of_kind(CacheKind::constant_state) == 69);
    CHECK(L[3].kind == CacheKind::mla_latent);   // layer 4, 1-based
    CHECK(L[92].kind == CacheKind::mla_latent);  // 93
    // A KDA layer's state: short convolutions of q, k and v, 3 x (4 - 1) x 96 x 128 values in
    // bf16 = 221,184 B, and the recurrent state 96 x 128 x 128 in fp32 = 6,291,456 B.
    CHECK(L[0].state_bytes.count() == 221'184 + 6'291'456);
    // MLA: (512 + 64) x 2 B = 1,152 B a token on 24 layers. At 1,048,576 tokens:
    CHECK(kv_token(m) == 24 * 1'152);
    CHECK(sequence_bytes(m, 1'048'576) == 24ULL * 1'152 * 1'048'576 + 69ULL * 6'512'640);
}

TEST_CASE("Kimi-K3's parameters: latent MoE, gates, attention residuals, the tower apart",
          "[hf_families_2026][kimi_linear][kimi_k3][params]") {
    const Model m = bundled("kimi-k3");
    constexpr std::uint64_t h = 7'168, p = 96 * 128;
    // A KDA layer (KimiK3DeltaAttention, full-rank gate): q, k, v and g_proj 4 x h x P, the
    // q/k/v convolutions 3 x P x 4 (no bias), f_a h x 128 and f_b 128 x P, b_proj h x 96, A_log 96
    // (one per head, as the model holds it), dt_bias P, o_norm 128, o_proj P x h.
    constexpr std::uint64_t kda =
        4 * h * p + 3 * p * 4 + h * 128 + 128 * p + h * 96 + 96 + p + 128 + p * h;
    static_assert(kda == 443'740'384);
    // An MLA layer (KimiK3MLAAttention over DeepseekV2AttentionMLA): q_a h x 1536 and its norm,
    // q_b 1536 x 96 x 192, kv_a h x 576, kv_a_layernorm 512, kv_b 512 x 96 x 256, o_proj
    // 96 x 128 x h, the output gate g_proj h x 96 x 128.
    constexpr std::uint64_t mla = h * 1'536 + 1'536 + 1'536 * 96 * 192 + h * 576 + 512 +
                                  512 * 96 * 256 + 96 * 128 * h + h * 96 * 128;
    static_assert(mla == 232'196'096);
    // A MoE layer (KimiK3MoE): 896 experts of 3 x 3584 x 3072 in the latent, the router 896 x h
    // and its e_score_correction_bias, routed_expert_down_proj and _up_proj h x 3584 each, the
    // latent norm 3584, the shared experts one MLP of 3 x h x (2 x 3072).
    constexpr std::uint64_t moe =
        896ULL * 3 * 3'584 * 3'072 + 896 * h + 896 + 2 * h * 3'584 + 3'584 + 3 * h * 6'144;
    static_assert(moe == 29'784'936'832ULL);
    // Layer 0's dense MLP 3 x h x 33,792; per layer the two norms and the attention residuals'
    // two norms and two h x 1 projections (6h); embeddings and LM head 163,840 x h each; the
    // final norm, output_attn_res_norm and output_attn_res_proj (3h).
    constexpr std::uint64_t text =
        69 * kda + 24 * mla + 3 * h * 33'792 + 92 * moe + 93 * 6 * h + 2ULL * 163'840 * h + 3 * h;
    static_assert(text == 2'779'484'476'000ULL);  // 2.78T
    // MoonViT3d (kimi_k3_vl.py), width 1024, 27 blocks: per block two RMSNorms, wqkv 1024 x 4608
    // and wo 1536 x 1024 (qkv_hidden_size 1536), fc0 and fc1 1024 x 4096 each, no biases; the
    // bias-free Conv2d patch embedding 3 x 14 x 14 x 1024, the 64 x 64 x 1024 position table, the
    // final norm; PatchMergerMLPV2 4096 x 4096, 4096 x h and its post norm h.
    constexpr std::uint64_t block = 2 * 1'024 + 1'024 * 4'608 + 1'536 * 1'024 + 2 * 1'024 * 4'096;
    constexpr std::uint64_t tower =
        27 * block + 3 * 14 * 14 * 1'024 + 64 * 64 * 1'024 + 1'024 + 4'096 * 4'096 + 4'096 * h + h;
    static_assert(tower == 447'358'976);
    CHECK(m.config().vision_params == tower);
    CHECK(m.config().moe.latent_size == 3'584);
    CHECK(total_params(m) == text + tower);

    // Each flag's weights are its own: without the full-rank gate KDA has g_a and g_b; without
    // the MLA gate, or the attention residuals, their weights go.
    Json j = bundled_json("kimi-k3");
    j["text_config"]["linear_attn_config"]["use_full_rank_gate"] = false;
    CHECK(text + tower - total_params(model_from_hf_json(j, "k3.json")) ==
          69 * (h * p - (h * 128 + 128 * p)));
    j = bundled_json("kimi-k3");
    j["text_config"]["mla_use_output_gate"] = false;
    CHECK(text + tower - total_params(model_from_hf_json(j, "k3.json")) == 24 * h * p);
    j = bundled_json("kimi-k3");
    j["text_config"].erase("attn_res_block_size");
    CHECK(text + tower - total_params(model_from_hf_json(j, "k3.json")) == 93 * 4 * h + 2 * h);
}
