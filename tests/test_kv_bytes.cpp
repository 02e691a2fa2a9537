#include <catch2/catch.hpp>
#include <kvplan/kv_bytes.hpp>
#include <kvplan/layout.hpp>
#include <kvplan/presets.hpp>

using namespace kvplan;
using namespace kvplan::presets;

TEST_CASE("Llama-3-70B in bf16 takes 320 KiB per token", "[kv_bytes]") {
    // 2 (K, V) x 80 layers x 8 KV heads x 128 dims x 2 B = 327,680 B = 320 KiB.
    CHECK(kv_bytes_per_token(llama_3_70b, KvDtype::bf16).count() == 327'680);
    // One 4,096-token sequence: 327,680 x 4,096 = 1,342,177,280 B (1.25 GiB, 1.34 GB).
    CHECK(kv_bytes_per_sequence(llama_3_70b, KvDtype::bf16, 4096).count() == 1'342'177'280ULL);
    // 32 of them: 42,949,672,960 B = 40 GiB exactly (42.9 GB; the seed note's "41 GB" is neither).
    const Bytes batch = kv_bytes_per_sequence(llama_3_70b, KvDtype::bf16, 4096) * 32;
    CHECK(batch.count() == 42'949'672'960ULL);
    CHECK(batch == 40 * GiB);
}

TEST_CASE("an MQA variant of Llama-3-70B takes one eighth", "[kv_bytes]") {
    // One KV head instead of 8: 2 x 80 x 1 x 128 x 2 = 40,960 B per token.
    ModelConfig c = llama_3_70b.config();
    c.layers = LayerStack::uniform(80, full_attention(1, 128));
    CHECK(kv_bytes_per_token(Model{c}, KvDtype::bf16).count() == 40'960);
    // GQA cuts the cache by heads / kv_heads = 64 / 8 = 8x against MHA, not 2x.
    c.layers = LayerStack::uniform(80, full_attention(64, 128));
    CHECK(kv_bytes_per_token(Model{c}, KvDtype::bf16).count() == 8 * 327'680);
}

TEST_CASE("DeepSeek-V3 caches one latent per layer, the same on every TP rank", "[kv_bytes][mla]") {
    // 61 layers x (512 + 64) values x 2 B = 70,272 B; no factor of 2 for K and V.
    CHECK(kv_bytes_per_token(deepseek_v3, KvDtype::bf16).count() == 70'272);
    for (std::uint32_t tp : {1u, 2u, 8u, 16u, 32u}) {
        const Layout l{deepseek_v3, {.tp = tp}};
        CHECK(kv_bytes_per_token(deepseek_v3, KvDtype::bf16, l.stage(0)).count() == 70'272);
    }
    // fp8: 61 x 576 x 1 = 35,136 B.
    CHECK(kv_bytes_per_token(deepseek_v3, KvDtype::fp8_e4m3).count() == 35'136);
}

TEST_CASE("an indexed GQA layer caches a bf16 indexer key beside K and V, whole on every rank",
          "[kv_bytes][indexer]") {
    // MiniMax-M3's shape: 3 GQA layers, then 57 with the indexer; 64 query heads, 4 KV heads of
    // 128, an index key of 128 (vLLM's MiniMaxM3IndexerCache: bf16, one head, index_k replicated).
    ModelConfig c = llama_3_70b.config();
    c.num_heads = 64;
    c.layers =
        LayerStack{}.append(full_attention(4, 128), 3).append(indexed_attention(4, 128, 128), 57);
    const Model m{c};
    // 60 x 2 x 4 x 128 x 2 B = 122,880 B of K and V, 57 x 128 x 2 B = 14,592 B of keys.
    CHECK(kv_bytes_per_token(m, KvDtype::bf16).count() == 122'880 + 14'592);
    // fp8 halves K and V only: 61,440 + 14,592.
    CHECK(kv_bytes_per_token(m, KvDtype::fp8_e4m3).count() == 61'440 + 14'592);
    // tp 4: one KV head a rank (30,720 B), the keys whole (14,592 B).
    CHECK(kv_bytes_per_token(m, KvDtype::bf16, Layout{m, {.tp = 4}}.stage(0)).count() ==
          30'720 + 14'592);
    // A 1,000-token sequence holds 1,000 of each.
    CHECK(kv_bytes_per_sequence(m, KvDtype::bf16, 1000).count() == 1000 * (122'880 + 14'592));
    // Full attention grows without bound: all of it is the unbounded slope.
    CHECK(unbounded_bytes_per_token(m, KvDtype::bf16) == kv_bytes_per_token(m, KvDtype::bf16));
}

TEST_CASE("Gemma-2-27B's local layers stop at their 4,096-token window", "[kv_bytes][window]") {
    // Per layer per token: 2 x 16 heads x 128 x 2 B = 8,192 B. At 32,768 tokens:
    // 23 global layers x 32,768 x 8,192 = 6,174,015,488 B;
    // 23 local layers x 4,096 x 8,192 = 771,751,936 B (capped, not 6.17 GB);
    // total 6,945,767,424 B.
    CHECK(kv_bytes_per_sequence(gemma_2_27b, KvDtype::bf16, 32768).count() == 6'945'767'424ULL);
    // Below the window every layer holds every token: 46 x 8,192 x 1,000 = 376,832,000 B.
    CHECK(kv_bytes_per_sequence(gemma_2_27b, KvDtype::bf16, 1000).count() == 376'832'000ULL);
    // Past every window only global layers grow: 23 x 8,192 = 188,416 B per token.
    CHECK(unbounded_bytes_per_token(gemma_2_27b, KvDtype::bf16).count() == 188'416);
}

TEST_CASE("Mistral-7B's window caps every layer", "[kv_bytes][window]") {
    // 32 layers x 2 x 8 x 128 x 2 B = 131,072 B per token, up to 4,096 tokens:
    // any longer sequence holds 131,072 x 4,096 = 536,870,912 B (512 MiB).
    CHECK(kv_bytes_per_sequence(mistral_7b_v0_1, KvDtype::bf16, 100'000) == 512 * MiB);
    CHECK(largest_window(mistral_7b_v0_1) == 4096);
}

TEST_CASE("K and V head dims can differ", "[kv_bytes]") {
    // 10 layers, 4 KV heads, K 192 dims, V 128 dims, bf16: 10 x 4 x (384 + 256) = 25,600 B.
    const Model m{ModelConfig{
        .layers =
            LayerStack::uniform(10, CacheSpec{.kv_heads = 4, .k_head_dim = 192, .v_head_dim = 128}),
        .num_heads = 16,
        .hidden_size = 2048,
        .intermediate_size = 4096,
        .vocab_size = 1000}};
    CHECK(kv_bytes_per_token(m, KvDtype::bf16).count() == 25'600);
}

TEST_CASE("constant-state layers cost the same at any length", "[kv_bytes][state]") {
    // 6 attention layers (2 x 8 x 128 x 2 = 4,096 B per token each) + 2 Mamba layers of 1 MiB.
    LayerStack s;
    s.append(full_attention(8, 128), 3)
        .append(constant_state(1 * MiB))
        .append(full_attention(8, 128), 3);
    s.append(constant_state(1 * MiB));
    const Model m{ModelConfig{.layers = s,
                              .num_heads = 32,
                              .hidden_size = 4096,
                              .intermediate_size = 8192,
                              .vocab_size = 32000}};
    // 0 tokens: 2 MiB of state; 1,000 tokens: 2 MiB + 6 x 4,096 x 1,000 = 2,097,152 + 24,576,000.
    CHECK(kv_bytes_per_sequence(m, KvDtype::bf16, 0) == 2 * MiB);
    CHECK(kv_bytes_per_sequence(m, KvDtype::bf16, 1000).count() == 26'673'152);
    // Split across 2 TP ranks: 4 KV heads and half the state on each rank.
    CHECK(kv_bytes_per_sequence(m, KvDtype::bf16, 1000, Shard{.tp = 2}).count() == 13'336'576);
}

TEST_CASE("more tokens never need fewer bytes", "[kv_bytes][property]") {
    for (const Model* m : presets::all) {
        for (KvDtype d : all_kv_dtypes) {
            Bytes prev{};
            for (std::uint64_t t :
                 {0ULL, 1ULL, 127ULL, 128ULL, 129ULL, 1000ULL, 1023ULL, 1024ULL, 1025ULL, 4095ULL,
                  4096ULL, 4097ULL, 32768ULL, 131072ULL, 10'000'000ULL}) {
                const Bytes b = kv_bytes_per_sequence(*m, d, t);
                INFO(m->name().c_str() << " " << name(d) << " tokens " << t);
                CHECK(b >= prev);
                prev = b;
            }
        }
    }
}

TEST_CASE("a sequence too large for 64 bits throws, it does not wrap", "[kv_bytes][overflow]") {
    // 327,680 B x 2^50 tokens > 2^64.
    CHECK_THROWS_AS(kv_bytes_per_sequence(llama_3_70b, KvDtype::bf16, 1ULL << 50), OverflowError);
}

TEST_CASE("vLLM's newer KV dtypes per token of Llama-3-8B", "[kv_bytes][vllm]") {
    // 32 layers x K and V x 8 KV heads x 128 (meta-llama/Meta-Llama-3-8B config.json).
    // fp8_per_token_head and int8_per_token_head: 128 B + one fp32 scale a head, 132 B:
    // 32 x 2 x 8 x 132 = 67,584 B (vLLM: AttentionSpec.page_size_bytes / block_size,
    // vllm/v1/kv_cache_interface.py); fp8 per tensor 32 x 2 x 8 x 128 = 65,536 B.
    CHECK(kv_bytes_per_token(presets::llama_3_8b, KvDtype::fp8_per_token_head).count() == 67'584);
    CHECK(kv_bytes_per_token(presets::llama_3_8b, KvDtype::int8).count() == 67'584);
    CHECK(kv_bytes_per_token(presets::llama_3_8b, KvDtype::fp8_e4m3).count() == 65'536);
    // nvfp4 and nvfp4_4over6: 64 + 8 = 72 B a head, 32 x 2 x 8 x 72 = 36,864 B.
    CHECK(kv_bytes_per_token(presets::llama_3_8b, KvDtype::nvfp4_4over6).count() == 36'864);
    // int4_per_token_head: 64 + 4 = 68 B a head, 32 x 2 x 8 x 68 = 34,816 B.
    CHECK(kv_bytes_per_token(presets::llama_3_8b, KvDtype::int4).count() == 34'816);
}
