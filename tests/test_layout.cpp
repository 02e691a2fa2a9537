#include <catch2/catch.hpp>
#include <kvplan/kv_bytes.hpp>
#include <kvplan/layout.hpp>
#include <kvplan/presets.hpp>

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
