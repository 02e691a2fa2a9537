#include <catch2/catch.hpp>
#include <kvplan/presets.hpp>
#include <kvplan/roofline.hpp>

#include "support/datasheet_gpus.hpp"

using namespace kvplan;
using namespace kvplan::presets;
using kvplan::testing::h100_sxm;

// Llama-3-70B on 4 x H100 (tp 4): per rank 64 / 4 = 16 query heads, 80 attention layers, weights
// read 34,753,495,040 B, matmul parameters 69,501,714,432 / 4 = 17,375,428,608, KV 327,680 / 4 =
// 81,920 B per token (test_roofline.cpp derives each).

TEST_CASE("unfused attention moves the 32,768 x 32,768 scores: 10 TiB more, 2.2x the TTFT bound",
          "[roofline][attention_io]") {
    const Replica r{.model = llama_3_70b, .gpu = h100_sxm(), .parallel = {.tp = 4}};
    const PrefillAttention a = prefill_attention(r, 32768);
    // Scores: 4 (write S, read S, write P, read P) x 32,768^2 x 16 heads x 80 layers x 2 B =
    // 2^2 x 2^30 x 2,560 = 10,995,116,277,760 B (10 TiB) per rank.
    CHECK(a.score_bytes[0].count() == 10'995'116'277'760ULL);
    CHECK(a.score_bytes[0] == 10 * TiB);
    // Fused: weights read + KV written, 34,753,495,040 + 32,768 x 81,920 (2,684,354,560) =
    // 37,437,849,600 B; unfused adds the scores: 11,032,554,127,360 B.
    CHECK(a.fused_bytes.count() == 37'437'849'600ULL);
    CHECK(a.unfused_bytes.count() == 11'032'554'127'360ULL);
    // FLOPs are the same: the layers' 2 x 17,112,760,320 x 32,768, the LM head's 32,064 x 8,192
    // rows once (2 x 262,668,288, at the prompt's last token, the one sampled), and attention's
    // 2 x 16 x 256 x (32,768 x 32,769 / 2) x 80 = 1.12150e15 + 3.51854e14 = 1.47336e15;
    // / 989.4e12 = 1.4891 s, against 37.4 GB / 3.35 TB/s = 11.2 ms of memory: fused is compute
    // bound at 1.489 s.
    const double head = 262'668'288.0;
    const double flops = 2.0 * (17'375'428'608.0 - head) * 32768 + 2.0 * head +
                         2.0 * 16 * 256 * (32768.0 * 32769 / 2) * 80;
    CHECK(a.fused_ttft().in(seconds) == Approx(flops / 989.4e12));
    CHECK(a.fused.bound == Bound::compute);
    // Unfused: 11,032,554,127,360 B / 3.35e12 = 3.2933 s > 1.4891 s: memory bound, 2.21x slower.
    CHECK(a.unfused_memory_time.in(seconds) == Approx(11'032'554'127'360.0 / 3.35e12));
    CHECK(a.unfused_ttft.in(seconds) == Approx(3.2933).epsilon(1e-4));
    CHECK(a.unfused_bound == Bound::memory);
    CHECK(a.unfused_ttft.in(seconds) / a.fused_ttft().in(seconds) == Approx(2.2115).epsilon(1e-4));
}

TEST_CASE("at 8,192 tokens on 4 x H100 the unfused scores still hide under compute",
          "[roofline][attention_io]") {
    // Scores 4 x 8,192^2 x 16 x 80 x 2 B = 687,194,767,360 B (640 GiB); with 34,753,495,040 +
    // 671,088,640 B of weights and KV, 722,619,351,040 B / 3.35e12 = 215.7 ms, below the 309.96 ms
    // of compute (test_roofline.cpp): the same TTFT bound, 20x the traffic.
    const Replica r{.model = llama_3_70b, .gpu = h100_sxm(), .parallel = {.tp = 4}};
    const PrefillAttention a = prefill_attention(r, 8192);
    CHECK(a.score_bytes[0] == 640 * GiB);
    CHECK(a.unfused_bytes.count() == 722'619'351'040ULL);
    CHECK(a.unfused_memory_time.in(milliseconds) == Approx(722'619'351'040.0 / 3.35e12 * 1e3));
    CHECK(a.unfused_bound == Bound::compute);
    CHECK(a.unfused_ttft == a.fused_ttft());
}

TEST_CASE("score traffic grows with the square of the prompt and counts every prompt",
          "[roofline][attention_io][property]") {
    const Replica r{.model = llama_3_8b, .gpu = h100_sxm()};
    for (std::uint64_t n : {1ULL, 100ULL, 4096ULL, 50'000ULL}) {
        const PrefillAttention one = prefill_attention(r, n);
        const PrefillAttention twice = prefill_attention(r, 2 * n);
        // 4 x n^2 x 32 heads x 32 layers x 2 B = 8,192 n^2 B.
        CHECK(one.score_bytes[0].count() == 8192 * n * n);
        CHECK(twice.score_bytes[0] == one.score_bytes[0] * 4);
        CHECK(prefill_attention(r, n, 3).score_bytes[0] == one.score_bytes[0] * 3);
        CHECK(one.unfused_ttft >= one.fused_ttft());
    }
}

TEST_CASE("a score matrix past 2^64 bytes is an overflow, not a wrapped figure",
          "[roofline][attention_io]") {
    const Replica r{.model = llama_3_8b, .gpu = h100_sxm()};
    // 8,192 x n^2 passes 2^64 = 1.8e19 at n = 2^26 (8,192 x 2^52 = 2^65).
    CHECK_THROWS_AS(prefill_attention(r, 1ULL << 26), OverflowError);
}
