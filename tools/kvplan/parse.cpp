#include "parse.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>

#include "context.hpp"

namespace kvplan::cli {

namespace {

std::string_view trim(std::string_view s) {
    const auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
    while (!s.empty() && ws(s.front())) s.remove_prefix(1);
    while (!s.empty() && ws(s.back())) s.remove_suffix(1);
    return s;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

/// digits, or digits '.' digits: the number part vLLM's pattern (\d+(?:\.\d+)?) accepts.
bool is_decimal(std::string_view s, bool& has_point) {
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

bool to_u64(std::string_view s, std::uint64_t& v) {
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    return r.ec == std::errc{} && r.ptr == s.data() + s.size();
}

double to_double(std::string_view s) {
    double v = 0;
    // from_chars rounds correctly, as Python's float() does, so the products below match vLLM's.
    std::from_chars(s.data(), s.data() + s.size(), v);
    return v;
}

// Largest double below 2^64: anything at or above it does not fit a count.
constexpr double u64_limit = 18446744073709549568.0;

}  // namespace

void usage_error(std::string_view flag, std::string_view expected, std::string_view found) {
    std::string m(flag);
    m.append(": expected ").append(expected).append(", found '").append(found).append("'");
    throw UsageError(m);
}

std::uint64_t parse_tokens(std::string_view text, std::string_view flag) {
    constexpr std::string_view expected =
        "a token count >= 1 (8192, 8k = 8,000, 25.6k = 25,600, 8K = 8,192)";
    const std::string_view s = trim(text);
    if (s.empty()) usage_error(flag, expected, text);
    std::uint64_t value = 0;
    const char suffix = s.back();
    const std::string_view number = s.substr(0, s.size() - 1);
    bool has_point = false;
    const std::string_view decimal_suffixes = "kmgt", binary_suffixes = "KMGT";
    if (decimal_suffixes.find(suffix) != std::string_view::npos && is_decimal(number, has_point)) {
        // int(float(number) * 10**(3n)): multiply in double, then truncate toward zero.
        const double mult =
            std::pow(10.0, 3.0 * static_cast<double>(decimal_suffixes.find(suffix) + 1));
        const double v = to_double(number) * mult;
        if (!(v < u64_limit)) usage_error(flag, "a token count below 2^64", text);
        value = static_cast<std::uint64_t>(v);
    } else if (binary_suffixes.find(suffix) != std::string_view::npos &&
               is_decimal(number, has_point)) {
        if (has_point)
            usage_error(flag,
                        "a whole number before a binary suffix (did you mean " +
                            std::string(number) + static_cast<char>(suffix - 'A' + 'a') + "?)",
                        text);
        const unsigned shift = 10U * static_cast<unsigned>(binary_suffixes.find(suffix) + 1);
        std::uint64_t n = 0;
        if (!to_u64(number, n) || n > (~0ULL >> shift))
            usage_error(flag, "a token count below 2^64", text);
        value = n << shift;
    } else if (!to_u64(s, value)) {
        usage_error(flag, expected, text);
    }
    if (value == 0) usage_error(flag, expected, text);
    return value;
}

Bytes parse_size(std::string_view text, std::string_view flag) {
    constexpr std::string_view expected =
        "a size with its unit (5.38GiB, 80GB, 512MiB; units B kB MB GB TB KiB MiB GiB TiB)";
    const std::string_view s = trim(text);
    std::size_t i = 0;
    while (i < s.size() && (is_digit(s[i]) || s[i] == '.')) ++i;
    const std::string_view number = s.substr(0, i);
    const std::string_view unit = trim(s.substr(i));
    bool has_point = false;
    if (number.empty() || !is_decimal(number, has_point)) usage_error(flag, expected, text);
    static constexpr ByteUnit units[] = {B, kB, MB, GB, TB, KiB, MiB, GiB, TiB};
    for (const ByteUnit& u : units) {
        if (unit != u.symbol) continue;
        if (u.bytes == 1 && has_point) usage_error(flag, "a whole number of bytes", text);
        const double v = to_double(number);
        if (!(v * static_cast<double>(u.bytes) < u64_limit))
            usage_error(flag, "a size below 2^64 bytes", text);
        return round_to_bytes(v, u);
    }
    if (unit.empty())
        usage_error(flag, "a size that names its unit (80GB or 80GiB: they differ by 7 %)", text);
    usage_error(flag, expected, text);
}

std::uint64_t parse_count(std::string_view text, std::string_view flag, std::uint64_t min) {
    std::uint64_t v = 0;
    const std::string_view s = trim(text);
    if (!to_u64(s, v) || v < min)
        usage_error(flag, "a whole number >= " + std::to_string(min), text);
    return v;
}

std::uint32_t parse_search_bound(std::string_view text, std::string_view flag) {
    const std::uint64_t v = parse_count(text, flag);
    if (v > 64) usage_error(flag, "at most 64", text);
    return static_cast<std::uint32_t>(v);
}

double parse_fraction(std::string_view text, std::string_view flag) {
    const std::string_view s = trim(text);
    bool has_point = false;
    const double v = is_decimal(s, has_point) ? to_double(s) : -1.0;
    if (!(v > 0.0 && v <= 1.0)) usage_error(flag, "a fraction in (0, 1], e.g. 0.9", text);
    return v;
}

double parse_positive(std::string_view text, std::string_view flag) {
    const std::string_view s = trim(text);
    bool has_point = false;
    const double v = is_decimal(s, has_point) ? to_double(s) : -1.0;
    if (!(v > 0.0) || !std::isfinite(v)) usage_error(flag, "a positive number", text);
    return v;
}

KvDtype parse_kv_dtype_flag(std::string_view text, std::string_view flag) {
    if (const auto d = parse_kv_dtype(trim(text))) return *d;
    usage_error(flag,
                "a KV dtype (fp32, fp16, bf16, fp8 = fp8_e4m3, fp8_e5m2, int8, int4, nvfp4, "
                "mxfp4)",
                text);
}

std::vector<std::string> split_list(std::string_view text, std::string_view flag) {
    // Each item is a model, GPU or format judged (compare: each of every other list's too): a
    // list of thousands would run for minutes.
    const auto count = static_cast<std::size_t>(std::count(text.begin(), text.end(), ',')) + 1;
    if (count > max_list_items)
        usage_error(
            flag, "a comma-separated list of at most " + std::to_string(max_list_items) + " items",
            std::to_string(count) + " items");
    std::vector<std::string> items;
    std::size_t start = 0;
    while (true) {
        const std::size_t comma = text.find(',', start);
        const std::string_view item =
            trim(text.substr(start, comma == std::string_view::npos ? comma : comma - start));
        if (item.empty()) usage_error(flag, "a comma-separated list without empty items", text);
        items.emplace_back(item);
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    return items;
}

}  // namespace kvplan::cli
