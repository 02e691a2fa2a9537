#include <array>
#include <catch2/catch.hpp>
#include <cstdint>
#include <kvplan/plan/curves.hpp>
#include <kvplan/presets.hpp>

#include "support/datasheet_gpus.hpp"

using namespace kvplan;
using namespace kvplan::presets;
using kvplan::testing::h100_sxm;

namespace {

// Llama-3-70B on 4 x H100 with the engine's KV memory given as 40 GiB per GPU
// (42,949,672,960 B) and no sequence cap in the way. A rank keeps 327,680 / 4 = 81,920 B per
// token, so a sequence of 8,192 tokens holds 671,088,640 B (640 MiB) on each GPU.
Deployment llama_70b_tp4(std::optional<std::uint64_t> max_sequences = 1'000'000) {
    Deployment d{.model = llama_3_70b, .gpu = h100_sxm(), .parallel = {.tp = 4}};
    d.serving.engine = Engine::ideal;
    d.serving.kv_memory_per_gpu = 40 * GiB;
    d.serving.max_sequences = max_sequences;
    return d;
}

}  // namespace

TEST_CASE("the KV wall at 8,192 tokens is 40 GiB / 640 MiB = 64 sequences", "[curves]") {
    const std::array<std::uint64_t, 4> batches{1, 16, 64, 256};
    const BatchCurve c = batch_curve(llama_70b_tp4(), 8192, batches);
    // 42,949,672,960 B / 671,088,640 B = 64 exactly: evaluate()'s max_concurrency.
    CHECK(c.kv_wall == 64);
    CHECK(c.kv_wall == evaluate(llama_70b_tp4(), {.context = 8192}).max_concurrency);
    CHECK_FALSE(c.wall_is_sequence_cap);
    CHECK(c.replica_gpus == 4);
    REQUIRE(c.points.size() == 4);
    // At the wall a step reads 34,753,495,040 B of weights and 64 x 671,088,640 = 42,949,672,960
    // B of KV per rank: 77,703,168,000 B / 3.35e12 = 23.195 ms (compute: 64 x (34,750,857,216 +
    // 2 x 16 x 256 x 8,192 x 80) = 2.568e12 FLOPs, 2.60 ms). 64 / 23.195 ms = 2,759.2 tokens/s,
    // 689.8 per GPU.
    REQUIRE(c.at_wall);
    CHECK(c.at_wall->tpot.in(milliseconds) == Approx(77'703'168'000.0 / 3.35e12 * 1e3));
    CHECK(c.at_wall->tokens_per_s == Approx(64 / (77'703'168'000.0 / 3.35e12)));
    CHECK(c.at_wall->tokens_per_s_per_gpu == Approx(c.at_wall->tokens_per_s / 4));
    CHECK(c.points[2].tokens_per_s == c.at_wall->tokens_per_s);
    // A sequence's 0.80 ms of KV reads outweighs its 41 us of compute: no knee at 8,192 tokens
    // (test_roofline.cpp: never past about 1,480 tokens).
    CHECK_FALSE(c.knee.has_value());
    // Throughput rises with batch, by less than the batch: the seeds' picture.
    for (std::size_t i = 1; i < c.points.size(); ++i) {
        CHECK(c.points[i].tokens_per_s > c.points[i - 1].tokens_per_s);
        CHECK(c.points[i].tokens_per_s / c.points[i - 1].tokens_per_s <
              static_cast<double>(batches[i]) / static_cast<double>(batches[i - 1]));
    }
}

TEST_CASE("at 128 tokens the knee comes at batch 324, the wall at 4,096 or the sequence cap",
          "[curves]") {
    const std::array<std::uint64_t, 3> batches{1, 256, 1024};
    // The knee: compute >= memory from B = 10.3742 ms / (35.2079 - 3.1301) us = 323.4, so 324
    // (test_roofline.cpp). The wall: 128 x 81,920 = 10,485,760 B a sequence, 42,949,672,960 /
    // 10,485,760 = 4,096 sequences.
    const BatchCurve free = batch_curve(llama_70b_tp4(), 128, batches);
    CHECK(free.knee == 324u);
    CHECK(free.kv_wall == 4096);
    // Searched only up to the largest batch asked: 256 sequences never reach the knee.
    const std::array<std::uint64_t, 2> small{1, 256};
    CHECK_FALSE(batch_curve(llama_70b_tp4(), 128, small).knee.has_value());
    // Under vLLM a --max-num-seqs of 256 comes first (its cache holds about 4,096), and says so.
    Deployment vllm = llama_70b_tp4(256);
    vllm.serving.engine = Engine::vllm;
    const BatchCurve capped = batch_curve(vllm, 128, batches);
    CHECK(capped.kv_wall == 256);
    CHECK(capped.wall_is_sequence_cap);
}

TEST_CASE("TPOT at a fixed batch grows with context, and the cache holds 64 up to 8,192",
          "[curves]") {
    const std::array<std::uint64_t, 3> contexts{1024, 8192, 32768};
    const ContextCurve c = context_curve(llama_70b_tp4(), 64, contexts);
    // 40 GiB / 64 sequences / 81,920 B = 8,192 tokens each.
    CHECK(c.max_context == 8192u);
    REQUIRE(c.points.size() == 3);
    CHECK(c.points[1].tpot.in(milliseconds) == Approx(77'703'168'000.0 / 3.35e12 * 1e3));
    // At 32,768 tokens the KV read is 64 x 32,768 x 81,920 = 171,798,691,840 B: (34,753,495,040 +
    // 171,798,691,840) / 3.35e12 = 61.657 ms.
    CHECK(c.points[2].tpot.in(milliseconds) ==
          Approx((34'753'495'040.0 + 171'798'691'840.0) / 3.35e12 * 1e3));
    CHECK(c.points[0].tpot < c.points[1].tpot);
}

TEST_CASE("the KV wall falls as context grows, 64 at 8,192 and 16 at 32,768", "[curves]") {
    const std::array<std::uint64_t, 3> contexts{8192, 32768, 131072};
    const std::vector<WallPoint> w = wall_curve(llama_70b_tp4(), contexts);
    REQUIRE(w.size() == 3);
    CHECK(w[0].kv_wall == 64);
    CHECK(w[1].kv_wall == 16);
    // 131,072 tokens is past the model's 8,192-token limit; the wall is memory's answer all the
    // same: 40 GiB / (131,072 x 81,920 B = 10 GiB) = 4.
    CHECK(w[2].kv_wall == 4);
}

TEST_CASE("the prefill curve is prefill_attention at each prompt length", "[curves]") {
    const std::array<std::uint64_t, 2> prompts{8192, 32768};
    const std::vector<PrefillAttention> p = prefill_curve(llama_70b_tp4(), prompts);
    REQUIRE(p.size() == 2);
    CHECK(p[1].score_bytes[0] == 10 * TiB);  // test_attention_io.cpp
    CHECK(p[0].score_bytes[0] == 640 * GiB);
    // One stage: the unfused prefill moves the fused one's bytes and the scores, so the ratio is
    // (fused + 640 GiB) / fused.
    CHECK(p[0].unfused_bytes == p[0].fused_bytes + 640 * GiB);
    CHECK(p[0].unfused_bytes_ratio() ==
          Approx((p[0].fused_bytes + 640 * GiB).in(B) / p[0].fused_bytes.in(B)));
}

TEST_CASE("max concurrency against context beside the exact bytes' figure", "[curves]") {
    // 40 GiB a GPU over 81,920 B a token per rank: at 8,192 tokens 640 MiB a sequence, 64 exactly
    // by either count; at 12,000 tokens 983,040,000 B, 42,949,672,960 / 983,040,000 = 43.69 exact
    // and 43 whole sequences. 131,072 tokens is past the model's limit and still answered: 4.
    const std::array<std::uint64_t, 3> contexts{8192, 12'000, 131'072};
    const std::vector<ConcurrencyPoint> c = concurrency_curve(llama_70b_tp4(), 0, contexts);
    REQUIRE(c.size() == 3);
    CHECK(c[0].context == 8192);
    CHECK(c[0].max_concurrency == 64);
    CHECK(c[0].exact_sequences == Approx(64.0));
    CHECK(c[1].max_concurrency == 43);
    CHECK(c[1].exact_sequences == Approx(42'949'672'960.0 / 983'040'000.0));
    CHECK(c[2].max_concurrency == 4);
    // A prefix every request shares is held once: more sequences at the same exact bytes each.
    const std::vector<ConcurrencyPoint> shared = concurrency_curve(llama_70b_tp4(), 4096, contexts);
    CHECK(shared[0].max_concurrency > 64);
    CHECK(shared[0].exact_sequences == Approx(64.0));
}
