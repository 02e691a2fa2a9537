// static_assert only: if this file compiles, the core's headline figures hold at compile time.
#include <kvplan/core.hpp>
#include <kvplan/plain_decoder.hpp>
#include <kvplan/presets.hpp>

namespace {
using namespace kvplan;
using namespace kvplan::presets;

// 2 x 80 x 8 x 128 x 2 B = 327,680 B per token.
static_assert(kv_bytes_per_token(llama_3_70b, KvDtype::bf16).count() == 327'680);
static_assert(kv_bytes_per_token(llama_3_70b, KvDtype::bf16) == 320 * KiB);
// x 4,096 tokens = 1,342,177,280 B; x 32 sequences = 40 GiB.
static_assert(kv_bytes_per_sequence(llama_3_70b, KvDtype::bf16, 4096).count() == 1'342'177'280ULL);
static_assert(kv_bytes_per_sequence(llama_3_70b, KvDtype::bf16, 4096) * 32 == 40 * GiB);
// MQA: one KV head, 40,960 B.
constexpr Model llama_3_70b_mqa{[] {
    ModelConfig c = llama_3_70b.config();
    c.layers = LayerStack::uniform(80, full_attention(1, 128));
    return c;
}()};
static_assert(kv_bytes_per_token(llama_3_70b_mqa, KvDtype::bf16).count() == 40'960);
// Llama-3-8B: 2 x 32 x 8 x 128 x 2 = 131,072 B = 128 KiB.
static_assert(kv_bytes_per_token(llama_3_8b, KvDtype::bf16) == 128 * KiB);
// DeepSeek-V3: 61 x 576 x 2 = 70,272 B, on every TP rank.
static_assert(kv_bytes_per_token(deepseek_v3, KvDtype::bf16).count() == 70'272);
static_assert(kv_bytes_per_token(deepseek_v3, KvDtype::bf16,
                                 Layout{deepseek_v3, {.tp = 8}}.stage(0))
                  .count() == 70'272);
// Llama-3-70B at tp 16: one head per rank = 40,960 B.
static_assert(kv_bytes_per_token(llama_3_70b, KvDtype::bf16,
                                 Layout{llama_3_70b, {.tp = 16}}.stage(0))
                  .count() == 40'960);
// Gemma-2-27B at 32,768 tokens: 23 x 32,768 x 8,192 + 23 x 4,096 x 8,192.
static_assert(kv_bytes_per_sequence(gemma_2_27b, KvDtype::bf16, 32768).count() == 6'945'767'424ULL);
// Paging: 17 tokens in 16-token blocks = 2 blocks; 62 shared full blocks of a 1,000-token prefix.
static_assert(blocks_for(17, 16) == 2);
static_assert(paged_shared_prefix(llama_3_70b, KvDtype::bf16, 8, 1000, 1000, 16).shared_blocks ==
              62);
// The inverse: 40 GiB holds 32 sequences of 4,096 tokens.
static_assert(sequences_that_fit(40 * GiB, llama_3_70b, KvDtype::bf16, 4096) == 32);
static_assert(*max_context(40 * GiB, llama_3_70b, KvDtype::bf16, 32) == 4096);
// Error text is built without allocation, so it is constexpr too.
static_assert(detail::TextRef(detail::text("tp ", 3u, " of ", 8)) == "tp 3 of 8");
static_assert(detail::TextRef(detail::field_message("m", "tp", ">= 1", "0")) ==
              "m: tp: expected >= 1, found 0");
static_assert(parse_kv_dtype("fp8") == KvDtype::fp8_e4m3 && !parse_kv_dtype("fp9").has_value());

// One table per enum: the name and the parse agree for every CacheKind and KvDtype.
static_assert([] {
    for (const NamedCacheKind& n : cache_kinds)
        if (parse_cache_kind(name(n.kind)) != n.kind) return false;
    for (KvDtype d : all_kv_dtypes)
        if (parse_kv_dtype(name(d)) != d) return false;
    return true;
}());
// DeepSeek's packed fp8 latent (vLLM's fp8_ds_mla): 512 e4m3 values + 4 fp32 scales + 64 bf16
// RoPE values = 656 B; DeepSeek-V3.2's indexer key: 128 fp8 + one fp32 scale = 132 B.
static_assert(mla_latent_bytes(mla_latent(512, 64), KvDtype::fp8_ds_mla).count() == 656);
static_assert(indexer_key_bytes(128).count() == 132);
static_assert(layer_bytes_per_token(mla_latent(512, 64, 128), KvDtype::bf16).count() ==
              1'152 + 132);
// MiniMax-M3's sparse layer: GQA 4 x 128 K and V, 4 x 256 x 2 = 2,048 B in bf16, and the indexer's
// key of 128 bf16 values, 256 B, in bf16 whatever the KV dtype (vLLM's MiniMaxM3IndexerCache):
// in fp8 K and V halve to 1,024 B and the key stays 256 B; at tp 4 one KV head, 512 B, and the
// whole key, which is one head replicated on every rank.
static_assert(index_key_bytes(indexed_attention(4, 128, 128)).count() == 256);
static_assert(layer_bytes_per_token(indexed_attention(4, 128, 128), KvDtype::bf16).count() ==
              2'048 + 256);
static_assert(layer_bytes_per_token(indexed_attention(4, 128, 128), KvDtype::fp8_e4m3).count() ==
              1'024 + 256);
static_assert(layer_bytes_per_token(indexed_attention(4, 128, 128), KvDtype::bf16, 4).count() ==
              512 + 256);
// A chunked-local layer of chunk 8,192 (Llama-4) holds at most one chunk: 8,192 tokens at any
// length past it; right at 8,193 tokens it holds the one token of the new chunk.
static_assert(tokens_kept(chunked_local(8, 128, 8'192), 131'072) == 8'192);
static_assert(tokens_kept(chunked_local(8, 128, 8'192), 5'000) == 5'000);
static_assert(chunk_tokens_now(8'192, 8'193) == 1 && chunk_tokens_now(8'192, 16'384) == 8'192);
// Paged: 8,192 / 16 = 512 blocks at the peak. Chunk 7 in blocks of 4: chunk 0 covers blocks 0-1,
// chunk 1 (positions 7-13) blocks 1-3, so 3 blocks once a second chunk has filled.
static_assert(peak_chunk_blocks(8'192, 131'072, 16) == 512);
static_assert(peak_chunk_blocks(7, 10, 4) == 2 && peak_chunk_blocks(7, 14, 4) == 3);
// A plain decoder with Llama-3-8B's numbers is Llama-3-8B: 131,072 B per token.
constexpr Model plain_llama_3_8b = plain_decoder({.name = "plain",
                                                  .num_hidden_layers = 32,
                                                  .hidden_size = 4096,
                                                  .num_attention_heads = 32,
                                                  .num_key_value_heads = 8,
                                                  .vocab_size = 128'256,
                                                  .intermediate_size = 14'336});
static_assert(kv_bytes_per_token(plain_llama_3_8b, KvDtype::bf16) == 128 * KiB);
static_assert(plain_llama_3_8b.query_head_dim() == 128);
// An attention-free model (Mamba): no query heads, no MLP, a state per sequence only.
constexpr Model tiny_mamba{
    ModelConfig{.name = "mamba",
                .layers = LayerStack::uniform(4, constant_state(Bytes::exactly(1'000))),
                .hidden_size = 64,
                .vocab_size = 100,
                .mlp_layers = MlpLayers::mlp_only}};
static_assert(kv_bytes_per_token(tiny_mamba, KvDtype::bf16).is_zero());
static_assert(kv_bytes_per_sequence(tiny_mamba, KvDtype::bf16, 1'000'000).count() == 4'000);
}  // namespace
