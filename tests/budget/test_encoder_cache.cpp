// The encoder outputs vLLM's profile run keeps for a model with a vision tower, charged to the
// reserve (budget/reserve.hpp, encoder_cache) and to vLLM's KV budget (engine/report.hpp).

#include <catch2/catch.hpp>
#include <kvplan/engine.hpp>
#include <kvplan/hf_config.hpp>

#include "support/bundled_models.hpp"
#include "support/datasheet_gpus.hpp"

using namespace kvplan;
using namespace kvplan::testing;

TEST_CASE("Gemma 3 27B: the profiled encoder outputs", "[encoder_cache]") {
    const Model m = bundled("gemma-3-27b");
    REQUIRE(m.config().vision_params != 0);
    // configs/models/gemma-3-27b.json: "mm_tokens_per_image": 256, text hidden_size 5376.
    CHECK(m.config().mm_tokens_per_item == 256);
    // vLLM's H100 defaults: max_num_batched_tokens 8,192, max_num_seqs 1,024. Budget
    // max(8192, 256) = 8,192 tokens; items min(8192 / 256, 1024 x 999) = 32; outputs
    // 32 x 256 x 5376 x 2 B (bf16) = 88,080,384 B = 84 MiB.
    const EncoderCache e = encoder_cache(m, 0, 8192, 1024, {});
    CHECK(e.budget == 8192);
    CHECK(e.tokens_per_item == 256);
    CHECK(e.items == 32);
    CHECK(e.bytes == Bytes::exactly(88'080'384));
    CHECK(e.bytes == 84 * MiB);
    // A budget of 1,000 tokens holds 1000 / 256 = 3 images: 3 x 256 x 5376 x 2 = 8,257,536 B.
    CHECK(encoder_cache(m, 0, 1000, 1024, {}).bytes == Bytes::exactly(8'257'536));
    // Two sequences of one image each cap the items at 2: 2 x 256 x 5376 x 2 = 5,505,024 B.
    CHECK(encoder_cache(m, 0, 8192, 2, {.items_per_prompt = 1}).bytes == Bytes::exactly(5'505'024));
    // An image larger than the budget widens it: max(8192, 10000) = 10,000, one image,
    // 10000 x 5376 x 2 = 107,520,000 B.
    const EncoderCache big = encoder_cache(m, 0, 8192, 1024, {.tokens_per_item = 10'000});
    CHECK(big.budget == 10'000);
    CHECK(big.items == 1);
    CHECK(big.bytes == Bytes::exactly(107'520'000));
}

TEST_CASE("Qwen-VL's largest image and Gemma 4's soft tokens size the profiled outputs",
          "[encoder_cache]") {
    // Qwen2.5-VL-7B: the published preprocessor_config.json's max_pixels 12,845,056 over
    // (patch 14 x merge 2)^2 = 784 pixels a token: 16,384 tokens, twice H100's 8,192-token budget,
    // so the budget widens to 16,384 and one image is profiled: 16384 x 3584 x 2 B = 117,440,512.
    const Model qwen25 = bundled("qwen2.5-vl-7b-instruct");
    CHECK(qwen25.config().mm_tokens_per_item == 12'845'056 / (28 * 28));
    const EncoderCache q = encoder_cache(qwen25, 0, 8192, 1024, {});
    CHECK(q.budget == 16'384);
    CHECK(q.items == 1);
    CHECK(q.bytes == Bytes::exactly(16'384ULL * 3584 * 2));
    // Qwen3-VL-8B and Qwen3.5-27B: longest_edge 16,777,216 over (16 x 2)^2 = 1,024: 16,384 too.
    // Qwen3-VL's tower puts its three deepstack mergers' outputs (deepstack_visual_indexes 8, 16,
    // 24) beside the merger's in every output token, and vLLM's encoder cache keeps them so
    // (qwen3_vl.py, Qwen3_VisionTransformer.forward: hidden_size x (1 + depth_of_deepstack)):
    // one image of 16384 x (4096 x 4) x 2 B = 536,870,912 for Qwen3-VL-8B, not the 134,217,728
    // of the language model's width alone. Qwen3.5-27B has no deepstack mergers: 16384 x 5120 x 2
    // B = 167,772,160.
    CHECK(bundled("qwen3-vl-8b-instruct").config().mm_tokens_per_item == 16'384);
    CHECK(bundled("qwen3-vl-8b-instruct").config().mm_embedding_width == 4 * 4096);
    CHECK(bundled("qwen3.5-27b").config().mm_tokens_per_item == 16'384);
    CHECK(bundled("qwen3.5-27b").config().mm_embedding_width == 5120);
    CHECK(encoder_cache(bundled("qwen3-vl-8b-instruct"), 0, 8192, 1024, {}).bytes ==
          Bytes::exactly(536'870'912));
    CHECK(encoder_cache(bundled("qwen3.5-27b"), 0, 8192, 1024, {}).bytes ==
          Bytes::exactly(167'772'160));
    // Qwen3-VL-30B-A3B (MoE, the same tower): 16384 x (2048 x 4) x 2 B = 268,435,456.
    CHECK(encoder_cache(bundled("qwen3-vl-30b-a3b-instruct"), 0, 8192, 1024, {}).bytes ==
          Bytes::exactly(268'435'456));
    // Gemma 4 26B-A4B: vision_soft_tokens_per_image 280; 8192 / 280 = 29 images of 280 tokens,
    // 2,816 wide: 29 x 280 x 2816 x 2 B = 45,731,840.
    const Model gemma4 = bundled("gemma-4-26b-a4b");
    CHECK(gemma4.config().mm_tokens_per_item == 280);
    const EncoderCache g = encoder_cache(gemma4, 0, 8192, 1024, {});
    CHECK(g.items == 29);
    CHECK(g.bytes == Bytes::exactly(45'731'840));
}

TEST_CASE("text only, a skipped profile, a later stage or no tower: no encoder outputs",
          "[encoder_cache]") {
    const Model m = bundled("gemma-3-27b");
    CHECK(encoder_cache(m, 0, 8192, 1024, {.items_per_prompt = 0}).bytes == Bytes{});
    CHECK(encoder_cache(m, 0, 8192, 1024, {.skip_profiling = true}).bytes == Bytes{});
    CHECK(encoder_cache(m, 1, 8192, 1024, {}).bytes == Bytes{});
    CHECK(encoder_cache(bundled("llama-3-8b"), 0, 8192, 1024, {}).bytes == Bytes{});
}

TEST_CASE("images per prompt or a skipped profile on a text-only model are refused",
          "[encoder_cache]") {
    // Llama-3-8B has no vision tower (vision_params 0): the knobs would change nothing.
    const Model m = bundled("llama-3-8b");
    REQUIRE(m.config().vision_params == 0);
    CHECK_THROWS_AS(encoder_cache(m, 0, 8192, 1024, {.items_per_prompt = 2}), InvalidInput);
    CHECK_THROWS_WITH(encoder_cache(m, 0, 8192, 1024, {.items_per_prompt = 0}),
                      Catch::Contains("vision_params") && Catch::Contains("text-only"));
    CHECK_THROWS_AS(encoder_cache(m, 0, 8192, 1024, {.skip_profiling = true}), InvalidInput);
}

TEST_CASE("vLLM charges the encoder outputs to its KV budget, SGLang does not", "[encoder_cache]") {
    const Replica r{.model = bundled("gemma-3-27b"), .gpu = h100_sxm(), .parallel = {.tp = 1}};
    const Layout l = r.layout();
    BudgetOptions text_only;
    text_only.reserve.encoder_cache.items_per_prompt = 0;
    const EngineMemory with = engine_memory(Engine::vllm, r, l, 0);
    const EngineMemory without = engine_memory(Engine::vllm, r, l, 0, text_only);
    // The newest release profiles 16,384 tokens on an H100 (vLLM PR #51726, engine/release.hpp):
    // 16,384 / 256 = 64 images x 256 tokens x 5376 x 2 B = 176,160,768 B, as above at twice the
    // budget.
    CHECK(with.encoder_cache == Bytes::exactly(176'160'768));
    CHECK(without.encoder_cache == Bytes{});
    CHECK(without.kv_memory - with.kv_memory == Bytes::exactly(176'160'768));
    CHECK(engine_memory(Engine::sglang, r, l, 0).encoder_cache == Bytes{});
    CHECK(reserve_on_rank(r, l, 0).encoder_cache.bytes == Bytes::exactly(176'160'768));
}
