// Token counts and sizes as people write them (kvplan/quantity_text.hpp): the one grammar that
// the CLI's flags and the library's lists of lengths share.

#include <catch2/catch.hpp>
#include <kvplan/fleet.hpp>
#include <kvplan/quantity_text.hpp>
#include <string>
#include <vector>

using namespace kvplan;

TEST_CASE("token counts read as vLLM's human_readable_int reads them", "[quantity_text]") {
    // Plain integers, spaces around them ignored.
    CHECK(read_token_count("8192").value == 8192U);
    CHECK(read_token_count(" 131072 ").value == 131072U);
    // Lowercase suffixes are powers of 1,000 and take a fraction: 8k = 8 x 10^3 = 8,000;
    // 25.6k = 25.6 x 10^3 = 25,600; 1.5m = 1.5 x 10^6 = 1,500,000; 2g = 2 x 10^9.
    CHECK(read_token_count("8k").value == 8'000U);
    CHECK(read_token_count("25.6k").value == 25'600U);
    CHECK(read_token_count("1.5m").value == 1'500'000U);
    CHECK(read_token_count("2g").value == 2'000'000'000U);
    // 1.003 x 1000 is 1002.9999999999999 in double precision; vLLM's int() truncates it to 1002.
    CHECK(read_token_count("1.003k").value == 1002U);
    // Uppercase suffixes are powers of 1,024 on whole numbers: 8K = 8 x 2^10 = 8,192;
    // 128K = 128 x 1,024 = 131,072; 1M = 2^20 = 1,048,576; 2G = 2 x 2^30 = 2,147,483,648.
    CHECK(read_token_count("8K").value == 8'192U);
    CHECK(read_token_count("128K").value == 131'072U);
    CHECK(read_token_count("1M").value == 1'048'576U);
    CHECK(read_token_count("2G").value == 2'147'483'648ULL);
    // Zero is a count of the grammar; the callers that need a token refuse it themselves.
    CHECK(read_token_count("0").value == 0U);
}

TEST_CASE("token counts outside the grammar say what was expected", "[quantity_text]") {
    for (const char* bad :
         {"", "k", "-5", "8 k", "8kb", "8.k", ".5k", "1e3", "eight", "8192.0", "+8", "8Ki"}) {
        const TextRead<std::uint64_t> r = read_token_count(bad);
        CAPTURE(bad);
        CHECK_FALSE(r.value);
        CHECK(r.expected == token_count_grammar);
    }
    // A fraction before a binary suffix: vLLM refuses it; the message offers the decimal one.
    CHECK(read_token_count("1.5K").expected ==
          "a whole number before a binary suffix (did you mean 1.5k?)");
    // 2^64 / 2^30 = 2^34 = 17,179,869,184 is the first G count past 64 bits; one less fits.
    CHECK(read_token_count("17179869184G").expected == "a token count below 2^64");
    CHECK(read_token_count("17179869183G").value == 17'179'869'183ULL << 30);
    // 2^64 = 1.8446744e19 tokens: 18,446,745t is 1.8446745e19, past it.
    CHECK(read_token_count("18446745t").expected == "a token count below 2^64");
    CHECK_THROWS_WITH(
        parse_token_count_field("8x", "prompt_tokens"),
        "prompt_tokens: expected " + std::string(token_count_grammar) + ", found '8x'");
}

TEST_CASE("sizes name their unit and keep GB and GiB apart", "[quantity_text]") {
    // 80 GB = 80 x 10^9 B; 80 GiB = 80 x 2^30 = 85,899,345,920 B.
    CHECK(read_size("80GB").value == 80 * GB);
    CHECK(read_size("80GiB").value->count() == 85'899'345'920ULL);
    CHECK(read_size("80 GiB").value == 80 * GiB);
    // 5.38 GiB = 5.38 x 1,073,741,824 = 5,776,731,013.12 B, rounded to the nearest byte.
    CHECK(read_size("5.38GiB").value->count() == 5'776'731'013ULL);
    CHECK(read_size("1.5TB").value->count() == 1'500'000'000'000ULL);
    CHECK(read_size("1024B").value->count() == 1024U);
    CHECK(read_size("80").expected ==
          "a size that names its unit (80GB or 80GiB: they differ by 7 %)");
    CHECK(read_size("1.5B").expected == "a whole number of bytes");
    for (const char* bad : {"", "GiB", "-1GiB", "80gib", "80Gb", "80 G", "80GiBs"}) {
        CAPTURE(bad);
        CHECK(read_size(bad).expected == size_grammar);
    }
}

TEST_CASE("a list of lengths reads its tokens as a flag reads them", "[quantity_text][fleet]") {
    // 1k = 1,000 and 4K = 4 x 1,024 = 4,096, as --context 1k and --context 4K read.
    const std::vector<QuantilePoint> p = parse_quantile_points("50:1k,95:4K", "--prompt-tokens");
    REQUIRE(p.size() == 2);
    CHECK(p[0].percentile == 50.0);
    CHECK(p[0].tokens == 1'000U);
    CHECK(p[1].percentile == 95.0);
    CHECK(p[1].tokens == 4'096U);
    // A bare length: every request is 2.5k = 2,500 tokens.
    const std::vector<QuantilePoint> one = parse_quantile_points("2.5k", "--output-tokens");
    REQUIRE(one.size() == 1);
    CHECK(one[0].tokens == 2'500U);
    // The grammar's refusals hold in a list too.
    CHECK_THROWS_AS(parse_quantile_points("50:1.5K", "--prompt-tokens"), InvalidInput);
    CHECK_THROWS_AS(parse_quantile_points("50:1000.0", "--prompt-tokens"), InvalidInput);
}
