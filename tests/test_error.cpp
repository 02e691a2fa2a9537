// Error messages are built in place (detail::Message), so the core needs no <string>: these check
// that what they say is exactly what was built, and that an oversized message is cut, not overrun.
#include <catch2/catch.hpp>
#include <cstdint>
#include <kvplan/core.hpp>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

using namespace kvplan;

namespace {
std::string str(const detail::Message& m) { return {m.data(), m.size()}; }
}  // namespace

TEST_CASE("messages join text and integers", "[error]") {
    CHECK(str(detail::text("tp ", 3u, " of ", 8)) == "tp 3 of 8");
    // Integers of every width print in decimal; 2^64 - 1 = 18446744073709551615 has 20 digits.
    CHECK(str(detail::text(std::numeric_limits<std::uint64_t>::max())) == "18446744073709551615");
    CHECK(str(detail::text(std::uint8_t{255}, ",", std::int64_t{-42}, ",", 0)) == "255,-42,0");
    // The most negative 64-bit value has no positive twin; its magnitude must not overflow.
    CHECK(str(detail::text(std::numeric_limits<std::int64_t>::min())) == "-9223372036854775808");
    // std::string and std::string_view go in as they are (anything with data() and size()).
    const std::string s = "model 'x'";
    CHECK(str(detail::text(s, ": ", std::string_view("field"))) == "model 'x': field");
}

TEST_CASE("a message past its capacity is cut and ends in ...", "[error]") {
    const std::string long_path(2000, 'a');
    const detail::Message m = detail::text(long_path, "tail");
    // Capacity 1023 characters: 1020 of the path, then "..." in place of the last three.
    REQUIRE(m.size() == detail::Message::capacity);
    CHECK(str(m) == std::string(1020, 'a') + "...");
    CHECK(std::string(m.c_str()).size() == 1023);  // NUL-terminated at the cut
    // One character under capacity is not cut.
    CHECK(str(detail::text(std::string(1022, 'b'), "c")) == std::string(1022, 'b') + "c");
}

TEST_CASE("errors carry their message and derive from std::exception", "[error]") {
    // The shape of every data error: where: field: expected X, found Y.
    try {
        detail::throw_field_error<InvalidInput>("configs/x.json", "/num_key_value_heads",
                                                "an integer >= 1", std::string("0"));
        FAIL("no throw");
    } catch (const std::exception& e) {
        CHECK(std::string(e.what()) ==
              "configs/x.json: /num_key_value_heads: expected an integer >= 1, found 0");
    }
    CHECK_THROWS_WITH(detail::throw_overflow("a cache vector"),
                      "size overflow: a cache vector exceeds 2^64 - 1 bytes");
    // A copy is independent of the original's storage (the message is held in place).
    const InvalidModel original(std::string("model 'y': num_heads: expected > 0, found 0"));
    const InvalidModel copy = original;  // NOLINT: the copy is the point
    CHECK(std::string(copy.what()) == original.what());
    CHECK(copy.what() != original.what());
}

TEST_CASE("a broken precondition names the condition, file and line", "[error]") {
    // contract_violation is noexcept, so it terminates; the throw it makes is checked here.
    CHECK_THROWS_AS(detail::throw_contract_violation("b != 0", "checked.hpp", 24),
                    ContractViolation);
    CHECK_THROWS_WITH(detail::throw_contract_violation("b != 0", "checked.hpp", 24),
                      "kvplan: precondition failed: b != 0 (checked.hpp:24)");
}

TEST_CASE("model names are held in place, cut at 95 characters", "[error][model]") {
    const ModelName n("Llama-3-70B");
    CHECK(n == "Llama-3-70B");
    CHECK_FALSE(n == "Llama-3-70");
    CHECK(std::string(n) == "Llama-3-70B");
    CHECK(std::string_view(n).size() == 11);
    CHECK(ModelName(std::string("x")) == ModelName("x"));
    const ModelName cut(std::string(200, 'm'));
    CHECK(cut.size() == ModelName::max_size);
    CHECK(std::string(cut.c_str()) == std::string(95, 'm'));
}

TEST_CASE("FixedArray is an aggregate array", "[error][containers]") {
    constexpr FixedArray a{1, 2, 3};
    static_assert(a.size() == 3);
    CHECK(a[2] == 3);
    int sum = 0;
    for (int x : a) sum += x;
    CHECK(sum == 6);
    CHECK(a == FixedArray{1, 2, 3});
    CHECK_FALSE(a == FixedArray{1, 2, 4});
    FixedArray<std::uint8_t, 4> zeros{};
    CHECK(zeros[3] == 0);
}

TEST_CASE("Optional holds a value or nothing and converts to std::optional",
          "[error][containers]") {
    constexpr Optional<std::uint64_t> none;
    constexpr Optional<std::uint64_t> four{4};
    CHECK_FALSE(none.has_value());
    CHECK(four.has_value());
    CHECK(*four == 4);
    CHECK(four == 4u);
    CHECK_FALSE(none == 0u);  // empty equals no value, not the default one
    CHECK(none.value_or(7) == 7);
    CHECK(four.value_or(7) == 4);
    const std::optional<std::uint64_t> a = four, b = none;
    CHECK(a == std::optional<std::uint64_t>{4});
    CHECK_FALSE(b.has_value());
    // Parsing answers through it: "fp8" is e4m3 (vLLM's --kv-cache-dtype fp8), "fp9" nothing.
    CHECK(parse_kv_dtype(std::string("fp8")) == KvDtype::fp8_e4m3);
    CHECK_FALSE(parse_kv_dtype("fp9").has_value());
}
