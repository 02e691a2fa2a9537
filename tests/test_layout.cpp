#include <catch2/catch.hpp>
#include <kvplan/capacity.hpp>
#include <kvplan/kv_bytes.hpp>
#include <kvplan/layout.hpp>
#include <kvplan/presets.hpp>
#include <string>

using namespace kvplan;
using presets::llama_3_70b;

TEST_CASE("tensor parallel beyond kv_heads replicates heads", "[layout]") {
    // Llama-3-70B has 8 KV heads. tp 8: one head per rank; tp 16: still one head per rank (a head
    // is replicated on two ranks), not half of one.
    CHECK(kv_heads_per_rank(8, 4) == 2);
    CHECK(kv_heads_per_rank(8, 8) == 1);
    CHECK(kv_heads_per_rank(8, 16) == 1);
    const Layout l{llama_3_70b, {.tp = 16}};
    // One head: 80 layers x 2 x 1 x 128 x 2 B = 40,960 B per token on each of 16 ranks.
    CHECK(kv_bytes_per_token(llama_3_70b, KvDtype::bf16, l.stage(0)).count() == 40'960);
}

TEST_CASE("tp must divide kv_heads, or be a multiple of them", "[layout][invalid]") {
    CHECK_NOTHROW((Layout{llama_3_70b, {.tp = 2}}));
    CHECK_THROWS_AS((Layout{llama_3_70b, {.tp = 3}}), InvalidLayout);  // 64 query heads % 3 != 0
    // Falcon-7B: 71 query heads, so tp = 2 cannot split them.
    CHECK_THROWS_WITH((Layout{presets::falcon_7b, {.tp = 2}}),
                      Catch::Contains("tp") && Catch::Contains("71 query heads"));
    CHECK_THROWS_WITH((Layout{llama_3_70b, {.tp = 0}}), Catch::Contains("tp"));
}

TEST_CASE("pipeline stages follow vLLM's default split", "[layout]") {
    // DeepSeek-V3, 61 layers over 4 stages: 15 each, the extra layer on the stage before the last
    // (vLLM get_pp_indices): 15, 15, 16, 15.
    const Layout l{presets::deepseek_v3, {.pp = 4}};
    CHECK(l.stage(0).first_layer == 0);
    CHECK(l.stage(1).first_layer == 15);
    CHECK(l.stage(2).first_layer == 30);
    CHECK(l.stage(2).end_layer == 46);
    CHECK(l.stage(3).end_layer == 61);
    CHECK(l.ranks() == 4);
}

TEST_CASE("uneven pipeline splits are allowed and checked", "[layout]") {
    ParallelConfig p{.pp = 2};
    p.stage_layers[0] = 30;
    p.stage_layers[1] = 50;
    const Layout l{llama_3_70b, p};
    // The busier stage holds 50 of 80 layers: 50 x 4,096 B = 204,800 B per token.
    CHECK(kv_bytes_per_token(llama_3_70b, KvDtype::bf16, l.stage(1)).count() == 204'800);
    CHECK(busiest_stage(llama_3_70b, KvDtype::bf16, l, 1000) == 1);
    p.stage_layers[1] = 49;
    CHECK_THROWS_WITH((Layout{llama_3_70b, p}),
                      Catch::Contains("stage_layers") && Catch::Contains("80"));
    CHECK_THROWS_AS((Layout{llama_3_70b, {.pp = 81}}), InvalidLayout);
}

TEST_CASE("per-rank bytes times ranks covers the whole model", "[layout][property]") {
    for (const Model* m : presets::all) {
        for (std::uint32_t tp : {1u, 2u, 4u, 8u, 16u}) {
            for (std::uint32_t pp : {1u, 2u, 3u}) {
                const ParallelConfig pc{.tp = tp, .pp = pp};
                bool ok = true;
                try {
                    (void)Layout(*m, pc);
                } catch (const InvalidLayout&) {
                    ok = false;
                }
                if (!ok) continue;
                const Layout l{*m, pc};
                Bytes sum{};
                for (std::uint32_t s = 0; s < pp; ++s)
                    sum += kv_bytes_per_token(*m, KvDtype::bf16, l.stage(s)) * tp;
                const Bytes whole = kv_bytes_per_token(*m, KvDtype::bf16);
                INFO(m->name().c_str() << " tp=" << tp << " pp=" << pp);
                CHECK(sum >= whole);
                // Equality exactly when TP shards every head without replication and no layer is
                // an MLA latent (replicated on every rank).
                bool sharded = m->layers().layers_of_kind(CacheKind::mla_latent) == 0;
                for (std::uint32_t k = 0; k < m->layers().num_specs; ++k)
                    if (m->layers().specs[k].kv_heads != 0)
                        sharded = sharded && m->layers().specs[k].kv_heads % tp == 0;
                if (sharded) CHECK(sum == whole);
            }
        }
    }
}

// Attention data, expert and decode context parallelism, resolved under each engine's rules
// (layout.hpp). DeepSeek-V3: 61 MLA layers, 128 query heads, 256 routed experts (8 per token) of
// width 2,048, 1 shared expert, the first 3 layers dense.
using presets::deepseek_v3;

TEST_CASE("vLLM's data parallelism adds GPUs and its expert parallelism spans dp x tp",
          "[layout][parallel]") {
    // vllm serve -dp 8 -tp 1 --enable-expert-parallel: 8 engines of one GPU each, the experts over
    // all 8 (FusedMoEParallelConfig.make: ep = dp x tp, the MoE's tp 1): 256 / 8 = 32 per GPU.
    const Layout l{deepseek_v3, {.tp = 1, .dp = 8, .ep = 8}};
    const Placement& p = l.placement();
    CHECK(l.ranks() == 8);
    CHECK(l.dp() == 8);
    CHECK(p.attention_tp == 1);
    CHECK(p.dense_mlp_tp == 1);
    CHECK(p.embedding_tp == 1);
    CHECK(p.expert_ep == 8);
    CHECK(p.expert_tp == 1);
    CHECK(p.experts_per_gpu == 32);
    CHECK(p.experts_least == 32);
    CHECK(l.stage(0).tp == 1);
    // Without --enable-expert-parallel every expert is split over all dp x tp = 16 ranks.
    const Layout moe_tp{deepseek_v3, {.tp = 2, .dp = 8}};
    CHECK(moe_tp.ranks() == 16);
    CHECK(moe_tp.placement().expert_ep == 1);
    CHECK(moe_tp.placement().expert_tp == 16);
    CHECK(moe_tp.placement().experts_per_gpu == 256);
    // 24 EP ranks: 256 = 10 x 24 + 16, so the first 16 ranks hold 11 experts, the rest 10
    // (determine_expert_map gives the remainder to the first ranks).
    const Layout uneven{deepseek_v3, {.tp = 1, .dp = 24, .ep = 24}};
    CHECK(uneven.placement().experts_per_gpu == 11);
    CHECK(uneven.placement().experts_least == 10);
}

TEST_CASE("SGLang's dp attention lives within its tp GPUs", "[layout][parallel]") {
    // --tp-size 8 --dp-size 8 --enable-dp-attention --ep-size 8: 8 GPUs, attention groups of one
    // GPU, the embedding whole on each (VocabParallelEmbedding(enable_tp=False)), the dense MLP,
    // shared experts and LM head split over all 8, 32 experts per GPU whole (moe_tp = 8 / 8).
    const Layout l{deepseek_v3, {.tp = 8, .dp = 8, .ep = 8, .rules = ParallelRules::sglang}};
    const Placement& p = l.placement();
    CHECK(l.ranks() == 8);
    CHECK(p.attention_tp == 1);
    CHECK(p.attention_dp == 8);
    CHECK(p.embedding_tp == 1);
    CHECK(p.lm_head_tp == 8);
    CHECK(p.dense_mlp_tp == 8);
    CHECK(p.shared_expert_tp == 8);
    CHECK(p.experts_per_gpu == 32);
    CHECK(p.expert_tp == 1);
    // ep 2 of tp 8: 128 experts per GPU, each split 4 ways.
    const Layout half{deepseek_v3, {.tp = 8, .dp = 8, .ep = 2, .rules = ParallelRules::sglang}};
    CHECK(half.placement().experts_per_gpu == 128);
    CHECK(half.placement().expert_tp == 4);
}

TEST_CASE("TensorRT-LLM's attention dp keeps everything but the experts whole",
          "[layout][parallel]") {
    // enable_attention_dp at tp 8 (modeling_deepseekv3.py: the dense MLP and shared experts take
    // tp 1 under attention DP; the embedding is built without a mapping).
    const Layout l{deepseek_v3, {.tp = 8, .dp = 8, .ep = 8, .rules = ParallelRules::trtllm}};
    const Placement& p = l.placement();
    CHECK(l.ranks() == 8);
    CHECK(p.attention_tp == 1);
    CHECK(p.dense_mlp_tp == 1);
    CHECK(p.shared_expert_tp == 1);
    CHECK(p.lm_head_tp == 1);
    CHECK(p.experts_per_gpu == 32);
}

TEST_CASE("each engine refuses the splits it refuses, with its own reason",
          "[layout][parallel][invalid]") {
    const auto refused = [](const Model& m, const ParallelConfig& p) -> std::string {
        try {
            (void)Layout{m, p};
        } catch (const InvalidLayout& e) {
            return e.what();
        }
        return "";
    };
    // vLLM: ep is dp x tp or nothing; tp % dcp == 0; EPLB's even split; EPLB needs EP.
    CHECK_THAT(refused(deepseek_v3, {.tp = 2, .dp = 4, .ep = 4}),
               Catch::Contains("ep: expected 1, or dp x tp = 8"));
    CHECK_THAT(refused(deepseek_v3, {.tp = 8, .dcp = 3}),
               Catch::Contains("\"tp_size=8 must be divisible by dcp_size=3.\""));
    CHECK_THAT(refused(deepseek_v3, {.tp = 1, .dp = 8, .ep = 8, .redundant_experts = 3}),
               Catch::Contains("Got 259 experts and 8 EP ranks."));
    CHECK_THAT(refused(deepseek_v3, {.tp = 8, .redundant_experts = 8}),
               Catch::Contains("\"enable_expert_parallel must be True to use EPLB.\""));
    // 256 + 32 = 288 = 8 x 36: even.
    CHECK(Layout{deepseek_v3, {.tp = 1, .dp = 8, .ep = 8, .redundant_experts = 32}}
              .placement()
              .experts_per_gpu == 36);
    // SGLang: dp and ep divide tp.
    CHECK_THAT(refused(deepseek_v3, {.tp = 8, .dp = 3, .rules = ParallelRules::sglang}),
               Catch::Contains("dp: expected a divisor of tp = 8"));
    CHECK_THAT(refused(deepseek_v3, {.tp = 8, .ep = 3, .rules = ParallelRules::sglang}),
               Catch::Contains("ep: expected a divisor of tp = 8"));
    // TensorRT-LLM: attention dp is all of tp or nothing.
    CHECK_THAT(refused(deepseek_v3, {.tp = 8, .dp = 4, .rules = ParallelRules::trtllm}),
               Catch::Contains("dp: expected 1 or tp = 8"));
    // Expert parallelism on a dense model.
    CHECK_THAT(refused(llama_3_70b, {.tp = 8, .ep = 8}), Catch::Contains("mixture-of-experts"));
    // DCP reuses the copies of a KV head: Llama-3-70B's 8 KV heads at tp 8 have none (tp / 8 = 1),
    // at tp 16 two.
    CHECK_THAT(refused(llama_3_70b, {.tp = 8, .dcp = 2}),
               Catch::Contains("dcp: expected at most tp / kv_heads = 1"));
    CHECK_NOTHROW((Layout{llama_3_70b, {.tp = 16, .dcp = 2}}));
    // A hybrid takes it: only its full-attention layers split (Gemma-2-27B at tp 32 holds two
    // copies of each of its 16 KV heads; half its layers slide and stay at dcp 1).
    CHECK_NOTHROW((Layout{presets::gemma_2_27b, {.tp = 32, .dcp = 2}}));
    // ... but chunked local attention has no dcp rule in vLLM: refused.
    LayerStack chunked =
        LayerStack::periodic(8, FixedArray{chunked_local(8, 128, 8192), chunked_local(8, 128, 8192),
                                           chunked_local(8, 128, 8192), full_attention(8, 128)});
    const Model scout_like{ModelConfig{.layers = chunked,
                                       .num_heads = 32,
                                       .hidden_size = 5120,
                                       .intermediate_size = 8192,
                                       .vocab_size = 32000}};
    CHECK_THAT(refused(scout_like, {.tp = 16, .dcp = 2}),
               Catch::Contains("dcp: expected 1 for a model with chunked local attention"));
}

TEST_CASE("decode context parallelism on a hybrid splits only the full-attention tokens",
          "[layout][parallel]") {
    // vLLM keeps a hybrid's sliding-window and Mamba groups at dcp 1
    // (vllm/v1/core/single_type_kv_cache_manager.py). Gemma-2-27B at tp 32: each rank holds one of
    // the 16 KV heads, 2 x 128 x 2 B = 512 B per token per layer, 23 global and 23 sliding
    // (window 4,096) layers.
    const Model& g = presets::gemma_2_27b;
    const Shard dcp1 = Layout{g, {.tp = 32}}.stage(0);
    const Shard dcp2 = Layout{g, {.tp = 32, .dcp = 2}}.stage(0);
    // 8,000 tokens at dcp 1: 8,000 x 512 x 23 + 4,096 x 512 x 23 = 94,208,000 + 48,234,496.
    CHECK(kv_bytes_per_sequence(g, KvDtype::bf16, 8000, dcp1).count() == 142'442'496);
    // At dcp 2 the global layers hold ceil(8,000 / 2) = 4,000 tokens and the sliding ones still
    // the whole window: 4,000 x 512 x 23 + 48,234,496 = 47,104,000 + 48,234,496.
    CHECK(kv_bytes_per_sequence(g, KvDtype::bf16, 8000, dcp2).count() == 95'338'496);
    CHECK(tokens_on_rank(CacheKind::full_attention, 8001, dcp2) == 4001);
    CHECK(tokens_on_rank(CacheKind::sliding_window, 8001, dcp2) == 8001);
    CHECK(tokens_on_rank(CacheKind::mla_latent, 8001, dcp2) == 4001);
    CHECK(tokens_on_rank(CacheKind::constant_state, 8001, dcp2) == 8001);
    // Paged in blocks of 16, 8,001 tokens: the global layers hold ceil(4,001 / 16) = 251 blocks,
    // the sliding ones blocks (8,001 - 4,096) / 16 = 244 to 8,000 / 16 + 1 = 501, 257 blocks; a
    // block is 16 x 512 B x 23 layers = 188,416 B: (251 + 257) x 188,416 at dcp 2, and
    // (501 + 257) x 188,416 at dcp 1.
    CHECK(reserved_per_sequence(g, KvDtype::bf16, 8001, 16, dcp2).count() == 95'715'328);
    CHECK(reserved_per_sequence(g, KvDtype::bf16, 8001, 16, dcp1).count() == 142'819'328);
    // Tokens that fit 17,664 KiB = 18,087,936 B: at dcp 1 a token takes 46 x 512 = 23,552 B,
    // 768 tokens; at dcp 2 T tokens take T / 2 x 11,776 + T x 11,776 B (23 layers of 512 B each
    // kind), 2 x 18,087,936 / 35,328 = 1,024 tokens.
    CHECK(*tokens_that_fit(17'664 * KiB, g, KvDtype::bf16, dcp2) == 1024);
    CHECK(*tokens_that_fit(17'664 * KiB, g, KvDtype::bf16, dcp1) == 768);

    // A Mamba hybrid: 6 state layers of 1 MiB and 2 full-attention layers of 2 KV heads. At tp 4
    // each rank holds one KV head (512 B per token per layer) and a quarter of each state,
    // 262,144 B; dcp 2 uses the two copies of each KV head.
    LayerStack hybrid =
        LayerStack::periodic(8, FixedArray{constant_state(1 * MiB), constant_state(1 * MiB),
                                           constant_state(1 * MiB), full_attention(2, 128)});
    const Model m{ModelConfig{.layers = hybrid,
                              .num_heads = 16,
                              .hidden_size = 2048,
                              .intermediate_size = 8192,
                              .vocab_size = 32000}};
    const Shard h = Layout{m, {.tp = 4, .dcp = 2}}.stage(0);
    // 10,001 tokens: ceil(10,001 / 2) = 5,001 x 512 x 2 + 6 x 262,144 = 5,121,024 + 1,572,864
    // (the state is whole on every dcp rank).
    CHECK(kv_bytes_per_sequence(m, KvDtype::bf16, 10'001, h).count() == 6'693'888);
    // dcp 4 would need four copies of each KV head, which tp 4 does not make.
    CHECK_THROWS_WITH((Layout{m, {.tp = 4, .dcp = 4}}),
                      Catch::Contains("dcp: expected at most tp / kv_heads = 2"));
}

TEST_CASE("decode context parallelism splits an MLA sequence's tokens over the dcp ranks",
          "[layout][parallel]") {
    // DeepSeek-V3 at tp 8: every rank holds the whole latent, (512 + 64) x 2 B x 61 layers =
    // 70,272 B per token. With dcp 8 a rank holds ceil(8,000 / 8) = 1,000 of a sequence's 8,000
    // tokens: 70,272,000 B against 562,176,000 B.
    const Layout tp8{deepseek_v3, {.tp = 8}};
    const Layout dcp8{deepseek_v3, {.tp = 8, .dcp = 8}};
    CHECK(kv_bytes_per_token(deepseek_v3, KvDtype::bf16, tp8.stage(0)).count() == 70'272);
    CHECK(kv_bytes_per_token(deepseek_v3, KvDtype::bf16, dcp8.stage(0)).count() == 70'272);
    CHECK(kv_bytes_per_sequence(deepseek_v3, KvDtype::bf16, 8000, tp8.stage(0)).count() ==
          562'176'000);
    CHECK(kv_bytes_per_sequence(deepseek_v3, KvDtype::bf16, 8000, dcp8.stage(0)).count() ==
          70'272'000);
    // 8,001 tokens: rank 0 holds ceil(8,001 / 8) = 1,001.
    CHECK(tokens_on_rank(8001, dcp8.stage(0)) == 1001);
    // A rank's tokens that fit a budget are one in eight of the context's.
    CHECK(*tokens_that_fit(70'272 * KiB, deepseek_v3, KvDtype::bf16, dcp8.stage(0)) == 8 * 1024);
}
