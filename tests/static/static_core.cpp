// static_assert only: if this file compiles, the core's headline figures hold at compile time.
#include <kvplan/core.hpp>
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
static_assert(kv_bytes_per_token(deepseek_v3, KvDtype::bf16, Layout{deepseek_v3, {.tp = 8}}.stage(0))
                  .count() == 70'272);
// Llama-3-70B at tp 16: one head per rank = 40,960 B.
static_assert(kv_bytes_per_token(llama_3_70b, KvDtype::bf16, Layout{llama_3_70b, {.tp = 16}}.stage(0))
                  .count() == 40'960);
// Gemma-2-27B at 32,768 tokens: 23 x 32,768 x 8,192 + 23 x 4,096 x 8,192.
static_assert(kv_bytes_per_sequence(gemma_2_27b, KvDtype::bf16, 32768).count() == 6'945'767'424ULL);
// Paging: 17 tokens in 16-token blocks = 2 blocks; 62 shared full blocks of a 1,000-token prefix.
static_assert(blocks_for(17, 16) == 2);
static_assert(paged_shared_prefix(llama_3_70b, KvDtype::bf16, 8, 1000, 1000, 16).shared_blocks == 62);
// The inverse: 40 GiB holds 32 sequences of 4,096 tokens.
static_assert(sequences_that_fit(40 * GiB, llama_3_70b, KvDtype::bf16, 4096) == 32);
static_assert(*max_context(40 * GiB, llama_3_70b, KvDtype::bf16, 32) == 4096);
// Error text is built without allocation, so it is constexpr too.
static_assert(detail::TextRef(detail::text("tp ", 3u, " of ", 8)) == "tp 3 of 8");
static_assert(detail::TextRef(detail::field_message("m", "tp", ">= 1", "0")) ==
              "m: tp: expected >= 1, found 0");
static_assert(parse_kv_dtype("fp8") == KvDtype::fp8_e4m3 && !parse_kv_dtype("fp9").has_value());
}  // namespace
