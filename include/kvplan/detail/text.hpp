#pragma once

// Small text helpers shared by the opt-in readers (traces, engine logs): trimming, number parsing
// that reports what it found. Not API.

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include "../error.hpp"

namespace kvplan::detail {

[[nodiscard]] inline std::string_view trim(std::string_view s) noexcept {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

/// Lower case without '_', '-', ' ' or '.': "Context_Tokens" and "contexttokens" name one column.
[[nodiscard]] inline std::string normalized_name(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        if (c == '_' || c == '-' || c == ' ' || c == '.') continue;
        out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
    return out;
}

/// The whole of `s` as an unsigned integer, or nullopt.
[[nodiscard]] inline std::optional<std::uint64_t> parse_u64(std::string_view s) noexcept {
    s = trim(s);
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || end != s.data() + s.size() || s.empty()) return std::nullopt;
    return v;
}

/// The whole of `s` as a finite double, or nullopt.
[[nodiscard]] inline std::optional<double> parse_double(std::string_view s) noexcept {
    s = trim(s);
    if (!s.empty() && s.front() == '+') s.remove_prefix(1);
    double v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || end != s.data() + s.size() || s.empty() || !std::isfinite(v))
        return std::nullopt;
    return v;
}

/// A whole number of tokens written as an integer, or as a float with no fraction ("512.0", as
/// pandas writes integer columns that had a missing value).
[[nodiscard]] inline std::optional<std::uint64_t> parse_token_count(std::string_view s) noexcept {
    if (auto v = parse_u64(s)) return v;
    const auto d = parse_double(s);
    // The range first: converting a double past 2^64 to an integer is undefined.
    if (!d || *d < 0 || *d > 9.0e15 || *d != static_cast<double>(static_cast<std::uint64_t>(*d)))
        return std::nullopt;
    return static_cast<std::uint64_t>(*d);
}

/// A value as an error message shows it: quoted, cut to 40 characters.
[[nodiscard]] inline std::string quoted(std::string_view s) {
    // Appended, not "'" + std::string(...): GCC 12 at -O2 warns falsely on that (-Wrestrict,
    // GCC bug 105651).
    const bool cut = s.size() > 40;
    std::string q(1, '\'');
    q.append(cut ? s.substr(0, 37) : s).append(cut ? "...'" : "'");
    return q;
}

}  // namespace kvplan::detail
