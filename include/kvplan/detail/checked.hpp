#pragma once

#include <cstdint>

#include "../error.hpp"

namespace kvplan::detail {

/// 2^64 - 1, the largest size (without <limits> in every translation unit).
inline constexpr std::uint64_t u64_max = ~std::uint64_t{0};

/// a + b, or an OverflowError naming `what`; never wraps.
[[nodiscard]] constexpr std::uint64_t add(std::uint64_t a, std::uint64_t b, const char* what) {
    if (a > u64_max - b) throw_overflow(what);
    return a + b;
}

/// a * b, or an OverflowError naming `what`; never wraps.
[[nodiscard]] constexpr std::uint64_t mul(std::uint64_t a, std::uint64_t b, const char* what) {
    if (a != 0 && b > u64_max / a) throw_overflow(what);
    return a * b;
}

/// ceil(a / b) for b > 0, without the a + b - 1 that can wrap.
[[nodiscard]] constexpr std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) {
    KVPLAN_EXPECTS(b != 0);
    return a / b + (a % b != 0 ? 1 : 0);
}

}  // namespace kvplan::detail
