// kvplan::size and kvplan::compare (plan/size.hpp, plan/compare.hpp): the figures of `kvplan size`
// and `kvplan compare`, and the terms an explanation renders, derived by hand.

#include <catch2/catch.hpp>
#include <kvplan/gpu_spec.hpp>
#include <kvplan/hf_config.hpp>
#include <kvplan/plan/compare.hpp>
#include <kvplan/plan/size.hpp>
#include <kvplan/presets.hpp>
#include <vector>

#include "support/bundled_models.hpp"

using namespace kvplan;
using namespace kvplan::testing;

TEST_CASE("size gives Llama-3-8B's KV per token, sequence and batch, whole and per GPU", "[size]") {
    // 32 layers x 8 KV heads x (128 K + 128 V values) x 2 B = 131,072 B per token; tp 2 holds
    // 4 heads a rank: 65,536 B. 8,192 tokens: 131,072 x 8,192 = 1,073,741,824 B; 4 sequences
    // 4,294,967,296 B; per GPU half of each.
    const SizeAnswer a =
        size(presets::llama_3_8b, KvDtype::bf16, {.tp = 2}, {.context = 8192, .concurrency = 4});
    CHECK(a.per_token.count() == 131'072);
    CHECK(a.per_token_per_gpu.count() == 65'536);
    CHECK(a.per_sequence.count() == 1'073'741'824ULL);
    CHECK(a.per_sequence_per_gpu.count() == 536'870'912ULL);
    CHECK(a.total.count() == 4'294'967'296ULL);
    CHECK(a.total_per_gpu.count() == 2'147'483'648ULL);
    CHECK_FALSE(a.paged_per_gpu.has_value());
    CHECK_FALSE(a.replicated_kv_heads.has_value());
    // The terms: one kind of layer, 32 of it, one head's K and V 128 x 2 = 256 B each.
    REQUIRE(a.per_token_rank.terms.size() == 1);
    const SizeTerm& t = a.per_token_rank.terms[0];
    CHECK(t.layers == 32);
    CHECK(t.kv_heads == 4);
    CHECK(t.k_bytes.count() == 256);
    CHECK(t.v_bytes.count() == 256);
    CHECK(t.per_token.count() == 4 * 512);
    CHECK(t.tokens_kept == 8192);
    CHECK(t.per_sequence.count() == 2048ULL * 8192);
    // Every layer of the kind: 32 x 2,048 = 65,536 B a token, 32 x 16 MiB = 512 MiB a sequence;
    // one kind, so they are the rank's figures.
    CHECK(t.layers_per_token.count() == 32ULL * 2048);
    CHECK(t.layers_per_sequence.count() == 32ULL * 2048 * 8192);
    CHECK(t.layers_per_token == a.per_token_rank.per_token);
}

TEST_CASE("size defaults the context to the model's limit", "[size]") {
    // Llama-3-8B states max_position_embeddings 8,192 and no rope scaling.
    const SizeAnswer a = size(presets::llama_3_8b, KvDtype::bf16, {});
    CHECK(a.context == 8192);
    CHECK(a.per_sequence.count() == 131'072ULL * 8192);
}

TEST_CASE("size pages a sequence into blocks and names replicated heads", "[size]") {
    // 8,200 tokens in blocks of 16: ceil(8,200 / 16) = 513 blocks = 8,208 tokens a layer; at tp 16
    // over 8 KV heads each rank holds one head: 32 layers x 1 x 512 B = 16,384 B per token, so
    // 8,208 x 16,384 = 134,479,872 B reserved, 8 x 16,384 = 131,072 B of it unused.
    const SizeAnswer a =
        size(presets::llama_3_8b, KvDtype::bf16, {.tp = 16}, {.context = 8200, .block_size = 16});
    CHECK(a.per_token_per_gpu.count() == 16'384);
    REQUIRE(a.replicated_kv_heads.has_value());
    CHECK(*a.replicated_kv_heads == 8);
    REQUIRE(a.paged_per_gpu.has_value());
    CHECK(a.paged_per_gpu->blocks == 513ULL * 32);
    CHECK(a.paged_per_gpu->reserved.count() == 134'479'872ULL);
    CHECK(a.paged_per_gpu->waste().count() == 131'072ULL);
}

TEST_CASE("size keeps a sliding window's tokens and splits stages", "[size]") {
    // Mistral-7B-v0.1: every layer slides over 4,096 tokens, so a 10,000-token sequence keeps
    // 4,096 x 131,072 = 536,870,912 B. pp 2 gives each stage 16 layers: 65,536 B per token.
    const SizeAnswer a =
        size(presets::mistral_7b_v0_1, KvDtype::bf16, {.pp = 2}, {.context = 10'000});
    CHECK(a.per_sequence.count() == 536'870'912ULL);
    CHECK(a.per_token_per_gpu.count() == 65'536);
    CHECK(a.per_sequence_per_gpu.count() == 268'435'456ULL);
    REQUIRE(a.stages.size() == 2);
    CHECK(a.stages[1].first_layer == 16);
    CHECK(a.stages[1].layers == 16);
    REQUIRE(a.whole.terms.size() == 1);
    CHECK(a.whole.terms[0].tokens_kept == 4096);
    CHECK(a.per_sequence_rank.shard.first_layer == 16 * a.busiest_stage);
    // Stage 1 holds layers 16 to 31 of the 32; the whole model's shard, 0 to 31.
    const SizeBreakdown second =
        size_breakdown(presets::mistral_7b_v0_1, KvDtype::bf16, 10'000,
                       Layout(presets::mistral_7b_v0_1, {.pp = 2}).stage(1), 1);
    CHECK(second.first_layer == 16);
    CHECK(second.last_layer == 31);
    CHECK(a.whole.first_layer == 0);
    CHECK(a.whole.last_layer == 31);
}

TEST_CASE("size gives DeepSeek-V3.2's MLA latent and indexer key per layer", "[size]") {
    // configs/models/deepseek-v3.2.json: 61 layers, kv_lora_rank 512, qk_rope_head_dim 64,
    // index_head_dim 128. The latent in bf16: (512 + 64) x 2 = 1,152 B. The indexer's key, fp8
    // whatever the KV dtype (vLLM's DeepseekV32IndexerCache in
    // vllm/model_executor/models/deepseek_v2.py: head_dim + head_dim / 128 x 4 uint8): 128 + 4 =
    // 132 B. A layer 1,284 B, the model 61 x 1,284 = 78,324 B per token, on every TP rank.
    const Model m = bundled("deepseek-v3.2");
    const SizeAnswer a = size(m, KvDtype::bf16, {.tp = 8}, {.context = 8192});
    REQUIRE(a.whole.terms.size() == 1);
    const SizeTerm& t = a.whole.terms[0];
    CHECK(t.spec.kind == CacheKind::mla_latent);
    CHECK(t.layers == 61);
    CHECK(t.latent_bytes.count() == 1152);
    CHECK(t.indexer_bytes.count() == 132);
    CHECK(t.per_token.count() == 1284);
    CHECK(a.per_token.count() == 78'324);
    CHECK(a.per_token_per_gpu.count() == 78'324);
    // 78,324 x 8,192 = 641,630,208 B.
    CHECK(a.per_sequence.count() == 641'630'208ULL);
    // fp8_ds_mla: 512 fp8 values + 4 fp32 scales (one per 128) + 64 bf16 RoPE values = 512 + 16 +
    // 128 = 656 B (vLLM's FlashMLA sparse layout), + 132 = 788 B a layer, 48,068 B per token.
    const SizeAnswer d = size(m, KvDtype::fp8_ds_mla, {}, {.context = 8192});
    CHECK(d.whole.terms[0].latent_bytes.count() == 656);
    CHECK(d.whole.terms[0].per_token.count() == 788);
    CHECK(d.per_token.count() == 61 * 788);
}

TEST_CASE("size gives the weights of the format asked, else the checkpoint's", "[size]") {
    // Llama-3-8B has 8,030,261,248 parameters (Meta's model card: 8.03B); all bf16, 2 B each.
    const SizeAnswer a = size(presets::llama_3_8b, KvDtype::bf16, {}, {.context = 1024});
    CHECK(a.params == 8'030'261'248ULL);
    CHECK(a.weights_from_checkpoint);
    CHECK(a.weight_bytes.total().count() == 2 * 8'030'261'248ULL);
    CHECK(a.weight_bytes_per_gpu == a.weight_bytes.total());
    const SizeAnswer f =
        size(presets::llama_3_8b, KvDtype::bf16, {},
             {.context = 1024, .weights = WeightOptions{.format = WeightFormat::fp8}});
    CHECK_FALSE(f.weights_from_checkpoint);
    CHECK(f.weights.format == WeightFormat::fp8);
    CHECK(f.weight_bytes.total() < a.weight_bytes.total());
}

TEST_CASE("compare sizes each case as size does, and evaluates the ones with a GPU", "[size]") {
    const GpuSpec h100 = bundled_gpu("h100-sxm");
    const std::vector<CompareCase> cases{
        {.model = presets::llama_3_8b, .kv = KvDtype::bf16},
        {.model = presets::llama_3_8b, .kv = KvDtype::fp8_e4m3},
        {.model = presets::llama_3_8b, .kv = KvDtype::bf16, .gpu = h100}};
    const std::vector<CompareRow> rows = compare(cases, {.parallel = {.tp = 2}, .concurrency = 2});
    REQUIRE(rows.size() == 3);
    // 131,072 B per token in bf16; fp8 holds one byte a value: 65,536 B. Per GPU at tp 2, half.
    CHECK(rows[0].size.per_token.count() == 131'072);
    CHECK(rows[0].size.per_token_per_gpu.count() == 65'536);
    CHECK(rows[1].size.per_token.count() == 65'536);
    // The context is the model's limit, 8,192 tokens: 131,072 x 8,192 B a sequence.
    CHECK(rows[0].size.context == 8192);
    CHECK(rows[0].size.per_sequence.count() == 1'073'741'824ULL);
    CHECK_FALSE(rows[0].replica.has_value());
    REQUIRE(rows[2].replica.has_value());
    REQUIRE(rows[2].deployment.has_value());
    CHECK(rows[2].deployment->parallel.tp == 2);
    CHECK(rows[2].replica->fits());
    // 2 x 79.19 GiB holds 16 GB of weights with room for far more than 2 sequences of 1 GiB.
    CHECK(rows[2].replica->total_max_concurrency > 2);
}
