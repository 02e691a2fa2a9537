#pragma once

#include <cstdint>
#include <limits>

#include "../error.hpp"

namespace kvplan::detail {

/// a + b, or an OverflowError naming `what`; never wraps.
[[nodiscard]] constexpr std::uint64_t add(std::uint64_t a, std::uint64_t b, const char* what) {
    if (a > std::numeric_limits<std::uint64_t>::max() - b) throw_overflow(what);
    return a + b;
}

/// a * b, or an OverflowError naming `what`; never wraps.
[[nodiscard]] constexpr std::uint64_t mul(std::uint64_t a, std::uint64_t b, const char* what) {
    if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) throw_overflow(what);
    return a * b;
}

/// ceil(a / b) for b > 0, without the a + b - 1 that can wrap.
[[nodiscard]] constexpr std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) {
    KVPLAN_EXPECTS(b != 0);
    return a / b + (a % b != 0 ? 1 : 0);
}

}  // namespace kvplan::detail
