#include <catch2/catch.hpp>
#include <kvplan/model.hpp>
#include <kvplan/presets.hpp>
#include <string_view>

using namespace kvplan;

namespace {
ModelConfig small_dense() {
    return ModelConfig{.name = "tiny",
                       .layers = LayerStack::uniform(4, full_attention(2, 64)),
                       .num_heads = 8,
                       .hidden_size = 512,
                       .intermediate_size = 1024,
                       .vocab_size = 1000};
}
}  // namespace

TEST_CASE("layer stacks keep order and group layers by cache kind", "[model]") {
    // Gemma-3's 5:1 pattern over 62 layers: layers 5, 11, ..., 59 are global (10 of them), the
    // other 52 sliding; layers 60 and 61 are sliding.
    const LayerStack& g3 = presets::gemma_3_27b.layers();
    CHECK(g3.num_layers == 62);
    CHECK(g3.layers_of_kind(CacheKind::full_attention) == 10);
    CHECK(g3.layers_of_kind(CacheKind::sliding_window) == 52);
    CHECK(g3[5].kind == CacheKind::full_attention);
    CHECK(g3[60].kind == CacheKind::sliding_window);
    CHECK(g3.num_specs == 2);
    // Gemma-2: even layers slide (layer 0 sliding, layer 1 global), 23 of each.
    const LayerStack& g2 = presets::gemma_2_27b.layers();
    CHECK(g2[0].kind == CacheKind::sliding_window);
    CHECK(g2[1].kind == CacheKind::full_attention);
    CHECK(g2.layers_of_kind(CacheKind::sliding_window) == 23);
}

TEST_CASE("a stack holds at most four distinct specs and 512 layers", "[model][invalid]") {
    LayerStack s;
    s.append(full_attention(1, 64)).append(full_attention(2, 64)).append(full_attention(4, 64));
    s.append(full_attention(8, 64));
    CHECK_THROWS_AS(s.append(full_attention(16, 64)), InvalidModel);
    CHECK_THROWS_WITH(LayerStack::uniform(513, full_attention(1, 64)),
                      Catch::Contains("num_layers") && Catch::Contains("513"));
}

TEST_CASE("invalid models are refused with the field named", "[model][invalid]") {
    CHECK_NOTHROW(Model{small_dense()});

    ModelConfig c = small_dense();
    c.layers = LayerStack{};
    CHECK_THROWS_WITH(Model{c}, Catch::Contains("num_layers") && Catch::Contains("found 0"));

    c = small_dense();
    c.layers = LayerStack::uniform(4, full_attention(0, 64));
    CHECK_THROWS_WITH(Model{c}, Catch::Contains("model 'tiny'") && Catch::Contains("kv_heads") &&
                                    Catch::Contains("expected > 0"));

    c = small_dense();
    c.layers = LayerStack::uniform(4, sliding_window(2, 64, 0));
    CHECK_THROWS_WITH(Model{c}, Catch::Contains("window"));

    c = small_dense();
    c.layers = LayerStack::uniform(4, full_attention(3, 64));  // 8 query heads over 3 KV heads
    CHECK_THROWS_WITH(Model{c}, Catch::Contains("a divisor of num_heads"));

    c = small_dense();
    c.num_heads = 0;
    CHECK_THROWS_AS(Model{c}, InvalidModel);

    c = small_dense();
    c.layers = LayerStack::uniform(4, shared_cache());
    CHECK_THROWS_WITH(Model{c}, Catch::Contains("caches something"));

    c = small_dense();
    c.moe = {.experts = 8, .experts_per_token = 9, .expert_intermediate_size = 128};
    CHECK_THROWS_WITH(Model{c}, Catch::Contains("moe.experts_per_token"));

    c = small_dense();
    c.layers = LayerStack::uniform(4, mla_latent(512, 64));
    CHECK_THROWS_WITH(Model{c}, Catch::Contains("mla.v_head_dim"));
}

TEST_CASE("MoE layer placement follows first-dense and frequency", "[model]") {
    // DeepSeek-V3: first_k_dense_replace 3, moe_layer_freq 1: layers 0-2 dense, 3-60 MoE.
    const MoeShape& m = presets::deepseek_v3.config().moe;
    CHECK_FALSE(m.is_moe_layer(2));
    CHECK(m.is_moe_layer(3));
    CHECK(m.is_moe_layer(60));
    // Qwen's decoder_sparse_step 2: (i + 1) % 2 == 0, so layers 1, 3, 5 are MoE.
    const MoeShape q{.experts = 60,
                     .experts_per_token = 4,
                     .expert_intermediate_size = 1408,
                     .layer_freq = 2,
                     .layer_offset = 1};
    CHECK_FALSE(q.is_moe_layer(0));
    CHECK(q.is_moe_layer(1));
}

TEST_CASE("query head dim is never assumed to be hidden / heads when stated", "[model]") {
    // Gemma-2-27B: hidden 4608 / 32 heads = 144, but head_dim is 128.
    CHECK(presets::gemma_2_27b.query_head_dim() == 128);
    // Llama-3-70B states none: the KV head dim, 128 (= 8192 / 64 too).
    CHECK(presets::llama_3_70b.query_head_dim() == 128);
}

TEST_CASE("the new layer kinds are validated with the field named", "[model][invalid]") {
    // A chunked-local layer needs a chunk.
    ModelConfig c = small_dense();
    c.layers = LayerStack::uniform(4, chunked_local(2, 64, 0));
    CHECK_THROWS_WITH(Model{c},
                      Catch::Contains("layers.specs[0].window") && Catch::Contains("> 0 tokens"));
    // A KV-sharing layer with its own projections must still divide the query heads.
    c = small_dense();
    c.layers = LayerStack{}.append(full_attention(2, 64)).append(shared_cache(3, 64));
    CHECK_THROWS_WITH(Model{c},
                      Catch::Contains("layers.specs[1].kv_heads") && Catch::Contains("found 3"));
    // Query heads are required only where something attends.
    c = small_dense();
    c.num_heads = 0;
    CHECK_THROWS_WITH(Model{c}, Catch::Contains("num_heads"));
    c.layers = LayerStack::uniform(4, constant_state(Bytes::exactly(64)));
    c.mlp_layers = MlpLayers::mlp_only;
    CHECK_NOTHROW(Model{c});
    // A layer stack of MLP-only layers caches nothing: refused.
    c = small_dense();
    c.layers = LayerStack::uniform(4, mlp_only());
    CHECK_THROWS_WITH(Model{c}, Catch::Contains("at least one layer that caches something"));
    // An indexer key sits beside full attention (MiniMax-M3) or an MLA latent, not a window.
    c = small_dense();
    CacheSpec windowed = sliding_window(2, 64, 128);
    windowed.index_head_dim = 64;
    c.layers = LayerStack{}.append(indexed_attention(2, 64, 64)).append(windowed);
    CHECK_THROWS_WITH(Model{c}, Catch::Contains("layers.specs[1].index_head_dim") &&
                                    Catch::Contains("neither full attention nor MLA") &&
                                    Catch::Contains("found 64"));
    c.layers = LayerStack{}.append(full_attention(2, 64)).append(indexed_attention(2, 64, 64));
    CHECK_NOTHROW(Model{c});
}

TEST_CASE("under MlpLayers::mlp_only only the MLP-only layers carry an MLP", "[model]") {
    ModelConfig c = small_dense();
    c.layers = LayerStack{}
                   .append(full_attention(2, 64))
                   .append(mlp_only())
                   .append(constant_state(Bytes::exactly(64)));
    c.mlp_layers = MlpLayers::mlp_only;
    const Model m{c};
    CHECK_FALSE(m.has_mlp(0));
    CHECK(m.has_mlp(1));
    CHECK_FALSE(m.has_mlp(2));
    // Without any dense MLP layer, no intermediate_size is needed.
    c.layers = LayerStack::uniform(2, constant_state(Bytes::exactly(64)));
    c.intermediate_size = 0;
    CHECK_NOTHROW(Model{c});
    // One table names and parses every kind.
    CHECK(std::string_view(name(CacheKind::chunked_local)) == "chunked_local");
    CHECK(parse_cache_kind("mlp_only") == CacheKind::mlp_only);
    CHECK_FALSE(parse_cache_kind("chunked").has_value());
}
