#include <catch2/catch.hpp>
#include <kvplan/presets.hpp>
#include <kvplan/weights.hpp>

using namespace kvplan;
using namespace kvplan::presets;

namespace {
// Parameters of one Llama-3-8B layer (hidden 4096, 32 heads, 8 KV heads of 128, MLP 14336):
// q 4096 x 4096 = 16,777,216; k, v 1024 x 4096 = 4,194,304 each; o 16,777,216 -> 41,943,040;
// MLP 3 x 4096 x 14336 = 176,160,768; two RMSNorms 8,192. Sum 218,112,000.
constexpr std::uint64_t llama3_8b_layer = 218'112'000;
constexpr std::uint64_t llama3_8b_linear_per_layer = 41'943'040 + 176'160'768;
// The embedding, and the untied LM head: 128,256 x 4,096 = 525,336,576 each.
constexpr std::uint64_t llama3_8b_table = 525'336'576;

// Llama-3-70B (hidden 8192, 64 heads, 8 KV heads, MLP 28672): q 67,108,864; k, v 8,388,608 each;
// o 67,108,864 -> 150,994,944; MLP 3 x 8192 x 28672 = 704,643,072; norms 16,384. Sum 855,654,400.
constexpr std::uint64_t llama3_70b_layer = 855'654'400;
constexpr std::uint64_t llama3_70b_table = 1'050'673'152;  // 128,256 x 8,192
}  // namespace

// Proved at compile time, too.
static_assert(total_params(llama_3_8b) == 8'030'261'248ULL);
static_assert(weight_bytes(llama_3_8b).total().count() == 2 * 8'030'261'248ULL);

TEST_CASE("Llama-3-8B has the official 8,030,261,248 parameters", "[weights]") {
    // 32 layers x 218,112,000 + embedding + LM head + final norm 4,096 = 8,030,261,248, the
    // safetensors total of meta-llama/Meta-Llama-3-8B.
    const ParamCounts pc = count_params(llama_3_8b);
    CHECK(pc.embedding == llama3_8b_table);
    CHECK(pc.lm_head == llama3_8b_table);
    CHECK(pc.attention == 32 * 41'943'040ULL);
    CHECK(pc.dense_mlp == 32 * 176'160'768ULL);
    CHECK(pc.norms == 32 * 8'192ULL + 4'096);
    CHECK(pc.routed_experts == 0);
    CHECK(pc.router == 0);
    CHECK(pc.total() == 32 * llama3_8b_layer + 2 * llama3_8b_table + 4'096);
    CHECK(pc.total() == 8'030'261'248ULL);
    CHECK(active_params(llama_3_8b) == pc.total());
    CHECK(params_per_expert(llama_3_8b) == 0);
    CHECK(moe_layer_count(llama_3_8b) == 0);
}

TEST_CASE("Llama-3-70B has 70,553,706,496 parameters", "[weights]") {
    // 80 x 855,654,400 + 2 x 1,050,673,152 + 8,192 = 70,553,706,496 (the safetensors total).
    CHECK(total_params(llama_3_70b) == 80 * llama3_70b_layer + 2 * llama3_70b_table + 8'192);
    CHECK(total_params(llama_3_70b) == 70'553'706'496ULL);
}

TEST_CASE("Mixtral-8x7B counts every expert, and two of eight per token", "[weights][moe]") {
    // Per layer: attention 41,943,040; router 8 x 4096 = 32,768; 8 experts of 3 x 4096 x 14336 =
    // 176,160,768 each = 1,409,286,144; norms 8,192. 32 layers: 46,440,644,608; + 2 x 32000 x 4096
    // (262,144,000) + 4,096 = 46,702,792,704, the safetensors total ("46.7B").
    const ParamCounts pc = count_params(mixtral_8x7b);
    CHECK(pc.router == 32 * 32'768ULL);
    CHECK(pc.routed_experts == 32 * 1'409'286'144ULL);
    CHECK(pc.dense_mlp == 0);
    CHECK(pc.total() == 46'702'792'704ULL);
    CHECK(params_per_expert(mixtral_8x7b) == 176'160'768ULL);
    CHECK(moe_layer_count(mixtral_8x7b) == 32);
    // Active: less 6 idle experts on 32 layers: 46,702,792,704 - 6 x 32 x 176,160,768 =
    // 12,879,925,248 (Mistral: "12.9B parameters per token").
    CHECK(active_params(mixtral_8x7b) == 12'879'925'248ULL);
}

TEST_CASE("DeepSeek-V3 counts MLA projections, dense layers and shared experts", "[weights][mla]") {
    // MLA per layer: q_a 1536 x 7168 = 11,010,048; q_a_layernorm 1,536; q_b 1536 x 128 x 192 =
    // 37,748,736; kv_a (512 + 64) x 7168 = 4,128,768; kv_a_layernorm 512; kv_b 512 x 128 x
    // (128 + 128) = 16,777,216; o 128 x 128 x 7168 = 117,440,512. Sum 187,107,328.
    const ParamCounts pc = count_params(deepseek_v3);
    CHECK(pc.attention == 61 * 187'107'328ULL);
    // Three dense layers of 3 x 7168 x 18432 = 396,361,728.
    CHECK(pc.dense_mlp == 3 * 396'361'728ULL);
    // 58 MoE layers: 256 experts of 3 x 7168 x 2048 = 44,040,192; one shared of the same width;
    // router 256 x 7168 + 256 bias = 1,835,264.
    CHECK(moe_layer_count(deepseek_v3) == 58);
    CHECK(params_per_expert(deepseek_v3) == 44'040'192ULL);
    CHECK(pc.routed_experts == 58 * 256 * 44'040'192ULL);
    CHECK(pc.shared_experts == 58 * 44'040'192ULL);
    CHECK(pc.router == 58 * 1'835'264ULL);
    // Total 671,026,419,200: DeepSeek's "671B" main model (the 11.5B MTP module is not part of it).
    CHECK(pc.total() == 671'026'419'200ULL);
    // Active: less 248 idle experts on 58 layers = 37,552,297,472 (the model card: "37B").
    CHECK(active_params(deepseek_v3) == 671'026'419'200ULL - 248ULL * 58 * 44'040'192ULL);
}

TEST_CASE("MLA without a query LoRA projects queries directly", "[weights][mla]") {
    // DeepSeek-V2-Lite style: q_lora_rank 0 replaces q_a + norm + q_b by q_proj, hidden x heads x
    // (qk_nope + qk_rope) = 7168 x 128 x 192 = 176,160,768, against 11,010,048 + 1,536 +
    // 37,748,736 = 48,760,320 for the low-rank path.
    ModelConfig c = deepseek_v3.config();
    c.mla.q_lora_rank = 0;
    const Model direct{c};
    CHECK(count_params(direct).attention - count_params(deepseek_v3).attention ==
          61 * (176'160'768ULL - 48'760'320ULL));
}

TEST_CASE("biases, LayerNorms and q/k norms are counted", "[weights]") {
    // gpt-oss-120b: attention biases on q (4096), k (512), v (512) and o (2880) = 8,000 per layer;
    // experts carry biases: gate and up 2 x 2880, down 2880 -> 8,640 per expert.
    CHECK(params_per_expert(gpt_oss_120b) == 3 * 2880ULL * 2880 + 8'640);
    ModelConfig no_bias = gpt_oss_120b.config();
    no_bias.attention_bias = AttentionBias::none;
    CHECK(count_params(gpt_oss_120b).attention - count_params(Model{no_bias}).attention ==
          36 * 8'000ULL);
    // Falcon-7B: one LayerNorm per layer (weight and bias, 2 x 4544) plus the final one.
    CHECK(count_params(falcon_7b).norms == 32 * 2 * 4544ULL + 2 * 4544);
    // Gemma-3-27B: four RMSNorms per layer plus q and k norms of head_dim 128.
    CHECK(count_params(gemma_3_27b).norms == 62 * (4 * 5376ULL + 2 * 128) + 5376);
    // Tied embeddings: no LM head.
    CHECK(count_params(gemma_3_27b).lm_head == 0);
}

TEST_CASE("extra parameters sit on the layers that hold them", "[weights]") {
    // 1,000,003 extra over a 4-layer model, 2 of them constant-state: 500,001 and 500,002 on those.
    ModelConfig c{.name = "hybrid",
                  .layers = LayerStack{},
                  .num_heads = 8,
                  .hidden_size = 512,
                  .intermediate_size = 1024,
                  .vocab_size = 1024,
                  .extra_params = 1'000'003};
    c.layers.append(constant_state(64 * KiB), 2).append(full_attention(2, 64), 2);
    const Model m{c};
    CHECK(count_params(m).other == 1'000'003);
    const Layout pp2{m, {.pp = 2}};
    // bf16: stage 0 holds both constant-state layers, so all of it: 2,000,006 B.
    CHECK(weight_bytes_per_rank(m, pp2, 0).other.count() == 2'000'006);
    CHECK(weight_bytes_per_rank(m, pp2, 1).other.is_zero());
}

TEST_CASE("bf16 weights take two bytes per parameter", "[weights][bytes]") {
    CHECK(weight_bytes(llama_3_70b).total().count() == 2 * 70'553'706'496ULL);
    CHECK(weight_bytes(llama_3_8b, {.format = WeightFormat::fp32}).total().count() ==
          4 * 8'030'261'248ULL);
}

TEST_CASE("int4 costs 4.15625 bits per weight on linear layers only", "[weights][bytes]") {
    // AWQ group 128: 4 bits + (16-bit scale + 4-bit zero) / 128 = 4.15625 bits. Every Llama-3-8B
    // linear layer has an input width divisible by 128, so the 32 layers' 6,979,321,856 linear
    // weights take 6,979,321,856 x 4.15625 / 8 = 3,625,975,808 B; the embedding and LM head
    // (1,050,673,152) and norms (266,240) stay at 2 B: 2,101,878,784 B.
    const WeightBytes wb = weight_bytes(llama_3_8b, {.format = WeightFormat::int4});
    CHECK(32 * llama3_8b_linear_per_layer * 133 / 256 == 3'625'975'808ULL);
    CHECK((wb.attention + wb.dense_mlp).count() == 3'625'975'808ULL);
    CHECK((wb.embedding + wb.lm_head + wb.norms).count() == 2 * (2 * llama3_8b_table + 266'240));
    CHECK(wb.total().count() == 3'625'975'808ULL + 2'101'878'784ULL);
    // One row of q_proj: 4096 x 4 bits + 32 groups x 20 bits = 17,024 bits = 2,128 B.
    CHECK(detail::encoded_bytes(encoding(WeightFormat::int4), 1, 4096, 1).count() == 2'128);
}

TEST_CASE("fp8 adds one fp32 scale per matrix, int8 one per output row", "[weights][bytes]") {
    // Llama-3-8B has 7 linear matrices per layer, 224 in all: fp8 adds 224 x 4 = 896 B to 1 B per
    // linear weight. int8 adds 4 B per output row: per layer q 4096 + k 1024 + v 1024 + o 4096 +
    // gate 14336 + up 14336 + down 4096 = 43,008 rows.
    const std::uint64_t linear = 32 * llama3_8b_linear_per_layer;
    const WeightBytes fp8 = weight_bytes(llama_3_8b, {.format = WeightFormat::fp8});
    CHECK((fp8.attention + fp8.dense_mlp).count() == linear + 896);
    const WeightBytes int8 = weight_bytes(llama_3_8b, {.format = WeightFormat::int8});
    CHECK((int8.attention + int8.dense_mlp).count() == linear + 32 * 43'008ULL * 4);
}

TEST_CASE("gpt-oss stores its experts in mxfp4 and the rest in bf16", "[weights][bytes][moe]") {
    // One expert matrix of 2880 x 2880: a row is 2880 x 4 bits + 90 scales x 8 bits = 12,240 bits
    // = 1,530 B, so 4,406,400 B; three per expert plus 8,640 bf16 bias values = 13,236,480 B.
    const WeightOptions o{.format = WeightFormat::bf16, .expert_format = WeightFormat::mxfp4};
    CHECK(bytes_per_expert(gpt_oss_120b, o).count() == 3 * 4'406'400ULL + 2 * 8'640);
    const WeightBytes wb = weight_bytes(gpt_oss_120b, o);
    CHECK(wb.routed_experts.count() == 36ULL * 128 * 13'236'480ULL);
    // Attention stays bf16.
    CHECK(wb.attention.count() == 2 * count_params(gpt_oss_120b).attention);
}

TEST_CASE("tensor parallelism shards linear layers and replicates norms", "[weights][layout]") {
    // Llama-3-70B at tp 8, bf16. Per layer per rank: attention 150,994,944 / 8 = 18,874,368; MLP
    // 704,643,072 / 8 = 88,080,384; norms 16,384 whole. Embedding and LM head: 128,256 / 8 =
    // 16,032 rows x 8,192 = 131,334,144 each; the final norm 8,192 whole.
    const Layout tp8{llama_3_70b, {.tp = 8}};
    const WeightBytes wb = weight_bytes_per_rank(llama_3_70b, tp8, 0);
    CHECK(wb.attention.count() == 2 * 80 * 18'874'368ULL);
    CHECK(wb.dense_mlp.count() == 2 * 80 * 88'080'384ULL);
    CHECK(wb.norms.count() == 2 * (80 * 16'384ULL + 8'192));
    CHECK(wb.embedding.count() == 2 * 131'334'144ULL);
    CHECK(wb.lm_head.count() == 2 * 131'334'144ULL);
    CHECK(wb.total().count() == 17'640'734'720ULL);
    CHECK(max_weight_bytes_per_rank(llama_3_70b, tp8) == wb.total());
}

TEST_CASE("tp beyond kv_heads keeps one whole KV head per rank", "[weights][layout]") {
    // Llama-3-70B at tp 16: q 512 rows, k and v one head (128 rows) each, o 512 input columns,
    // all x 8192: (512 + 128 + 128 + 512) x 8192 = 10,485,760 per layer, not 150,994,944 / 16.
    const Layout tp16{llama_3_70b, {.tp = 16}};
    CHECK(weight_bytes_per_rank(llama_3_70b, tp16, 0).attention.count() == 2 * 80 * 10'485'760ULL);
}

TEST_CASE("the vocabulary is padded to 64 before it is split", "[weights][layout]") {
    // A vocabulary of 1,000 is padded to 1,024 (vLLM's pad_vocab_size), so tp 8 gives 128 rows
    // per rank, not ceil(1,000 / 8) = 125.
    const Model m{ModelConfig{.name = "tiny",
                              .layers = LayerStack::uniform(4, full_attention(8, 64)),
                              .num_heads = 8,
                              .hidden_size = 512,
                              .intermediate_size = 1024,
                              .vocab_size = 1000}};
    const Layout tp8{m, {.tp = 8}};
    CHECK(weight_bytes_per_rank(m, tp8, 0).embedding.count() == 2 * 128 * 512ULL);
    // The whole model is counted unpadded: 1,000 x 512.
    CHECK(weight_bytes(m).embedding.count() == 2 * 1000 * 512ULL);
}

TEST_CASE("pipeline stages hold the embedding first and the LM head last", "[weights][layout]") {
    // Llama-3-70B at pp 2: 40 layers per stage (1,711,308,800 B each in bf16 -> 68,452,352,000).
    // Stage 0 adds the embedding (2,101,346,304 B); stage 1 the final norm (16,384 B) and LM head.
    const Layout pp2{llama_3_70b, {.pp = 2}};
    const WeightBytes s0 = weight_bytes_per_rank(llama_3_70b, pp2, 0);
    const WeightBytes s1 = weight_bytes_per_rank(llama_3_70b, pp2, 1);
    CHECK(s0.lm_head.is_zero());
    CHECK(s1.embedding.is_zero());
    CHECK(s0.total().count() == 68'452'352'000ULL + 2'101'346'304ULL);
    CHECK(s1.total().count() == 68'452'352'000ULL + 2'101'346'304ULL + 16'384);
    // Never averaged: the heavier stage is what a GPU must fit.
    CHECK(max_weight_bytes_per_rank(llama_3_70b, pp2) == s1.total());
    CHECK(s0.total() + s1.total() == weight_bytes(llama_3_70b).total());
}

TEST_CASE("tied embeddings are held twice under pipeline parallelism", "[weights][layout]") {
    // Gemma-2-27B ties its LM head to the 256,000 x 4,608 embedding (2,359,296,000 B in bf16).
    // One stage holds it once; at pp 2, vLLM builds embed_tokens on the last stage too.
    const Layout pp1{gemma_2_27b, {}};
    CHECK(weight_bytes_per_rank(gemma_2_27b, pp1, 0).lm_head.is_zero());
    CHECK(weight_bytes_per_rank(gemma_2_27b, pp1, 0).embedding.count() == 2'359'296'000ULL);
    const Layout pp2{gemma_2_27b, {.pp = 2}};
    CHECK(weight_bytes_per_rank(gemma_2_27b, pp2, 0).embedding.count() == 2'359'296'000ULL);
    CHECK(weight_bytes_per_rank(gemma_2_27b, pp2, 1).lm_head.count() == 2'359'296'000ULL);
}

TEST_CASE("MLA's low-rank down-projections are replicated across TP ranks", "[weights][mla]") {
    // DeepSeek-V3 at tp 8, per layer per rank: q_a 11,010,048 + q_a norm 1,536 + kv_a 4,128,768 +
    // kv_a norm 512 whole; q_b 37,748,736 / 8, kv_b 16,777,216 / 8, o 117,440,512 / 8.
    const Layout tp8{deepseek_v3, {.tp = 8}};
    const std::uint64_t per_layer =
        11'010'048ULL + 1'536 + 4'128'768 + 512 + (37'748'736ULL + 16'777'216 + 117'440'512) / 8;
    CHECK(weight_bytes_per_rank(deepseek_v3, tp8, 0).attention.count() == 2 * 61 * per_layer);
    // The router is replicated: 58 x 1,835,264 parameters on every rank.
    CHECK(weight_bytes_per_rank(deepseek_v3, tp8, 0).router.count() == 2 * 58 * 1'835'264ULL);
}

TEST_CASE("an override replaces the total and scales every rank", "[weights][override]") {
    // Bytes: the total is exactly the figure given; tp 8 ranks scale by the same ratio.
    const WeightOptions by_bytes{.override_bytes = 100 * GB};
    CHECK(weight_bytes(llama_3_70b, by_bytes).total() == 100 * GB);
    const Layout tp8{llama_3_70b, {.tp = 8}};
    // 17,640,734,720 x 1e11 / 141,107,412,992 = 12,501,635,701.4 -> 12,501,635,701 B.
    CHECK(weight_bytes_per_rank(llama_3_70b, tp8, 0, by_bytes).total().count() ==
          12'501'635'701ULL);
    // Parameters: the computed bytes scale with the count: 8,030,261,248 x 2 B x 8e9 /
    // 8,030,261,248 = 16,000,000,000 B for a stated 8e9 parameters.
    const WeightOptions by_params{.override_params = 8'000'000'000ULL};
    CHECK(weight_bytes(llama_3_8b, by_params).total().count() == 16'000'000'000ULL);
    // Both at once is refused.
    CHECK_THROWS_AS(weight_bytes(llama_3_8b, {.override_params = 1, .override_bytes = 1 * GB}),
                    InvalidInput);
}

TEST_CASE("mul_div is exact beyond 64-bit products", "[weights]") {
    // (2^63 + 1) x 6 / 4 = 1.5 x 2^63 + 1.5 -> 13,835,058,055,282,163,713.
    CHECK(detail::mul_div((1ULL << 63) + 1, 6, 4) == 13'835'058'055'282'163'713ULL);
    CHECK(detail::mul_div(17'640'734'720ULL, 100'000'000'000ULL, 141'107'412'992ULL) ==
          12'501'635'701ULL);
    CHECK_THROWS_AS(detail::mul_div(1ULL << 63, 4, 1), OverflowError);
}

TEST_CASE("weight formats parse from their spellings", "[weights]") {
    for (WeightFormat f : all_weight_formats) CHECK(parse_weight_format(name(f)) == f);
    CHECK(parse_weight_format("awq") == WeightFormat::int4);
    CHECK(parse_weight_format("bfloat16") == WeightFormat::bf16);
    CHECK_FALSE(parse_weight_format("int3").has_value());
}

TEST_CASE("MLP-only, KV-sharing and indexer layers count their own tensors", "[weights]") {
    // A 2-layer toy (hidden 64, 4 heads of 16, 2 KV heads, MLP 128, vocab 10, untied).
    ModelConfig c{.name = "toy",
                  .num_heads = 4,
                  .head_dim = 16,
                  .hidden_size = 64,
                  .intermediate_size = 128,
                  .vocab_size = 10};
    // Attention layer: q 64 x 64 + k, v 2 x 64 x 32 + o 64 x 64 = 12,288; MLP 3 x 64 x 128 =
    // 24,576; norms 128. Edges: 2 x 10 x 64 + final norm 64 = 1,344.
    c.layers = LayerStack::uniform(2, full_attention(2, 16));
    const std::uint64_t dense = total_params(Model{c});
    CHECK(dense == 2 * (12'288 + 24'576 + 128) + 1'344);
    // Layer 1 MLP-only under MlpLayers::mlp_only: layer 0 loses its MLP, layer 1 its attention.
    c.layers = LayerStack{}.append(full_attention(2, 16)).append(mlp_only());
    c.mlp_layers = MlpLayers::mlp_only;
    CHECK(total_params(Model{c}) == (12'288 + 128) + (24'576 + 128) + 1'344);
    // A KV-sharing layer keeps k and v when it names its heads (Gemma-3n), else only q and o.
    c.mlp_layers = MlpLayers::every_layer;
    c.layers = LayerStack{}.append(full_attention(2, 16)).append(shared_cache(2, 16));
    CHECK(total_params(Model{c}) == dense);
    c.layers = LayerStack{}.append(full_attention(2, 16)).append(shared_cache());
    CHECK(total_params(Model{c}) == dense - 2 * 64 * 32);
    // A chunked-local layer has full attention's weights.
    c.layers = LayerStack{}.append(full_attention(2, 16)).append(chunked_local(2, 16, 8));
    CHECK(total_params(Model{c}) == dense);
}

TEST_CASE("a vision tower is counted apart and held by the first stage", "[weights][vision]") {
    ModelConfig c = llama_3_8b.config();
    c.vision_params = 1'000'000;
    const Model m{c};
    CHECK(count_params(m).vision == 1'000'000);
    CHECK(total_params(m) == 8'030'261'248ULL + 1'000'000);
    // 16-bit, split over tp: 2 B x 1,000,000 / 2 per rank of stage 0, nothing on stage 1.
    const Layout l{m, {.tp = 2, .pp = 2}};
    CHECK(weight_bytes_per_rank(m, l, 0).vision.count() == 1'000'000);
    CHECK(weight_bytes_per_rank(m, l, 1).vision.is_zero());
    // Never active: a token's routed experts are all that is idle.
    CHECK(active_params(m) == total_params(m));
}
