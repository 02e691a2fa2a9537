#include <catch2/catch.hpp>
#include <kvplan/capacity.hpp>
#include <kvplan/presets.hpp>

using namespace kvplan;
using namespace kvplan::presets;

TEST_CASE("tokens and sequences that fit in a budget", "[capacity]") {
    // 40 GiB / 320 KiB = 131,072 tokens; 32 sequences of 4,096.
    CHECK(tokens_that_fit(40 * GiB, llama_3_70b, KvDtype::bf16) == 131'072u);
    CHECK(sequences_that_fit(40 * GiB, llama_3_70b, KvDtype::bf16, 4096) == 32);
    // One byte less and the 32nd no longer fits.
    CHECK(sequences_that_fit(40 * GiB - 1 * B, llama_3_70b, KvDtype::bf16, 4096) == 31);
    // Paged in 16-token blocks, 4,100 tokens take 257 blocks = 4,112 tokens: 40 GiB holds
    // floor(131,072 / 4,112) = 31 sequences (unpaged: floor(131,072 / 4,100) = 31 too).
    CHECK(sequences_that_fit(40 * GiB, llama_3_70b, KvDtype::bf16, 4100, 16) == 31);
}

TEST_CASE("max context at a concurrency inverts bytes per sequence", "[capacity]") {
    // 40 GiB over 32 sequences: 1.25 GiB each = 4,096 tokens of 320 KiB.
    CHECK(max_context(40 * GiB, llama_3_70b, KvDtype::bf16, 32) == 4096u);
    // Inverse then forward: the answer fits and one more token does not.
    for (std::uint64_t n : {1ULL, 3ULL, 7ULL, 64ULL, 1000ULL}) {
        const Bytes budget = 70 * GiB;
        const std::uint64_t L = *max_context(budget, gemma_2_27b, KvDtype::fp8_e4m3, n, 16);
        CHECK(reserved_per_sequence(gemma_2_27b, KvDtype::fp8_e4m3, L, 16) * n <= budget);
        CHECK(reserved_per_sequence(gemma_2_27b, KvDtype::fp8_e4m3, L + 1, 16) * n > budget);
    }
}

TEST_CASE("a model whose every layer is windowed fits at any length, or not at all", "[capacity]") {
    // Mistral-7B plateaus at 512 MiB per sequence: 8 sequences fit in 4 GiB at any length.
    CHECK_FALSE(max_context(4 * GiB, mistral_7b_v0_1, KvDtype::bf16, 8).has_value());
    // In 3 GiB, 8 sequences get 384 MiB each = 3,072 tokens of 128 KiB.
    CHECK(max_context(3 * GiB, mistral_7b_v0_1, KvDtype::bf16, 8) == 3072u);
}

TEST_CASE("nothing fits in zero bytes", "[capacity]") {
    CHECK(max_context(Bytes{}, llama_3_70b, KvDtype::bf16, 1) == 0u);
    CHECK(sequences_that_fit(Bytes{}, llama_3_70b, KvDtype::bf16, 1) == 0);
}
