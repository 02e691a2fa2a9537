#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <kvplan/engine.hpp>
#include <kvplan/hf_config.hpp>
#include <kvplan/kv_bytes.hpp>
#include <kvplan/layout.hpp>
#include <kvplan/paging.hpp>
#include <kvplan/weights.hpp>
#include <string>

#include "support/bundled_models.hpp"

// The families of 2025-2026 (configs/models/README.md): per family, the KV bytes per token, the
// bytes one sequence holds at 8,192 and at 131,072 tokens (bf16 KV), and the parameter count
// against the official figure of tests/data/official_params.json.

using namespace kvplan;
using namespace kvplan::testing;
namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t k8 = 8'192;
constexpr std::uint64_t k128 = 131'072;

std::uint64_t seq_bytes(const Model& m, std::uint64_t tokens, KvFormat f = KvDtype::bf16) {
    return kv_bytes_per_sequence(m, f, tokens).count();
}

/// The official total of `id`, and whether `ours` lies within 1% of it.
bool within_one_percent(std::string_view id, std::uint64_t ours) {
    const Json official = read_json_file(data_dir / "official_params.json");
    const double stated = official.at(std::string(id)).at("params").get<double>();
    return std::abs(static_cast<double>(ours) - stated) / stated < 0.01;
}

/// The message of importing `j` (written out as a file), or "no error".
std::string error_of(const Json& j) {
    try {
        (void)model_from_hf_json(j, "kvplan-test.json");
    } catch (const InvalidInput& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Llama-4 (llama-4-scout-17b-16e-instruct, llama-4-maverick-17b-128e-instruct): 48 layers, 40
// query and 8 KV heads of 128; layers with RoPE attend within chunks of attention_chunk_size 8192
// (no_rope_layers absent: every 4th layer, 3, 7, ..., 47, is NoPE global attention).
// ---------------------------------------------------------------------------------------------

TEST_CASE("Llama-4 Scout has 36 chunked-local layers of 8,192 and 12 global layers",
          "[hf_families][llama4]") {
    const Model m = bundled("llama-4-scout-17b-16e-instruct");
    CHECK(m.num_layers() == 48);
    CHECK(m.layers().layers_of_kind(CacheKind::chunked_local) == 36);
    CHECK(m.layers().layers_of_kind(CacheKind::full_attention) == 12);
    for (std::uint32_t i : {3u, 7u, 47u}) CHECK(m.layer(i).kind == CacheKind::full_attention);
    CHECK(m.layer(0).kind == CacheKind::chunked_local);
    CHECK(m.layer(0).window == 8'192);
    CHECK(m.layer(0).kv_heads == 8);
    CHECK(m.query_head_dim() == 128);
}

TEST_CASE("Llama-4 Scout's cache: a chunked layer holds at most one chunk",
          "[hf_families][llama4]") {
    const Model m = bundled("llama-4-scout-17b-16e-instruct");
    // Every layer adds 2 (K, V) x 8 heads x 128 x 2 B = 4,096 B per token: 48 x 4,096 = 196,608.
    CHECK(kv_token(m) == 48ULL * 4'096);
    CHECK(kv_token(m) == 196'608);
    // 8k: every layer holds all 8,192 tokens (one whole chunk): 196,608 x 8,192.
    CHECK(seq_bytes(m, k8) == 196'608ULL * 8'192);
    CHECK(seq_bytes(m, k8) == 1'610'612'736ULL);
    // 128k: the 12 global layers hold 131,072 tokens (12 x 4,096 x 131,072 = 6,442,450,944), the
    // 36 chunked ones one chunk (36 x 4,096 x 8,192 = 1,207,959,552): 7,650,410,496 B.
    CHECK(seq_bytes(m, k128) == 12ULL * 4'096 * 131'072 + 36ULL * 4'096 * 8'192);
    CHECK(seq_bytes(m, k128) == 7'650'410'496ULL);
    // Past the chunk only the global layers grow: 12 x 4,096 = 49,152 B per token.
    CHECK(unbounded_bytes_per_token(m, KvDtype::bf16).count() == 49'152);
    // Paged in blocks of 16: a chunked layer peaks at 8,192 / 16 = 512 blocks.
    CHECK(held_blocks(m.layer(0), k128, 16).count() == 512);
    CHECK(held_blocks(m.layer(3), k128, 16).count() == 8'192);
}

TEST_CASE("Llama-4 Scout's parameters: 16 experts, a shared expert, and the vision tower apart",
          "[hf_families][llama4][params]") {
    const Model m = bundled("llama-4-scout-17b-16e-instruct");
    const MoeShape& moe = m.config().moe;
    CHECK(moe.experts == 16);
    CHECK(moe.experts_per_token == 1);
    CHECK(moe.expert_intermediate_size == 8'192);
    CHECK(moe.shared_experts == 1);
    CHECK(moe_layer_count(m) == 48);  // interleave_moe_layer_step 1
    // Per layer: attention q and o 2 x 5120^2 + k and v 2 x 5120 x 1024 = 62,914,560; router
    // 5120 x 16 = 81,920; 16 experts x 3 x 5120 x 8192 = 2,013,265,920; the shared expert
    // 125,829,120; two norms 10,240: 2,202,101,760 x 48 = 105,700,884,480. Untied embedding and
    // LM head 2 x 202,048 x 5120 = 2,068,971,520; final norm 5,120. Text: 107,769,861,120.
    constexpr std::uint64_t text = 48ULL * 2'202'101'760 + 2'068'971'520ULL + 5'120;
    static_assert(text == 107'769'861'120ULL);
    // Vision (Llama4VisionModel): 34 layers of 4 x (1408^2 + 1408) + 2 x 1408 x 5632 + 5632 +
    // 1408 + 4 x 1408 = 23,807,872; patch 3 x 14 x 14 x 1408 = 827,904; class 1,408; positions
    // (24^2 + 1) x 1408 = 812,416; two LayerNorms 5,632; adapter 5632 x 4096 + 4096^2 =
    // 39,845,888; projector 4096 x 5120 = 20,971,520. 871,932,416.
    constexpr std::uint64_t vision =
        34ULL * 23'807'872 + 827'904 + 1'408 + 812'416 + 5'632 + 39'845'888 + 20'971'520;
    static_assert(vision == 871'932'416ULL);
    CHECK(m.config().vision_params == vision);
    CHECK(count_params(m).vision == vision);
    CHECK(total_params(m) == text + vision);
    CHECK(total_params(m) == 108'641'793'536ULL);  // the HF safetensors total
    CHECK(within_one_percent("llama-4-scout-17b-16e-instruct", total_params(m)));  // 109B
    // Active, language model: 15 idle experts of 3 x 5120 x 8192 on 48 layers less.
    CHECK(active_params(m) - vision == text - 48ULL * 15 * 125'829'120);
    CHECK(active_params(m) - vision == 17'172'894'720ULL);  // "17B active"
}

TEST_CASE("Llama-4 Maverick routes on every other layer", "[hf_families][llama4][params]") {
    const Model m = bundled("llama-4-maverick-17b-128e-instruct");
    // interleave_moe_layer_step 2: layer i routes when (i + 1) % 2 == 0 (vLLM's llama4.py).
    CHECK(moe_layer_count(m) == 24);
    CHECK_FALSE(m.is_moe_layer(0));
    CHECK(m.is_moe_layer(1));
    CHECK(m.config().intermediate_size == 16'384);  // intermediate_size_mlp
    // The same attention as Scout: 196,608 B per token, the same 8k and 128k bytes.
    CHECK(kv_token(m) == 196'608);
    CHECK(seq_bytes(m, k8) == 1'610'612'736ULL);
    CHECK(seq_bytes(m, k128) == 7'650'410'496ULL);
    // Dense layer 62,914,560 + 3 x 5120 x 16384 + 10,240 = 314,583,040; MoE layer 62,914,560 +
    // 5120 x 128 + 128 x 125,829,120 + 125,829,120 + 10,240 = 16,295,536,640; 24 of each, and
    // the embeddings, the final norm and the vision tower as Scout's.
    constexpr std::uint64_t total =
        24ULL * 314'583'040 + 24ULL * 16'295'536'640 + 2'068'971'520ULL + 5'120 + 871'932'416;
    static_assert(total == 401'583'781'376ULL);
    CHECK(total_params(m) == total);
    CHECK(within_one_percent("llama-4-maverick-17b-128e-instruct", total));  // 400B
}

TEST_CASE("vLLM sizes chunked-local layers as ChunkedLocalAttentionSpec does",
          "[hf_families][llama4][engine]") {
    // Llama-4 Scout at max_model_len 131,072 with vLLM's defaults (block 16, 8,192 batched
    // tokens, 2 batches in flight: 16,384 tokens). The two kinds have the same page (16 x 8 x
    // 256 x 2 B = 65,536 B); groups of 12 layers (the fewer kind): 1 full, 3 chunked.
    // A request takes cdiv(131,072, 16) = 8,192 blocks in the full group and
    // cdiv(min(8,192 + 16,384, 131,072), 16) = 1,536 in each chunked group (no + 1, unlike a
    // sliding window): 8,192 + 3 x 1,536 = 12,800.
    const Model m = bundled("llama-4-scout-17b-16e-instruct");
    const Layout l{m, {}};
    const VllmKvCache c = vllm_kv_cache(m, KvDtype::bf16, l, 40 * GiB, {.max_model_len = 131'072});
    REQUIRE(c.refused.empty());
    REQUIRE(c.num_kinds == 2);
    CHECK(c.kinds[0].kind == CacheKind::chunked_local);
    CHECK(c.kinds[0].blocks_per_request == 1'536);
    CHECK(c.kinds[0].groups == 3);
    CHECK(c.kinds[1].kind == CacheKind::full_attention);
    CHECK(c.kinds[1].blocks_per_request == 8'192);
    CHECK(c.num_groups == 4);
    CHECK(c.blocks_per_request == 12'800);
    CHECK(c.bytes_per_block.count() == 12ULL * 65'536);
}

// ---------------------------------------------------------------------------------------------
// Kimi-K2 (kimi-k2-instruct): model_type kimi_k2, architectures DeepseekV3ForCausalLM.
// ---------------------------------------------------------------------------------------------

TEST_CASE("Kimi-K2 is imported by its architecture, with a note", "[hf_families][kimi]") {
    const HfImport im = import_bundled_model(config_dir, "kimi-k2-instruct");
    REQUIRE(im.notes.size() == 1);
    CHECK_THAT(im.notes[0], Catch::Contains("model_type \"kimi_k2\"") &&
                                Catch::Contains("DeepseekV3ForCausalLM"));
    const Model& m = im.model;
    CHECK(m.layers().layers_of_kind(CacheKind::mla_latent) == 61);
    // One latent of 512 + 64 values per layer: 61 x 576 x 2 B = 70,272 B per token.
    CHECK(kv_token(m) == 61 * 576 * 2);
    CHECK(seq_bytes(m, k8) == 70'272ULL * 8'192);      // 575,668,224
    CHECK(seq_bytes(m, k128) == 70'272ULL * 131'072);  // 9,210,691,584
    // Attention per layer: q_a 7168 x 1536 + 1536 + q_b 1536 x 64 x 192 + kv_a 7168 x 576 + 512
    // + kv_b 512 x 64 x 256 + o 64 x 128 x 7168 = 101,124,096; two norms 14,336. The dense layer
    // 3 x 7168 x 18432 = 396,361,728; 60 MoE layers of router 7168 x 384 + 384 bias, 384 experts
    // x 3 x 7168 x 2048 and a shared one: 16,958,226,816. Untied 2 x 163,840 x 7168; norm 7,168.
    constexpr std::uint64_t total = 61ULL * (101'124'096 + 14'336) + 396'361'728ULL +
                                    60ULL * 16'958'226'816 + 2ULL * 163'840 * 7'168 + 7'168;
    static_assert(total == 1'026'408'232'448ULL);
    CHECK(total_params(m) == total);
    CHECK(within_one_percent("kimi-k2-instruct", total));  // HF 1.03T
}

// ---------------------------------------------------------------------------------------------
// DeepSeek-V3.2 (deepseek-v3.2): V3's MLA and MoE plus the lightning indexer's key cache.
// ---------------------------------------------------------------------------------------------

TEST_CASE("DeepSeek-V3.2 caches the latent and the indexer's key", "[hf_families][dsv32]") {
    const Model m = bundled("deepseek-v3.2");
    CHECK(m.layer(0).index_head_dim == 128);
    CHECK(m.config().mla.index_n_heads == 64);
    // Per layer: the bf16 latent 576 x 2 = 1,152 B and the indexer key 128 fp8 + one fp32 scale
    // per 128 = 132 B (vLLM's DeepseekV32IndexerCache): 1,284 B; x 61 = 78,324 B per token.
    CHECK(kv_token(m) == 61 * (1'152 + 132));
    CHECK(kv_token(m) == 78'324);
    CHECK(seq_bytes(m, k8) == 78'324ULL * 8'192);      // 641,630,208
    CHECK(seq_bytes(m, k128) == 78'324ULL * 131'072);  // 10,266,083,328
    // fp8_ds_mla, as vLLM stores fp8 for V3.2: 512 fp8 + 4 fp32 scales + 64 bf16 = 656 B per
    // layer (MLAAttentionSpec.real_page_size_bytes), and the same 132 B of indexer key.
    CHECK(layer_bytes_per_token(m.layer(0), KvDtype::fp8_ds_mla).count() == 656 + 132);
    CHECK(kv_bytes_per_token(m, KvDtype::fp8_ds_mla).count() == 61 * 788);
    // Every TP rank holds the whole latent and key.
    CHECK(kv_bytes_per_token(m, KvDtype::fp8_ds_mla, Shard{.tp = 8}).count() == 48'068);
}

TEST_CASE("DeepSeek-V3.2's parameters are V3's plus the indexer", "[hf_families][dsv32][params]") {
    const Model m = bundled("deepseek-v3.2");
    // Indexer per layer: wq_b 1536 x 64 x 128 = 12,582,912; wk 7168 x 128 = 917,504; k_norm
    // 2 x 128; weights_proj 7168 x 64 = 458,752: 13,959,424 x 61 = 851,524,864 on top of V3's
    // 671,026,419,200 (test_hf_config.cpp's figures; same shapes).
    CHECK(total_params(m) == total_params(bundled("deepseek-v3")) + 61ULL * 13'959'424);
    CHECK(total_params(m) == 671'877'944'064ULL);
    CHECK(within_one_percent("deepseek-v3.2", total_params(m)));  // 671B
}

// ---------------------------------------------------------------------------------------------
// Vision-language: Qwen3-VL and Qwen2.5-VL. The language model caches; the tower is weights.
// ---------------------------------------------------------------------------------------------

TEST_CASE("Qwen3-VL-8B: the language model's cache, the vision tower apart", "[hf_families][vl]") {
    const HfImport im = import_bundled_model(config_dir, "qwen3-vl-8b-instruct");
    const Model& m = im.model;
    CHECK_THAT(im.notes.at(0), Catch::Contains("vision tower") && Catch::Contains("576388336"));
    // 36 layers x 2 x 8 KV heads x 128 x 2 B = 147,456 B per token.
    CHECK(kv_token(m) == 36 * 2 * 8 * 128 * 2);
    CHECK(seq_bytes(m, k8) == 147'456ULL * 8'192);      // 1,207,959,552
    CHECK(seq_bytes(m, k128) == 147'456ULL * 131'072);  // 19,327,352,832
    // Vision: 27 layers of 4 x 1152^2 + 4 x 1152 + 2 x 1152 x 4304 + 4304 + 1152 + 4 x 1152
    // (LayerNorms) = 15,239,504; patch Conv3d 3 x 2 x 16 x 16 x 1152 + 1152 = 1,770,624;
    // positions 2304 x 1152 = 2,654,208; merger: LayerNorm 2,304, 4608^2 + 4608, 4608 x 4096 +
    // 4096 = 40,119,040; 3 deepstack mergers, their LayerNorm over 4608: 3 x 40,125,952.
    constexpr std::uint64_t vision =
        27ULL * 15'239'504 + 1'770'624 + 2'654'208 + 40'119'040 + 3ULL * 40'125'952;
    static_assert(vision == 576'388'336ULL);
    CHECK(m.config().vision_params == vision);
    // Text as Qwen3-8B: 8,190,735,360.
    CHECK(total_params(m) - vision == total_params(bundled("qwen3-8b")));
    CHECK(total_params(m) == 8'767'123'696ULL);
    CHECK(within_one_percent("qwen3-vl-8b-instruct", total_params(m)));
    // The tower sits on the first pipeline stage, split over TP ranks like its linear layers.
    const Layout two{m, {.tp = 2, .pp = 2}};
    CHECK(weight_bytes_per_rank(m, two, 0).vision.count() == vision);  // 2 B x vision / 2
    CHECK(weight_bytes_per_rank(m, two, 1).vision.is_zero());
}

TEST_CASE("Qwen3-VL MoE models count their text model as Qwen3's", "[hf_families][vl][params]") {
    const Model m30 = bundled("qwen3-vl-30b-a3b-instruct");
    CHECK(kv_token(m30) == 48 * 2 * 4 * 128 * 2);  // 98,304
    CHECK(total_params(m30) - m30.config().vision_params == total_params(bundled("qwen3-30b-a3b")));
    CHECK(within_one_percent("qwen3-vl-30b-a3b-instruct", total_params(m30)));
    const Model m235 = bundled("qwen3-vl-235b-a22b-instruct");
    CHECK(kv_token(m235) == 94 * 2 * 4 * 128 * 2);  // 192,512
    CHECK(seq_bytes(m235, k128) == 192'512ULL * 131'072);
    CHECK(total_params(m235) - m235.config().vision_params ==
          total_params(bundled("qwen3-235b-a22b")));
    CHECK(within_one_percent("qwen3-vl-235b-a22b-instruct", total_params(m235)));
}

TEST_CASE("Qwen2.5-VL-7B: Qwen2.5-7B's cache and a 676.5M vision tower", "[hf_families][vl]") {
    const Model m = bundled("qwen2.5-vl-7b-instruct");
    // use_sliding_window false: 28 full layers of 4 KV heads: 57,344 B per token.
    CHECK(m.layers().layers_of_kind(CacheKind::sliding_window) == 0);
    CHECK(kv_token(m) == 28 * 2 * 4 * 128 * 2);
    CHECK(seq_bytes(m, k8) == 57'344ULL * 8'192);      // 469,762,048
    CHECK(seq_bytes(m, k128) == 57'344ULL * 131'072);  // 7,516,192,768
    // Vision: 32 layers of qkv 1280 x 3840 + 3840, proj 1280^2 + 1280, gate and up
    // 2 x (1280 x 3420 + 3420), down 3420 x 1280 + 1280, two RMSNorms 2,560 = 19,702,200; patch
    // 3 x 2 x 14 x 14 x 1280 = 1,505,280 (no bias); merger RMSNorm 1,280, 5120^2 + 5120,
    // 5120 x 3584 + 3584.
    constexpr std::uint64_t vision =
        32ULL * 19'702'200 + 1'505'280 + 1'280 + 26'219'520 + 18'353'664;
    static_assert(vision == 676'550'144ULL);
    CHECK(m.config().vision_params == vision);
    CHECK(total_params(m) == total_params(bundled("qwen2.5-7b")) + vision);
    CHECK(total_params(m) == 8'292'166'656ULL);
    CHECK(within_one_percent("qwen2.5-vl-7b-instruct", total_params(m)));  // 8.29B
}

// ---------------------------------------------------------------------------------------------
// Gemma-3n (gemma-3n-e4b): the last num_kv_shared_layers (15) layers read earlier caches.
// ---------------------------------------------------------------------------------------------

TEST_CASE("Gemma-3n's KV-shared layers add no cache", "[hf_families][gemma3n]") {
    const Model m = bundled("gemma-3n-e4b");
    CHECK(m.num_layers() == 35);
    CHECK(m.layers().layers_of_kind(CacheKind::shared) == 15);
    for (std::uint32_t i = 20; i < 35; ++i) CHECK(m.layer(i).kind == CacheKind::shared);
    // The first 20 layers: 4 sliding (512) then 1 full, four times: 16 sliding, 4 full, each
    // 2 x 2 KV heads x 256 x 2 B = 2,048 B per token: 40,960 B per token.
    CHECK(m.layers().layers_of_kind(CacheKind::sliding_window) == 16);
    CHECK(m.layers().layers_of_kind(CacheKind::full_attention) == 4);
    CHECK(kv_token(m) == 20 * 2'048);
    // 8k: 4 full layers x 2,048 x 8,192 + 16 sliding layers x 2,048 x 512 = 67,108,864 +
    // 16,777,216 = 83,886,080.
    CHECK(seq_bytes(m, k8) == 4ULL * 2'048 * 8'192 + 16ULL * 2'048 * 512);
    CHECK(seq_bytes(m, k8) == 83'886'080ULL);
    // 128k: 4 x 2,048 x 131,072 + 16,777,216 = 1,090,519,040.
    CHECK(seq_bytes(m, k128) == 4ULL * 2'048 * 131'072 + 16ULL * 2'048 * 512);
    // vLLM allocates nothing for the shared layers either.
    const Layout l{m, {}};
    const VllmKvCache c = vllm_kv_cache(m, KvDtype::bf16, l, 8 * GiB, {.max_model_len = 32'768});
    std::uint32_t cached = 0;
    for (std::uint32_t i = 0; i < c.num_kinds; ++i) cached += c.kinds[i].layers;
    CHECK(cached == 20);
}

TEST_CASE("Gemma-3n's text model is counted with its per-layer embeddings",
          "[hf_families][gemma3n][params]") {
    const Model m = bundled("gemma-3n-e4b");
    // Per layer: q 2048 x 2048, k and v 2 x 2048 x 512, o 2048 x 2048 = 10,485,760 (the shared
    // layers keep k_proj and v_proj); q/k norms 512; MLP 3 x 2048 x 16384 = 100,663,296; four
    // norms 8,192: 111,157,760 x 35 = 3,890,521,600. Embedding 262,400 x 2048 = 537,395,200
    // (tied). Final norm 2,048.
    // Beyond Gemma-3: the per-layer embedding 262,144 x 35 x 256 = 2,348,810,240, its projection
    // 2048 x 8960 = 18,350,080 and norm 256; AltUp projections 2 x 3 x 2048^2 = 25,165,824; per
    // layer AltUp 2048 + 16 + 64 + 2048 x 4 + 2048 = 12,368, Laurel 2 x 2048 x 64 + 2048 =
    // 264,192, the per-layer gate and projection 2 x 2048 x 256 + 2048 = 1,050,624:
    // 35 x 1,327,184 = 46,451,440. Extras 2,438,777,840.
    constexpr std::uint64_t extras =
        2'348'810'240ULL + 18'350'080 + 256 + 25'165'824 + 35ULL * 1'327'184;
    static_assert(extras == 2'438'777'840ULL);
    CHECK(m.config().extra_params == extras);
    CHECK(total_params(m) == 3'890'521'600ULL + 537'395'200 + 2'048 + extras);
    CHECK(total_params(m) == 6'866'696'688ULL);
}

// ---------------------------------------------------------------------------------------------
// Nemotron-H (nemotron-h-56b-base-8k, nemotron-3-nano-30b-a3b): one mixer or one MLP per block.
// ---------------------------------------------------------------------------------------------

TEST_CASE("Nemotron-H-56B: Mamba-2, attention and MLP-only blocks", "[hf_families][nemotron]") {
    const HfImport im = import_bundled_model(config_dir, "nemotron-h-56b-base-8k");
    const Model& m = im.model;
    // hybrid_override_pattern: 54 "M", 10 "*", 54 "-" (and the file holds a bare Infinity).
    CHECK(m.num_layers() == 118);
    CHECK(m.layers().layers_of_kind(CacheKind::constant_state) == 54);
    CHECK(m.layers().layers_of_kind(CacheKind::full_attention) == 10);
    CHECK(m.layers().layers_of_kind(CacheKind::mlp_only) == 54);
    CHECK(m.config().mlp_layers == MlpLayers::mlp_only);
    CHECK_FALSE(m.has_mlp(0));  // "M"
    CHECK(m.has_mlp(1));        // "-"
    CHECK_THAT(im.notes.at(0), Catch::Contains("float32"));
    // KV: 10 layers x 2 x 8 x 128 x 2 B = 40,960 B per token.
    CHECK(kv_token(m) == 40'960);
    // Mamba state per layer: conv 3 x (256 x 64 + 2 x 8 x 256) = 61,440 values at 2 B; SSM
    // 256 x 64 x 256 = 4,194,304 values at 4 B (vLLM keeps Nemotron-H's SSM state in float32):
    // 122,880 + 16,777,216 = 16,900,096 B; x 54 = 912,605,184 B per sequence.
    CHECK(m.layer(0).state_bytes.count() == 16'900'096);
    CHECK(seq_bytes(m, 0) == 54ULL * 16'900'096);
    CHECK(seq_bytes(m, k8) == 40'960ULL * 8'192 + 912'605'184);      // 1,248,149,504
    CHECK(seq_bytes(m, k128) == 40'960ULL * 131'072 + 912'605'184);  // 6,281,314,304
    // With a bf16 SSM state asked for, as --mamba-ssm-cache-dtype bfloat16 does: 8,511,488 B.
    const Model bf16 = load_bundled_model(config_dir, "nemotron-h-56b-base-8k",
                                          HfImportOptions{.ssm_state_element_bytes = 2});
    CHECK(bf16.layer(0).state_bytes.count() == 61'440 * 2 + 4'194'304 * 2);
}

TEST_CASE("Nemotron-H-56B's parameters: mixers, attention and MLP blocks apart",
          "[hf_families][nemotron][params]") {
    const Model m = bundled("nemotron-h-56b-base-8k");
    // A Mamba-2 mixer: in_proj 8192 x (16384 + 20480 + 256) = 304,087,040; conv1d 20480 x 4 +
    // 20480 = 102,400; dt_bias, A_log, D 3 x 256; gated norm 16,384; out_proj 16384 x 8192 =
    // 134,217,728: 438,424,320 (x 54 = 23,674,913,280).
    CHECK(m.config().extra_params == 54ULL * 438'424'320);
    // Attention block: 2 x 8192^2 + 2 x 8192 x 1024 + norm 8,192 = 151,003,136 (x 10). MLP
    // block: up and down 2 x 8192 x 32768 + norm = 536,879,104 (x 54). Mamba block norms 54 x
    // 8,192. Untied embeddings 2 x 131,072 x 8192; final norm 8,192.
    constexpr std::uint64_t total = 54ULL * 438'424'320 + 10ULL * 151'003'136 +
                                    54ULL * 536'879'104 + 54ULL * 8'192 + 2ULL * 131'072 * 8'192 +
                                    8'192;
    static_assert(total == 56'324'350'464ULL);
    CHECK(total_params(m) == total);
    CHECK(count_params(m).attention == 10ULL * 150'994'944);
    CHECK(count_params(m).dense_mlp == 54ULL * 536'870'912);
    CHECK(within_one_percent("nemotron-h-56b-base-8k", total));  // 56B
}

TEST_CASE("Nemotron-3-Nano routes its E blocks", "[hf_families][nemotron][params]") {
    const Model m = bundled("nemotron-3-nano-30b-a3b");
    CHECK(m.layers().layers_of_kind(CacheKind::mlp_only) == 23);
    CHECK(moe_layer_count(m) == 23);
    CHECK(m.config().moe.experts == 128);
    CHECK(m.config().moe.shared_intermediate_size == 3'712);
    // 6 attention layers x 2 x 2 KV heads x 128 x 2 B = 6,144 B per token. Mamba state: conv
    // 3 x (64 x 64 + 2 x 8 x 128) = 18,432 values x 2 B, SSM 64 x 64 x 128 x 4 B (the config's
    // mamba_ssm_cache_dtype float32): 2,134,016 B x 23 = 49,082,368 B.
    CHECK(kv_token(m) == 6'144);
    CHECK(seq_bytes(m, k8) == 6'144ULL * 8'192 + 23ULL * 2'134'016);      // 99,414,016
    CHECK(seq_bytes(m, k128) == 6'144ULL * 131'072 + 23ULL * 2'134'016);  // 854,388,736
    CHECK(total_params(m) == 31'577'940'288ULL);
    CHECK(within_one_percent("nemotron-3-nano-30b-a3b", total_params(m)));  // 31.6B
}

// ---------------------------------------------------------------------------------------------
// Attention-free: Falcon-Mamba-7B (Mamba-1) and Codestral Mamba (Mamba-2).
// ---------------------------------------------------------------------------------------------

TEST_CASE("Falcon-Mamba-7B caches no KV, a constant state per sequence", "[hf_families][mamba]") {
    const Model m = bundled("falcon-mamba-7b");
    CHECK(m.layers().layers_of_kind(CacheKind::constant_state) == 64);
    CHECK(m.config().num_heads == 0);
    CHECK(kv_token(m) == 0);
    // Per layer: conv 3 x 8192 (intermediate_size, not expand 16 x 4096) + SSM 8192 x 16 values,
    // at 2 B: 311,296 B; x 64 = 19,922,944 B whatever the length.
    CHECK(m.layer(0).state_bytes.count() == (3 * 8'192 + 8'192 * 16) * 2);
    CHECK(seq_bytes(m, k8) == 64ULL * 311'296);
    CHECK(seq_bytes(m, k128) == 19'922'944ULL);
    CHECK_FALSE(tokens_that_fit(80 * GiB, m, KvDtype::bf16).has_value());
    // Mixer: in_proj 4096 x 16384, conv1d 8192 x 4 + 8192, x_proj 8192 x (256 + 32), dt_proj
    // 256 x 8192 + 8192, A_log 8192 x 16, D 8192, out_proj 8192 x 4096 = 105,308,160; a norm per
    // block; untied 2 x 65,024 x 4096; final norm.
    constexpr std::uint64_t total = 64ULL * (105'308'160 + 4'096) + 2ULL * 65'024 * 4'096 + 4'096;
    static_assert(total == 7'272'665'088ULL);
    CHECK(total_params(m) == total);
    CHECK(count_params(m).attention == 0);
    CHECK(count_params(m).dense_mlp == 0);
    CHECK(within_one_percent("falcon-mamba-7b", total));  // 7.27B
    // vLLM: one MambaSpec group of 64 layers; a page is one layer's state, a request holds one
    // block (two with prefix caching's align mode).
    const Layout l{m, {}};
    const VllmKvCache none =
        vllm_kv_cache(m, KvDtype::bf16, l, Bytes::exactly(100ULL * 19'922'944),
                      {.max_model_len = 8'192, .mamba_cache_mode = MambaCacheMode::none});
    REQUIRE(none.refused.empty());
    CHECK(none.num_groups == 1);
    CHECK(none.bytes_per_block.count() == 19'922'944);
    CHECK(none.num_blocks == 100);
    CHECK(none.blocks_per_request == 1);
}

TEST_CASE("Codestral Mamba (Mamba-2) is sized from Mamba2Config's fields", "[hf_families][mamba]") {
    const HfImport im = import_bundled_model(config_dir, "mamba-codestral-7b");
    const Model& m = im.model;
    CHECK(kv_token(m) == 0);
    // Conv 3 x (8192 + 2 x 8 x 128) = 30,720 values, SSM 128 x 64 x 128 = 1,048,576, at 2 B:
    // 2,158,592 B per layer, x 64 = 138,149,888 B per sequence.
    CHECK(m.layer(0).state_bytes.count() == 2'158'592);
    CHECK(seq_bytes(m, k8) == 138'149'888ULL);
    CHECK(seq_bytes(m, k128) == 138'149'888ULL);
    // Mixer: in_proj 4096 x (8192 + 10240 + 128) = 76,021,760; conv1d 10240 x 4 + 10240; 3 x
    // 128; gated norm 8,192; out_proj 8192 x 4096: 109,635,968; a norm per block; untied
    // 2 x 32,768 x 4096; final norm.
    constexpr std::uint64_t total = 64ULL * (109'635'968 + 4'096) + 2ULL * 32'768 * 4'096 + 4'096;
    static_assert(total == 7'285'403'648ULL);
    CHECK(total_params(m) == total);
    CHECK(within_one_percent("mamba-codestral-7b", total));  // 7.29B
}

// ---------------------------------------------------------------------------------------------
// GLM-4.5-Air (glm-4.5-air).
// ---------------------------------------------------------------------------------------------

TEST_CASE("GLM-4.5-Air: a dense first layer, 45 MoE layers, QKV bias", "[hf_families][glm]") {
    const HfImport im = import_bundled_model(config_dir, "glm-4.5-air");
    const Model& m = im.model;
    CHECK(m.config().attention_bias == AttentionBias::qkv);
    CHECK_FALSE(m.config().qk_norm);  // use_qk_norm false
    CHECK(moe_layer_count(m) == 45);
    CHECK_THAT(im.notes.at(0), Catch::Contains("num_nextn_predict_layers 1"));
    // 46 layers x 2 x 8 KV heads x 128 (head_dim, not 4096 / 96) x 2 B = 188,416 B per token.
    CHECK(kv_token(m) == 46 * 2 * 8 * 128 * 2);
    CHECK(seq_bytes(m, k8) == 188'416ULL * 8'192);      // 1,543,503,872
    CHECK(seq_bytes(m, k128) == 188'416ULL * 131'072);  // 24,696,061,952
    // Attention per layer: q 4096 x 12288 + 12,288, k and v 2 x (4096 x 1024 + 1024), o 12288 x
    // 4096 = 109,066,240; two norms 8,192. The dense layer 3 x 4096 x 10944 = 134,479,872; a MoE
    // layer router 4096 x 128 + 128, 128 experts x 3 x 4096 x 1408 and a shared one:
    // 2,232,418,432. Untied 2 x 151,552 x 4096; final norm.
    constexpr std::uint64_t total = 46ULL * (109'066'240 + 8'192) + 134'479'872ULL +
                                    45ULL * 2'232'418'432 + 2ULL * 151'552 * 4'096 + 4'096;
    static_assert(total == 106'852'251'264ULL);
    CHECK(total_params(m) == total);
    CHECK(within_one_percent("glm-4.5-air", total));  // 106B
    // Z.ai's "12B active" leaves out the embedding and the LM head.
    CHECK(active_params(m) - 2ULL * 151'552 * 4'096 == 12'182'615'680ULL);
    // partial_rotary_factor 0.5: RoPE turns 64 of the 128 dimensions (vLLM's get_rope,
    // int(128 x 0.5)), so vLLM's cos/sin table is 131,072 positions x 64 x 2 B = 16 MiB.
    CHECK(m.config().rotary_dim == 64);
    CHECK(vllm_rotary_table_bytes(m) == 16 * MiB);
}

// ---------------------------------------------------------------------------------------------
// Configs without a family: plain decoders; forced families; refusals.
// ---------------------------------------------------------------------------------------------

TEST_CASE("a config with only the Hugging Face sizes is read as a plain decoder",
          "[hf_families][plain]") {
    // Llama-3-8B's shapes and nothing else.
    const Json j = Json::parse(R"({"num_hidden_layers": 32, "hidden_size": 4096,
        "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
        "vocab_size": 128256, "intermediate_size": 14336})");
    const HfImport im = import_hf_json(j, "plain.json");
    REQUIRE(im.notes.size() == 1);
    CHECK_THAT(im.notes[0], Catch::Contains("plain decoder"));
    CHECK(kv_token(im.model) == 131'072);
    CHECK(total_params(im.model) == total_params(bundled("llama-3-8b")));
    // Missing sizes are named.
    CHECK_THAT(error_of(Json::parse(R"({"num_hidden_layers": 2, "hidden_size": 64,
        "num_attention_heads": 4, "intermediate_size": 128})")),
               Catch::Contains("vocab_size: expected a positive integer"));
    CHECK_THAT(error_of(Json::parse(R"({"num_hidden_layers": 2, "hidden_size": 64,
        "num_attention_heads": 4, "num_key_value_heads": 3, "vocab_size": 10,
        "intermediate_size": 128})")),
               Catch::Contains("num_key_value_heads") && Catch::Contains("found 3"));
}

TEST_CASE("a forced model_type imports a config whose own kvplan does not know",
          "[hf_families][forced]") {
    Json j = bundled_json("llama-3-8b");
    j["model_type"] = "my_llama";
    j["architectures"] = {"MyLlamaForCausalLM"};
    CHECK_THAT(error_of(j), Catch::Contains("model_type: expected a supported model_type") &&
                                Catch::Contains("\"my_llama\""));
    const HfImport im = import_hf_json(j, "my.json", "", HfImportOptions{.model_type = "llama"});
    CHECK(kv_token(im.model) == 131'072);
    CHECK_THAT(im.notes.at(0),
               Catch::Contains("forced to \"llama\"") && Catch::Contains("\"my_llama\""));
    CHECK_THROWS_WITH(import_hf_json(j, "my.json", "", HfImportOptions{.model_type = "llama9"}),
                      Catch::Contains("model_type (forced): expected a supported model_type"));
}

TEST_CASE("encoder-decoder and unknown models are refused in one line naming the field",
          "[hf_families][errors]") {
    const std::string t5 = error_of(Json::parse(
        R"({"model_type": "t5", "architectures": ["T5ForConditionalGeneration"],
            "is_encoder_decoder": true, "d_model": 768, "num_layers": 12})"));
    CHECK_THAT(t5, Catch::Contains("is_encoder_decoder: expected a decoder-only model") &&
                       Catch::Contains("cross-attention"));
    const std::string whisper = error_of(Json::parse(R"({"model_type": "whisper"})"));
    CHECK_THAT(whisper, Catch::Contains("model_type: expected a decoder-only model") &&
                            Catch::Contains("\"whisper\""));
    const std::string unknown =
        error_of(Json::parse(R"({"model_type": "rwkv7", "architectures": ["RWKV7ForCausalLM"]})"));
    CHECK_THAT(unknown, Catch::Contains("model_type: expected a supported model_type (llama,") &&
                            Catch::Contains("nemotron_h") && Catch::Contains("\"rwkv7\""));
    const std::string arch = error_of(Json::parse(R"({"architectures": ["RWKV7ForCausalLM"]})"));
    CHECK_THAT(arch, Catch::Contains("architectures[0]: expected a supported architecture") &&
                         Catch::Contains("Llama4ForConditionalGeneration"));
    for (const std::string& e : {t5, whisper, unknown, arch})
        CHECK(e.find('\n') == std::string::npos);
}

TEST_CASE("Python's Infinity and NaN are read as Hugging Face reads them", "[hf_families][json]") {
    const fs::path file = fs::temp_directory_path() / "kvplan-test-python-literals.json";
    {
        std::ofstream out(file);
        out << R"({"a": [0.0, Infinity], "b": -Infinity, "c": NaN, "d": "Infinity and NaN"})";
    }
    CHECK_THROWS_AS(read_json_file(file), InvalidInput);  // strict JSON refuses them
    const Json j = read_json_file(file, JsonNumbers::python);
    fs::remove(file);
    CHECK(std::isinf(j.at("a").at(1).get<double>()));
    CHECK(j.at("b").get<double>() < 0);
    CHECK(std::isinf(j.at("b").get<double>()));
    CHECK(std::isnan(j.at("c").get<double>()));
    CHECK(j.at("d").get<std::string>() == "Infinity and NaN");  // strings untouched
}

TEST_CASE("an intermediate_size per layer must agree on every layer", "[hf_families][errors]") {
    Json j = bundled_json("gemma-3n-e4b");
    j["text_config"]["intermediate_size"][3] = 8192;
    CHECK_THAT(error_of(j), Catch::Contains("text_config.intermediate_size[3]") &&
                                Catch::Contains("the same width on every layer (16384)") &&
                                Catch::EndsWith("found 8192"));
}
