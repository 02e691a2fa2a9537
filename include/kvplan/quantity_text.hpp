#pragma once

// Token counts and sizes as people write them: one grammar for every front end (the CLI's flags,
// the Python module's arguments) and for the library's own lists of lengths, so that "8k" means
// the same wherever it is written.

#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include "error.hpp"
#include "units.hpp"

namespace kvplan {

/// A value read from text, or what the text should have been (`expected`, for an error message
/// "field: expected <expected>, found '<text>'").
template <class T>
struct TextRead {
    std::optional<T> value{};
    std::string expected{};
};

namespace detail::quantity_text {

[[nodiscard]] inline std::string_view trim(std::string_view s) noexcept {
    const auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
    while (!s.empty() && ws(s.front())) s.remove_prefix(1);
    while (!s.empty() && ws(s.back())) s.remove_suffix(1);
    return s;
}

[[nodiscard]] constexpr bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

/// digits, or digits '.' digits: the number part of vLLM's pattern (\d+(?:\.\d+)?).
[[nodiscard]] constexpr bool is_decimal(std::string_view s, bool& has_point) noexcept {
    has_point = false;
    std::size_t i = 0;
    while (i < s.size() && is_digit(s[i])) ++i;
    if (i == 0) return false;
    if (i == s.size()) return true;
    if (s[i] != '.') return false;
    has_point = true;
    const std::size_t frac = ++i;
    while (i < s.size() && is_digit(s[i])) ++i;
    return i == s.size() && i > frac;
}

[[nodiscard]] inline bool to_u64(std::string_view s, std::uint64_t& v) noexcept {
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    return r.ec == std::errc{} && r.ptr == s.data() + s.size();
}

/// A decimal checked by is_decimal. from_chars rounds correctly, as Python's float() does, so the
/// products below match vLLM's.
[[nodiscard]] inline double to_double(std::string_view s) noexcept {
    double v = 0;
    std::from_chars(s.data(), s.data() + s.size(), v);
    return v;
}

// Largest double below 2^64: anything at or above it does not fit a count.
inline constexpr double u64_limit = 18446744073709549568.0;

}  // namespace detail::quantity_text

/// What a token count may be written as, for messages.
inline constexpr std::string_view token_count_grammar =
    "a token count (8192, 8k = 8,000, 25.6k = 25,600, 8K = 8,192)";

/// A token count as vLLM's --max-model-len reads it (vllm/engine/arg_utils.py,
/// human_readable_int): a plain integer, or a number with a suffix. Lowercase k/m/g/t are decimal
/// and take a fraction, truncated after multiplying in double precision as vLLM does
/// (8k = 8,000; 25.6k = 25,600); uppercase K/M/G/T are binary and take whole numbers only
/// (8K = 8,192; 1.5K is refused). Spaces around the text are ignored. Zero is a count here; a
/// caller that needs at least one token refuses it.
[[nodiscard]] inline TextRead<std::uint64_t> read_token_count(std::string_view text) {
    using namespace detail::quantity_text;
    const std::string_view s = trim(text);
    if (s.empty()) return {std::nullopt, std::string(token_count_grammar)};
    const char suffix = s.back();
    const std::string_view number = s.substr(0, s.size() - 1);
    bool has_point = false;
    constexpr std::string_view decimal_suffixes = "kmgt", binary_suffixes = "KMGT";
    if (decimal_suffixes.find(suffix) != std::string_view::npos && is_decimal(number, has_point)) {
        // int(float(number) * 10**(3n)): multiply in double, then truncate toward zero.
        const double mult =
            std::pow(10.0, 3.0 * static_cast<double>(decimal_suffixes.find(suffix) + 1));
        const double v = to_double(number) * mult;
        if (!(v < u64_limit)) return {std::nullopt, "a token count below 2^64"};
        return {static_cast<std::uint64_t>(v), {}};
    }
    if (binary_suffixes.find(suffix) != std::string_view::npos && is_decimal(number, has_point)) {
        if (has_point)
            return {std::nullopt, "a whole number before a binary suffix (did you mean " +
                                      std::string(number) + static_cast<char>(suffix - 'A' + 'a') +
                                      "?)"};
        const unsigned shift = 10U * static_cast<unsigned>(binary_suffixes.find(suffix) + 1);
        std::uint64_t n = 0;
        if (!to_u64(number, n) || n > (~0ULL >> shift))
            return {std::nullopt, "a token count below 2^64"};
        return {n << shift, {}};
    }
    std::uint64_t value = 0;
    if (!to_u64(s, value)) return {std::nullopt, std::string(token_count_grammar)};
    return {value, {}};
}

/// What a size may be written as, for messages.
inline constexpr std::string_view size_grammar =
    "a size with its unit (5.38GiB, 80GB, 512MiB; units B kB MB GB TB KiB MiB GiB TiB)";

/// A size that names its unit: 5.38GiB, 80GB, 512MiB, 1024B (B, kB, MB, GB, TB, KiB, MiB, GiB,
/// TiB; case as written; a space may stand between number and unit). A bare number is refused:
/// GB and GiB differ by 7 %. A fractional size rounds to the nearest byte; bytes are whole.
[[nodiscard]] inline TextRead<Bytes> read_size(std::string_view text) {
    using namespace detail::quantity_text;
    const std::string_view s = trim(text);
    std::size_t i = 0;
    while (i < s.size() && (is_digit(s[i]) || s[i] == '.')) ++i;
    const std::string_view number = s.substr(0, i);
    const std::string_view unit = trim(s.substr(i));
    bool has_point = false;
    if (number.empty() || !is_decimal(number, has_point))
        return {std::nullopt, std::string(size_grammar)};
    static constexpr ByteUnit units[] = {B, kB, MB, GB, TB, KiB, MiB, GiB, TiB};
    for (const ByteUnit& u : units) {
        if (unit != u.symbol) continue;
        if (u.bytes == 1 && has_point) return {std::nullopt, "a whole number of bytes"};
        const double v = to_double(number);
        if (!(v * static_cast<double>(u.bytes) < u64_limit))
            return {std::nullopt, "a size below 2^64 bytes"};
        return {round_to_bytes(v, u), {}};
    }
    if (unit.empty())
        return {std::nullopt, "a size that names its unit (80GB or 80GiB: they differ by 7 %)"};
    return {std::nullopt, std::string(size_grammar)};
}

/// read_token_count, or InvalidInput "field: expected ..., found '<text>'".
[[nodiscard]] inline std::uint64_t parse_token_count_field(std::string_view text,
                                                           std::string_view field) {
    TextRead<std::uint64_t> r = read_token_count(text);
    if (!r.value)
        detail::throw_field_error<InvalidInput>("", field, r.expected,
                                                std::string("'").append(text).append("'"));
    return *r.value;
}

}  // namespace kvplan
