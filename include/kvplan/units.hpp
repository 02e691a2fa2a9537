#pragma once

// Strong quantities. Sizes are exact integers of bytes; rates, times and FLOPs are doubles.
// A number enters with its unit named (80 * GiB, 3.35 * TB_per_s) and leaves with its unit named
// (b.in(GB), t.in(milliseconds)). Decimal units (kB..TB, GB/s, TB/s) are what vendors state; binary
// units (KiB..TiB) are what allocators and drivers report. Both are units of the one Bytes
// quantity, with an exact ratio, so they never mix by accident: there is no bare number to mix.

#include <cstdint>
#include <type_traits>

#include "detail/checked.hpp"
#include "error.hpp"

namespace kvplan {

/// A unit of size: how many bytes one of it holds, and its symbol.
struct ByteUnit {
    std::uint64_t bytes;
    const char* symbol;
};

inline constexpr ByteUnit B{1, "B"};
inline constexpr ByteUnit kB{1'000, "kB"};
inline constexpr ByteUnit MB{1'000'000, "MB"};
inline constexpr ByteUnit GB{1'000'000'000, "GB"};
inline constexpr ByteUnit TB{1'000'000'000'000, "TB"};
inline constexpr ByteUnit KiB{1ULL << 10, "KiB"};
inline constexpr ByteUnit MiB{1ULL << 20, "MiB"};
inline constexpr ByteUnit GiB{1ULL << 30, "GiB"};
inline constexpr ByteUnit TiB{1ULL << 40, "TiB"};

/// An exact number of bytes. Arithmetic is checked: a result past 2^64 - 1 throws OverflowError
/// (a compile error in a constant expression), it never wraps.
class Bytes {
   public:
    constexpr Bytes() noexcept = default;

    /// Exactly n bytes.
    [[nodiscard]] static constexpr Bytes exactly(std::uint64_t n) noexcept { return Bytes(n); }

    /// The exact count of bytes, for integer output (JSON) and exact comparisons.
    [[nodiscard]] constexpr std::uint64_t count() const noexcept { return n_; }

    /// This size in `u`, e.g. b.in(GiB); exact when the quotient is representable.
    [[nodiscard]] constexpr double in(ByteUnit u) const noexcept {
        // Split to keep full precision for sizes above 2^53 bytes.
        return static_cast<double>(n_ / u.bytes) +
               static_cast<double>(n_ % u.bytes) / static_cast<double>(u.bytes);
    }

    [[nodiscard]] constexpr bool is_zero() const noexcept { return n_ == 0; }

    // Spelled out rather than <=>, which would need <compare> in every translation unit.
    friend constexpr bool operator==(Bytes, Bytes) noexcept = default;
    friend constexpr bool operator<(Bytes a, Bytes b) noexcept { return a.n_ < b.n_; }
    friend constexpr bool operator>(Bytes a, Bytes b) noexcept { return a.n_ > b.n_; }
    friend constexpr bool operator<=(Bytes a, Bytes b) noexcept { return a.n_ <= b.n_; }
    friend constexpr bool operator>=(Bytes a, Bytes b) noexcept { return a.n_ >= b.n_; }

    friend constexpr Bytes operator+(Bytes a, Bytes b) {
        return Bytes(detail::add(a.n_, b.n_, "a sum of sizes"));
    }
    /// a - b; a negative size is an error, never a wrap.
    friend constexpr Bytes operator-(Bytes a, Bytes b) {
        if (b.n_ > a.n_) throw OverflowError("size underflow: subtracting a larger size");
        return Bytes(a.n_ - b.n_);
    }
    friend constexpr Bytes operator*(Bytes a, std::uint64_t k) {
        return Bytes(detail::mul(a.n_, k, "a multiplied size"));
    }
    friend constexpr Bytes operator*(std::uint64_t k, Bytes a) { return a * k; }
    /// How many whole `b` fit in `a` (b must not be zero).
    friend constexpr std::uint64_t operator/(Bytes a, Bytes b) {
        KVPLAN_EXPECTS(!b.is_zero());
        return a.n_ / b.n_;
    }
    /// a split k ways, rounded down.
    friend constexpr Bytes operator/(Bytes a, std::uint64_t k) {
        KVPLAN_EXPECTS(k != 0);
        return Bytes(a.n_ / k);
    }
    constexpr Bytes& operator+=(Bytes b) { return *this = *this + b; }
    constexpr Bytes& operator-=(Bytes b) { return *this = *this - b; }

   private:
    constexpr explicit Bytes(std::uint64_t n) noexcept : n_(n) {}
    std::uint64_t n_ = 0;
};

/// n units: 80 * GiB. Negative n is an error.
template <class I>
requires std::is_integral_v<I>
[[nodiscard]] constexpr Bytes operator*(I n, ByteUnit u) {
    if constexpr (std::is_signed_v<I>) {
        if (n < 0) throw OverflowError("a size cannot be negative");
    }
    return Bytes::exactly(detail::mul(static_cast<std::uint64_t>(n), u.bytes, "a size"));
}

template <class F>
requires std::is_floating_point_v<F>
constexpr Bytes operator*(F, ByteUnit) {
    static_assert(
        !std::is_floating_point_v<F>,
        "a size is a whole number of bytes: write 80 * GiB, or round_to_bytes(5.38, GiB)");
    return {};
}

/// The nearest whole byte to `value` units (5.38 GiB as an engine prints it). Negative, NaN,
/// infinite or too large values throw OverflowError.
[[nodiscard]] inline Bytes round_to_bytes(double value, ByteUnit u) {
    const double b = value * static_cast<double>(u.bytes);
    if (!(b >= 0.0) || b >= 18446744073709549568.0)  // largest double below 2^64
        throw OverflowError("a size must be finite, non-negative and below 2^64 bytes");
    return Bytes::exactly(static_cast<std::uint64_t>(b + 0.5));  // truncation is floor here: b >= 0
}

/// A double-valued quantity tagged by Tag: rates, times, FLOPs. Only the operators that mean
/// something exist (see below); there is no bare-number constructor.
template <class Tag>
class Real {
   public:
    constexpr Real() noexcept = default;
    [[nodiscard]] static constexpr Real in_base(double v) noexcept { return Real(v); }
    [[nodiscard]] constexpr double in(typename Tag::Unit u) const noexcept { return v_ / u.scale; }
    friend constexpr bool operator==(Real, Real) noexcept = default;
    friend constexpr bool operator<(Real a, Real b) noexcept { return a.v_ < b.v_; }
    friend constexpr bool operator>(Real a, Real b) noexcept { return a.v_ > b.v_; }
    friend constexpr bool operator<=(Real a, Real b) noexcept { return a.v_ <= b.v_; }
    friend constexpr bool operator>=(Real a, Real b) noexcept { return a.v_ >= b.v_; }
    friend constexpr Real operator+(Real a, Real b) noexcept { return Real(a.v_ + b.v_); }
    friend constexpr Real operator-(Real a, Real b) noexcept { return Real(a.v_ - b.v_); }
    friend constexpr Real operator*(Real a, double k) noexcept { return Real(a.v_ * k); }
    friend constexpr Real operator*(double k, Real a) noexcept { return Real(a.v_ * k); }
    friend constexpr Real operator/(Real a, double k) noexcept { return Real(a.v_ / k); }
    friend constexpr double operator/(Real a, Real b) noexcept { return a.v_ / b.v_; }
    constexpr Real& operator+=(Real b) noexcept { return *this = *this + b; }

   private:
    constexpr explicit Real(double v) noexcept : v_(v) {}
    double v_ = 0.0;
};

template <class Tag>
struct RealUnit {
    double scale;
    const char* symbol;
};

/// value units: 3.35 * TB_per_s.
template <class Tag>
[[nodiscard]] constexpr Real<Tag> operator*(double v, RealUnit<Tag> u) noexcept {
    return Real<Tag>::in_base(v * u.scale);
}

namespace tag {
struct Rate {
    using Unit = RealUnit<Rate>;
};
struct Time {
    using Unit = RealUnit<Time>;
};
struct Flop {
    using Unit = RealUnit<Flop>;
};
struct FlopRate {
    using Unit = RealUnit<FlopRate>;
};
}  // namespace tag

/// Bytes per second (decimal, as vendors state bandwidth).
using BytesPerSecond = Real<tag::Rate>;
using Seconds = Real<tag::Time>;
/// Floating-point operations (a count).
using Flops = Real<tag::Flop>;
using FlopsPerSecond = Real<tag::FlopRate>;

inline constexpr tag::Rate::Unit B_per_s{1.0, "B/s"};
inline constexpr tag::Rate::Unit GB_per_s{1e9, "GB/s"};
inline constexpr tag::Rate::Unit TB_per_s{1e12, "TB/s"};
inline constexpr tag::Rate::Unit GiB_per_s{1073741824.0, "GiB/s"};
inline constexpr tag::Time::Unit seconds{1.0, "s"};
inline constexpr tag::Time::Unit milliseconds{1e-3, "ms"};
inline constexpr tag::Time::Unit microseconds{1e-6, "us"};
inline constexpr tag::Flop::Unit FLOP{1.0, "FLOP"};
inline constexpr tag::Flop::Unit GFLOP{1e9, "GFLOP"};
inline constexpr tag::Flop::Unit TFLOP{1e12, "TFLOP"};
inline constexpr tag::Flop::Unit PFLOP{1e15, "PFLOP"};
inline constexpr tag::FlopRate::Unit FLOP_per_s{1.0, "FLOP/s"};
inline constexpr tag::FlopRate::Unit TFLOP_per_s{1e12, "TFLOP/s"};
inline constexpr tag::FlopRate::Unit PFLOP_per_s{1e15, "PFLOP/s"};

/// Short unit symbols, au style: `using namespace kvplan::units;` to write `12.5 * ms`. They live
/// apart so that `using namespace kvplan` brings no one-letter name to clash with the user's own.
namespace units {
inline constexpr tag::Time::Unit s = seconds;
inline constexpr tag::Time::Unit ms = milliseconds;
inline constexpr tag::Time::Unit us = microseconds;
}  // namespace units

/// Time to move `b` at `r`.
[[nodiscard]] constexpr Seconds operator/(Bytes b, BytesPerSecond r) noexcept {
    return Seconds::in_base(static_cast<double>(b.count()) / r.in(B_per_s));
}
/// Time to do `f` at `r`.
[[nodiscard]] constexpr Seconds operator/(Flops f, FlopsPerSecond r) noexcept {
    return Seconds::in_base(f.in(FLOP) / r.in(FLOP_per_s));
}

}  // namespace kvplan
