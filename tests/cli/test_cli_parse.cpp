// Command-line values: token counts exactly as vLLM's --max-model-len reads them
// (vllm/engine/arg_utils.py, human_readable_int), sizes that must name their unit.

#include <catch2/catch.hpp>

#include "context.hpp"
#include "parse.hpp"

using namespace kvplan;
using namespace kvplan::cli;

TEST_CASE("plain token counts are whole numbers", "[cli][parse]") {
    CHECK(parse_tokens("8192", "--context") == 8192);
    CHECK(parse_tokens(" 131072 ", "--context") == 131072);  // vLLM strips whitespace
}

TEST_CASE("lowercase suffixes are decimal and take fractions, as in vLLM", "[cli][parse]") {
    // vLLM's docstring: '1k' -> 1,000 and '25.6k' -> 25,600; k = 10^3, m = 10^6, g = 10^9.
    CHECK(parse_tokens("8k", "--context") == 8'000);
    CHECK(parse_tokens("1k", "--context") == 1'000);
    CHECK(parse_tokens("25.6k", "--context") == 25'600);
    CHECK(parse_tokens("1m", "--context") == 1'000'000);
    CHECK(parse_tokens("1.5m", "--context") == 1'500'000);
    CHECK(parse_tokens("2g", "--context") == 2'000'000'000);
}

TEST_CASE("a decimal suffix truncates the double product as int(float(n) * 10**k) does",
          "[cli][parse]") {
    // 1.001 is stored as 1.000999999999999890; x 1000 gives 1000.9999999999999 in double, and
    // Python's int() truncates it to 1000 (checked: int(float("1.001") * 1000) == 1000).
    CHECK(parse_tokens("1.001k", "--context") == 1000);
    // 1.003 likewise: 1002.9999999999999 -> 1002.
    CHECK(parse_tokens("1.003k", "--context") == 1002);
    // 1.9999 x 1000 = 1999.9 -> 1999: the fraction of a token is dropped, not rounded.
    CHECK(parse_tokens("1.9999k", "--context") == 1999);
}

TEST_CASE("uppercase suffixes are binary and take whole numbers only", "[cli][parse]") {
    // vLLM's docstring: '1K' -> 1,024; K = 2^10, M = 2^20, G = 2^30.
    CHECK(parse_tokens("8K", "--context") == 8'192);
    CHECK(parse_tokens("128K", "--context") == 131'072);
    CHECK(parse_tokens("1M", "--context") == 1'048'576);
    CHECK(parse_tokens("2G", "--context") == 2'147'483'648ULL);
    // vLLM raises "Decimals are not allowed with binary suffixes like K".
    CHECK_THROWS_AS(parse_tokens("1.5K", "--context"), UsageError);
    CHECK_THROWS_WITH(parse_tokens("1.5K", "--context"), Catch::Contains("1.5k"));
}

TEST_CASE("zero, negative and malformed token counts are usage errors", "[cli][parse]") {
    for (const char* bad : {"0", "-5", "-5k", "0k", "0.0001k", "", "k", "8 k", "8kb", "8.k", ".5k",
                            "1e3", "eight", "8192.0", "+8"})
        CHECK_THROWS_AS(parse_tokens(bad, "--context"), UsageError);
    CHECK_THROWS_WITH(parse_tokens("-5", "--context"), Catch::StartsWith("--context: expected"));
    // 2^64 / 2^30 = 2^34 is the first G count that does not fit in 64 bits.
    CHECK_THROWS_AS(parse_tokens("17179869184G", "--context"), UsageError);
    CHECK(parse_tokens("17179869183G", "--context") == 17179869183ULL << 30);
}

TEST_CASE("sizes name their unit and keep GB and GiB apart", "[cli][parse]") {
    // 80 GB = 80 x 10^9 B; 80 GiB = 80 x 2^30 = 85,899,345,920 B.
    CHECK(parse_size("80GB", "--kv-memory") == 80 * GB);
    CHECK(parse_size("80GiB", "--kv-memory") == 80 * GiB);
    CHECK(parse_size("80 GiB", "--kv-memory") == 80 * GiB);
    // 5.38 GiB = 5.38 x 1,073,741,824 = 5,776,731,013.12 B, rounded to the nearest byte.
    CHECK(parse_size("5.38GiB", "--kv-memory").count() == 5'776'731'013ULL);
    CHECK(parse_size("512MiB", "--kv-memory") == 512 * MiB);
    CHECK(parse_size("1024B", "--kv-memory") == 1024 * B);
    CHECK(parse_size("1.5TB", "--kv-memory").count() == 1'500'000'000'000ULL);
}

TEST_CASE("a bare number for memory is a usage error", "[cli][parse]") {
    CHECK_THROWS_WITH(parse_size("80", "--kv-memory"), Catch::Contains("names its unit"));
    for (const char* bad : {"", "GiB", "-1GiB", "80gib", "80Gb", "80 G", "1.5B", "80GiBs"})
        CHECK_THROWS_AS(parse_size(bad, "--kv-memory"), UsageError);
}

TEST_CASE("comma lists split and every item is checked", "[cli][parse]") {
    const auto v = parse_list("1,8,32,128", "--batch", [](std::string_view s, std::string_view f) {
        return parse_count(s, f);
    });
    CHECK(v == std::vector<std::uint64_t>{1, 8, 32, 128});
    const auto t = parse_list("1k,8K", "--context", parse_tokens);
    CHECK(t == std::vector<std::uint64_t>{1'000, 8'192});
    CHECK_THROWS_AS(split_list("1,,8", "--batch"), UsageError);
    CHECK_THROWS_AS(split_list("1,8,", "--batch"), UsageError);
}

TEST_CASE("fractions and dtypes are checked", "[cli][parse]") {
    CHECK(parse_fraction("0.9", "--gpu-memory-utilization") == 0.9);
    CHECK(parse_fraction("1", "--gpu-memory-utilization") == 1.0);
    for (const char* bad : {"0", "1.1", "-0.5", "90%", "x"})
        CHECK_THROWS_AS(parse_fraction(bad, "--gpu-memory-utilization"), UsageError);
    CHECK(parse_kv_dtype_flag("fp8", "--kv-dtype") == KvDtype::fp8_e4m3);
    CHECK_THROWS_AS(parse_kv_dtype_flag("fp7", "--kv-dtype"), UsageError);
}

TEST_CASE("a replica search's bounds are whole numbers from 1 to 64", "[cli][parse]") {
    // --max-gpus and --max-tp of plan and disagg: 64 GPUs is the largest replica searched.
    CHECK(parse_search_bound("1", "--max-gpus") == 1);
    CHECK(parse_search_bound("64", "--max-tp") == 64);
    CHECK_THROWS_WITH(parse_search_bound("65", "--max-gpus"),
                      Catch::Contains("--max-gpus") && Catch::Contains("at most 64"));
    CHECK_THROWS_WITH(parse_search_bound("0", "--max-tp"), Catch::Contains(">= 1"));
    CHECK_THROWS_WITH(parse_search_bound("8x", "--max-tp"), Catch::Contains("whole number"));
}
