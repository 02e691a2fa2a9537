#pragma once

// Sizes scaled by a fraction (a utilization, a share), rounded as engines round them, and a
// subtraction that stops at zero.

#include <cstdint>

#include "../error.hpp"
#include "../units.hpp"

namespace kvplan::detail {

/// a x k rounded up, for a non-negative fraction k (a size times a utilization).
[[nodiscard]] constexpr Bytes scale_up(Bytes a, double k) {
    const double x = static_cast<double>(a.count()) * k;
    if (!(x >= 0.0) || x >= 18446744073709549568.0)
        throw OverflowError("a scaled size must be finite, non-negative and below 2^64 bytes");
    auto n = static_cast<std::uint64_t>(x);
    if (static_cast<double>(n) < x) ++n;
    return Bytes::exactly(n);
}

/// a x k rounded down, for a non-negative fraction k.
[[nodiscard]] constexpr Bytes scale_down(Bytes a, double k) {
    const double x = static_cast<double>(a.count()) * k;
    if (!(x >= 0.0) || x >= 18446744073709549568.0)
        throw OverflowError("a scaled size must be finite, non-negative and below 2^64 bytes");
    return Bytes::exactly(static_cast<std::uint64_t>(x));
}

/// a - b, or zero when b is larger.
[[nodiscard]] constexpr Bytes saturating_sub(Bytes a, Bytes b) { return a > b ? a - b : Bytes{}; }

}  // namespace kvplan::detail
