// The edges of every input: 10M-token contexts, a million sequences, block sizes of 1 and 2^20
// tokens, budgets of 0 and 2^64 - 1 bytes. Each gives an exact answer or a kvplan::Error; never a
// wrapped integer, a NaN or an infinity.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>

#include <kvplan/kvplan.hpp>

using namespace kvplan;
using namespace kvplan::presets;

namespace {

constexpr std::uint64_t ten_million = 10'000'000;
constexpr std::uint64_t one_million = 1'000'000;
constexpr std::uint32_t mebi_block = 1U << 20;
constexpr Bytes all_bytes = Bytes::exactly(std::numeric_limits<std::uint64_t>::max());

// One layer caching one fp8 value per token: a slope of 1 byte per token, the steepest test of
// arithmetic near 2^64.
const Model one_byte_per_token{ModelConfig{
    .name = "one-byte",
    .layers = LayerStack::uniform(1, mla_latent(1, 0)),
    .num_heads = 1,
    .hidden_size = 1,
    .intermediate_size = 1,
    .vocab_size = 1,
    .mla = {.v_head_dim = 1},
}};

}  // namespace

TEST_CASE("max_context near 2^64 bytes answers exactly instead of wrapping", "[extremes][capacity]") {
    // 2^64 - 1 bytes at 1 byte per token hold 2^64 - 1 tokens. budget / slope + 1 used to wrap to 0
    // and the search answered 0.
    CHECK(max_context(all_bytes, one_byte_per_token, KvDtype::fp8_e4m3, 1) ==
          std::numeric_limits<std::uint64_t>::max());
    // In 16-token blocks: the largest multiple of 16 below 2^64, 18,446,744,073,709,551,600.
    CHECK(max_context(all_bytes, one_byte_per_token, KvDtype::fp8_e4m3, 1, 16) ==
          18'446'744'073'709'551'600ULL);
    // Llama-3-8B (131,072 B per token) in 2^20-token blocks: floor((2^64 - 1) / 2^17) =
    // 140,737,488,355,327 tokens, rounded down to whole blocks: 134,217,727 x 2^20 =
    // 140,737,487,306,752. Probing longer lengths used to overflow and throw.
    CHECK(max_context(all_bytes, llama_3_8b, KvDtype::bf16, 1, mebi_block) ==
          140'737'487'306'752ULL);
}

TEST_CASE("a window too large for any budget is not mistaken for a plateau", "[extremes][capacity]") {
    // One sliding layer with a window of 2^64 - 1 tokens: the plateau (window + two blocks) used
    // to wrap to a few tokens, which fit, and max_context answered "any length fits". At 16 B per
    // token (fp8, K and V of 8 heads of dim 1: 2 x 8 x 1 B), 1 GiB holds 2^30 / 16 = 67,108,864.
    const Model huge_window{ModelConfig{
        .name = "huge-window",
        .layers = LayerStack::uniform(
            1, sliding_window(8, 1, std::numeric_limits<std::uint64_t>::max())),
        .num_heads = 8,
        .hidden_size = 8,
        .intermediate_size = 8,
        .vocab_size = 1,
    }};
    CHECK(max_context(1 * GiB, huge_window, KvDtype::fp8_e4m3, 1) == 67'108'864u);
}
